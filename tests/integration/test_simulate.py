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


def check_report(name, report_path, ignored=()):
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
            if resource in ignored:
                continue
            allocatable = n["allocatable"].get(resource, "0")
            check(quantity(requested) <= quantity(allocatable),
                  f"{name}: node {n['name']} {resource} requested {requested} <= "
                  f"allocatable {allocatable}")
    return report


def main():
    with tempfile.TemporaryDirectory() as tmp:
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
        check(len(huge) == 2 and all(p["reason"] == "0/6 nodes are available: 6 Insufficient cpu."
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
        check(reasons == ["0/2 nodes are available: 2 Insufficient memory.",
                          "0/2 nodes are available: 2 Too many pods."],
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

        # GPUs (gpushare): every card within its memory, the GPU figures add up, the pod that
        # asks for 16 cards is the one GPU pod left, with its reason.
        run, report_path = simulate(os.path.join(SOURCE, "examples", "sim", "gpu.yaml"), tmp)
        check(run.returncode == 0, f"gpu.yaml: exit 0, stderr: {run.stderr}")
        # HAMi's memory and core resources are per card (gpushare's ledger), not node resources
        report = check_report("gpu.yaml", report_path, ignored=(
            "nvidia.com/gpumem", "nvidia.com/gpumem-percentage", "nvidia.com/gpucores"))
        gpu = report.get("gpu", {})
        cards = gpu.get("card_list", [])
        check(gpu.get("cards") == 40 and len(cards) == 40, f"gpu.yaml: 40 cards, got {gpu}")
        for card in cards:
            check(0 <= card["allocated_mib"] <= card["memory_mib"] and card["users"] <= 10,
                  f"gpu.yaml: card {card} within its memory and users")
        # 8 whole cards, 12 halves, 40 x 4 GiB, 10 MIG 3g.40gb instances of 40 GiB
        check(gpu.get("allocated_mib") == (8 * 80 + 12 * 40 + 40 * 4 + 10 * 40) * 1024 ==
              sum(c["allocated_mib"] for c in cards),
              f"gpu.yaml: allocated memory adds up, got {gpu.get('allocated_mib')}")
        check(gpu.get("unallocated_mib") == gpu.get("memory_mib", 0) - gpu.get("allocated_mib", 0),
              "gpu.yaml: unallocated = memory - allocated")
        check(gpu.get("whole_cards_free") == sum(1 for c in cards if c["users"] == 0),
              "gpu.yaml: whole cards free counted")
        check(gpu.get("pods_bound") == 70 and gpu.get("pods_unschedulable") == 1 and
              gpu["unschedulable"][0]["name"] == "huge" and
              REASON.match(gpu["unschedulable"][0]["reason"]) is not None,
              f"gpu.yaml: only ml/huge left, with a reason, got {gpu.get('unschedulable')}")
        check("GPUs: 40 cards on 5 nodes" in run.stdout and "GPU pods: 70 bound, 1 unschedulable"
              in run.stdout, f"gpu.yaml: the summary reports GPU use, got {run.stdout[-500:]!r}")
        # the same with gpushare in a plugin host: the decisions come back to the Binding and
        # the placements are the same
        placements = {(p["namespace"], p["name"]): p["node"] for p in report["pods"]}
        with open(os.path.join(SOURCE, "examples", "sim", "gpu.yaml")) as f:
            text = f.read()
        hosted = os.path.join(tmp, "gpu-process.yaml")
        with open(hosted, "w") as f:
            f.write(text.replace("    - name: gpushare\n      weight: 100\n",
                                 "    - name: gpushare\n      weight: 100\n"
                                 "      isolation: process\n"))
        run, report_path = simulate(hosted, tmp)
        check(run.returncode == 0, f"gpu.yaml in a plugin host: exit 0, stderr: {run.stderr}")
        with open(report_path) as f:
            hosted_report = json.load(f)
        check({(p["namespace"], p["name"]): p["node"] for p in hosted_report["pods"]} ==
              placements, "gpu.yaml: the same placements with gpushare in a plugin host")
        check(hosted_report.get("gpu", {}).get("allocated_mib") == gpu.get("allocated_mib"),
              "gpu.yaml in a plugin host: the decisions reach the bindings")

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
