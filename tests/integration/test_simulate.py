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
        # a pod deleted with its node (nodeRemovals) names the node it ran on, gone since
        check(p["node"] in node_names or "removed_with_node_ms" in p,
              f"{name}: {p['name']} bound to a known node")
    for n in nodes:
        for resource, requested in n["requested"].items():
            if resource in ignored:
                continue
            allocatable = n["allocatable"].get(resource, "0")
            check(quantity(requested) <= quantity(allocatable),
                  f"{name}: node {n['name']} {resource} requested {requested} <= "
                  f"allocatable {allocatable}")
    return report



# defaultpreemption is in the default profile: kube appends what preemption found
NO_VICTIMS = (" preemption: 0/{0} nodes are available: {0} No preemption victims found for "
              "incoming pod.")
NOT_HELPFUL = (" preemption: 0/{0} nodes are available: {0} Preemption is not helpful for "
               "scheduling.")
PORTS_REASON = ("0/4 nodes are available: 4 node(s) didn't have free ports for the requested "
                "pod ports." + NO_VICTIMS.format(4))
# The host ports each pod of examples/sim/hostports.yaml asks for, by name prefix:
# (protocol, hostIP, port).
HOSTPORTS = {
    "legacy-proxy": [("TCP", "0.0.0.0", 8080)],
    "ingress": [("TCP", "0.0.0.0", 8080)],
    "dns": [("UDP", "0.0.0.0", 8080)],
    "agent-a": [("TCP", "10.0.0.1", 9100)],
    "agent-b": [("TCP", "10.0.0.2", 9100)],
    "exporter": [("TCP", "0.0.0.0", 9100)],
}


def ports_of(name):
    for prefix, ports in HOSTPORTS.items():
        if name == prefix or name.startswith(prefix + "-"):
            return ports
    return []


def ports_conflict(a, b):
    """kube-scheduler's rule, written here independently of the plugin."""
    return (a[0] == b[0] and a[2] == b[2] and
            ("0.0.0.0" in (a[1], b[1]) or a[1] == b[1]))


def check_no_port_shared(name, report):
    held = {}
    for p in report["pods"]:
        if p["node"] is None:
            continue
        for port in ports_of(p["name"]):
            for other, other_port in held.get(p["node"], []):
                check(not ports_conflict(port, other_port),
                      f"{name}: {p['name']} and {other} share {port} on {p['node']}")
            held.setdefault(p["node"], []).append((p["name"], port))


def simulated_report(label, tmp, path):
    """The checked report of a run that must succeed, or None (the failure recorded)."""
    run, report_path = simulate(path, tmp)
    check(run.returncode == 0, f"{label}: exit 0, stderr: {run.stderr}")
    return check_report(label, report_path) if run.returncode == 0 else None


def with_config(tmp, source, config, name):
    """The simulation file source with a config: section added."""
    with open(source) as f:
        text = f.read()
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text + "\nconfig:\n" + config)
    return path


