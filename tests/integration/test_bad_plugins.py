#!/usr/bin/env python3
"""kcycle-scheduler refuses bad plugin files with a message naming the file and the reason, and
exits with status 1: never a crash, never a silent start without a required plugin.

usage: test_bad_plugins.py --scheduler EXE --source DIR --build DIR [--plugin NAME=SO ...]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

TIMEOUT_S = 30
FAILURES = []
PASSED = [0]


def check(condition, message):
    if condition:
        PASSED[0] += 1
        return
    FAILURES.append(message)
    print("FAIL: " + message)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def config_with(tmp, name, path, required=True):
    """The default plugins plus one more loaded by path."""
    text = ("plugins:\n"
            "  - name: prioritysort\n"
            "  - name: noderesources\n"
            "  - name: defaultbinder\n"
            f"  - name: {name}\n"
            f"    path: {json.dumps(path)}\n"
            f"    required: {'true' if required else 'false'}\n")
    return write(os.path.join(tmp, f"{name}-config.yaml"), text)


def simulate(args, tmp, config, extra=()):
    report = os.path.join(tmp, "report.json")
    if os.path.exists(report):
        os.unlink(report)
    env = {k: v for k, v in os.environ.items() if k != "KCYCLE_PLUGIN_DIR"}
    try:
        run = subprocess.run([args.scheduler, "--config", config, "--simulate", args.sim,
                              "--report", report, "--quiet", *extra],
                             capture_output=True, text=True, timeout=TIMEOUT_S, cwd=tmp, env=env)
    except subprocess.TimeoutExpired:
        return None, report
    return run, report


def expect_refused(args, tmp, label, name, path, needles):
    """A required plugin that cannot be used: exit status 1 (not a signal), and stderr names
    the file and says why."""
    run, report = simulate(args, tmp, config_with(tmp, name, path))
    check(run is not None, f"{label}: finished within {TIMEOUT_S} s")
    if run is None:
        return
    check(run.returncode >= 0, f"{label}: not killed by a signal (status {run.returncode})")
    check(run.returncode == 1, f"{label}: exit status 1, got {run.returncode}; "
                               f"stderr: {run.stderr!r}")
    check(path in run.stderr, f"{label}: stderr names {path}, got {run.stderr!r}")
    for needle in needles:
        check(needle in run.stderr, f"{label}: stderr says {needle!r}, got {run.stderr!r}")
    check(not os.path.exists(report), f"{label}: no report written for a run that never started")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--scheduler", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--build", required=True)
    parser.add_argument("--plugin", action="append", default=[], metavar="NAME=SO")
    args = parser.parse_args()
    # meson passes build paths relative to the build directory; runs happen in a temp dir
    args.scheduler = os.path.abspath(args.scheduler)
    plugins = {name: os.path.abspath(path)
               for name, path in (item.split("=", 1) for item in args.plugin)}
    args.sim = os.path.join(args.source, "examples", "sim", "small.yaml")
    for needed in ("abi2", "newerminor", "noquery", "initfail"):
        if needed not in plugins:
            print(f"test plugin {needed} was not built; check tests/plugins/meson.build")
            return 1

    # The host's ABI, as the binary reports it, so the expected messages follow the SDK.
    version = subprocess.run([args.scheduler, "--version"], capture_output=True, text=True,
                             timeout=TIMEOUT_S).stdout
    match = re.search(r"SDK ABI (\d+)\.(\d+)", version)
    if match is None:
        print(f"kcycle-scheduler --version does not report the ABI: {version!r}")
        return 1
    major, minor = int(match.group(1)), int(match.group(2))
    host_abi = f"ABI {major}.{minor}"

    with tempfile.TemporaryDirectory(prefix="kcycle-bad-plugins-") as tmp:
        # (a) another ABI major: both versions in the message
        expect_refused(args, tmp, "abi2.so", "abi2", plugins["abi2"],
                       [f"ABI {major + 1}.0", host_abi])
        # a newer minor than the host serves
        expect_refused(args, tmp, "newerminor.so", "newerminor", plugins["newerminor"],
                       [f"ABI {major}.{minor + 1}", host_abi])
        # a shared object without the entry point
        expect_refused(args, tmp, "noquery.so", "noquery", plugins["noquery"],
                       ["kc_plugin_query"])
        # a text file named .so
        garbage = write(os.path.join(tmp, "garbage.so"), "this is not an ELF shared object\n")
        expect_refused(args, tmp, "garbage.so", "garbage", garbage, ["shared object"])
        # a path that does not exist
        missing = os.path.join(tmp, "no-such-dir", "missing.so")
        expect_refused(args, tmp, "missing.so", "missing", missing, [])
        # init fails: the plugin's own log line and the host's error both name it
        expect_refused(args, tmp, "initfail.so", "initfail", plugins["initfail"],
                       ["plugin initfail", "init failed"])

        # Not required: logged and left out; the cluster is scheduled without it.
        run, report = simulate(args, tmp, config_with(tmp, "abi2", plugins["abi2"],
                                                      required=False))
        check(run is not None and run.returncode == 0,
              "abi2.so with required: false: exit 0, got "
              f"{run.returncode if run else 'timeout'}; stderr: {run.stderr if run else ''!r}")
        if run is not None and run.returncode == 0:
            check(plugins["abi2"] in run.stderr and "continuing without it" in run.stderr,
                  f"required: false: the log names the file left out, got {run.stderr!r}")
            with open(report) as f:
                summary = json.load(f)["summary"]
            check(summary["scheduled"] > 0, "required: false: pods were still scheduled")

    print(f"{PASSED[0]} passed, {len(FAILURES)} failed")
    return 1 if FAILURES or PASSED[0] == 0 else 0  # a run that checked nothing fails


if __name__ == "__main__":
    sys.exit(main())
