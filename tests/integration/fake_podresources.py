#!/usr/bin/env python3
"""A fake kubelet podresources API (v1.PodResourcesLister List and GetAllocatableResources)
on a unix socket, for test_topology_agent.py. Messages are encoded by hand (no generated code):
the answers describe the 2-socket fixture (CPUs 0-47 on NUMA 0, 48-95 on NUMA 1).

usage: fake_podresources.py SOCKET (runs until SIGTERM)"""
import signal
import sys
import threading
from concurrent import futures

import grpc

GI = 1 << 30

def varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        byte = n & 0x7f
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number, wire, payload):
    key = varint(number << 3 | wire)
    if wire == 0:
        return key + varint(payload)
    return key + varint(len(payload)) + payload


def message(number, payload):
    return field(number, 2, payload)


def text(number, value):
    return field(number, 2, value.encode())


def packed(number, values):
    return field(number, 2, b"".join(varint(v) for v in values))


def topology(nodes):
    return message(3, b"".join(message(1, field(1, 0, n)) for n in nodes))


def container(name, cpus=(), memory=(), devices=()):
    body = text(1, name)
    for resource, ids, node in devices:
        body += message(2, text(1, resource) + b"".join(text(2, i) for i in ids) +
                        topology([node]))
    if cpus:
        body += packed(3, cpus)
    for kind, size, nodes in memory:
        body += message(4, text(1, kind) + field(2, 0, size) + topology(nodes))
    return body


def pod(namespace, name, containers):
    return text(1, name) + text(2, namespace) + b"".join(message(3, c) for c in containers)


LIST = b"".join(message(1, p) for p in [  # not in order: the agent sorts them
    pod("web", "shared", [container("nginx")]),  # no exclusive resources: listed, nothing held
    pod("ml", "trainer", [container("main", cpus=[2, 3, 4, 5],
                                    memory=[("memory", 8 * GI, [0]),
                                            ("hugepages-1Gi", 2 * GI, [0])],
                                    devices=[("nvidia.com/gpu", ["GPU-0", "GPU-1"], 0)])]),
    pod("ml", "wide", [container("a", cpus=[60, 61]),
                       container("b", memory=[("memory", 4 * GI, [0, 1])],
                                 devices=[("nvidia.com/gpu", ["GPU-5"], 1)])]),
])
# CPUs 0, 1 and 48 reserved; 10 GiB of zone 0's memory reserved (--reserved-memory); one of
# zone 0's four GPUs unhealthy, so three may be handed out there
ALLOCATABLE = (packed(2, [c for c in range(96) if c not in (0, 1, 48)]) +
               message(3, text(1, "memory") + field(2, 0, 230 * GI) + topology([0])) +
               message(3, text(1, "memory") + field(2, 0, 240 * GI) + topology([1])) +
               message(1, text(1, "nvidia.com/gpu") +
                       b"".join(text(2, f"GPU-{i}") for i in range(3)) + topology([0])) +
               message(1, text(1, "nvidia.com/gpu") +
                       b"".join(text(2, f"GPU-{i}") for i in range(4, 8)) + topology([1])))


def fake_kubelet(socket_path):
    import grpc
    from concurrent import futures

    def answer(payload):
        return grpc.unary_unary_rpc_method_handler(lambda request, context: payload)

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(
        "v1.PodResourcesLister",
        {"List": answer(LIST), "GetAllocatableResources": answer(ALLOCATABLE)})])
    server.add_insecure_port("unix:" + socket_path)
    server.start()
    return server



def main():
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    server = fake_kubelet(sys.argv[1])
    stop.wait()
    server.stop(0)


if __name__ == "__main__":
    main()
