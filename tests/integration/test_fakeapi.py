#!/usr/bin/env python3
"""The fake Kubernetes API server speaks the wire format the bridge relies on: list envelope
and consistent paging, selectors, chunked watches (framing, order, bookmarks, 410 after
compaction), binding, status patches, leases, auth and the injected faults; and the real
kubectl can list, watch, create and delete through it. Usage: test_fakeapi.py SOURCE_ROOT"""
import base64
import json
import os
import queue
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

SOURCE = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
sys.path.insert(0, os.path.join(SOURCE, "tests", "fakeapi"))
import fakeclient  # noqa: E402
from fakeclient import pod, node, resource_path  # noqa: E402

FAILURES = []
PASSED = [0]
TEST_DEADLINE = time.monotonic() + 55


def check(condition, message):
    if condition:
        PASSED[0] += 1
        return True
    FAILURES.append(message)
    print("FAIL: " + message, flush=True)
    return False


# ---------------------------------------------------------------------------------------------
# A raw HTTP/1.1 client, to see the chunk framing that http.client hides.

class RawStream:
    def __init__(self, api, path, token="test-token", headers=()):
        raw = socket.create_connection(("127.0.0.1", api.port), timeout=10)
        self.sock = api.ssl_context().wrap_socket(raw, server_hostname="127.0.0.1")
        lines = [f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{api.port}", "Accept: application/json",
                 "User-Agent: test-fakeapi-raw", f"Authorization: Bearer {token}", *headers]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        self.buffer = b""
        self.status = None
        self.headers = {}
        self.chunks = []          # raw chunk payloads in arrival order
        self.terminated = False   # saw the 0-length chunk
        self.closed = False       # the server closed the connection
        self.bad_framing = None

    def _fill(self, deadline):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        self.sock.settimeout(remaining)
        try:
            data = self.sock.recv(65536)
        except (socket.timeout, ssl.SSLWantReadError):
            return False
        except (ssl.SSLError, OSError):
            data = b""
        if not data:
            self.closed = True
            return False
        self.buffer += data
        return True

    def _parse(self):
        if self.status is None:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buffer[:end].decode().split("\r\n")
            self.status = int(head[0].split()[1])
            for line in head[1:]:
                k, v = line.split(":", 1)
                self.headers[k.strip().lower()] = v.strip()
            self.buffer = self.buffer[end + 4:]
        while not self.terminated:
            eol = self.buffer.find(b"\r\n")
            if eol < 0:
                return
            try:
                size = int(self.buffer[:eol], 16)
            except ValueError:
                self.bad_framing = self.buffer[:40]
                return
            if len(self.buffer) < eol + 2 + size + 2:
                return
            payload = self.buffer[eol + 2:eol + 2 + size]
            if self.buffer[eol + 2 + size:eol + 4 + size] != b"\r\n":
                self.bad_framing = self.buffer[:40]
                return
            self.buffer = self.buffer[eol + 4 + size:]
            if size == 0:
                self.terminated = True
            else:
                self.chunks.append(payload)

    def read_until(self, predicate, timeout):
        """Read until predicate(self) holds, the stream ends or timeout passes."""
        deadline = min(time.monotonic() + timeout, TEST_DEADLINE)
        while True:
            self._parse()
            if predicate(self) or self.terminated or self.closed or self.bad_framing:
                return predicate(self)
            if not self._fill(deadline):
                self._parse()
                return predicate(self)

    def read_to_end(self, timeout):
        return self.read_until(lambda s: s.terminated or s.closed, timeout)

    def events(self):
        data = b"".join(self.chunks)
        return [json.loads(line) for line in data.split(b"\n") if line.strip()]

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def event_count(n):
    return lambda s: len(s.events()) >= n if s.chunks else False


def binding(name, node_name, uid=None, annotations=None, namespace="default"):
    meta = {"name": name, "namespace": namespace}
    if uid:
        meta["uid"] = uid
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Binding", "metadata": meta,
            "target": {"kind": "Node", "name": node_name}}


def bind_path(name, namespace="default"):
    return resource_path("pods", namespace, name, "binding")


# ---------------------------------------------------------------------------------------------

def check_auth(api):
    status, body = api.get("/api/v1/pods", token="")
    check(status == 401 and body.get("kind") == "Status" and body.get("reason") == "Unauthorized"
          and body.get("code") == 401, f"no token: 401 Status Unauthorized, got {status} {body}")
    status, _ = api.get("/api/v1/pods", token="wrong")
    check(status == 401, f"wrong token: 401, got {status}")
    status, text = api.get("/fake/healthz", token="")
    check(status == 200 and text == "ok", f"healthz needs no auth, got {status} {text!r}")
    conn = api.connect(client_cert=True)
    conn.request("GET", "/api/v1/namespaces", headers={"Accept": "application/json"})
    resp = conn.getresponse()
    body = json.loads(resp.read())
    conn.close()
    names = sorted(i["metadata"]["name"] for i in body.get("items", []))
    check(resp.status == 200 and names == ["default", "kube-system"],
          f"client certificate authenticates; namespaces default, kube-system; got "
          f"{resp.status} {names}")
    api.set_tokens(["rotated"])
    old = api.get("/api/v1/nodes")[0]
    new = api.get("/api/v1/nodes", token="rotated")[0]
    api.set_tokens(["test-token"], token="rotated")
    check(old == 401 and new == 200, f"token rotation: old 401, new 200; got {old}, {new}")


