#!/usr/bin/env python3
"""The fake API server (tests/fakeapi) against the real kube-apiserver, request by request.

The same requests the bridge makes, including the ones that fail (a second Binding, a
stale uid, a missing pod, a gated pod, a stale Lease, a status patch of a missing pod, a
continue token or a watch from before a compaction, an invalid Event), go to both servers;
the status code and the reason must be the same, and the message too where the bridge reads
it. A difference is printed with both answers and fails the test: the fake is what changes.

usage: test_fake_parity.py --source DIR
Exits 77 (skipped) without the binaries of `./dev.sh kube`."""
import argparse
import json
import os
import re
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cluster  # noqa: E402
import realapi  # noqa: E402

NS = "parity"
# cases whose message the bridge shows or matches, so it must be the real one word for word
MESSAGE_MATTERS = {"bind again", "bind stale uid", "bind gated"}


def pod(name, gated=False):
    spec = {"schedulerName": "kcycle", "containers": [
        {"name": "c", "image": "registry.k8s.io/pause:3.10",
         "resources": {"requests": {"cpu": "100m"}}}]}
    if gated:
        spec["schedulingGates"] = [{"name": "example.com/wait"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
            "spec": spec}


def binding(name, node, uid=None):
    meta = {"name": name, "namespace": NS}
    if uid:
        meta["uid"] = uid
    return {"apiVersion": "v1", "kind": "Binding", "metadata": meta,
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}}


UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def answer(result):
    """(code, reason, message), uids in the message made alike (each server has its own)."""
    status, body = result
    if isinstance(body, dict) and body.get("kind") == "Status":
        return status, body.get("reason", ""), UID.sub("<uid>", body.get("message", ""))
    return status, "", ""


def watch_first_event(call, path):
    """The first event of a watch (as parsed JSON) or the HTTP answer when it is not 200."""
    status, body = call("GET", path)
    if status != 200:
        return answer((status, body))
    text = body if isinstance(body, str) else json.dumps(body)
    ev = json.loads(text.splitlines()[0])
    obj = ev.get("object") or {}
    return ev.get("type"), obj.get("code", 0), obj.get("reason", "")


def cases(call, compact):
    """Run the requests on one server; {case: answer}."""
    out = {}
    pods = f"/api/v1/namespaces/{NS}/pods"
    call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                        "metadata": {"name": NS}})
    call("POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node",
                                   "metadata": {"name": "n1"},
                                   "status": {"allocatable": {"cpu": "4", "pods": "110"}}})
    uids = {}
    for name in ("p1", "p2", "p3"):
        uids[name] = call("POST", pods, pod(name))[1]["metadata"]["uid"]
    call("POST", pods, pod("gated", gated=True))
    out["create in a missing namespace"] = answer(call(
        "POST", "/api/v1/namespaces/nowhere/pods", dict(pod("x"), metadata={
            "name": "x", "namespace": "nowhere"})))
    out["bind"] = answer(call("POST", f"{pods}/p1/binding", binding("p1", "n1", uids["p1"])))
    out["bind again"] = answer(call("POST", f"{pods}/p1/binding",
                                    binding("p1", "n1", uids["p1"])))
    out["bind stale uid"] = answer(call("POST", f"{pods}/p2/binding",
                                        binding("p2", "n1", uids["p3"])))
    out["bind missing pod"] = answer(call("POST", f"{pods}/nope/binding",
                                          binding("nope", "n1")))
    out["bind gated"] = answer(call("POST", f"{pods}/gated/binding", binding("gated", "n1")))
    out["bind name mismatch"] = answer(call("POST", f"{pods}/p3/binding",
                                            binding("p2", "n1")))
    patch = {"status": {"conditions": [{"type": "PodScheduled", "status": "False",
                                        "reason": "Unschedulable", "message": "m"}]}}
    out["status patch"] = answer(call("PATCH", f"{pods}/p3/status", patch,
                                      content_type="application/strategic-merge-patch+json"))
    out["status patch missing pod"] = answer(call(
        "PATCH", f"{pods}/nope/status", patch,
        content_type="application/strategic-merge-patch+json"))
    leases = f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases"
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "l"}, "spec": {"holderIdentity": "a",
                                                 "leaseDurationSeconds": 15}}
    created = call("POST", leases, lease)[1]
    out["lease create twice"] = answer(call("POST", leases, lease))
    stale = dict(lease, metadata={"name": "l", "resourceVersion": created["metadata"][
        "resourceVersion"]})
    out["lease update"] = answer(call("PUT", f"{leases}/l", dict(stale, spec={
        "holderIdentity": "b", "leaseDurationSeconds": 15})))
    out["lease stale update"] = answer(call("PUT", f"{leases}/l", stale))
    out["event missing fields"] = answer(call(
        "POST", f"/apis/events.k8s.io/v1/namespaces/{NS}/events",
        {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"}}))
    page = call("GET", f"{pods}?limit=1")[1]
    token = page["metadata"]["continue"]
    rv = page["metadata"]["resourceVersion"]
    for i in range(3):
        call("POST", pods, pod(f"later-{i}"))
    compact()
    out["continue after compaction"] = answer(call("GET", f"{pods}?limit=1&continue={token}"))
    out["watch after compaction"] = watch_first_event(
        call, f"{pods}?watch=1&resourceVersion={rv}&timeoutSeconds=1")
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source", required=True)
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(args.source, "tests", "fakeapi"))
    import fakeclient
    bindir, why = realapi.kube_bin()
    if bindir is None:
        print(f"SKIP: {why}")
        return 77
    workdir = tempfile.mkdtemp(prefix="kcycle-fake-parity-")
    ok = False
    try:
        with fakeclient.FakeAPI(workdir=os.path.join(workdir, "fake")) as fake:
            def fake_call(method, path, body=None, content_type=None):
                return fake.request(method, path, body, content_type=content_type,
                                    timeout=30)
            fake_out = cases(fake_call, fake.compact)
        # the watch cache off: watches and lists are served from etcd, as after a restart
        cp = cluster.ControlPlane(bindir, args.source, os.path.join(workdir, "real"),
                                  watch_cache=False)
        try:
            cp.start()

            def real_call(method, path, body=None, content_type=None):
                return cp.admin.request(method, path, body,
                                        content_type=content_type or "application/json")
            real_out = cases(real_call, cp.compact)
        finally:
            cp.stop()
        differ = []
        for case in real_out:
            f, r = fake_out[case], real_out[case]
            same = f[:2] == r[:2] and (case not in MESSAGE_MATTERS or f == r)
            print(f"{'same  ' if same else 'DIFFER'} {case}\n  real: {r}\n  fake: {f}")
            if not same:
                differ.append(case)
        ok = not differ
        if differ:
            print(f"FAIL: the fake answers {len(differ)} requests unlike kube-apiserver: "
                  f"{', '.join(differ)}", file=sys.stderr)
    finally:
        if ok:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"logs kept in {workdir}", file=sys.stderr)
    print(f"fake-parity: {'passed' if ok else 'failed'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
