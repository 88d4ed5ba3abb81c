"""The switch's data plane on real veth pairs, in-process, with the stand-in pipeline.

Two switches in a row forward frames between two host namespaces; counters are read
over P4Runtime; strict priority under a rate limit; tail drops counted through the
side channel; malformed and crashing frames counted without stopping the switch.
(Frames shorter than an Ethernet header cannot be sent on a veth: the kernel refuses
them, so the ``malformed`` counter for runts is not exercised here.)
"""

from __future__ import annotations

import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2
from test_switch_net import Lab, drain, frame, host_socket, receive
from test_switch_standin import (
    ACTION_FORWARD_ID,
    COUNTER_ID,
    CRASH_ETHERTYPE,
    HEADER_ETHERTYPE,
    SOURCE,
    TABLE_ID,
    stand_in_compile,
    stand_in_p4info,
)

from p4switch.daemon.pfc import PfcSettings
from p4switch.daemon.side_channel import request
from p4switch.daemon.switch import Switch, SwitchOptions
from p4switch.p4runtime.client import P4RuntimeClient, table_entry, update

pytestmark = pytest.mark.root


def start_switch(
    interfaces: list[tuple[int, str]],
    priority_queues: int = 8,
    queue_depth: int | None = 64,
    device_id: int = 0,
    pcap_dir: str | None = None,
    lossless: PfcSettings | None = None,
) -> tuple[Switch, P4RuntimeClient]:
    """A switch on `interfaces` running the stand-in pipeline, and its arbitrated client.

    ``queue_depth=None`` leaves the depth to the switch (in lossless mode, one no ingress overruns).
    """
    options = SwitchOptions(
        device_id=device_id,
        interfaces=interfaces,
        grpc_address="127.0.0.1:0",
        control_port=0,
        priority_queues=priority_queues,
        queue_depth=queue_depth,
        pcap_dir=pcap_dir,
        lossless=lossless,
    )
    switch = Switch(options, compile_function=stand_in_compile)
    switch.start()
    client = P4RuntimeClient(f"127.0.0.1:{switch.grpc_port}", device_id, (0, 1))
    assert client.arbitrate().status.code == code_pb2.OK
    client.set_pipeline(stand_in_p4info(), SOURCE.encode())
    return switch, client


def install_route(client: P4RuntimeClient, in_port: int, dst: int, out_port: int, prio: int = 0) -> None:
    entity = table_entry(
        TABLE_ID,
        [(1, bytes([in_port])), (2, dst.to_bytes(6, "big"))],
        ACTION_FORWARD_ID,
        [(1, bytes([out_port])), (2, bytes([prio]))],
    )
    client.write([update(p4runtime_pb2.Update.INSERT, entity)])


class Line:
    """h1 -- s1 -- s2 -- h2, or h1 -- s1 -- h2 with ``switches=1``."""

    def __init__(self, switches: int, lab_tag: str = "d", **switch_options) -> None:
        self.lab = Lab(lab_tag)
        self.switches: list[tuple[Switch, P4RuntimeClient]] = []
        try:
            s1_host, h1 = self.lab.host_link("s1p1", "a")
            if switches == 2:
                s1_s2, s2_s1 = self.lab.switch_link("s1p2", "s2p1")
                s2_host, h2 = self.lab.host_link("s2p2", "b")
                self.switches.append(start_switch([(1, s1_host), (2, s1_s2)], **switch_options))
                self.switches.append(start_switch([(1, s2_s1), (2, s2_host)], device_id=1, **switch_options))
            else:
                s1_h2, h2 = self.lab.host_link("s1p2", "b")
                self.switches.append(start_switch([(1, s1_host), (2, s1_h2)], **switch_options))
            self.h1, self.h2 = host_socket(h1), host_socket(h2)
        except BaseException:
            self.close()
            raise

    def side(self, index: int, message: dict) -> dict:
        answer = request(self.switches[index][0].control.port, message)
        assert answer["ok"], answer
        return answer

    def close(self) -> None:
        for switch, client in self.switches:
            client.close()
            switch.stop()
        for name in ("h1", "h2"):
            if hasattr(self, name):
                getattr(self, name).close()
        self.lab.close()


@pytest.fixture
def line2(tmp_path: Path) -> Iterator[Line]:
    line = Line(2, pcap_dir=str(tmp_path))
    yield line
    line.close()
    names = {thread.name for thread in threading.enumerate()}
    assert not names & {"dataplane", "control"} and not any(name.startswith("p4rt") for name in names), names


def pcap_records(path: Path) -> list[bytes]:
    data = path.read_bytes()
    records, offset = [], 24
    while offset < len(data):
        length = struct.unpack_from("<I", data, offset + 8)[0]
        records.append(data[offset + 16 : offset + 16 + length])
        offset += 16 + length
    return records


@pytest.fixture
def line1() -> Iterator[Line]:
    line = Line(1, priority_queues=8, queue_depth=64)
    yield line
    line.close()