def check_list_and_paging(api):
    pods = [pod(f"p{i:02d}", namespace="team-a" if i % 2 else "team-b",
                labels={"app": "web" if i < 6 else "db"}) for i in range(10)]
    result = api.bulk(pods + [node("n1"), node("n2"), node("n3")])
    check(result["created"] == 13 and result["failed"] == 0, f"bulk created 13, got {result}")

    status, body = api.get("/api/v1/pods")
    check(status == 200 and body["kind"] == "PodList" and body["apiVersion"] == "v1",
          f"list envelope kind PodList apiVersion v1, got {status} {body.get('kind')}")
    rv = body["metadata"].get("resourceVersion")
    check(isinstance(rv, str) and rv.isdigit(), f"list resourceVersion is a string, got {rv!r}")
    items = body["items"]
    check(len(items) == 10, f"10 pods listed, got {len(items)}")
    check(all("kind" not in i and "apiVersion" not in i for i in items),
          "built-in list items carry no kind/apiVersion")
    first = items[0]
    meta = first["metadata"]
    check(all(meta.get(k) for k in ("uid", "resourceVersion", "creationTimestamp")) and
          meta["creationTimestamp"].endswith("Z") and len(meta["creationTimestamp"]) == 20,
          f"objects get uid, resourceVersion, RFC3339 creationTimestamp: {meta}")
    check(first["spec"]["schedulerName"] == "default-scheduler" and
          first["spec"]["priority"] == 0 and first["status"]["phase"] == "Pending",
          f"pod defaults schedulerName/priority/phase, got {first['spec']} {first['status']}")
    keys = [f"{i['metadata']['namespace']}/{i['metadata']['name']}" for i in items]
    check(keys == sorted(keys), f"list sorted by namespace/name, got {keys}")
    status, body = api.get("/api/v1/namespaces/team-a/pods")
    check(status == 200 and len(body["items"]) == 5 and
          all(i["metadata"]["namespace"] == "team-a" for i in body["items"]),
          f"namespaced list has the 5 team-a pods, got {status} {len(body.get('items', []))}")
    status, body = api.get("/api/v1/nodes")
    check(status == 200 and body["kind"] == "NodeList" and len(body["items"]) == 3,
          f"NodeList of 3, got {status} {body.get('kind')}")

    # Three pages of 4, 4, 2 from the same list-time state although pods change in between.
    status, page1 = api.get("/api/v1/pods?limit=4")
    cont = page1["metadata"].get("continue", "")
    check(status == 200 and len(page1["items"]) == 4 and cont and
          page1["metadata"].get("remainingItemCount") == 6,
          f"page 1: 4 items, continue, remainingItemCount 6; got {page1['metadata']}")
    list_rv = page1["metadata"]["resourceVersion"]
    api.create(pod("p00a", namespace="team-b"))        # sorts inside page 2's range
    api.delete_object("pods", "p09", namespace="team-a")  # would be on page 2 or 3
    status, page2 = api.get("/api/v1/pods?limit=4&continue=" + cont)
    cont2 = page2["metadata"].get("continue", "")
    check(status == 200 and len(page2["items"]) == 4 and cont2 and
          page2["metadata"]["resourceVersion"] == list_rv,
          f"page 2: 4 items at the list rv {list_rv}, got {status} {page2.get('metadata')}")
    status, page3 = api.get("/api/v1/pods?limit=4&continue=" + cont2)
    check(status == 200 and len(page3["items"]) == 2 and not page3["metadata"].get("continue"),
          f"page 3: 2 items, no continue; got {status} {page3.get('metadata')}")
    paged = [f"{i['metadata']['namespace']}/{i['metadata']['name']}"
             for p in (page1, page2, page3) for i in p["items"]]
    check(paged == keys, f"pages are the list-time state {keys}, got {paged}")
    token = json.loads(base64.urlsafe_b64decode(cont + "=" * (-len(cont) % 4)))
    check(str(token.get("rv")) == list_rv, f"continue token holds the list rv, got {token}")

    # Selectors.
    status, body = api.get("/api/v1/pods?fieldSelector=metadata.name%3Dp03")
    check(status == 200 and [i["metadata"]["name"] for i in body["items"]] == ["p03"],
          f"fieldSelector metadata.name=p03, got {status}")
    status, body = api.get("/api/v1/pods?fieldSelector=spec.nodeName%3D,"
                           "status.phase!%3DSucceeded,metadata.namespace%3D%3Dteam-a")
    check(status == 200 and len(body["items"]) == 4,
          f"fieldSelector spec.nodeName=,status.phase!=Succeeded,metadata.namespace==team-a "
          f"gives 4 pods, got {status} {len(body.get('items', []))}")
    status, body = api.get("/api/v1/pods?fieldSelector=spec.bogus%3Dx")
    check(status == 400 and body.get("kind") == "Status" and body.get("reason") == "BadRequest"
          and body.get("message") == "field label not supported: spec.bogus",
          f"unsupported field: 400 'field label not supported: spec.bogus', got {status} {body}")
    status, body = api.get("/api/v1/nodes?fieldSelector=spec.nodeName%3Dx")
    check(status == 400, f"pod-only field on nodes: 400, got {status}")
    status, body = api.get("/api/v1/pods?labelSelector=app%3Dweb,!gone")
    check(status == 200 and len(body["items"]) == 6, f"labelSelector app=web,!gone: 6, "
          f"got {len(body.get('items', []))}")
    status, body = api.get("/api/v1/pods?labelSelector=app!%3Dweb")
    check(status == 200 and len(body["items"]) == 4, f"labelSelector app!=web: 4 (p00a has no "
          f"label, p09 deleted), got {len(body.get('items', []))}")
    status, body = api.get("/api/v1/pods?labelSelector=app+in+(db,cache)")
    check(status == 200 and len(body["items"]) == 3, f"labelSelector app in (db,cache): 3, "
          f"got {len(body.get('items', []))}")
    return list_rv


