#!/usr/bin/env python3
"""kcycle-scheduler and kcycle-kube-bridge against the fake API server over HTTPS.

Scenarios (one per meson test, so they run apart):
  basic   200 nodes, 2,000 kcycle pods (some that can never fit), 500 default-scheduler pods:
          every kcycle pod that fits gets exactly one Binding, the others PodScheduled=False
          with the kube-style message and a FailedScheduling event; no other pod is touched.
          Also two PodGroups (coscheduling): the whole one bound with its status written, the
          short one holding nothing; and an unreadable pod that is told why.
  faults  the same with watches cut every 2 s, events split across chunks, a compaction (410
          on watch resume), 409 and 503 on some bindings, the bridge killed and restarted once
          and then the scheduler: the same outcome, no second Binding of any pod, no pod lost.
  leader  two scheduler+bridge replicas with leader election: only the lease holder binds;
          after it is killed the other takes over within 20 s and finishes the workload.
  ports   the default profile: pods asking for host ports (containers and sidecars, TCP and
          UDP, 0.0.0.0 and one address) never share a node's port (the test's own checker),
          the ones left over get kube's message; a pod using a field no enabled plugin
          handles (resourceClaims) is refused with a reason naming it.
  constraints  node constraints with the default profile: labelled, tainted (NoSchedule,
          NoExecute, PreferNoSchedule) and cordoned nodes, pods with nodeSelector, required and
          preferred node affinity and tolerations; an independent checker written from
          Kubernetes' documented rules says where each pod may go and what a refused pod must
          be told (kube-scheduler's aggregated message), and every placement is checked; then
          a node is cordoned and another tainted while the scheduler runs, and new pods avoid
          them.
  volumes pods with claims under the default profile: an independent checker (kube's rules
          restated here) finds no kcycle pod on a node its volumes refuse, every claim update
          (PV claimRef, PVC selected-node) written before its pod's Binding, missing and
          unbound Immediate claims refused with kube's messages, one user per
          ReadWriteOncePod claim, CSI attach limits from CSINode kept.
  numa    NodeResourceTopology objects (as kcycle-topology-agent publishes them) for nodes of 2
          and 4 zones, Guaranteed pods scheduled with numaalign: every aligned pod's Binding
          carries kcycle.io/numa-zones naming zones that hold it, also after an agent report
          that arrives while pods are still being placed. With --agent, kcycle-topology-agent
          publishes two of the nodes' topologies itself (and republishes them during the run).
  gpu     GPU nodes registered the way HAMi's device plugin does (hami.io/node-nvidia-register
          in both its seven- and nine-field forms, the handshake, nvidia.com/gpu allocatable)
          and mixed GPU pods until the cards run out: on every bound pod HAMi's decision
          annotations and kcycle.io/gpu-assignment agree, name the node's cards, give what the
          pod asked for, and no card is ever over-committed, also after a scheduler restart
          rebuilt its ledger from those annotations; a node with a stale handshake gets nothing.
  bench   (tests/perf) bindings/s against the fake server: 500 nodes, 5,000 pods created
          while the scheduler runs; prints one JSON line.
  first-sync      5,000 nodes, an empty cluster and 50,000 running pods, the scheduler's hello
          sent before and after the bridge's lists finish: the scheduler is in sync within 1 s
          of whichever came last (no wait for the scheduler's next message).
  optional-lists  the CRDs not served (404): the sync is not held for them, one log line
          each; a CRD served but slow: the sync waits for it at most OPTIONAL_WAIT_MS (10 s).
  startup-bench   (tests/perf) a restart at scale: 5,000 nodes with 0, 50,000 and 150,000
          running pods and 5,000 kcycle pods pending: lists, first sync, first binding, peak RSS
          of bridge and scheduler, bindings/s; one JSON line per size.
  preemption  a full cluster and a pod of higher priority (default profile with
          defaultpreemption): exactly the victims kube's algorithm chooses are deleted, with a
          uid precondition, and nothing else; a PodDisruptionBudget sends the preemption to
          another node; the preemptor is nominated (status.nominatedNodeName) and ends bound
          there; a Preempted event per victim; a pod with preemptionPolicy Never preempts
          nothing and says so.
  metrics the scheduler's and the bridge's /metrics (--health-port), scraped during the run and
          after it, read by a strict reader of the Prometheus text format
          (prometheus_text.py): attempts, Bindings, pending pods, watch events and lists agree
          with what the API server recorded and with the scheduler's own stopping line.
  queues  CapacityQueue objects (capacityqueue): a queue borrows its idle sibling's share, the
          sibling's pods reclaim it (exactly the borrowed pods deleted, a Preempted event each),
          a queue's limit refuses a pod with a message naming it, and every queue's status
          (used, borrowed, pending, admitted) is written back through the bridge.

With --api real the same scenarios run against a throwaway real control plane
(tests/realkube: etcd, kube-apiserver with RBAC, the bridge on the ServiceAccount of
examples/deploy): what the fake records is read from the API server's audit log, the
compaction is etcd's (watch cache off, kube-apiserver restarted so every watch resumes into
410), and faults only the fake can inject (409/503 bindings, split chunks) are left out.
  rbac    (real only) the same manifests without the pods/binding rule: every Binding is
          refused with 403 and no pod is bound, so the scenarios above would fail.
Without the binaries of `./dev.sh kube` a real run exits 77 (skipped) and says why.

usage: test_bridge.py SCENARIO --scheduler PATH --bridge PATH --source DIR [--api fake|real]
"""
import argparse
import collections
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

ARGS = None
CHECKS = 0


def check(condition, message):
    global CHECKS
    if not condition:
        raise AssertionError(message)
    CHECKS += 1


class Process:
    """A kcycle process with its log in the work dir; stopped with SIGTERM (then SIGKILL)."""

    def __init__(self, name, argv, workdir):
        self.name = name
        self.log_path = os.path.join(workdir, name + ".log")
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=self.log,
                                     stdin=subprocess.DEVNULL)

    def alive(self):
        return self.proc.poll() is None

    def kill(self):
        if self.alive():
            self.proc.kill()
            self.proc.wait(10)

    def stop(self, timeout=15):
        timeout *= ARGS.time_scale  # memcheck's leak check at exit takes seconds of its own
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
                raise AssertionError(f"{self.name} did not stop within {timeout}s of SIGTERM")
        self.log.close()
        return self.proc.returncode

    def tail(self, lines=30):
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""


class Replica:
    """One scheduler and its bridge, as the two containers of the deployment's pod."""

    def __init__(self, api, workdir, identity, leader_elect, config=None):
        self.identity = identity
        self.config = config
        self.workdir = workdir
        self.socket = f"ipc://{workdir}/{identity}.sock"
        self.kubeconfig = api.kubeconfig(os.path.join(workdir, "kubeconfig"))
        self.leader_elect = leader_elect
        # the Lease the manifests' Role grants on a real server; any on the fake
        self.lease = ["--lease-namespace", getattr(api, "lease_namespace", "kube-system")] + \
            (["--lease-name", api.lease_name] if getattr(api, "real", False) else [])
        self.bridge = None
        self.scheduler = None

    def start_bridge(self):
        argv = [ARGS.bridge, "--kubeconfig", self.kubeconfig, "--listen", self.socket,
                "--identity", self.identity, *self.lease, "--health-port", "0", "-v"]
        if not self.leader_elect:
            argv.append("--no-leader-elect")
        self.bridge = Process(f"bridge-{self.identity}", argv, self.workdir)

    def start_scheduler(self):
        argv = [ARGS.scheduler, "--bridge", self.socket, "--health-port", "0", "-v"]
        if self.config:
            argv += ["--config", self.config]
        self.scheduler = Process(f"scheduler-{self.identity}", argv, self.workdir)

    def start(self):
        self.start_bridge()
        self.start_scheduler()

    def kill(self):
        for p in (self.scheduler, self.bridge):
            if p is not None:
                p.kill()

    def stop(self):
        codes = {}
        for p in (self.scheduler, self.bridge):
            if p is not None and p.alive():
                codes[p.name] = p.stop()
        return codes

    def logs(self):
        return "\n".join(f"--- {p.name} ---\n{p.tail()}" for p in (self.scheduler, self.bridge)
                         if p is not None)


def workload(fc, kcycle=2000, unfit=20, others=500, nodes=200, existing=100):
    """Nodes of 4 CPU / 16 GiB / 110 pods; kcycle pods of 100m / 200Mi (a few ask for 64
    CPU and can never fit); default-scheduler pods left pending for another scheduler; and
    pods already running on nodes (any scheduler) that the scheduler must account for."""
    items = [fc.node(f"node-{i:03d}") for i in range(nodes)]
    for i in range(existing):
        items.append(fc.pod(f"running-{i:03d}", namespace="apps", cpu="1", memory="1Gi",
                            node=f"node-{i % nodes:03d}"))
    for i in range(kcycle - unfit):
        items.append(fc.pod(f"k-{i:04d}", namespace=f"team-{i % 4}", scheduler="kcycle",
                            cpu="100m", memory="200Mi"))
    for i in range(unfit):
        items.append(fc.pod(f"huge-{i:02d}", namespace="team-0", scheduler="kcycle", cpu="64",
                            memory="1Gi"))
    for i in range(others):
        items.append(fc.pod(f"other-{i:03d}", namespace="apps", cpu="100m", memory="100Mi"))
    return items


def bulk_create(api, items, batch=500):
    for i in range(0, len(items), batch):
        api.bulk(items[i:i + batch])


def all_pods(api):
    pods, cont = [], None
    while True:
        query = {"limit": "1000"}
        if cont:
            query["continue"] = cont
        page = api.list_objects("pods", **query)
        pods += page["items"]
        cont = page["metadata"].get("continue")
        if not cont:
            return pods


def wait_until(what, predicate, timeout, replicas=()):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for r in replicas:
            for p in (r.scheduler, r.bridge):
                if p is not None and not p.alive() and not getattr(p, "expected_dead", False):
                    raise AssertionError(f"{p.name} exited with {p.proc.returncode} while "
                                         f"waiting for {what}\n{r.logs()}")
        value = predicate()
        if value:
            return value
        time.sleep(0.25)
    logs = "\n".join(r.logs() for r in replicas)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}\n{logs}")


def kcycle_bound(api, expected):
    pods = [p for p in all_pods(api) if p["spec"].get("schedulerName") == "kcycle" and
            p["metadata"]["namespace"] != "ml"]
    bound = [p for p in pods if p["spec"].get("nodeName")]
    return len(bound) >= expected


def quantity_milli(text):
    text = str(text)
    if text.endswith("m"):
        return int(text[:-1])
    return int(float(text) * 1000)


def check_outcome(api, kcycle=2000, unfit=20, others=500, nodes=200):
    """The acceptance: every fitting kcycle pod bound exactly once, the unfit ones with the
    condition and an event, nothing else touched, no node over its CPU."""
    stats = api.stats()
    pods = all_pods(api)
    by_key = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in pods}
    kc = [p for p in pods if p["spec"].get("schedulerName") == "kcycle" and
          not p["metadata"]["name"].startswith("bad-") and p["metadata"]["namespace"] != "ml"]
    check(len(kc) == kcycle, f"{len(kc)} kcycle pods exist, {kcycle} expected: none lost")
    fits = [p for p in kc if not p["metadata"]["name"].startswith("huge-")]
    huge = [p for p in kc if p["metadata"]["name"].startswith("huge-")]
    unbound = [p["metadata"]["name"] for p in fits if not p["spec"].get("nodeName")]
    check(not unbound, f"{len(unbound)} kcycle pods left unbound: {unbound[:5]}")
    check(all(not p["spec"].get("nodeName") for p in huge), "a pod asking 64 CPU was bound")

    accepted = collections.Counter((b["ns"], b["name"]) for b in stats["bindings"])
    dupes = [k for k, n in accepted.items() if n > 1]
    check(not dupes, f"pods bound more than once: {dupes[:5]}")
    accepted_here = [k for k in accepted if k[0] != "ml"]  # gangs are checked on their own
    check(len(accepted_here) == len(fits),
          f"{len(accepted_here)} pods got a Binding, {len(fits)} expected")
    for b in stats["bindings"]:
        pod = by_key.get((b["ns"], b["name"]))
        check(pod is not None and pod["spec"].get("schedulerName") == "kcycle",
              f"a Binding for {b['ns']}/{b['name']}, which is not a kcycle pod")
        check(pod["spec"].get("nodeName") == b["node"], f"{b['name']} bound to {b['node']} but "
              f"runs on {pod['spec'].get('nodeName')}")
        check(b["uid"] == pod["metadata"]["uid"], f"the Binding of {b['name']} has no uid "
              "precondition")
    bound_at = {(x["ns"], x["name"]): x["time"] for x in stats["bindings"]}
    already = [a for a in stats["binding_attempts"] if a["code"] == 409 and
               a["time"] > bound_at.get((a["ns"], a["name"]), float("inf"))]
    check(not already, f"{len(already)} Binding attempts for pods already bound (a duplicate "
          f"Binding), e.g. {already[:2]}")

    touched = set()
    for a in stats["binding_attempts"]:
        touched.add((a["ns"], a["name"]))
    for patch in stats["status_patches"]:
        touched.add((patch["ns"], patch["name"]))
    for ev in stats["events"]:
        reg = ev.get("regarding") or ev.get("involvedObject") or {}
        touched.add((reg.get("namespace"), reg.get("name")))
    foreign = [k for k in touched if k in by_key and
               by_key[k]["spec"].get("schedulerName") != "kcycle"]
    check(not [k for k in accepted if k[1].startswith("bad-")], "an unreadable pod was bound")
    check(not foreign, f"pods of another scheduler were touched: {foreign[:5]}")
    others_now = [p for p in pods if p["metadata"]["name"].startswith("other-")]
    check(len(others_now) == others and all(not p["spec"].get("nodeName") for p in others_now),
          "default-scheduler pods must stay pending and untouched")

    expected = (f"0/{nodes} nodes are available: {nodes} Insufficient cpu. preemption: "
                f"0/{nodes} nodes are available: {nodes} Preemption is not helpful for scheduling.")
    for p in huge:
        conds = [c for c in (p.get("status") or {}).get("conditions") or []
                 if c.get("type") == "PodScheduled"]
        check(len(conds) == 1, f"{p['metadata']['name']} has {len(conds)} PodScheduled "
              "conditions")
        c = conds[0]
        check(c.get("status") == "False" and c.get("reason") == "Unschedulable",
              f"{p['metadata']['name']}: condition {c}")
        check(c.get("message") == expected, f"{p['metadata']['name']}: message "
              f"{c.get('message')!r}, expected {expected!r}")
    failed = {(e["regarding"]["namespace"], e["regarding"]["name"]) for e in stats["events"]
              if e.get("reason") == "FailedScheduling" and e.get("regarding")}
    for p in huge:
        key = (p["metadata"]["namespace"], p["metadata"]["name"])
        check(key in failed, f"no FailedScheduling event for {key}")
    events = [e for e in stats["events"] if e.get("reason") == "FailedScheduling"]
    check(all(e.get("type") == "Warning" and e.get("reportingController") == "kcycle" and
              e.get("action") == "Scheduling" and e.get("note") == expected for e in events
              if e["regarding"]["name"].startswith("huge-")),
          "FailedScheduling events carry type Warning, reportingController kcycle and the "
          "message")

    used = collections.Counter()
    for p in pods:
        node = p["spec"].get("nodeName")
        if node:
            for c in p["spec"]["containers"]:
                used[node] += quantity_milli(((c.get("resources") or {}).get("requests") or {})
                                             .get("cpu", "0"))
    over = [n for n, m in used.items() if m > 4000]
    check(not over, f"nodes over their 4 CPU: {over[:5]}")
    return stats