def test_two_switches_forward_and_count(line2: Line) -> None:
    (s1, c1), (s2, c2) = line2.switches
    install_route(c1, 1, 0xAA, 2)
    install_route(c2, 1, 0xAA, 2)
    sent = [frame(0xAA, f"probe {i}".encode()) for i in range(20)]
    for data in sent:
        line2.h1.send(data)
    assert receive(line2.h2, 20, 3.0) == sent
    line2.h1.send(frame(0xBB))  # no route: dropped by the table's default action
    assert receive(line2.h2, 1, 0.3) == []
    counter = p4runtime_pb2.Entity()
    counter.counter_entry.counter_id = COUNTER_ID
    counter.counter_entry.index.index = 1
    (cell,) = c1.read([counter])
    assert (cell.counter_entry.data.packet_count, cell.counter_entry.data.byte_count) == (21, 21 * 64)
    (cell,) = c2.read([counter])
    assert cell.counter_entry.data.packet_count == 20
    stats = line2.side(0, {"cmd": "stats"})
    port1 = next(p for p in stats["ports"] if p["port"] == 1)
    port2 = next(p for p in stats["ports"] if p["port"] == 2)
    assert port1["rx_frames"] == 21 and port2["tx_frames"] == 20
    assert stats["counters"]["ingress_drops"] == 1
    s1.stop()  # flushes and closes its pcap files (--pcap)
    pcap_dir = Path(s1.options.pcap_dir)
    incoming = pcap_records(pcap_dir / f"{s1.ports[0].interface}_in.pcap")
    assert incoming == sent + [frame(0xBB)]
    assert pcap_records(pcap_dir / f"{s1.ports[1].interface}_out.pcap") == sent


def test_high_priority_overtakes_low_under_a_rate_limit(line1: Line) -> None:
    switch, client = line1.switches[0]
    install_route(client, 1, 0x10, 2, prio=0)
    install_route(client, 1, 0x17, 2, prio=7)
    line1.side(0, {"cmd": "set_queue_rate", "rate_pps": 100, "port": 2})
    low = [frame(0x10, f"low {i}".encode()) for i in range(30)]
    high = [frame(0x17, f"high {i}".encode()) for i in range(10)]
    for data in low + high:
        line1.h1.send(data)
    started = time.monotonic()
    got = receive(line1.h2, 40, 5.0)
    elapsed = time.monotonic() - started
    assert sorted(got) == sorted(low + high)  # nothing lost: 40 packets fit the queues
    last_high = max(got.index(data) for data in high)
    low_before_last_high = sum(1 for data in got[:last_high] if data in low)
    # sending 40 frames takes a few ms: at 100 pps only the first few low frames leave before
    # the high ones arrive; all high frames must then go before the remaining low ones
    assert low_before_last_high <= 8, [g[14:21] for g in got]
    assert got[-1] in low
    assert 0.25 < elapsed < 5.0  # 40 frames at 100 pps (burst of 4): about 0.36 s; never faster
    depths = [enq for port, enq, _ in switch.slot.pipeline.egress_calls if port == 2]
    assert max(depths) >= 20  # the egress stage saw the queue fill up


def test_tail_drops_are_counted_per_port_and_queue(line1: Line) -> None:
    _, client = line1.switches[0]
    install_route(client, 1, 0x20, 2, prio=3)
    line1.side(0, {"cmd": "set_queue_depth", "depth": 5, "port": 2})
    line1.side(0, {"cmd": "set_queue_rate", "rate_pps": 50, "port": 2})
    for i in range(30):
        line1.h1.send(frame(0x20, f"burst {i}".encode()))
    got = receive(line1.h2, 30, 1.0)
    deadline = time.monotonic() + 10
    while True:  # on a busy machine the switch may still be sending the queued frames
        queue = next(p for p in line1.side(0, {"cmd": "stats"})["ports"] if p["port"] == 2)["queues"][3]
        if queue["length"] == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    got += receive(line1.h2, 30 - len(got), 0.3)
    assert queue["tail_drops"] == 30 - len(got) > 0
    assert queue["enqueued"] == queue["dequeued"] == len(got)
    assert 5 <= len(got) <= 5 + 4 + 2  # the queue's depth, the rate's burst, a frame or two sent meanwhile


def test_malformed_and_crashing_frames_are_counted_and_forwarding_goes_on(line1: Line) -> None:
    _, client = line1.switches[0]
    install_route(client, 1, 0x30, 2)
    drain(line1.h2)
    for _ in range(5):
        line1.h1.send(frame(0x30, ethertype=CRASH_ETHERTYPE))
    for size in (14, 20, 33):  # truncated headers: the parser ends with PacketTooShort
        line1.h1.send(frame(0x31, ethertype=HEADER_ETHERTYPE, size=size))
    line1.h1.send(bytes(range(200)) + bytes(range(200)))  # garbage: no route
    time.sleep(0.3)
    line1.h1.send(frame(0x30, b"after"))
    (got,) = receive(line1.h2, 1, 2.0)
    assert got[14:19] == b"after"
    stats = line1.side(0, {"cmd": "stats"})
    counters = stats["counters"]
    assert counters["packet_errors"] == 5
    assert counters["parser_errors"] == 3
    assert counters["ingress_drops"] == 4  # the three truncated frames and the garbage: no route
    assert next(p for p in stats["ports"] if p["port"] == 1)["rx_frames"] == 10
