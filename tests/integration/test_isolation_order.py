#!/usr/bin/env python3
"""One result whatever the backend and whatever the order: every shipped plugin and two test
plugins, in process and in plugin hosts, under four orders of the configuration's plugin list,
give the same report (placements, reasons, scores, bind order, node totals; compared whole, less
wall-clock figures and the hosts' own counters) as the same order in process. Across orders the
placements may differ (kube's ties and reasons follow the configured order), so each order is
compared with itself in the two modes.

Usage: test_isolation_order.py SCHEDULER SOURCE TEST_PLUGINS [WORKLOAD [ORDERS]]: meson runs one
test per workload (mixed, small-spread, gangs, preemption or an examples/sim file's name) so each stays well under
its timeout, and a sanitized build runs the first ORDERS orders only (every run there starts
about fifteen instrumented hosts)."""
import json
import os
import random
import subprocess
import sys
import tempfile

SCHEDULER, SOURCE, TEST_PLUGINS = sys.argv[1], sys.argv[2], sys.argv[3]
WORKLOAD = sys.argv[4] if len(sys.argv) > 4 else None  # None: every workload
ORDERS = int(sys.argv[5]) if len(sys.argv) > 5 else 4
EXAMPLES = ("node-constraints", "hostports", "pod-affinity", "volumes")
FAILURES = []
PASSED = [0]

# kube-scheduler's default profile with its weights, and the plugins kcycle adds
PLUGINS = [("prioritysort", 1), ("nodeunschedulable", 1), ("nodename", 1),
           ("tainttoleration", 3), ("nodeaffinity", 2), ("nodeports", 1), ("noderesources", 1),
           ("volumerestrictions", 1), ("nodevolumelimits", 1), ("volumebinding", 1),
           ("podtopologyspread", 2), ("interpodaffinity", 2), ("defaultpreemption", 1),
           ("defaultbinder", 1), ("coscheduling", 1), ("gpushare", 1), ("numaalign", 1),
           ("recorderhost", 1), ("recorder2", 1)]
# what cannot run in a host: QueueSort, group_of, PostFilter without Filter, PreEnqueue
IN_PROCESS_ONLY = {"prioritysort", "coscheduling", "defaultpreemption", "recorder2"}
# the test plugins reject some nodes by name and score by name, so they disagree with the
# shipped ones about some nodes and move the choice
# recorderhost's score also follows the scheduler clock: a simulation's in process, and in a
# host too (the requests carry it), so the two modes agree
TEST_ARGS = {"recorderhost": '{"reject_name": "-1", "score_by_name": "yes", '
                             '"score_by_clock": "yes"}',
             "recorder2": '{"reject_name": "-2", "score_by_name": "yes"}'}


def check(condition, message):
    if condition:
        PASSED[0] += 1
        return
    FAILURES.append(message)
    print("FAIL: " + message)


def config(order, isolation):
    lines = ["plugins:"]
    for name, weight in order:
        mode = "inprocess" if name in IN_PROCESS_ONLY else isolation
        entry = f"  - {{name: {name}, weight: {weight}, isolation: {mode}"
        if name in TEST_ARGS:
            entry += f", path: {os.path.join(TEST_PLUGINS, name + '.so')}, args: {TEST_ARGS[name]}"
        lines.append(entry + "}")
    return "\n".join(lines) + "\n"


def mixed_workload(tmp):
    """Nodes several plugins reject at once (taints, labels, cordon, size, names the test
    plugins reject), pods that fit some of them, and pods that fit none."""
    path = os.path.join(tmp, "mixed.yaml")
    with open(path, "w") as f:
        f.write("""nodes:
  - name: big
    count: 3
    allocatable: {cpu: 16, memory: 64Gi, pods: 20}
    labels: {pool: big, topology.kubernetes.io/zone: a}
  - name: small
    count: 4
    allocatable: {cpu: 2, memory: 4Gi, pods: 20}
    labels: {pool: small, topology.kubernetes.io/zone: b}
  - name: tainted
    count: 3
    allocatable: {cpu: 8, memory: 32Gi, pods: 20}
    labels: {pool: big, topology.kubernetes.io/zone: b}
    taints: [{key: dedicated, value: infra, effect: NoSchedule}]
  - name: cordoned
    count: 2
    allocatable: {cpu: 64, memory: 256Gi}
    labels: {pool: big}
    unschedulable: true
workload:
  - name: web
    count: 30
    interval: 10ms
    labels: {app: web}
    requests: {cpu: 500m, memory: 1Gi}
  - name: wide
    count: 12
    at: 100ms
    interval: 10ms
    requests: {cpu: 3, memory: 6Gi}
    nodeSelector: {pool: big}
  - name: infra
    count: 6
    at: 200ms
    interval: 10ms
    requests: {cpu: 1, memory: 1Gi}
    tolerations: [{key: dedicated, operator: Equal, value: infra, effect: NoSchedule}]
    affinity:
      nodeAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 50
            preference:
              matchExpressions: [{key: pool, operator: In, values: [big]}]
  - name: huge
    count: 3
    at: 300ms
    requests: {cpu: 32, memory: 8Gi}
  - name: port
    count: 8
    at: 400ms
    interval: 10ms
    requests: {cpu: 100m}
    ports: [{containerPort: 80, hostPort: 8080}]
""")
    return path


