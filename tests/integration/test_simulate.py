#!/usr/bin/env python3
"""kcycle-scheduler --simulate end to end: every pod bound or parked with a kube-style reason,
no node over its allocatable, the same placements on every run, and clear errors for bad
input files."""
import json
import os
import re
import subprocess
import sys
import tempfile

SCHEDULER, SOURCE = sys.argv[1], sys.argv[2]
FAILURES = []
PASSED = [0]
REASON = re.compile(r"^(0/\d+ nodes are available: .+\.|pod group [^ ]+: .+)$")


def check(condition, message):
    if condition:
        PASSED[0] += 1
        return
    FAILURES.append(message)
    print("FAIL: " + message)


def quantity(text):
    """The report writes cpu as cores or millicores and everything else as integers."""
    if text.endswith("m"):
        return int(text[:-1])
    return int(text) * 1000 if "." not in text else int(float(text) * 1000)


def simulate(path, tmp, extra=()):
    report = os.path.join(tmp, "report.json")
    run = subprocess.run([SCHEDULER, "--simulate", path, "--report", report, *extra],
                         capture_output=True, text=True, timeout=60)
    return run, report


def check_report(name, report_path):
    with open(report_path) as f:
        report = json.load(f)
    pods, nodes, summary = report["pods"], report["nodes"], report["summary"]
    check(len(pods) == summary["pods"], f"{name}: pods listed == summary.pods")
    bound = [p for p in pods if p["node"] is not None]
    parked = [p for p in pods if p["node"] is None]
    check(len(bound) == summary["scheduled"], f"{name}: bound pods == summary.scheduled")
    for p in bound:
        check(p["reason"] is None, f"{name}: bound pod {p['name']} has no reason")
    for p in parked:
        check(p["reason"] is not None and REASON.match(p["reason"]) is not None,
              f"{name}: pod {p['namespace']}/{p['name']} parked with a kube-style reason, "
              f"got {p['reason']!r}")
    node_names = {n["name"] for n in nodes}
    for p in bound:
        check(p["node"] in node_names, f"{name}: {p['name']} bound to a known node")
    for n in nodes:
        for resource, requested in n["requested"].items():
            allocatable = n["allocatable"].get(resource, "0")
            check(quantity(requested) <= quantity(allocatable),
                  f"{name}: node {n['name']} {resource} requested {requested} <= "
                  f"allocatable {allocatable}")
    return report


def simulate_example(name, tmp):
    """Run examples/sim/NAME; its checked report, or None (and a failure) when it did not run."""
    run, report_path = simulate(os.path.join(SOURCE, "examples", "sim", name), tmp)
    check(run.returncode == 0, f"{name}: exit 0, stderr: {run.stderr}")
    return (run, check_report(name, report_path)) if run.returncode == 0 else (run, None)


