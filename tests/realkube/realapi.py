"""The fake API server's test interface (tests/fakeapi/fakeclient.FakeAPI) on a real control
plane, so that tests written against the fake run unchanged against kube-apiserver:
objects, lists and watches go to the real server as system:masters; kubeconfig() hands out the
manifests' ServiceAccount; stats() reads who bound, patched, wrote events and leases from the
API server's audit log instead of the fake's own record; compact() compacts etcd and restarts
kube-apiserver. Fault injection (409/503 on bindings, split chunks) exists only in the fake.

kube_bin() finds the binaries `./dev.sh kube` built, or says why there are none."""

import calendar
import collections
import concurrent.futures
import os
import re
import time

import cluster

HERE = os.path.dirname(os.path.abspath(__file__))


def kube_version():
    with open(os.path.join(HERE, "go.mod")) as f:
        match = re.search(r"^\s*k8s\.io/kubernetes (v[0-9.]+)$", f.read(), re.M)
    return match.group(1)


def kube_bin():
    """(folder, None) when the four binaries are there, else (None, why)."""
    folder = os.environ.get("KCYCLE_KUBE_BIN")
    if not folder:
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
        folder = os.path.join(cache, "kcycle", f"kube-{kube_version()}", "bin")
    missing = [b for b in ("etcd", "kube-apiserver", "kube-scheduler", "kubectl")
               if not os.access(os.path.join(folder, b), os.X_OK)]
    if missing:
        return None, (f"no {', '.join(missing)} in {folder}: run ./dev.sh kube (needs Go and "
                      "the Go module proxy)")
    return folder, None


def parse_time(stamp):
    """An RFC 3339 audit timestamp as seconds since the epoch."""
    main, _, frac = stamp.rstrip("Z").partition(".")
    seconds = calendar.timegm(time.strptime(main, "%Y-%m-%dT%H:%M:%S"))
    return seconds + (float("0." + frac) if frac else 0.0)