def small_spread(tmp):
    """examples/sim/topology-spread.yaml at a tenth of the pods and with room for 12 pods a
    node, so zones fill up and spread, pod count and the test plugins reject together."""
    with open(os.path.join(SOURCE, "examples", "sim", "topology-spread.yaml")) as f:
        text = f.read()
    path = os.path.join(tmp, "spread.yaml")
    with open(path, "w") as f:
        f.write(text.replace("count: 3000", "count: 300").replace("pods: 400", "pods: 12"))
    return path


# Gangs in a plugin host: every Filter and Score plugin in one host, so a group cycle sends its
# members there in requests of up to 64 (plugin.proto's EvaluateGroup; the 80 members of "fits"
# take two), each member seeing the ones placed before it. Placements and reasons must be those of the group cycle in process, for a gang that
# fits, one that does not (rolled back whole, then retried until its timeout), a gang spread over
# zones on tainted nodes, and single pods between them.
GANG_PLUGINS = [("coscheduling", 1), ("nodeunschedulable", 1), ("tainttoleration", 3),
                ("nodeaffinity", 2), ("noderesources", 1), ("podtopologyspread", 2),
                ("defaultbinder", 1)]


def gang_config(isolation):
    lines = ["plugins:"]
    for name, weight in GANG_PLUGINS:
        entry = f"  - {{name: {name}, weight: {weight}"
        if name == "coscheduling":
            entry += ", args: {podGroupBackoffSeconds: 1}"
        elif isolation == "process" and name != "defaultbinder":
            entry += ", isolation: process, host: evaluate"
        elif isolation == "process":
            entry += ", isolation: process"
        lines.append(entry + "}")
    return "\n".join(lines) + "\n"


def gang_workload(tmp):
    path = os.path.join(tmp, "gangs.yaml")
    with open(path, "w") as f:
        f.write("""nodes:
  - {name: a, count: 6, allocatable: {cpu: 4, memory: 16Gi, pods: 30},
     labels: {topology.kubernetes.io/zone: a, pool: big}}
  - {name: b, count: 6, allocatable: {cpu: 4, memory: 16Gi, pods: 30},
     labels: {topology.kubernetes.io/zone: b}}
  - {name: t, count: 4, allocatable: {cpu: 8, memory: 16Gi, pods: 30},
     labels: {topology.kubernetes.io/zone: b},
     taints: [{key: dedicated, value: infra, effect: NoSchedule}]}
podGroups:
  - {name: spread, namespace: ml, minMember: 20, scheduleTimeoutSeconds: 30}
workload:
  - name: fits
    namespace: ml
    count: 80
    interval: 1ms
    gang: true
    requests: {cpu: 200m, memory: 128Mi}
    affinity:
      nodeAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 50
            preference:
              matchExpressions: [{key: pool, operator: In, values: [big]}]
  - name: toobig
    namespace: ml
    count: 40
    at: 100ms
    interval: 1ms
    gang: {minMember: 40, scheduleTimeoutSeconds: 20}
    requests: {cpu: 1, memory: 1Gi}
  - metadata: {name: spread, namespace: ml,
               labels: {app: spread, scheduling.x-k8s.io/pod-group: spread}}
    count: 20
    at: 200ms
    spec:
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: topology.kubernetes.io/zone
          whenUnsatisfiable: DoNotSchedule
          labelSelector: {matchLabels: {app: spread}}
      tolerations: [{key: dedicated, operator: Equal, value: infra, effect: NoSchedule}]
      containers: [{name: c, resources: {requests: {cpu: 100m, memory: 512Mi}}}]
  - name: single
    count: 10
    at: 300ms
    interval: 1ms
    requests: {cpu: 500m, memory: 512Mi}
""")
    return path


