#!/usr/bin/env python3
"""GPUs and CPUs in one NUMA zone: numaalign and gpushare together in one simulation. Pods ask
for 2 whole cards and CPUs under single-numa-node (kcycle.io/numa-policy, and the node's
topology manager policy). On every node that can offer it, each placed pod's cards (gpushare's
kcycle.io/gpu-assignment: numaZone and card indexes) lie in the zone numaalign chose for its
CPUs (kcycle.io/numa-zones), no card is given twice, and pods are placed until the zones'
cards are used up. On nodes whose zones cannot hold 2 cards the pod is refused with the
plugins' reasons. The same runs with both plugins in one plugin host (isolation: process) give
the same placements.

Where the cards are is read here independently of the plugins: from the hwloc XML fixtures
(NVIDIA 3D controllers per package, in document order, as the topology agent numbers them) and
from the kcycle.io/gpus annotations the test writes.

usage: test_gpu_numa.py SCHEDULER PLUGIN_DIR SOURCE_DIR"""
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

SCHEDULER, PLUGIN_DIR, SOURCE = sys.argv[1], sys.argv[2], sys.argv[3]
FIXTURES = os.path.join(os.path.abspath(SOURCE), "tests", "fixtures", "topology")
FAILURES = []
PASSED = [0]
MIB = 81920
ALIGN = "cannot align container"  # numaalign's reason (scope container)
GPU_ZONE = "cannot put GPUs and CPUs in one NUMA zone"  # gpushare's


def check(condition, message):
    if condition:
        PASSED[0] += 1
        return
    FAILURES.append(message)
    print("FAIL: " + message)


def xml_card_zones(path):
    """Zone of each NVIDIA GPU of an hwloc XML export, in document order."""
    root = ET.parse(path).getroot()
    zones = []

    def walk(obj, zone):
        for child in obj.findall("object"):
            if child.get("type") == "NUMANode":
                zone = int(child.get("os_index"))
        for child in obj.findall("object"):
            kind = child.get("pci_type", "")
            if child.get("type") == "PCIDev" and kind.startswith("03") and "[10de:" in kind:
                zones.append(zone)
            walk(child, zone)

    walk(root, None)
    return zones


def gpus_annotation(zones, mode="whole"):
    return json.dumps([{"memory": MIB, "numa": z, "mode": mode} for z in zones])


# Nodes: (name, file lines, zone of each card). Each is scheduled alone.
NODES = {
    # 2 sockets, 4 GPUs each: cards from the NRT the simulator builds from the XML
    "dgx": (["    numaXml: " + os.path.join(FIXTURES, "dgx-2socket-8gpu.xml"),
             '    labels: {nvidia.com/gpu.memory: "81920"}'],
            xml_card_zones(os.path.join(FIXTURES, "dgx-2socket-8gpu.xml"))),
    # a synthetic machine, cards from kcycle.io/gpus with a zone each (3 + 3): the third pod
    # finds 2 free cards, but one per zone
    "syn": (['    numa: "pack:2 numa:1(memory=128GiB) core:12 pu:2"',
             "    allocatable: {nvidia.com/gpu: 6}",
             "    annotations: {kcycle.io/gpus: '%s'}" % gpus_annotation([0, 0, 0, 1, 1, 1])],
            [0, 0, 0, 1, 1, 1]),
    # the same with shared cards (HAMi's 10 users each): a pod without gpumem holds its cards
    # alone, while the node advertises 60 nvidia.com/gpu
    "shared": (['    numa: "pack:2 numa:1(memory=128GiB) core:12 pu:2"',
                "    allocatable: {nvidia.com/gpu: 60}",
                "    annotations: {kcycle.io/gpus: '%s'}"
                % gpus_annotation([0, 0, 0, 1, 1, 1], "shared")],
               [0, 0, 0, 1, 1, 1]),
    # one GPU per socket: no zone holds 2 cards
    "pair": (["    numaXml: " + os.path.join(FIXTURES, "2socket-2gpu.xml"),
              '    labels: {nvidia.com/gpu.memory: "81920"}'],
             xml_card_zones(os.path.join(FIXTURES, "2socket-2gpu.xml"))),
    # 3 cards in zone 0, 1 in zone 1: the second pod finds 2 free cards, but in two zones
    # (allocatable nvidia.com/gpu left to the simulator: the cards' count)
    "lopsided": (['    numa: "pack:2 numa:1(memory=128GiB) core:12 pu:2"',
                  "    annotations: {kcycle.io/gpus: '%s'}" % gpus_annotation([0, 0, 0, 1])],
                 [0, 0, 0, 1]),
}


