#!/usr/bin/env python3
"""The bridge stops promptly on SIGTERM whatever its threads are waiting for. Against the fake
API server, with a fake scheduler speaking nng's pair v1 over the ipc socket by hand:

  hung  the scheduler asked for the cluster (a sync of several MiB) and reads nothing, so the
        bridge's send waits for a pipe that writes no more; a relist is held open by the API
        server (list_delay_ms) at the same time.
  gone  the scheduler asked, read nothing and went away mid-sync (the bridge's send then waits
        for the next scheduler to connect); a Binding it sent is held by the API server
        (slow_ms) so that an API writer is in its request at the stop.
  lease the leader's renewal is held by the API server at the stop, and so is its release.

In each the bridge gets SIGTERM once the hazards are in place and must exit 0 within a few
seconds (the send waits in slices, a request in flight gets a second's grace, the release
1.5 s a request); before, the send held the stop for up to a minute, a write for its 10 s
timeout and the lease for 5 s, then 2 s more for the release.

usage: test_bridge_stop.py --bridge PATH --source DIR [--time-scale N]"""
import argparse
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

ARGS = None
SP_PAIR1 = b"\x00SP\x00\x00\x11\x00\x00"  # nng's ipc handshake for pair v1
NODES, LABELS = 400, 120  # ~4.5 MiB of labels in the sync: more than a socket buffers
GRACE_S = 5.0  # what the bridge may take to exit after SIGTERM (0.1 to 2.6 s by design)


def scale():
    return ARGS.time_scale * (20 if os.environ.get("KCYCLE_TEST_WRAPPER") else 1)


def exit_bound():
    """The exit is mostly fixed timers (100 ms slices, 1 s grace, 1.5 s per release request), not
    CPU work: a slower build adds a little, not a factor, so the bound stays below what the old
    waits took (10 s a write, 60 s a send)."""
    return GRACE_S + (scale() - 1) * 0.25


def wait_until(what, predicate, timeout):
    deadline = time.monotonic() + timeout * scale()
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout * scale():g}s waiting for {what}")


def varint(value):
    out = b""
    while True:
        byte = value & 0x7F
        value >>= 7
        if value == 0:
            return out + bytes([byte])
        out += bytes([byte | 0x80])


def field_varint(number, value):
    return varint(number << 3) + varint(value)


def field_bytes(number, data):
    data = data.encode() if isinstance(data, str) else data
    return varint(number << 3 | 2) + varint(len(data)) + data


def frame(payload):
    """nng's ipc framing (a type byte, a 64-bit big-endian length) of a pair v1 message (a
    32-bit hop count, then the body)."""
    body = struct.pack(">I", 1) + payload
    return b"\x01" + struct.pack(">Q", len(body)) + body


class FakeScheduler:
    """The scheduler's end of the bridge socket: dials, says hello, then reads only what the
    scenario asks for."""

    def __init__(self, path):
        self.sock = wait_until("the bridge's socket", lambda: self.dial(path), 30)
        self.sock.settimeout(30 * scale())
        self.sock.sendall(SP_PAIR1)
        self.read_exact(8)

    @staticmethod
    def dial(path):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
            return sock
        except OSError:
            sock.close()
            return None

    def read_exact(self, count):
        data = b""
        while len(data) < count:
            part = self.sock.recv(count - len(data))
            if not part:
                raise EOFError("the bridge closed the connection")
            data += part
        return data

    def send(self, payload):
        self.sock.sendall(frame(payload))

    def hello(self, session):
        self.send(field_varint(1, 1) + field_varint(5, session))

    def first_message_length(self):
        """The header of the bridge's first message (the sync's start), body left unread."""
        return struct.unpack(">Q", self.read_exact(9)[1:])[0]

    def close(self):
        self.sock.close()


class Bridge:
    def __init__(self, api, workdir, name, leader_elect=False):
        self.workdir = workdir
        self.socket_path = os.path.join(workdir, name + ".ipc")
        self.log_path = os.path.join(workdir, name + ".log")
        kubeconfig = api.kubeconfig(os.path.join(workdir, "kubeconfig"))
        argv = [ARGS.bridge, "--kubeconfig", kubeconfig, "--listen", "ipc://" + self.socket_path,
                "--identity", name, "--health-port", "0",
                "--health-port-file", os.path.join(workdir, name + ".port"), "-v"]
        argv += ["--lease-namespace", "kube-system"] if leader_elect else ["--no-leader-elect"]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL)

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def terminate(self):
        """SIGTERM; (seconds to exit, exit code), or raises when it outlives the bound."""
        started = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(exit_bound())
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise AssertionError(f"the bridge did not stop within {exit_bound():g}s of "
                                 f"SIGTERM\n{self.log()[-3000:]}")
        return time.monotonic() - started, code

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def held(api, identity, method, path_part=""):
    """A request of this bridge held by the slow_ms fault now (another scenario's may still be
    held: the fault holds a request for its whole delay)."""
    return any(f"({identity})" in r["user_agent"] and method in (None, r["method"])
               and path_part in r["path"]
               for r in api.stats(summary=True)["held_requests"])