def check_gangs(tmp):
    sim = gang_workload(tmp)
    inproc = run(tmp, "gangs-inprocess", gang_config("inprocess"), sim)
    hosted = run(tmp, "gangs-process", gang_config("process"), sim)
    if inproc is None or hosted is None:
        return
    bound = [p for p in inproc["pods"] if p["node"]]
    check(any(p["name"].startswith("fits") for p in bound) and
          any(p["name"].startswith("spread") for p in bound),
          "gangs: the gangs that fit were bound in process")
    check(not any(p["name"].startswith("toobig") for p in bound),
          "gangs: the gang that does not fit holds nothing in process")
    hosts = {h["name"]: h for h in hosted["summary"]["plugin_hosts"]}
    # every member's evaluation came from its group's request: the evaluating host had single
    # evaluations for the 10 single pods only (each fits at its first attempt)
    evaluate = hosts.get("evaluate", {})
    check(evaluate.get("evaluate_group_requests", 0) > 0 and
          evaluate.get("evaluate_round_trips") == 10,
          f"gangs: members evaluated in group requests only, got {list(hosts.values())}")
    check(all(h["restarts"] == 0 and h["state"] == "up" for h in hosts.values()),
          f"gangs: every host healthy, got {list(hosts.values())}")
    difference = first_difference(normalized(inproc), normalized(hosted))
    check(difference is None,
          "gangs: the same report in process and in hosts; first difference (in process, "
          f"then hosts): {difference}")
    # at debug level the host does not pick (the decision log wants every node's scores): the
    # scheduler selects from each member's lists, its tie-breaks drawn as the host's were
    debug = run(tmp, "gangs-process-debug", gang_config("process"), sim, ("-v", "-v"))
    if debug is not None:
        hosts = {h["name"]: h for h in debug["summary"]["plugin_hosts"]}
        check(hosts.get("evaluate", {}).get("evaluate_group_requests", 0) > 0,
              f"gangs at debug level: members in group requests, got {list(hosts.values())}")
        difference = first_difference(normalized(inproc), normalized(debug))
        check(difference is None,
              "gangs at debug level: the same report in process and in hosts; first "
              f"difference (in process, then hosts): {difference}")


