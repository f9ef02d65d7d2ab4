#!/usr/bin/env python3
"""--watch-config sees a configuration mounted as Kubernetes mounts a ConfigMap: the file's
name is a symlink through a "..data" symlink that the kubelet swaps by rename, so the file's
own name never changes. The scheduler must reload (and only when the content changed).

usage: test_watch_config.py SCHEDULER
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

CHECKS = 0


def check(condition, message):
    global CHECKS
    if not condition:
        raise AssertionError(message)
    CHECKS += 1


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


# Under `meson test --setup valgrind` the scheduler runs under memcheck, many times slower.
SCALE = 20 if os.environ.get("KCYCLE_TEST_WRAPPER") else 1


def config(weight):
    # under valgrind a reload's trial plugin host starts in seconds, not within 5 s
    timeout = "pluginTimeout: 120s\n" if SCALE > 1 else ""
    return (timeout + "plugins:\n  - name: prioritysort\n  - name: noderesources\n"
            f"    weight: {weight}\n  - name: defaultbinder\n")


def publish(mount, version, text):
    """What the kubelet does: a new timestamped dir, a new ..data symlink renamed over."""
    data = os.path.join(mount, f"..{version}")
    os.mkdir(data)
    write(os.path.join(data, "config.yaml"), text)
    tmp_link = os.path.join(mount, "..data_tmp")
    os.symlink(f"..{version}", tmp_link)
    os.rename(tmp_link, os.path.join(mount, "..data"))


def wait_for(log_path, text, count, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(log_path, errors="replace") as f:
            if f.read().count(text) >= count:
                return True
        time.sleep(0.05)
    return False




def watching(pid):
    """The scheduler has its inotify watch (the --watch-config file is watched from then on)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:inotify":
                return True
        except OSError:
            continue
    return False


def main():
    scheduler = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="kcycle-watch-config-")
    ok = False
    proc = None
    try:
        mount = os.path.join(tmp, "config")
        os.mkdir(mount)
        publish(mount, "2026_11_30_01", config(1))
        os.symlink("..data/config.yaml", os.path.join(mount, "config.yaml"))
        sim = os.path.join(tmp, "sim.yaml")
        write(sim, "nodes:\n  - {name: n, count: 20, allocatable: {cpu: 64, memory: 256Gi}}\n"
                   "workload:\n  - {name: w, count: 20000, interval: 0ms, "
                   "requests: {cpu: 10m, memory: 16Mi}}\n")
        log_path = os.path.join(tmp, "scheduler.log")
        with open(log_path, "wb") as log:
            proc = subprocess.Popen([scheduler, "--simulate", sim, "--quiet", "--no-progress",
                                     "--config", os.path.join(mount, "config.yaml"),
                                     "--watch-config", "--pace", "2000"],
                                    stdout=log, stderr=log)
        # polled, not slept: a busy machine (or valgrind) may take seconds to get this far
        deadline = time.monotonic() + 60 * SCALE
        while not watching(proc.pid) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        check(proc.poll() is None, "the scheduler is running")
        check(watching(proc.pid), "the scheduler watches its configuration")
        # the same content published again: no reload (nothing changed for the scheduler)
        publish(mount, "2026_11_30_02", config(1))
        time.sleep(0.6)
        # a new weight: one reload
        publish(mount, "2026_11_30_03", config(7))
        check(wait_for(log_path, "reloaded: plugin generation", 1, 5 * SCALE),
              "a ConfigMap-style update (..data swapped) reloads the configuration")
        with open(log_path, errors="replace") as f:
            text = f.read()
        check(text.count("reloaded: plugin generation") == 1,
              f"reloaded once, not for a republished identical file:\n{text}")
        # a broken file: rejected with its position, the scheduler goes on
        publish(mount, "2026_11_30_04", config(7) + "bogusKey: 1\n")
        check(wait_for(log_path, "rejected, the running one stays", 1, 5 * SCALE),
              "an invalid configuration is rejected")
        with open(log_path, errors="replace") as f:
            text = f.read()
        bogus_line = len(config(7).splitlines()) + 1
        check(f"config.yaml:{bogus_line}:1" in text,
              f"the rejection names file:line:column:\n{text}")
        check(proc.wait(timeout=60 * SCALE) == 0, "the simulation ends normally")
        ok = True
    except (AssertionError, subprocess.TimeoutExpired) as e:
        print(f"FAIL: {e}", file=sys.stderr)
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        if ok:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"files kept in {tmp}", file=sys.stderr)
    print(f"watch-config: {CHECKS} checks passed" if ok else "watch-config: failed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
