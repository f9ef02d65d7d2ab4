#!/usr/bin/env python3
"""kcycle against the real kube-scheduler on one real API server, on generated scenarios.

Each scenario is a few nodes (labels, zones, taints, cordons, allocatable, pods already
running on them) and one pod (requests, nodeSelector, required node affinity, tolerations, a
host port, a priority that can preempt), built so that exactly one node is feasible, or none.
The pod is given to kube-scheduler (schedulerName default-scheduler), then, with the running
pods put back as they were, to kcycle (schedulerName kcycle, its default profile, through
kcycle-kube-bridge on the ServiceAccount of examples/deploy). Both must reach the same node or
the same PodScheduled=False message.

A difference in a scenario that uses a constraint kcycle's default profile has no plugin for
yet (see KINDS) is a known gap and listed as such; any other difference fails the test. The
summary table counts scenarios by constraint kind. kube-scheduler's outcome is also checked
against the one the generator built, so that a wrong generator cannot pass for agreement.

usage: test_differential.py --scheduler PATH --bridge PATH --source DIR [--scenarios N]
                            [--seed S]
Exits 77 (skipped) without the binaries of `./dev.sh kube`."""
import argparse
import collections
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cluster  # noqa: E402
import realapi  # noqa: E402

NS = "diff"
HIGH = "kcycle-diff-high"   # the PriorityClass of pods that may preempt

# constraint kind -> the kcycle plugins whose absence from the default profile makes a
# difference in a scenario of that kind a known gap (kube-scheduler's plugin in brackets)
KINDS = {
    "resources": [],                                    # NodeResourcesFit
    "selector": ["nodeaffinity"],                       # NodeAffinity (nodeSelector)
    "affinity": ["nodeaffinity"],                       # NodeAffinity (required terms)
    "taints": ["tainttoleration"],                      # TaintToleration
    "cordon": ["nodeunschedulable"],                    # NodeUnschedulable
    "hostports": ["nodeports"],                         # NodePorts
    "priority": ["defaultpreemption"],                  # DefaultPreemption (PostFilter)
}
# kube-scheduler appends what preemption found to every failure message; kcycle does that once
# it has a PostFilter preemption plugin
SUFFIX_PLUGINS = ["defaultpreemption"]


def pod(name, scheduler, cpu="100m", memory="64Mi", node=None, priority_class=None,
        host_port=None, node_selector=None, affinity=None, tolerations=None):
    container = {"name": "c", "image": "registry.k8s.io/pause:3.10",
                 "resources": {"requests": {"cpu": cpu, "memory": memory}}}
    if host_port:
        container["ports"] = [{"containerPort": host_port, "hostPort": host_port,
                               "protocol": "TCP"}]
    spec = {"schedulerName": scheduler, "containers": [container],
            # no kubelet confirms a deletion: victims and leftovers go at once
            "terminationGracePeriodSeconds": 0}
    if node:
        spec["nodeName"] = node
    if priority_class:
        spec["priorityClassName"] = priority_class
    if node_selector:
        spec["nodeSelector"] = node_selector
    if affinity:
        spec["affinity"] = affinity
    if tolerations:
        spec["tolerations"] = tolerations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
            "spec": spec}


def node(name, cpu="4", labels=None, taints=None, unschedulable=False):
    alloc = {"cpu": cpu, "memory": "16Gi", "pods": "110", "ephemeral-storage": "100Gi"}
    spec = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                  "kubernetes.io/os": "linux",
                                                  **(labels or {})}},
            "spec": spec,
            "status": {"allocatable": alloc, "capacity": dict(alloc),
                       "conditions": [{"type": "Ready", "status": "True",
                                       "reason": "KubeletReady", "message": "test node"}]}}


