#!/usr/bin/env python3
"""NUMA alignment end to end: a saturating workload of mixed Guaranteed pods on simulated nodes
of 2 and 4 NUMA zones, for every topology manager policy and scope, scheduled once with the
numaalign plugin and once without. A checker written here from the kubelet's topology manager
(independently of the plugin: it walks every permutation of hints as the kubelet does, and reads
the zones from the hwloc synthetic strings itself) replays the kubelet's admission of every
placement in binding order. With numaalign it must reject none, and every binding's
kcycle.io/numa-zones must name the zones the kubelet takes; without numaalign the test prints
how many the kubelet would reject.

A second workload runs GPU pods (Guaranteed, and Burstable ones whose only aligned resource is
the GPU) on nodes described by the 2-socket hwloc XML fixture (4 GPUs per socket), which the
checker reads itself.

A pod with a sidecar is refused with a reason naming it, in process and in a plugin host.

usage: test_numa.py SCHEDULER PLUGIN_DIR [SOURCE_DIR]"""
import itertools
import json
import xml.etree.ElementTree as ET
import os
import re
import subprocess
import sys
import tempfile

SCHEDULER, PLUGIN_DIR = sys.argv[1], sys.argv[2]
SOURCE = sys.argv[3] if len(sys.argv) > 3 else os.path.join(os.path.dirname(__file__), "..", "..")
GPU_MACHINE = os.path.abspath(os.path.join(SOURCE, "tests", "fixtures", "topology",
                                           "dgx-2socket-8gpu.xml"))
FAILURES = []
PASSED = [0]
GI = 1 << 30

# Two node shapes: 2 zones of 16 CPUs / 64 GiB, 4 zones of 8 CPUs / 32 GiB. Half the nodes
# reserve CPU 0 (reservedSystemCPUs), as production kubelets do.
SHAPES = [
    ("two", "pack:2 numa:1(memory=64GiB) core:8 pu:2"),
    ("four", "pack:2 numa:2(memory=32GiB) core:4 pu:2"),
]
POLICIES = ["single-numa-node", "restricted", "best-effort"]
SCOPES = ["container", "pod"]


def check(condition, message):
    if condition:
        PASSED[0] += 1
        return
    FAILURES.append(message)
    print("FAIL: " + message)


# ---- the machine, read from the synthetic description --------------------------------------

def parse_synthetic(text):
    """Zones, PUs per zone and memory per zone of 'pack:2 numa:2(memory=32GiB) core:4 pu:2'."""
    zones, per_zone, memory, seen_numa = 1, 1, None, False
    for level in text.split():
        m = re.match(r"(\w+):(\d+)(?:\(memory=(\d+)GiB\))?$", level)
        assert m, level
        kind, count = m.group(1), int(m.group(2))
        if kind == "numa":
            seen_numa = True
            zones *= count
            memory = int(m.group(3)) * GI
        elif seen_numa:
            per_zone *= count
        else:
            zones *= count
    return zones, per_zone, memory


def parse_xml(path):
    """Per NUMA node, in os_index order: PUs, normal memory and NVIDIA/AMD GPUs of the object
    that holds it (its package or group), read from an hwloc XML file."""
    root = ET.parse(path).getroot()
    parent = {child: obj for obj in root.iter("object") for child in obj}
    zones = []
    for numa in root.iter("object"):
        if numa.get("type") != "NUMANode":
            continue
        holder = parent[numa]
        pus = sum(1 for o in holder.iter("object") if o.get("type") == "PU")
        huge = sum(int(p.get("size")) * int(p.get("count")) for p in numa.iter("page_type")
                   if int(p.get("size")) > 4096)
        gpus = sum(1 for o in holder.iter("object") if o.get("type") == "PCIDev" and
                   o.get("pci_type", "").startswith("03") and
                   o.get("pci_type", "").split("[")[1][:4] in ("10de", "1002"))
        zones.append((int(numa.get("os_index")), pus, int(numa.get("local_memory")) - huge,
                      gpus))
    zones.sort()
    return [z[1] for z in zones], [z[2] for z in zones], [z[3] for z in zones]


