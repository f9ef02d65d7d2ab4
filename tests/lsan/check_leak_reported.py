#!/usr/bin/env python3
"""Passes when LeakSanitizer, with the project's suppressions, still reports the nng messages
that nng_forgotten leaks on purpose: the suppressions are narrow enough to catch a leaked
message of kcycle's own.

usage: check_leak_reported.py PROGRAM SUPPRESSIONS"""
import os
import subprocess
import sys


def main():
    program, suppressions = sys.argv[1], sys.argv[2]
    env = dict(os.environ)
    # Appended to what the run already sets (later options win): the sanitizer run's other
    # options stay in force. The slow unwinder gives every allocation its full stack, so the
    # callers named below appear in the report even through frames without frame pointers.
    ours = {
        "ASAN_OPTIONS": "detect_leaks=1:exitcode=23:fast_unwind_on_malloc=0",
        "LSAN_OPTIONS": f"suppressions={suppressions}:print_suppressions=0:exitcode=23",
    }
    for name, options in ours.items():
        inherited = env.get(name, "")
        env[name] = f"{inherited}:{options}" if inherited else options
    proc = subprocess.run([program], capture_output=True, text=True, timeout=60, env=env)
    report = proc.stderr
    failures = []
    if proc.returncode != 23:
        failures.append(f"exit {proc.returncode}, expected LeakSanitizer's 23")
    if "ERROR: LeakSanitizer: detected memory leaks" not in report:
        failures.append("no LeakSanitizer report")
    for caller in ("kcycle_forgets_a_message", "kcycle_forgets_a_grown_message"):
        if caller not in report:
            failures.append(f"the leak allocated in {caller} is not reported (suppressed?)")
    for failure in failures:
        print("FAIL: " + failure)
    if failures:
        print(report[-4000:])
        return 1
    print("LeakSanitizer reports both forgotten nng messages despite the suppressions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
