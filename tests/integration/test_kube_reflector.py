#!/usr/bin/env python3
"""The kube reflector (runtime/kube) against the fake API server, through tests/kube/kube_probe.

Pods are created, updated, deleted and re-created under the same name through the API while the
probe lists and watches them, with events split across HTTP chunks, watches cut by the server,
and the watch history compacted (forcing 410 and relists). What the probe reports must be the
server's history as a client sees it:
  - while the watch only resumes (cuts, timeouts) every change of every pod arrives exactly
    once, in order, with the right type (checked event for event);
  - across relists changes may be collapsed, but every reported state is one the pod really
    had, resourceVersions only go forward (no event twice), a pod deleted while the client
    relisted is reported DELETED, and re-created pods are DELETED then ADDED;
  - at the end the probe's view equals the server's list.
Also: bearer token rotation through a token file (the client recovers after a 401), client
certificates and base64 data from a kubeconfig, plain HTTP, the field selector, and a prompt
stop. Every wait is bounded.

usage: test_kube_reflector.py --probe PATH --fakeapi DIR"""

import argparse
import base64
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"
# The probe runs under memcheck in `meson test --setup valgrind`: many times slower.
SCALE = 20 if os.environ.get("KCYCLE_TEST_WRAPPER") else 1
# A stop is seen within a second (a transfer polls the flag between short waits); under
# memcheck, with both cores busy, closing the transfer and the TLS connection takes longer.
STOP_MS = 1000 * SCALE
# ... and a first TLS handshake can outlast the client's 5 s connect timeout: --get requests
# that time out are sent again (the probe says so on stderr)
RETRIES = ["--timeout-retries", "2"] if SCALE > 1 else []


class TestFailure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise TestFailure(message)


class Probe:
    """One kube_probe process; its JSON lines are collected by a reader thread."""

    def __init__(self, binary, args, log_path):
        self.log = open(log_path, "wb")
        self.out = open(log_path + ".out", "wb")  # a copy of what it printed, for failures
        self.process = subprocess.Popen([binary] + args, stdout=subprocess.PIPE,
                                        stderr=self.log, stdin=subprocess.DEVNULL)
        self.lines = []
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for raw in self.process.stdout:
            self.out.write(raw)
            self.out.flush()
            try:
                line = json.loads(raw)
            except ValueError:
                line = {"type": "GARBAGE", "text": raw.decode(errors="replace")}
            with self.lock:
                self.lines.append(line)

    def snapshot(self):
        with self.lock:
            return list(self.lines)

    def events(self):
        return [l for l in self.snapshot() if l["type"] in ("ADDED", "MODIFIED", "DELETED")]

    def wait_for(self, predicate, timeout, what):
        timeout *= SCALE
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate(self.snapshot()):
                return
            if self.process.poll() is not None:
                time.sleep(0.2)  # let the reader finish
                if predicate(self.snapshot()):
                    return
                raise TestFailure(f"probe exited with {self.process.returncode} while waiting "
                                  f"for {what}")
            time.sleep(0.05)
        raise TestFailure(f"timed out after {timeout}s waiting for {what}")

    def stop(self, timeout=10, counters=True):
        timeout *= SCALE  # memcheck's leak check at exit takes seconds of its own
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)
            raise TestFailure("the probe did not stop within %ss of SIGTERM" % timeout)
        self.reader.join(5)
        self.log.close()
        self.out.close()
        check(self.process.returncode == 0, f"probe exited with {self.process.returncode}")
        if not counters:
            return None
        counters = [l for l in self.snapshot() if l["type"] == "COUNTERS"]
        check(len(counters) == 1, "the probe printed no counters line")
        return counters[0]


def key_of(obj):
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}"