class Node:
    def __init__(self, name, policy, scope, reserved, synthetic=None, xml=None):
        self.name, self.policy, self.scope = name, policy, scope
        if synthetic is not None:
            zones, per_zone, memory = parse_synthetic(synthetic)
            cpus, memories, gpus = [per_zone] * zones, [memory] * zones, [0] * zones
        else:
            cpus, memories, gpus = parse_xml(xml)
        self.zones = len(cpus)
        self.cpu_total = list(cpus)  # every PU, reserved ones included
        self.cpu_free = list(cpus)
        for cpu in reserved:  # PUs are numbered zone by zone in these machines
            zone = 0
            while cpu >= sum(cpus[:zone + 1]):
                zone += 1
            self.cpu_free[zone] -= 1
        self.memory_total = list(memories)
        self.memory_free = list(memories)
        self.gpu_total = list(gpus)
        self.gpu_free = list(gpus)


# ---- the kubelet's topology manager -----------------------------------------------------------

def masks(zones):
    for bits in range(1, 1 << zones):
        yield bits


def count(mask):
    return bin(mask).count("1")


def in_mask(values, mask):
    return sum(v for z, v in enumerate(values) if mask >> z & 1)


def provider_hints(totals, frees, request, zones):
    """One resource's hints as a manager generates them: every mask whose free amount holds the
    request; preferred when as narrow as the narrowest mask the totals could ever hold it in.
    None when nothing is requested (no preference)."""
    if request == 0:
        return None
    narrowest = zones
    for mask in masks(zones):
        if in_mask(totals, mask) >= request:
            narrowest = min(narrowest, count(mask))
    return [(mask, count(mask) == narrowest) for mask in masks(zones)
            if in_mask(frees, mask) >= request]


def narrower(a, b):
    """bitmask.IsNarrowerThan: fewer zones, then the numerically lower mask."""
    return count(a) < count(b) or (count(a) == count(b) and a < b)


def compare(best_count, current, candidate):
    """HintMerger.compare: the better of two merged hints. Preferred beats non-preferred;
    among preferred the narrower; among non-preferred the one whose zone count is closest to
    best_count (BestNonPreferredAffinityCount), by the kubelet's three cases."""
    if candidate[0] == 0:
        return current
    if current is None:
        return candidate
    if current[1] != candidate[1]:
        return current if current[1] else candidate
    fitter = candidate if candidate[0] != current[0] and narrower(candidate[0], current[0]) \
        else current
    cur, cand = count(current[0]), count(candidate[0])
    if current[1] or cur > best_count:
        return fitter
    if cur == best_count:
        return fitter if cand == best_count else current
    if cand > best_count:
        return current
    if cand == best_count:
        return candidate
    if cand != cur:
        return candidate if cand > cur else current
    return fitter


def merge(node, hint_lists):
    """filterProvidersHints + (single-numa-node filter) + HintMerger.Merge: a permutation is
    preferred only when all its hints are preferred and all their masks (None: no preference)
    are equal."""
    everything = (1 << node.zones) - 1
    lists = []
    for hints in hint_lists:
        if hints is None:
            lists.append([(None, True)])
        elif not hints:
            lists.append([(None, False)])
        else:
            lists.append(hints)
    if node.policy == "single-numa-node":
        lists = [[(m, p) for m, p in hints if p and (m is None or count(m) == 1)]
                 for hints in lists]
    best_count = 0
    for hints in lists:
        widths = [count(m) for m, _ in hints if m is not None]
        if widths:
            best_count = max(best_count, min(widths))
    best = None
    for permutation in itertools.product(*lists):
        merged, preferred = everything, True
        masks_given = [mask for mask, _ in permutation if mask is not None]
        for mask in masks_given:
            merged &= mask
        preferred = all(pref for _, pref in permutation) and \
            all(mask == masks_given[0] for mask in masks_given)
        best = compare(best_count, best, (merged, preferred))
    return best if best is not None else (everything, False)


