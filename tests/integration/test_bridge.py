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
  bench   (tests/perf) bindings/s against the fake server: 500 nodes, 5,000 pods created
          while the scheduler runs; prints one JSON line.

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
import subprocess
import sys
import tempfile
import time

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

    expected = f"0/{nodes} nodes are available: {nodes} Insufficient cpu."
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


def scenario_leader(fc, api, workdir):
    items = workload(fc, kcycle=1500, unfit=0, others=100)
    nodes = [i for i in items if i["kind"] == "Node"]
    pods = [i for i in items if i["kind"] == "Pod"]
    bulk_create(api, nodes)
    a = Replica(api, workdir, "replica-a", leader_elect=True)
    b = Replica(api, workdir, "replica-b", leader_elect=True)
    a.start()
    wait_until("replica-a to hold the lease", lambda: any(
        w["holder"] == "replica-a" and w["code"] in (200, 201)
        for w in api.stats()["lease_writes"]), 30, [a])
    b.start()
    try:
        # pods arrive in waves so that the workload spans the failover
        bulk_create(api, pods[:600])
        wait_until("replica-a to bind", lambda: len(api.stats()["bindings"]) >= 200, 120, [a, b])
        for p in (a.scheduler, a.bridge):
            p.expected_dead = True
        a.kill()
        killed = time.monotonic()
        bulk_create(api, pods[600:])
        wait_until("every kcycle pod bound", lambda: kcycle_bound(api, 1500), 180, [b])
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
        check(takeover < 20.0, f"replica-b took over {takeover:.1f}s after the kill (limit 20)")
        check_outcome(api, kcycle=1500, unfit=0, others=100)
        holders = [w for w in stats["lease_writes"] if w["code"] in (200, 201)]
        check(holders and holders[-1]["holder"] == "replica-b", "replica-b holds the lease")
        print(f"leader: replica-a bound {len(by['replica-a'])}, replica-b took over "
              f"{takeover:.1f}s after the kill and bound {len(by['replica-b'])}")
    finally:
        a.kill()
        codes = b.stop()
    check(all(c == 0 for c in codes.values()), f"processes stopped with {codes}\n{b.logs()}")
    leases = [w for w in api.stats()["lease_writes"] if w["holder"] == "" and w["code"] == 200]
    check(leases, "replica-b released the lease when it stopped")


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


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=["basic", "faults", "leader", "bench", "rbac"])
    parser.add_argument("--api", choices=["fake", "real"], default="fake")
    parser.add_argument("--pods", type=int, default=5000, help="bench: pods to bind")
    parser.add_argument("--scheduler", required=True)
    parser.add_argument("--bridge", required=True)
    parser.add_argument("--source", required=True)
    ARGS = parser.parse_args()
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
             "bench": scenario_bench, "rbac": scenario_rbac}[ARGS.scenario](fc, api, workdir)
        ok = True
    except AssertionError as e:
        print(f"FAIL: {e}", file=sys.stderr)
    finally:
        if ok:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"logs kept in {workdir}", file=sys.stderr)
    print(f"{ARGS.scenario}: {CHECKS} checks passed" if ok else
          f"{ARGS.scenario}: failed after {CHECKS} checks")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