class History:
    """What the server did to each pod, from the responses of our own writes (one writer)."""

    def __init__(self, api):
        self.api = api
        self.by_key = {}   # key -> [(type, uid, rv, step)]
        self.live = {}     # key -> uid
        self.step = 0
        self.fresh = 0  # pods created by churn so far, for unique names

    def _record(self, etype, obj):
        meta = obj["metadata"]
        key = key_of(obj)
        step = (meta.get("labels") or {}).get("step")
        self.by_key.setdefault(key, []).append((etype, meta["uid"], meta["resourceVersion"],
                                                step))
        if etype == "DELETED":
            self.live.pop(key, None)
        else:
            self.live[key] = meta["uid"]

    def record_existing(self, obj):
        self._record("ADDED", obj)

    def next_step(self):
        self.step += 1
        return str(self.step)

    def create(self, name, **kw):
        labels = dict(kw.pop("labels", {}) or {})
        labels["step"] = self.next_step()
        obj = self.api.create(self.fc.pod(name, labels=labels, **kw))
        self._record("ADDED", obj)
        return obj

    def update(self, key):
        namespace, name = key.split("/")
        status, obj = self.api.patch(self.fc.resource_path("Pod", namespace, name),
                                     {"metadata": {"labels": {"step": self.next_step()}}})
        check(status == 200, f"patch {key}: HTTP {status}: {obj}")
        self._record("MODIFIED", obj)

    def delete(self, key):
        namespace, name = key.split("/")
        status, obj = self.api.delete(self.fc.resource_path("Pod", namespace, name))
        check(status == 200, f"delete {key}: HTTP {status}: {obj}")
        self._record("DELETED", obj)

    def recreate(self, key):
        self.delete(key)
        self.create(key.split("/")[1])


def churn(history, rng, prefix, seconds, api, cut_every=0.0):
    """Random writes on the pods named prefix-*, for about `seconds`."""
    end = time.monotonic() + seconds
    next_cut = time.monotonic() + cut_every if cut_every else None
    while time.monotonic() < end:
        keys = sorted(k for k in history.live if k.split("/")[1].startswith(prefix))
        roll = rng.random()
        if not keys or roll < 0.15:
            history.fresh += 1
            history.create(f"{prefix}new-{history.fresh}")
        elif roll < 0.65:
            history.update(rng.choice(keys))
        elif roll < 0.80:
            history.delete(rng.choice(keys))
        else:
            history.recreate(rng.choice(keys))
        if next_cut is not None and time.monotonic() >= next_cut:
            api.cut_watches()
            next_cut = time.monotonic() + cut_every
        time.sleep(rng.uniform(0, 0.01))


def replay(events):
    """The probe's view (key -> (uid, rv)) after its events; checks every transition is one a
    client can see: ADDED of an absent key, MODIFIED/DELETED of a present one with its uid."""
    view = {}
    for e in events:
        key, uid = e["key"], e["uid"]
        check(not e.get("uid_mismatch"), f"event {e}: the object's uid is not the one reported")
        if e["type"] == "ADDED":
            check(key not in view, f"ADDED {key} while the probe already had it: {e}")
            view[key] = (uid, e["rv"])
        elif e["type"] == "MODIFIED":
            check(key in view and view[key][0] == uid,
                  f"MODIFIED {key} uid {uid} but the probe had {view.get(key)}: {e}")
            view[key] = (uid, e["rv"])
        else:
            check(key in view and view[key][0] == uid,
                  f"DELETED {key} uid {uid} but the probe had {view.get(key)}: {e}")
            del view[key]
    return view


def server_view(api, fc):
    items = api.list_objects("Pod")["items"]
    return {key_of(o): (o["metadata"]["uid"], o["metadata"]["resourceVersion"]) for o in items}


def per_key(events, prefix):
    out = {}
    for e in events:
        if e["key"].split("/")[1].startswith(prefix):
            out.setdefault(e["key"], []).append(e)
    return out


def check_exact(events, history, prefix):
    """Every change of every prefix-* pod seen exactly once, in order, with its type."""
    seen = per_key(events, prefix)
    keys = [k for k in history.by_key if k.split("/")[1].startswith(prefix)]
    check(keys, f"no {prefix}* pods in the history")
    for key in keys:
        want = history.by_key[key]
        got = [(e["type"], e["uid"], e["rv"], e.get("step")) for e in seen.get(key, [])]
        check(got == want, f"{key}: the probe saw\n  {got}\nbut the server did\n  {want}")
    extra = set(seen) - set(keys)
    check(not extra, f"events for pods the server never had: {sorted(extra)}")
    return sum(len(history.by_key[k]) for k in keys)


