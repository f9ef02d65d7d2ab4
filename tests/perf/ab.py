#!/usr/bin/env python3
"""Compare two kcycle builds (or one build under two environments) with kcycle-bench, runs
alternated A, B, A, B, ... so that a machine whose speed drifts (a virtual machine's neighbours,
frequency) weighs on both alike, and report each figure's median, min and max per side.

One run of a side is one `kcycle-bench ... --json`; its last output line is the JSON report.
A single pair of runs says little where the in-process rate alone moves by a third from one
run to the next (docs/benchmarks.md, "Where a pod's time goes in plugin hosts"): compare
medians over 8 runs or more, and believe a difference only when it holds in a second series.

Usage:
  tests/perf/ab.py --a build-old --b build -n 10 -- --shape scheduling-basic --isolation process
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


def parse_env(pairs):
    env = {}
    for pair in pairs or []:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            sys.exit(f"ab.py: --a-env/--b-env take NAME=VALUE, not {pair!r}")
        env[name] = value
    return env


def run_once(build, env, bench_args, timeout):
    bench = os.path.join(build, "tests", "perf", "kcycle-bench")
    if not os.access(bench, os.X_OK):
        sys.exit(f"ab.py: no kcycle-bench in {build} (build it first)")
    out = subprocess.run([bench, *bench_args, "--json"], env={**os.environ, **env},
                         capture_output=True, text=True, timeout=timeout)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not lines:
        sys.exit(f"ab.py: {bench} {' '.join(bench_args)} failed (exit {out.returncode}): "
                 f"{out.stderr.strip()[-400:]}")
    return json.loads(lines[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--a", required=True, help="build directory of side A")
    p.add_argument("--b", required=True, help="build directory of side B")
    p.add_argument("--a-env", action="append", metavar="NAME=VALUE", help="environment of A")
    p.add_argument("--b-env", action="append", metavar="NAME=VALUE", help="environment of B")
    p.add_argument("-n", type=int, default=8, help="runs per side (default 8)")
    p.add_argument("--keys", help="comma-separated report fields (default: the usual figures)")
    p.add_argument("--timeout", type=float, default=600, help="seconds per run (default 600)")
    p.add_argument("bench_args", nargs=argparse.REMAINDER, help="-- then kcycle-bench's options")
    args = p.parse_args()
    bench_args = [a for a in args.bench_args if a != "--"]
    keys = args.keys.split(",") if args.keys else DEFAULT_KEYS
    sides = {"A": (args.a, parse_env(args.a_env)), "B": (args.b, parse_env(args.b_env))}
    runs = {"A": [], "B": []}
    for i in range(args.n):
        for side, (build, env) in sides.items():
            report = run_once(build, env, bench_args, args.timeout)
            runs[side].append(report)
            shown = " ".join(f"{k}={report[k]}" for k in keys if k in report)
            print(f"run {i + 1} {side}: {shown}", flush=True)
    print()
    for side in sides:
        print(f"{side} ({sides[side][0]}{' ' if sides[side][1] else ''}"
              f"{' '.join(f'{k}={v}' for k, v in sides[side][1].items())}), {args.n} runs:")
        for k in keys:
            values = [r[k] for r in runs[side] if isinstance(r.get(k), (int, float))]
            if values:
                print(f"  {k}: median {statistics.median(values):.4g}, "
                      f"min {min(values):.4g}, max {max(values):.4g}")


if __name__ == "__main__":
    main()