def check_watch(api, list_rv):
    # Order and framing: every event one JSON object + newline, carrying kind/apiVersion.
    stream = RawStream(api, f"/api/v1/namespaces/team-a/pods?watch=1&resourceVersion={list_rv}"
                       "&timeoutSeconds=2")
    api.create(pod("w1", namespace="team-a"))
    api.patch(resource_path("pods", "team-a", "w1"), {"metadata": {"labels": {"x": "y"}}},
              content_type="application/merge-patch+json")
    api.delete_object("pods", "w1", namespace="team-a")
    api.create(pod("elsewhere", namespace="team-b"))
    started = time.monotonic()
    stream.read_to_end(6)
    elapsed = time.monotonic() - started
    check(stream.status == 200 and stream.headers.get("transfer-encoding") == "chunked" and
          stream.headers.get("content-type") == "application/json" and
          "content-length" not in stream.headers,
          f"watch: 200 chunked application/json, got {stream.status} {stream.headers}")
    check(stream.bad_framing is None, f"watch chunk framing valid, got {stream.bad_framing!r}")
    check(stream.terminated and 1.0 < elapsed < 4.0,
          f"watch ends with the terminating chunk after timeoutSeconds=2, got terminated="
          f"{stream.terminated} after {elapsed:.1f}s")
    data = b"".join(stream.chunks)
    check(data.endswith(b"\n") and all(c.endswith(b"\n") for c in stream.chunks),
          "each watch event ends with a newline")
    events = stream.events()
    seen = [(e["type"], e["object"]["metadata"]["name"]) for e in events]
    # p09 (deleted during paging) comes first: history after list_rv in team-a
    check(seen == [("DELETED", "p09"), ("ADDED", "w1"), ("MODIFIED", "w1"), ("DELETED", "w1")],
          f"watch from the list rv sends DELETED p09, ADDED/MODIFIED/DELETED w1 in order, "
          f"got {seen}")
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    check(rvs == sorted(rvs) and len(set(rvs)) == len(rvs), f"event rvs increase, got {rvs}")
    check(all(e["object"].get("kind") == "Pod" and e["object"].get("apiVersion") == "v1"
              for e in events), "watch objects carry kind Pod and apiVersion v1")
    stream.close()

    # resourceVersion=0: current state first, as ADDED.
    stream = RawStream(api, "/api/v1/nodes?watch=true&resourceVersion=0&timeoutSeconds=1")
    stream.read_to_end(5)
    names = sorted(e["object"]["metadata"]["name"] for e in stream.events()
                   if e["type"] == "ADDED")
    check(names == ["n1", "n2", "n3"] and stream.terminated,
          f"watch rv=0 starts with ADDED for each node, got {names}")
    stream.close()

    # Bookmarks: the watched kind with only metadata.resourceVersion.
    api.faults(bookmark_interval_s=0.2)
    status, body = api.get("/api/v1/nodes")
    rv = body["metadata"]["resourceVersion"]
    stream = RawStream(api, f"/api/v1/nodes?watch=1&resourceVersion={rv}"
                       "&allowWatchBookmarks=true&timeoutSeconds=1")
    stream.read_to_end(5)
    marks = [e for e in stream.events() if e["type"] == "BOOKMARK"]
    current = api.stats()["resource_version"]
    check(len(marks) >= 2 and all(
        m["object"] == {"kind": "Node", "apiVersion": "v1",
                        "metadata": {"resourceVersion": m["object"]["metadata"]
                                     ["resourceVersion"]}} for m in marks) and
        marks[-1]["object"]["metadata"]["resourceVersion"] == current,
        f"bookmarks every 0.2s: Node objects with only the current rv {current}, got {marks}")
    api.faults(bookmark_interval_s=None)
    stream.close()

    # A selector-filtered watch sees a pod leave its selection as DELETED.
    status, body = api.get("/api/v1/pods?fieldSelector=spec.nodeName%3D")
    rv = body["metadata"]["resourceVersion"]
    stream = RawStream(api, "/api/v1/pods?watch=1&fieldSelector=spec.nodeName%3D"
                       f"&resourceVersion={rv}&timeoutSeconds=5")
    api.post(bind_path("p04", "team-b"), binding("p04", "n1", namespace="team-b"))
    stream.read_until(event_count(1), 5)
    events = stream.events()
    check([(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("DELETED", "p04")]
          and events[0]["object"]["spec"]["nodeName"] == "n1",
          f"watch spec.nodeName= sends DELETED when the pod gets a node, got "
          f"{[(e['type'], e['object']['metadata']['name']) for e in events]}")
    stream.close()


def check_expired(api):
    status, body = api.get("/api/v1/pods?limit=3")
    cont = body["metadata"]["continue"]
    old_rv = body["metadata"]["resourceVersion"]
    api.create(pod("after-list"))
    compact = api.compact()
    stream = RawStream(api, f"/api/v1/pods?watch=1&resourceVersion={old_rv}")
    stream.read_to_end(5)
    events = stream.events()
    want = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f"too old resource version: {old_rv} ({compact['compacted_rv']})",
            "reason": "Expired", "code": 410}
    check(stream.status == 200 and len(events) == 1 and events[0]["type"] == "ERROR" and
          events[0]["object"] == want and stream.terminated,
          f"watch from a compacted rv: 200, one ERROR 410 Expired event, then the end; got "
          f"{stream.status} {events} terminated={stream.terminated}")
    stream.close()
    status, body = api.get("/api/v1/pods?limit=3&continue=" + cont)
    check(status == 410 and body.get("reason") == "Expired" and body.get("code") == 410,
          f"continue token after compaction: 410 Expired, got {status} {body}")
    # The current rv still works after compaction.
    stream = RawStream(api, f"/api/v1/pods?watch=1&resourceVersion={compact['compacted_rv']}"
                       "&timeoutSeconds=1")
    api.create(pod("after-compact"))
    stream.read_to_end(5)
    names = [e["object"]["metadata"]["name"] for e in stream.events()]
    check(names == ["after-compact"], f"watch from the compacted rv follows, got {names}")
    stream.close()


