#!/usr/bin/env python3
"""Inputs too large to hold end in a clear error, never in an out-of-memory kill.

  api   kcycle-kube-bridge (--max-response-bytes 8Mi --max-event-bytes 2Mi --max-list-bytes
        1Mi) and a scheduler against the fake API server serving four hostile resources at
        once: an endless StorageClass list, a PersistentVolume list that is a gzip bomb
        (~1000:1, 2 GiB decoded), a PersistentVolumeClaim watch whose first event is 1 GiB, a
        PodDisruptionBudget list whose pages hand out continue tokens forever. Each is logged
        naming the resource and the limit and retried with backoff; pods are bound before and
        while it goes on (the bridge keeps serving the other resources); the bridge's peak RSS
        (VmHWM) stays under the larger limit plus 100 MB.
  sim   a 3 KB simulation file asking for 41 million objects: refused before anything is
        built, naming the count that crosses --max-objects, with a small peak RSS.

Under `meson test --setup valgrind` (tests/valgrind/wrap.sh sets KCYCLE_TEST_WRAPPER and runs
the programs given here under memcheck) RSS is valgrind's and is not compared, and every
deadline is 20 times longer.

usage: test_limits.py SCENARIO --scheduler PATH --bridge PATH --source DIR [--sanitized]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

ARGS = None
CHECKS = 0
WRAPPED = os.environ.get("KCYCLE_TEST_WRAPPER", "") != ""
MIB = 1 << 20
RESPONSE_LIMIT = 8 * MIB
EVENT_LIMIT = 2 * MIB
LIST_LIMIT = 1 * MIB
# What a process may use beside the largest limit: the acceptance figure of docs/security.md.
RSS_SLACK = 100 * MIB
# ASan's shadow and allocator take more of their own; its quarantine is kept small below.
SANITIZER_SLACK = 150 * MIB


def check(condition, message):
    global CHECKS
    if not condition:
        raise AssertionError(message)
    CHECKS += 1


def poll(what, predicate, timeout, log=None):
    """predicate() until truthy or the deadline; the value, or AssertionError naming what."""
    deadline = time.monotonic() + timeout * ARGS.time_scale
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            tail = ""
            if log is not None:
                with open(log, errors="replace") as f:
                    tail = "".join(f.readlines()[-30:])
            raise AssertionError(f"timed out waiting for {what}\n{tail}")
        time.sleep(0.05)


def peak_rss(pid):
    """VmHWM of a live process, in bytes."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmHWM for pid {pid}")


def child_env():
    env = dict(os.environ)
    # a small quarantine, so ASan's RSS reflects what the bridge holds, not what it freed
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=16"
    return env


def start(argv, log_path):
    log = open(log_path, "ab")
    proc = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                            env=child_env())
    log.close()
    return proc


def stop(proc, name):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(30 * ARGS.time_scale)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
            raise AssertionError(f"{name} did not stop within 30 s of SIGTERM")
    check(proc.returncode == 0, f"{name} exited with {proc.returncode}")


def read(path):
    with open(path, errors="replace") as f:
        return f.read()


def bound(api, names):
    pods = api.list_objects("pods", namespace="default").get("items", [])
    done = {p["metadata"]["name"] for p in pods if p["spec"].get("nodeName")}
    return set(names) <= done


def scenario_api(workdir):
    sys.path.insert(0, os.path.join(ARGS.source, "tests", "fakeapi"))
    import fakeclient as fc
    hostile = {
        "storage.k8s.io/storageclasses": {"mode": "endless_list", "bytes": 1 << 30},
        "persistentvolumes": {"mode": "gzip_bomb", "bytes": 2 << 30},
        "persistentvolumeclaims": {"mode": "huge_event", "bytes": 1 << 30},
        # pages of 256 KiB, each with a continue token to one more
        "policy/poddisruptionbudgets": {"mode": "endless_continue", "bytes": 256 << 10},
    }
    with fc.FakeAPI(os.path.join(workdir, "api")) as api:
        api.faults(hostile=hostile)
        first = [f"early-{i}" for i in range(5)]
        api.bulk([fc.node(f"node-{i}") for i in range(3)] +
                 [fc.pod(n, scheduler="kcycle", cpu="100m") for n in first])
        socket = f"ipc://{workdir}/bridge.sock"
        bridge_log = os.path.join(workdir, "bridge.log")
        bridge = start([ARGS.bridge, "--kubeconfig", api.kubeconfig(
            os.path.join(workdir, "kubeconfig")), "--listen", socket, "--no-leader-elect",
            "--health-port", "0", "--max-response-bytes", "8Mi", "--max-event-bytes", "2Mi",
            "--max-list-bytes", "1Mi", "-v"], bridge_log)
        scheduler = start([ARGS.scheduler, "--bridge", socket, "--health-port", "0", "-v"],
                          os.path.join(workdir, "scheduler.log"))
        try:
            # each hostile answer is an error naming the resource and the limit
            expected = [
                ("StorageClass list", f"the list is larger than the limit of {RESPONSE_LIMIT}"),
                ("PersistentVolume list", f"the list is larger than the limit of "
                 f"{RESPONSE_LIMIT}"),
                ("PersistentVolumeClaim watch", f"one watch event is larger than the limit of "
                 f"{EVENT_LIMIT}"),
                ("PodDisruptionBudget list", f"the list's pages together are larger than the "
                 f"limit of {LIST_LIMIT}"),
            ]
            for who, text in expected:
                poll(f"'{who}' ... '{text}' in the bridge's log",
                     lambda: any(who in line and text in line and "--max-" in line
                                 for line in read(bridge_log).splitlines()), 60, bridge_log)
            # the other resources are served: the pods are bound
            poll("the first pods bound", lambda: bound(api, first), 90, bridge_log)
            # and go on being served while the hostile ones are retried with backoff
            later = [f"later-{i}" for i in range(5)]
            api.bulk([fc.pod(n, scheduler="kcycle", cpu="100m") for n in later])
            poll("the later pods bound", lambda: bound(api, later), 60, bridge_log)
            requests = poll("three tries of each hostile resource", lambda: (lambda r: r if (
                r.get("list storage.k8s.io/storageclasses", 0) >= 3 and
                r.get("list persistentvolumes", 0) >= 3 and
                r.get("watch persistentvolumeclaims", 0) >= 3) else None)(
                api.stats()["requests"]), 60, bridge_log)
            check(bridge.poll() is None, "the bridge died")
            check(scheduler.poll() is None, "the scheduler died")
            if WRAPPED:
                print("api: RSS not compared: the processes run under valgrind")
            else:
                peak = peak_rss(bridge.pid)
                allowed = RESPONSE_LIMIT + RSS_SLACK + (SANITIZER_SLACK if ARGS.sanitized else 0)
                print(f"api: bridge peak RSS {peak / MIB:.1f} MiB (allowed {allowed / MIB:.0f} "
                      f"MiB); tries: StorageClass lists "
                      f"{requests['list storage.k8s.io/storageclasses']}, PersistentVolume "
                      f"lists {requests['list persistentvolumes']}, PersistentVolumeClaim "
                      f"watches {requests['watch persistentvolumeclaims']}")
                check(peak < allowed, f"the bridge's peak RSS {peak} is over {allowed}")
        finally:
            stop(scheduler, "the scheduler")
            stop(bridge, "the bridge")