def admits(policy, hint):
    return hint[1] if policy in ("single-numa-node", "restricted") else True


def take(frees, amount, mask):
    """The managers allocate from the hint's zones, lowest first, then from the others."""
    taken = [0] * len(frees)
    order = [z for z in range(len(frees)) if mask >> z & 1] + \
            [z for z in range(len(frees)) if not mask >> z & 1]
    for z in order:
        part = min(frees[z], amount)
        frees[z] -= part
        taken[z] += part
        amount -= part
    return taken, amount == 0


def exclusive(pod, cpu_milli):
    return pod["guaranteed"] and cpu_milli % 1000 == 0


def admit(node, pod):
    """Admit pod on node as the kubelet would; on success the node's free amounts shrink.
    Returns (admitted, zones the aligned resources were taken from). The CPU manager aligns
    whole CPUs of Guaranteed pods, the memory manager their memory, the device manager GPUs
    of any pod."""
    frees = [list(node.cpu_free), list(node.memory_free), list(node.gpu_free)]
    totals = [node.cpu_total, node.memory_total, node.gpu_total]

    def unit(c):
        return (c["cpu"] // 1000 if exclusive(pod, c["cpu"]) else 0,
                c["memory"] if pod["guaranteed"] else 0, c.get("gpu", 0))
    units = [unit(c) for c in pod["containers"]]
    if node.scope == "pod":
        units = [tuple(sum(u[k] for u in units) for k in range(3))]
    used = 0
    for amounts in units:
        hints = [provider_hints(totals[k], frees[k], amounts[k], node.zones) for k in range(3)]
        hint = merge(node, hints)
        if not admits(node.policy, hint):
            return False, 0
        for k in range(3):
            taken, ok = take(frees[k], amounts[k], hint[0])
            if not ok:
                return False, 0  # a manager cannot allocate at all
            used |= sum(1 << z for z in range(node.zones) if taken[z])
    node.cpu_free, node.memory_free, node.gpu_free = frees
    return True, used


# ---- the workload --------------------------------------------------------------------------

def container(name, cpu_milli, memory_gi, guaranteed, gpus=0):
    resources = {"requests": {"cpu": f"{cpu_milli}m", "memory": f"{memory_gi}Gi"}}
    if guaranteed:
        resources["limits"] = dict(resources["requests"])
    if gpus:
        resources["requests"]["nvidia.com/gpu"] = str(gpus)
        resources.setdefault("limits", {})["nvidia.com/gpu"] = str(gpus)
    return {"name": name, "image": "example.com/app", "resources": resources}


# (name, count, containers as (cpu milli, memory GiB), guaranteed)
TEMPLATES = [
    ("one", 16, [(1000, 2)], True),
    ("three", 24, [(3000, 4)], True),
    ("five", 16, [(5000, 8)], True),
    ("seven", 12, [(7000, 16)], True),
    ("pair", 10, [(3000, 4), (5000, 4)], True),
    ("wide", 6, [(10000, 20)], True),        # more than a 4-zone node's zone
    ("fraction", 6, [(1500, 2)], True),      # Guaranteed, but not whole CPUs: memory only
    ("burst", 10, [(1000, 2)], False),       # Burstable: not aligned at all
]


# GPU pods on the 2-socket machine: (cpu milli, memory GiB, GPUs) per container
GPU_TEMPLATES = [
    ("cpuheavy", 2, [(40000, 64, 0)], True),  # most of one socket's CPUs, no GPU
    ("g1", 14, [(4000, 8, 1)], True),
    ("g2", 8, [(8000, 16, 2)], True),
    ("g4", 4, [(16000, 32, 4)], True),
    ("gpair", 4, [(2000, 4, 1), (2000, 4, 1)], True),
    ("gburst", 8, [(1000, 2, 1)], False),   # Burstable: only the GPU is aligned
]


