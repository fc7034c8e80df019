"""Free TCP ports on this machine's loopback address, for the processes of a cluster started here (a `cpu-ps` train
step's servers, the local engine's CustomJob replicas, the benchmarks' and tests' multi-process runs)."""

from __future__ import annotations

import socket

LOOPBACK = "127.0.0.1"


def free_local_ports(count: int) -> list[int]:
    """`count` distinct ports on `LOOPBACK` the kernel says are free now: all bound together before any is closed,
    so none repeats within one call."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sockets.append(probe)
            probe.bind((LOOPBACK, 0))
        return [probe.getsockname()[1] for probe in sockets]
    finally:
        for probe in sockets:
            probe.close()