def sim_file(tmp, node, pods, plugins, isolation):
    lines = ["config:", "  plugins:", "    - name: prioritysort", "    - name: noderesources"]
    if os.environ.get("KCYCLE_TEST_WRAPPER"):  # a plugin host under memcheck starts in seconds
        lines.insert(1, "  pluginTimeout: 120s")
    for name in plugins:
        lines.append("    - name: " + name)
        if isolation == "process":
            lines += ["      isolation: process", "      host: gpu"]
    lines += ["    - name: defaultbinder", "nodes:", "  - name: " + node,
              "    topologyManagerPolicy: single-numa-node"]
    lines += NODES[node][0]
    lines += ["workload:", "  - name: train", f"    count: {pods}", "    interval: 10ms",
              "    annotations: {kcycle.io/numa-policy: single-numa-node}",
              "    requests: {cpu: 8, memory: 16Gi, nvidia.com/gpu: 2}",
              "    limits: {cpu: 8, memory: 16Gi, nvidia.com/gpu: 2}"]
    path = os.path.join(tmp, f"{node}-{'-'.join(plugins)}-{isolation}.yaml")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def run(tmp, node, pods, plugins=("numaalign", "gpushare"), isolation="inprocess"):
    path = sim_file(tmp, node, pods, plugins, isolation)
    report = path + ".report.json"
    proc = subprocess.run([SCHEDULER, "--simulate", path, "--plugin-dir", PLUGIN_DIR, "--report",
                           report, "--quiet", "--no-progress"],
                          capture_output=True, text=True, timeout=120)
    label = f"{node} {'+'.join(plugins)} {isolation}"
    check(proc.returncode == 0, f"{label}: exit {proc.returncode}: {proc.stderr[-2000:]}")
    # exit 0 without a report is a failure too: the caller skips its checks on None
    check(proc.returncode != 0 or os.path.exists(report), f"{label}: exit 0 but no report")
    if proc.returncode != 0 or not os.path.exists(report):
        return label, None
    with open(report) as f:
        return label, json.load(f)


def check_file_errors(tmp):
    """A kcycle.io/gpus card in a zone the machine lacks stops the run, naming node and zone."""
    path = os.path.join(tmp, "bad-zone.yaml")
    with open(path, "w") as f:
        f.write("nodes:\n  - name: odd\n    numa: \"pack:2 numa:1(memory=64GiB) core:4 pu:2\"\n"
                "    annotations: {kcycle.io/gpus: '%s'}\n" % gpus_annotation([0, 3]))
    proc = subprocess.run([SCHEDULER, "--simulate", path, "--plugin-dir", PLUGIN_DIR, "--quiet",
                           "--no-progress"], capture_output=True, text=True, timeout=60)
    check(proc.returncode != 0 and "node odd" in proc.stderr and "NUMA zone 3" in proc.stderr,
          f"a card in a missing zone: exit {proc.returncode}, stderr {proc.stderr!r}")


def check_gfd_cards(tmp):
    """The report counts cards gpushare reads from GPU feature discovery's labels."""
    path = os.path.join(tmp, "gfd.yaml")
    with open(path, "w") as f:
        f.write("config:\n  plugins:\n    - name: prioritysort\n    - name: noderesources\n"
                "    - name: gpushare\n    - name: defaultbinder\n"
                "nodes:\n  - name: labelled\n    allocatable: {cpu: 16, memory: 64Gi, "
                "nvidia.com/gpu: 4}\n    labels: {nvidia.com/gpu.product: NVIDIA-A100, "
                "nvidia.com/gpu.memory: \"81920\", nvidia.com/gpu.count: \"4\"}\n"
                "workload:\n  - name: one\n    requests: {cpu: 1, nvidia.com/gpu: 2}\n")
    report = path + ".report.json"
    proc = subprocess.run([SCHEDULER, "--simulate", path, "--plugin-dir", PLUGIN_DIR, "--report",
                           report, "--quiet", "--no-progress"],
                          capture_output=True, text=True, timeout=60)
    gpu = {}
    if proc.returncode == 0:
        with open(report) as f:
            gpu = json.load(f).get("gpu") or {}
    check((gpu.get("cards"), gpu.get("allocated_mib")) == (4, 2 * MIB),
          f"GPU feature discovery labels: exit {proc.returncode}, report gpu {gpu}")


def check_example(tmp):
    """examples/sim/gpu-numa.yaml: both nodes' pods aligned, the last one refused."""
    report = os.path.join(tmp, "example.report.json")
    proc = subprocess.run([SCHEDULER, "--simulate",
                           os.path.join(SOURCE, "examples", "sim", "gpu-numa.yaml"),
                           "--plugin-dir", PLUGIN_DIR, "--report", report, "--quiet",
                           "--no-progress"], capture_output=True, text=True, timeout=60)
    check(proc.returncode == 0, f"example: exit {proc.returncode}: {proc.stderr[-2000:]}")
    if proc.returncode != 0:
        return
    with open(report) as f:
        data = json.load(f)
    zones = {"dgx": NODES["dgx"][1], "box": [0, 0, 0, 1, 1, 1]}
    placed = {}
    for pod in data["pods"]:
        if pod["node"] is None:
            continue
        placed[pod["node"]] = placed.get(pod["node"], 0) + 1
        cards, zone = cards_of(pod), pod.get("numa_zones")
        check(zone is not None and zone.isdigit() and
              (pod.get("gpu_assignment") or {}).get("numaZone") == int(zone) and
              len(cards) == 2 and all(zones[pod["node"]][c] == int(zone) for c in cards),
              f"example: {pod['name']} on {pod['node']}: zones {zone}, "
              f"decision {pod.get('gpu_assignment')}")
    check(placed == {"dgx": 4, "box": 2}, f"example: placed per node {placed}")
    check(len(reasons(data)) == 1 and ALIGN in reasons(data)[0],
          f"example: reasons {reasons(data)}")