def workload(templates=TEMPLATES):
    items, pods = [], {}
    at = 0
    for name, number, shape, guaranteed in templates:
        shape = [tuple(c) + (0,) * (3 - len(c)) for c in shape]
        containers = [container(f"c{i}", cpu, mem, guaranteed, gpus) for i, (cpu, mem, gpus) in
                      enumerate(shape)]
        items.append({"count": number, "at": f"{at}ms", "interval": "8ms", "apiVersion": "v1",
                      "kind": "Pod", "metadata": {"name": name, "namespace": "numa"},
                      "spec": {"containers": containers}})
        for i in range(number):
            pods[f"{name}-{i}"] = {
                "guaranteed": guaranteed,
                "containers": [{"cpu": cpu, "memory": mem * GI, "gpu": gpus}
                               for cpu, mem, gpus in shape]}
        at += 1
    # interleave the templates' arrivals so sizes mix
    return items, pods


def gpu_cluster(policy, scope):
    nodes, machines = [], {}
    for i in range(2):
        name = f"dgx-{i}"
        nodes.append({"name": name, "numaXml": GPU_MACHINE, "topologyManagerPolicy": policy,
                      "topologyManagerScope": scope, "reservedCpus": "0"})
        machines[name] = Node(name, policy, scope, [0], xml=GPU_MACHINE)
    return nodes, machines


def cluster(policy, scope):
    nodes, machines = [], {}
    for shape, synthetic in SHAPES:
        for i in range(3):
            name = f"{shape}-{i}"
            reserved = "0" if i % 2 == 0 else None
            entry = {"name": name, "numa": synthetic, "topologyManagerPolicy": policy,
                     "topologyManagerScope": scope}
            if reserved:
                entry["reservedCpus"] = reserved
            nodes.append(entry)
            machines[name] = Node(name, policy, scope, [0] if reserved else [],
                                  synthetic=synthetic)
    return nodes, machines


def run(tmp, policy, scope, with_plugin, isolation="inprocess", gpu=False):
    plugins = ["prioritysort", "noderesources"] + (["numaalign"] if with_plugin else []) + \
              ["defaultbinder"]
    nodes, machines = (gpu_cluster if gpu else cluster)(policy, scope)
    items, pods = workload(GPU_TEMPLATES if gpu else TEMPLATES)
    entries = [{"name": p, "isolation": isolation} if p == "numaalign" else {"name": p}
               for p in plugins]
    spec = {"config": {"plugins": entries}, "nodes": nodes, "workload": items}
    path = os.path.join(tmp, f"numa-{policy}-{scope}-{with_plugin}-{isolation}-{gpu}.json")
    with open(path, "w") as f:
        json.dump(spec, f)
    report_path = path + ".report"
    result = subprocess.run([SCHEDULER, "--simulate", path, "--plugin-dir", PLUGIN_DIR,
                             "--report", report_path, "--quiet"],
                            capture_output=True, text=True, timeout=120)
    check(result.returncode == 0, f"{policy}/{scope}: scheduler exit {result.returncode}: "
          f"{result.stderr[-800:]}")
    with open(report_path) as f:
        report = json.load(f)
    return report, machines, pods, result.stdout


def replay(report, machines, pods, label, with_plugin):
    bound = sorted((p for p in report["pods"] if p["node"] is not None),
                   key=lambda p: p["bind_order"])
    rejected = disagreements = aligned = 0
    for p in bound:
        pod = pods[p["name"]]
        node = machines[p["node"]]
        ok, zones = admit(node, pod)
        if not ok:
            rejected += 1
            continue
        if with_plugin and zones:
            aligned += 1
            written = p.get("numa_zones")
            mine = ",".join(str(z) for z in range(node.zones) if zones >> z & 1)
            if written != mine:
                disagreements += 1
                if disagreements <= 3:
                    print(f"  {label}: {p['name']} on {p['node']}: annotation {written}, "
                          f"the kubelet takes {mine}")
    return len(bound), rejected, disagreements, aligned