class RealAPI:
    real = True
    lease_namespace = cluster.SA_NAMESPACE
    lease_name = cluster.LEASE_NAME

    def __init__(self, bindir, source, workdir, watch_cache=True, drop_rule=None):
        self.cp = cluster.ControlPlane(bindir, source, os.path.join(workdir, "cluster"),
                                       watch_cache=watch_cache, drop_rule=drop_rule)
        self.namespaces = set()
        self.audit_offset = 0
        self.records = self.empty_stats()
        # audit times are wall clock; the tests compare them with time.monotonic()
        self.clock_offset = time.time() - time.monotonic()

    @classmethod
    def on(cls, cp):
        """The object calls (bulk, lists, gets) on a control plane the caller runs."""
        api = cls.__new__(cls)
        api.cp, api.namespaces = cp, set()
        return api

    def __enter__(self):
        self.cp.start()
        return self

    def __exit__(self, *exc):
        self.cp.stop()

    # -- objects, through the real server --

    def request(self, method, path, body=None, **kw):
        return self.cp.admin.request(method, path, body, **kw)

    def get(self, path, query=None):
        if query:
            from urllib.parse import urlencode
            path += ("&" if "?" in path else "?") + urlencode(query)
        return self.request("GET", path)

    def expect(self, status, result, what):
        if result[0] != status:
            raise cluster.ClusterError(f"{what}: expected HTTP {status}, got {result[0]}: "
                                       f"{result[1]}")
        return result[1]

    def get_object(self, what, name, namespace="default"):
        import fakeclient
        status, body = self.get(fakeclient.resource_path(what, namespace, name))
        return None if status == 404 else self.expect(200, (status, body), f"get {name}")

    def list_objects(self, what, namespace=None, **query):
        import fakeclient
        return self.expect(200, self.get(fakeclient.resource_path(what, namespace),
                                         query or None), f"list {what}")

    def ensure_namespace(self, client, name):
        if name in self.namespaces:
            return
        status, body = client.request("POST", "/api/v1/namespaces", {
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        if status not in (201, 409):
            raise cluster.ClusterError(f"create namespace {name}: {status} {body}")
        self.namespaces.add(name)

    def create_all(self, client, items):
        import fakeclient
        for obj in items:
            ns = obj["metadata"].get("namespace")
            _, _, namespaced = fakeclient.KINDS[obj["kind"]]
            if namespaced:
                ns = ns or "default"
                self.ensure_namespace(client, ns)
            path = fakeclient.resource_path(obj["kind"], ns if namespaced else None,
                                            api_version=obj["apiVersion"])
            status, body = client.request("POST", path, obj)
            if status != 201:
                raise cluster.ClusterError(f"create {obj['kind']} {ns}/"
                                           f"{obj['metadata']['name']}: {status} {body}")

    def bulk(self, items, workers=4):
        """Create items (namespaces on demand) with a few connections in parallel; the kinds
        in order, so that nodes exist before the pods that run on them."""
        items = list(items)
        for ns in {i["metadata"].get("namespace") for i in items} - {None}:
            self.ensure_namespace(self.cp.admin, ns)
        by_kind = collections.OrderedDict()
        for obj in items:
            by_kind.setdefault(obj["kind"], []).append(obj)
        clients = [cluster.Client(self.cp.port, f"{self.cp.pki}/ca.crt",
                                  f"{self.cp.pki}/admin.crt", f"{self.cp.pki}/admin.key")
                   for _ in range(workers)]
        try:
            with concurrent.futures.ThreadPoolExecutor(workers) as pool:
                for objs in by_kind.values():
                    parts = [objs[i::workers] for i in range(workers)]
                    for f in [pool.submit(self.create_all, c, p) for c, p in zip(clients, parts)]:
                        f.result()
        finally:
            for c in clients:
                c.close()
        return {"created": len(items)}

    def kubeconfig(self, path, **_):
        return self.cp.sa_kubeconfig(path)

    # -- what the fake records, read from the audit log --

    @staticmethod
    def empty_stats():
        return {"binding_attempts": [], "bindings": [], "status_patches": [], "events": [],
                "lease_writes": [], "requests": {}}

    def read_audit(self):
        import json
        try:
            with open(self.cp.audit_log, "rb") as f:
                f.seek(self.audit_offset)
                data = f.read()
        except FileNotFoundError:
            return
        end = data.rfind(b"\n") + 1
        self.audit_offset += end
        for line in data[:end].splitlines():
            self.record(json.loads(line))

    def record(self, ev):
        ref = ev.get("objectRef") or {}
        verb, code = ev.get("verb"), (ev.get("responseStatus") or {}).get("code", 0)
        when = parse_time(ev["stageTimestamp"]) - self.clock_offset
        ua, body = ev.get("userAgent", ""), ev.get("requestObject") or {}
        resource = ref.get("resource", "") + ("/" + ref["subresource"]
                                              if ref.get("subresource") else "")
        key = f"{verb} {resource}"
        rec = self.records
        rec["requests"][key] = rec["requests"].get(key, 0) + 1
        ns, name = ref.get("namespace"), ref.get("name")
        if resource in ("pods/binding", "bindings") and verb == "create":
            meta = body.get("metadata") or {}
            attempt = {"ns": ns, "name": name or meta.get("name"), "uid": meta.get("uid"),
                       "node": (body.get("target") or {}).get("name"), "code": code,
                       "time": when, "user_agent": ua}
            rec["binding_attempts"].append(attempt)
            if code == 201:
                rec["bindings"].append(dict(attempt))
        elif resource == "pods/status":
            rec["status_patches"].append({"ns": ns, "name": name, "verb": verb, "code": code,
                                          "time": when})
        elif resource == "events" and verb == "create" and code == 201:
            rec["events"].append(body)
        elif resource == "leases" and verb in ("create", "update"):
            rec["lease_writes"].append({"ns": ns, "name": name or body.get("metadata", {})
                                        .get("name"), "verb": verb, "code": code, "time": when,
                                        "holder": (body.get("spec") or {})
                                        .get("holderIdentity") or ""})

    def stats(self, summary=False):
        self.read_audit()
        rec = self.records
        if summary:
            return {k: (v if isinstance(v, dict) else len(v)) for k, v in rec.items()}
        return {k: (dict(v) if isinstance(v, dict) else list(v)) for k, v in rec.items()}

    def faults(self, **_):
        """Nothing to inject into a real server; the faults that are real (restart,
        compaction, killed processes) are done by the test itself."""
        return {}

    def compact(self):
        """Two writes the bridge does not watch, so that every watch it holds is older than
        the compacted revision; compact etcd; restart kube-apiserver so that every watch is
        cut and resumes into 410 Gone."""
        for i in range(2):
            status, _ = self.request("POST", "/api/v1/namespaces/default/configmaps", {
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"generateName": "compact-"}})
            self.expect(201, (status, _), "create a ConfigMap before compaction")
        rev = self.cp.compact()
        self.cp.restart_apiserver()
        return {"compacted_revision": rev}