def check_host_ports(tmp):
    """examples/sim/hostports.yaml: host-port pods one per node, the rest refused with kube's
    message; the same in a plugin host; refused by name without nodeports, unless ignored."""
    source = os.path.join(SOURCE, "examples", "sim", "hostports.yaml")
    process = with_config(tmp, source, "  plugins:\n    - {name: prioritysort}\n"
                          "    - {name: nodeports, isolation: process}\n"
                          "    - {name: noderesources}\n    - {name: defaultpreemption}\n"
                          "    - {name: defaultbinder}\n",
                          "hostports-process.yaml")
    placements = []
    for label, path in (("hostports.yaml", source), ("hostports.yaml in a plugin host", process)):
        report = simulated_report(label, tmp, path)
        if report is None:
            continue
        pods = {p["name"]: p for p in report["pods"]}
        placements.append({n: p["node"] for n, p in pods.items()})
        check_no_port_shared(label, report)
        ingress = [pods[f"ingress-{i}"] for i in range(5)]
        bound = [p["node"] for p in ingress if p["node"]]
        check(sorted(bound) == ["web-1", "web-2", "web-3"],
              f"{label}: ingress one per free node (web-0 holds 8080), got {bound}")
        check([p["reason"] for p in ingress if not p["node"]] == [PORTS_REASON] * 2,
              f"{label}: two ingress pods refused with kube's reason, got {ingress}")
        dns = sorted(pods[f"dns-{i}"]["node"] or "-" for i in range(4))
        check(dns == ["web-0", "web-1", "web-2", "web-3"],
              f"{label}: UDP 8080 is not TCP 8080: one dns pod per node, got {dns}")
        agents = {pods["agent-a"]["node"], pods["agent-b"]["node"]}
        check(None not in agents, f"{label}: both agents bound, got {agents}")
        exporters = [pods[f"exporter-{i}"] for i in range(4)]
        placed = [p["node"] for p in exporters if p["node"]]
        check(len(placed) == 4 - len(agents) and not set(placed) & agents,
              f"{label}: exporters (0.0.0.0:9100) only where no agent is, agents on {agents}, "
              f"got {placed}")
        check(all(p["reason"] == PORTS_REASON for p in exporters if not p["node"]),
              f"{label}: the other exporters carry kube's reason, got {exporters}")
    check(len(placements) == 2 and placements[0] == placements[1],
          "hostports.yaml: the same placements in process and in a plugin host")

    no_nodeports = ("  plugins:\n    - {name: prioritysort}\n"
                    "    - {name: noderesources}\n    - {name: defaultbinder}\n")
    report = simulated_report("hostports without nodeports", tmp, with_config(
        tmp, source, no_nodeports, "hostports-without.yaml"))
    if report is not None:
        pending = [p for p in report["pods"] if p["node"] is None]
        want = ("0/4 nodes are available: pod uses spec.containers[].ports[].hostPort, which no "
                "enabled plugin handles.")
        check(len(pending) == 15 and all(p["reason"] == want for p in pending),
              f"hostports without nodeports: every host-port pod refused naming the field, "
              f"got {[(p['name'], p['reason']) for p in pending]}")
    report = simulated_report("hostports ignored", tmp, with_config(
        tmp, source, no_nodeports + "  unhandledPodFields:\n"
        "    ignore: [\"spec.containers[].ports[].hostPort\"]\n", "hostports-ignored.yaml"))
    if report is not None:
        check(report["summary"]["scheduled"] == 15,
              f"hostports ignored: the operator's opt-out schedules all 15 (ports unchecked), "
              f"got {report['summary']}")


def check_unhandled_fields(tmp):
    """A pod with a field no enabled plugin handles is refused naming it; the others run."""
    spread = os.path.join(tmp, "spread.yaml")
    body = ("nodes:\n  - {name: n, count: 2, allocatable: {cpu: 4, memory: 8Gi}}\n"
            "workload:\n"
            "  - {name: plain, requests: {cpu: 100m}}\n"
            "  - metadata: {name: spread, labels: {app: web}}\n"
            "    spec:\n"
            "      resourceClaims: [{name: gpu, resourceClaimName: gpu}]\n"
            "      containers: [{name: c, resources: {requests: {cpu: 100m}}}]\n"
            "  - metadata: {name: claim}\n"
            "    spec:\n"
            "      volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]\n"
            "      affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution:"
            " [{topologyKey: zone, labelSelector: {matchLabels: {app: db}}}]}}\n"
            "      containers: [{name: c}]\n")
    with open(spread, "w") as f:
        f.write(body)
    report = simulated_report("spread.yaml", tmp, spread)
    if report is not None:
        pods = {p["name"]: p for p in report["pods"]}
        check(pods["plain"]["node"] is not None, "spread.yaml: the plain pod is bound")
        # podtopologyspread is in the default profile: resource claims are no plugin's yet
        check(pods["spread"]["reason"] == "0/2 nodes are available: pod uses "
              "spec.resourceClaims, which no enabled plugin handles.",
              f"spread.yaml: the spread pod names its field, got {pods['spread']}")
        # volumebinding and interpodaffinity are in the default profile: the claim is missing
        check(pods["claim"]["reason"] == '0/2 nodes are available: persistentvolumeclaim '
              '"data" not found.' + NOT_HELPFUL.format(2), f"spread.yaml: the claim pod is volumebinding's, got "
              f"{pods['claim']}")
    for config, label in (("  unhandledPodFields: {refuse: false}\n", "check off"),
                          ("  unhandledPodFields:\n    ignore: [spec.resourceClaims,"
                           " spec.affinity.podAntiAffinity,"
                           " \"spec.volumes[].persistentVolumeClaim\"]\n",
                           "fields ignored")):
        path = os.path.join(tmp, "spread-off.yaml")
        with open(path, "w") as f:
            f.write(body + "config:\n" + config)
        report = simulated_report(f"spread.yaml, {label}", tmp, path)
        if report is not None:
            # the claim pod's missing PersistentVolumeClaim is volumebinding's to refuse
            check(report["summary"]["scheduled"] == 2 and report["summary"]["reasons"] ==
                  {'0/2 nodes are available: persistentvolumeclaim "data" not found.' +
                   NOT_HELPFUL.format(2): 1},
                  f"spread.yaml, {label}: all but the claim pod bound, got {report['summary']}")
    bad = os.path.join(tmp, "spread-bad.yaml")
    with open(bad, "w") as f:
        f.write(body + "config:\n  unhandledPodFields:\n    ignore: [spec.topologySpread]\n")
    run, _ = simulate(bad, tmp)
    check(run.returncode == 1 and "spread-bad.yaml:" in run.stderr and
          "'spec.topologySpread' is not a pod field kcycle checks" in run.stderr,
          f"spread-bad.yaml: a misspelt field is an error with its position, got {run.stderr!r}")


