#!/usr/bin/env python3
"""Plugin hosts killed with SIGKILL at random points of a simulated 20,000-pod run: the
evaluation host (noderesources) and the bind-only host (defaultbinder), each under several
seeds, always restart within the run (backoff on the simulated clock), are resynced (no node
ends above its allocatable, which a stale replica would allow), and every pod ends bound or with
a reason.

  test_host_kill.py SCHEDULER [--seeds N] [--pods N] [--pace N]

The normal suites run 2 seeds; `./dev.sh soak` runs 10."""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time

FAILURES = []
PASSED = [0]


def check(condition, message):
    if condition:
        PASSED[0] += 1
        return
    FAILURES.append(message)
    print("FAIL: " + message)


CONFIG = ("plugins:\n  - {name: prioritysort}\n"
          "  - {name: noderesources, isolation: process}\n"
          "  - {name: defaultbinder, isolation: process}\n")


def write_workload(tmp, nodes, pods):
    path = os.path.join(tmp, f"workload-{nodes}-{pods}.yaml")
    with open(path, "w") as f:
        f.write("nodes:\n")
        for size in (8, 16, 32):
            f.write(f"  - {{name: n{size}, count: {nodes // 3}, "
                    f"allocatable: {{cpu: {size}, memory: {size * 4}Gi, pods: 110}}}}\n")
        f.write("workload:\n")
        for i, (cpu, mem) in enumerate((("100m", "256Mi"), ("500m", "1Gi"), ("1", "3Gi"),
                                        ("3", "2Gi"))):
            f.write(f"  - {{name: w{i}, count: {pods // 4}, interval: 1ms, "
                    f"requests: {{cpu: {cpu}, memory: {mem}}}}}\n")
    return path


def host_pids(scheduler_pid, plugin):
    """The scheduler's plugin hosts of group plugin (kcycle-plugin-host --name PLUGIN)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != scheduler_pid:
                continue
            with open(f"/proc/{entry}/cmdline") as f:
                if f"\0--name\0{plugin}\0" in f.read():
                    found.append(int(entry))
        except (OSError, ValueError):
            continue
    return found


QUANTITY = {"m": 0.001, "Ki": 1024, "Mi": 1024 ** 2, "Gi": 1024 ** 3, "k": 1e3, "M": 1e6,
            "G": 1e9}


def quantity(text):
    for suffix in sorted(QUANTITY, key=len, reverse=True):
        if text.endswith(suffix):
            return float(text[:-len(suffix)]) * QUANTITY[suffix]
    return float(text)


def run(scheduler, tmp, name, sim, pace, kill=None):
    """Run the simulation paced; kill: (plugin, seed) to SIGKILL that host at 1 to 3 random
    points of the run. Returns (exit status, stderr, report, kills that hit a host)."""
    cfg = os.path.join(tmp, name + ".config.yaml")
    report_path = os.path.join(tmp, name + ".report.json")
    with open(cfg, "w") as f:
        f.write(CONFIG)
    proc = subprocess.Popen([scheduler, "-v", "--config", cfg, "--simulate", sim, "--report",
                             report_path, "--quiet", "--no-progress", "--pace", str(pace)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
    reader.start()
    kills = 0
    if kill is not None:
        plugin, seed = kill
        rng = random.Random(seed)
        # the hosts have started and taken their snapshot: a kill now is one of the run
        deadline = time.monotonic() + 120
        while (not any("plugin hosts started" in line for line in lines) and
               proc.poll() is None and time.monotonic() < deadline):
            time.sleep(0.01)
        started = time.monotonic()
        # the arrivals alone last pods / pace seconds: every kill falls within the run
        points = sorted(rng.uniform(0.0, 0.8 * RUN_SECONDS[0]) for _ in range(rng.randint(1, 3)))
        for at in points:
            while time.monotonic() - started < at and proc.poll() is None:
                time.sleep(0.005)
            for pid in host_pids(proc.pid, plugin):
                os.kill(pid, signal.SIGKILL)
                kills += 1
    proc.wait(timeout=900)
    reader.join(timeout=30)
    report = None
    if proc.returncode == 0 and os.path.exists(report_path):
        with open(report_path) as f:
            report = json.load(f)
    return proc.returncode, "".join(lines), report, kills


RUN_SECONDS = [0.0]


def check_report(name, report):
    unaccounted = [p["name"] for p in report["pods"]
                   if p["node"] is None and not (p["reason"] or "").strip()]
    check(not unaccounted, f"{name}: every pod bound or with a reason; not: {unaccounted[:5]}")
    over = []
    for node in report["nodes"]:
        for resource in ("cpu", "memory", "pods"):
            used = quantity(node["requested"].get(resource, "0"))
            if used > quantity(node["allocatable"].get(resource, "0")) + 1e-9:
                over.append((node["name"], resource))
    check(not over, f"{name}: no node above its allocatable (the replica was resynced): {over[:5]}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("scheduler")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--pods", type=int, default=20000)
    parser.add_argument("--pace", type=int, default=10000)
    args = parser.parse_args()
    RUN_SECONDS[0] = args.pods / args.pace
    with tempfile.TemporaryDirectory() as tmp:
        sim = write_workload(tmp, 300, args.pods)
        rc, stderr, clean, _ = run(args.scheduler, tmp, "unkilled", sim, args.pace)
        check(rc == 0 and clean is not None, f"the run without a kill: exit 0 ({stderr[-500:]})")
        if clean is None:
            return 1
        check_report("unkilled", clean)
        expected = clean["summary"]["scheduled"]
        check(expected > args.pods // 4, f"unkilled: a good part of the pods bound ({expected})")
        for plugin in ("noderesources", "defaultbinder"):
            for seed in range(1, args.seeds + 1):
                name = f"killed-{plugin}-{seed}"
                rc, stderr, report, kills = run(args.scheduler, tmp, name, sim, args.pace,
                                                (plugin, seed))
                check(rc == 0 and report is not None, f"{name}: exit 0 ({stderr[-500:]})")
                check(kills >= 1, f"{name}: the {plugin} host was found running and killed")
                if report is None:
                    continue
                check_report(name, report)
                host = [h for h in report["summary"]["plugin_hosts"] if h["name"] == plugin][0]
                check(host["restarts"] >= 1 and host["state"] == "up",
                      f"{name}: the host restarted within the run and is up, got {host}")
                check("signal 9" in (host["last_error"] or ""),
                      f"{name}: the report says the host was killed (signal 9), got "
                      f"{host['last_error']}")
                # the attempts a kill failed are retried later, so the packing (and with it
                # the count of pods that find room) may differ a little from the clean run
                scheduled = report["summary"]["scheduled"]
                check(abs(scheduled - expected) <= expected // 20,
                      f"{name}: about as many pods scheduled as without the kill "
                      f"({scheduled} vs {expected})")
                print(f"{name}: {kills} kill(s), {host['restarts']} restart(s), "
                      f"{scheduled} of {args.pods} pods bound ({expected} without a kill)")
    print(f"{PASSED[0]} checks passed, {len(FAILURES)} failed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