def scheduled_events_done(api, expected):
    stats = api.stats()
    return sum(1 for e in stats["events"] if e.get("reason") == "Scheduled") >= expected


def unreadable_pod_reported(api):
    pod = api.get_object("pods", "bad-quantity", namespace="team-0")
    conds = [c for c in (pod.get("status") or {}).get("conditions") or []
             if c.get("type") == "PodScheduled"]
    return conds and conds[0].get("reason") == "SchedulerError" and conds[0]


GANG_CONFIG = """plugins:
  - name: coscheduling
  - name: noderesources
  - name: defaultpreemption
  - name: defaultbinder
"""


def gang_objects(fc):
    """Two PodGroups as scheduler-plugins users write them: one whose 3 members all exist, one
    that asks for 4 members and has 2 (it must bind nothing)."""
    def group(name, min_member):
        return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                "metadata": {"name": name, "namespace": "ml"},
                "spec": {"minMember": min_member, "scheduleTimeoutSeconds": 600}}

    def member(name, group_name):
        return fc.pod(name, namespace="ml", scheduler="kcycle", cpu="500m", memory="1Gi",
                      labels={"scheduling.x-k8s.io/pod-group": group_name})
    return ([group("whole", 3), group("short", 4)] +
            [member(f"whole-{i}", "whole") for i in range(3)] +
            [member(f"short-{i}", "short") for i in range(2)])


def gang_status(api, name):
    pg = api.get_object("podgroups", name, namespace="ml") or {}
    return pg.get("status") or {}


def scenario_basic(fc, api, workdir):
    # a pod the API server would refuse but a careless writer could store: kcycle must say so
    # on the pod instead of leaving it pending without a word
    bad = fc.pod("bad-quantity", namespace="team-0", scheduler="kcycle", cpu="lots")
    real = getattr(api, "real", False)  # a real server refuses the bad pod, as it should
    bulk_create(api, workload(fc) + ([] if real else [bad]) + gang_objects(fc))
    config = os.path.join(workdir, "config.yaml")
    with open(config, "w") as f:
        f.write(GANG_CONFIG)
    r = Replica(api, workdir, "replica-a", leader_elect=False, config=config)
    r.start()
    try:
        start = time.monotonic()
        wait_until("every fitting kcycle pod bound", lambda: kcycle_bound(api, 1980), 180, [r])
        took = time.monotonic() - start
        if not real:
            cond = wait_until("the unreadable pod's condition",
                              lambda: unreadable_pod_reported(api), 30, [r])
            check(cond["status"] == "False" and "kcycle cannot read this pod" in
                  cond["message"] and "lots" in cond["message"],
                  f"the unreadable pod's condition: {cond}")
        wait_until("the FailedScheduling events", lambda: sum(
            1 for e in api.stats()["events"] if e.get("reason") == "FailedScheduling") >= 20,
            60, [r])
        wait_until("the Scheduled events", lambda: scheduled_events_done(api, 1980), 60, [r])
        check_outcome(api)
        # gangs: the whole group bound and its PodGroup status written; the short one holds
        # nothing
        status = wait_until("the PodGroup status", lambda: gang_status(api, "whole").get(
            "scheduled") == 3 and gang_status(api, "whole"), 30, [r])
        check(status.get("phase") in ("Scheduled", "Running"), f"PodGroup whole: {status}")
        ml = {p["metadata"]["name"]: p for p in all_pods(api)
              if p["metadata"]["namespace"] == "ml"}
        check(all(ml[f"whole-{i}"]["spec"].get("nodeName") for i in range(3)),
              "every member of PodGroup whole is bound")
        check(not any(ml[f"short-{i}"]["spec"].get("nodeName") for i in range(2)),
              "a member of PodGroup short (2 of 4 members) was bound")
        short = gang_status(api, "short")
        check(short.get("scheduled", 0) == 0 and short.get("phase") in (None, "Pending"),
              f"PodGroup short: {short}")
        # SIGHUP reloads the configuration (never the default: the end of the process)
        r.scheduler.proc.send_signal(signal.SIGHUP)
        wait_until("the configuration reloaded", lambda: "reloaded: plugin generation" in open(
            r.scheduler.log_path, errors="replace").read(), 20, [r])
        bulk_create(api, [fc.pod("after-reload", namespace="team-1", scheduler="kcycle",
                                 cpu="100m", memory="100Mi")])
        wait_until("a pod bound after the reload", lambda: (api.get_object(
            "pods", "after-reload", namespace="team-1") or {}).get("spec", {}).get("nodeName"),
            30, [r])
        print(f"basic: 1,980 pods bound in {took:.1f}s (including the first lists)")
    finally:
        codes = r.stop()
    check(all(c == 0 for c in codes.values()), f"processes stopped with {codes}\n{r.logs()}")


def scenario_faults(fc, api, workdir):
    api.faults(watch_cut_after_s=2.0, split_chunks=True, bind_conflict_every=7,
               bind_unavailable_every=11)
    items = workload(fc)
    nodes = [i for i in items if i["kind"] == "Node"]
    pods = [i for i in items if i["kind"] == "Pod"]
    bulk_create(api, nodes + pods[:1200])
    r = Replica(api, workdir, "replica-a", leader_elect=False)
    r.start()
    try:
        wait_until("some pods bound", lambda: len(api.stats()["bindings"]) >= 300, 120, [r])
        # the history goes: every watch resumes into a 410 and relists
        api.compact()
        if getattr(api, "real", False):
            wait_until("the bridge to relist after 410", lambda: "(410); listing again" in open(
                r.bridge.log_path, errors="replace").read(), 90, [r])
        r.bridge.expected_dead = True
        r.bridge.kill()
        bulk_create(api, pods[1200:])  # arrives while the bridge is down
        time.sleep(1.0)
        r.start_bridge()
        # and the scheduler dies once while the bridge stays: its bindings still queued in the
        # bridge belong to an ended session and must not be carried out for the new one
        bound_before = len(api.stats()["bindings"])
        wait_until("more pods bound", lambda: len(api.stats()["bindings"]) >= bound_before + 200,
                   120, [r])
        r.scheduler.expected_dead = True
        r.scheduler.kill()
        r.start_scheduler()
        wait_until("every fitting kcycle pod bound", lambda: kcycle_bound(api, 1980), 240, [r])
        wait_until("the FailedScheduling events", lambda: sum(
            1 for e in api.stats()["events"] if e.get("reason") == "FailedScheduling") >= 20,
            60, [r])
        stats = check_outcome(api)
        codes = collections.Counter(a["code"] for a in stats["binding_attempts"])
        check(getattr(api, "real", False) or codes[409] > 0 and codes[503] > 0,
              f"the faults were injected: {dict(codes)}")
        cuts = "kube-apiserver restarted after an etcd compaction" if getattr(
            api, "real", False) else "watch cuts every 2 s"
        print(f"faults: binding answers {dict(codes)}; the bridge and the scheduler each "
              f"killed and restarted once; {cuts}")
    finally:
        codes = r.stop()
    check(all(c == 0 for c in codes.values()), f"processes stopped with {codes}\n{r.logs()}")


def kcycle_leases(api, stats):
    """The writes to the Lease the replicas elect with, in the order the server took them."""
    ns = getattr(api, "lease_namespace", "kube-system")
    name = getattr(api, "lease_name", None)
    return [w for w in stats["lease_writes"]
            if w["ns"] == ns and (name is None or w["name"] == name)]


def scenario_leader(fc, api, workdir):
    items = workload(fc, kcycle=1500, unfit=0, others=100)
    nodes = [i for i in items if i["kind"] == "Node"]
    pods = [i for i in items if i["kind"] == "Pod"]
    bulk_create(api, nodes)
    a = Replica(api, workdir, "replica-a", leader_elect=True)
    b = Replica(api, workdir, "replica-b", leader_elect=True)
    a.start()
    # deadlines (not limits) scale: under memcheck on a busy machine the first lease alone
    # can take more than 30 s
    scale = ARGS.time_scale
    try:
        wait_until("replica-a to hold the lease", lambda: any(
            w["holder"] == "replica-a" and w["code"] in (200, 201)
            for w in api.stats()["lease_writes"]), 30 * scale, [a])
    except AssertionError:
        a.kill()  # else its scheduler and bridge outlive the test
        raise
    b.start()
    try:
        # pods arrive in waves so that the workload spans the failover
        bulk_create(api, pods[:600])
        wait_until("replica-a to bind", lambda: len(api.stats()["bindings"]) >= 200, 120 * scale,
                   [a, b])
        for p in (a.scheduler, a.bridge):
            p.expected_dead = True
        a.kill()
        killed = time.monotonic()
        bulk_create(api, pods[600:])
        wait_until("every kcycle pod bound", lambda: kcycle_bound(api, 1500), 180 * scale, [b])
        stats = api.stats()
        by = collections.defaultdict(list)
        for x in stats["bindings"]:
            who = "replica-a" if "(replica-a)" in x["user_agent"] else \
                "replica-b" if "(replica-b)" in x["user_agent"] else x["user_agent"]
            by[who].append(x["time"])
        check(set(by) <= {"replica-a", "replica-b"}, f"bindings from {set(by)}")
        check(len(by["replica-a"]) >= 200 and len(by["replica-b"]) > 0,
              f"both replicas bound in turn: {[(k, len(v)) for k, v in by.items()]}")
        check(max(by["replica-a"]) < min(by["replica-b"]),
              "replica-b bound while replica-a still did: two leaders at once")
        attempts_b = [x["time"] for x in stats["binding_attempts"]
                      if "(replica-b)" in x["user_agent"]]
        check(min(attempts_b) > killed, "replica-b sent a Binding before replica-a was killed")
        takeover = min(by["replica-b"]) - killed
        # memcheck: replica-b's scheduler and bridge run many times slower (the 15 s lease
        # is not); not ARGS.time_scale, which a sanitized build also sets
        limit = 20.0 * (20 if os.environ.get("KCYCLE_TEST_WRAPPER") else 1)
        check(takeover < limit, f"replica-b took over {takeover:.1f}s after the kill "
              f"(limit {limit:g})")
        check_outcome(api, kcycle=1500, unfit=0, others=100)
        # only kcycle's Lease: a real kube-apiserver renews its own identity Leases
        # (kube-system/apiserver-...) every few seconds, and one of those can come last
        holders = [w for w in kcycle_leases(api, stats) if w["code"] in (200, 201)]
        check(holders and holders[-1]["holder"] == "replica-b", "replica-b holds the lease")
        print(f"leader: replica-a bound {len(by['replica-a'])}, replica-b took over "
              f"{takeover:.1f}s after the kill and bound {len(by['replica-b'])}")
    finally:
        a.kill()
        codes = b.stop()
    check(all(c == 0 for c in codes.values()), f"processes stopped with {codes}\n{b.logs()}")
    leases = [w for w in kcycle_leases(api, api.stats()) if w["holder"] == "" and
              w["code"] == 200]
    check(leases, "replica-b released the lease when it stopped")


# ---- constraints: an independent checker of kube-scheduler's node rules -------------------
# Written from the Kubernetes documentation (taints and tolerations, node affinity, cordon),
# not from kcycle's code: the default profile's Filter order is NodeUnschedulable, NodeName,
# TaintToleration, NodeAffinity, NodeResourcesFit, and a refused node counts once, under the
# first rule it breaks, in "0/N nodes are available: <count> <reason>, ..." (sorted).

CORDON_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


def toleration_tolerates(tol, taint):
    if tol.get("effect") and tol["effect"] != taint["effect"]:
        return False
    if tol.get("key") and tol["key"] != taint["key"]:
        return False
    if tol.get("operator") == "Exists":
        return True
    return tol.get("value", "") == taint.get("value", "")


def pod_tolerates(pod, taint):
    return any(toleration_tolerates(t, taint) for t in pod["spec"].get("tolerations") or [])


def requirement_holds(req, labels, name):
    value = name if req.get("_field") else labels.get(req["key"])
    op, values = req["operator"], req.get("values") or []
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    try:
        have, want = int(value), int(values[0])
    except (TypeError, ValueError):
        return False
    return have > want if op == "Gt" else have < want


def term_holds(term, labels, name):
    reqs = list(term.get("matchExpressions") or []) + \
        [dict(r, _field=True) for r in term.get("matchFields") or []]
    return bool(reqs) and all(requirement_holds(r, labels, name) for r in reqs)


