#!/usr/bin/env python3
"""The hostile local user: a process of another uid (65534) tries every path the scheduler,
its plugin hosts and the bridge use. It cannot enter the default socket directory; where a
socket is configured in a directory anyone may write, it binds the path first or connects,
and the scheduler and the bridge close its connection and log the uid; plugin hosts have no
path at all. Needs root (to change uid); run by meson as the integration suite."""
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time

SCHEDULER, BRIDGE, SOURCE = sys.argv[1], sys.argv[2], sys.argv[3]
HOSTILE_UID = 65534
FAILURES = []
PASSED = [0]

# nng's ipc handshake: "\0SP\0", the 16-bit protocol id, two reserved bytes; pair v1 is 0x11.
SP_PAIR1 = b"\x00SP\x00\x00\x11\x00\x00"


def check(condition, message):
    if condition:
        PASSED[0] += 1
        return
    FAILURES.append(message)
    print("FAIL: " + message)


# the programs run under memcheck in `meson test --setup valgrind`: many times slower
SCALE = 20 if os.environ.get("KCYCLE_TEST_WRAPPER") else 1


def poll(condition, seconds=30):
    """condition() until it is true or the deadline passes; its last value."""
    deadline = time.monotonic() + seconds * SCALE
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.02)


def as_hostile(work):
    """Run work() in a child that has become uid 65534; its return value (a short string)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            os.setgroups([])
            os.setgid(HOSTILE_UID)
            os.setuid(HOSTILE_UID)
            result = work()
        except Exception as e:  # the outcome is the test's data, not a crash
            result = "exception " + type(e).__name__ + ": " + str(e)
        os.write(write, result.encode())
        os._exit(0)
    os.close(write)
    chunks = []
    while True:
        data = os.read(read, 4096)
        if not data:
            break
        chunks.append(data)
    os.close(read)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode()


def try_bind_and_connect(path):
    outcomes = []
    for what in ("bind", "connect"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            if what == "bind":
                s.bind(path + ".hostile")
            else:
                s.connect(path)
            outcomes.append(what + " ok")
        except OSError as e:
            outcomes.append(f"{what} errno {e.errno}")
        finally:
            s.close()
    return ", ".join(outcomes)


class Log:
    """A process's stderr collected into a file, read while it runs."""

    def __init__(self, tmp, name):
        self.path = os.path.join(tmp, name + ".log")
        self.file = open(self.path, "w")

    def text(self):
        with open(self.path) as f:
            return f.read()


def start(argv, log, **kwargs):
    return subprocess.Popen(argv, stdout=log.file, stderr=log.file, **kwargs)


def stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30 * SCALE)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# Under `meson test --setup valgrind` plugin hosts start under memcheck: seconds, not ms.
PLUGIN_TIMEOUT = "pluginTimeout: 120s\n" if os.environ.get("KCYCLE_TEST_WRAPPER") else ""


def config(tmp, isolation):
    path = os.path.join(tmp, f"config-{isolation}.yaml")
    with open(path, "w") as f:
        f.write(PLUGIN_TIMEOUT + "plugins:\n"
                "  - {name: prioritysort}\n"
                f"  - {{name: noderesources, isolation: {isolation}}}\n"
                f"  - {{name: defaultbinder, isolation: {isolation}}}\n")
    return path


def children(pid):
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(entry))
    return found


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def unix_socket_paths():
    """inode -> bound path of every AF_UNIX socket on the machine ("" when unbound)."""
    paths = {}
    with open("/proc/net/unix") as f:
        next(f)
        for line in f:
            fields = line.split()
            paths[fields[6]] = fields[7] if len(fields) > 7 else ""
    return paths


def socket_inodes(pid):
    inodes = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.append(target[8:-1])
    return inodes


