#!/usr/bin/env python3
"""Randomized placement check (20 seeds): random clusters of labelled nodes and workloads with
topology spread constraints (DoNotSchedule, zone or hostname, maxSkew 1-2, minDomains), required
pod anti-affinity (hostname or zone) and required pod affinity, run through
kcycle-scheduler --simulate with the default plugins; every placement is then checked by an
independent checker written here from Kubernetes' documented rules:

- spread: per constraint, over every domain of the cluster, the largest count of matching pods
  minus the smallest (0 when there are fewer domains than minDomains) is at most maxSkew
  (placements only add pods, so the bound that held at each placement still holds);
- anti-affinity: no two placed pods where one's required anti-affinity term selects the other
  share the term's domain;
- affinity: each placed pod with required affinity has a matching pod in its domain, or
  matches its own term (the first pod of a set).

A control run of the same files without podtopologyspread and interpodaffinity must break at
least one rule, so the checker can fail."""
import json
import os
import random
import subprocess
import sys
import tempfile

SCHEDULER = sys.argv[1]
SEEDS = 20
FAILURES = []
PASSED = [0]
KNOWN_REASONS = ("node(s) didn't match pod topology spread constraints",
                 "node(s) didn't match pod anti-affinity rules",
                 "node(s) didn't satisfy existing pods anti-affinity rules",
                 "node(s) didn't match pod affinity rules", "Insufficient", "Too many pods")


def check(condition, message):
    if condition:
        PASSED[0] += 1
        return
    FAILURES.append(message)
    print("FAIL: " + message)


def pod(name, labels, cpu, spec_extra):
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu,
                                                                     "memory": "64Mi"}}}]}
    spec.update(spec_extra)
    return {"metadata": {"name": name, "namespace": "default", "labels": labels}, "spec": spec}


def scenario(seed):
    """The simulation file and, per group, the rule the checker applies."""
    rng = random.Random(seed)
    zones = rng.randint(2, 4)
    nodes = [{"name": f"n{i}", "allocatable": {"cpu": str(rng.choice([2, 4, 8])),
                                               "memory": "32Gi", "pods": "110"},
              "labels": {"zone": f"z{i % zones}"}} for i in range(rng.randint(6, 16))]
    workload, rules, arrival = [], [], 0
    for g in range(rng.randint(3, 6)):
        kind = rng.choice(["spread", "spread", "anti", "affinity"])
        app = f"{kind}{g}"
        key = rng.choice(["zone", "kubernetes.io/hostname"])
        selector = {"matchLabels": {"app": app}}
        if kind == "spread":
            rule = {"maxSkew": rng.randint(1, 2), "topologyKey": key,
                    "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector}
            if rng.random() < 0.3:
                rule["minDomains"] = rng.randint(1, 6)
            extra = {"topologySpreadConstraints": [rule]}
        elif kind == "anti":
            rule = {"topologyKey": key, "labelSelector": selector}
            extra = {"affinity": {"podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [rule]}}}
        else:
            rule = {"topologyKey": "zone", "labelSelector": selector}
            extra = {"affinity": {"podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [rule]}}}
        rules.append((kind, app, rule))
        for i in range(rng.randint(4, 40)):
            entry = pod(f"{app}-{i}", {"app": app}, rng.choice(["100m", "250m", "500m"]), extra)
            entry["at"] = f"{arrival}ms"
            arrival += rng.randint(1, 5)
            workload.append(entry)
    rng.shuffle(workload)  # groups interleave; arrival times keep each pod's moment
    workload.sort(key=lambda e: int(e["at"][:-2]))
    return {"nodes": nodes, "workload": workload}, rules


def domain(nodes, node, key):
    return node if key == "kubernetes.io/hostname" else nodes[node].get(key)


def violations(sim, rules, report):
    """What the placements break, in words (empty when they keep every rule)."""
    nodes = {n["name"]: n["labels"] for n in sim["nodes"]}
    placed = {p["name"]: p["node"] for p in report["pods"] if p["node"] is not None}
    found = []
    for kind, app, rule in rules:
        members = [n for n in placed if n.rsplit("-", 1)[0] == app]
        key = rule["topologyKey"]
        if kind == "spread":
            counts = {domain(nodes, n, key): 0 for n in nodes}
            for m in members:
                counts[domain(nodes, placed[m], key)] += 1
            low = 0 if len(counts) < rule.get("minDomains", 1) else min(counts.values())
            if max(counts.values()) - low > rule["maxSkew"]:
                found.append(f"{app}: spread {sorted(counts.values())} over maxSkew "
                             f"{rule['maxSkew']} (minDomains {rule.get('minDomains', 1)})")
        elif kind == "anti":
            seen = {}
            for m in members:
                d = domain(nodes, placed[m], key)
                if d in seen:
                    found.append(f"{app}: {m} and {seen[d]} share {key}={d}")
                seen[d] = m
        else:
            for m in members:
                d = domain(nodes, placed[m], key)
                partners = [o for o in members if o != m and domain(nodes, placed[o], key) == d]
                # the pod matches its own term: alone is allowed only for the first of the set
                if not partners and len(members) > 1:
                    found.append(f"{app}: {m} has no {app} pod in {key}={d}")
    return found


def simulate(sim, tmp, name, config=None):
    if config is not None:
        sim = dict(sim, config=config)
    path = os.path.join(tmp, name + ".json")
    with open(path, "w") as f:
        json.dump(sim, f)
    report_path = os.path.join(tmp, name + "-report.json")
    run = subprocess.run([SCHEDULER, "--simulate", path, "--report", report_path],
                         capture_output=True, text=True, timeout=120)
    check(run.returncode == 0, f"{name}: exit 0, stderr: {run.stderr[-400:]}")
    if run.returncode != 0:
        return None
    with open(report_path) as f:
        return json.load(f)


def main():
    control_broken, refused = 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(SEEDS):
            sim, rules = scenario(seed)
            report = simulate(sim, tmp, f"seed{seed}")
            if report is None:
                continue
            found = violations(sim, rules, report)
            check(not found, f"seed {seed}: {found}")
            for p in report["pods"]:
                if p["node"] is None:
                    refused += 1
                    check(any(r in p["reason"] for r in KNOWN_REASONS),
                          f"seed {seed}: {p['name']} refused with {p['reason']!r}")
            control = simulate(sim, tmp, f"seed{seed}-control", {
                "plugins": [{"name": "prioritysort"}, {"name": "noderesources"},
                            {"name": "defaultbinder"}],
                "unhandledPodFields": {"refuse": False}})
            if control is not None and violations(sim, rules, control):
                control_broken += 1
    print(f"{SEEDS} seeds: {refused} pods refused; control without the plugins broke rules in "
          f"{control_broken} seeds")
    check(refused > 0, "some pods were refused by the constraints over the seeds")
    check(control_broken >= SEEDS // 2,
          f"without the plugins the checker finds violations (in {control_broken} seeds)")
    print(f"{PASSED[0]} passed, {len(FAILURES)} failed")
    return 1 if FAILURES or PASSED[0] == 0 else 0  # a run that checked nothing fails


if __name__ == "__main__":
    sys.exit(main())
