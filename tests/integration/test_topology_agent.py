#!/usr/bin/env python3
"""kcycle-topology-agent: the NodeResourceTopology it prints for this machine, for hwloc XML
fixtures (a 2-socket machine with 8 GPUs, an EPYC in NPS4 with 2 GPUs and one GPU without
locality, a one-zone workstation) and for a synthetic description; `available` computed from a
fake kubelet podresources server (gRPC over a unix socket, python3-grpcio); and publishing into
the fake API server (create, then update with the resourceVersion).

usage: test_topology_agent.py AGENT SOURCE_DIR"""
import json
import os
import subprocess
import sys
import tempfile
import time

AGENT, SOURCE = sys.argv[1], sys.argv[2]
FIXTURES = os.path.join(SOURCE, "tests", "fixtures", "topology")
FAILURES = []
PASSED = [0]
GI = 1 << 30


def check(condition, message):
    if condition:
        PASSED[0] += 1
        return
    FAILURES.append(message)
    print("FAIL: " + message)


def agent(*args, expect=0):
    run = subprocess.run([AGENT, *args], capture_output=True, text=True, timeout=60)
    check(run.returncode == expect, f"agent {' '.join(args)}: exit {run.returncode}, want "
          f"{expect}: {run.stderr[-500:]}")
    return json.loads(run.stdout) if expect == 0 and run.returncode == 0 else run


def zones_of(obj):
    out = {}
    for z in obj["zones"]:
        check(z["type"] == "Node", f"zone {z['name']} has type Node")
        resources = {r["name"]: {k: int(r[k]) for k in ("capacity", "allocatable", "available")}
                     for r in z["resources"]}
        attributes = {}
        for a in z.get("attributes", []):
            attributes.setdefault(a["name"], []).append(a["value"])
        out[z["name"]] = (resources, attributes)
    return out


def attribute(obj, name):
    return next((a["value"] for a in obj.get("attributes", []) if a["name"] == name), None)


def this_machine():
    obj = agent("--once", "--output", "-", "--node-name", "here")
    check(obj["kind"] == "NodeResourceTopology" and
          obj["apiVersion"] == "topology.node.k8s.io/v1alpha2", "this machine: kind/apiVersion")
    check(obj["metadata"]["name"] == "here", "this machine: named after --node-name")
    zones = zones_of(obj)
    sysfs = [d for d in os.listdir("/sys/devices/system/node") if d.startswith("node")] \
        if os.path.isdir("/sys/devices/system/node") else ["node0"]
    check(len(zones) == len(sysfs), f"this machine: {len(zones)} zones, sysfs has {len(sysfs)}")
    cpus = sum(r["cpu"]["capacity"] for r, _ in zones.values())
    online = 0
    with open("/sys/devices/system/cpu/online") as f:
        for part in f.read().strip().split(","):
            first, _, last = part.partition("-")
            online += int(last or first) - int(first) + 1
    # every online CPU, also those outside the agent's own cpuset (other pods' exclusive CPUs)
    check(cpus == online, f"this machine: {cpus} CPUs, {online} online")
    total_kib = 0
    for node in sysfs:
        path = f"/sys/devices/system/node/{node}/meminfo"
        meminfo = open(path).read() if os.path.exists(path) else open("/proc/meminfo").read()
        total_kib += int(next(l for l in meminfo.splitlines() if "MemTotal:" in l).split()[-2])
    memory = sum(r["memory"]["capacity"] for r, _ in zones.values())
    # the zones' memory is the kernel's per-node MemTotal (hugepages apart): within 10%
    check(abs(memory - total_kib * 1024) < total_kib * 1024 * 0.1,
          f"this machine: memory {memory} vs the nodes' MemTotal {total_kib * 1024}")
    print(f"this machine: {len(zones)} zone(s), {cpus} CPUs, {memory / GI:.1f} GiB")