def check_binding(api):
    api.bulk([pod("b1", annotations={"keep": "me"}), pod("b2"),
              pod("gated", schedulingGates=[{"name": "wait"}])])
    b1 = api.get_object("pods", "b1")
    rv = api.list_objects("pods", "default")["metadata"]["resourceVersion"]
    watch = api.watch("/api/v1/namespaces/default/pods", resourceVersion=rv, timeoutSeconds=3)
    status, body = api.post(bind_path("b1"), binding("b1", "n2", uid=b1["metadata"]["uid"],
                                                     annotations={"kcycle.io/score": "7"}))
    check(status == 201 and body == {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                     "status": "Success", "code": 201},
          f"binding: 201 Status Success, got {status} {body}")
    event = watch.next()
    watch.close()
    check(event is not None and event["type"] == "MODIFIED" and
          event["object"]["metadata"]["name"] == "b1", f"binding: one MODIFIED event, got {event}")
    b1 = api.get_object("pods", "b1")
    conditions = {c["type"]: c["status"] for c in b1["status"].get("conditions", [])}
    check(b1["spec"].get("nodeName") == "n2", f"binding sets nodeName, got {b1['spec']}")
    check(b1["metadata"].get("annotations") == {"keep": "me", "kcycle.io/score": "7"},
          f"binding merges annotations, got {b1['metadata'].get('annotations')}")
    check(conditions == {"PodScheduled": "True"}, f"binding adds PodScheduled=True, "
          f"got {conditions}")

    status, body = api.post(bind_path("b1"), binding("b1", "n3"))
    check(status == 409 and body.get("reason") == "Conflict" and body.get("message") ==
          'Operation cannot be fulfilled on pods/binding "b1": pod b1 is already assigned to '
          'node "n2"', f"binding an assigned pod: 409 with the kube message, got {status} {body}")
    status, body = api.post(bind_path("b2"), binding("b2", "n1", uid="not-the-uid"))
    check(status == 409 and "Precondition failed: UID in precondition" in body.get("message", ""),
          f"uid mismatch: 409 precondition failed, got {status} {body}")
    status, body = api.post(bind_path("gated"), binding("gated", "n1"))
    check(status == 409 and "non-empty .spec.schedulingGates" in body.get("message", ""),
          f"gated pod: 409, got {status} {body}")
    status, body = api.post(bind_path("nope"), binding("nope", "n1"))
    check(status == 404 and body.get("reason") == "NotFound" and
          body.get("message") == 'pods "nope" not found', f"missing pod: 404, got {status} {body}")
    status, body = api.post(bind_path("b2"), binding("other", "n1"))
    check(status == 400 and body.get("reason") == "BadRequest",
          f"URL name != body name: 400, got {status} {body}")
    status, body = api.post("/api/v1/namespaces/default/bindings", binding("b2", "n1"))
    check(status == 201 and api.get_object("pods", "b2")["spec"].get("nodeName") == "n1",
          f"POST .../bindings binds too, got {status} {body}")

    stats = api.stats()
    attempts = [(a["name"], a["node"], a["code"]) for a in stats["binding_attempts"]
                if a["ns"] == "default"]
    check(attempts == [("b1", "n2", 201), ("b1", "n3", 409), ("b2", "n1", 409),
                       ("gated", "n1", 409), ("nope", "n1", 404), ("b2", "n1", 400),
                       ("b2", "n1", 201)],
          f"every binding attempt recorded with its code, got {attempts}")
    check(all(a["user_agent"] == "fakeclient" and isinstance(a["time"], float)
              for a in stats["binding_attempts"]), "attempts carry user agent and time")
    accepted = [(b["ns"], b["name"], b["node"]) for b in stats["bindings"]]
    check(("default", "b1", "n2") in accepted and ("default", "b2", "n1") in accepted and
          all(b["code"] == 201 for b in stats["bindings"]),
          f"accepted bindings recorded, got {accepted}")