def check_collapsed(events, history, prefix):
    """Across relists: every reported state is real, RVs per key only go forward, deletes are
    of uids the server deleted."""
    seen = per_key(events, prefix)
    relist_deletes = 0
    for key, evs in seen.items():
        states = {(uid, rv): step for t, uid, rv, step in history.by_key.get(key, [])
                  if t != "DELETED"}
        deletes = {(uid, rv) for t, uid, rv, step in history.by_key.get(key, [])
                   if t == "DELETED"}
        deleted_uids = {uid for uid, rv in deletes}
        last_rv = 0
        for e in evs:
            if e["rv"] is not None:
                rv = int(e["rv"])
                check(rv > last_rv, f"{key}: resourceVersion {rv} after {last_rv}: {e} "
                      "(an event twice or out of order)")
                last_rv = rv
            if e["type"] == "DELETED":
                if e.get("relist"):
                    relist_deletes += 1
                    check(e["uid"] in deleted_uids,
                          f"{key}: relist reported uid {e['uid']} deleted, the server did not")
                else:
                    check((e["uid"], e["rv"]) in deletes,
                          f"{key}: DELETED {e} is not a delete the server did")
            else:
                check((e["uid"], e["rv"]) in states,
                      f"{key}: {e['type']} of a state the pod never had: {e}")
                check(states[(e["uid"], e["rv"])] == e.get("step"),
                      f"{key}: the object of {e} is not the one of that resourceVersion")
    return relist_deletes


