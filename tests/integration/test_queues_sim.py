#!/usr/bin/env python3
"""Capacity queues under --simulate (plugins/capacityqueue): the example scenarios of
examples/sim/queues-*.yaml with their outcomes asserted from the JSON report: borrowing while
a sibling is idle and reclaim across several nodes when its pods arrive, limits at every level
of a three-level tree, a gang admitted whole or not at all, dominant shares converging 1:1 and
2:1 within 5%, reclaim when an ancestor's limit refuses (no node full), and invalid queue trees refused with an error naming the queue and the rule."""
import json
import os
import subprocess
import sys
import tempfile

SCHEDULER, SOURCE = sys.argv[1], sys.argv[2]
PLUGIN_DIR = sys.argv[3] if len(sys.argv) > 3 else None
FAILURES = []
PASSED = [0]
GIB = 1 << 30


def check(condition, message):
    if condition:
        PASSED[0] += 1
        return
    FAILURES.append(message)
    print("FAIL: " + message)


def simulate(path, tmp):
    report = os.path.join(tmp, "report.json")
    if os.path.exists(report):
        os.unlink(report)
    extra = ["--plugin-dir", PLUGIN_DIR] if PLUGIN_DIR else []
    run = subprocess.run([SCHEDULER, "--simulate", path, "--report", report, *extra],
                         capture_output=True, text=True, timeout=120)
    check(run.returncode == 0, f"{os.path.basename(path)}: exit 0, stderr: {run.stderr[-2000:]}")
    if run.returncode != 0:
        return None, run
    with open(report) as f:
        return json.load(f), run


def example(name, tmp):
    return simulate(os.path.join(SOURCE, "examples", "sim", name), tmp)


def quantity(text):
    """A status quantity: cpu in "1500m", the others in base units."""
    return int(text[:-1]) / 1000 if text.endswith("m") else int(text)


def queue_status(report):
    """name -> the latest status the plugin reported, and the history of each."""
    entries = [o for o in report.get("objectStatus", []) if o["kind"] == "CapacityQueue"]
    return ({o["name"]: o["status"] for o in entries},
            {o["name"]: o["history"] for o in entries})


def bound_by_prefix(report, prefix):
    return [p for p in report["pods"] if p["name"].startswith(prefix) and p["node"]]


def borrowing_and_reclaim(tmp):
    report, _ = example("queues-reclaim.yaml", tmp)
    if report is None:
        return
    status, history = queue_status(report)
    # before prod's pods arrive (10 s), research borrowed the whole cluster
    early = [h["status"] for h in history.get("research", []) if h["at_ms"] < 10000]
    check(early and quantity(early[-1]["used"]["cpu"]) == 32 and
          quantity(early[-1]["borrowed"]["cpu"]) == 16,
          f"research borrows prod's idle 16 CPUs before 10 s, got {early[-1:] }")
    # prod's pods reclaim: every one bound, research evicted down to its guarantee
    serve = bound_by_prefix(report, "serve-")
    check(len(serve) == 8, f"all 8 prod pods bound, got {len(serve)}")
    victims = [e for e in report["preemptions"]]
    check(len(victims) == 8 and all(e["namespace"] == "research" for e in victims),
          f"8 research pods evicted, nothing else, got {victims}")
    nodes = {e["node"] for e in victims}
    check(len(nodes) >= 2, f"reclaim spans several nodes, got {nodes}")
    # within one reclaim round: every eviction in the second after prod's arrival
    check(all(10000 <= e["at_ms"] < 11000 for e in victims),
          f"all evictions within one round (10 s .. 11 s), got {[e['at_ms'] for e in victims]}")
    check(quantity(status["research"]["used"]["cpu"]) == 16 and
          quantity(status["research"]["borrowed"].get("cpu", "0m")) == 0,
          f"research ends at its guarantee, not below, got {status['research']}")
    check(quantity(status["prod"]["used"]["cpu"]) == 16 and status["prod"]["pending"] == 0,
          f"prod reaches its guarantee, got {status['prod']}")


def nested_reclaim(tmp):
    """An ancestor's limit (not a full node) refuses a queue within its guarantee: reclaim
    frees quota from the sibling that borrows."""
    report, _ = example("queues-nested.yaml", tmp)
    if report is None:
        return
    aa = bound_by_prefix(report, "aa-")
    check(len(aa) == 4, f"all 4 of a's pods bound under org's limit, got {len(aa)}")
    victims = report["preemptions"]
    check(len(victims) == 4 and all(e["namespace"] == "b" for e in victims),
          f"4 of b's borrowed pods evicted, nothing else, got {victims}")
    status, _ = queue_status(report)
    check(quantity(status["b"]["used"]["cpu"]) == 8 and
          quantity(status["b"]["borrowed"].get("cpu", "0m")) == 0,
          f"b ends at its guarantee, not below, got {status.get('b')}")
    check(quantity(status["a"]["used"]["cpu"]) == 8 and status["a"]["pending"] == 0,
          f"a reaches its guarantee, got {status.get('a')}")


