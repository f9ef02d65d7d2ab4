"""Helpers for Python tests that use the fake API server: start and stop it, call it over
HTTPS with the test CA and token, load objects, read stats, inject faults.

    sys.path.insert(0, os.path.join(SOURCE, "tests", "fakeapi"))
    import fakeclient
    with fakeclient.FakeAPI(workdir) as api:
        api.bulk([fakeclient.pod("p1"), fakeclient.node("n1")])
        status, body = api.get("/api/v1/pods")

Every call has a bounded timeout. Standard library only."""

import http.client
import json
import os
import signal
import ssl
import subprocess
import sys
import tempfile
import time
from urllib.parse import quote, urlencode

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "fakeapi.py")
CERT_DIR = os.path.join(HERE, "certs")
CA_FILE = os.path.join(CERT_DIR, "ca.crt")
CLIENT_CERT = os.path.join(CERT_DIR, "client.crt")
CLIENT_KEY = os.path.join(CERT_DIR, "client.key")
DEFAULT_TOKEN = "test-token"

# kind -> (apiVersion, plural, namespaced); mirrors fakeapi.RESOURCE_DEFS.
KINDS = {
    "Pod": ("v1", "pods", True),
    "Node": ("v1", "nodes", False),
    "Namespace": ("v1", "namespaces", False),
    "Event": ("v1", "events", True),
    "Lease": ("coordination.k8s.io/v1", "leases", True),
    "PodGroup": ("scheduling.x-k8s.io/v1alpha1", "podgroups", True),
    "CapacityQueue": ("scheduling.kcycle.io/v1alpha1", "capacityqueues", False),
    "NodeResourceTopology": ("topology.node.k8s.io/v1alpha2", "noderesourcetopologies", False),
    "PersistentVolumeClaim": ("v1", "persistentvolumeclaims", True),
    "PersistentVolume": ("v1", "persistentvolumes", False),
    "StorageClass": ("storage.k8s.io/v1", "storageclasses", False),
    "CSINode": ("storage.k8s.io/v1", "csinodes", False),
}
PLURALS = {plural: (api_version, plural, namespaced)
           for api_version, plural, namespaced in KINDS.values()}
PLURALS["events.k8s.io/events"] = ("events.k8s.io/v1", "events", True)


class FakeAPIError(Exception):
    pass


def resource_path(what, namespace=None, name=None, subresource=None, api_version=None):
    """URL path of a collection or object. what: a plural ("pods", "leases",
    "events.k8s.io/events") or a kind ("Pod"). namespace None on a namespaced kind means all
    namespaces (collections only)."""
    if what in KINDS:
        version, plural, namespaced = KINDS[what]
    elif what in PLURALS:
        version, plural, namespaced = PLURALS[what]
    else:
        raise FakeAPIError(f"unknown resource {what!r}")
    version = api_version or version
    path = "/api/" + version if "/" not in version else "/apis/" + version
    if namespaced and namespace is not None:
        path += "/namespaces/" + quote(namespace, safe="")
    path += "/" + plural
    if name is not None:
        path += "/" + quote(name, safe="")
    if subresource:
        path += "/" + subresource
    return path


def pod(name, namespace="default", scheduler="default-scheduler", cpu=None, memory=None,
        node=None, labels=None, annotations=None, **spec):
    """A minimal pod manifest; extra keyword arguments go into spec."""
    container = {"name": "c", "image": "registry.k8s.io/pause:3.10"}
    requests = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    if requests:
        container["resources"] = {"requests": requests}
    body = {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"schedulerName": scheduler, "containers": [container], **spec}}
    if node:
        body["spec"]["nodeName"] = node
    if labels:
        body["metadata"]["labels"] = dict(labels)
    if annotations:
        body["metadata"]["annotations"] = dict(annotations)
    return body


def node(name, cpu="4", memory="16Gi", pods="110", labels=None, taints=None, extra=None):
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})}
    body = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                  **(labels or {})}},
            "spec": {},
            "status": {"allocatable": allocatable, "capacity": dict(allocatable),
                       "conditions": [{"type": "Ready", "status": "True"}]}}
    if taints:
        body["spec"]["taints"] = list(taints)
    return body