def check_preemption(tmp):
    """defaultpreemption in the default profile: the fewest, least important victims on a full
    cluster; preemptionPolicy Never; the nominated pod's room kept; a PDB-protected victim
    spared when another candidate exists, and taken when the budget is gone."""
    path = os.path.join(SOURCE, "examples", "sim", "preemption.yaml")
    run, report = simulate_example("preemption.yaml", tmp)
    if report is None:
        return
    pods = {p["name"]: p for p in report["pods"]}
    evicted = [(e["namespace"], e["name"], e["node"], e["preemptor"])
               for e in report["preemptions"]]
    check(evicted == [("batch", "big-1a", "node-1", "urgent-0")],
          f"preemption.yaml: exactly big-1a evicted from node-1 for urgent-0, got {evicted}")
    check(pods["urgent-0"]["node"] == "node-1" and pods["urgent-0"].get("nominated") == "node-1",
          f"preemption.yaml: urgent-0 nominated on and bound to node-1, got {pods['urgent-0']}")
    check(pods["polite-0"]["node"] is None and pods["polite-0"]["reason"] ==
          "0/4 nodes are available: 4 Insufficient cpu. preemption: not eligible due to "
          "preemptionPolicy=Never.", f"preemption.yaml: polite-0 waits, got {pods['polite-0']}")
    check(pods["filler-0"]["node"] is None and pods["filler-0"]["reason"] ==
          "0/4 nodes are available: 4 Insufficient cpu. preemption: 0/4 nodes are available: "
          "4 No preemption victims found for incoming pod.",
          f"preemption.yaml: filler-0 does not take the nominated room, got {pods['filler-0']}")
    summary = report["summary"]
    check(summary["preemptions"] == 1 and summary["preemption_victims"] == 1,
          f"preemption.yaml: one preemption, one victim, got {summary['preemptions']}, "
          f"{summary['preemption_victims']}")
    check("PREEMPTED" in run.stdout and "batch/big-1a  node-1  apps/urgent-0" in run.stdout,
          f"preemption.yaml: the table lists the eviction, got {run.stdout[-400:]!r}")
    # determinism: the same victims on a second run
    again, again_path = simulate(path, tmp)
    with open(again_path) as f:
        check(json.load(f)["preemptions"] == report["preemptions"],
              "preemption.yaml: the same evictions on every run")

    path = os.path.join(SOURCE, "examples", "sim", "preemption-pdb.yaml")
    run, report = simulate_example("preemption-pdb.yaml", tmp)
    if report is None:
        return
    evicted = [(e["name"], e["node"]) for e in report["preemptions"]]
    check(evicted == [("cache-0", "cache-node")],
          f"preemption-pdb.yaml: the protected db-0 spared, cache-0 evicted, got {evicted}")
    check(report["pods"][0]["node"] == "cache-node",
          f"preemption-pdb.yaml: critical-0 on cache-node, got {report['pods'][0]}")
    # a pod group preempts as a whole or not at all
    run, report = simulate_example("preemption-gang.yaml", tmp)
    if report is not None:
        pods = {p["name"]: p for p in report["pods"]}
        evicted = sorted((e["name"], e["node"], e["preemptor"]) for e in report["preemptions"])
        check(evicted == [("low-0a", "node-0", "train-0"), ("low-0b", "node-0", "train-0"),
                          ("low-1a", "node-1", "train-1"), ("low-1b", "node-1", "train-1")],
              f"preemption-gang.yaml: train's four victims evicted and no other, got {evicted}")
        check(pods["train-0"]["node"] == "node-0" and pods["train-1"]["node"] == "node-1",
              f"preemption-gang.yaml: both members of train bound, got {pods['train-0']}, "
              f"{pods['train-1']}")
        check(all(pods[f"big-{i}"]["node"] is None and pods[f"big-{i}"].get("nominated") is None
                  for i in range(3)),
              "preemption-gang.yaml: big (would not fit even so) holds and nominates nothing")
    # a plugin host cannot run it: refused at start, with what to do
    config = os.path.join(tmp, "isolated.yaml")
    with open(config, "w") as f:
        f.write("plugins:\n  - name: prioritysort\n  - name: noderesources\n"
                "  - name: defaultpreemption\n    isolation: process\n"
                "  - name: defaultbinder\n")
    run, _ = simulate(path, tmp, ["--config", config])
    check(run.returncode != 0 and "defaultpreemption" in run.stderr and
          "isolation: inprocess" in run.stderr,
          f"defaultpreemption in a plugin host is refused, got {run.returncode}: {run.stderr}")
    # the same cluster without the budget: the lowest-priority victim goes
    with open(path) as f:
        text = f.read()
    unprotected = os.path.join(tmp, "no-pdb.yaml")
    with open(unprotected, "w") as f:
        f.write(re.sub(r"(?ms)^objects:.*?(?=^workload:)", "", text))
    run, report_path = simulate(unprotected, tmp)
    with open(report_path) as f:
        evicted = [(e["name"], e["node"]) for e in json.load(f)["preemptions"]]
    check(evicted == [("db-0", "db-node")],
          f"preemption-pdb.yaml without the budget: db-0 evicted, got {evicted}")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        check_preemption(tmp)
        for example in ("small.yaml", "small.json"):
            path = os.path.join(SOURCE, "examples", "sim", example)
            run, report_path = simulate(path, tmp)
            check(run.returncode == 0, f"{example}: exit 0, stderr: {run.stderr}")
            if run.returncode != 0:
                continue
            report = check_report(example, report_path)
            check(report["summary"]["scheduled"] > 0, f"{example}: some pods scheduled")
            check("Summary:" in run.stdout, f"{example}: summary printed")
            # determinism: the same file and seed place every pod on the same node
            again, again_path = simulate(path, tmp)
            with open(again_path) as f:
                second = json.load(f)
            check([p["node"] for p in report["pods"]] == [p["node"] for p in second["pods"]],
                  f"{example}: identical placements on a second run")

        # The small example's two 64-CPU pods cannot fit anywhere.
        run, report_path = simulate(os.path.join(SOURCE, "examples", "sim", "small.yaml"), tmp)
        with open(report_path) as f:
            report = json.load(f)
        huge = [p for p in report["pods"] if p["name"].startswith("huge")]
        check(len(huge) == 2 and all(p["reason"] == "0/6 nodes are available: 6 Insufficient cpu. "
                                         "preemption: 0/6 nodes are available: 6 Preemption is not "
                                         "helpful for scheduling."
                                     for p in huge),
              f"small.yaml: huge pods carry the cpu reason, got {huge}")

        # A pod that fits nowhere until a larger node... is parked; pods beyond capacity too.
        full = os.path.join(tmp, "full.yaml")
        with open(full, "w") as f:
            f.write("nodes:\n"
                    "  - {name: n, count: 2, allocatable: {cpu: 1, memory: 1Gi, pods: 3}}\n"
                    "workload:\n"
                    "  - {name: p, count: 8, requests: {cpu: 100m}}\n"
                    "  - {name: fat, requests: {memory: 2Gi}}\n")
        run, report_path = simulate(full, tmp)
        check(run.returncode == 0, f"full.yaml: exit 0, stderr: {run.stderr}")
        report = check_report("full.yaml", report_path)
        reasons = sorted({p["reason"] for p in report["pods"] if p["reason"]})
        # defaultpreemption's part, as kube-scheduler writes it: a pod larger than any node
        # cannot be helped; equal-priority pods are no victims
        check(reasons == ["0/2 nodes are available: 2 Insufficient memory. preemption: 0/2 nodes "
                          "are available: 2 Preemption is not helpful for scheduling.",
                          "0/2 nodes are available: 2 Too many pods. preemption: 0/2 nodes are "
                          "available: 2 No preemption victims found for incoming pod."],
              f"full.yaml: pods-per-node and memory reasons, got {reasons}")
        check(report["summary"]["scheduled"] == 6, "full.yaml: 6 pods fit (3 per node)")

        # Gangs: the first of three interleaved 600-pod jobs is placed whole, the two others
        # hold nothing; a short group fails after its timeout; a scheduler-plugins PodGroup runs.
        run, report_path = simulate(os.path.join(SOURCE, "examples", "sim", "gang.yaml"), tmp)
        check(run.returncode == 0, f"gang.yaml: exit 0, stderr: {run.stderr}")
        report = check_report("gang.yaml", report_path)
        groups = {g["name"]: g for g in report["podGroups"]}
        check(groups["train-a"]["phase"] == "Running" and groups["train-a"]["scheduled"] == 600,
              f"gang.yaml: train-a Running with 600 scheduled, got {groups['train-a']}")
        for name in ("train-b", "train-c"):
            bound = [p for p in report["pods"] if p["name"].startswith(name + "-") and p["node"]]
            check(not bound and groups[name]["scheduled"] == 0,
                  f"gang.yaml: {name} holds nothing, got {len(bound)} bound, {groups[name]}")
            check(groups[name]["message"].startswith(f"pod group ml/{name}: "),
                  f"gang.yaml: {name} says why, got {groups[name]['message']!r}")
        check(groups["eval"]["phase"] == "Failed" and
              "scheduleTimeoutSeconds (30 s)" in groups["eval"]["message"],
              f"gang.yaml: eval failed after its timeout, got {groups['eval']}")
        check(groups["nginx"]["phase"] == "Running" and groups["nginx"]["scheduled"] == 3,
              f"gang.yaml: the scheduler-plugins PodGroup runs, got {groups['nginx']}")
        check("pod groups: 5" in run.stdout and "ml/train-a: Running, 600 scheduled" in run.stdout,
              f"gang.yaml: the summary lists the groups, got {run.stdout[-600:]!r}")

        # A broken file names the file, line and column, and the key.
        bad = os.path.join(tmp, "bad.yaml")
        with open(bad, "w") as f:
            f.write("nodes:\n  - name: n\n    allocatable: {cpu: lots}\n")
        run, _ = simulate(bad, tmp)
        check(run.returncode == 1, f"bad.yaml: exit 1, got {run.returncode}")
        check(re.search(r"bad\.yaml:3:\d+:", run.stderr) is not None,
              f"bad.yaml: error names file:line:column, got {run.stderr!r}")
        check("cpu" in run.stderr, f"bad.yaml: error names the key, got {run.stderr!r}")

    print(f"{PASSED[0]} passed, {len(FAILURES)} failed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