def dgx():
    path = os.path.join(FIXTURES, "dgx-2socket-8gpu.xml")
    obj = agent("--once", "--input-xml", path, "--node-name", "dgx",
                "--topology-manager-policy", "single-numa-node",
                "--topology-manager-scope", "pod", "--reserved-cpus", "0-1,48",
                "--device", "15b3:0200=mellanox.com/nic")
    zones = zones_of(obj)
    check(sorted(zones) == ["node-0", "node-1"], f"dgx: zones {sorted(zones)}")
    for zone, first in (("node-0", 0), ("node-1", 48)):
        res, attrs = zones[zone]
        check(res["cpu"]["capacity"] == 48, f"dgx {zone}: 48 CPUs")
        check(attrs["cpus"] == [f"{first}-{first + 47}"], f"dgx {zone}: cpus {attrs['cpus']}")
        check(attrs["cores"] == ["24"], f"dgx {zone}: 24 cores of 2 PUs")
        check(res["memory"]["capacity"] == 240 * GI, f"dgx {zone}: 240 GiB of normal pages")
        check(res["hugepages-1Gi"]["capacity"] == 16 * GI, f"dgx {zone}: 16 x 1 GiB hugepages")
        check(res["nvidia.com/gpu"] == {"capacity": 4, "allocatable": 4, "available": 4},
              f"dgx {zone}: 4 GPUs: {res.get('nvidia.com/gpu')}")
        check(res["mellanox.com/nic"]["capacity"] == 1, f"dgx {zone}: one NIC (--device)")
        gpus = sorted(k for k, v in attrs.items() if v == ["nvidia.com/gpu"])
        base = 0x18 + (0x80 if zone == "node-1" else 0)
        want = [f"pci/0000:{base + i * 0x10:02x}:00.0" for i in range(4)]
        check(gpus == want, f"dgx {zone}: the GPUs of its socket {gpus}")
    check(zones["node-0"][0]["cpu"]["allocatable"] == 46, "dgx: reserved 0-1 leave 46 on node-0")
    check(zones["node-1"][0]["cpu"]["allocatable"] == 47, "dgx: reserved 48 leaves 47 on node-1")
    check(attribute(obj, "topologyManagerPolicy") == "single-numa-node" and
          attribute(obj, "topologyManagerScope") == "pod", "dgx: policy and scope attributes")
    check(obj["topologyPolicies"] == ["SingleNUMANodePodLevel"], "dgx: v1alpha1 policy enum")
    without = zones_of(agent("--once", "--input-xml", path))
    check("mellanox.com/nic" not in without["node-0"][0], "dgx: NICs only with --device")
    no_memory = zones_of(agent("--once", "--input-xml", path, "--memory-manager-policy", "None"))
    check(not any(k == "memory" or k.startswith("hugepages-") for k in no_memory["node-0"][0]),
          "dgx: no memory or hugepages in the zones when the memory manager aligns none")


def epyc():
    obj = agent("--once", "--input-xml", os.path.join(FIXTURES, "epyc-nps4-2gpu.xml"))
    zones = zones_of(obj)
    check(sorted(zones) == [f"node-{i}" for i in range(4)], f"epyc: 4 zones {sorted(zones)}")
    for i in range(4):
        res, attrs = zones[f"node-{i}"]
        check(res["cpu"]["capacity"] == 16 and attrs["cpus"] == [f"{16 * i}-{16 * i + 15}"],
              f"epyc node-{i}: CPUs {16 * i}-{16 * i + 15}")
        check(attrs["cores"] == ["8"], f"epyc node-{i}: 8 cores")
        check(res["hugepages-2Mi"]["capacity"] == 2 * GI, f"epyc node-{i}: 1024 x 2 MiB pages")
        has_gpu = "amd.com/gpu" in res
        check(has_gpu == (i in (1, 3)), f"epyc node-{i}: AMD GPU only on zones 1 and 3")
    gpus = sum(r.get("nvidia.com/gpu", {}).get("capacity", 0) for r, _ in zones.values())
    check(gpus == 0, "epyc: the GPU attached to the whole machine is in no zone")


def workstation():
    obj = agent("--once", "--input-xml", os.path.join(FIXTURES, "workstation-1gpu.xml"))
    zones = zones_of(obj)
    res, _ = zones["node-0"]
    check(len(zones) == 1 and res["cpu"]["capacity"] == 8, "workstation: one zone of 8 CPUs")
    check(res["nvidia.com/gpu"]["capacity"] == 1, "workstation: its GPU (VGA class) in zone 0")