class Scenario:
    """Nodes, pods already running on them, and the pod under test (as a template)."""

    def __init__(self, index, rng):
        self.index = index
        self.name = f"s{index:03d}"
        self.kinds = sorted(rng.sample(sorted(KINDS), rng.choice([1, 1, 2, 2, 3])))
        count = rng.randint(2, 5)
        self.node_names = [f"{self.name}-n{i}" for i in range(count)]
        self.target = None if rng.random() < 0.25 else rng.choice(self.node_names)
        # every node but the target fails at least one chosen kind; more at random
        fails = {}
        for n in self.node_names:
            if n == self.target:
                fails[n] = set()
            else:
                first = rng.choice(self.kinds)
                fails[n] = {first} | {k for k in self.kinds if rng.random() < 0.3}
        self.fails = fails
        self.labels = {n: {} for n in self.node_names}
        self.taints = {n: [] for n in self.node_names}
        self.cordoned = set()
        self.cpu = {n: "4" for n in self.node_names}
        self.running = []      # pods already on nodes
        self.pod_args = {"cpu": "100m"}
        for kind in self.kinds:
            getattr(self, "make_" + kind)(rng)
        if "priority" in self.kinds:
            self.pod_args["cpu"] = "3"   # more than a node of make_priority's can give

    # each kind: the pod's side once, then every node made to pass or fail it

    def make_resources(self, rng):
        self.pod_args["cpu"] = "2"
        used = rng.random() < 0.5   # fail by allocatable, or by what already runs there
        for n in self.node_names:
            if n in self.fails and "resources" in self.fails[n]:
                if used:
                    self.running.append(pod(f"{n}-busy", "default-scheduler", cpu="3", node=n,
                                            priority_class=HIGH))
                else:
                    self.cpu[n] = rng.choice(["1", "1500m"])

    def make_selector(self, rng):
        value = rng.choice(["ssd", "nvme"])
        self.pod_args["node_selector"] = {"disk": value}
        for n in self.node_names:
            if "selector" in self.fails[n]:
                if rng.random() < 0.5:
                    self.labels[n]["disk"] = "hdd"
            else:
                self.labels[n]["disk"] = value

    def make_affinity(self, rng):
        zones = ["zone-a", "zone-b", "zone-c"]
        op = rng.choice(["In", "NotIn", "Exists"])
        key = "topology.kubernetes.io/zone"
        if op == "In":
            allowed = rng.sample(zones, 2)
            expr = {"key": key, "operator": "In", "values": allowed}
            good = lambda: rng.choice(allowed)
            bad = lambda: rng.choice([z for z in zones if z not in allowed] + [None])
        elif op == "NotIn":
            banned = rng.choice(zones)
            expr = {"key": key, "operator": "NotIn", "values": [banned]}
            good = lambda: rng.choice([z for z in zones if z != banned] + [None])
            bad = lambda: banned
        else:
            expr = {"key": key, "operator": "Exists"}
            good = lambda: rng.choice(zones)
            bad = lambda: None
        self.pod_args["affinity"] = {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [expr]}]}}}
        for n in self.node_names:
            zone = bad() if "affinity" in self.fails[n] else good()
            if zone:
                self.labels[n][key] = zone

    def make_taints(self, rng):
        tolerated = {"key": "gpu", "value": "true", "effect": "NoSchedule"}
        self.pod_args["tolerations"] = [{"key": "gpu", "operator": "Exists",
                                         "effect": "NoSchedule"}]
        for n in self.node_names:
            if "taints" in self.fails[n]:
                effect = rng.choice(["NoSchedule", "NoExecute"])
                self.taints[n].append({"key": "dedicated", "value": rng.choice(["infra", "db"]),
                                       "effect": effect})
            elif rng.random() < 0.5:
                self.taints[n].append(dict(tolerated))
            if rng.random() < 0.3:   # never blocks scheduling
                self.taints[n].append({"key": "soft", "value": "x",
                                       "effect": "PreferNoSchedule"})

    def make_cordon(self, rng):
        for n in self.node_names:
            if "cordon" in self.fails[n]:
                self.cordoned.add(n)

    def make_hostports(self, rng):
        port = rng.choice([8080, 9100, 30000])
        self.pod_args["host_port"] = port
        for n in self.node_names:
            if "hostports" in self.fails[n]:
                self.running.append(pod(f"{n}-port", "default-scheduler", node=n,
                                        host_port=port, priority_class=HIGH))
            elif rng.random() < 0.4:   # another port in use does not matter
                self.running.append(pod(f"{n}-other-port", "default-scheduler", node=n,
                                        host_port=port + 1, priority_class=HIGH))

    def make_priority(self, rng):
        """The pod needs 3 CPU. On failing nodes 3 CPU are held by pods it cannot or need not
        evict (its own priority, or a node too small); on the target a low-priority pod holds
        them: kube-scheduler preempts it and binds there. Every other running pod has the pod's
        own priority, so that this victim is the only one."""
        self.pod_args["cpu"] = "3"
        self.pod_args["priority_class"] = HIGH
        for n in self.node_names:
            if "priority" in self.fails[n]:
                if rng.random() < 0.5:
                    self.running.append(pod(f"{n}-peer", "default-scheduler", cpu="2", node=n,
                                            priority_class=HIGH))
                else:
                    self.cpu[n] = "2"
            elif n == self.target and rng.random() < 0.7:
                self.running.append(pod(f"{n}-victim", "default-scheduler", cpu="2", node=n))

    def nodes(self):
        return [node(n, cpu=self.cpu[n], labels=self.labels[n], taints=self.taints[n],
                     unschedulable=n in self.cordoned) for n in self.node_names]

    def pod(self, scheduler, attempt=0):
        suffix = "kube" if scheduler == "default-scheduler" else "kcycle"
        suffix += f"-{attempt}" if attempt else ""
        return pod(f"{self.name}-{suffix}", scheduler, **self.pod_args)

    def describe(self):
        parts = []
        for n in self.node_names:
            bits = [f"cpu={self.cpu[n]}"]
            bits += [f"{k}={v}" for k, v in self.labels[n].items()]
            bits += [f"taint {t['key']}={t['value']}:{t['effect']}" for t in self.taints[n]]
            if n in self.cordoned:
                bits.append("cordoned")
            bits += ["runs " + p["metadata"]["name"].split("-", 2)[-1]
                     for p in self.running if p["spec"]["nodeName"] == n]
            parts.append(f"{n}[{', '.join(bits)}]")
        return f"pod {json.dumps(self.pod_args, sort_keys=True)} on " + " ".join(parts)