# kube-scheduler v1.37's taint reason names no taint: the maintenance node and the two GPU
# nodes count together.
GPU_REFUSED = ("0/6 nodes are available: 1 node(s) were unschedulable, "
               "2 node(s) didn't match Pod's node affinity/selector, "
               "3 node(s) had untolerated taint(s)." + NOT_HELPFUL.format(6))


def check_node_constraints(tmp):
    """examples/sim/node-constraints.yaml with the default profile: the tainted GPU pool takes
    only pods with its toleration and selector, the cordoned and draining nodes take nothing
    but the pod tolerating the cordon, and required and preferred affinity place as kube."""
    name = "node-constraints.yaml"
    run, report_path = simulate(os.path.join(SOURCE, "examples", "sim", name), tmp)
    check(run.returncode == 0, f"{name}: exit 0, stderr: {run.stderr}")
    if run.returncode != 0:
        return
    report = check_report(name, report_path)
    where = {p["name"]: p["node"] for p in report["pods"]}
    reason = {p["name"]: p["reason"] for p in report["pods"]}
    gpu = {"gpu-0", "gpu-1"}
    trains = [where[f"train-{i}"] for i in range(4)]
    check(all(n in gpu for n in trains), f"{name}: train pods on the GPU pool, got {trains}")
    check(sorted(trains) == ["gpu-0", "gpu-0", "gpu-1", "gpu-1"],
          f"{name}: train pods spread over the pool, got {trains}")
    on_gpu = sorted(p for p, n in where.items() if n in gpu)
    check(on_gpu == [f"train-{i}" for i in range(4)],
          f"{name}: nothing but train pods on the GPU pool, got {on_gpu}")
    for pod in ("no-toleration-0", "no-toleration-1"):
        check(where[pod] is None and reason[pod] == GPU_REFUSED,
              f"{name}: {pod} refused with kube's message, got {where[pod]} {reason[pod]!r}")
    check(all(where[f"web-{i}"] == "general-a" for i in range(6)),
          f"{name}: web pods avoid the untolerated PreferNoSchedule node, "
          f"got {[where[f'web-{i}'] for i in range(6)]}")
    check(where["batch-0"] == where["batch-1"] == "general-b",
          f"{name}: preferred zone b wins, got {where['batch-0']}, {where['batch-1']}")
    check(where["ssd"] == "general-a", f"{name}: required affinity -> general-a, got {where['ssd']}")
    check(where["pinned"] == "general-b", f"{name}: matchFields pin, got {where['pinned']}")
    check(where["node-agent"] == "cordoned",
          f"{name}: the cordon-tolerating pod reaches the cordoned node, got {where['node-agent']}")
    others = sorted(p for p, n in where.items() if n in ("cordoned", "draining"))
    check(others == ["node-agent"], f"{name}: cordoned/draining nodes take nothing else: {others}")
    # matchFields metadata.name restricts the attempt in PreFilter: the other nodes are left
    # out under kube's reason for them, whatever else they would fail
    expected = ("0/6 nodes are available: 1 node(s) were unschedulable, "
                "5 node(s) didn't satisfy plugin(s) [NodeAffinity]." + NOT_HELPFUL.format(6))
    check(where["pinned-cordoned"] is None and reason["pinned-cordoned"] == expected,
          f"{name}: pinned to the cordoned node, got {reason['pinned-cordoned']!r}")
    expected = "0/6 nodes are available: pod affinity terms conflict." + NOT_HELPFUL.format(6)
    check(where["conflict"] is None and reason["conflict"] == expected,
          f"{name}: a term pinning two names is refused in PreFilter, got {reason['conflict']!r}")
    expected = ("0/6 nodes are available: 6 node(s) didn't satisfy plugin(s) [NodeAffinity]." +
                NOT_HELPFUL.format(6))
    check(where["lost"] is None and reason["lost"] == expected,
          f"{name}: a pod pinned to a missing node is refused, got {reason['lost']!r}")


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