def check_status_patch(api):
    api.create(pod("sp", namespace="default"))
    path = resource_path("pods", "default", "sp", "status")
    status, _ = api.patch(path, {"status": {"conditions": [
        {"type": "Ready", "status": "False"}]}})
    unschedulable = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                     "message": "0/3 nodes are available: 3 Insufficient cpu.",
                     "lastProbeTime": None, "lastTransitionTime": "2026-11-29T10:00:00Z"}
    status, body = api.patch(path, {"status": {"conditions": [unschedulable]},
                                    "metadata": {"labels": {"ignored": "yes"}}})
    conditions = body["status"]["conditions"] if status == 200 else []
    check(status == 200 and [c["type"] for c in conditions] == ["Ready", "PodScheduled"],
          f"strategic merge keeps Ready and adds PodScheduled, got {status} {conditions}")
    check(not body.get("metadata", {}).get("labels"), "status patch ignores metadata changes")
    unschedulable["message"] = "0/3 nodes are available: 3 Insufficient memory."
    status, body = api.patch(path, {"$setElementOrder/conditions": [{"type": "PodScheduled"}],
                                    "status": {"conditions": [unschedulable]}})
    conditions = body["status"]["conditions"]
    check(status == 200 and len(conditions) == 2 and
          conditions[1]["message"].endswith("Insufficient memory.") and
          conditions[1].get("lastProbeTime") is None,
          f"conditions merged by type (replaced, not duplicated), got {conditions}")
    status, body = api.patch(path, {"status": {"phase": "Running"}},
                             content_type="application/merge-patch+json")
    check(status == 200 and body["status"]["phase"] == "Running" and
          len(body["status"]["conditions"]) == 2, f"merge patch on status, got {status}")
    status, body = api.patch(resource_path("pods", "default", "gone", "status"),
                             {"status": {}})
    check(status == 404, f"status patch of a missing pod: 404, got {status}")
    patches = [p for p in api.stats()["status_patches"] if p["name"] == "sp"]
    check(len(patches) == 4 and patches[1]["body"]["status"]["conditions"][0]["reason"] ==
          "Unschedulable" and patches[0]["ns"] == "default",
          f"status patches recorded with their bodies, got {len(patches)}")

    # podgroups/status and capacityqueues/status (custom resources keep kind in list items).
    api.bulk([{"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
               "metadata": {"name": "g", "namespace": "default"}, "spec": {"minMember": 2}},
              {"apiVersion": "scheduling.kcycle.io/v1alpha1", "kind": "CapacityQueue",
               "metadata": {"name": "q"}, "spec": {"quota": {"cpu": "10"}}}])
    status, body = api.patch("/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups/g"
                             "/status", {"status": {"phase": "Scheduling"}},
                             content_type="application/merge-patch+json")
    check(status == 200 and body["status"] == {"phase": "Scheduling"} and
          body["spec"] == {"minMember": 2}, f"podgroups/status merge patch, got {status} {body}")
    status, body = api.patch("/apis/scheduling.kcycle.io/v1alpha1/capacityqueues/q/status",
                             {"status": {"used": {"cpu": "2"}}})
    check(status == 200 and body["status"] == {"used": {"cpu": "2"}},
          f"capacityqueues/status patch, got {status} {body}")
    status, body = api.get("/apis/scheduling.kcycle.io/v1alpha1/capacityqueues")
    check(status == 200 and body["kind"] == "CapacityQueueList" and
          body["items"][0].get("kind") == "CapacityQueue",
          f"custom resource list items keep kind, got {status} {body.get('kind')}")