def sidecars(tmp, isolation):
    """A Guaranteed pod with a sidecar (init container with restartPolicy Always) is refused
    with a reason naming it (the kubelet adds a sidecar's CPUs to the app containers', which
    numaalign does not model); the same pod with an ordinary init container is placed."""
    def pod(name, init_name, restart):
        whole = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}
        init = {"name": init_name, "image": "example.com/app", "resources": whole}
        if restart:
            init["restartPolicy"] = "Always"
        return {"count": 1, "at": "0ms", "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": "numa"},
                "spec": {"initContainers": [init],
                         "containers": [container("main", 2000, 1, True)]}}
    spec = {"config": {"plugins": [{"name": "prioritysort"}, {"name": "noderesources"},
                                   {"name": "numaalign", "isolation": isolation},
                                   {"name": "defaultbinder"}]},
            "nodes": [{"name": "two-0", "numa": SHAPES[0][1],
                       "topologyManagerPolicy": "single-numa-node"}],
            "workload": [pod("meshed", "proxy", True), pod("plain", "setup", False)]}
    path = os.path.join(tmp, f"sidecars-{isolation}.json")
    with open(path, "w") as f:
        json.dump(spec, f)
    result = subprocess.run([SCHEDULER, "--simulate", path, "--plugin-dir", PLUGIN_DIR,
                             "--report", path + ".report", "--quiet"],
                            capture_output=True, text=True, timeout=120)
    check(result.returncode == 0, f"sidecars ({isolation}): scheduler exit "
          f"{result.returncode}: {result.stderr[-800:]}")
    with open(path + ".report") as f:
        placed = {p["name"]: p for p in json.load(f)["pods"]}
    meshed, plain = placed.get("meshed-0", {}), placed.get("plain-0", {})
    check(meshed.get("node") is None and "init container proxy is a sidecar" in
          (meshed.get("reason") or ""), f"sidecars ({isolation}): the pod with a sidecar is "
          f"refused naming it: {meshed}")
    check(plain.get("node") == "two-0", f"sidecars ({isolation}): the pod with an ordinary "
          f"init container is placed: {plain}")


def long_simulation(tmp):
    """Pods that arrive minutes apart: the simulated node's one report lists no pods, so
    numaalign's charges last (they must not lapse after unlistedPodGraceSeconds of simulated
    time and let the second pod onto the first one's zone)."""
    spec = {"config": {"plugins": [{"name": "prioritysort"}, {"name": "noderesources"},
                                   {"name": "numaalign"}, {"name": "defaultbinder"}]},
            "nodes": [{"name": "two-0", "numa": SHAPES[0][1],
                       "topologyManagerPolicy": "single-numa-node"}],
            "workload": [{"count": 2, "at": "0ms", "interval": "90s", "apiVersion": "v1",
                          "kind": "Pod", "metadata": {"name": "big", "namespace": "numa"},
                          "spec": {"containers": [container("main", 12000, 4, True)]}}]}
    path = os.path.join(tmp, "long.json")
    with open(path, "w") as f:
        json.dump(spec, f)
    result = subprocess.run([SCHEDULER, "--simulate", path, "--plugin-dir", PLUGIN_DIR,
                             "--report", path + ".report", "--quiet"],
                            capture_output=True, text=True, timeout=120)
    check(result.returncode == 0, f"long simulation: scheduler exit {result.returncode}: "
          f"{result.stderr[-800:]}")
    with open(path + ".report") as f:
        zones = sorted(p.get("numa_zones") or "" for p in json.load(f)["pods"])
    check(zones == ["0", "1"], f"long simulation: 12-CPU pods 90 s apart take a zone each: "
          f"{zones}")