def zone_skews(report):
    """Per web pod placed, in scheduling order: the zones' counts' max - min after it."""
    counts, skews = {"zone-a": 0, "zone-b": 0, "zone-c": 0}, []
    for p in report["pods"]:
        if p["name"].startswith("web-") and p["node"] is not None:
            counts[p["node"].rsplit("-", 1)[0]] += 1
            skews.append(max(counts.values()) - min(counts.values()))
    return counts, skews


def check_topology_spread(tmp):
    """A 3,000-pod rollout over zones of 12, 8 and 4 nodes stays within maxSkew 1 after every
    placement; a ScheduleAnyway hostname spread puts 2 cache pods on each of the 24 nodes.
    Without podtopologyspread the same file skews (the scenario can fail)."""
    path = os.path.join(SOURCE, "examples", "sim", "topology-spread.yaml")
    report = simulated_report("topology-spread.yaml", tmp, path)
    if report is not None:
        counts, skews = zone_skews(report)
        check(counts == {"zone-a": 1000, "zone-b": 1000, "zone-c": 1000} and len(skews) == 3000
              and max(skews) <= 1, f"topology-spread.yaml: zones {counts}, worst skew "
              f"{max(skews, default=None)} over {len(skews)} placements")
        cache = {}
        for p in report["pods"]:
            if p["name"].startswith("cache-") and p["node"] is not None:
                cache[p["node"]] = cache.get(p["node"], 0) + 1
        check(len(cache) == 24 and set(cache.values()) == {2},
              f"topology-spread.yaml: 2 cache pods per node, got {sorted(cache.items())}")
        spread = {(c["topology_key"], c["when_unsatisfiable"]): c
                  for c in report.get("topology_spread", [])}
        zone = spread.get(("topology.kubernetes.io/zone", "DoNotSchedule"), {})
        host = spread.get(("kubernetes.io/hostname", "ScheduleAnyway"), {})
        check(zone.get("domains") == {"zone-a": 1000, "zone-b": 1000, "zone-c": 1000} and
              zone.get("skew") == 0 and host.get("skew") == 0 and
              len(host.get("domains", {})) == 24,
              f"topology-spread.yaml: the report's per-domain counts, got {spread}")
    off = with_config(tmp, path, "  plugins: [{name: prioritysort}, {name: noderesources},"
                      " {name: defaultbinder}]\n  unhandledPodFields: {refuse: false}\n",
                      "topology-spread-off.yaml")
    report = simulated_report("topology-spread.yaml without the plugin", tmp, off)
    if report is not None:
        counts, skews = zone_skews(report)
        check(max(skews) > 100, f"topology-spread.yaml without the plugin skews, got {counts}")