def check_leases(api):
    path = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "kcycle", "namespace": "kube-system"},
             "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15,
                      "renewTime": "2026-11-29T10:00:00.000000Z"}}
    status, created = api.post(path, lease)
    check(status == 201 and created["kind"] == "Lease", f"lease create: 201, got {status}")
    lease["spec"]["holderIdentity"] = "b"
    status, body = api.post(path, lease)
    check(status == 409 and body.get("reason") == "AlreadyExists" and
          body.get("message") == 'leases.coordination.k8s.io "kcycle" already exists',
          f"second create: 409 AlreadyExists, got {status} {body}")
    current = dict(created)
    current["spec"] = dict(created["spec"], renewTime="2026-11-29T10:00:02.000000Z")
    status, updated = api.put(path + "/kcycle", current)
    check(status == 200 and updated["metadata"]["resourceVersion"] !=
          created["metadata"]["resourceVersion"], f"update with the current rv: 200, "
          f"got {status}")
    stale = dict(created)
    stale["spec"] = dict(created["spec"], holderIdentity="b")
    status, body = api.put(path + "/kcycle", stale)
    check(status == 409 and body.get("reason") == "Conflict" and body.get("message") ==
          'Operation cannot be fulfilled on leases.coordination.k8s.io "kcycle": the object has '
          'been modified; please apply your changes to the latest version and try again',
          f"update with a stale rv: 409 with the kube message, got {status} {body}")
    writes = [(w["name"], w["holder"], w["code"]) for w in api.stats()["lease_writes"]]
    check(writes == [("kcycle", "a", 201), ("kcycle", "b", 409), ("kcycle", "a", 200),
                     ("kcycle", "b", 409)], f"lease writes recorded, got {writes}")


def check_faults(api):
    # Every 2nd binding attempt answers 409 without effect.
    api.reset_stats()
    api.bulk([pod(f"f{i}") for i in range(4)])
    api.faults(bind_conflict_every=2)
    codes = [api.post(bind_path(f"f{i}"), binding(f"f{i}", "n1"))[0] for i in range(4)]
    api.reset_faults()
    check(codes == [201, 409, 201, 409], f"bind_conflict_every=2: 201,409,201,409; got {codes}")
    unbound = [i for i in range(4) if not api.get_object("pods", f"f{i}")["spec"].get("nodeName")]
    check(unbound == [1, 3], f"injected conflicts leave the pod unbound, got {unbound}")
    api.faults(bind_unavailable_every=1)
    status, body = api.post(bind_path("f1"), binding("f1", "n1"))
    api.reset_faults()
    check(status == 503 and body.get("reason") == "ServiceUnavailable",
          f"bind_unavailable_every=1: 503, got {status}")

    # watch_cut_after_s: the stream dies without the terminating chunk.
    api.faults(watch_cut_after_s=0.5)
    started = time.monotonic()
    stream = RawStream(api, "/api/v1/nodes?watch=1&resourceVersion=0&timeoutSeconds=10")
    stream.read_to_end(5)
    elapsed = time.monotonic() - started
    api.reset_faults()
    check(stream.closed and not stream.terminated and 0.3 < elapsed < 3 and
          len(stream.events()) == 3,
          f"watch_cut_after_s=0.5 closes the stream abruptly after the events, got closed="
          f"{stream.closed} terminated={stream.terminated} after {elapsed:.1f}s")
    stream.close()

    # /fake/cut-watches
    stream = RawStream(api, "/api/v1/pods?watch=1&resourceVersion=0&timeoutSeconds=10")
    stream.read_until(lambda s: s.status == 200 and s.chunks, 5)
    api.wait_for(lambda: api.stats()["open_watches"] >= 1, 5, what="an open watch")
    cut = api.cut_watches()
    stream.read_to_end(5)
    check(cut >= 1 and stream.closed and not stream.terminated,
          f"cut-watches closes open watches abruptly, got cut={cut} closed={stream.closed} "
          f"terminated={stream.terminated}")
    stream.close()
    api.wait_for(lambda: api.stats()["open_watches"] == 0, 5, what="no open watches")
    check(True, "open_watches drops to 0 after the cut")

    # split_chunks: events across chunks and two events in a chunk, still a valid stream.
    api.faults(split_chunks=True)
    status, body = api.get("/api/v1/pods")
    want = sorted(f"{i['metadata']['namespace']}/{i['metadata']['name']}" for i in body["items"])
    stream = RawStream(api, "/api/v1/pods?watch=1&timeoutSeconds=1")
    stream.read_to_end(5)
    api.reset_faults()
    got = sorted(f"{e['object']['metadata']['namespace']}/{e['object']['metadata']['name']}"
                 for e in stream.events())
    partial = sum(1 for c in stream.chunks if not c.endswith(b"\n"))
    doubled = sum(1 for c in stream.chunks if c.count(b"\n") >= 2)
    check(stream.bad_framing is None and stream.terminated and got == want,
          f"split_chunks: the same {len(want)} events through valid framing, got {len(got)}")
    # the first event of a write is always cut and the next two always joined (fakeapi.py
    # write_chunks); how many chunks there are in all depends on random draws, so not asserted
    check(partial > 0 and doubled > 0,
          f"split_chunks: events cut across chunks ({partial}) and joined ({doubled})")
    stream.close()

    summary = api.stats(summary=True)
    check(summary["bindings"] == 2 and summary["binding_attempts"] == 5 and
          summary["open_watches"] == 0, f"stats summary counts, got {summary}")
    stats = api.stats()
    check(stats["requests"].get("create pods/binding", 0) >= 5 and
          stats["requests"].get("watch pods", 0) >= 1 and
          stats["requests"].get("list pods", 0) >= 1,
          f"request counters by verb and resource, got {stats['requests']}")