def delete_all_pods(api):
    api.request("DELETE", f"/api/v1/namespaces/{NS}/pods?gracePeriodSeconds=0")
    wait("the scenario's pods deleted", lambda: not api.list_objects("pods", NS)["items"], 30)


def wait(what, predicate, timeout):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


def outcome(api, name, nodes, may_preempt, timeout):
    """("bound", node) or ("unschedulable", message) once settled: a bind, or a failure that
    counts this scenario's nodes (an older view of the cluster may count others) and, where
    preemption can still bind the pod after its first failure, the deadline."""
    deadline = time.monotonic() + timeout
    last = ("pending", "")
    while time.monotonic() < deadline:
        p = api.get_object("pods", name, namespace=NS) or {}
        if (p.get("spec") or {}).get("nodeName"):
            return ("bound", p["spec"]["nodeName"])
        for c in (p.get("status") or {}).get("conditions") or []:
            if c.get("type") == "PodScheduled" and c.get("status") == "False":
                last = ("unschedulable", c.get("message", ""))
                if not may_preempt and re.match(rf"0/{nodes} nodes are available", last[1]):
                    return last
        time.sleep(0.05)
    return last


def kcycle_profile(scheduler, workdir):
    """The plugins of kcycle's default profile, from a one-pod simulation."""
    sim = os.path.join(workdir, "profile.yaml")
    with open(sim, "w") as f:
        f.write("nodes:\n  - name: n\n    allocatable: {cpu: '1', memory: 1Gi, pods: '10'}\n"
                "pods:\n  - name: p\n    requests: {cpu: 100m}\n")
    report = os.path.join(workdir, "profile.json")
    subprocess.run([scheduler, "--simulate", sim, "--report", report, "--quiet"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    with open(report) as f:
        gens = json.load(f)["summary"]["plugin_generations"]
    return set(gens[-1]["plugin_versions"])


def start_kcycle(args, cp, workdir):
    sock = f"ipc://{workdir}/diff.sock"
    logs = {}
    procs = []
    for name, argv in (("bridge", [args.bridge, "--kubeconfig",
                                   cp.sa_kubeconfig(os.path.join(workdir, "sa.kubeconfig")),
                                   "--listen", sock, "--no-leader-elect", "--health-port", "0"]),
                       ("scheduler", [args.scheduler, "--bridge", sock, "--health-port", "0"])):
        logs[name] = open(os.path.join(workdir, f"kcycle-{name}.log"), "ab")
        procs.append(subprocess.Popen(argv, stdout=logs[name], stderr=logs[name],
                                      stdin=subprocess.DEVNULL))
    return procs


def run(args, cp, workdir):
    api = realapi.RealAPI.on(cp)
    api.ensure_namespace(cp.admin, NS)
    api.expect(201, cp.admin.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", {
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": HIGH}, "value": 1000}), "create the PriorityClass")
    profile = kcycle_profile(args.scheduler, workdir)
    missing = {k: [p for p in plugins if p not in profile] for k, plugins in KINDS.items()}
    suffix_gap = any(p not in profile for p in SUFFIX_PLUGINS)
    print(f"kcycle default profile: {', '.join(sorted(profile))}")
    cp.start_kube_scheduler()
    procs = start_kcycle(args, cp, workdir)
    rng = random.Random(args.seed)
    table = collections.defaultdict(collections.Counter)
    rows, unexplained, generator = [], [], []
    stale = collections.Counter()
    try:
        for i in range(args.scenarios):
            s = Scenario(i, rng)
            api.bulk(s.nodes(), workers=1)
            results = {}
            for scheduler in ("default-scheduler", "kcycle"):
                for p in procs:
                    if p.poll() is not None:
                        raise AssertionError(f"a kcycle process exited with {p.returncode}")
                for attempt in range(3):
                    if s.running:
                        api.bulk(s.running, workers=1)
                    test_pod = s.pod(scheduler, attempt)
                    api.bulk([test_pod], workers=1)
                    result = outcome(api, test_pod["metadata"]["name"], len(s.node_names),
                                     s.target is not None and "priority" in s.kinds, args.wait)
                    delete_all_pods(api)
                    # bound to a node of an earlier scenario: the scheduler had not yet seen
                    # that node deleted (both watch; neither is told when it has caught up)
                    if result[0] != "bound" or result[1] in s.node_names:
                        break
                    stale[scheduler] += 1
                results[scheduler] = result
            api.request("DELETE", "/api/v1/nodes")
            wait("the scenario's nodes deleted", lambda: not api.list_objects("nodes")["items"],
                 30)
            kube, kc = results["default-scheduler"], results["kcycle"]
            want = ("bound", s.target) if s.target else ("unschedulable", None)
            if kube[0] != want[0] or (s.target and kube[1] != s.target):
                generator.append((s, kube))
            gaps = sorted({p for k in s.kinds for p in missing[k]})
            if kc == kube:
                verdict = "agree"
            elif (kc[0] == kube[0] == "unschedulable" and suffix_gap and
                  kube[1].split(" preemption: ")[0].rstrip(".") + "." == kc[1]):
                verdict = "known"
                gaps = sorted(set(gaps) | set(SUFFIX_PLUGINS))
            elif gaps:
                verdict = "known"
            else:
                verdict = "differ"
                unexplained.append((s, kube, kc))
            for k in s.kinds:
                table[k][verdict] += 1
                table[k]["scenarios"] += 1
            table["(all)"][verdict] += 1
            table["(all)"]["scenarios"] += 1
            rows.append((s, kube, kc, verdict, gaps))
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
    report(rows, table, unexplained, generator)
    if stale:
        print(f"attempts run again after a bind to a node of an earlier scenario: {dict(stale)}")
    if generator:
        raise AssertionError(f"{len(generator)} scenarios where kube-scheduler did not reach "
                             "the outcome the generator built (the generator is wrong)")
    if unexplained:
        raise AssertionError(f"{len(unexplained)} differences no missing plugin explains")
    if table["resources"]["agree"] == 0:
        raise AssertionError("not one resources scenario agreed")


def short(result):
    return f"{result[0]} {result[1]}"


def report(rows, table, unexplained, generator):
    print(f"\n{'kind':<12}{'scenarios':>10}{'agree':>8}{'known gap':>11}{'differ':>8}")
    for kind in sorted(table, key=lambda k: (k == "(all)", k)):
        t = table[kind]
        print(f"{kind:<12}{t['scenarios']:>10}{t['agree']:>8}{t['known']:>11}{t['differ']:>8}")
    gaps = collections.Counter(g for _, _, _, v, gs in rows if v == "known" for g in gs)
    if gaps:
        print("known gaps (kcycle's default profile lacks the plugin): " +
              ", ".join(f"{g} in {n} scenarios" for g, n in sorted(gaps.items())))
    shown = collections.Counter()
    for s, kube, kc, verdict, gs in rows:
        if verdict == "agree":
            continue
        key = (verdict, tuple(s.kinds))
        shown[key] += 1
        if verdict == "known" and shown[key] > 2:
            continue   # two examples of each known gap are enough to read
        print(f"\n{verdict.upper()} {s.name} [{', '.join(s.kinds)}] (gap: "
              f"{', '.join(gs) or 'none'})\n  {s.describe()}\n  kube-scheduler: {short(kube)}"
              f"\n  kcycle:         {short(kc)}")
    for s, kube in generator:
        print(f"\nGENERATOR {s.name}: built for {s.target or 'no node'}, kube-scheduler: "
              f"{short(kube)}\n  {s.describe()}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--scheduler", required=True)
    parser.add_argument("--bridge", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--scenarios", type=int, default=200)
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--wait", type=float, default=6.0,
                        help="seconds a scheduler has to reach its outcome")
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(args.source, "tests", "fakeapi"))
    bindir, why = realapi.kube_bin()
    if bindir is None:
        print(f"SKIP: {why}")
        return 77
    workdir = tempfile.mkdtemp(prefix="kcycle-differential-")
    cp = cluster.ControlPlane(bindir, args.source, os.path.join(workdir, "cluster"))
    ok = False
    started = time.monotonic()
    try:
        cp.start()
        run(args, cp, workdir)
        ok = True
    except (AssertionError, cluster.ClusterError) as e:
        print(f"FAIL: {e}", file=sys.stderr)
    finally:
        cp.stop()
        if ok:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"logs kept in {workdir}", file=sys.stderr)
    print(f"differential: {args.scenarios} scenarios in {time.monotonic() - started:.0f}s, "
          + ("passed" if ok else "failed"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