def cards_of(pod):
    decision = pod.get("gpu_assignment") or {}
    return [card["index"] for c in decision.get("containers", []) for card in c.get("cards", [])]


def placements(data):
    return [(p["name"], p["node"], p.get("numa_zones"), p.get("gpu_assignment"))
            for p in data["pods"]]


def zone_fits(card_zones):
    """How many 2-card pods the zones hold."""
    return sum(card_zones.count(z) // 2 for z in set(card_zones))


def check_aligned(label, data, card_zones, numaalign=True):
    """Every placed pod: 2 cards, all in the zone numaalign chose (gpushare's numaZone without
    numaalign), none given twice; the pods placed are all the zones' cards allow (2 each)."""
    fits = zone_fits(card_zones)
    placed = [p for p in data["pods"] if p["node"] is not None]
    check(len(placed) == fits, f"{label}: {len(placed)} pods placed; the zones hold {fits}")
    used = []
    for pod in placed:
        cards, zones = cards_of(pod), pod.get("numa_zones")
        decision = pod.get("gpu_assignment") or {}
        check(len(cards) == 2, f"{label}: {pod['name']} got cards {cards}; expected 2")
        if numaalign:
            check(zones is not None and "," not in zones,
                  f"{label}: {pod['name']}: numa zones {zones!r}; expected one zone")
            zone = int(zones) if zones is not None and zones.isdigit() else None
            check(decision.get("numaZone") == zone,
                  f"{label}: {pod['name']}: gpushare's numaZone {decision.get('numaZone')} is "
                  f"not numaalign's zone {zones}")
        else:
            zone = decision.get("numaZone")
        check(all(0 <= c < len(card_zones) and card_zones[c] == zone for c in cards),
              f"{label}: {pod['name']}: cards {cards} are not all in zone {zone} "
              f"(card zones {card_zones})")
        used += cards
    check(len(used) == len(set(used)), f"{label}: a card was given twice: {sorted(used)}")
    gpu = data.get("gpu") or {}
    check(gpu.get("cards") == len(card_zones),
          f"{label}: the report counts {gpu.get('cards')} cards; the node has {len(card_zones)}")
    check(gpu.get("allocated_mib") == MIB * len(used),
          f"{label}: the report counts {gpu.get('allocated_mib')} MiB allocated; "
          f"expected {MIB * len(used)}")


def reasons(data):
    return [p["reason"] or "" for p in data["pods"] if p["node"] is None]


def main():
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for isolation in ("inprocess", "process"):
            # (a) one zone for cards and CPUs, until the zones' cards are used up
            for node in ("dgx", "syn", "shared"):
                card_zones = NODES[node][1]
                label, data = run(tmp, node, zone_fits(card_zones) + 1, isolation=isolation)
                if data is None:
                    continue
                results[(node, isolation)] = placements(data)
                check_aligned(label, data, card_zones)
                # the pod past the zones' cards: dgx has no card left, the others two in two zones
                last = ("Insufficient nvidia.com/gpu" if node == "dgx" else ALIGN)
                check(reasons(data) == [f"0/1 nodes are available: 1 {last}."],
                      f"{label}: reasons {reasons(data)}")
                if isolation == "process":
                    hosts = data["summary"]["plugin_hosts"]
                    check([(h["name"], h["state"], h["restarts"]) for h in hosts] ==
                          [("gpu", "up", 0)], f"{label}: plugin hosts {hosts}")
            # (b) nodes that cannot: refused with numaalign's reason, or gpushare's alone; the
            # lopsided node places its first pod in zone 0
            for node in ("pair", "lopsided"):
                pods = zone_fits(NODES[node][1]) + 1
                for plugins, reason in ((("numaalign", "gpushare"), ALIGN),
                                        (("gpushare",), GPU_ZONE)):
                    label, data = run(tmp, node, pods, plugins=plugins, isolation=isolation)
                    if data is None:
                        continue
                    check(reasons(data) == [f"0/1 nodes are available: 1 {reason}."],
                          f"{label}: reasons {reasons(data)}")
                    check_aligned(label, data, NODES[node][1], numaalign=len(plugins) == 2)
                    if len(plugins) == 2:
                        results[(node, isolation)] = placements(data)
        check_file_errors(tmp)
        check_example(tmp)
        check_gfd_cards(tmp)
        # (c) the same placements with both plugins in one plugin host
        for node in ("dgx", "syn", "shared", "pair", "lopsided"):
            inproc, process = results.get((node, "inprocess")), results.get((node, "process"))
            check(inproc is not None and inproc == process,
                  f"{node}: placements differ between isolation modes:\n  {inproc}\n  {process}")
    print(f"{PASSED[0]} checks passed, {len(FAILURES)} failed")
    return 1 if FAILURES or PASSED[0] == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