def test_default_directory(tmp):
    """The default socket directory is 0700 and ours: the hostile user can neither bind a path
    in it nor connect to the socket. Hosts: no socket of theirs has a path."""
    directory = f"/tmp/kcycle-{os.geteuid()}"
    url_path = os.path.join(directory, f"hostile-test-{os.getpid()}.ipc")
    log = Log(tmp, "default-dir")
    sched = start([SCHEDULER, "--bridge", "ipc://" + url_path, "--health-port", "0",
                   "--config", config(tmp, "process")], log)
    try:
        made = poll(lambda: os.path.isdir(directory))
        check(made, "the scheduler creates the default socket directory")
        if made:
            st = os.lstat(directory)
            check(st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) == 0o700,
                  f"{directory} is ours with mode 0700 (uid {st.st_uid}, mode "
                  f"{stat.S_IMODE(st.st_mode):o})")
        result = as_hostile(lambda: try_bind_and_connect(url_path))
        check(result == "bind errno 13, connect errno 13",
              f"uid {HOSTILE_UID} can neither bind nor connect in {directory}: {result}")
        def started_hosts():
            found = [p for p in children(sched.pid) if b"\0--name\0" in cmdline(p)]
            return found if len(found) == 2 or sched.poll() is not None else None
        hosts = poll(started_hosts)
        check(hosts and len(hosts) == 2, f"the scheduler runs two plugin hosts: {hosts}")
        paths = unix_socket_paths()
        for pid in hosts or []:
            bound = [paths.get(i) for i in socket_inodes(pid) if paths.get(i)]
            check(not bound, f"plugin host {pid} has no socket with a filesystem path: {bound}")
            check(os.readlink(f"/proc/{pid}/fd/3").startswith("socket:"),
                  f"plugin host {pid} serves the socket it inherited as fd 3")
        # a host's channel is a socketpair: the scheduler's end, not a listener, is its peer
        mine = set(socket_inodes(sched.pid))
        bound = [paths.get(i) for i in mine if paths.get(i)]
        check(not bound, f"the scheduler binds no socket path: {bound}")
    finally:
        stop(sched)


def hostile_listener(path, ready_path):
    """Bind path first and answer nng's pair handshake; report what the scheduler sent after."""
    def work():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(path)
        s.listen(4)
        open(ready_path, "w").close()
        s.settimeout(30)
        conn, _ = s.accept()
        conn.settimeout(30)
        hello = b""
        while len(hello) < 8:
            part = conn.recv(8 - len(hello))
            if not part:
                break
            hello += part
        conn.sendall(SP_PAIR1)
        received = b""
        conn.settimeout(5)
        try:
            while True:
                part = conn.recv(65536)
                if not part:
                    break
                received += part
        except socket.timeout:
            pass
        return f"handshake {hello == SP_PAIR1} received {len(received)}"
    return work


def test_scheduler_refuses_a_hostile_bridge(tmp):
    """A socket configured in a world-writable directory: the hostile user binds it first and
    plays a bridge. The scheduler closes the connection before sending anything and says why."""
    shared = tempfile.mkdtemp(prefix="kcycle-hostile-")
    os.chmod(shared, 0o1777)
    path = os.path.join(shared, "bridge.ipc")
    ready = os.path.join(shared, "ready")
    log = Log(tmp, "hostile-bridge")
    reader = {}

    pid = os.fork()
    if pid == 0:
        result = as_hostile(hostile_listener(path, ready))
        with open(os.path.join(tmp, "hostile-bridge.result"), "w") as f:
            f.write(result)
        os._exit(0)
    check(poll(lambda: os.path.exists(ready)), "the hostile user bound the socket path first")
    sched = start([SCHEDULER, "--bridge", "ipc://" + path, "--health-port", "0"], log)
    try:
        refused = poll(lambda: f"refused a connection from uid {HOSTILE_UID}" in log.text())
        check(refused, "the scheduler's log says it refused uid 65534: " + log.text()[-400:])
    finally:
        stop(sched)
        os.waitpid(pid, 0)
    with open(os.path.join(tmp, "hostile-bridge.result")) as f:
        reader["result"] = f.read()
    check(reader["result"].startswith("handshake True received 0"),
          f"the hostile bridge received nothing from the scheduler: {reader['result']}")
    check("connected; asking for the cluster" not in log.text(),
          "the scheduler never counted the hostile bridge as connected")


