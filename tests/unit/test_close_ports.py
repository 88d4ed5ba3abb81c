"""A switch process closes its ports together (each close waits for the kernel), and every one of them."""

from __future__ import annotations

import threading
import time

from p4switch.daemon.ports import Port, close_ports


class SlowPort(Port):
    """A port whose close takes 20 ms, as a packet socket's does, and records how many overlap."""

    open_now = 0
    most_at_once = 0
    lock = threading.Lock()

    def __init__(self, number: int) -> None:
        super().__init__(number, f"veth{number}")
        self.closed = False

    def close(self) -> None:
        with SlowPort.lock:
            SlowPort.open_now += 1
            SlowPort.most_at_once = max(SlowPort.most_at_once, SlowPort.open_now)
        time.sleep(0.02)
        with SlowPort.lock:
            SlowPort.open_now -= 1
        self.closed = True


def test_every_port_is_closed_and_closes_overlap() -> None:
    ports = [SlowPort(number) for number in range(1, 101)]
    close_ports(ports)
    assert all(port.closed for port in ports)
    assert SlowPort.most_at_once > 1


def test_one_port_and_none() -> None:
    port = SlowPort(1)
    close_ports([port])
    close_ports([])
    assert port.closed
