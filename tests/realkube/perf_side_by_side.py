#!/usr/bin/env python3
"""SchedulingBasic side by side on this machine, in one sitting:

1. kube-scheduler's own scheduler_perf (test/integration/scheduler_perf/misc of
   k8s.io/kubernetes, built by `./dev.sh kube-perf`), BenchmarkPerfScheduling/SchedulingBasic/
   WORKLOAD, on an etcd this script starts (KUBE_INTEGRATION_ETCD_URL). Its figure is
   SchedulingThroughput from the data items it writes.
2. A real API server on a fresh etcd with the same shape created through the API: 5,000 nodes
   of 4 CPU / 32 GiB / 110 pods, 1,000 pods already running, the measured pods of 100m CPU /
   500 MiB pending. Then, on the very same objects, each scheduler in turn with real
   Bindings: the kube-scheduler binary (schedulerName default-scheduler) and
   kcycle-kube-bridge + kcycle-scheduler (schedulerName kcycle, on the ServiceAccount of
   examples/deploy). A watch records when each pod got its node; throughput is pods bound per
   1-second interval, first interval dropped, as scheduler_perf counts it.

Prints one JSON object with every figure.

usage: perf_side_by_side.py --scheduler PATH --bridge PATH --source DIR --perf-test PATH
                            [--workload 5000Nodes_10000Pods] [--pods 10000]"""
import argparse
import collections
import glob
import http.client
import json
import os
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cluster  # noqa: E402
import realapi  # noqa: E402

NS = "perf"


def scheduler_perf(args, bindir, workdir):
    """Run scheduler_perf's benchmark against our etcd; its SchedulingThroughput items."""
    cp = cluster.ControlPlane(bindir, args.source, os.path.join(workdir, "perf-etcd"))
    os.makedirs(cp.workdir)
    cp.start_etcd()
    items_dir = os.path.join(workdir, "data-items")
    os.makedirs(items_dir)
    # the binary is built with -trimpath (to share the build cache of `./dev.sh kube`); the
    # test API server then finds its package folder the way it does under bazel
    modcache = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True,
                              check=True).stdout.strip()
    env = dict(os.environ, KUBE_INTEGRATION_ETCD_URL=f"http://127.0.0.1:{cp.etcd_port}",
               PATH=bindir + os.pathsep + os.environ.get("PATH", ""),
               TEST_SRCDIR=modcache, TEST_WORKSPACE=".")
    # the test reads performance-config.yaml and ../templates from its package folder
    pkg = subprocess.run(["go", "list", "-f", "{{.Dir}}",
                          "k8s.io/kubernetes/test/integration/scheduler_perf/misc"],
                         cwd=HERE, capture_output=True, text=True, check=True).stdout.strip()
    argv = [args.perf_test, "-test.run", "^$", "-test.bench",
            f"BenchmarkPerfScheduling/SchedulingBasic/{args.workload}$", "-test.benchtime",
            "1ns", "-test.timeout", "30m", "-perf-scheduling-label-filter", "",
            "-data-items-dir", items_dir]
    started = time.monotonic()
    try:
        with open(os.path.join(workdir, "scheduler_perf.log"), "wb") as log:
            rc = subprocess.run(argv, cwd=pkg, env=env, stdout=log, stderr=log,
                                timeout=1800).returncode
    finally:
        cp.stop()
    wall = time.monotonic() - started
    figures = {}
    for path in glob.glob(os.path.join(items_dir, "*.json")):
        with open(path) as f:
            for item in json.load(f).get("dataItems", []):
                if item.get("labels", {}).get("Metric") == "SchedulingThroughput":
                    figures = {k: round(v, 1) for k, v in item["data"].items()}
    if not figures:
        raise RuntimeError(f"scheduler_perf exited with {rc} and no SchedulingThroughput; see "
                           f"{os.path.join(workdir, 'scheduler_perf.log')}")
    # the benchmark also fails (exit 1) when the average is under its CI threshold
    return {"workload": f"SchedulingBasic/{args.workload}", "wall_seconds": round(wall, 1),
            "exit_status": rc, "pods_per_second": figures}