def clean_up(api, bridge, scheduler):
    """Whatever a scenario leaves: its bridge, its fake scheduler (None when closed), the faults."""
    bridge.kill()
    if scheduler is not None:
        scheduler.close()
    api.reset_faults()


def load(api, fc):
    labels = {f"stop.kcycle.io/label-{i:03d}": f"{'v' * 56}{i:03d}" for i in range(LABELS)}
    nodes = [fc.node(f"node-{i:04d}", labels=labels) for i in range(NODES)]
    result = api.bulk(nodes + [fc.pod("waiting", scheduler="kcycle", cpu="100m")])
    if result.get("failed"):
        raise AssertionError(f"loading the cluster failed: {result.get('errors')}")


def hung(api, workdir):
    """A scheduler that reads nothing, and a relist held open by the API server."""
    bridge = Bridge(api, workdir, "hung")
    scheduler = None
    try:
        scheduler = FakeScheduler(bridge.socket_path)
        scheduler.hello(0x5E55)
        scheduler.first_message_length()
        # a write, the history dropped and every watch cut: a watch that did not see the
        # write (no bookmark brings it forward meanwhile) resumes into 410 and relists; the
        # CapacityQueue list is held (counted when it arrives, before the delay)
        path = "scheduling.kcycle.io/capacityqueues"
        lists = api.stats(summary=True)["requests"].get(f"list {path}", 0)
        api.faults(list_delay_ms={path: 600000}, bookmark_interval_s=3600)
        api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "moved"}})
        api.compact()
        api.cut_watches()
        wait_until("the CapacityQueue relist", lambda: api.stats(summary=True)["requests"].get(
            f"list {path}", 0) > lists, 30)
        seconds, code = bridge.terminate()
    finally:
        clean_up(api, bridge, scheduler)
    return seconds, code, bridge.log()


def gone(api, fc, workdir):
    """A scheduler gone mid-sync while its Binding is held by the API server."""
    bridge = Bridge(api, workdir, "gone")
    scheduler = None
    try:
        scheduler = FakeScheduler(bridge.socket_path)
        session = 0x60E
        scheduler.hello(session)
        scheduler.first_message_length()
        uid = api.get_object("pods", "waiting")["metadata"]["uid"]
        api.faults(slow_ms=30000)
        binding = field_varint(1, 1) + field_bytes(2, "default") + field_bytes(3, "waiting") + \
            field_bytes(4, uid) + field_bytes(5, "node-0000")
        scheduler.send(field_varint(5, session) + field_bytes(2, binding))
        wait_until("the Binding held by the API server", lambda: held(api, "gone", "POST"), 30)
        scheduler.close()
        scheduler = None
        wait_until("the bridge to see the scheduler go",
                   lambda: "the scheduler disconnected" in bridge.log(), 30)
        seconds, code = bridge.terminate()
    finally:
        clean_up(api, bridge, scheduler)
    return seconds, code, bridge.log()


def lease(api, workdir):
    """A leader whose renewal, and then release, the API server holds."""
    bridge = Bridge(api, workdir, "lease", leader_elect=True)
    try:
        wait_until("the lease taken", lambda: any(
            w["holder"] == "lease" and w["code"] in (200, 201)
            for w in api.stats()["lease_writes"]), 30)
        api.faults(slow_ms=30000)
        wait_until("a renewal held by the API server",
                   lambda: held(api, "lease", None, "/leases/"), 30)
        seconds, code = bridge.terminate()
    finally:
        clean_up(api, bridge, None)
    return seconds, code, bridge.log()


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--bridge", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--time-scale", type=float, default=1.0)
    ARGS = parser.parse_args()
    sys.path.insert(0, os.path.join(ARGS.source, "tests", "fakeapi"))
    import fakeclient as fc

    failures, figures = [], []
    with tempfile.TemporaryDirectory(prefix="kcycle-bridge-stop-") as workdir:
        os.chmod(workdir, 0o700)  # the bridge's socket directory must be its user's only
        with fc.FakeAPI(os.path.join(workdir, "api")) as api:
            load(api, fc)
            for name, run in (("hung", lambda: hung(api, workdir)),
                              ("gone", lambda: gone(api, fc, workdir)),
                              ("lease", lambda: lease(api, workdir))):
                try:
                    seconds, code, log = run()
                except (AssertionError, OSError, EOFError) as e:
                    failures.append(f"{name}: {e}")
                    continue
                figures.append(f"{name}: exited {code} {seconds:.2f}s after SIGTERM")
                if code != 0:
                    failures.append(f"{name}: the bridge exited {code}\n{log[-3000:]}")
                if "does not take messages" in log:
                    failures.append(f"{name}: the stop was taken for a scheduler that does not "
                                    f"take messages\n{log[-3000:]}")
                if name == "gone" and "abandoned" not in log:
                    failures.append(f"gone: the held Binding was not abandoned at the stop\n"
                                    f"{log[-3000:]}")
    for figure in figures:
        print(figure)
    for failure in failures:
        print("FAIL: " + failure)
    return 1 if failures or len(figures) != 3 else 0


if __name__ == "__main__":
    sys.exit(main())