def preemption_workload(tmp):
    """A full cluster and pods of high priority arriving one at a time (defaultpreemption runs
    in process and asks every Filter plugin what-if, hosted ones too): the fewest victims of
    the lowest priority, a victim a PodDisruptionBudget protects spared, a victim whose going
    satisfies required anti-affinity, victims whose going satisfies a spread constraint, the
    room a preemptor is nominated for kept from a pod of lower priority (hosts' Filter counts
    nominated pods: Evaluate.nominated), a pod no preemption helps (its request is larger than
    any node) and pods with nothing to preempt, each with its reason."""
    path = os.path.join(tmp, "preemption.yaml")
    with open(path, "w") as f:
        f.write("""nodes:
  - {name: smalls, allocatable: {cpu: 4, memory: 16Gi, pods: 110}}
  - {name: bigs, allocatable: {cpu: 4, memory: 16Gi, pods: 110}}
  - {name: db, allocatable: {cpu: 4, memory: 16Gi, pods: 110}}
  - {name: system, allocatable: {cpu: 4, memory: 16Gi, pods: 110}}
  - {name: anti, allocatable: {cpu: 4, memory: 16Gi, pods: 110}}
  - {name: spare-1, allocatable: {cpu: 4, memory: 16Gi, pods: 110}}
  - {name: spare-2, allocatable: {cpu: 4, memory: 16Gi, pods: 110}}
  - {name: zone-x, allocatable: {cpu: 1, memory: 16Gi, pods: 110},
     labels: {topology.kubernetes.io/zone: x}}
  - {name: zone-y, allocatable: {cpu: 2, memory: 16Gi, pods: 110},
     labels: {topology.kubernetes.io/zone: y}}
pods:
  # four victims of priority 2: a 2-CPU pod would need two
  - {name: small-a, namespace: batch, nodeName: smalls, priority: 2, requests: {cpu: 1}}
  - {name: small-b, namespace: batch, nodeName: smalls, priority: 2, requests: {cpu: 1}}
  - {name: small-c, namespace: batch, nodeName: smalls, priority: 2, requests: {cpu: 1}}
  - {name: small-d, namespace: batch, nodeName: smalls, priority: 2, requests: {cpu: 1}}
  # one victim of priority 1 (big-b, of priority 5, is reprieved)
  - {name: big-a, namespace: batch, nodeName: bigs, priority: 1, requests: {cpu: 2}}
  - {name: big-b, namespace: batch, nodeName: bigs, priority: 5, requests: {cpu: 2}}
  # one victim of priority 0, but a budget that allows no disruption protects it
  - {name: db-0, namespace: batch, nodeName: db, priority: 0, labels: {app: db},
     requests: {cpu: 4}}
  - {name: system-0, namespace: kube-system, nodeName: system, priority: 2000,
     requests: {cpu: 4}}
  # room for one CPU, but the pod of app noisy repels lonely (required anti-affinity)
  - {name: noisy-0, namespace: batch, nodeName: anti, priority: 1, labels: {app: noisy},
     requests: {cpu: 1}}
  - {name: anchor-0, namespace: kube-system, nodeName: anti, priority: 2000,
     requests: {cpu: 2}}
  # the cheapest victims of all, on the nodes the test plugins reject by name (one in a
  # host, one in process): only their what-if verdicts keep the preemptors off them
  - {name: spare-1a, namespace: batch, nodeName: spare-1, priority: 0, requests: {cpu: 4}}
  - {name: spare-2a, namespace: batch, nodeName: spare-2, priority: 0, requests: {cpu: 4}}
  # zone x holds both pods of app spread: a third there breaks maxSkew 1 until both go
  - {name: spread-0, namespace: batch, nodeName: zone-x, priority: 3, labels: {app: spread},
     requests: {cpu: 500m}}
  - {name: spread-1, namespace: batch, nodeName: zone-x, priority: 3, labels: {app: spread},
     requests: {cpu: 500m}}
  - {name: filler-y, namespace: batch, nodeName: zone-y, priority: 100, requests: {cpu: 2}}
objects:
  - apiVersion: policy/v1
    kind: PodDisruptionBudget
    metadata: {name: db-pdb, namespace: batch}
    spec:
      minAvailable: 1
      selector: {matchLabels: {app: db}}
    status: {disruptionsAllowed: 0, currentHealthy: 1, desiredHealthy: 1, expectedPods: 1}
workload:
  - name: urgent
    namespace: apps
    at: 1s
    priority: 1000
    requests: {cpu: 2}
  - metadata: {name: lonely, namespace: batch, labels: {app: lonely}}
    at: 2s
    spec:
      priority: 1000
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - topologyKey: kubernetes.io/hostname
              labelSelector: {matchLabels: {app: noisy}}
      containers: [{name: c, resources: {requests: {cpu: 1}}}]
  - metadata: {name: spready, namespace: batch, labels: {app: spread}}
    at: 3s
    spec:
      priority: 1000
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: topology.kubernetes.io/zone
          whenUnsatisfiable: DoNotSchedule
          labelSelector: {matchLabels: {app: spread}}
      containers: [{name: c, resources: {requests: {cpu: 500m}}}]
  # of lower priority, while urgent waits out its backoff (1 s) nominated on bigs, whose
  # victim is gone: the room is kept for urgent, in the hosts' Filter too (Evaluate.nominated)
  - name: late
    namespace: apps
    at: 1500ms
    priority: 0
    requests: {cpu: 2}
  # larger than any node: no preemption helps
  - name: hopeless
    namespace: apps
    at: 4s
    priority: 1000
    requests: {cpu: 8}
  # priority 0: nothing to preempt
  - name: humble
    namespace: apps
    at: 5s
    priority: 0
    requests: {cpu: 2}
""")
    return path


# A group cycle's trial preemption that an on_event plugin in a host would see: pair-0's trial
# assumes it in zone a; podtopologyspread (whose pod index follows events) must not count it
# when pair-1 is judged, in a host as in process (no plugin hears of a trial), so pair-1 too
# preempts the cheapest victim in zone a (low-a0, not mid-b0 of priority 50).
TRIAL_PLUGINS = [("coscheduling", 1), ("noderesources", 1), ("podtopologyspread", 2),
                 ("defaultpreemption", 1), ("defaultbinder", 1)]