def perf_node(i):
    cap = {"pods": "110", "cpu": "4", "memory": "32Gi"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": f"perf-{i:05d}", "labels": {
                "kubernetes.io/hostname": f"perf-{i:05d}"}},
            "spec": {}, "status": {"capacity": cap, "allocatable": dict(cap),
                                   "conditions": [{"type": "Ready", "status": "True"}],
                                   "phase": "Running"}}


def perf_pod(name, scheduler, node=None):
    res = {"cpu": "100m", "memory": "500Mi"}
    spec = {"schedulerName": scheduler, "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10.2",
                            "ports": [{"containerPort": 80}],
                            "resources": {"requests": res, "limits": dict(res)}}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
            "spec": spec}


class BindWatch(threading.Thread):
    """Watches pods of NS and records the time each one first had a node."""

    def __init__(self, cp, rv):
        super().__init__(daemon=True)
        self.cp, self.rv, self.bound, self.stop = cp, rv, {}, False

    def run(self):
        context = ssl.create_default_context(cafile=f"{self.cp.pki}/ca.crt")
        context.load_cert_chain(f"{self.cp.pki}/admin.crt", f"{self.cp.pki}/admin.key")
        while not self.stop:
            conn = http.client.HTTPSConnection("127.0.0.1", self.cp.port, timeout=5,
                                               context=context)
            try:
                conn.request("GET", f"/api/v1/namespaces/{NS}/pods?watch=1&resourceVersion="
                             f"{self.rv}&allowWatchBookmarks=true", headers={
                                 "Accept": "application/json"})
                resp = conn.getresponse()
                while not self.stop:
                    line = resp.readline()
                    if not line:
                        break
                    ev = json.loads(line)
                    obj = ev["object"]
                    self.rv = obj["metadata"]["resourceVersion"]
                    name = obj["metadata"].get("name")
                    if obj.get("spec", {}).get("nodeName") and name not in self.bound:
                        self.bound[name] = time.monotonic()
            except (OSError, http.client.HTTPException, ValueError):
                pass
            finally:
                conn.close()