def write_token(path, token):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(token + "\n")
    os.replace(tmp, path)  # as the kubelet does: the reader never sees half a token


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--probe", required=True)
    parser.add_argument("--fakeapi", required=True, help="the tests/fakeapi folder")
    args = parser.parse_args()
    sys.path.insert(0, args.fakeapi)
    import fakeclient as fc
    History.fc = fc

    workdir = tempfile.mkdtemp(prefix="kcycle-kube-reflector-")
    ok = False
    api = fc.FakeAPI(os.path.join(workdir, "fake"), token="token-1", bookmark_interval=0.3)
    probe = None
    try:
        api.start()
        history = History(api)
        rng = random.Random(20240607)
        token_file = os.path.join(workdir, "token")
        write_token(token_file, "token-1")

        # The pods before the probe starts, one with a character JSON spells as a surrogate
        # pair: it must load like any other, not count as a bad object.
        initial = [fc.pod(f"a-{i:03d}", labels={"step": "0"}) for i in range(119)]
        initial.append(fc.pod("a-emoji", labels={"step": "0"},
                              annotations={"note": "\U0001F600 caf\u00e9 \"q\" \\ {}"}))
        created = api.bulk(initial)
        check(created["created"] == 120, f"bulk: {created}")
        for obj in api.list_objects("Pod")["items"]:
            history.record_existing(obj)

        probe = Probe(args.probe, ["--server", api.url, "--ca", fc.CA_FILE,
                                   "--token-file", token_file, "--resource", "pods",
                                   "--page-size", "25", "--watch-timeout", "3",
                                   "--seconds", str(100 * SCALE)],
                      os.path.join(workdir, "probe.log"))
        probe.wait_for(lambda ls: any(l["type"] == "SYNCED" for l in ls), 20, "the first sync")
        check(len(probe.events()) == 120, f"first list: {len(probe.events())} events, want 120")

        # Phase 1: the watch is cut (by us, and by the server mid-event) and times out, events
        # are split across chunks; it only ever resumes, so nothing may be collapsed.
        api.faults(split_chunks=True)
        churn(history, rng, "a-", 3.0, api, cut_every=0.6)
        api.faults(watch_cut_after_s=0.5)
        churn(history, rng, "a-", 2.5, api)
        api.faults(watch_cut_after_s=None)
        want = server_view(api, fc)
        probe.wait_for(lambda ls: replay(probe.events()) == want, 20,
                       "the probe to catch up after phase 1")
        exact = check_exact(probe.events(), history, "a-")
        print(f"phase 1: {exact} changes of a-* pods seen exactly, through cuts and split chunks")

        # Phase 2: compaction makes resumes fail with 410; pods deleted or re-created while
        # the probe is away must come out of the relist as DELETED (and ADDED).
        for i in range(40):
            history.create(f"b-{i:03d}")
        relist_deletes = 0
        for attempt in range(12):
            churn(history, rng, "b-", 0.4, api)
            api.cut_watches()
            keys = sorted(k for k in history.live if k.split("/")[1].startswith("b-"))
            history.update(keys[0])  # the probe's resourceVersion is now behind
            api.compact()
            history.delete(keys[1])
            history.delete(keys[2])
            history.recreate(keys[3])
            probe.wait_for(lambda ls: replay(probe.events()) == server_view(api, fc), 20,
                           "the probe to catch up after a compaction")
            relist_deletes = check_collapsed(probe.events(), history, "b-")
            if attempt >= 3 and relist_deletes >= 2:
                break
        check(relist_deletes >= 2, f"only {relist_deletes} deletes came from relists")
        print(f"phase 2: {relist_deletes} deletes found by relists after compaction")

        # A compaction in the middle of a paged relist expires its continue token (410): the
        # list starts over. Pages are slowed down so the relist is still running.
        relists_seen = sum("too old (410)" in l.get("message", "") for l in probe.snapshot())
        api.cut_watches()
        keys = sorted(k for k in history.live if k.split("/")[1].startswith("b-"))
        history.update(keys[0])
        api.faults(slow_ms=250)
        pages = api.stats()["requests"].get("list pods", 0)
        api.compact()
        probe.wait_for(lambda ls: sum("too old (410)" in l.get("message", "") for l in ls) >
                       relists_seen, 10, "the watch to expire")
        # a page into the relist, polled on the server's count of list pages rather than slept
        # (a busy machine or valgrind may not have asked for the first page yet)
        deadline = time.monotonic() + 30 * SCALE
        while (api.stats()["requests"].get("list pods", 0) <= pages and
               time.monotonic() < deadline):
            time.sleep(0.02)
        history.delete(keys[1])
        api.compact()
        probe.wait_for(lambda ls: any("continue token expired" in l.get("message", "")
                                      for l in ls), 15, "the relist to start over after 410")
        api.faults(slow_ms=0)
        probe.wait_for(lambda ls: replay(probe.events()) == server_view(api, fc), 20,
                       "the probe to catch up after the restarted list")
        check_collapsed(probe.events(), history, "b-")
        print("paged relist: a 410 on the continue token starts the list over")

        # Token rotation, file first: the next request gets 401 with the old token, re-reads
        # the file and succeeds.
        write_token(token_file, "token-2")
        api.set_tokens(["token-2"])
        api.token = "token-2"
        api.close()
        api.cut_watches()
        history.create("c-after-rotation")
        probe.wait_for(lambda ls: any(l.get("key") == "default/c-after-rotation" for l in ls),
                       10, "a pod created after the token rotated")
        # Server first: requests fail with 401 until the file has the new token too.
        api.set_tokens(["token-3"])
        api.token = "token-3"
        api.close()
        api.cut_watches()
        probe.wait_for(lambda ls: any("401" in l.get("message", "") for l in ls), 10,
                       "the probe to report the 401")
        write_token(token_file, "token-3")
        history.create("c-after-rotation-2")
        probe.wait_for(lambda ls: any(l.get("key") == "default/c-after-rotation-2" for l in ls),
                       15, "a pod created after the server's token changed first")
        print("token rotation: recovered after 401 both ways")

        # An object the JSON loader refuses (a NUL in a string, which no C string can carry;
        # the real API server never sends one, the fake does not care) is skipped with a
        # warning that names it and the position, and its resourceVersion still counts: a
        # resumed watch does not send it again. No bookmarks meanwhile, so only the skipped
        # event itself can move the probe's resourceVersion past it.
        api.faults(bookmark_interval_s=1000)
        history.create("bad-nul", annotations={"example.com/nul": "a\u0000b"})

        def bad_warnings(lines, where):
            return [l for l in lines if l["type"] == "WARN" and
                    "Pod default/bad-nul" in l["message"] and where in l["message"]]
        probe.wait_for(lambda ls: bad_warnings(ls, "Pod watch event:1:"), 10,
                       "a warning naming the unreadable pod and its position")
        api.cut_watches()
        history.create("c-after-bad")
        probe.wait_for(lambda ls: any(l.get("key") == "default/c-after-bad" for l in ls), 10,
                       "a pod created after the unreadable one")
        check(len(bad_warnings(probe.snapshot(), "")) == 1,
              "the unreadable pod came again after a resume: its resourceVersion was lost")
        # In a relist it is skipped the same way, and not taken for deleted.
        api.cut_watches()
        history.update("default/c-after-bad")  # the probe's resourceVersion is now behind
        api.compact()
        probe.wait_for(lambda ls: bad_warnings(ls, "Pod list item:1:"), 15,
                       "the unreadable pod skipped in a relist")
        history.delete("default/bad-nul")
        history.create("c-after-bad-delete")  # events come in order: the delete was read
        probe.wait_for(lambda ls: any(l.get("key") == "default/c-after-bad-delete" for l in ls),
                       10, "a pod created after the unreadable one was deleted")
        api.faults(bookmark_interval_s=None)
        check(not any(l.get("key") == "default/bad-nul" for l in probe.snapshot()),
              "an event was reported for the unreadable pod")
        print("bad objects: skipped with their name and position, resourceVersion kept")

        want = server_view(api, fc)
        probe.wait_for(lambda ls: replay(probe.events()) == want, 20, "the final view")
        check_exact(probe.events(), history, "a-")  # relists never touched the a-* pods
        check_collapsed(probe.events(), history, "b-")
        check_collapsed(probe.events(), history, "c-")
        counters = probe.stop()
        probe = None
        print("counters:", json.dumps(counters))
        check(counters["relists_after_expired"] >= 2, f"no relists after 410: {counters}")
        # the unreadable pod: once in its ADDED event, once in the relist, once deleted
        check(counters["bad_objects"] == 3, f"bad objects: {counters}")
        check(counters["bookmarks"] >= 1, f"no bookmarks: {counters}")
        check(counters["watches"] > counters["lists"], f"watches did not resume: {counters}")
        check(counters["stop_ms"] < STOP_MS, f"stopping took {counters['stop_ms']} ms")

        run_side_checks(args, fc, api, workdir, history)
        ok = True
    except (TestFailure, fc.FakeAPIError) as err:
        print(f"FAIL: {err}", file=sys.stderr)
    finally:
        if probe is not None:
            try:
                probe.stop()
            except TestFailure:
                pass
        api.stop()
        if ok:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"logs kept in {workdir}", file=sys.stderr)
    return 0 if ok else 1


