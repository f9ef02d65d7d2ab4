#!/usr/bin/env python3
"""Volumes under --simulate, with the default profile: a static local volume chooses its
pod's node and gets the claimRef, a WaitForFirstConsumer claim is provisioned on the node its
pod is bound to, a missing claim and an unbound Immediate claim park their pods with
kube-scheduler's messages, a ReadWriteOncePod claim serves one pod, and CSI attach limits
from CSINode cap the volumes per node."""
import json
import os
import subprocess
import sys
import tempfile

SCHEDULER, SOURCE = sys.argv[1], sys.argv[2]
PLUGIN_DIR = sys.argv[3] if len(sys.argv) > 3 else None
FAILURES = []
PASSED = [0]


def check(condition, message):
    if condition:
        PASSED[0] += 1
        return
    FAILURES.append(message)
    print("FAIL: " + message)


def simulate(path, tmp, config=None):
    report = os.path.join(tmp, "report.json")
    extra = ["--plugin-dir", PLUGIN_DIR] if PLUGIN_DIR else []
    if config is not None:
        extra += ["--config", config]
    run = subprocess.run([SCHEDULER, "--simulate", path, "--report", report, *extra],
                         capture_output=True, text=True, timeout=60)
    check(run.returncode == 0, f"{os.path.basename(path)}: exit 0, stderr: {run.stderr[-2000:]}")
    if run.returncode != 0:
        return None
    with open(report) as f:
        return json.load(f)


def objects_of(report, kind):
    return {(o["metadata"].get("namespace"), o["metadata"]["name"]): o
            for o in report["objects"] if o["kind"] == kind}


def volumes_example(tmp):
    report = simulate(os.path.join(SOURCE, "examples", "sim", "volumes.yaml"), tmp)
    if report is None:
        return
    pods = {p["name"]: p for p in report["pods"]}
    claims = objects_of(report, "PersistentVolumeClaim")
    volumes = objects_of(report, "PersistentVolume")

    # a static local volume chooses the node
    check(pods["db"]["node"] == "node-b", f"db on its local volume's node, got {pods['db']}")
    ref = volumes[(None, "local-pv-b")]["spec"].get("claimRef", {})
    check(ref.get("namespace") == "shop" and ref.get("name") == "db-data" and
          ref.get("uid") == "claim-db-data",
          f"local-pv-b carries the claimRef kube's binder writes, got {ref}")
    check(claims[("shop", "db-data")]["spec"].get("volumeName") == "local-pv-b",
          "db-data bound to local-pv-b")

    # WaitForFirstConsumer with a provisioner: provisioned on the chosen node
    node = pods["cache"]["node"]
    claim = claims[("shop", "cache-data")]
    selected = claim["metadata"].get("annotations", {}).get("volume.kubernetes.io/selected-node")
    check(node is not None and selected == node,
          f"cache-data selected-node is the node cache was bound to ({node}), got {selected}")
    made = volumes.get((None, claim["spec"].get("volumeName")))
    terms = (made or {}).get("spec", {}).get("nodeAffinity", {}).get("required", {}) \
        .get("nodeSelectorTerms", [])
    check(made is not None and terms[0]["matchExpressions"][0]["values"] == [node],
          f"the provisioned volume is pinned to {node}, got {made}")
    check(claim["status"]["phase"] == "Bound", "cache-data Bound")

    # kube's messages for claims that cannot be used
    check(pods["missing"]["node"] is None and pods["missing"]["reason"] ==
          '0/3 nodes are available: persistentvolumeclaim "nope" not found.' +
          NOT_HELPFUL.format(3),
          f"missing claim refused with kube's message, got {pods['missing']}")
    check(pods["waiting"]["reason"] ==
          "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims." +
          NOT_HELPFUL.format(3),
          f"unbound Immediate claim waits, got {pods['waiting']}")

    # ReadWriteOncePod: one pod only
    solo = [pods["solo-0"], pods["solo-1"]]
    bound = [p for p in solo if p["node"]]
    refused = [p for p in solo if not p["node"]]
    check(len(bound) == 1 and len(refused) == 1, f"one solo pod runs, got {solo}")
    if refused:
        check(refused[0]["reason"] == "0/3 nodes are available: 3 node(s) unavailable due "
              "to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by "
              "another pod." +
              NO_VICTIMS.format(3),
              f"the second ReadWriteOncePod user gets kube's reason, got {refused[0]}")
    check(report["summary"]["object_writes"] == 3 and
          report["summary"]["volumes_provisioned"] == 2,
          f"3 writes, 2 provisioned volumes, got {report['summary']['object_writes']}, "
          f"{report['summary']['volumes_provisioned']}")


LIMITS = """
nodes:
  - {name: n, count: 2, allocatable: {cpu: 8, memory: 8Gi}}
objects:
  - {kind: CSINode, metadata: {name: n-0}, spec: {drivers: [{name: ebs.csi.aws.com, nodeID: a,
     allocatable: {count: 2}}]}}
  - {kind: CSINode, metadata: {name: n-1}, spec: {drivers: [{name: ebs.csi.aws.com, nodeID: b,
     allocatable: {count: 1}}]}}
%s
workload:
%s
"""
# Pod i uses claim data-i, bound to the CSI volume pv-i.
CLAIM = """  - {kind: PersistentVolumeClaim, spec: {volumeName: pv-%(i)d}, metadata: {name: data-%(i)d,
     namespace: default, annotations: {pv.kubernetes.io/bind-completed: "yes"}}}
  - {kind: PersistentVolume, metadata: {name: pv-%(i)d}, spec: {csi: {driver: ebs.csi.aws.com,
     volumeHandle: vol-%(i)d}}}
"""
POD = """  - {name: app-%(i)d, requests: {cpu: 100m}, volumes: [{name: data,
     persistentVolumeClaim: {claimName: data-%(i)d}}]}
"""