class FakeAPI:
    """One fake API server process. Use as a context manager or call start()/stop()."""

    def __init__(self, workdir=None, token=DEFAULT_TOKEN, tokens=None, plain_http=False,
                 bookmark_interval=None, history=None, verbose=False, extra_args=(),
                 start_timeout=20.0, log_path=None):
        self.workdir = workdir or tempfile.mkdtemp(prefix="fakeapi-")
        self.token = token
        self.tokens = list(tokens) if tokens else [token]
        self.plain_http = plain_http
        self.bookmark_interval = bookmark_interval
        self.history = history
        self.verbose = verbose
        self.extra_args = list(extra_args)
        self.start_timeout = start_timeout
        self.log_path = log_path or os.path.join(self.workdir, "fakeapi.log")
        self.port = None
        self.process = None
        self._log = None
        self._conn = None

    # -- process --

    def start(self):
        os.makedirs(self.workdir, exist_ok=True)
        port_file = os.path.join(self.workdir, "fakeapi.port")
        if os.path.exists(port_file):
            os.unlink(port_file)
        cmd = [sys.executable, SERVER, "--port", "0", "--port-file", port_file]
        for t in self.tokens:
            cmd += ["--token", t]
        if self.plain_http:
            cmd.append("--plain-http")
        if self.bookmark_interval is not None:
            cmd += ["--bookmark-interval", str(self.bookmark_interval)]
        if self.history is not None:
            cmd += ["--history", str(self.history)]
        if self.verbose:
            cmd.append("-v")
        cmd += self.extra_args
        self._log = open(self.log_path, "ab")
        self.process = subprocess.Popen(cmd, stdout=self._log, stderr=self._log,
                                        stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise FakeAPIError(f"fakeapi exited with {self.process.returncode} before "
                                   f"listening; see {self.log_path}")
            try:
                with open(port_file) as f:
                    text = f.read().strip()
                if text:
                    self.port = int(text)
                    return self
            except FileNotFoundError:
                pass
            time.sleep(0.02)
        self.stop()
        raise FakeAPIError(f"fakeapi did not write {port_file} within {self.start_timeout}s; "
                           f"see {self.log_path}")

    def stop(self, timeout=5.0):
        """SIGTERM, then SIGKILL after timeout. Returns the exit status."""
        self.close()
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout)
        if self._log:
            self._log.close()
            self._log = None
        return self.process.returncode

    def __enter__(self):
        return self.start() if self.process is None else self

    def __exit__(self, *exc):
        self.stop()

    # -- connection --

    @property
    def scheme(self):
        return "http" if self.plain_http else "https"

    @property
    def url(self):
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def ssl_context(self, client_cert=False):
        context = ssl.create_default_context(cafile=CA_FILE)
        if client_cert:
            context.load_cert_chain(CLIENT_CERT, CLIENT_KEY)
        return context

    def connect(self, timeout=10.0, client_cert=False):
        """A new http.client connection to the server (caller closes it)."""
        if self.plain_http:
            return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout,
                                           context=self.ssl_context(client_cert))

    def close(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def headers(self, token=None, content_type=None, extra=None):
        token = self.token if token is None else token
        headers = {"Accept": "application/json", "User-Agent": "fakeclient"}
        if token:
            headers["Authorization"] = "Bearer " + token
        if content_type:
            headers["Content-Type"] = content_type
        headers.update(extra or {})
        return headers

    def request(self, method, path, body=None, token=None, content_type=None, headers=None,
                timeout=10.0, query=None):
        """(status, parsed JSON body or text) over a kept-alive connection."""
        if query:
            path += ("&" if "?" in path else "?") + urlencode(query)
        data = None
        if body is not None:
            data = body if isinstance(body, (bytes, str)) else json.dumps(body)
            if isinstance(data, str):
                data = data.encode()
            content_type = content_type or "application/json"
        hdrs = self.headers(token, content_type, headers)
        for attempt in (1, 2):
            if self._conn is None:
                self._conn = self.connect(timeout)
            self._conn.timeout = timeout
            try:
                self._conn.request(method, path, body=data, headers=hdrs)
                resp = self._conn.getresponse()
                raw = resp.read()
                break
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError,
                    http.client.CannotSendRequest, http.client.ResponseNotReady):
                self.close()  # the server closed a kept-alive connection: retry once
                if attempt == 2:
                    raise
        if resp.getheader("Content-Type", "").startswith("application/json"):
            return resp.status, json.loads(raw) if raw else None
        return resp.status, raw.decode(errors="replace")

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, body, **kw):
        return self.request("POST", path, body, **kw)

    def put(self, path, body, **kw):
        return self.request("PUT", path, body, **kw)

    def patch(self, path, body, content_type="application/strategic-merge-patch+json", **kw):
        return self.request("PATCH", path, body, content_type=content_type, **kw)

    def delete(self, path, **kw):
        return self.request("DELETE", path, **kw)

    def expect(self, status, result, what):
        if result[0] != status:
            raise FakeAPIError(f"{what}: expected HTTP {status}, got {result[0]}: {result[1]}")
        return result[1]

    # -- objects --

    def create(self, obj, namespace=None):
        kind = obj.get("kind")
        ns = namespace or (obj.get("metadata") or {}).get("namespace") or "default"
        api_version = obj.get("apiVersion")
        return self.expect(201, self.post(resource_path(kind, ns, api_version=api_version),
                                          obj), f"create {kind}")

    def get_object(self, what, name, namespace="default"):
        """The object, or None when it does not exist."""
        status, body = self.get(resource_path(what, namespace, name))
        if status == 404:
            return None
        return self.expect(200, (status, body), f"get {what} {name}")

    def list_objects(self, what, namespace=None, **query):
        """The list body (items, metadata). query: fieldSelector, labelSelector, limit..."""
        return self.expect(200, self.get(resource_path(what, namespace), query=query or None),
                           f"list {what}")

    def delete_object(self, what, name, namespace="default"):
        """True when deleted, False when it did not exist."""
        status, body = self.delete(resource_path(what, namespace, name))
        if status == 404:
            return False
        self.expect(200, (status, body), f"delete {what} {name}")
        return True

    # -- admin --

    def bulk(self, items):
        return self.expect(200, self.post("/fake/bulk", {"items": list(items)}), "bulk")

    def stats(self, summary=False):
        """Everything recorded; summary=True: the lists replaced by their lengths (cheap to
        poll when thousands of bindings were recorded)."""
        path = "/fake/stats?summary=1" if summary else "/fake/stats"
        return self.expect(200, self.get(path), "stats")

    def reset_stats(self):
        return self.expect(200, self.post("/fake/stats/reset", {}), "reset stats")

    def faults(self, **faults):
        return self.expect(200, self.post("/fake/faults", faults), "faults")

    def reset_faults(self):
        return self.expect(200, self.post("/fake/faults/reset", {}), "reset faults")

    def cut_watches(self):
        return self.expect(200, self.post("/fake/cut-watches", {}), "cut watches")["cut"]

    def set_unserved(self, resources):
        """Serve every resource but these ("<group/>plural"): a CRD deleted or never installed.
        [] serves them all again."""
        return self.expect(200, self.post("/fake/served", {"unserved": list(resources)}),
                           "served")

    def compact(self):
        return self.expect(200, self.post("/fake/compact", {}), "compact")

    def set_tokens(self, tokens, token=None):
        """Replace the server's valid tokens. token: what to authenticate this call with (the
        client's own token by default; self.token is not changed)."""
        return self.expect(200, self.post("/fake/tokens", {"tokens": list(tokens)}, token=token),
                           "tokens")

    def healthy(self, timeout=2.0):
        try:
            conn = self.connect(timeout)
            conn.request("GET", "/fake/healthz")
            ok = conn.getresponse().read() == b"ok"
            conn.close()
            return ok
        except OSError:
            return False

    def wait_for(self, predicate, timeout=10.0, interval=0.05, what="condition"):
        """Poll predicate() until truthy; FakeAPIError after timeout."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() >= deadline:
                raise FakeAPIError(f"timed out after {timeout}s waiting for {what}")
            time.sleep(interval)

    # -- watch --

    def watch(self, path, timeout=10.0, **query):
        """A Watcher reading events of path (e.g. "/api/v1/pods"); query adds
        resourceVersion, allowWatchBookmarks, timeoutSeconds, fieldSelector..."""
        query = {"watch": "1", **query}
        return Watcher(self, path + ("&" if "?" in path else "?") + urlencode(query), timeout)

    def kubeconfig(self, path, token=None, client_cert=False):
        """Write a kubeconfig for kubectl or the bridge; returns path."""
        user = f"    client-certificate: {CLIENT_CERT}\n    client-key: {CLIENT_KEY}\n" \
            if client_cert else f"    token: {token or self.token}\n"
        cluster = f"    server: {self.url}\n"
        if not self.plain_http:
            cluster += f"    certificate-authority: {CA_FILE}\n"
        with open(path, "w") as f:
            f.write("apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n" +
                    cluster + "users:\n- name: fake\n  user:\n" + user +
                    "contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\n"
                    "    namespace: default\ncurrent-context: fake\n")
        return path


class Watcher:
    """Iterates the events of one watch stream; http.client undoes the chunking."""

    def __init__(self, api, path, timeout):
        self.conn = api.connect(timeout)
        self.conn.request("GET", path, headers=api.headers())
        self.response = self.conn.getresponse()
        self.status = self.response.status
        if self.status != 200:
            body = self.response.read()
            self.conn.close()
            raise FakeAPIError(f"watch {path}: HTTP {self.status}: {body!r}")

    def next(self):
        """The next event as a dict, or None at the end of the stream; raises
        http.client.IncompleteRead / OSError when the stream was cut, socket.timeout when
        nothing came within the timeout."""
        line = self.response.readline()
        if not line:
            return None
        return json.loads(line)

    def __iter__(self):
        while True:
            event = self.next()
            if event is None:
                return
            yield event

    def close(self):
        self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


__all__ = ["FakeAPI", "FakeAPIError", "Watcher", "resource_path", "pod", "node", "KINDS",
           "CA_FILE", "CLIENT_CERT", "CLIENT_KEY", "CERT_DIR", "SERVER"]