def run_side_checks(args, fc, api, workdir, history):
    # kube_request: a 401 re-reads the token file and retries once, invisibly to the caller.
    token_file = os.path.join(workdir, "token-get")
    write_token(token_file, "token-3")
    get = Probe(args.probe, ["--server", api.url, "--ca", fc.CA_FILE, "--token-file",
                             token_file, "--get", "/api/v1/namespaces", "--repeat", "12", *RETRIES],
                os.path.join(workdir, "get.log"))
    get.wait_for(lambda ls: len(ls) >= 2, 10, "the first responses")
    write_token(token_file, "token-4")
    api.set_tokens(["token-4"])
    api.token = "token-4"
    api.close()
    get.wait_for(lambda ls: len(ls) >= 12 or get.process.poll() is not None, 15,
                 "all responses")
    get.stop(counters=False)
    lines = get.snapshot()
    check(len(lines) == 12 and all(l.get("status") == 200 for l in lines),
          f"kube_request across a token rotation: {lines}")
    print("kube_request: 12 requests across a token rotation, all 200")

    # Client certificates and CA as base64 data in a kubeconfig (the *_BLOB options).
    def b64(path):
        with open(path, "rb") as f:
            return base64.b64encode(f.read()).decode()
    kubeconfig = os.path.join(workdir, "kubeconfig")
    with open(kubeconfig, "w") as f:
        f.write("apiVersion: v1\nkind: Config\ncurrent-context: fake\nclusters:\n- name: fake\n"
                f"  cluster:\n    server: {api.url}\n"
                f"    certificate-authority-data: {b64(fc.CA_FILE)}\n"
                "users:\n- name: fake\n  user:\n"
                f"    client-certificate-data: {b64(fc.CLIENT_CERT)}\n"
                f"    client-key-data: {b64(fc.CLIENT_KEY)}\n"
                "contexts:\n- name: fake\n  context: {cluster: fake, user: fake}\n")
    result = subprocess.run([args.probe, "--kubeconfig", kubeconfig, "--get", "/api/v1/pods",
                             *RETRIES],
                            capture_output=True, timeout=20 * SCALE)
    line = json.loads(result.stdout.splitlines()[0]) if result.stdout else {}
    check(result.returncode == 0 and line.get("status") == 200,
          f"client certificate from kubeconfig data: {result}")
    # Without our CA the server is refused: verification is on.
    result = subprocess.run([args.probe, "--server", api.url, "--token", "token-4",
                             "--get", "/api/v1/pods", *RETRIES], capture_output=True,
                            timeout=20 * SCALE)
    line = json.loads(result.stdout.splitlines()[0]) if result.stdout else {}
    check(result.returncode == 1 and line.get("type") == "ERROR" and
          "certificate" in line.get("message", ""),
          f"an unknown CA must be refused: {result}")
    print("TLS: client certificate data accepted, unknown CA refused")

    # The scheduler's field selector, URL-encoded: a pod that finishes leaves the watch as
    # DELETED.
    watch = Probe(args.probe, ["--server", api.url, "--ca", fc.CA_FILE, "--token", "token-4",
                               "--field-selector", FIELD_SELECTOR, "--seconds", str(30 * SCALE)],
                  os.path.join(workdir, "selector.log"))
    watch.wait_for(lambda ls: any(l["type"] == "SYNCED" for l in ls), 10, "selector sync")
    obj = history.create("s-finishes")
    watch.wait_for(lambda ls: any(l.get("key") == "default/s-finishes" for l in ls), 10,
                   "the selected pod")
    status, body = api.patch(fc.resource_path("Pod", "default", "s-finishes", "status"),
                             {"status": {"phase": "Succeeded"}})
    check(status == 200, f"status patch: {status} {body}")
    watch.wait_for(lambda ls: any(l.get("key") == "default/s-finishes" and
                                  l["type"] == "DELETED" for l in ls), 10,
                   "the finished pod to leave the selection")
    counters = watch.stop()
    check(counters["bad_objects"] == 0 and counters["stop_ms"] < STOP_MS, f"selector: {counters}")
    print("field selector: a finished pod leaves as DELETED")

    # Plain HTTP.
    with fc.FakeAPI(os.path.join(workdir, "plain"), plain_http=True) as plain:
        result = subprocess.run([args.probe, "--server", plain.url, "--token", plain.token,
                                 "--get", "/api/v1/nodes", *RETRIES], capture_output=True,
                                timeout=20 * SCALE)
        line = json.loads(result.stdout.splitlines()[0]) if result.stdout else {}
        check(result.returncode == 0 and line.get("status") == 200, f"plain http: {result}")
    print("plain http: ok")
    check_not_served(args, fc, api, workdir)