def trial_config(isolation):
    lines = ["plugins:"]
    for name, weight in TRIAL_PLUGINS:
        entry = f"  - {{name: {name}, weight: {weight}"
        if name == "coscheduling":
            entry += ", args: {podGroupBackoffSeconds: 0}"
        elif name in ("noderesources", "podtopologyspread"):
            entry += f", isolation: {isolation}"
        lines.append(entry + "}")
    return "\n".join(lines) + "\n"


def check_trial_events(tmp):
    path = os.path.join(tmp, "trial-events.yaml")
    with open(path, "w") as f:
        f.write("""nodes:
  - {name: a-0, allocatable: {cpu: 2, memory: 16Gi, pods: 110},
     labels: {topology.kubernetes.io/zone: a}}
  - {name: a-1, allocatable: {cpu: 2, memory: 16Gi, pods: 110},
     labels: {topology.kubernetes.io/zone: a}}
  - {name: b-0, allocatable: {cpu: 2, memory: 16Gi, pods: 110},
     labels: {topology.kubernetes.io/zone: b}}
pods:
  - {name: low-a0, namespace: batch, nodeName: a-0, priority: 0, requests: {cpu: 2}}
  - {name: low-a1, namespace: batch, nodeName: a-1, priority: 0, requests: {cpu: 2}}
  - {name: mid-b0, namespace: batch, nodeName: b-0, priority: 50, requests: {cpu: 2}}
podGroups:
  - {name: pair, namespace: ml, minMember: 2, scheduleTimeoutSeconds: 5}
workload:
  - metadata: {name: pair, namespace: ml,
               labels: {app: pair, scheduling.x-k8s.io/pod-group: pair}}
    count: 2
    at: 1s
    spec:
      priority: 100
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: topology.kubernetes.io/zone
          whenUnsatisfiable: DoNotSchedule
          labelSelector: {matchLabels: {app: pair}}
      containers: [{name: c, resources: {requests: {cpu: 2}}}]
""")
    inproc = run(tmp, "trial-events-inprocess", trial_config("inprocess"), path)
    hosted = run(tmp, "trial-events-process", trial_config("process"), path)
    if inproc is None or hosted is None:
        return
    victims = sorted(e["name"] for e in inproc["preemptions"])
    check("low-a0" in victims and "low-a1" in victims and
          inproc["summary"].get("group_cycles", 0) > 0,
          f"trial-events: the group's trial preempted in zone a twice in process, got {victims}")
    difference = first_difference(normalized(inproc), normalized(hosted))
    check(difference is None,
          "trial-events: the same report in process and in hosts; first difference (in process, "
          f"then hosts): {difference}")


# What the preemption workload must come to in every run (else comparing reports proves
# nothing): each preemptor's node and victims.
PREEMPTIONS = {"urgent": ("bigs", ["big-a"]), "lonely": ("anti", ["noisy-0"]),
               "spready": ("zone-x", ["spread-0", "spread-1"])}
UNHELPED = {"hopeless": "Preemption is not helpful for scheduling",
            "humble": "No preemption victims found for incoming pod",
            "late": "No preemption victims found for incoming pod"}


def check_preemptions(name, report):
    placed = {p["name"]: p["node"] for p in report["pods"]}
    reasons = {p["name"]: p["reason"] or "" for p in report["pods"]}
    victims = {}
    for e in report["preemptions"]:
        victims.setdefault(e["preemptor"], []).append(e["name"])
    for pod, (node, names) in PREEMPTIONS.items():
        check(placed.get(pod) == node and sorted(victims.get(pod, [])) == names,
              f"{name}: {pod} preempts {names} and lands on {node}, got node "
              f"{placed.get(pod)} and victims {victims.get(pod)}")
    for pod, reason in UNHELPED.items():
        check(placed.get(pod) is None and "preemption: " in reasons.get(pod, "") and
              reason in reasons.get(pod, ""),
              f"{name}: {pod} unschedulable with '{reason}', got {reasons.get(pod)!r}")


# wall-clock figures and the hosts' own counters differ between runs by nature
VOLATILE = {"bound_wall_ms", "wall_seconds", "pods_per_second", "wall_start_unix_ms",
            "active_wall_ms", "plugin_hosts"}