def hostile_dialer(path):
    def work():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(30)
        s.connect(path)
        s.sendall(SP_PAIR1)
        received = b""
        try:
            while True:
                part = s.recv(65536)
                if not part:
                    break
                received += part
        except socket.timeout:
            return f"still open after 30 s, received {len(received)}"
        return f"closed, received {len(received)}"
    return work


def test_bridge_refuses_a_hostile_scheduler(tmp):
    """The bridge listens in a world-writable directory; the hostile user connects as if it
    were the scheduler. The bridge closes the connection, sends nothing, and logs the uid."""
    shared = tempfile.mkdtemp(prefix="kcycle-hostile-")
    os.chmod(shared, 0o1777)
    path = os.path.join(shared, "bridge.ipc")
    kubeconfig = os.path.join(tmp, "kubeconfig")
    with open(kubeconfig, "w") as f:  # an API server nobody answers: the bridge listens anyway
        f.write("apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:9', "
                "insecure-skip-tls-verify: true}}]\n"
                "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
                "users: [{name: u, user: {token: t}}]\n")
    log = Log(tmp, "bridge")
    bridge = start([BRIDGE, "--kubeconfig", kubeconfig, "--listen", "ipc://" + path,
                    "--no-leader-elect", "--health-port", "0"], log)
    try:
        listening = poll(lambda: os.path.exists(path) or bridge.poll() is not None)
        check(listening and bridge.poll() is None,
              "the bridge listens without an API server: " + log.text()[-400:])
        # as a permissive umask or a shared volume would leave it: the uid check must hold
        os.chmod(path, 0o777)
        result = as_hostile(hostile_dialer(path))
        check(result == "closed, received 8",
              f"the bridge closed the hostile connection after the handshake: {result}")
        refused = poll(lambda: f"refused a connection from uid {HOSTILE_UID}" in log.text())
        check(refused, "the bridge's log says it refused uid 65534: " + log.text()[-400:])
    finally:
        stop(bridge)


def test_unsafe_default_directory_is_refused(tmp):
    """A default directory another user made (or made accessible) is refused with a clear
    error: the scheduler runs as uid 65534 here, whose default directory root pre-created."""
    directory = f"/tmp/kcycle-{HOSTILE_UID}"
    if os.path.lexists(directory):
        subprocess.run(["rm", "-rf", directory], check=True)
    try:
        for owner, mode, why in ((0, 0o777, "owned by uid 0"), (HOSTILE_UID, 0o755, "mode 755")):
            os.mkdir(directory)
            os.chown(directory, owner, owner)
            os.chmod(directory, mode)
            proc = subprocess.run(
                [SCHEDULER, "--bridge", f"ipc://{directory}/bridge.ipc", "--health-port", "0"],
                capture_output=True, text=True, timeout=60 * SCALE,
                preexec_fn=lambda: (os.setgroups([]), os.setgid(HOSTILE_UID),
                                    os.setuid(HOSTILE_UID)))
            check(proc.returncode != 0 and "refusing the socket directory" in proc.stderr
                  and why in proc.stderr,
                  f"an unsafe default directory ({why}) is refused: {proc.stderr[-300:]}")
            os.rmdir(directory)
    finally:
        subprocess.run(["rm", "-rf", directory])


def main():
    if os.geteuid() != 0:
        print("FAIL: this test changes uid and must run as root")
        sys.exit(1)
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)
        test_default_directory(tmp)
        test_scheduler_refuses_a_hostile_bridge(tmp)
        test_bridge_refuses_a_hostile_scheduler(tmp)
        test_unsafe_default_directory_is_refused(tmp)
    print(f"{PASSED[0]} checks passed, {len(FAILURES)} failed")
    sys.exit(1 if FAILURES or PASSED[0] == 0 else 0)  # a run that checked nothing fails


if __name__ == "__main__":
    main()