def check_not_served(args, fc, api, workdir):
    """A CRD that goes away (404 on its watch and list) is reported not served, once and
    without warnings, its objects deleted; served again, it is listed again."""
    group = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
             "metadata": {"name": "g1", "namespace": "default"}, "spec": {"minMember": 2}}
    api.create(group)
    probe = Probe(args.probe, ["--server", api.url, "--ca", fc.CA_FILE, "--token", api.token,
                               "--resource", "podgroups", "--seconds", str(60 * SCALE)],
                  os.path.join(workdir, "not-served.log"))

    def seen(kind, key=None, after=0):
        return lambda ls: any(l["type"] == kind and (key is None or l.get("key") == key)
                              for l in ls[after:])
    probe.wait_for(seen("ADDED", "default/g1"), 10, "the PodGroup listed")
    api.set_unserved(["scheduling.x-k8s.io/podgroups"])
    api.cut_watches()
    probe.wait_for(seen("NOT_SERVED"), 15, "the PodGroups reported not served")
    lines = probe.snapshot()
    gone = [l for l in lines if l["type"] == "DELETED" and l.get("key") == "default/g1"]
    check(len(gone) == 1 and gone[0].get("relist"), f"the PodGroup of a resource no longer "
          f"served is deleted once: {gone}")
    warned = [l for l in lines if l["type"] == "WARN" and "404" in l.get("message", "")]
    check(not warned, f"a resource not served is not a warning: {warned}")
    mark = len(lines)
    api.set_unserved([])
    probe.wait_for(seen("ADDED", "default/g1", mark), 20, "the PodGroup listed again once "
                   "the resource is served")
    probe.wait_for(seen("SYNCED", None, mark), 5, "the relist synced")
    nots = [l for l in probe.snapshot() if l["type"] == "NOT_SERVED"]
    counters = probe.stop()
    check(counters["store"] == 1, f"the store holds the PodGroup again: {counters}")
    api.delete_object("podgroups", "g1")
    print(f"not served: a PodGroup deleted with its resource ({len(nots)} not-served lists "
          "while it was gone), listed again when served")


if __name__ == "__main__":
    sys.exit(main())