def synthetic():
    obj = agent("--once", "--synthetic", "pack:2 numa:2 core:16 pu:2")
    zones = zones_of(obj)
    check(len(zones) == 4 and all(r["cpu"]["capacity"] == 32 for r, _ in zones.values()),
          "synthetic pack:2 numa:2 core:16 pu:2: 4 zones of 32 CPUs")
    bad = agent("--once", "--synthetic", "pack:two", expect=1)
    check("synthetic" in bad.stderr, f"a bad synthetic string is named: {bad.stderr}")
    bad = agent("--once", "--device", "nvidia", expect=2)
    check("--device" in bad.stderr, "a bad --device is named")
    bad = agent("--once", "--input-xml", "/nonexistent.xml", expect=1)
    check("/nonexistent.xml" in bad.stderr, "a missing XML file is named")


# ---- a fake kubelet podresources server (fake_podresources.py) -------------------------------

def grpc_python():
    """A Python that has grpc (Debian's python3-grpcio lives in the system interpreter)."""
    for exe in (sys.executable, "/usr/bin/python3"):
        if os.path.exists(exe) and subprocess.run([exe, "-c", "import grpc"],
                                                  capture_output=True).returncode == 0:
            return exe
    return None


def wait_for(condition, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    check(False, f"timed out waiting for {what}")
    return False


def kubelet_config(tmp):
    """--kubelet-config: the kubelet's own settings, flags still win; its defaults (memory
    manager None) when the file does not set them."""
    path = os.path.join(tmp, "kubelet.yaml")
    with open(path, "w") as f:
        f.write("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
                "cpuManagerPolicy: static\ntopologyManagerPolicy: restricted\n"
                "topologyManagerScope: pod\nreservedSystemCPUs: \"0,8\"\n"
                "memoryManagerPolicy: Static\n")
    machine = "pack:2 numa:1(memory=16GiB) core:4 pu:2"
    obj = agent("--once", "--synthetic", machine, "--kubelet-config", path)
    zones = zones_of(obj)
    check(attribute(obj, "topologyManagerPolicy") == "restricted" and
          attribute(obj, "topologyManagerScope") == "pod", "kubelet config: policy and scope")
    check(zones["node-0"][0]["cpu"]["allocatable"] == 7 and
          zones["node-1"][0]["cpu"]["allocatable"] == 7,
          "kubelet config: reservedSystemCPUs 0 and 8, one per zone")
    check("memory" in zones["node-0"][0], "kubelet config: Static memory manager, memory listed")
    obj = agent("--once", "--synthetic", machine, "--kubelet-config", path,
                "--topology-manager-policy", "single-numa-node")
    check(attribute(obj, "topologyManagerPolicy") == "single-numa-node",
          "kubelet config: a flag wins over the file")
    with open(path, "w") as f:
        f.write("kind: KubeletConfiguration\ntopologyManagerPolicy: best-effort\n")
    zones = zones_of(agent("--once", "--synthetic", machine, "--kubelet-config", path))
    check("memory" not in zones["node-0"][0],
          "kubelet config: the kubelet's default memory manager (None) aligns no memory")
    with open(path, "w") as f:
        f.write("topologyManagerPolicy: sometimes\n")
    bad = agent("--once", "--synthetic", machine, "--kubelet-config", path, expect=2)
    check("sometimes" in bad.stderr, f"kubelet config: a bad policy is named: {bad.stderr}")
    bad = agent("--once", "--kubelet-config", os.path.join(tmp, "none.yaml"), expect=1)
    check("none.yaml" in bad.stderr, "kubelet config: a missing file is named")


def podresources(tmp):
    python = grpc_python()
    if python is None:
        check(False, "python3-grpcio is needed for the podresources test (./dev.sh deps)")
        return
    socket_path = os.path.join(tmp, "kubelet.sock")
    server = subprocess.Popen([python, os.path.join(os.path.dirname(__file__),
                                                    "fake_podresources.py"), socket_path])
    try:
        if not wait_for(lambda: os.path.exists(socket_path), 20, "the fake kubelet's socket"):
            return
        obj = agent("--once", "--input-xml", os.path.join(FIXTURES, "dgx-2socket-8gpu.xml"),
                    "--podresources-socket", socket_path, "--node-name", "dgx")
    finally:
        server.terminate()
        server.wait(timeout=10)
    if not isinstance(obj, dict):
        return
    zones = zones_of(obj)
    zero, one = zones["node-0"][0], zones["node-1"][0]
    # GetAllocatableResources leaves out CPUs 0, 1 and 48: the kubelet's reserved CPUs
    check(zero["cpu"]["allocatable"] == 46 and one["cpu"]["allocatable"] == 47,
          f"podresources: allocatable CPUs from GetAllocatableResources {zero['cpu']} {one['cpu']}")
    check(zero["cpu"]["available"] == 42, f"podresources: 4 exclusive CPUs held in zone 0: "
          f"{zero['cpu']}")
    check(one["cpu"]["available"] == 45, f"podresources: CPUs 60-61 held in zone 1: {one['cpu']}")
    check(zero["memory"]["capacity"] == 240 * GI and zero["memory"]["allocatable"] == 230 * GI,
          f"podresources: zone 0's allocatable memory from GetAllocatableResources "
          f"{zero['memory']}")
    check(zero["memory"]["available"] == 230 * GI - 8 * GI - 2 * GI,
          f"podresources: 8 GiB + half of 4 GiB of memory held in zone 0: {zero['memory']}")
    check(one["memory"]["available"] == 240 * GI - 2 * GI,
          f"podresources: the other half in zone 1: {one['memory']}")
    check(zero["hugepages-1Gi"]["available"] == 14 * GI, "podresources: 2 x 1 GiB pages held")
    check(zero["nvidia.com/gpu"] == {"capacity": 4, "allocatable": 3, "available": 1},
          f"podresources: an unhealthy GPU and two held in zone 0 {zero['nvidia.com/gpu']}")
    check(one["nvidia.com/gpu"] == {"capacity": 4, "allocatable": 4, "available": 3},
          f"podresources: one GPU held in zone 1 {one['nvidia.com/gpu']}")
    accounted = obj["metadata"].get("annotations", {}).get("kcycle.io/accounted-pods", "")
    check(accounted == "ml/trainer,ml/wide,web/shared",
          f"podresources: kcycle.io/accounted-pods lists every pod, sorted: {accounted}")
    down = agent("--once", "--synthetic", "numa:2 core:2 pu:1", "--podresources-socket",
                 os.path.join(tmp, "missing.sock"), expect=1)
    check("missing.sock" in down.stderr, "an unreachable podresources socket is an error")


def publishing(tmp):
    sys.path.insert(0, os.path.join(SOURCE, "tests", "fakeapi"))
    import fakeclient as fc
    api = fc.FakeAPI(os.path.join(tmp, "fake"))
    api.start()
    process = None
    try:
        kubeconfig = api.kubeconfig(os.path.join(tmp, "kubeconfig"))
        process = subprocess.Popen(
            [AGENT, "--kubeconfig", kubeconfig, "--node-name", "pub-0", "--synthetic",
             "pack:2 numa:1 core:4 pu:2", "--topology-manager-policy", "restricted",
             "--poll-seconds", "1", "--publish-seconds", "2"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "agent.log"), "w"))
        def published():
            return api.get_object("NodeResourceTopology", "pub-0", namespace=None)

        if wait_for(lambda: published() is not None, 30, "the agent to create its object"):
            seen = published()
            check(attribute(seen, "topologyManagerPolicy") == "restricted" and
                  len(seen["zones"]) == 2, "publishing: the object's zones and policy")
            # someone overwrites it: the next periodic report puts it back (an update with
            # the resourceVersion it reads, not a blind write)
            broken = dict(seen, zones=[])
            status, _ = api.put(fc.resource_path("NodeResourceTopology", None, "pub-0"), broken)
            check(status == 200, f"publishing: the test's overwrite ({status})")
            wait_for(lambda: len(published()["zones"]) == 2, 30,
                     "the agent to repair its object")
            api.delete_object("NodeResourceTopology", "pub-0", namespace=None)
            wait_for(lambda: published() is not None, 30, "the agent to create it again")
    finally:
        if process is not None:
            process.terminate()
            process.wait(timeout=10)
            check(process.returncode == 0, f"publishing: clean stop on SIGTERM "
                  f"({process.returncode})")
        api.stop()


def main():
    this_machine()
    dgx()
    epyc()
    workstation()
    synthetic()
    with tempfile.TemporaryDirectory() as tmp:
        kubelet_config(tmp)
        podresources(tmp)
        publishing(tmp)
    print(f"{PASSED[0]} checks passed, {len(FAILURES)} failed")
    return 1 if FAILURES or PASSED[0] == 0 else 0  # a run that checked nothing fails


if __name__ == "__main__":
    sys.exit(main())
