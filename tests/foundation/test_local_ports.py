import socket

from foundation.local_ports import LOOPBACK, free_local_ports


def test_ports_of_one_call_are_distinct_and_free_to_bind():
    ports = free_local_ports(16)
    assert len(set(ports)) == 16
    sockets = []
    try:
        for port in ports:  # every one can be bound at once, as a cluster's processes will
            probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sockets.append(probe)
            probe.bind((LOOPBACK, port))
    finally:
        for probe in sockets:
            probe.close()