def three_level_limits(tmp):
    report, _ = example("queues-limits.yaml", tmp)
    if report is None:
        return
    counts = {prefix: len(bound_by_prefix(report, prefix)) for prefix in ("a1-", "a2-", "b1-")}
    check(counts == {"a1-": 10, "a2-": 6, "b1-": 8},
          f"team-a1 10 (own limit), team-a2 6 (dept-a), team-b1 8 (org), got {counts}")
    reasons = {p["name"].split("-")[0]: p["reason"] for p in report["pods"] if not p["node"]}
    check("queue team-a1: cpu limit 10000m exceeded" in reasons.get("a1", ""),
          f"a1's refusal names team-a1's limit, got {reasons.get('a1')}")
    check("queue dept-a: cpu limit 16000m exceeded" in reasons.get("a2", ""),
          f"a2's refusal names dept-a's limit, got {reasons.get('a2')}")
    check("queue org: cpu limit 24000m exceeded" in reasons.get("b1", ""),
          f"b1's refusal names org's limit, got {reasons.get('b1')}")
    status, _ = queue_status(report)
    check(quantity(status["org"]["used"]["cpu"]) == 24 and status["org"]["admitted"] == 24,
          f"org counts its descendants' pods, got {status.get('org')}")


def gang_whole(tmp):
    report, _ = example("queues-gang.yaml", tmp)
    if report is None:
        return
    train, sweep = bound_by_prefix(report, "train-"), bound_by_prefix(report, "sweep-")
    check(len(train) == 4, f"gang train (8 of 10 CPUs) admitted whole, got {len(train)}")
    check(len(sweep) == 0, f"gang sweep (3 CPUs, 2 left) admitted not at all, got {len(sweep)}")
    reason = next((p["reason"] for p in report["pods"] if p["name"] == "sweep-0"), "")
    check("pod group as a whole: queue ml: cpu limit" in (reason or ""),
          f"sweep's reason says the group as a whole crosses ml's limit, got {reason}")


def fair_share(tmp):
    report, _ = example("queues-fair.yaml", tmp)
    if report is None:
        return
    status, _ = queue_status(report)
    cpus, memory = 400, 1600 * GIB

    def dominant(name):
        used = status[name]["used"]
        return max(quantity(used.get("cpu", "0m")) / cpus, quantity(used.get("memory", "0")) / memory)

    shares = {name: dominant(name) for name in ("cpu-team", "mem-team", "heavy", "light")}
    check(min(shares.values()) > 0.1, f"every queue got a share, got {shares}")
    a, b = shares["cpu-team"], shares["mem-team"]
    check(abs(a - b) <= 0.05 * max(a, b), f"weights 1:1 give dominant shares within 5%, got {a} {b}")
    ratio = shares["heavy"] / shares["light"]
    check(abs(ratio - 2) <= 0.05 * 2, f"weights 2:1 give shares 2:1 within 5%, got {ratio}")
    # the cluster is full: fairness did not leave room unused
    cpu_used = sum(quantity(status[n]["used"]["cpu"]) for n in shares)
    check(cpu_used == cpus, f"the cluster's CPUs are all used, got {cpu_used}")


INVALID = """config:
  plugins: [{name: capacityqueue}, {name: noderesources}, {name: defaultbinder}]
nodes:
  - {name: n, allocatable: {cpu: 8, memory: 8Gi, pods: 110}}
objects:
%s
workload:
  - {name: p, labels: {kcycle.io/queue: %s}, requests: {cpu: 1}}
"""

RULES = [
    ("cycle",
     "  - {kind: CapacityQueue, metadata: {name: x}, spec: {parent: y}}\n"
     "  - {kind: CapacityQueue, metadata: {name: y}, spec: {parent: x}}\n", "x",
     "queue x: cycle in the queue tree (x -> y -> x)"),
    ("children above parent",
     "  - {kind: CapacityQueue, metadata: {name: org}, spec: {guaranteed: {cpu: 4}}}\n"
     "  - {kind: CapacityQueue, metadata: {name: t1}, spec: {parent: org, guaranteed: {cpu: 3}}}\n"
     "  - {kind: CapacityQueue, metadata: {name: t2}, spec: {parent: org, guaranteed: {cpu: 2}}}\n",
     "t1", "queue org: its children's guaranteed cpu (5000 together) is above its own (4000)"),
    ("guaranteed above limit",
     "  - {kind: CapacityQueue, metadata: {name: g}, spec: {guaranteed: {cpu: 4}, limit: {cpu: 2}}}\n",
     "g", "queue g: guaranteed cpu (4000) is above its limit (2000)"),
]


def invalid_trees(tmp):
    for rule, objects, queue, message in RULES:
        path = os.path.join(tmp, "invalid.yaml")
        with open(path, "w") as f:
            f.write(INVALID % (objects, queue))
        report, run = simulate(path, tmp)
        if report is None:
            continue
        check(message in run.stderr, f"{rule}: the log names the queue and the rule, got "
              f"{run.stderr[-1500:]}")
        pod = report["pods"][0]
        check(pod["node"] is None and message in (pod["reason"] or ""),
              f"{rule}: the queue's pods wait with the error as their reason, got {pod}")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        borrowing_and_reclaim(tmp)
        nested_reclaim(tmp)
        three_level_limits(tmp)
        gang_whole(tmp)
        fair_share(tmp)
        invalid_trees(tmp)
    print(f"{PASSED[0]} passed, {len(FAILURES)} failed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
