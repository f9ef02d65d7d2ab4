#!/usr/bin/env python3
"""A hello the bridge never answers is said again. The scheduler asks its bridge for the whole
cluster (a ToBridge message with hello and a new session) when the connection comes up; nng
may lose a message on a pipe that is going away, and a hello lost that way must not leave the
scheduler waiting for ever. Here a silent bridge (nng's pair v1 handshake over the ipc socket,
then nothing) takes the scheduler's messages: a second hello must come, under another session,
and the scheduler's log must say why.

And a bridge that goes away as it accepts (the connection closed before the SP handshake): the
scheduler must connect to the next bridge on that path all the same (libnng 1.5.2's dialer
gives up for good after such a close; the scheduler dials again).

usage: test_bridge_hello.py SCHEDULER"""
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time

SCHEDULER = sys.argv[1]
SP_PAIR1 = b"\x00SP\x00\x00\x11\x00\x00"  # nng's ipc handshake for pair v1
SCALE = 20 if os.environ.get("KCYCLE_TEST_WRAPPER") else 1  # memcheck is many times slower


def varint(data, pos):
    value, shift = 0, 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def fields(data):
    """The varint fields of a protobuf message (number -> value); other wire types skipped."""
    out, pos = {}, 0
    while pos < len(data):
        key, pos = varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            out[number], pos = varint(data, pos)
        elif wire == 2:
            length, pos = varint(data, pos)
            pos += length
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise ValueError(f"wire type {wire} at byte {pos}")
    return out


def read_exact(conn, count):
    data = b""
    while len(data) < count:
        part = conn.recv(count - len(data))
        if not part:
            raise EOFError("the scheduler closed the connection")
        data += part
    return data


def listen(path):
    """A bridge's listener on path, as the scheduler dials it."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)
    listener.settimeout(30 * SCALE)
    return listener


def start_scheduler(tmp, path):
    """kcycle-scheduler dialing the bridge at path; its log in tmp/scheduler.log."""
    with open(os.path.join(tmp, "scheduler.log"), "w") as log:
        return subprocess.Popen([SCHEDULER, "--bridge", "ipc://" + path, "--health-port", "0",
                                 "-v"], stdout=log, stderr=subprocess.STDOUT)


def next_message(conn):
    """The next message's varint fields (nng's ipc framing: a type byte, a 64-bit big-endian
    length)."""
    header = read_exact(conn, 9)
    (length,) = struct.unpack(">Q", header[1:])
    return fields(read_exact(conn, length))


def stop(sched, failures):
    sched.terminate()
    try:
        return sched.wait(30 * SCALE)
    except subprocess.TimeoutExpired:
        sched.kill()
        failures.append("the scheduler did not stop within 30 s of SIGTERM")
        return sched.wait()


def closed_before_handshake(failures):
    """The first connection is closed at once; the next listener on the path must get the
    scheduler's hello within the deadline."""
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o700)
        path = os.path.join(tmp, "bridge.ipc")
        listener = listen(path)
        sched = start_scheduler(tmp, path)
        hello = None
        try:
            conn, _ = listener.accept()
            conn.close()  # a bridge killed as it accepted
            listener.close()
            os.unlink(path)
            # the bridge's restart: nothing listens on the path for a while (not a wait for a
            # condition: the dialer's attempts meanwhile are what this scenario is about)
            time.sleep(1.0)
            listener = listen(path)
            started = time.monotonic()
            conn, _ = listener.accept()
            conn.settimeout(30 * SCALE)
            read_exact(conn, 8)
            conn.sendall(SP_PAIR1)
            while hello is None:
                if next_message(conn).get(1) == 1:
                    hello = time.monotonic() - started
            conn.close()
        except (OSError, EOFError) as e:
            failures.append(f"after a connection closed before the handshake, no hello came: {e}")
        finally:
            listener.close()
            stop(sched, failures)
        text = open(os.path.join(tmp, "scheduler.log"), errors="replace").read()
    if hello is not None and "dialing" not in text:
        failures.append("the scheduler's log says it dialed: " + text[-600:])
    return hello


def unanswered_hello(failures):
    """A silent bridge: a second hello must come, under a new session, with the log saying
    why. The hellos' (seconds after the handshake, session)."""
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o700)
        path = os.path.join(tmp, "bridge.ipc")
        listener = listen(path)
        sched = start_scheduler(tmp, path)
        hellos = []
        try:
            conn, _ = listener.accept()
            conn.settimeout(40 * SCALE)
            read_exact(conn, 8)
            conn.sendall(SP_PAIR1)
            started = time.monotonic()
            while len(hellos) < 2:
                message = next_message(conn)
                if message.get(1) == 1:  # hello
                    hellos.append((time.monotonic() - started, message.get(5, 0)))
            conn.close()
        except (OSError, EOFError) as e:
            failures.append(f"the silent bridge got {len(hellos)} hello(s), then {e}")
        finally:
            listener.close()
            code = stop(sched, failures)
        text = open(os.path.join(tmp, "scheduler.log"), errors="replace").read()
    if len(hellos) == 2:
        if hellos[0][1] == 0 or hellos[1][1] == 0 or hellos[0][1] == hellos[1][1]:
            failures.append(f"the second hello has a new, non-zero session: {hellos}")
        if hellos[1][0] < 5:
            failures.append(f"the hello was said again only after waiting for an answer: {hellos}")
    if "no answer from the bridge" not in text or "asking again" not in text:
        failures.append("the scheduler's log says it asked again: " + text[-600:])
    if code != 0:
        failures.append(f"the scheduler stopped with {code}: {text[-600:]}")
    return hellos


def main():
    failures = []
    hellos = unanswered_hello(failures)
    redialed = closed_before_handshake(failures)
    for failure in failures:
        print("FAIL: " + failure)
    if failures:
        return 1
    print(f"after a connection closed before the handshake, the next bridge got the hello "
          f"{redialed:.1f} s after it listened")
    print(f"hello said again after {hellos[1][0]:.1f} s under a new session "
          f"({hellos[0][1]:x} -> {hellos[1][1]:x}); the scheduler's log says why")
    return 0


if __name__ == "__main__":
    sys.exit(main())