def attach_limits(tmp):
    """Four pods, each with its own CSI volume: node n-0 takes two, n-1 one, the fourth fits
    nowhere."""
    path = os.path.join(tmp, "limits.yaml")
    with open(path, "w") as f:
        f.write(LIMITS % ("".join(CLAIM % {"i": i} for i in range(4)),
                          "".join(POD % {"i": i} for i in range(4))))
    report = simulate(path, tmp)
    if report is None:
        return
    placed = {}
    for p in report["pods"]:
        if p["node"]:
            placed[p["node"]] = placed.get(p["node"], 0) + 1
    check(placed == {"n-0": 2, "n-1": 1}, f"attach limits 2 and 1 respected, got {placed}")
    refused = [p for p in report["pods"] if not p["node"]]
    check(len(refused) == 1 and refused[0]["reason"] ==
          "0/2 nodes are available: 2 node(s) exceed max volume count." + NO_VICTIMS.format(2),
          f"the fourth pod gets kube's reason, got {refused}")


# defaultpreemption is in the default profile: kube appends what preemption found
NO_VICTIMS = (" preemption: 0/{0} nodes are available: {0} No preemption victims found for "
              "incoming pod.")
NOT_HELPFUL = (" preemption: 0/{0} nodes are available: {0} Preemption is not helpful for "
               "scheduling.")


# Under `meson test --setup valgrind` the plugin host starts under memcheck: seconds, not ms.
ISOLATED = ("pluginTimeout: 120s\n" if os.environ.get("KCYCLE_TEST_WRAPPER") else "") + """
plugins:
  - {name: prioritysort}
  - {name: noderesources}
  - {name: volumerestrictions, isolation: process, host: volumes}
  - {name: nodevolumelimits, isolation: process, host: volumes}
  - {name: volumebinding, isolation: process, host: volumes}
  - {name: defaultpreemption}
  - {name: defaultbinder}
"""


def isolated_same_result(tmp):
    """The volume plugins in a plugin host: their PreBind writes come back to the scheduler's
    binder, so the placements, messages and writes are those of the in-process run."""
    example = os.path.join(SOURCE, "examples", "sim", "volumes.yaml")
    inprocess = simulate(example, tmp)
    config = os.path.join(tmp, "isolated.yaml")
    with open(config, "w") as f:
        f.write(ISOLATED)
    isolated = simulate(example, tmp, config)
    if inprocess is None or isolated is None:
        return
    check([(p["name"], p["node"], p["reason"]) for p in inprocess["pods"]] ==
          [(p["name"], p["node"], p["reason"]) for p in isolated["pods"]],
          f"same placements and reasons in a plugin host, got {isolated['pods']}")
    check(isolated["summary"]["object_writes"] == inprocess["summary"]["object_writes"] == 3,
          f"the host's writes reach the binder, got {isolated['summary']['object_writes']}")


RWOP_PREEMPTION = """
nodes:
  - {name: n, count: 1, allocatable: {cpu: 8, memory: 8Gi}}
objects:
  - {kind: PersistentVolumeClaim, spec: {volumeName: pv-0, accessModes: [ReadWriteOncePod]},
     metadata: {name: shared, namespace: default,
     annotations: {pv.kubernetes.io/bind-completed: "yes"}}}
  - {kind: PersistentVolume, metadata: {name: pv-0}, spec: {accessModes: [ReadWriteOncePod],
     csi: {driver: ebs.csi.aws.com, volumeHandle: vol-0}}}
pods:
  - {name: low, nodeName: n-0, priority: 0, requests: {cpu: 100m},
     volumes: [{name: data, persistentVolumeClaim: {claimName: shared}}]}
workload:
  - {name: urgent, count: 1, priority: 1000, requests: {cpu: 100m},
     volumes: [{name: data, persistentVolumeClaim: {claimName: shared}}]}
"""


def rwop_preemption(tmp):
    """A ReadWriteOncePod claim held by a lower-priority pod is freed by preemption (kube's
    VolumeRestrictions RemovePod): the holder is evicted and the preemptor takes the claim."""
    path = os.path.join(tmp, "rwop-preemption.yaml")
    with open(path, "w") as f:
        f.write(RWOP_PREEMPTION)
    report = simulate(path, tmp)
    if report is None:
        return
    evicted = [(e["name"], e["preemptor"]) for e in report["preemptions"]]
    pods = {p["name"]: p for p in report["pods"]}
    check(evicted == [("low", "urgent-0")], f"RWOP holder low evicted for urgent-0, got {evicted}")
    check(pods["urgent-0"]["node"] == "n-0", f"urgent-0 bound to n-0, got {pods['urgent-0']}")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        rwop_preemption(tmp)
        volumes_example(tmp)
        attach_limits(tmp)
        isolated_same_result(tmp)
    print(f"{PASSED[0]} passed, {len(FAILURES)} failed")
    return 1 if FAILURES or PASSED[0] == 0 else 0  # a run that checked nothing fails


if __name__ == "__main__":
    sys.exit(main())