def check_topology_spread_removals(tmp):
    """The 3,000-pod, 3-zone maxSkew 1 rollout while nodes leave (nodeRemovals), replayed step
    by step from the report: every placement obeys kube's DoNotSchedule rule against the zones
    as they were (count + 1 - minimum <= 1), no placement ever grows the skew, a removal takes
    exactly the pods of its node, and the zones end within 1 of each other."""
    path = os.path.join(SOURCE, "examples", "sim", "topology-spread-removals.yaml")
    report = simulated_report("topology-spread-removals.yaml", tmp, path)
    if report is None:
        return
    zone = lambda node: node.rsplit("-", 1)[0]
    removals = {"zone-a-0": 1000, "zone-c-1": 2000}
    events = []
    for p in report["pods"]:
        check(p["node"] is not None and "bound_ms" in p,
              f"topology-spread-removals.yaml: every pod bound, got {p}")
        if p["node"] is None or "bound_ms" not in p:
            return
        events.append((p["bound_ms"], 1, p["bind_order"], "bind", p["node"]))
        if "removed_with_node_ms" in p:
            check(removals.get(p["node"]) == p["removed_with_node_ms"],
                  f"topology-spread-removals.yaml: {p['name']} deleted with {p['node']} at "
                  f"{removals.get(p['node'])} ms, got {p}")
    for node, at in removals.items():
        events.append((at, 0, 0, "remove", node))  # before the bindings of the same ms
    events.sort()
    counts, on_node, skew, steps, removed = {"zone-a": 0, "zone-b": 0, "zone-c": 0}, {}, 0, 0, 0
    for _, _, _, kind, node in events:
        if kind == "remove":
            gone = on_node.pop(node, 0)
            counts[zone(node)] -= gone
            removed += gone
            skew = max(counts.values()) - min(counts.values())
            continue
        before = counts[zone(node)] + 1 - min(counts.values())
        check(before <= 1, f"topology-spread-removals.yaml: placement {steps + 1} on {node} "
              f"at skew {before} over the minimum, zones {counts}")
        counts[zone(node)] += 1
        on_node[node] = on_node.get(node, 0) + 1
        steps += 1
        now = max(counts.values()) - min(counts.values())
        check(now <= max(skew, 1), f"topology-spread-removals.yaml: placement {steps} on {node} "
              f"grew the skew from {skew} to {now}, zones {counts}")
        skew = now
    gone_reported = sum(1 for p in report["pods"] if "removed_with_node_ms" in p)
    check(steps == 3000 and removed == gone_reported and removed > 100 and skew <= 1,
          f"topology-spread-removals.yaml: 3000 placements, {gone_reported} pods deleted with "
          f"their nodes, final zones within 1; got {steps}, {removed}, {counts}")
    spread = report.get("topology_spread", [{}])[0]
    check(spread.get("domains") == counts,
          f"topology-spread-removals.yaml: the report's per-domain counts are the live pods', "
          f"got {spread.get('domains')} for {counts}")


DEFAULT_SPREAD = """nodes:
  - {name: zone-a, count: 4, allocatable: {cpu: 8, memory: 32Gi},
     labels: {topology.kubernetes.io/zone: zone-a}}
  - {name: zone-b, count: 1, allocatable: {cpu: 8, memory: 32Gi},
     labels: {topology.kubernetes.io/zone: zone-b}}
objects:
  - {apiVersion: v1, kind: Service, metadata: {name: web, namespace: shop},
     spec: {selector: {app: web}}}
  - {apiVersion: apps/v1, kind: ReplicaSet, metadata: {name: api-1, namespace: shop},
     spec: {selector: {matchLabels: {app: api}}}}
workload:
  - metadata: {name: web, namespace: shop, labels: {app: web}}
    count: 10
    spec:
      containers: [{name: c, resources: {requests: {cpu: 100m, memory: 64Mi}}}]
  - metadata:
      name: api
      namespace: shop
      labels: {app: api}
      ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: api-1, uid: u1,
                         controller: true}]
    count: 10
    at: 1s
    spec:
      containers: [{name: c, resources: {requests: {cpu: 100m, memory: 64Mi}}}]
"""


def check_default_spread(tmp):
    """kube's System default constraints (hostname maxSkew 3, zone maxSkew 5, ScheduleAnyway)
    for pods without their own that a Service or their ReplicaSet selects: zone-b, one node
    against zone-a's four, gets more of each set than resource balance alone gives it (the
    same file without the Service and the ReplicaSet)."""
    def zone_b(report, prefix):
        return sum(1 for p in report["pods"]
                   if p["name"].startswith(prefix) and p["node"] == "zone-b-0")
    spread = simulated_text("default spread", tmp, DEFAULT_SPREAD)
    plain = simulated_text("default spread without selectors", tmp,
                           re.sub(r"(?ms)^objects:.*?(?=^workload:)", "", DEFAULT_SPREAD))
    if spread is None or plain is None:
        return
    for prefix in ("web-", "api-"):
        check(zone_b(spread, prefix) > zone_b(plain, prefix),
              f"default spread: more {prefix} pods in the single-node zone with the defaults, "
              f"got {zone_b(spread, prefix)} against {zone_b(plain, prefix)}")