def run(argv, workdir):
    """Run a kcycle binary to its end: exit code, stderr and its own peak RSS in bytes."""
    err_path = os.path.join(workdir, "stderr.txt")
    with open(err_path, "wb") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err,
                                stdin=subprocess.DEVNULL, env=child_env())
        deadline = time.monotonic() + 120 * ARGS.time_scale
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid != 0:
                break
            if time.monotonic() > deadline:
                proc.kill()
                raise AssertionError(f"{argv} did not end within the time limit")
            time.sleep(0.02)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, read(err_path), usage.ru_maxrss * 1024


def scenario_sim(workdir):
    path = os.path.join(workdir, "amplifying.yaml")
    lines = ["nodes:", "  - name: n", "    count: 1000000", "workload:"]
    for i in range(40):
        lines += [f"  - name: w{i}", "    count: 1000000", "    requests: {cpu: 100m}"]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    size = os.path.getsize(path)
    code, stderr, peak = run([ARGS.scheduler, "--simulate", path, "--quiet", "--no-progress"],
                             workdir)
    check(code == 1, f"exit {code}, expected 1\n{stderr}")
    # the second template's count (line 9) is the first past the default 2,000,000
    check(f"{path}:9:12:" in stderr and "2000000" in stderr and "--max-objects" in stderr,
          f"the error: {stderr}")
    if WRAPPED:
        print("sim: RSS not compared: the scheduler runs under valgrind")
    else:
        allowed = 64 * MIB + (SANITIZER_SLACK if ARGS.sanitized else 0)
        check(peak < allowed, f"peak RSS {peak} refusing a {size}-byte file")
        print(f"sim: a {size}-byte file asking for 41,000,000 objects refused; peak RSS "
              f"{peak / MIB:.1f} MiB (allowed {allowed / MIB:.0f} MiB)")
    # a file within the limit runs; one object more is refused at the count that crosses it
    small = os.path.join(workdir, "small.yaml")
    with open(small, "w") as f:
        f.write("nodes:\n  - name: n\n    count: 2\nworkload:\n  - name: w\n    count: 3\n"
                "    requests: {cpu: 100m}\n")
    code, stderr, _ = run([ARGS.scheduler, "--simulate", small, "--quiet", "--no-progress",
                           "--max-objects", "5"], workdir)
    check(code == 0, f"a file within --max-objects 5: exit {code}\n{stderr}")
    code, stderr, _ = run([ARGS.scheduler, "--simulate", small, "--quiet", "--no-progress",
                           "--max-objects", "4"], workdir)
    check(code == 1 and f"{small}:6:12:" in stderr,
          f"a file over --max-objects 4: exit {code}\n{stderr}")


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=["api", "sim"])
    parser.add_argument("--scheduler", required=True)
    parser.add_argument("--bridge", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--sanitized", action="store_true")
    parser.add_argument("--time-scale", type=float, default=1.0)
    ARGS = parser.parse_args()
    if WRAPPED:
        ARGS.time_scale *= 20
    with tempfile.TemporaryDirectory(prefix="kcycle-limits-") as workdir:
        {"api": scenario_api, "sim": scenario_sim}[ARGS.scenario](workdir)
    check(CHECKS > 0, "no check ran")
    print(f"{ARGS.scenario}: {CHECKS} checks passed")


if __name__ == "__main__":
    main()