def normalized(value):
    if isinstance(value, dict):
        return {k: normalized(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [normalized(v) for v in value]
    return value


def run(tmp, name, text, sim, extra=()):
    cfg = os.path.join(tmp, name + ".config.yaml")
    report = os.path.join(tmp, name + ".report.json")
    with open(cfg, "w") as f:
        f.write(text)
    proc = subprocess.run([SCHEDULER, "--config", cfg, "--simulate", sim, "--report", report,
                           "--quiet", "--no-progress", *extra],
                          capture_output=True, text=True, timeout=300)
    check(proc.returncode == 0, f"{name}: exit 0 ({proc.stderr.strip()[-800:]})")
    if proc.returncode != 0 or not os.path.exists(report):
        return None
    with open(report) as f:
        return json.load(f)


def first_difference(a, b, where="report"):
    if type(a) is not type(b):
        return f"{where}: {a!r} != {b!r}"
    if isinstance(a, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{where}.{key}: only in one report"
            found = first_difference(a[key], b[key], f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{where}: {len(a)} entries != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            found = first_difference(x, y, f"{where}[{i}]")
            if found:
                return found
        return None
    return None if a == b else f"{where}: {a!r} != {b!r}"


def main():
    # prioritysort and coscheduling both sort the queue: half the orders have each
    orders = [[p for p in PLUGINS if p[0] != "coscheduling"]]
    for seed in (1, 2, 3):
        order = [p for p in PLUGINS if p[0] != ("coscheduling" if seed < 2 else "prioritysort")]
        random.Random(seed).shuffle(order)
        orders.append(order)
    # spread over the list, so fewer orders still have one with each queue sort
    orders = orders[::max(1, len(orders) // max(1, ORDERS))][:ORDERS]
    check(WORKLOAD in (None, "mixed", "small-spread", "gangs", "preemption") + EXAMPLES,
          f"a known workload, got {WORKLOAD}")
    with tempfile.TemporaryDirectory() as tmp:
        if WORKLOAD in (None, "gangs"):
            check_gangs(tmp)
        sims = []
        if WORKLOAD in (None, "mixed"):
            sims.append(mixed_workload(tmp))
        if WORKLOAD in (None, "small-spread"):
            sims.append(small_spread(tmp))
        if WORKLOAD in (None, "preemption"):
            check_trial_events(tmp)
            # and a group cycle's trial preemptions, which the hosts' replicas must follow
            sims += [preemption_workload(tmp),
                     os.path.join(SOURCE, "examples", "sim", "preemption-gang.yaml")]
        sims += [os.path.join(SOURCE, "examples", "sim", name + ".yaml")
                 for name in EXAMPLES if WORKLOAD in (None, name)]
        for sim in sims:
            base = os.path.splitext(os.path.basename(sim))[0]
            for k, order in enumerate(orders):
                name = f"{base}-order{k}"
                inproc = run(tmp, name + "-inprocess", config(order, "inprocess"), sim)
                hosted = run(tmp, name + "-process", config(order, "process"), sim)
                if inproc is None or hosted is None:
                    continue
                # the run did something worth comparing
                # (where the test plugins keep every pod off, as for preemption-gang's groups
                # under coscheduling, the group cycles that tried to place them)
                check(any(p["node"] for p in inproc["pods"]) or
                      inproc["summary"].get("group_cycles", 0) > 0,
                      f"{name}: some pod was bound, or a group cycle ran")
                hosts = hosted["summary"]["plugin_hosts"]
                hostable = [p for p, _ in order if p not in IN_PROCESS_ONLY]
                check(sorted(h["name"] for h in hosts) == sorted(hostable),
                      f"{name}: every plugin that can be hosted ran in a host, got "
                      f"{[h['name'] for h in hosts]}")
                check(all(h["restarts"] == 0 and h["state"] == "up" for h in hosts),
                      f"{name}: every host healthy, got {hosts}")
                if base == "preemption":
                    check_preemptions(name + "-inprocess", inproc)
                    check_preemptions(name + "-process", hosted)
                difference = first_difference(normalized(inproc), normalized(hosted))
                check(difference is None,
                      f"{name}: the same report in process and in hosts; first difference "
                      f"(in process, then hosts): {difference}")
    print(f"{PASSED[0]} checks passed, {len(FAILURES)} failed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