ANTI_REASON = ("0/12 nodes are available: 12 node(s) didn't match pod anti-affinity rules." +
               NO_VICTIMS.format(12))


def check_pod_affinity(tmp):
    """One-per-node required anti-affinity fills exactly the 12 nodes and refuses the other 4
    with kube's reason; preferred affinity puts the web pods on the cache's node (least
    allocated scoring alone would keep them off it)."""
    path = os.path.join(SOURCE, "examples", "sim", "pod-affinity.yaml")
    report = simulated_report("pod-affinity.yaml", tmp, path)
    if report is None:
        return
    ingress = [p for p in report["pods"] if p["name"].startswith("ingress-")]
    bound = [p["node"] for p in ingress if p["node"] is not None]
    refused = [p["reason"] for p in ingress if p["node"] is None]
    check(len(bound) == 12 and len(set(bound)) == 12 and refused == [ANTI_REASON] * 4,
          f"pod-affinity.yaml: one ingress pod per node, 4 refused, got {bound} {refused}")
    node = {p["name"]: p["node"] for p in report["pods"]}
    web = [node[f"web-{i}"] for i in range(4)]
    check(node["cache"] is not None and web == [node["cache"]] * 4,
          f"pod-affinity.yaml: web next to its cache on {node['cache']}, got {web}")


HOSTPORT_HOLDER = """nodes:
  - {name: web, count: 1, allocatable: {cpu: 8, memory: 32Gi}}
pods:
  - name: low
    namespace: batch
    nodeName: web-0
    priority: 0
    requests: {cpu: 100m}
    ports: [{containerPort: 8080, hostPort: 8080}]
workload:
  - name: urgent
    namespace: apps
    count: 1
    priority: 1000
    requests: {cpu: 100m}
    ports: [{containerPort: 80, hostPort: 8080}]
"""

HOSTPORT_NOMINATED = """nodes:
  - {name: web, count: 1, allocatable: {cpu: 1, memory: 32Gi}}
pods:
  - {name: low, namespace: batch, nodeName: web-0, priority: 0, requests: {cpu: 1}}
workload:
  - name: urgent
    namespace: apps
    count: 1
    at: 1s
    priority: 1000
    requests: {cpu: 1}
    ports: [{containerPort: 80, hostPort: 8080}]
  - name: filler
    namespace: apps
    count: 1
    at: 1001ms
    priority: 0
    requests: {memory: 1Gi}
    ports: [{containerPort: 80, hostPort: 8080}]
"""


def check_preemption_host_ports(tmp):
    """A host-port conflict is one preemption can fix (kube's NodePorts RemovePod): the holder
    is evicted; and a nominated pod's host port is held for it (AddPod): a lower-priority pod
    asking for the same port does not take the room."""
    path = os.path.join(tmp, "hp-holder.yaml")
    with open(path, "w") as f:
        f.write(HOSTPORT_HOLDER)
    report = simulated_report("hostPort holder", tmp, path)
    if report is not None:
        evicted = [(e["name"], e["preemptor"]) for e in report["preemptions"]]
        pods = {p["name"]: p for p in report["pods"]}
        check(evicted == [("low", "urgent-0")],
              f"hostPort holder: low evicted for urgent-0, got {evicted}")
        check(pods["urgent-0"].get("node") == "web-0",
              f"hostPort holder: urgent-0 bound to web-0, got {pods['urgent-0']}")
    path = os.path.join(tmp, "hp-nominated.yaml")
    with open(path, "w") as f:
        f.write(HOSTPORT_NOMINATED)
    report = simulated_report("hostPort nominated", tmp, path)
    if report is not None:
        pods = {p["name"]: p for p in report["pods"]}
        evicted = [(e["name"], e["preemptor"]) for e in report["preemptions"]]
        check(evicted == [("low", "urgent-0")],
              f"hostPort nominated: low evicted for urgent-0, got {evicted}")
        check(pods["urgent-0"].get("node") == "web-0",
              f"hostPort nominated: urgent-0 bound to web-0, got {pods['urgent-0']}")
        check(pods["filler-0"].get("node") is None,
              f"hostPort nominated: filler-0 keeps off the port, got {pods['filler-0']}")


