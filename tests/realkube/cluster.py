"""A throwaway real Kubernetes control plane for one test: etcd on a temporary directory,
kube-apiserver with a generated CA, service-account keys, RBAC on and an audit log, the CRDs,
namespace, ServiceAccount and RBAC of examples/deploy applied with kubectl, and a kubeconfig for
that ServiceAccount, so that kcycle runs with exactly the privileges its manifests grant.
Nodes are API objects only (no kubelet); kube-scheduler can be started beside it.

    cp = ControlPlane(bindir, source, workdir)   # bindir: what `./dev.sh kube` printed
    cp.start()
    ...                                          # cp.admin: an HTTPS client as system:masters
    cp.stop()                                    # stops everything it started

Standard library, PyYAML and the openssl command. Every wait has a deadline."""

import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import time

import yaml

SA_NAMESPACE = "kcycle-system"
SA_NAME = "kcycle-scheduler"
LEASE_NAME = "kcycle-scheduler"   # the one Lease the leader-election Role lets kcycle update
MANIFESTS = ["namespace.yaml", "serviceaccount.yaml", "rbac.yaml", "crds"]

# What the bridge tests read back from the audit log (the real server's record of who did
# what); everything else is not logged, so that the log stays small under a 2,000-pod run.
AUDIT_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Request
    verbs: [create, update, patch]
    resources:
      - group: ""
        resources: [pods/binding, bindings, events]
      - group: events.k8s.io
        resources: [events]
      - group: coordination.k8s.io
        resources: [leases]
  - level: Metadata
    verbs: [create, update, patch]
    resources:
      - group: ""
        resources: [pods/status]
      - group: scheduling.x-k8s.io
        resources: [podgroups/status]
  - level: None