def check_served_and_slow_lists(api, tmp):
    """Resources not served (a cluster without the CRDs) and lists slow to answer."""
    crd_list = "/apis/scheduling.x-k8s.io/v1alpha1/podgroups"
    api.set_unserved(["scheduling.x-k8s.io/podgroups"])
    status, _ = api.get(crd_list)
    groups = [g["name"] for g in api.get("/apis")[1]["groups"]]
    check(status == 404 and "scheduling.x-k8s.io" not in groups and
          api.get("/apis/scheduling.x-k8s.io")[0] == 404,
          f"an unserved resource: 404 on its list ({status}) and gone from discovery {groups}")
    api.set_unserved([])
    check(api.get(crd_list)[0] == 200, "served again after /fake/served with []")
    status, _ = api.post("/fake/served", {"unserved": ["no.such/things"]})
    check(status == 400, f"an unknown resource to unserve: 400, got {status}")
    with fakeclient.FakeAPI(os.path.join(tmp, "bare"), extra_args=["--without-crds"]) as bare:
        groups = [g["name"] for g in bare.get("/apis")[1]["groups"]]
        lists = [bare.get(p)[0] for p in (crd_list,
                                          "/apis/scheduling.kcycle.io/v1alpha1/capacityqueues",
                                          "/apis/topology.node.k8s.io/v1alpha2/"
                                          "noderesourcetopologies", "/api/v1/pods")]
        check(lists == [404, 404, 404, 200] and not any(
            g in groups for g in ("scheduling.x-k8s.io", "scheduling.kcycle.io",
                                  "topology.node.k8s.io")),
              f"--without-crds: the three CRDs 404 and absent from discovery, pods served; got "
              f"{lists}, groups {groups}")

    # list_delay_ms holds a list's first page; clearing the fault answers it at once
    api.faults(list_delay_ms={"nodes": 700})
    started = time.monotonic()
    status = api.get("/api/v1/nodes")[0]
    elapsed = time.monotonic() - started
    check(status == 200 and elapsed >= 0.7, f"list_delay_ms=700: answered after {elapsed:.2f}s")
    api.faults(list_delay_ms={"nodes": 30000})
    before = api.stats()["requests"].get("list nodes", 0)
    answer = queue.Queue()

    def slow_list():
        conn = api.connect(timeout=40)
        try:
            conn.request("GET", "/api/v1/nodes", headers=api.headers())
            answer.put(conn.getresponse().status)
        finally:
            conn.close()
    thread = threading.Thread(target=slow_list, daemon=True)
    started = time.monotonic()
    thread.start()
    api.wait_for(lambda: api.stats()["requests"].get("list nodes", 0) > before, 5,
                 what="the held list to arrive")
    check(answer.empty(), "a list held by list_delay_ms answered before its delay")
    api.reset_faults()
    thread.join(10)
    elapsed = time.monotonic() - started
    check(not answer.empty() and answer.get() == 200 and elapsed < 10,
          f"a held list answers once the fault is cleared (after {elapsed:.1f}s)")


# ---------------------------------------------------------------------------------------------
# kubectl

def kubectl(kc, cache, *args, timeout=20):
    return subprocess.run(["kubectl", "--kubeconfig", kc, "--cache-dir", cache,
                           "--request-timeout=15s", *args],
                          capture_output=True, text=True, timeout=timeout)