def affinity_holds(pod, node):
    labels, name = node["metadata"].get("labels") or {}, node["metadata"]["name"]
    if any(labels.get(k) != v for k, v in (pod["spec"].get("nodeSelector") or {}).items()):
        return False
    required = (((pod["spec"].get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if required is None:
        return True
    return any(term_holds(t, labels, name) for t in required.get("nodeSelectorTerms") or [])


def refusal(pod, node):
    """The reason the first rule that refuses node gives, or None when the pod may go there."""
    if node["spec"].get("unschedulable") and not pod_tolerates(pod, CORDON_TAINT):
        return "node(s) were unschedulable"
    for taint in node["spec"].get("taints") or []:
        if taint["effect"] in ("NoSchedule", "NoExecute") and not pod_tolerates(pod, taint):
            return "node(s) had untolerated taint(s)"  # v1.37 names no taint
    if not affinity_holds(pod, node):
        return "node(s) didn't match Pod's node affinity/selector"
    return None


def pinned_names(pod):
    """NodeAffinity's PreFilter: the node names the required terms pin with matchFields
    metadata.name In (per term the intersection, over terms the union), or None when a term
    pins none. kube-scheduler filters only those nodes and counts the others under
    "node(s) didn't satisfy plugin(s) [NodeAffinity]"."""
    required = (((pod["spec"].get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if not required or not required.get("nodeSelectorTerms"):
        return None
    union = set()
    for term in required["nodeSelectorTerms"]:
        sets = [set(r.get("values") or []) for r in term.get("matchFields") or []
                if r["key"] == "metadata.name" and r["operator"] == "In"]
        if not sets:
            return None
        union |= set.intersection(*sets)
    return union


def expected_message(pod, nodes):
    names = pinned_names(pod)
    reasons = collections.Counter(
        "node(s) didn't satisfy plugin(s) [NodeAffinity]"
        if names is not None and n["metadata"]["name"] not in names else refusal(pod, n)
        for n in nodes)
    parts = sorted(f"{count} {reason}" for reason, count in reasons.items())
    return f"0/{len(nodes)} nodes are available: {', '.join(parts)}."


def constraint_nodes(fc):
    nodes = []
    for i in range(4):
        nodes.append(fc.node(f"gpu-{i}", cpu="32", labels={"pool": "gpu", "cores": "32"},
                             taints=[{"key": "nvidia.com/gpu", "value": "present",
                                      "effect": "NoSchedule"}]))
    for zone, extra in (("a", {"disk": "ssd"}), ("b", {})):
        for i in range(6):
            nodes.append(fc.node(f"zone-{zone}-{i}", labels={"pool": "general", "zone": zone,
                                                              "cores": "8", **extra}))
    for i in range(4):
        nodes.append(fc.node(f"spot-{i}", labels={"pool": "general", "zone": "b", "cores": "8"},
                             taints=[{"key": "spot", "value": "true",
                                      "effect": "PreferNoSchedule"}]))
    for i in range(2):
        cordoned = fc.node(f"cordoned-{i}", labels={"pool": "general", "zone": "a"})
        cordoned["spec"]["unschedulable"] = True
        nodes.append(cordoned)
        nodes.append(fc.node(f"draining-{i}", labels={"pool": "general", "zone": "a"},
                             taints=[{"key": "maintenance", "effect": "NoExecute"}]))
    return nodes


def required(*terms):
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": list(terms)}}}


def expr(key, op, *values):
    return {"key": key, "operator": op, **({"values": list(values)} if values else {})}


GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}

# name: (spec fields, the node-name prefix the pod must land on, or None: anywhere allowed)
CONSTRAINT_TEMPLATES = {
    "plain": ({}, None),
    "gpu": ({"nodeSelector": {"pool": "gpu"}, "tolerations": [GPU_TOLERATION]}, "gpu-"),
    "gpu-untolerated": ({"nodeSelector": {"pool": "gpu"}}, None),
    "zone-b": ({"affinity": required({"matchExpressions": [expr("zone", "In", "b")]})}, None),
    "not-zone-a": ({"affinity": required({"matchExpressions": [expr("zone", "NotIn", "a")]})},
                   None),
    "big-cores": ({"affinity": required({"matchExpressions": [expr("cores", "Gt", "16")]}),
                   "tolerations": [GPU_TOLERATION]}, "gpu-"),
    "small-cores": ({"affinity": required({"matchExpressions": [expr("cores", "Lt", "16")]})},
                    None),
    "ssd": ({"affinity": required({"matchExpressions": [expr("disk", "Exists")]})}, "zone-a-"),
    "no-disk-zone-a": ({"affinity": required({"matchExpressions": [
        expr("disk", "DoesNotExist"), expr("zone", "In", "a")]})}, None),
    "by-name": ({"affinity": required({"matchFields": [
        expr("metadata.name", "In", "zone-b-3")]})}, "zone-b-3"),
    "tolerate-all": ({"tolerations": [{"operator": "Exists"}]}, None),
    "prefer-zone-b": ({"affinity": {"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "preference": {"matchExpressions": [expr("zone", "In", "b")]}}]}}},
        "zone-b-"),
    "daemon-on-cordoned": ({"tolerations": [{"key": "node.kubernetes.io/unschedulable",
                                             "operator": "Exists", "effect": "NoSchedule"}],
                            "affinity": required({"matchFields": [
                                expr("metadata.name", "In", "cordoned-1")]})}, "cordoned-1"),
    "pinned-cordoned": ({"affinity": required({"matchFields": [
        expr("metadata.name", "In", "cordoned-0")]})}, None),
    "drain-tolerant": ({"tolerations": [{"key": "maintenance", "operator": "Exists",
                                         "effect": "NoExecute"}],
                        "affinity": required({"matchFields": [
                            expr("metadata.name", "In", "draining-0")]})}, "draining-0"),
    "drain-wrong-effect": ({"tolerations": [{"key": "maintenance", "operator": "Exists",
                                             "effect": "NoSchedule"}],
                            "affinity": required({"matchExpressions": [
                                expr("zone", "In", "a"), expr("disk", "DoesNotExist")]})}, None),
    "ored-terms": ({"affinity": required(
        {"matchExpressions": [expr("zone", "In", "a"), expr("disk", "Exists")]},
        {"matchExpressions": [expr("pool", "In", "gpu")]})}, "zone-a-"),
}


def constraint_pods(fc, per_template=6):
    pods = []
    for name, (spec, _) in CONSTRAINT_TEMPLATES.items():
        for i in range(per_template):
            pods.append(fc.pod(f"{name}-{i}", namespace="constraints", scheduler="kcycle",
                               cpu="100m", memory="100Mi", **spec))
    return pods


def pod_condition(pod):
    conds = [c for c in (pod.get("status") or {}).get("conditions") or []
             if c.get("type") == "PodScheduled"]
    return conds[0] if conds else None


def constraints_settled(api, total):
    """Every pod bound or told why not: what happens next is for the checker to judge."""
    pods = [p for p in all_pods(api) if p["metadata"]["namespace"] == "constraints"]
    return sum(1 for p in pods if p["spec"].get("nodeName") or pod_condition(p)) >= total


def message_matches(message, expected):
    """kube-scheduler's FitError, possibly followed by its PostFilter's preemption part."""
    return message == expected or (message or "").startswith(expected + " preemption: ")


def check_constraints(api, nodes):
    pods = [p for p in all_pods(api) if p["metadata"]["namespace"] == "constraints"]
    check(len(pods) == 6 * len(CONSTRAINT_TEMPLATES), f"{len(pods)} constraint pods exist")
    by_node = {n["metadata"]["name"]: n for n in nodes}
    events = {(e["regarding"]["namespace"], e["regarding"]["name"]): e.get("note")
              for e in api.stats()["events"]
              if e.get("reason") == "FailedScheduling" and e.get("regarding")}
    for pod in pods:
        name = pod["metadata"]["name"]
        template = name.rsplit("-", 1)[0]
        allowed = [n for n in nodes if refusal(pod, n) is None]
        where = pod["spec"].get("nodeName")
        if where:
            reason = refusal(pod, by_node[where])
            check(reason is None, f"{name} bound to {where}, which kube refuses: {reason}")
            prefix = CONSTRAINT_TEMPLATES[template][1]
            check(prefix is None or where.startswith(prefix),
                  f"{name} bound to {where}, expected a node {prefix}*")
            continue
        check(not allowed, f"{name} left unbound though {len(allowed)} nodes allow it, e.g. "
              f"{[n['metadata']['name'] for n in allowed[:3]]}")
        expected = expected_message(pod, nodes)
        cond = pod_condition(pod)
        check(cond and cond.get("reason") == "Unschedulable" and
              message_matches(cond.get("message"), expected),
              f"{name}: condition {cond}, expected message {expected!r}")
        note = events.get(("constraints", name))
        check(message_matches(note, expected), f"{name}: FailedScheduling event {note!r}")
    refused = sorted({p["metadata"]["name"].rsplit("-", 1)[0] for p in pods
                      if not p["spec"].get("nodeName")})
    check(refused == ["drain-wrong-effect", "gpu-untolerated", "no-disk-zone-a",
                      "pinned-cordoned"],
          f"exactly the impossible templates are refused, got {refused}")
    return len(pods) - 6 * len(refused)


def change_nodes(fc, api):
    """kubectl cordon zone-a-0; kubectl taint node zone-b-0 late=x:NoSchedule. Returns the
    nodes as they are now."""
    for name, change in (("zone-a-0", lambda n: n["spec"].update(unschedulable=True)),
                         ("zone-b-0", lambda n: n["spec"].setdefault("taints", []).append(
                             {"key": "late", "value": "x", "effect": "NoSchedule"}))):
        node = api.get_object("nodes", name, namespace=None)
        change(node)
        api.expect(200, api.put(fc.resource_path("nodes", None, name), node), f"update {name}")
    return api.list_objects("nodes")["items"]


def check_after_node_changes(fc, api, replica):
    """Nodes cordoned and tainted while the scheduler runs take no new pod."""
    nodes = change_nodes(fc, api)
    late = [fc.pod(f"late-{i}", namespace="constraints-late", scheduler="kcycle", cpu="100m",
                   memory="100Mi") for i in range(12)]
    bulk_create(api, late)
    pods = wait_until("the late pods bound", lambda: [
        p for p in all_pods(api) if p["metadata"]["namespace"] == "constraints-late" and
        p["spec"].get("nodeName")] if sum(
            1 for p in all_pods(api) if p["metadata"]["namespace"] == "constraints-late" and
            p["spec"].get("nodeName")) == len(late) else None, 60, [replica])
    by_node = {n["metadata"]["name"]: n for n in nodes}
    for pod in pods:
        where = pod["spec"]["nodeName"]
        reason = refusal(pod, by_node[where])
        check(reason is None, f"{pod['metadata']['name']} bound to {where} after the change, "
              f"which kube refuses: {reason}")
        check(where not in ("zone-a-0", "zone-b-0"), f"{pod['metadata']['name']} on {where}")
    return len(pods)


def scenario_constraints(fc, api, workdir):
    nodes = constraint_nodes(fc)
    pods = constraint_pods(fc)
    bulk_create(api, nodes + pods)
    r = Replica(api, workdir, "replica-a", leader_elect=False)  # the default profile
    r.start()
    try:
        wait_until("every constraint pod bound or told why",
                   lambda: constraints_settled(api, len(pods)), 120, [r])
        told = [p for p in all_pods(api) if p["metadata"]["namespace"] == "constraints" and
                not p["spec"].get("nodeName")]
        wait_until("the FailedScheduling events", lambda: sum(
            1 for e in api.stats()["events"] if e.get("reason") == "FailedScheduling") >=
            len(told), 60, [r])
        bound = check_constraints(api, nodes)
        late = check_after_node_changes(fc, api, r)
        print(f"constraints: {late} later pods kept off a node cordoned and a node tainted "
              "while the scheduler ran")
        print(f"constraints: {bound} pods placed where kube's rules allow, {len(told)} "
              f"refused with kube's message, on {len(nodes)} nodes")
    finally:
        codes = r.stop()
    check(all(c == 0 for c in codes.values()), f"processes stopped with {codes}\n{r.logs()}")


# GPU sharing (gpushare) -----------------------------------------------------------------------

GPU_CONFIG = """plugins:
  - name: prioritysort
  - name: noderesources
    args:
      ignoredResources: [nvidia.com/gpumem, nvidia.com/gpumem-percentage, nvidia.com/gpucores]
  - name: gpushare
    weight: 100
  - name: defaultbinder
"""
GPU_CARD_MIB, GPU_SPLIT, GPU_CARDS = 81920, 10, 8


def hami_node(fc, index, legacy, handshake):
    """A node as HAMi's device plugin leaves it: cards in the registration annotation (two NUMA
    zones), the handshake, and the vGPU count as allocatable."""
    devices = []
    for card in range(GPU_CARDS):
        fields = [f"GPU-{index:02d}{card:02d}5c87-89ac-b1a6-7b53aa24b0ec", str(GPU_SPLIT),
                  str(GPU_CARD_MIB), "100", "NVIDIA-A100-SXM4-80GB", str(card // 4), "true"]
        if not legacy:
            fields += [str(card), "hami-core"]
        devices.append(",".join(fields) + ":")
    node = fc.node(f"gpu-{index:02d}", cpu="96", memory="1Ti",
                   extra={"nvidia.com/gpu": str(GPU_CARDS * GPU_SPLIT)})
    node["metadata"]["annotations"] = {"hami.io/node-nvidia-register": "".join(devices),
                                       "hami.io/node-handshake-nvidia": handshake}
    return node


def gpu_pod(fc, name, limits):
    pod = fc.pod(name, namespace="gpu", scheduler="kcycle", cpu="1", memory="1Gi")
    resources = pod["spec"]["containers"][0]["resources"]
    resources["limits"] = {k: str(v) for k, v in limits.items()}
    resources["requests"].update(resources["limits"])
    return pod


def gpu_pods(fc, prefix, count):
    """Whole cards, halves, quarters and small slices, in a fixed mixed order."""
    shapes = [{"nvidia.com/gpu": 1},
              {"nvidia.com/gpu": 1, "nvidia.com/gpumem-percentage": 50, "nvidia.com/gpucores": 50},
              {"nvidia.com/gpu": 1, "nvidia.com/gpumem-percentage": 25, "nvidia.com/gpucores": 25},
              {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 4096, "nvidia.com/gpucores": 5},
              {"nvidia.com/gpu": 2, "nvidia.com/gpumem": 20000, "nvidia.com/gpucores": 20}]
    return [gpu_pod(fc, f"{prefix}-{i:03d}", shapes[(i * 7) % len(shapes)]) for i in range(count)]


def expected_cards(pod):
    """(cards, MiB per card, cores per card) the pod asked for, with HAMi's defaults."""
    limits = pod["spec"]["containers"][0]["resources"]["limits"]
    cards = int(limits.get("nvidia.com/gpu", 1))
    if "nvidia.com/gpumem" in limits:
        mib = int(limits["nvidia.com/gpumem"])
    else:
        mib = GPU_CARD_MIB * int(limits.get("nvidia.com/gpumem-percentage", 100)) // 100
    whole = "nvidia.com/gpumem" not in limits and "nvidia.com/gpumem-percentage" not in limits
    return cards, mib, int(limits.get("nvidia.com/gpucores", 100 if whole else 0))


def gpu_settled(api, names):
    """Every pod bound, or told PodScheduled=False; returns the pods then."""
    pods = {p["metadata"]["name"]: p for p in all_pods(api)
            if p["metadata"]["namespace"] == "gpu"}
    for name in names:
        p = pods.get(name)
        if p is None:
            return None
        conds = [c for c in (p.get("status") or {}).get("conditions") or []
                 if c.get("type") == "PodScheduled" and c.get("status") == "False"]
        if not p["spec"].get("nodeName") and not conds:
            return None
    return pods


def check_gpu_decisions(pods, registered, stale_node):
    """The decision annotations of every bound pod against each other, the node's cards and
    the request; the sum over each card within its memory, cores and sharing count."""
    use = collections.defaultdict(lambda: [0, 0, 0, False])  # MiB, cores, users, exclusive
    bound = 0
    for name, p in sorted(pods.items()):
        node = p["spec"].get("nodeName")
        if not node:
            continue
        bound += 1
        check(node != stale_node, f"{name} bound to {node}, whose handshake is stale")
        ann = p["metadata"].get("annotations") or {}
        hami = ann.get("hami.io/vgpu-devices-to-allocate", "")
        check(hami and ann.get("hami.io/vgpu-devices-allocated") == hami,
              f"{name}: HAMi's to-allocate and allocated agree: {ann}")
        check(ann.get("hami.io/vgpu-node") == node and ann.get("hami.io/bind-phase") ==
              "allocating" and ann.get("hami.io/vgpu-time", "").isdigit(),
              f"{name}: vgpu-node, bind-phase, vgpu-time: {ann}")
        own = json.loads(ann.get("kcycle.io/gpu-assignment", "{}"))
        check(own.get("node") == node, f"{name}: kcycle.io/gpu-assignment names {own.get('node')}")
        mine = [(c["uuid"], c["memory"], c["cores"]) for container in own.get("containers", [])
                for c in container["cards"]]
        containers = hami.split(";")
        check(len(containers) == 2 and containers[1] == "",
              f"{name}: one app container in HAMi's annotation: {hami!r}")
        theirs = []
        for device in containers[0].split(":"):
            if device:
                uuid, kind, mib, cores = device.split(",")
                check(kind == "NVIDIA", f"{name}: device type {kind}")
                theirs.append((uuid, int(mib), int(cores)))
        check(sorted(mine) == sorted(theirs), f"{name}: HAMi's {theirs} != kcycle's {mine}")
        cards, mib, cores = expected_cards(p)
        check(len(theirs) == cards and len({t[0] for t in theirs}) == cards and
              all(t[1] == mib and t[2] == cores for t in theirs),
              f"{name}: asked {cards} x ({mib} MiB, {cores} cores), got {theirs}")
        for uuid, mib, cores in theirs:
            check(uuid in registered[node], f"{name}: card {uuid} is not on {node}")
            card = use[uuid]
            card[0] += mib
            card[1] += cores
            card[2] += 1
            card[3] = card[3] or cores >= 100
    for uuid, (mib, cores, users, exclusive) in use.items():
        check(mib <= GPU_CARD_MIB and cores <= 100 and users <= GPU_SPLIT and
              (not exclusive or users == 1),
              f"card {uuid} over-committed: {mib} MiB, {cores} cores, {users} users")
    return bound


def scenario_gpu(fc, api, workdir):
    nodes = [hami_node(fc, i, legacy=i % 2 == 0, handshake="Reported 2026-12-01 08:00:00 +0000 "
                       "UTC") for i in range(6)]
    # unanswered for years, and the kubelet no longer advertises the cards (HAMi keeps a node
    # whose kubelet still does)
    stale = hami_node(fc, 6, legacy=False, handshake="Requesting_2020-01-01 00:00:00")
    stale["status"]["allocatable"]["nvidia.com/gpu"] = "0"
    nodes.append(stale)
    registered = {n["metadata"]["name"]: n["metadata"]["annotations"][
        "hami.io/node-nvidia-register"] for n in nodes}
    first = gpu_pods(fc, "a", 120)
    bulk_create(api, nodes + first)
    config = os.path.join(workdir, "config.yaml")
    with open(config, "w") as f:
        f.write(GPU_CONFIG)
    r = Replica(api, workdir, "replica-a", leader_elect=False, config=config)
    r.start()
    names = [p["metadata"]["name"] for p in first]
    try:
        pods = wait_until("every GPU pod bound or refused", lambda: gpu_settled(api, names),
                          120, [r])
        bound = check_gpu_decisions(pods, registered, "gpu-06")
        refused = len(names) - bound
        check(bound > 40 and refused > 0, f"{bound} bound and {refused} refused: the cards ran out")
        # restart: the new scheduler rebuilds its ledger from the annotations; half the bound
        # pods finish and new pods arrive, which must fit around what is still held
        r.scheduler.stop()
        done = [n for n, p in sorted(pods.items()) if p["spec"].get("nodeName")][::2]
        for name in done:
            api.delete_object("pods", name, namespace="gpu")
        second = gpu_pods(fc, "b", 80)
        r.start_scheduler()
        bulk_create(api, second)
        names = [n for n in names if n not in done] + [p["metadata"]["name"] for p in second]
        pods = wait_until("the new GPU pods bound or refused", lambda: gpu_settled(api, names),
                          120, [r])
        again = check_gpu_decisions(pods, registered, "gpu-06")
        check(again > bound - len(done), f"after the restart {again} bound (of which "
              f"{bound - len(done)} from before)")
        print(f"gpu: {bound} of 120 bound, then {again} after a restart, {len(done)} finished "
              f"and 80 more")
    finally:
        codes = r.stop()
    check(all(c == 0 for c in codes.values()), f"processes stopped with {codes}\n{r.logs()}")


def scenario_bench(fc, api, workdir):
    items = workload(fc, kcycle=ARGS.pods, unfit=0, others=0, nodes=500, existing=0)
    nodes = [i for i in items if i["kind"] == "Node"]
    pods = [i for i in items if i["kind"] == "Pod"]
    bulk_create(api, nodes)
    r = Replica(api, workdir, "bench", leader_elect=False)
    r.start()
    try:
        wait_until("the scheduler in sync", lambda: "in sync" in open(
            r.scheduler.log_path, errors="replace").read(), 60, [r])
        created = time.monotonic()
        bulk_create(api, pods, batch=1000)
        wait_until("every pod bound", lambda: len(api.stats()["bindings"]) >= len(pods), 300,
                   [r])
        stats = api.stats()
        times = sorted(b["time"] for b in stats["bindings"])
        per_second = collections.Counter(int(t - times[0]) for t in times)
        seconds = times[-1] - times[0]
        check(len(times) == len(pods), "every pod bound once")
        result = {
            "shape": "bridge-bindings", "nodes": len(nodes), "pods": len(pods),
            "bindings": len(times), "seconds_first_to_last": round(seconds, 3),
            "bindings_per_second": round(len(times) / seconds) if seconds > 0 else None,
            "peak_bindings_in_one_second": max(per_second.values()),
            "seconds_from_create_to_last": round(times[-1] - created, 3),
            "api_requests": sum(stats["requests"].values()),
        }
        print(json.dumps(result))
    finally:
        codes = r.stop()
    check(all(c == 0 for c in codes.values()), f"processes stopped with {codes}\n{r.logs()}")



# defaultpreemption is in the default profile: kube appends what preemption found to the
# message of a pod that fits nowhere
NO_VICTIMS = (" preemption: 0/{0} nodes are available: {0} No preemption victims found for "
              "incoming pod.")
NOT_HELPFUL = (" preemption: 0/{0} nodes are available: {0} Preemption is not helpful for "
               "scheduling.")

# ---- ports: host ports and fields no enabled plugin handles ----

PORTS_REASON = "node(s) didn't have free ports for the requested pod ports"


def with_ports(body, ports, sidecar=None):
    """ports: [(protocol or None, hostIP or None, hostPort)] on the app container; sidecar:
    the same on a restartable init container."""
    def entries(spec):
        out = []
        for protocol, ip, port in spec:
            entry = {"containerPort": port, "hostPort": port}
            if protocol:
                entry["protocol"] = protocol
            if ip:
                entry["hostIP"] = ip
            out.append(entry)
        return out
    if ports:
        body["spec"]["containers"][0]["ports"] = entries(ports)
    if sidecar:
        body["spec"]["initContainers"] = [{"name": "proxy", "image": "registry.k8s.io/pause:3.10",
                                           "restartPolicy": "Always",
                                           "ports": entries(sidecar)}]
    return body


def host_ports(pod):
    """kube's GetHostPorts with the API defaults, written here independently of kcycle:
    (protocol, hostIP, hostPort) of app containers and restartable init containers."""
    spec = pod["spec"]
    containers = list(spec.get("containers") or [])
    containers += [c for c in spec.get("initContainers") or []
                   if c.get("restartPolicy") == "Always"]
    out = []
    for c in containers:
        for p in c.get("ports") or []:
            port = p.get("hostPort") or (p.get("containerPort") if spec.get("hostNetwork")
                                         else 0)
            if port:
                out.append((p.get("protocol") or "TCP", p.get("hostIP") or "0.0.0.0", port))
    return out


def port_conflicts(pods):
    """Every pair of pods on one node whose host ports conflict by kube's rule."""
    held, found = collections.defaultdict(list), []
    for p in pods:
        node = p["spec"].get("nodeName")
        if not node:
            continue
        for mine in host_ports(p):
            for other, theirs in held[node]:
                if mine[0] == theirs[0] and mine[2] == theirs[2] and \
                        ("0.0.0.0" in (mine[1], theirs[1]) or mine[1] == theirs[1]):
                    found.append((node, p["metadata"]["name"], other, mine))
            held[node].append((p["metadata"]["name"], mine))
    return found


def named_pod_condition(api, name, namespace="web"):
    return pod_condition(api.get_object("pods", name, namespace=namespace) or {})


def scenario_ports(fc, api, workdir):
    nodes = 6
    items = [fc.node(f"node-{i:03d}") for i in range(nodes)]
    # another scheduler's pod already holds TCP 8080 on node-000
    items.append(with_ports(fc.pod("legacy", namespace="apps", cpu="100m",
                                   node="node-000"), [(None, None, 8080)]))

    def kc(name, **kw):
        return fc.pod(name, namespace="web", scheduler="kcycle", cpu="100m", memory="64Mi", **kw)
    items += [with_ports(kc(f"ingress-{i}"), [(None, None, 8080)]) for i in range(8)]
    items += [with_ports(kc(f"dns-{i}"), [("UDP", None, 8080)]) for i in range(nodes)]
    # TCP 9000: some ask through a sidecar, some through the app container, one on an address
    items += [with_ports(kc(f"mesh-{i}"), [], sidecar=[("TCP", None, 9000)]) for i in range(3)]
    items += [with_ports(kc(f"app-{i}"), [("TCP", "0.0.0.0", 9000)]) for i in range(4)]
    items.append(kc("spread", labels={"app": "spread"},
                    resourceClaims=[{"name": "gpu", "resourceClaimName": "gpu"}]))
    items.append(kc("plain"))
    # interpodaffinity through the bridge: a pod whose required affinity selects its partner's
    # namespace by label (namespaceSelector) lands next to it, which needs the watched
    # Namespace's labels (without them the term selects nothing and the pod stays pending)
    items.insert(0, {"apiVersion": "v1", "kind": "Namespace",
                     "metadata": {"name": "team-a", "labels": {"team": "a"}}})
    items.append(fc.pod("guard", namespace="team-a", cpu="100m", node="node-002",
                        labels={"app": "guard"}))
    items.append(fc.pod("near-guard", namespace="affinity", scheduler="kcycle", cpu="100m",
                        memory="64Mi", affinity={"podAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": [{
                                "topologyKey": "kubernetes.io/hostname",
                                "labelSelector": {"matchLabels": {"app": "guard"}},
                                "namespaceSelector": {"matchLabels": {"team": "a"}}}]}}))
    bulk_create(api, items)
    r = Replica(api, workdir, "replica-ports", leader_elect=False)
    r.start()
    try:
        expect_bound = (nodes - 1) + nodes + nodes + 1  # ingress, dns, 9000 (mesh+app), plain

        def bound_count():
            return sum(1 for p in all_pods(api)
                       if p["metadata"]["namespace"] == "web" and p["spec"].get("nodeName"))
        wait_until(f"{expect_bound} web pods bound", lambda: bound_count() >= expect_bound, 120,
                   [r])
        near = wait_until("near-guard bound", lambda: (api.get_object(
            "pods", "near-guard", namespace="affinity") or {}).get("spec", {}).get("nodeName"),
            60, [r])
        check(near == "node-002", f"near-guard next to guard (namespaceSelector), got {near}")
        message = (f"0/{nodes} nodes are available: {nodes} {PORTS_REASON}." +
                   NO_VICTIMS.format(nodes))
        wait_until("the pods left over told why", lambda: sum(
            1 for e in api.stats()["events"] if e.get("reason") == "FailedScheduling") >= 4,
            60, [r])
        spread = wait_until("the spread pod's condition", lambda: named_pod_condition(api, "spread"),
                            60, [r])
        pods = all_pods(api)
        web = {p["metadata"]["name"]: p for p in pods if p["metadata"]["namespace"] == "web"}
        check(not port_conflicts(pods), f"host ports shared on a node: {port_conflicts(pods)}")
        ingress = [web[f"ingress-{i}"]["spec"].get("nodeName") for i in range(8)]
        check(sorted(n for n in ingress if n) == [f"node-{i:03d}" for i in range(1, nodes)],
              f"TCP 8080 once per node, never on node-000 (legacy holds it): {ingress}")
        dns = sorted(web[f"dns-{i}"]["spec"].get("nodeName") or "-" for i in range(nodes))
        check(dns == [f"node-{i:03d}" for i in range(nodes)], f"UDP 8080 once per node: {dns}")
        nine = [web[n]["spec"].get("nodeName") for n in web if n.startswith(("mesh-", "app-"))]
        check(len([n for n in nine if n]) == nodes and len(set(n for n in nine if n)) == nodes,
              f"TCP 9000 (sidecars and containers) once per node: {nine}")
        pending = sorted(n for n, p in web.items() if not p["spec"].get("nodeName"))
        leftover = [f"ingress-{i}" for i in range(8) if not ingress[i]]
        check(len(leftover) == 8 - (nodes - 1), f"ingress pods left over: {leftover}")
        unplaced_nine = [n for n in web if n.startswith(("mesh-", "app-")) and
                         not web[n]["spec"].get("nodeName")]
        check(pending == sorted(leftover + unplaced_nine + ["spread"]),
              f"pending pods: {pending}")
        for name in leftover + unplaced_nine:
            cond = wait_until(f"{name}'s condition", lambda n=name: named_pod_condition(api, n), 30, [r])
            check(cond.get("status") == "False" and cond.get("reason") == "Unschedulable" and
                  cond.get("message") == message,
                  f"{name}: condition {cond}, expected message {message!r}")
        want = (f"0/{nodes} nodes are available: pod uses spec.resourceClaims, which "
                "no enabled plugin handles.")
        check(spread.get("status") == "False" and spread.get("reason") == "Unschedulable" and
              spread.get("message") == want, f"spread: condition {spread}, expected {want!r}")
        notes = [e.get("note") for e in api.stats()["events"]
                 if e.get("reason") == "FailedScheduling" and
                 (e.get("regarding") or {}).get("name") == "spread"]
        check(want in notes, f"spread: FailedScheduling event with the reason, got {notes}")
        check(web["plain"]["spec"].get("nodeName"), "the plain pod is bound")
        bindings = collections.Counter((b["ns"], b["name"]) for b in api.stats()["bindings"])
        check(all(n == 1 for n in bindings.values()), f"a pod bound twice: {bindings}")
        check(("apps", "legacy") not in bindings, "the other scheduler's pod was bound")
        print(f"ports: {sum(bindings.values())} pods bound, no host port shared; "
              f"{len(pending)} pending with kube's reasons")
    finally:
        codes = r.stop()
    check(all(c == 0 for c in codes.values()), f"processes stopped with {codes}\n{r.logs()}")


def scenario_rbac(fc, api, workdir):
    """The manifests without the pods/binding rule: the bridge's Bindings are refused with 403
    (and said so in its log), no pod is bound; the rest of the grants still work."""
    items = workload(fc, kcycle=50, unfit=0, others=0, nodes=5, existing=0)
    bulk_create(api, items)
    r = Replica(api, workdir, "replica-a", leader_elect=True)
    r.start()
    try:
        denied = wait_until("a Binding refused with 403", lambda: [
            a for a in api.stats()["binding_attempts"] if a["code"] == 403], 120, [r])
        check(all(a["user_agent"].find("(replica-a)") >= 0 for a in denied),
              f"the 403s are the bridge's: {denied[:2]}")
        check(not api.stats()["bindings"], "a pod was bound without the pods/binding grant")
        check(not any(p["spec"].get("nodeName") for p in all_pods(api)), "a pod has a node")
        wait_until("the refusal in the bridge's log", lambda: 'cannot create resource '
                   '"pods/binding"' in open(r.bridge.log_path, errors="replace").read(), 30, [r])
        leases = [w for w in api.stats()["lease_writes"] if w["code"] in (200, 201) and
                  w["holder"] == "replica-a"]
        check(leases, "the lease is still granted (only the binding rule was removed)")
        print(f"rbac: {len(denied)} Bindings refused with 403 without the pods/binding rule")
    finally:
        codes = r.stop()
    check(all(c == 0 for c in codes.values()), f"processes stopped with {codes}\n{r.logs()}")


# ---- volumes ----------------------------------------------------------------------------------

def storage_objects(fc):
    """Six nodes in zones a (0-2) and b (3-5); classes local (no provisioner), fast (a CSI
    provisioner) and standard (Immediate); local volumes on node-1 and node-3; a bound volume
    in zone b; node-0's CSINode allows no volume of the fast driver."""
    nodes = [fc.node(f"node-{i}", labels={"topology.kubernetes.io/zone": "a" if i < 3 else "b"})
             for i in range(6)]

    def klass(name, provisioner, mode):
        return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                "metadata": {"name": name}, "provisioner": provisioner,
                "volumeBindingMode": mode}

    def claim(name, class_name, mode="ReadWriteOnce", size="1Gi", **spec):
        return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": name, "namespace": "vol"},
                "spec": {"storageClassName": class_name, "accessModes": [mode],
                         "resources": {"requests": {"storage": size}}, **spec}}

    def affinity(key, values):
        return {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": key, "operator": "In", "values": values}]}]}}

    def volume(name, class_name, size, node_affinity, **spec):
        return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
                "spec": {"storageClassName": class_name, "capacity": {"storage": size},
                         "accessModes": ["ReadWriteOnce"], "nodeAffinity": node_affinity,
                         **spec},
                "status": {"phase": "Available"}}

    bound = claim("zoned", "local")
    bound["metadata"]["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
    bound["spec"]["volumeName"] = "pv-zone-b"
    items = nodes + [
        klass("local", "kubernetes.io/no-provisioner", "WaitForFirstConsumer"),
        klass("fast", "csi.example.com", "WaitForFirstConsumer"),
        klass("standard", "csi.example.com", "Immediate"),
        volume("local-1", "local", "10Gi", affinity("kubernetes.io/hostname", ["node-1"])),
        volume("local-3", "local", "20Gi", affinity("kubernetes.io/hostname", ["node-3"])),
        volume("pv-zone-b", "local", "1Gi", affinity("topology.kubernetes.io/zone", ["b"]),
               claimRef={"namespace": "vol", "name": "zoned"}),
        claim("db-a", "local", size="5Gi"), claim("db-b", "local", size="5Gi"),
        claim("waiting", "standard"), claim("solo", "fast", mode="ReadWriteOncePod"), bound,
        {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "node-0"},
         "spec": {"drivers": [{"name": "csi.example.com", "nodeID": "node-0",
                               "allocatable": {"count": 0}}]}},
    ] + [claim(f"cache-{i}", "fast") for i in range(4)]

    def pod(name, claim_name):
        return fc.pod(name, namespace="vol", scheduler="kcycle", cpu="100m", memory="100Mi",
                      volumes=[{"name": "data",
                                "persistentVolumeClaim": {"claimName": claim_name}}])
    pods = ([pod("db-a", "db-a"), pod("db-b", "db-b"), pod("missing", "nope"),
             pod("waiting", "waiting"), pod("solo-0", "solo"), pod("solo-1", "solo")] +
            [pod(f"cache-{i}", f"cache-{i}") for i in range(4)] +
            [pod(f"zoned-{i}", "zoned") for i in range(3)])
    return items, pods


def terms_match(terms, labels):
    """kube's node selector terms on labels alone: ORed terms, ANDed expressions."""
    def expression(e):
        have = labels.get(e["key"])
        op, values = e["operator"], e.get("values", [])
        return {"In": have is not None and have in values,
                "NotIn": have is None or have not in values,
                "Exists": have is not None, "DoesNotExist": have is None}.get(op, False)
    return any(t.get("matchExpressions") and all(expression(e) for e in t["matchExpressions"])
               for t in terms)


def check_volume_placements(api):
    """The independent checker: every bound kcycle pod against its claims and volumes."""
    stats = api.stats()
    bindings = {(b["ns"], b["name"]): b for b in stats["bindings"]}
    nodes = {n["metadata"]["name"]: n for n in api.list_objects("nodes")["items"]}
    claims = {c["metadata"]["name"]: c
              for c in api.list_objects("persistentvolumeclaims")["items"]}
    volumes = {v["metadata"]["name"]: v for v in api.list_objects("persistentvolumes")["items"]}
    classes = {c["metadata"]["name"]: c for c in api.list_objects("storageclasses")["items"]}
    pods = [p for p in all_pods(api) if p["metadata"]["namespace"] == "vol"]
    users = collections.Counter()
    attached = collections.defaultdict(set)
    for p in pods:
        node = p["spec"].get("nodeName")
        name = p["metadata"]["name"]
        if not node:
            continue
        labels = nodes[node]["metadata"].get("labels", {})
        binding = bindings.get(("vol", name))
        check(binding is not None, f"{name} bound without a Binding")
        for v in p["spec"].get("volumes", []):
            claim_name = v["persistentVolumeClaim"]["claimName"]
            claim = claims.get(claim_name)
            check(claim is not None, f"{name} bound on {node} with missing claim {claim_name}")
            if claim is None:
                continue
            users[claim_name] += 1
            klass = classes.get(claim["spec"].get("storageClassName"), {})
            check(klass.get("volumeBindingMode") == "WaitForFirstConsumer" or
                  claim["spec"].get("volumeName"),
                  f"{name} bound with an unbound Immediate claim {claim_name}")
            selected = claim["metadata"].get("annotations", {}).get(
                "volume.kubernetes.io/selected-node")
            volume = volumes.get(claim["spec"].get("volumeName") or "")
            if volume is None:  # a volume promised by claimRef, or provisioning
                volume = next((x for x in volumes.values()
                               if (x["spec"].get("claimRef") or {}).get("name") == claim_name),
                              None)
            if volume is not None:
                terms = volume["spec"].get("nodeAffinity", {}).get("required", {}).get(
                    "nodeSelectorTerms")
                check(terms is None or terms_match(terms, labels),
                      f"{name} on {node}, which volume {volume['metadata']['name']} refuses")
                if not claim["spec"].get("volumeName"):
                    check(int(volume["metadata"]["resourceVersion"]) < int(binding["rv"]),
                          f"{name}: claimRef of {volume['metadata']['name']} written after the "
                          "Binding")
            else:
                check(selected == node, f"{name} on {node}, claim {claim_name} selected "
                      f"{selected}")
                check(int(claim["metadata"]["resourceVersion"]) < int(binding["rv"]),
                      f"{name}: selected-node of {claim_name} written after the Binding")
            if klass.get("provisioner") == "csi.example.com":
                attached[node].add(claim_name)
            if "ReadWriteOncePod" in claim["spec"].get("accessModes", []):
                check(users[claim_name] == 1, f"ReadWriteOncePod claim {claim_name} has "
                      f"{users[claim_name]} pods")
    check(not attached.get("node-0"), f"node-0 allows no CSI volume, got {attached.get('node-0')}")
    return {p["metadata"]["name"]: p for p in pods}


def pod_message(pod):
    conds = [c for c in (pod.get("status") or {}).get("conditions") or []
             if c.get("type") == "PodScheduled"]
    return conds[0].get("message") if conds else None


def scenario_volumes(fc, api, workdir):
    objects, pods = storage_objects(fc)
    # every second claim or volume write is refused: that binding fails, the pod is retried
    api.faults(volume_patch_conflict_every=2)
    bulk_create(api, objects + pods)
    r = Replica(api, workdir, "replica-v", leader_elect=False)  # the default profile
    r.start()
    try:
        expected_bound = 2 + 1 + 4 + 3  # db-a, db-b, one solo, caches, zoned
        wait_until("the pods with usable claims bound", lambda: sum(
            1 for p in all_pods(api) if p["metadata"]["namespace"] == "vol" and
            p["spec"].get("nodeName")) >= expected_bound, 120, [r])
        wait_until("the refused pods told why", lambda: all(pod_message(p) for p in all_pods(api)
                   if p["metadata"]["namespace"] == "vol" and not p["spec"].get("nodeName")),
                   60, [r])
        by_name = check_volume_placements(api)
        check(sorted(by_name[n]["spec"].get("nodeName") for n in ("db-a", "db-b")) ==
              ["node-1", "node-3"], "the two local volumes chose node-1 and node-3")
        check(all(by_name[f"zoned-{i}"]["spec"]["nodeName"] in ("node-3", "node-4", "node-5")
                  for i in range(3)), "pods of the zone-b volume run in zone b")
        check(pod_message(by_name["missing"]) ==
              '0/6 nodes are available: persistentvolumeclaim "nope" not found.' +
              NOT_HELPFUL.format(6),
              f"missing claim: {pod_message(by_name['missing'])!r}")
        check(pod_message(by_name["waiting"]) ==
              "0/6 nodes are available: pod has unbound immediate PersistentVolumeClaims." +
              NOT_HELPFUL.format(6),
              f"Immediate claim: {pod_message(by_name['waiting'])!r}")
        solo = [by_name["solo-0"], by_name["solo-1"]]
        loser = [p for p in solo if not p["spec"].get("nodeName")]
        check(len(loser) == 1 and pod_message(loser[0]) ==
              "0/6 nodes are available: 6 node(s) unavailable due to PersistentVolumeClaim "
              "with ReadWriteOncePod access mode already in-use by another pod." +
              NO_VICTIMS.format(6),
              f"second ReadWriteOncePod user: {[pod_message(p) for p in loser]}")
        check(not any(by_name[f"cache-{i}"]["spec"]["nodeName"] == "node-0" for i in range(4)),
              "no fast-class pod on node-0 (CSINode count 0)")
        # the refused writes: no Binding was sent for them, and each such pod bound later
        stats = api.stats()
        refused = stats["requests"].get("patch persistentvolumeclaims", 0) + \
            stats["requests"].get("patch persistentvolumes", 0)
        written = sum(1 for c in api.list_objects("persistentvolumeclaims")["items"]
                      if "volume.kubernetes.io/selected-node" in
                      (c["metadata"].get("annotations") or {}))
        written += sum(1 for v in api.list_objects("persistentvolumes")["items"]
                       if v["metadata"]["name"].startswith("local-") and v["spec"].get("claimRef"))
        check(written == 7 and refused >= 2 * written - 1,
              f"7 objects written ({written}) in {refused} patches: the refused ones retried")
        attempts = collections.Counter((a["ns"], a["name"]) for a in stats["binding_attempts"])
        check(all(n == 1 for n in attempts.values()),
              f"one Binding per pod even when its writes were refused first: {attempts}")
        # the missing claim appears: the parked pod is tried again and provisioned for
        api.bulk([{"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                   "metadata": {"name": "nope", "namespace": "vol"},
                   "spec": {"storageClassName": "fast", "accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": "1Gi"}}}}])
        node = wait_until("the pod of the new claim bound", lambda: (api.get_object(
            "pods", "missing", namespace="vol") or {}).get("spec", {}).get("nodeName"), 60, [r])
        claim = api.get_object("persistentvolumeclaims", "nope", namespace="vol")
        check(claim["metadata"].get("annotations", {}).get(
            "volume.kubernetes.io/selected-node") == node,
              f"the new claim is provisioned on {node}: {claim['metadata']}")
    finally:
        codes = r.stop()
    check(all(c == 0 for c in codes.values()), f"processes stopped with {codes}\n{r.logs()}")


# ---- preemption ------------------------------------------------------------------------------

def preemption_objects(fc):
    """node-0: four 1-CPU pods of priority 0; node-1: one 4-CPU pod of priority 0 protected by
    a PodDisruptionBudget that allows no disruption; node-2: one 4-CPU pod of priority 10.
    Every node is full."""
    items = [fc.node(f"node-{i}", cpu="4", memory="16Gi") for i in range(3)]
    items += [fc.pod(f"low-{i}", namespace="batch", cpu="1", memory="100Mi", node="node-0",
                     priority=0) for i in range(4)]
    items.append(fc.pod("db-0", namespace="batch", cpu="4", memory="100Mi", node="node-1",
                        priority=0, labels={"app": "db"}))
    items.append(fc.pod("web-0", namespace="batch", cpu="4", memory="100Mi", node="node-2",
                        priority=10))
    items.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                  "metadata": {"name": "db-pdb", "namespace": "batch"},
                  "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}},
                  "status": {"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1,
                             "expectedPods": 1}})
    return items


def nominations_of(api, name):
    """The nominatedNodeName values the scheduler patched into the pod's status, in order."""
    bodies = [p["body"] if isinstance(p["body"], dict) else json.loads(p["body"] or "{}")
              for p in api.stats()["status_patches"] if p["name"] == name]
    return [b["status"]["nominatedNodeName"] for b in bodies
            if "nominatedNodeName" in (b.get("status") or {})]


def preemption_eviction_fails(fc, api, r):
    """The API server refuses the eviction (403): as kube's failed prepareCandidate, the
    preemptor's nomination is cleared (a status patch to null) and it backs off and tries
    again, so once the API server lets the eviction through it evicts web-0 (node-2: no budget
    violated, unlike node-1) and binds."""
    api.faults(pod_delete_fail_code=403)
    bulk_create(api, [fc.pod("again", namespace="apps", scheduler="kcycle", cpu="4",
                             memory="100Mi", priority=1000)])

    def cleared():
        noms = nominations_of(api, "again")
        return noms if "node-2" in noms and None in noms[noms.index("node-2"):] else None
    noms = wait_until("again's nomination cleared after the refused eviction", cleared, 60, [r])
    refused = [d for d in api.stats()["deletions"] if d["name"] == "web-0" and d["code"] == 403]
    check(len(refused) >= 1, f"the eviction of web-0 was refused: {api.stats()['deletions']}")
    api.faults(pod_delete_fail_code=0)
    bound = wait_until("again bound once evictions go through", lambda: (api.get_object(
        "pods", "again", namespace="apps") or {}).get("spec", {}).get("nodeName"), 60, [r])
    check(bound == "node-2", f"again bound on node-2 after its retry, got {bound} ({noms})")
    check(api.get_object("pods", "web-0", namespace="batch") is None,
          "web-0 evicted once the API server allowed it")


def scenario_preemption(fc, api, workdir):
    """kube's choice, by hand: node-1 (one victim of priority 0) would win but its victim is
    protected by a budget; node-0 (victims of priority 0) beats node-2 (priority 10): all four
    low-* pods go."""
    bulk_create(api, preemption_objects(fc))
    r = Replica(api, workdir, "replica-a", leader_elect=False)  # the default profile
    r.start()
    try:
        polite = fc.pod("polite", namespace="apps", scheduler="kcycle", cpu="4", memory="100Mi",
                        priority=1000, preemptionPolicy="Never")
        bulk_create(api, [polite])
        cond = wait_until("polite's condition", lambda: next(
            (c for c in ((api.get_object("pods", "polite", namespace="apps") or {}).get(
                "status") or {}).get("conditions") or [] if c.get("type") == "PodScheduled"),
            None), 60, [r])
        check(cond["message"] == "0/3 nodes are available: 3 Insufficient cpu. preemption: not "
              "eligible due to preemptionPolicy=Never.", f"polite's condition: {cond}")
        check(not api.stats()["deletions"], "a pod with preemptionPolicy Never deleted nothing")
        urgent = fc.pod("urgent", namespace="apps", scheduler="kcycle", cpu="4", memory="100Mi",
                        priority=1000)
        bulk_create(api, [urgent])
        bound = wait_until("urgent bound", lambda: (api.get_object(
            "pods", "urgent", namespace="apps") or {}).get("spec", {}).get("nodeName"), 60, [r])
        check(bound == "node-0", f"urgent bound on the nominated node node-0, got {bound}")
        urgent_now = api.get_object("pods", "urgent", namespace="apps")
        stats = api.stats()
        deleted = sorted((d["namespace"], d["name"]) for d in stats["deletions"]
                         if d["code"] == 200)
        check(deleted == [("batch", f"low-{i}") for i in range(4)],
              f"exactly the chosen victims deleted, got {deleted}")
        # A slow scheduler (memcheck) may try urgent again before the deletes come back over
        # the watch and delete the same victims again: 404, the pod already gone. Each such
        # repeat must still carry the uid of the victim that was deleted.
        victim_uid = {(d["namespace"], d["name"]): d["uid"] for d in stats["deletions"]
                      if d["code"] == 200}
        check(all(d["precondition_uid"] and (d["precondition_uid"] == d["uid"] or (
                  d["code"] == 404 and d["uid"] is None and d["precondition_uid"] ==
                  victim_uid.get((d["namespace"], d["name"])))) for d in stats["deletions"]),
              f"every deletion carries the victim's uid as precondition: {stats['deletions']}")
        left = sorted(p["metadata"]["name"] for p in all_pods(api)
                      if p["metadata"]["namespace"] == "batch")
        check(left == ["db-0", "web-0"], f"the protected and the other pods stay: {left}")
        bodies = [p["body"] if isinstance(p["body"], dict) else json.loads(p["body"] or "{}")
                  for p in stats["status_patches"] if p["name"] == "urgent"]
        nominations = [b for b in bodies if "nominatedNodeName" in (b.get("status") or {})]
        check(any(n.get("status", {}).get("nominatedNodeName") == "node-0"
                  for n in nominations),
              f"urgent nominated on node-0 through its status: {nominations}")
        check((urgent_now.get("status") or {}).get("nominatedNodeName") in ("node-0", None),
              f"urgent's nominatedNodeName: {urgent_now.get('status')}")
        preempted = wait_until("four Preempted events", lambda: [
            e for e in api.stats()["events"] if e.get("reason") == "Preempted"] if len([
                e for e in api.stats()["events"] if e.get("reason") == "Preempted"]) >= 4
            else None, 30, [r])
        urgent_uid = urgent_now["metadata"]["uid"]
        check(sorted(e["regarding"]["name"] for e in preempted) ==
              [f"low-{i}" for i in range(4)] and
              all(e["note"] == f"Preempted by pod {urgent_uid} on node node-0" and
                  e["type"] == "Normal" and e["action"] == "Preempting" and
                  e["related"]["name"] == "urgent" for e in preempted),
              f"a Preempted event per victim naming the preemptor: {preempted}")
        polite_now = api.get_object("pods", "polite", namespace="apps")
        check(not polite_now["spec"].get("nodeName"), "polite (Never) took nothing")
        preemption_eviction_fails(fc, api, r)
    finally:
        codes = r.stop()
    check(all(c == 0 for c in codes.values()), f"processes stopped with {codes}\n{r.logs()}")


# ---- queues (capacityqueue) -------------------------------------------------------------------

QUEUES_CONFIG = """plugins:
  - name: capacityqueue
  - name: tainttoleration
  - name: nodeaffinity
  - name: noderesources
  - name: defaultbinder
"""


def capacity_queue(name, **spec):
    return {"apiVersion": "scheduling.kcycle.io/v1alpha1", "kind": "CapacityQueue",
            "metadata": {"name": name}, "spec": spec}


CAPPED_TAINT = {"key": "dedicated", "value": "capped", "effect": "NoSchedule"}


def queue_pods(fc, prefix, queue, count, **spec):
    return [fc.pod(f"{prefix}-{i}", namespace=queue, scheduler="kcycle", cpu="1", memory="100Mi",
                   labels={"kcycle.io/queue": queue}, **spec) for i in range(count)]


def bound_in(api, namespace):
    return sorted(p["metadata"]["name"] for p in all_pods(api)
                  if p["metadata"]["namespace"] == namespace and p["spec"].get("nodeName"))


def queue_status_is(api, name, want):
    """The CapacityQueue's status once it holds every key/value of want (nested dicts)."""
    status = (api.get_object("CapacityQueue", name, namespace=None) or {}).get("status") or {}
    for key, value in want.items():
        have = status.get(key)
        if isinstance(value, dict):
            if not isinstance(have, dict) or any(have.get(k) != v for k, v in value.items()):
                return None
        elif have != value:
            return None
    return status


class QueueReplica(Replica):
    """A replica whose scheduler serves /metrics, for the per-queue gauges (kcycle_queue_*)."""

    def start_scheduler(self):
        # --health-port 0 with a port file: the kernel picks the port, so no other test races
        # for it
        self.port_file = os.path.join(self.workdir, f"scheduler-{self.identity}.port")
        if os.path.exists(self.port_file):
            os.unlink(self.port_file)
        argv = [ARGS.scheduler, "--bridge", self.socket, "--health-port", "0",
                "--health-port-file", self.port_file, "--config", self.config, "-v"]
        self.scheduler = Process(f"scheduler-{self.identity}", argv, self.workdir)

    def queue_gauges_agree(self, api, names):
        """The scheduler's kcycle_queue_* gauges equal each queue's status as the bridge wrote
        it to the API server: the families read, or None while they differ."""
        import prometheus_text
        try:
            with open(self.port_file) as f:
                port = int(f.read())
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
                fams = prometheus_text.parse(r.read().decode())
        except (OSError, ValueError):
            return None
        v = lambda name, **l: prometheus_text.value(fams, name, **l)  # noqa: E731
        for name in names:
            status = (api.get_object("CapacityQueue", name, namespace=None) or {}).get("status")
            if not status or v("kcycle_queue_pending_pods", queue=name) != status["pending"] or \
                    v("kcycle_queue_admitted_pods", queue=name) != status["admitted"]:
                return None
            for gauge, key in (("kcycle_queue_used", "used"), ("kcycle_queue_borrowed",
                                                                "borrowed")):
                for resource, text in status[key].items():
                    want = int(text[:-1]) if text.endswith("m") else int(text)
                    if v(gauge, queue=name, resource=resource) != want:
                        return None
        return fams


def scenario_queues(fc, api, workdir):
    """Two nodes of 4 CPUs; queues research and prod guaranteed 4 CPUs each, capped limited to
    1. research's 8 pods borrow prod's idle half of the cluster; prod's 4 pods then reclaim it:
    exactly 4 research pods deleted (uid precondition) with a Preempted event each, prod's pods
    bound, and the queues' status written back through the bridge at each step. capped admits
    one pod of two and tells the other why (its pods run on a node of their own, tainted). The
    scheduler's kcycle_queue_* gauges end equal to the statuses written."""
    items = [fc.node(f"node-{i}", cpu="4", memory="16Gi") for i in range(2)]
    items.append(fc.node("node-capped", cpu="1", memory="16Gi", taints=[CAPPED_TAINT]))
    items += [capacity_queue("research", guaranteed={"cpu": "4"}),
              capacity_queue("prod", guaranteed={"cpu": "4"}),
              capacity_queue("capped", limit={"cpu": "1"})]
    bulk_create(api, items)
    config = os.path.join(workdir, "config.yaml")
    with open(config, "w") as f:
        f.write(QUEUES_CONFIG)
    r = QueueReplica(api, workdir, "replica-q", leader_elect=False, config=config)
    r.start()
    scale = ARGS.time_scale
    try:
        tolerate = [dict(CAPPED_TAINT, operator="Equal")]
        bulk_create(api, queue_pods(fc, "study", "research", 8) +
                    queue_pods(fc, "c", "capped", 2, tolerations=tolerate,
                               nodeSelector={"kubernetes.io/hostname": "node-capped"}))
        wait_until("research's 8 pods bound (borrowing prod's idle half)",
                   lambda: len(bound_in(api, "research")) == 8, 60 * scale, [r])
        status = wait_until("research's status written back", lambda: queue_status_is(
            api, "research", {"used": {"cpu": "8000m"}, "borrowed": {"cpu": "4000m"},
                              "admitted": 8, "pending": 0}), 30 * scale, [r])
        check(status["valid"] is True, f"research's status: {status}")
        refused = wait_until("capped's second pod refused", lambda: next(
            (c for p in all_pods(api) if p["metadata"]["namespace"] == "capped"
             for c in (p.get("status") or {}).get("conditions") or []
             if c.get("type") == "PodScheduled" and c.get("status") == "False"), None),
            60 * scale, [r])
        check("queue capped: cpu limit 1000m exceeded (2000m if admitted)" in refused["message"],
              f"the refusal names the queue and its limit: {refused}")
        check(len(bound_in(api, "capped")) == 1, "capped admits one pod of two")
        check(not api.stats()["deletions"], "nothing deleted while prod is idle")

        bulk_create(api, queue_pods(fc, "serve", "prod", 4))
        wait_until("prod's 4 pods bound (reclaimed)", lambda: len(bound_in(api, "prod")) == 4,
                   90 * scale, [r])
        stats = api.stats()
        deleted = [d for d in stats["deletions"] if d["code"] == 200]
        check(len(deleted) == 4 and all(d["namespace"] == "research" for d in deleted),
              f"exactly 4 research pods reclaimed, nothing else: {deleted}")
        check(all(d["precondition_uid"] and d["precondition_uid"] == d["uid"] for d in deleted),
              f"every deletion carries the victim's uid as precondition: {deleted}")
        check(len(bound_in(api, "research")) == 4, "research keeps its guarantee: 4 pods")
        victims = sorted(d["name"] for d in deleted)
        preempted = wait_until("four Preempted events", lambda: [
            e for e in api.stats()["events"] if e.get("reason") == "Preempted"] if len([
                e for e in api.stats()["events"] if e.get("reason") == "Preempted"]) >= 4
            else None, 30 * scale, [r])
        check(sorted(e["regarding"]["name"] for e in preempted) == victims and
              all(e["related"]["namespace"] == "prod" and e["type"] == "Normal"
                  for e in preempted),
              f"a Preempted event per victim naming a prod pod: {preempted}")
        try:
            wait_until("the statuses after the reclaim", lambda: queue_status_is(
                api, "research", {"used": {"cpu": "4000m"}, "borrowed": {"cpu": "0m"},
                                  "admitted": 4}) and queue_status_is(
                api, "prod", {"used": {"cpu": "4000m"}, "admitted": 4, "pending": 0}),
                30 * scale, [r])
            prod = api.get_object("CapacityQueue", "prod", namespace=None)["status"]
            check(prod["borrowed"].get("cpu", "0m") == "0m", f"prod never borrowed: {prod}")
        except AssertionError:
            statuses = {q: (api.get_object("CapacityQueue", q, namespace=None) or {}).get("status")
                        for q in ("research", "prod")}
            raise AssertionError(f"research and prod back at their guarantees in their status, "
                                 f"got {statuses}")
        # /metrics: the per-queue gauges say what the bridge wrote (research at its guarantee)
        fams = wait_until("kcycle_queue_* equal to the written statuses", lambda:
                          r.queue_gauges_agree(api, ("research", "prod", "capped")),
                          30 * scale, [r])
        import prometheus_text
        check(prometheus_text.value(fams, "kcycle_queue_used", queue="research",
                                    resource="cpu") == 4000,
              "kcycle_queue_used{research,cpu} is 4000 millicores after the reclaim")
    finally:
        codes = r.stop()
    check(all(c == 0 for c in codes.values()), f"processes stopped with {codes}\n{r.logs()}")


# ---- numa ------------------------------------------------------------------------------------

NUMA_CONFIG = """plugins:
  - name: prioritysort
  - name: noderesources
  - name: numaalign
  - name: defaultbinder
"""


def numa_topology(name, zones, cpus_per_zone, memory_gi_per_zone, policy, scope,
                  used=None, accounted=None):
    """A NodeResourceTopology as kcycle-topology-agent writes it; used: {zone: (cpus, GiB)}."""
    used = used or {}
    metadata = {"name": name}
    if accounted is not None:
        metadata["annotations"] = {"kcycle.io/accounted-pods": ",".join(accounted)}
    zone_list = []
    for z in range(zones):
        cpus, gib = used.get(z, (0, 0))
        zone_list.append({"name": f"node-{z}", "type": "Node", "resources": [
            {"name": "cpu", "capacity": str(cpus_per_zone), "allocatable": str(cpus_per_zone),
             "available": str(cpus_per_zone - cpus)},
            {"name": "memory", "capacity": f"{memory_gi_per_zone}Gi",
             "allocatable": f"{memory_gi_per_zone}Gi",
             "available": f"{memory_gi_per_zone - gib}Gi"}]})
    return {"apiVersion": "topology.node.k8s.io/v1alpha2", "kind": "NodeResourceTopology",
            "metadata": metadata, "topologyPolicies": ["SingleNUMANodeContainerLevel"],
            "attributes": [{"name": "topologyManagerPolicy", "value": policy},
                           {"name": "topologyManagerScope", "value": scope}],
            "zones": zone_list}


# name: (zones, CPUs per zone, GiB per zone, policy, scope)
NUMA_NODES = {f"numa-{i}": (2, 16, 64, "single-numa-node", "container") if i % 2 == 0 else
              (4, 8, 32, "restricted" if i % 4 == 1 else "single-numa-node",
               "pod" if i % 4 == 1 else "container") for i in range(8)}


def guaranteed_pod(fc, name, cpus, gib):
    pod = fc.pod(name, namespace="numa", scheduler="kcycle", cpu=str(cpus), memory=f"{gib}Gi")
    container = pod["spec"]["containers"][0]
    container["resources"]["limits"] = dict(container["resources"]["requests"])
    return pod


def numa_placements(api):
    """Bound Guaranteed pods of namespace numa: name -> (node, zones or None, cpus, GiB)."""
    out = {}
    for p in all_pods(api):
        if p["metadata"]["namespace"] != "numa" or not p["spec"].get("nodeName"):
            continue
        res = p["spec"]["containers"][0]["resources"]["requests"]
        zones = p["metadata"].get("annotations", {}).get("kcycle.io/numa-zones")
        out[p["metadata"]["name"]] = (p["spec"]["nodeName"], zones,
                                      quantity_milli(res["cpu"]) // 1000,
                                      int(res["memory"].rstrip("Gi")))
    return out


def check_numa_fit(placements, reported=None):
    """Every placement names zones that hold it: one zone under single-numa-node, at most the
    narrowest number under restricted, and no zone over its CPUs or memory (the pods the
    agent's report already accounts for are in its `available`)."""
    used = collections.defaultdict(lambda: [0, 0])
    for name, (node, zones, cpus, gib) in sorted(placements.items()):
        count, per_zone, mem_zone, policy, scope = NUMA_NODES[node]
        check(zones is not None, f"{name} on {node}: no kcycle.io/numa-zones annotation")
        ids = [int(z) for z in zones.split(",")]
        check(all(0 <= z < count for z in ids), f"{name}: zones {zones} not on {node}")
        narrowest = max(-(-cpus // per_zone), -(-gib // mem_zone))
        if policy == "single-numa-node":
            check(len(ids) == 1, f"{name} on {node}: {len(ids)} zones under single-numa-node")
        else:
            check(len(ids) == narrowest, f"{name} on {node}: {zones} is not {narrowest} zone(s)")
        left_cpu, left_gib = cpus, gib
        for z in ids:  # the kubelet fills the hint's zones lowest first
            take = min(left_cpu, per_zone - used[(node, z)][0])
            used[(node, z)][0] += take
            left_cpu -= take
            take = min(left_gib, mem_zone - used[(node, z)][1])
            used[(node, z)][1] += take
            left_gib -= take
        check(left_cpu == 0 and left_gib == 0,
              f"{name} on {node}: zones {zones} do not hold {cpus} CPUs / {gib} GiB")


# Nodes whose topology kcycle-topology-agent publishes itself (with --agent), from the hwloc
# synthetic description of the same shape. It has no podresources socket here: its reports
# carry no accounted-pods list, which numaalign must survive (its own charges stay).
AGENT_NODES = {"numa-6": "pack:2 numa:1(memory=64GiB) core:8 pu:2",
               "numa-7": "pack:2 numa:2(memory=32GiB) core:4 pu:2"}


def start_agents(api, workdir):
    if not ARGS.agent:
        return []
    kubeconfig = api.kubeconfig(os.path.join(workdir, "kubeconfig"))
    agents = []
    for name, synthetic in AGENT_NODES.items():
        policy, scope = NUMA_NODES[name][3], NUMA_NODES[name][4]
        agents.append(Process(f"agent-{name}", [
            ARGS.agent, "--kubeconfig", kubeconfig, "--node-name", name, "--synthetic",
            synthetic, "--topology-manager-policy", policy, "--topology-manager-scope", scope,
            "--poll-seconds", "1", "--publish-seconds", "2"], workdir))
    wait_until("the agents' NodeResourceTopologies", lambda: all(
        api.get_object("NodeResourceTopology", n, namespace=None) for n in AGENT_NODES), 30)
    return agents


def scenario_numa(fc, api, workdir):
    items = []
    for name, (zones, cpus, gib, policy, scope) in NUMA_NODES.items():
        items.append(fc.node(name, cpu=str(zones * cpus), memory=f"{zones * gib}Gi"))
        if not (ARGS.agent and name in AGENT_NODES):
            items.append(numa_topology(name, zones, cpus, gib, policy, scope, accounted=[]))
    sizes = [(2, 4), (3, 6), (5, 8), (6, 16), (7, 8), (10, 20)]
    first = [guaranteed_pod(fc, f"g-{i:03d}", *sizes[i % len(sizes)]) for i in range(48)]
    bulk_create(api, items)
    agents = start_agents(api, workdir)
    bulk_create(api, first)
    config = os.path.join(workdir, "config.yaml")
    with open(config, "w") as f:
        f.write(NUMA_CONFIG)
    r = Replica(api, workdir, "replica-n", leader_elect=False, config=config)
    r.start()
    try:
        placed = wait_until("the first NUMA pods bound", lambda: len(numa_placements(api)) >= 30
                            and numa_placements(api), 120, [r])
        # the agent reports for numa-0 now: what it accounts for is in `available`, and it
        # lists those pods; pods bound after the report stay charged by the scheduler
        on_node = {n: v for n, v in placed.items() if v[0] == "numa-0"}
        used = collections.defaultdict(lambda: [0, 0])
        for name, (node, zones, cpus, gib) in on_node.items():
            used[int(zones.split(",")[0])][0] += cpus
            used[int(zones.split(",")[0])][1] += gib
        report = numa_topology("numa-0", 2, 16, 64, "single-numa-node", "container",
                               used={z: tuple(v) for z, v in used.items()},
                               accounted=[f"numa/{n}" for n in sorted(on_node)])
        current = api.get_object("NodeResourceTopology", "numa-0", namespace=None)
        report["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        status, body = api.put(fc.resource_path("NodeResourceTopology", None, "numa-0"), report)
        check(status == 200, f"the agent's report for numa-0: {status} {body}")
        more = [guaranteed_pod(fc, f"h-{i:03d}", *sizes[i % len(sizes)]) for i in range(40)]
        bulk_create(api, more)

        def settled():
            pods = [p for p in all_pods(api) if p["metadata"]["namespace"] == "numa"]
            done = [p for p in pods if p["spec"].get("nodeName") or any(
                c.get("type") == "PodScheduled" and c.get("status") == "False"
                for c in p.get("status", {}).get("conditions", []))]
            return len(done) == len(pods) == 88
        wait_until("every NUMA pod bound or unschedulable", settled, 120, [r])
        placements = numa_placements(api)
        check(len(placements) >= 40, f"only {len(placements)} NUMA pods bound")
        check_numa_fit(placements)
        unschedulable = [p for p in all_pods(api) if p["metadata"]["namespace"] == "numa" and
                         not p["spec"].get("nodeName")]
        check(unschedulable, "the workload saturates the NUMA zones")
        on_agent_nodes = sum(1 for v in placements.values() if v[0] in AGENT_NODES)
        if ARGS.agent:
            check(on_agent_nodes > 0, "pods were placed on the nodes the agents describe")
        print(f"numa: {len(placements)} Guaranteed pods bound with zones that hold them "
              f"({on_agent_nodes} on nodes kcycle-topology-agent describes), "
              f"{len(unschedulable)} left unschedulable")
    finally:
        for agent in agents:
            codes_agent = agent.stop()
            check(codes_agent == 0, f"{agent.name} stopped with {codes_agent}")
        codes = r.stop()
    check(all(c == 0 for c in codes.values()), f"processes stopped with {codes}\n{r.logs()}")


# ---- start-up: the first sync after a restart or failover ----

class LogTail:
    """Stamps every line the named log files gain with the test's monotonic clock, from a
    thread reading them every 10 ms: times of log lines of two processes on one clock."""

    def __init__(self):
        self.lines = []  # (time, file name, line)
        self.files = {}
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def follow(self, name, path):
        with self.lock:
            self.files[name] = [path, None, b""]

    def run(self):
        while not self.stopping.wait(0.01):
            with self.lock:
                for name, state in self.files.items():
                    if state[1] is None:
                        try:
                            state[1] = open(state[0], "rb")
                        except OSError:
                            continue
                    data = state[2] + state[1].read()
                    *complete, state[2] = data.split(b"\n")
                    now = time.monotonic()
                    for line in complete:
                        self.lines.append((now, name, line.decode(errors="replace")))

    def first(self, name, text):
        """The time of the first line of log name containing text, or None."""
        with self.lock:
            return next((t for t, n, line in self.lines if n == name and text in line), None)

    def matching(self, name, text):
        with self.lock:
            return [line for t, n, line in self.lines if n == name and text in line]

    def wait(self, name, text, timeout, replicas=()):
        return wait_until(f"'{text}' in the {name} log", lambda: self.first(name, text),
                          timeout, replicas)

    def close(self):
        self.stopping.set()
        self.thread.join(5)
        for state in self.files.values():
            if state[1] is not None:
                state[1].close()


def running_pods(fc, count, nodes):
    """Pods of another scheduler already running on the nodes (100m / 100Mi each)."""
    return [fc.pod(f"running-{i:06d}", namespace=f"apps-{i % 10}", cpu="100m",
                   memory="100Mi", node=f"node-{i % nodes:04d}") for i in range(count)]


class Starvation:
    """How long the sync's path waited for a CPU: the kernel's per-thread run-queue delay
    (/proc/PID/task/TID/schedstat, second field) of the test and its child processes (fake API
    server, bridge, scheduler), sampled every 20 ms. Per process the thread that waited most
    counts (the sync passes through one thread of each in turn), and the processes add up. On
    a machine busy with other work the first sync takes longer by about that much; a sync that
    waits for something (the bug first-sync guards against) sleeps instead, which is not
    counted."""

    def __init__(self):
        self.samples = [(time.monotonic(), {})]
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    @staticmethod
    def pids():
        me = os.getpid()
        found = [me]
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as f:
                        if int(f.read().rsplit(")", 1)[1].split()[1]) == me:
                            found.append(int(entry))
                except (OSError, ValueError, IndexError):
                    continue
        return found

    def sample(self):
        waits = {}
        for pid in self.pids():
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for tid in tids:
                try:
                    with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                        waits[(pid, tid)] = int(f.read().split()[1]) / 1e9
                except (OSError, ValueError, IndexError):
                    continue
        self.samples.append((time.monotonic(), waits))

    def run(self):
        while not self.stopping.wait(0.02):
            self.sample()

    def between(self, start, end):
        """Seconds waited for a CPU from the last sample before start to the first after end."""
        before = [w for t, w in self.samples if t <= start] or [{}]
        after = [w for t, w in self.samples if t >= end] or [self.samples[-1][1]]
        first, last = before[-1], after[0]
        worst = {}
        for key, waited in last.items():
            grown = waited - first.get(key, waited)
            worst[key[0]] = max(worst.get(key[0], 0.0), grown)
        return sum(worst.values())

    def stop(self):
        self.stopping.set()
        self.thread.join(5)
        self.sample()


def start_up(api, workdir, name, hello):
    """Start a bridge and its scheduler. hello "with": both at once, as a deployment does;
    "before": the same, with the node list held back until the scheduler has said hello, so
    that the hello comes first even when the lists take milliseconds; "after": the scheduler
    once the lists are done. Returns the replica, the log tail and the start-up times on the
    test's clock."""
    r = Replica(api, workdir, name, leader_elect=False)
    logs = LogTail()
    try:
        if hello == "before":
            api.faults(list_delay_ms={"nodes": 120000})
        r.start_bridge()
        logs.follow("bridge", r.bridge.log_path)
        started = time.monotonic()
        if hello in ("before", "with"):
            r.start_scheduler()
            logs.follow("scheduler", r.scheduler.log_path)
        if hello == "before":
            logs.wait("scheduler", "connected; asking for the cluster", 60 * ARGS.time_scale,
                      [r])
            api.faults(list_delay_ms={})
        for kind in ("Node", "Pod"):
            logs.wait("bridge", f"bridge: {kind} listed", 120 * ARGS.time_scale, [r])
        if hello == "after":
            r.start_scheduler()
            logs.follow("scheduler", r.scheduler.log_path)
        logs.wait("scheduler", "bridge: in sync", 120 * ARGS.time_scale, [r])
    except BaseException:
        logs.close()
        r.kill()  # a failed start leaves no process behind
        raise
    times = {"start": started,
             "lists": max(logs.first("bridge", f"bridge: {k} listed") for k in ("Node", "Pod")),
             "hello": logs.first("scheduler", "connected; asking for the cluster"),
             "in_sync": logs.first("scheduler", "bridge: in sync")}
    return r, logs, times


def check_first_sync(times, hello, what, last_try=True, starvation=None):
    """Acceptance 1: the scheduler in sync within 1 s of the later of the lists and hello, plus
    the time the processes waited for a CPU meanwhile (starvation: a Starvation meter, on a
    machine busy with other work). Returns the delay, or None when it was over the limit and
    this is not the last try."""
    check(times["hello"] is not None, f"{what}: the scheduler never said hello")
    if hello == "before":
        check(times["hello"] < times["lists"], f"{what}: the hello came "
              f"{times['hello'] - times['lists']:.2f}s after the lists, not before")
    else:
        check(times["hello"] > times["lists"], f"{what}: the hello came before the lists")
    ready = max(times["lists"], times["hello"])
    delay = times["in_sync"] - ready
    starved = starvation.between(ready, times["in_sync"]) if starvation is not None else 0.0
    limit = 1.0 * ARGS.time_scale + starved
    if delay > limit and not last_try:
        return None
    check(delay <= limit, f"{what}: the scheduler was in sync {delay:.2f}s after the lists and "
          f"its hello (limit {limit:.2f} s: 1 s and {starved:.2f} s waiting for a CPU)")
    return delay


def first_sync_once(api, workdir, what, name, hello, last_try):
    """One start-up; the delay (None: over the limit on a try that is not the last)."""
    starvation = Starvation()
    try:
        r, logs, times = start_up(api, workdir, name, hello)
    finally:
        starvation.stop()
    try:
        delay = check_first_sync(times, hello, what, last_try, starvation)
        line = logs.matching("bridge", "bridge: first sync sent")
        check(len(line) == 1, f"{what}: the bridge logs its first sync once: {line}")
        ready = max(times["lists"], times["hello"])
        late = times["in_sync"] - ready
        print(f"first-sync: {what}: lists done {times['lists'] - times['start']:.2f}s after the "
              f"bridge started, hello at {times['hello'] - times['start']:.2f}s, in sync "
              f"{late:.2f}s after the later of the two "
              f"({starvation.between(ready, times['in_sync']):.2f}s waiting for a CPU)")
    finally:
        logs.close()
        codes = r.stop()
    check(all(c == 0 for c in codes.values()), f"{what}: processes stopped with {codes}")
    return delay


def scenario_first_sync(fc, api, workdir):
    nodes = 5000
    bulk_create(api, [fc.node(f"node-{i:04d}") for i in range(nodes)], batch=2500)
    for size in (0, 50000):
        if size:
            bulk_create(api, running_pods(fc, size, nodes), batch=5000)
        for hello in ("before", "after"):
            what = f"{size} running pods, hello {hello} the lists"
            # a machine busy with other work (a load of 15 on 2 cores was seen) can stretch the
            # 0.3 s a 55,000-object sync takes here past the limit: one more try; a sync that
            # waits (5 to 9 s before the fix) fails both
            if first_sync_once(api, workdir, what, f"sync-{size}-{hello}", hello, False) is None:
                print(f"first-sync: {what}: over the limit, trying once more")
                first_sync_once(api, workdir, what, f"sync-{size}-{hello}-2", hello, True)


def first_sync_after_start(logs, field="first sync sent "):
    """The bridge's own figures, in seconds from its start: when it sent the first sync, or
    (field "required lists done after ") when its node and pod lists were done."""
    line = logs.matching("bridge", "bridge: first sync sent")
    check(len(line) == 1, f"the bridge logs its first sync once: {line}")
    return float(line[0].split(field)[1].split(" s")[0])


def scenario_optional_lists(fc, api, workdir):
    """api serves the CRDs; a second server without them is started here."""
    crds = ("PodGroup", "CapacityQueue", "NodeResourceTopology")
    with fc.FakeAPI(workdir=os.path.join(workdir, "no-crds"),
                    extra_args=["--without-crds"]) as bare:
        status, _ = bare.get("/apis/scheduling.x-k8s.io/v1alpha1/podgroups")
        check(status == 404, f"the fake without CRDs answers a PodGroup list with {status}")
        bulk_create(bare, [fc.node(f"node-{i:04d}") for i in range(200)] +
                    [fc.pod("p-0", namespace="team-0", scheduler="kcycle", cpu="100m",
                            memory="100Mi")])
        r, logs, times = start_up(bare, workdir, "no-crds", "after")
        try:
            check_first_sync(times, "after", "CRDs not served")
            sent = first_sync_after_start(logs)
            check(not logs.matching("bridge", "is served but not listed"),
                  "the bridge waited out the optional lists of CRDs that are not served")
            if os.environ.get("KCYCLE_TEST_WRAPPER"):
                # memcheck: the bridge alone takes seconds to start its lists, so the time
                # says nothing; the absence of the wait's warning above is what is checked
                print(f"optional-lists: under {os.environ['KCYCLE_TEST_WRAPPER'].split()[0]} "
                      f"the 5 s bound on the first sync is not checked (sent {sent:.2f}s)")
            else:
                check(sent < 5.0, f"the first sync was sent {sent:.2f}s after start: held for "
                      "the CRDs that are not served")
            for kind in crds:
                said = logs.matching("bridge", f"bridge: {kind} is not served")
                check(len(said) == 1, f"{kind}: one line saying it is not served, got {said}")
            wait_until("the pod bound without the CRDs", lambda: (bare.get_object(
                "pods", "p-0", namespace="team-0") or {}).get("spec", {}).get("nodeName"),
                30, [r])
            check(logs.wait("bridge", "bridge: first binding", 10, [r]),
                  "the bridge logs its first binding")
            print(f"optional-lists: CRDs not served: first sync {sent:.2f}s after the bridge "
                  f"started, in sync {times['in_sync'] - max(times['lists'], times['hello']):.2f}s "
                  "after the lists and the hello")
        finally:
            logs.close()
            codes = r.stop()
        check(all(c == 0 for c in codes.values()), f"processes stopped with {codes}")
    # served but slow: the wait is bounded, as before
    bulk_create(api, [fc.node(f"node-{i:04d}") for i in range(200)])
    api.faults(list_delay_ms={"scheduling.kcycle.io/capacityqueues": 30000})
    r, logs, times = start_up(api, workdir, "slow-crd", "with")
    try:
        sent = first_sync_after_start(logs)
        check(9.9 <= sent <= 10.0 + ARGS.time_scale, f"a served but slow CRD held the sync "
              f"{sent:.2f}s (expected the bounded wait of 10 s)")
        check(logs.matching("bridge", "CapacityQueue is served but not listed after 10 s"),
              "the bridge says it gave up waiting for the slow CapacityQueue list")
        check(not logs.matching("bridge", "is not served"), "a slow CRD was taken for absent")
        print(f"optional-lists: a slow CRD list held the first sync {sent:.2f}s (bounded 10 s)")
    finally:
        logs.close()
        api.reset_faults()
        codes = r.stop()
    check(all(c == 0 for c in codes.values()), f"processes stopped with {codes}")


def peak_rss_mb(process):
    """VmHWM of a live process, in MB."""
    with open(f"/proc/{process.proc.pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    return None


def scenario_startup_bench(fc, api, workdir):
    """A restart or failover at scale: one fake server per size (a fresh cluster each), 5,000
    nodes, the running pods, and --pods kcycle pods pending when bridge and scheduler start.
    Times are seconds from the bridge's start on the test's clock (the fake server stamps
    bindings with the same monotonic clock). Works with an older bridge too (its own figure,
    bridge_first_sync_sent, is then null), to measure a before/after."""
    nodes, pending = 5000, ARGS.pods
    for size in [int(x) for x in ARGS.running.split(",")]:
        sub = os.path.join(workdir, f"size-{size}")
        with fc.FakeAPI(workdir=sub) as api:
            setup = time.monotonic()
            bulk_create(api, [fc.node(f"node-{i:04d}") for i in range(nodes)], batch=2500)
            bulk_create(api, running_pods(fc, size, nodes), batch=5000)
            bulk_create(api, [fc.pod(f"k-{i:05d}", namespace=f"team-{i % 4}",
                                     scheduler="kcycle", cpu="100m", memory="200Mi")
                              for i in range(pending)], batch=5000)
            setup = time.monotonic() - setup
            r, logs, times = start_up(api, sub, "bench", "with")
            try:
                wait_until("every pending pod bound", lambda: api.stats(summary=True)[
                    "bindings"] >= pending, 600, [r])
                rss = {"bridge": peak_rss_mb(r.bridge), "scheduler": peak_rss_mb(r.scheduler)}
                bind_times = sorted(b["time"] for b in api.stats()["bindings"])
                check(len(bind_times) == pending, "every pod bound once")
                seconds = bind_times[-1] - bind_times[0]
                sent = logs.matching("bridge", "bridge: first sync sent")
                start = times["start"]
                result = {
                    "shape": "bridge-startup", "nodes": nodes, "running_pods": size,
                    "pending_pods": pending, "setup_seconds": round(setup, 1),
                    "lists_done": round(times["lists"] - start, 3),
                    "scheduler_hello": round(times["hello"] - start, 3),
                    "bridge_first_sync_sent": first_sync_after_start(logs) if sent else None,
                    "scheduler_in_sync": round(times["in_sync"] - start, 3),
                    "in_sync_after_lists": round(times["in_sync"] - times["lists"], 3),
                    "first_binding": round(bind_times[0] - start, 3),
                    "first_binding_after_in_sync": round(bind_times[0] - times["in_sync"], 3),
                    "last_binding": round(bind_times[-1] - start, 3),
                    "bindings_per_second": round(len(bind_times) / seconds) if seconds else None,
                    "bridge_peak_rss_mb": rss["bridge"],
                    "scheduler_peak_rss_mb": rss["scheduler"],
                }
                print(json.dumps(result), flush=True)
            finally:
                logs.close()
                codes = r.stop()
            check(all(c == 0 for c in codes.values()), f"processes stopped with {codes}")


def real_api(workdir):
    """A real control plane for the scenario, or None (after saying why) without binaries."""
    sys.path.insert(0, os.path.join(ARGS.source, "tests", "realkube"))
    import realapi
    bindir, why = realapi.kube_bin()
    if bindir is None:
        print(f"SKIP: {why}")
        return None
    drop = ("ClusterRole", "kcycle-scheduler", "pods/binding") if ARGS.scenario == "rbac" \
        else None
    # watches straight from etcd, so that the compaction is what makes them 410
    return realapi.RealAPI(bindir, ARGS.source, workdir, watch_cache=ARGS.scenario != "faults",
                           drop_rule=drop)


# ---- metrics: /metrics of the scheduler and the bridge against the API server's record ----

class MetricsReplica(Replica):
    """A replica whose scheduler and bridge serve their HTTP endpoints on ports of their own."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # --health-port 0 with a port file: the kernel picks each port, so no other test can
        # take it between a pick and the bind
        self.port_files = {who: os.path.join(self.workdir, f"{who}-{self.identity}.port")
                           for who in ("bridge", "scheduler")}
        for path in self.port_files.values():
            if os.path.exists(path):
                os.unlink(path)

    def port(self, who):
        try:
            with open(self.port_files[who]) as f:
                text = f.read()
            return int(text) if text.endswith("\n") else None
        except (OSError, ValueError):
            return None

    def start_bridge(self):
        argv = [ARGS.bridge, "--kubeconfig", self.kubeconfig, "--listen", self.socket,
                "--identity", self.identity, *self.lease, "--health-port", "0",
                "--health-port-file", self.port_files["bridge"], "-v"]
        if not self.leader_elect:
            argv.append("--no-leader-elect")
        self.bridge = Process(f"bridge-{self.identity}", argv, self.workdir)

    def start_scheduler(self):
        argv = [ARGS.scheduler, "--bridge", self.socket, "--health-port", "0",
                "--health-port-file", self.port_files["scheduler"], "-v"]
        self.scheduler = Process(f"scheduler-{self.identity}", argv, self.workdir)

    def scrape(self, who, path="/metrics"):
        port = self.port(who)
        if port is None:
            return None, ""  # not listening yet
        url = f"http://127.0.0.1:{port}{path}"
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
        except OSError:
            return None, ""


def scenario_metrics(fc, api, workdir):
    """Both /metrics endpoints scraped during the run and after it, read by a strict reader of
    the Prometheus text format, and checked against what the API server recorded."""
    import prometheus_text
    prometheus_text.self_test()
    nodes, kcycle, unfit = 30, 300, 5
    bulk_create(api, workload(fc, kcycle=kcycle, unfit=unfit, others=20, nodes=nodes,
                              existing=10))
    r = MetricsReplica(api, workdir, "replica-m", leader_elect=False)
    r.start()
    try:
        for who in ("scheduler", "bridge"):
            wait_until(f"the {who}'s /healthz", lambda: r.scrape(who, "/healthz")[0] == 200, 60,
                       [r])
            # during the run: it answers and parses, whatever the counts are by then
            status, body = r.scrape(who)
            check(status == 200, f"{who} /metrics: {status}")
            prometheus_text.parse(body)
        wait_until("every fitting kcycle pod bound", lambda: kcycle_bound(api, kcycle - unfit),
                   120, [r])
        wait_until("the FailedScheduling events", lambda: sum(
            1 for e in api.stats()["events"] if e.get("reason") == "FailedScheduling") >= unfit,
            60, [r])
        for who in ("scheduler", "bridge"):
            check(r.scrape(who, "/readyz")[0] == 200, f"{who} /readyz")
        bindings = len(api.stats()["bindings"])
        check(bindings == kcycle - unfit, f"the API server got {bindings} Bindings")
        # the scheduler's figures settle once the bridge has answered every binding; its queue
        # gauges are refreshed at most every 100 ms
        def settled():
            f = prometheus_text.parse(r.scrape("scheduler")[1])
            pending = sum(prometheus_text.value(f, "scheduler_pending_pods", queue=q) or 0
                          for q in ("active", "backoff", "unschedulable", "gated"))
            bound = prometheus_text.value(f, "kcycle_bindings_total", result="bound")
            return f if bound == bindings and pending == unfit else None
        sched = wait_until("the scheduler's bindings and pending pods counted", settled, 30, [r])
        v = lambda name, **l: prometheus_text.value(sched, name, **l)  # noqa: E731
        check(v("scheduler_schedule_attempts_total", result="scheduled", profile="kcycle") ==
              bindings, "attempts{scheduled} == Bindings the API server accepted")
        check(v("scheduler_schedule_attempts_total", result="unschedulable", profile="kcycle")
              >= unfit, "at least one unschedulable attempt per pod that never fits")
        check(v("scheduler_schedule_attempts_total", result="error", profile="kcycle") == 0,
              "no error attempts")
        pending = sum(v("scheduler_pending_pods", queue=q) for q in
                      ("active", "backoff", "unschedulable", "gated"))
        check(pending == unfit, f"{pending} pods pending, {unfit} expected (the unfit ones)")
        check(v("kcycle_leader") == 1, "the scheduler says it leads")
        bridge = prometheus_text.parse(r.scrape("bridge")[1])
        b = lambda name, **l: prometheus_text.value(bridge, name, **l)  # noqa: E731
        check(b("kcycle_bridge_bindings_total", result="bound") == bindings,
              f"bridge bindings{{bound}} {b('kcycle_bridge_bindings_total', result='bound')} "
              f"== {bindings}")
        check(b("kcycle_bridge_watch_events_total", resource="Pod") >= kcycle + 20 + 10,
              "the bridge saw every pod in its list and watch")
        check(b("kcycle_bridge_watch_events_total", resource="Node") >= nodes, "and every node")
        check(b("kcycle_bridge_lists_total", resource="Pod") >= 1, "pods listed")
        check(b("kcycle_bridge_leader") == 1, "the bridge leads (no leader election)")
        check(b("kcycle_bridge_api_errors_total") == 0, "no API errors")
    finally:
        codes = r.stop()
    check(all(c == 0 for c in codes.values()), f"processes stopped with {codes}\n{r.logs()}")
    # secrets never logged: the bridge's bearer token appears in neither log (both ran at -v,
    # the scheduler with a decision line per attempt)
    token = api.token
    check(token, "the API server has a token (else the check below proves nothing)")
    for p in (r.bridge, r.scheduler):
        text = open(p.log_path, errors="replace").read()
        check(token not in text, f"the API token appears in {p.name}'s log")
    check("attempt pod=" in open(r.scheduler.log_path, errors="replace").read(),
          "the scheduler wrote its decision log at -v")
    # the scheduler's own last word agrees with what it served
    last = [l for l in open(r.scheduler.log_path, errors="replace") if "stopping:" in l]
    check(last and f", {bindings} scheduled" in last[-1], f"the stopping line: {last[-1:]}")
    print(f"metrics: {bindings} Bindings, the scheduler's and the bridge's /metrics agree")


def scenario_path_escape(fc, api, workdir):
    """A plugin's object write whose name climbs out of its path
    ("../../../api/v1/namespaces/kube-system/secrets/x"): the bridge refuses the binding with an
    error naming the object, sends nothing for it, and the pod stays unbound."""
    check(ARGS.misbehave, "path-escape needs --misbehave (the test plugin)")
    config = os.path.join(workdir, "config.yaml")
    with open(config, "w") as f:
        f.write("plugins:\n  - name: prioritysort\n  - name: noderesources\n"
                "  - name: defaultbinder\n  - name: misbehave\n"
                f"    path: {json.dumps(ARGS.misbehave)}\n    args: {{escape_write: true}}\n")
    bulk_create(api, [fc.node("node-0"),
                      fc.pod("climber", namespace="team-0", scheduler="kcycle", cpu="100m")])
    r = Replica(api, workdir, "replica-e", leader_elect=False, config=config)
    r.start()
    try:
        wait_until("the refused binding reported on the pod", lambda: any(
            "refuses PersistentVolumeClaim" in (pod_message(p) or "") for p in all_pods(api)
            if p["metadata"]["name"] == "climber"), 60 * ARGS.time_scale, [r])
        pod = [p for p in all_pods(api) if p["metadata"]["name"] == "climber"][0]
        message = pod_message(pod)
        check("../../../api/v1/namespaces/kube-system/secrets/x" in message and
              "DNS-1123" in message, f"the message names the object and the rule: {message!r}")
        check(not pod["spec"].get("nodeName"), "the pod stayed unbound")
        requests = api.stats()["requests"]
        sent = sorted(k for k in requests if not k.startswith(("list ", "watch ", "get ")))
        check(not any("secrets" in k or "persistentvolumeclaims" in k or "binding" in k
                      for k in sent) and "patch pods/status" in sent,
              f"only the pod's status written, nothing for the refused binding: {sent}")
    finally:
        r.stop()


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=["basic", "faults", "leader", "constraints",
                                             "ports", "volumes", "numa", "gpu", "bench", "first-sync",
                                             "optional-lists", "startup-bench",
                                             "preemption", "rbac", "metrics", "queues",
                                             "path-escape"])
    parser.add_argument("--api", choices=["fake", "real"], default="fake")
    parser.add_argument("--pods", type=int, default=5000,
                        help="bench: pods to bind; startup-bench: kcycle pods pending at start")
    parser.add_argument("--time-scale", type=float, default=1.0,
                        help="multiply time limits (sanitizer builds allocate several times "
                             "slower)")
    parser.add_argument("--running", default="0,50000,150000",
                        help="startup-bench: running pods per cluster size, comma-separated")
    parser.add_argument("--scheduler", required=True)
    parser.add_argument("--bridge", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--agent", help="numa: kcycle-topology-agent, to publish some topologies")
    parser.add_argument("--misbehave", help="path-escape: the misbehave test plugin")
    ARGS = parser.parse_args()
    if os.environ.get("KCYCLE_TEST_WRAPPER"):  # `meson test --setup valgrind`: memcheck
        ARGS.time_scale *= 20
    sys.path.insert(0, os.path.join(ARGS.source, "tests", "fakeapi"))
    import fakeclient as fc
    if ARGS.scenario == "rbac" and ARGS.api != "real":
        parser.error("rbac runs against the real API server only (--api real)")
    workdir = tempfile.mkdtemp(prefix=f"kcycle-bridge-{ARGS.api}-{ARGS.scenario}-")
    ok = False
    try:
        api = fc.FakeAPI(workdir=workdir) if ARGS.api == "fake" else real_api(workdir)
        if api is None:
            shutil.rmtree(workdir, ignore_errors=True)
            return 77
        with api:
            {"basic": scenario_basic, "faults": scenario_faults, "leader": scenario_leader,
             "constraints": scenario_constraints, "ports": scenario_ports,
             "volumes": scenario_volumes, "numa": scenario_numa, "gpu": scenario_gpu,
             "bench": scenario_bench, "first-sync": scenario_first_sync,
             "optional-lists": scenario_optional_lists,
             "startup-bench": scenario_startup_bench,
             "preemption": scenario_preemption, "rbac": scenario_rbac,
             "metrics": scenario_metrics,
             "queues": scenario_queues,
             "path-escape": scenario_path_escape}[ARGS.scenario](fc, api, workdir)
        ok = True
    except AssertionError as e:
        print(f"FAIL: {e}", file=sys.stderr)
    finally:
        if ok:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"logs kept in {workdir}", file=sys.stderr)
    if ok and CHECKS == 0 and not ARGS.scenario.endswith("bench"):
        ok = False  # a scenario that checked nothing proves nothing
        print(f"FAIL: {ARGS.scenario}: no check ran", file=sys.stderr)
    print(f"{ARGS.scenario}: {CHECKS} checks passed" if ok else
          f"{ARGS.scenario}: failed after {CHECKS} checks")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