def simulated_text(label, tmp, text):
    """simulated_report of a simulation file given as text."""
    path = os.path.join(tmp, re.sub(r"[^a-z0-9]+", "-", label.lower()) + ".yaml")
    with open(path, "w") as f:
        f.write(text)
    return simulated_report(label, tmp, path)


ANTI_VICTIM = """nodes:
  - {name: node, count: 2, allocatable: {cpu: 4, memory: 16Gi}}
pods:
  - {name: low-0, namespace: apps, nodeName: node-0, priority: 0, labels: {app: batch},
     requests: {cpu: 100m}}
  - {name: low-1a, namespace: apps, nodeName: node-1, priority: 0, labels: {app: batch},
     requests: {cpu: 100m}}
  - {name: low-1b, namespace: apps, nodeName: node-1, priority: 0, labels: {app: batch},
     requests: {cpu: 100m}}
workload:
  - name: urgent
    namespace: apps
    priority: 1000
    labels: {app: urgent}
    requests: {cpu: 100m}
    affinity:
      podAntiAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          - topologyKey: kubernetes.io/hostname
            labelSelector: {matchLabels: {app: batch}}
"""

SPREAD_VICTIMS = """nodes:
  - {name: zone-a, count: 1, allocatable: {cpu: 4, memory: 16Gi},
     labels: {topology.kubernetes.io/zone: zone-a}}
  - {name: zone-b, count: 1, allocatable: {cpu: 1, memory: 16Gi},
     labels: {topology.kubernetes.io/zone: zone-b}}
pods:
  - {name: web-old-0, namespace: apps, nodeName: zone-a-0, priority: 0, labels: {app: web},
     requests: {cpu: 100m}}
  - {name: web-old-1, namespace: apps, nodeName: zone-a-0, priority: 0, labels: {app: web},
     requests: {cpu: 100m}}
  - {name: other, namespace: apps, nodeName: zone-a-0, priority: 0, labels: {app: other},
     requests: {cpu: 100m}}
  - {name: system, namespace: kube-system, nodeName: zone-b-0, priority: 2000,
     requests: {cpu: 1}}
workload:
  - metadata: {name: web-new, namespace: apps, labels: {app: web}}
    spec:
      priority: 1000
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: topology.kubernetes.io/zone
          whenUnsatisfiable: DoNotSchedule
          labelSelector: {matchLabels: {app: web}}
      containers: [{name: c, resources: {requests: {cpu: 100m}}}]
"""


def check_preemption_pod_constraints(tmp):
    """Preemption evaluates victims with interpodaffinity and podtopologyspread, as kube's
    SelectVictimsOnNode does: evicting the pod a required anti-affinity refuses makes room (on
    the node with the fewest such pods), and evicting matching pods brings a zone back within
    maxSkew (only those: the pod of another app on the node is spared)."""
    cases = [("anti-affinity victim", ANTI_VICTIM, "urgent", "node-0", ["low-0"]),
             ("spread victims", SPREAD_VICTIMS, "web-new", "zone-a-0",
              ["web-old-0", "web-old-1"])]
    for label, text, preemptor, node, victims in cases:
        report = simulated_text(label, tmp, text)
        if report is None:
            continue
        evicted = sorted((e["name"], e["node"], e["preemptor"]) for e in report["preemptions"])
        bound = {p["name"]: p for p in report["pods"]}[preemptor].get("node")
        check(evicted == [(v, node, preemptor) for v in victims] and bound == node,
              f"{label}: {victims} evicted from {node} and {preemptor} bound there, got "
              f"{evicted}, {preemptor} on {bound}")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        check_preemption_host_ports(tmp)
        check_preemption_pod_constraints(tmp)
        check_topology_spread_removals(tmp)
        check_default_spread(tmp)
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

        check_host_ports(tmp)
        check_unhandled_fields(tmp)
        check_node_constraints(tmp)
        check_topology_spread(tmp)
        check_pod_affinity(tmp)
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
    return 1 if FAILURES or PASSED[0] == 0 else 0  # a run that checked nothing fails


if __name__ == "__main__":
    sys.exit(main())