def check_kubectl(api, tmp):
    if shutil.which("kubectl") is None:
        print("SKIP: kubectl not on PATH; kubectl checks skipped")
        return
    kc = api.kubeconfig(os.path.join(tmp, "kubeconfig"))
    cache = os.path.join(tmp, "kubectl-cache")
    status, body = api.get("/api/v1/pods")
    names = sorted(i["metadata"]["name"] for i in body["items"])

    run = kubectl(kc, cache, "get", "pods", "-A", "-o", "json")
    try:
        listed = sorted(i["metadata"]["name"] for i in json.loads(run.stdout)["items"])
    except (ValueError, KeyError):
        listed = None
    check(run.returncode == 0 and listed == names,
          f"kubectl get pods -A -o json lists {len(names)} pods, got rc={run.returncode} "
          f"{listed} {run.stderr[-500:]}")

    run = kubectl(kc, cache, "get", "pods", "-A")
    lines = run.stdout.splitlines()
    check(run.returncode == 0 and lines and lines[0].split()[:6] ==
          ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE"] and
          all(any(line.split()[1:2] == [n] for line in lines[1:]) for n in names),
          f"kubectl get pods -A prints the table with every pod, got rc={run.returncode} "
          f"{run.stdout[:300]!r} {run.stderr[-300:]}")

    run = kubectl(kc, cache, "get", "nodes")
    check(run.returncode == 0 and "n1" in run.stdout and "Ready" in run.stdout,
          f"kubectl get nodes, got rc={run.returncode} {run.stdout!r} {run.stderr[-300:]}")

    # get --watch: list, then watch; a pod created afterwards shows up.
    proc = subprocess.Popen(["kubectl", "--kubeconfig", kc, "--cache-dir", cache, "get", "pods",
                             "--watch"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()
    seen_header = seen_late = False
    try:
        deadline = time.monotonic() + 15
        created = False
        while time.monotonic() < deadline and not seen_late:
            try:
                line = lines.get(timeout=0.2)
            except queue.Empty:
                line = ""
            if line.startswith("NAME"):
                seen_header = True
            if seen_header and not created and api.stats()["open_watches"] >= 1:
                api.create(pod("watched-late"))
                created = True
            if "watched-late" in line:
                seen_late = True
    finally:
        proc.kill()
        proc.wait(5)
    check(seen_header and seen_late, f"kubectl get pods --watch prints a pod created after it "
          f"started (header={seen_header}, late={seen_late}) {proc.stderr.read()[-300:]}")
    try:
        api.wait_for(lambda: api.stats()["open_watches"] == 0, 5, what="the watch to close")
        check(True, "the server notices kubectl went away and ends its watch")
    except fakeclient.FakeAPIError as err:
        check(False, f"the server ends the watch of a killed kubectl: {err}")

    manifest = os.path.join(tmp, "pod.yaml")
    with open(manifest, "w") as f:
        f.write("apiVersion: v1\nkind: Pod\nmetadata:\n  name: from-kubectl\n  labels:\n"
                "    made-by: kubectl\nspec:\n  containers:\n  - name: c\n"
                "    image: registry.k8s.io/pause:3.10\n")
    run = kubectl(kc, cache, "create", "-f", manifest, "--validate=false")
    made = api.get_object("pods", "from-kubectl")
    check(run.returncode == 0 and "pod/from-kubectl created" in run.stdout and made and
          made["metadata"]["labels"] == {"made-by": "kubectl"},
          f"kubectl create -f: the pod exists, got rc={run.returncode} {run.stdout!r} "
          f"{run.stderr[-300:]}")
    run = kubectl(kc, cache, "delete", "pod", "from-kubectl")
    check(run.returncode == 0 and '"from-kubectl" deleted' in run.stdout and
          api.get_object("pods", "from-kubectl") is None,
          f"kubectl delete pod: gone, got rc={run.returncode} {run.stdout!r} {run.stderr[-300:]}")


def check_sigterm(api):
    stream = RawStream(api, "/api/v1/pods?watch=1&resourceVersion=0")
    stream.read_until(lambda s: s.status == 200 and s.chunks, 5)
    started = time.monotonic()
    api.process.send_signal(signal.SIGTERM)
    try:
        code = api.process.wait(5)
    except subprocess.TimeoutExpired:
        code = None
    elapsed = time.monotonic() - started
    stream.read_to_end(2)
    check(code == 0 and elapsed < 3, f"SIGTERM: exit 0 promptly, got {code} after "
          f"{elapsed:.1f}s")
    check(stream.terminated, "SIGTERM ends open watches with the terminating chunk")
    stream.close()


def main():
    with tempfile.TemporaryDirectory(prefix="test-fakeapi-") as tmp:
        api = fakeclient.FakeAPI(os.path.join(tmp, "server"), start_timeout=15)
        api.start()
        try:
            check_auth(api)
            list_rv = check_list_and_paging(api)
            check_watch(api, list_rv)
            check_expired(api)
            check_binding(api)
            check_status_patch(api)
            check_leases(api)
            check_faults(api)
            check_served_and_slow_lists(api, tmp)
            check_kubectl(api, tmp)
            check_sigterm(api)
        except Exception as err:  # an unexpected error is a failure with a clear message
            import traceback
            traceback.print_exc()
            check(False, f"unexpected {type(err).__name__}: {err}")
        finally:
            api.stop()
            if FAILURES:
                with open(api.log_path, errors="replace") as f:
                    print("--- fakeapi log (tail) ---\n" + f.read()[-3000:])
    print(f"fakeapi: {PASSED[0]} checks passed, {len(FAILURES)} failed")
    return 1 if FAILURES or PASSED[0] == 0 else 0  # a run that checked nothing fails


if __name__ == "__main__":
    sys.exit(main())