"""


class ClusterError(Exception):
    pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE)


def make_pki(pki):
    """CA, API server serving certificate, client certificates and service-account keys."""
    os.makedirs(pki, exist_ok=True)
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
            "/CN=kcycle-test-ca", "-keyout", "ca.key", "-out", "ca.crt", cwd=pki)
    with open(os.path.join(pki, "server.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,"
                "DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n")
    with open(os.path.join(pki, "client.ext"), "w") as f:
        f.write("extendedKeyUsage=clientAuth\n")
    certs = [("server", "/CN=kube-apiserver", "server.ext"),
             ("admin", "/O=system:masters/CN=kcycle-test-admin", "client.ext"),
             ("kube-scheduler", "/CN=system:kube-scheduler", "client.ext")]
    for name, subject, ext in certs:
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", subject, "-keyout",
                name + ".key", "-out", name + ".csr", cwd=pki)
        openssl("x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                "-CAcreateserial", "-days", "2", "-extfile", ext, "-out", name + ".crt", cwd=pki)
    openssl("genrsa", "-out", "sa.key", "2048", cwd=pki)
    openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)


class Client:
    """HTTPS JSON client of the API server with a client certificate or a bearer token."""

    def __init__(self, port, ca, cert=None, key=None, token=None, user_agent="kcycle-tests"):
        self.port, self.token, self.user_agent = port, token, user_agent
        self.context = ssl.create_default_context(cafile=ca)
        if cert:
            self.context.load_cert_chain(cert, key)
        self.conn = None

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def request(self, method, path, body=None, content_type="application/json", timeout=30):
        headers = {"Accept": "application/json", "User-Agent": self.user_agent}
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = content_type
        for attempt in (1, 2):
            if self.conn is None:
                self.conn = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout,
                                                        context=self.context)
            try:
                self.conn.request(method, path, body=data, headers=headers)
                resp = self.conn.getresponse()
                raw = resp.read()
                break
            except (OSError, http.client.HTTPException):
                self.close()  # a kept-alive connection the server closed: retry once
                if attempt == 2:
                    raise
        try:
            return resp.status, json.loads(raw) if raw else None
        except ValueError:
            return resp.status, raw.decode(errors="replace")


class ControlPlane:
    def __init__(self, bindir, source, workdir, watch_cache=True, drop_rule=None):
        """drop_rule: (kind, name, resource) of a rule to leave out of rbac.yaml, e.g.
        ("ClusterRole", "kcycle-scheduler", "pods/binding"), to prove a missing grant fails."""
        self.bindir, self.source, self.workdir = bindir, source, workdir
        self.watch_cache, self.drop_rule = watch_cache, drop_rule
        self.pki = os.path.join(workdir, "pki")
        self.audit_log = os.path.join(workdir, "audit.log")
        self.procs = {}
        self.port = self.etcd_port = None
        self.admin = None
        self.token = None

    # -- processes --

    def spawn(self, name, argv):
        log = open(os.path.join(self.workdir, name + ".log"), "ab")
        proc = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        log.close()
        self.procs[name] = proc
        return proc

    def halt(self, name, timeout=20):
        proc = self.procs.pop(name, None)
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)

    def tail(self, name, lines=25):
        try:
            with open(os.path.join(self.workdir, name + ".log"), errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def wait(self, what, predicate, timeout, proc_name=None):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc_name and self.procs[proc_name].poll() is not None:
                raise ClusterError(f"{proc_name} exited with {self.procs[proc_name].returncode} "
                                   f"before {what}\n{self.tail(proc_name)}")
            try:
                value = predicate()
            except (OSError, http.client.HTTPException):
                value = None
            if value:
                return value
            time.sleep(0.2)
        raise ClusterError(f"timed out after {timeout}s waiting for {what}\n"
                           f"{self.tail(proc_name) if proc_name else ''}")

    def start_etcd(self):
        self.etcd_port, peer = free_port(), free_port()
        client, peer_url = f"http://127.0.0.1:{self.etcd_port}", f"http://127.0.0.1:{peer}"
        self.spawn("etcd", [os.path.join(self.bindir, "etcd"), "--name", "test",
                            "--data-dir", os.path.join(self.workdir, "etcd"),
                            "--listen-client-urls", client, "--advertise-client-urls", client,
                            "--listen-peer-urls", peer_url,
                            "--initial-advertise-peer-urls", peer_url,
                            "--initial-cluster", f"test={peer_url}",
                            "--unsafe-no-fsync", "--log-level", "warn"])
        self.wait("etcd to answer", lambda: self.etcd("/v3/kv/range", {"key": "Zm9v"}) is not None,
                  60, "etcd")

    def etcd(self, path, body):
        """A call to etcd's JSON gateway; None when etcd does not answer yet."""
        conn = http.client.HTTPConnection("127.0.0.1", self.etcd_port, timeout=10)
        try:
            conn.request("POST", path, body=json.dumps(body))
            resp = conn.getresponse()
            return json.loads(resp.read()) if resp.status == 200 else None
        finally:
            conn.close()

    def start_apiserver(self):
        if self.port is None:
            self.port = free_port()
        pki = self.pki
        argv = [os.path.join(self.bindir, "kube-apiserver"),
                "--etcd-servers", f"http://127.0.0.1:{self.etcd_port}",
                "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
                "--secure-port", str(self.port),
                "--tls-cert-file", f"{pki}/server.crt", "--tls-private-key-file",
                f"{pki}/server.key", "--client-ca-file", f"{pki}/ca.crt",
                "--service-account-key-file", f"{pki}/sa.pub",
                "--service-account-signing-key-file", f"{pki}/sa.key",
                "--service-account-issuer", "https://kubernetes.default.svc",
                "--service-cluster-ip-range", "10.0.0.0/24",
                "--authorization-mode", "RBAC",
                # no controller-manager creates each namespace's "default" ServiceAccount,
                # and none lifts the not-ready taint TaintNodesByCondition puts on new nodes
                "--disable-admission-plugins", "ServiceAccount,TaintNodesByCondition",
                "--audit-policy-file", os.path.join(self.workdir, "audit-policy.yaml"),
                "--audit-log-path", self.audit_log, "--audit-log-mode", "blocking",
                "--audit-log-maxsize", "0",
                "--etcd-compaction-interval", "0",
                "--endpoint-reconciler-type", "none",
                "--profiling=false", "--v", "1"]
        if not self.watch_cache:
            argv.append("--watch-cache=false")
        self.spawn("kube-apiserver", argv)
        if self.admin is None:
            self.admin = Client(self.port, f"{pki}/ca.crt", f"{pki}/admin.crt",
                                f"{pki}/admin.key")
        self.admin.close()
        self.wait("kube-apiserver ready", lambda: self.admin.request("GET", "/readyz")[0] == 200,
                  120, "kube-apiserver")

    def restart_apiserver(self):
        """Stop and start kube-apiserver on the same etcd and port: every watch is cut and
        connections are refused until it is back."""
        self.halt("kube-apiserver")
        self.start_apiserver()

    def compact(self):
        """Compact etcd at its current revision (physically): a watch or continue token from
        before can only be answered with 410 Gone. Returns the revision."""
        rev = int(self.etcd("/v3/kv/range", {"key": "Zm9v"})["header"]["revision"])
        self.etcd("/v3/kv/compaction", {"revision": str(rev), "physical": True})
        return rev

    # -- setup --

    def kubectl(self, *args, kubeconfig=None):
        res = subprocess.run([os.path.join(self.bindir, "kubectl"), "--kubeconfig",
                              kubeconfig or self.admin_kubeconfig, *args],
                             capture_output=True, text=True, timeout=120)
        if res.returncode != 0:
            raise ClusterError(f"kubectl {' '.join(args)}: {res.stderr.strip()}")
        return res.stdout

    def write_kubeconfig(self, path, user):
        doc = {"apiVersion": "v1", "kind": "Config",
               "clusters": [{"name": "test", "cluster": {
                   "server": f"https://127.0.0.1:{self.port}",
                   "certificate-authority": f"{self.pki}/ca.crt"}}],
               "users": [{"name": "test", "user": user}],
               "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test",
                                                         "namespace": SA_NAMESPACE}}],
               "current-context": "test"}
        with open(path, "w") as f:
            yaml.safe_dump(doc, f)
        return path

    def manifests(self):
        """examples/deploy's namespace, ServiceAccount, RBAC and CRDs as one file, with
        drop_rule left out."""
        deploy = os.path.join(self.source, "examples", "deploy")
        docs = []
        for entry in MANIFESTS:
            path = os.path.join(deploy, entry)
            files = [os.path.join(path, f) for f in sorted(os.listdir(path))] \
                if os.path.isdir(path) else [path]
            for name in files:
                with open(name) as f:
                    docs += [d for d in yaml.safe_load_all(f) if d]
        if self.drop_rule:
            kind, name, resource = self.drop_rule
            for d in docs:
                if d["kind"] == kind and d["metadata"]["name"] == name:
                    before = len(d["rules"])
                    d["rules"] = [r for r in d["rules"] if resource not in r["resources"]]
                    if len(d["rules"]) == before:
                        raise ClusterError(f"no rule for {resource} in {kind} {name}")
        path = os.path.join(self.workdir, "deploy.yaml")
        with open(path, "w") as f:
            yaml.safe_dump_all(docs, f)
        return path

    def start(self):
        os.makedirs(self.workdir, exist_ok=True)
        make_pki(self.pki)
        with open(os.path.join(self.workdir, "audit-policy.yaml"), "w") as f:
            f.write(AUDIT_POLICY)
        self.start_etcd()
        self.start_apiserver()
        self.admin_kubeconfig = self.write_kubeconfig(
            os.path.join(self.workdir, "admin.kubeconfig"),
            {"client-certificate": f"{self.pki}/admin.crt",
             "client-key": f"{self.pki}/admin.key"})
        self.kubectl("apply", "-f", self.manifests())
        self.kubectl("wait", "--for", "condition=established", "--timeout", "60s",
                     "crd", "--all")
        # a token of the manifests' ServiceAccount, as the kubelet would mount it
        self.token = self.kubectl("create", "token", SA_NAME, "-n", SA_NAMESPACE,
                                  "--duration", "24h").strip()
        return self

    def sa_kubeconfig(self, path):
        """A kubeconfig for ServiceAccount kcycle-system/kcycle-scheduler."""
        return self.write_kubeconfig(path, {"token": self.token})

    def start_kube_scheduler(self, name="kube-scheduler", qps=None):
        """The real kube-scheduler (profile default-scheduler) with its own identity. qps:
        its client's requests per second and burst (kube-scheduler's default is 50 and 100;
        scheduler_perf runs it with 5,000)."""
        kubeconfig = self.write_kubeconfig(
            os.path.join(self.workdir, "kube-scheduler.kubeconfig"),
            {"client-certificate": f"{self.pki}/kube-scheduler.crt",
             "client-key": f"{self.pki}/kube-scheduler.key"})
        config = os.path.join(self.workdir, "kube-scheduler.yaml")
        connection = {"kubeconfig": kubeconfig}
        if qps:
            connection.update(qps=qps, burst=qps)
        with open(config, "w") as f:
            yaml.safe_dump({"apiVersion": "kubescheduler.config.k8s.io/v1",
                            "kind": "KubeSchedulerConfiguration",
                            "clientConnection": connection,
                            "leaderElection": {"leaderElect": False}}, f)
        self.spawn(name, [os.path.join(self.bindir, "kube-scheduler"), "--config", config,
                          "--secure-port", "0", "--v", "1"])
        return self.procs[name]

    def stop(self):
        if self.admin is not None:
            self.admin.close()
        for name in list(reversed(list(self.procs))):
            self.halt(name)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