def main():
    totals = {}
    with tempfile.TemporaryDirectory() as tmp:
        for isolation in ("inprocess", "process"):
            sidecars(tmp, isolation)
        long_simulation(tmp)
        for policy in POLICIES:
            for scope in SCOPES:
                label = f"{policy}/{scope}"
                report, machines, pods, out = run(tmp, policy, scope, True)
                placed, rejected, disagreements, aligned = replay(report, machines, pods,
                                                                  label, True)
                check(placed > 0 and aligned > 0, f"{label}: pods were placed and aligned")
                check(rejected == 0, f"{label}: with numaalign the kubelet rejects "
                      f"{rejected} of {placed} placements")
                check(disagreements == 0, f"{label}: {disagreements} bindings whose "
                      "kcycle.io/numa-zones differ from the zones the kubelet takes")
                check("NUMA:" in out, f"{label}: the summary has a NUMA line")
                numa = report.get("numa", {})
                if policy != "best-effort":
                    check(numa.get("misaligned") == 0 and numa.get("without_zones") == 0,
                          f"{label}: the report counts no misaligned placement: {numa}")
                unscheduled = sum(1 for p in report["pods"] if p["node"] is None)
                # the workload saturates the cluster: some pods must be left over
                check(unscheduled > 0, f"{label}: the workload saturates the cluster")
                if (policy, scope) in (("single-numa-node", "container"), ("restricted", "pod")):
                    # numaalign in a plugin host: the same placements and zones
                    hosted, _, _, _ = run(tmp, policy, scope, True, "process")
                    mine = [(p["name"], p["node"], p.get("numa_zones")) for p in report["pods"]]
                    theirs = [(p["name"], p["node"], p.get("numa_zones")) for p in hosted["pods"]]
                    check(mine == theirs, f"{label}: numaalign in a plugin host places and "
                          "annotates exactly as in process")
                base, machines, pods, _ = run(tmp, policy, scope, False)
                base_placed, base_rejected, _, _ = replay(base, machines, pods, label, False)
                totals[label] = (placed, rejected, base_placed, base_rejected)
                print(f"{label:28s} numaalign: {placed:3d} placed, {rejected} rejected by the "
                      f"kubelet; without: {base_placed:3d} placed, {base_rejected:3d} rejected")
        for policy, scope in (("single-numa-node", "container"), ("restricted", "pod"),
                              ("best-effort", "container")):
            label = f"GPU {policy}/{scope}"
            report, machines, pods, out = run(tmp, policy, scope, True, gpu=True)
            placed, rejected, disagreements, aligned = replay(report, machines, pods, label, True)
            check(placed > 0 and aligned > 0, f"{label}: pods were placed and aligned")
            check(rejected == 0, f"{label}: with numaalign the kubelet rejects {rejected} of "
                  f"{placed} placements")
            check(disagreements == 0, f"{label}: {disagreements} bindings whose "
                  "kcycle.io/numa-zones differ from the zones the kubelet takes")
            gpus_left = sum(1 for p in report["pods"] if p["node"] is None)
            check(gpus_left > 0, f"{label}: the GPU workload saturates the GPUs")
            base, machines, pods, _ = run(tmp, policy, scope, False, gpu=True)
            base_placed, base_rejected, _, _ = replay(base, machines, pods, label, False)
            totals[label] = (placed, rejected, base_placed, base_rejected)
            print(f"{label:28s} numaalign: {placed:3d} placed, {rejected} rejected by the "
                  f"kubelet; without: {base_placed:3d} placed, {base_rejected:3d} rejected")
    with_sum = sum(v[1] for v in totals.values())
    without_sum = sum(v[3] for v in totals.values())
    print(f"kubelet rejections over all policies and scopes: with numaalign {with_sum}, "
          f"without {without_sum}")
    check(with_sum == 0, "no placement rejected with numaalign")
    check(without_sum > 0, "the workload is one a topology-unaware scheduler gets wrong")
    print(f"{PASSED[0]} checks passed, {len(FAILURES)} failed")
    return 1 if FAILURES or PASSED[0] == 0 else 0  # a run that checked nothing fails


if __name__ == "__main__":
    sys.exit(main())