def throughput(times):
    """Pods bound per 1-second interval from the first bind, first interval dropped (as
    scheduler_perf's throughput collector), and the overall rate."""
    times = sorted(times)
    start = times[0]
    per = collections.Counter(int(t - start) for t in times)
    last = int(times[-1] - start)
    samples = [per.get(i, 0) for i in range(1, last)] or [len(times) / max(times[-1] - start,
                                                                           1e-3)]
    samples.sort()
    return {"avg": round(statistics.mean(samples), 1),
            "p50": samples[len(samples) // 2],
            "p90": samples[min(len(samples) - 1, int(len(samples) * 0.9))],
            "first_to_last_seconds": round(times[-1] - start, 2),
            "overall": round(len(times) / max(times[-1] - start, 1e-3), 1)}


def run_scheduler(api, cp, name, scheduler_name, start, stop, pods, workdir):
    """Create the measured pods pending, start one scheduler, time its bindings, stop it, and
    delete the pods again."""
    items = [perf_pod(f"{name}-{i:05d}", scheduler_name) for i in range(pods)]
    created = time.monotonic()
    api.bulk(items, workers=6)
    create_s = time.monotonic() - created
    rv = api.list_objects("pods", NS, limit="1")["metadata"]["resourceVersion"]
    watch = BindWatch(cp, rv)
    watch.start()
    procs = start()
    begun = time.monotonic()
    try:
        deadline = begun + 900
        while len(watch.bound) < pods:
            for p in procs:
                if p.poll() is not None:
                    raise RuntimeError(f"{name}: a process exited with {p.returncode}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name}: {len(watch.bound)} of {pods} bound in 900 s")
            time.sleep(0.2)
    finally:
        watch.stop = True
        stop(procs)
    times = [t for n, t in watch.bound.items() if n.startswith(name + "-")]
    result = throughput(times)
    result["start_to_first_bind_seconds"] = round(min(times) - begun, 2)
    result["create_seconds"] = round(create_s, 1)
    api.request("DELETE", f"/api/v1/namespaces/{NS}/pods?gracePeriodSeconds=0"
                "&labelSelector=!init", timeout=300)
    cp.wait("the measured pods deleted", lambda: len(api.list_objects(
        "pods", NS, labelSelector="!init")["items"]) == 0, 300)
    return result


def through_api(args, bindir, workdir):
    cp = cluster.ControlPlane(bindir, args.source, os.path.join(workdir, "cluster"))
    cp.start()
    api = realapi.RealAPI.on(cp)
    try:
        t0 = time.monotonic()
        api.bulk([perf_node(i) for i in range(args.nodes)], workers=6)
        init = [perf_pod(f"init-{i:04d}", "default-scheduler", node=f"perf-{i % args.nodes:05d}")
                for i in range(args.init_pods)]
        for p in init:
            p["metadata"]["labels"] = {"init": "true"}
        api.bulk(init, workers=6)
        setup = time.monotonic() - t0

        def start_kube():   # with scheduler_perf's client limits, not the default 50 QPS
            return [cp.start_kube_scheduler(qps=5000)]

        def stop_kube(procs):
            cp.halt("kube-scheduler")

        logs = []

        def start_kcycle():
            sock = f"ipc://{workdir}/perf.sock"
            procs = []
            for name, argv in (("bridge", [args.bridge, "--kubeconfig", cp.sa_kubeconfig(
                                    os.path.join(workdir, "sa.kubeconfig")), "--listen", sock,
                                    "--no-leader-elect", "--health-port", "0"]),
                               ("scheduler", [args.scheduler, "--bridge", sock,
                                              "--health-port", "0"])):
                log = open(os.path.join(workdir, f"kcycle-{name}.log"), "ab")
                logs.append(log)
                procs.append(subprocess.Popen(argv, stdout=log, stderr=log,
                                              stdin=subprocess.DEVNULL))
            return procs

        def stop_kcycle(procs):
            for p in reversed(procs):
                p.terminate()
                p.wait(30)

        results = {"setup_seconds": round(setup, 1)}
        results["kube-scheduler"] = run_scheduler(api, cp, "kube", "default-scheduler",
                                                  start_kube, stop_kube, args.pods, workdir)
        results["kcycle"] = run_scheduler(api, cp, "kcycle", "kcycle", start_kcycle,
                                          stop_kcycle, args.pods, workdir)
        for log in logs:
            log.close()
        return results
    finally:
        cp.stop()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--scheduler", required=True)
    parser.add_argument("--bridge", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--perf-test", help="scheduler_perf misc test binary (none: skip 1)")
    parser.add_argument("--workload", default="5000Nodes_10000Pods")
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--init-pods", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--keep", action="store_true", help="keep the logs and work folder")
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(args.source, "tests", "fakeapi"))
    bindir, why = realapi.kube_bin()
    if bindir is None:
        print(f"SKIP: {why}")
        return 77
    workdir = tempfile.mkdtemp(prefix="kcycle-perf-")
    out = {"nodes": args.nodes, "init_pods": args.init_pods, "measured_pods": args.pods,
           "cpus": os.cpu_count(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "load_average_at_start": round(os.getloadavg()[0], 1)}
    ok = False
    try:
        if args.perf_test:
            out["scheduler_perf"] = scheduler_perf(args, bindir, workdir)
        out["through_api_server"] = through_api(args, bindir, workdir)
        ok = True
    finally:
        out["load_average_at_end"] = round(os.getloadavg()[0], 1)
        print(json.dumps(out, indent=1))
        if ok and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"logs kept in {workdir}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
