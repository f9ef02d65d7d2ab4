#!/usr/bin/env python3
"""usage: tests/perf/ab.py --a BUILD --b BUILD [--a-env N=V] [--b-env N=V] [-n RUNS] -- BENCH_ARGS

Compare two kcycle builds (or one build under two environments) with kcycle-bench: runs are
alternated, A B then B A (so neither side always runs first), so that a machine whose speed
drifts (a virtual machine's neighbours, its clock) weighs on both alike, and each figure's
median, min and max per side is printed.

One run of a side is one `kcycle-bench --json BENCH_ARGS`; the last line of its output that
parses as JSON is its report. A side's environment is the caller's with its NAME=VALUE pairs
set over it (a side cannot unset a variable). On the development machine the in-process rate
alone nearly doubles from one run to the next at times (docs/benchmarks.md, "Where a pod's
time goes in plugin hosts"): compare medians of 8 runs or more per side, and believe a
difference when a second series shows it too.

Examples:
  tests/perf/ab.py --a ../before/build --b build -n 10 -- --shape scheduling-basic \
      --isolation process
  tests/perf/ab.py --a build --b build --b-env KCYCLE_HOST_COLOCATE=1 -n 8 -- --shape gang \\
      --isolation process
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

DEFAULT_KEYS = [
    "pods_per_second_avg",
    "inprocess_pods_per_second",
    "process_to_inprocess_ratio",
    "per_pod_overhead_us",
    "ipc_round_trip_us_p50",
    "raw_round_trip_us_p50",
    "attempt_latency_us_p50",
    "group_latency_ms_p50",
]


def fail(message):
    sys.exit(f"ab.py: {message}")


def parse_env(pairs):
    env = {}
    for pair in pairs or []:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            fail(f"--a-env and --b-env take NAME=VALUE, not {pair!r}")
        env[name] = value
    return env


def run_once(side, number, build, env, bench_args, timeout):
    bench = os.path.join(build, "tests", "perf", "kcycle-bench")
    if not os.access(bench, os.X_OK):
        fail(f"side {side}: no kcycle-bench in {build} (build it first)")
    command = [bench, "--json", *bench_args]
    try:
        out = subprocess.run(command, env={**os.environ, **env}, capture_output=True, text=True,
                             timeout=timeout)
    except subprocess.TimeoutExpired:
        fail(f"side {side}, run {number}: {' '.join(command)} ran past {timeout:g} s")
    if out.returncode != 0:
        fail(f"side {side}, run {number}: {' '.join(command)} exited {out.returncode}: "
             f"{out.stderr.strip()[-400:]}")
    for line in reversed(out.stdout.splitlines()):
        try:
            report = json.loads(line)
        except ValueError:
            continue
        if isinstance(report, dict):
            return report
    fail(f"side {side}, run {number}: {' '.join(command)} printed no JSON report")


def is_figure(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def main():
    parser = argparse.ArgumentParser(
        description="Compare two kcycle builds with kcycle-bench runs alternated.",
        epilog="Everything after -- goes to kcycle-bench.")
    parser.add_argument("--a", required=True, help="build directory of side A")
    parser.add_argument("--b", required=True, help="build directory of side B")
    parser.add_argument("--a-env", action="append", metavar="NAME=VALUE",
                        help="set in side A's environment (repeatable)")
    parser.add_argument("--b-env", action="append", metavar="NAME=VALUE",
                        help="set in side B's environment (repeatable)")
    parser.add_argument("-n", type=int, default=8, help="runs per side (default 8)")
    parser.add_argument("--keys", help="comma-separated report fields (default: the usual ones)")
    parser.add_argument("--timeout", type=float, default=600,
                        help="seconds one run may take (default 600)")
    parser.add_argument("bench_args", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    if args.n < 1:
        fail("-n takes a count of at least 1")
    bench_args = args.bench_args[1:] if args.bench_args[:1] == ["--"] else args.bench_args
    keys = args.keys.split(",") if args.keys else DEFAULT_KEYS
    sides = {"A": (args.a, parse_env(args.a_env)), "B": (args.b, parse_env(args.b_env))}
    runs = {"A": [], "B": []}
    for i in range(args.n):
        for side in ("A", "B") if i % 2 == 0 else ("B", "A"):
            build, env = sides[side]
            report = run_once(side, i + 1, build, env, bench_args, args.timeout)
            runs[side].append(report)
            shown = " ".join(f"{k}={report[k]}" for k in keys if k in report)
            print(f"run {i + 1} {side}: {shown}", flush=True)
    print()
    for side, (build, env) in sides.items():
        settings = "".join(f" {k}={v}" for k, v in env.items())
        print(f"{side} ({build}{settings}), {args.n} runs:")
        for k in keys:
            values = [r[k] for r in runs[side] if is_figure(r.get(k))]
            if values:
                print(f"  {k}: median {statistics.median(values):.4g}, "
                      f"min {min(values):.4g}, max {max(values):.4g}")
            elif args.keys:
                print(f"  {k}: in no report", file=sys.stderr)


if __name__ == "__main__":
    main()
