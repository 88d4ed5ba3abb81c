"""PFC frames against IEEE 802.1Qbb's layout and scapy's dissection; the lossless state machine. No root."""

from __future__ import annotations

import struct

import pytest

from p4switch.daemon.pfc import (
    MAX_PAUSE_QUANTA,
    ClassField,
    PfcSettings,
    PfcState,
    parse_pfc,
    pfc_frame,
)
from p4switch.daemon.queues import PortQueues

SOURCE = bytes.fromhex("02aabbccddee")


def test_frame_bytes_follow_the_standard_layout() -> None:
    data = pfc_frame(SOURCE, {3: 0xFFFF, 6: 0x1234})
    # 802.1Qbb: reserved multicast 01-80-C2-00-00-01, MAC control 88-08, opcode 01-01,
    # class-enable vector (bits 3 and 6), then time[0..7], each 16 bits big-endian
    expected = bytes.fromhex("0180c2000001") + SOURCE + bytes.fromhex("88080101")
    expected += (1 << 3 | 1 << 6).to_bytes(2, "big")
    times = [0] * 8
    times[3], times[6] = 0xFFFF, 0x1234
    expected += b"".join(t.to_bytes(2, "big") for t in times)
    expected += bytes(60 - len(expected))  # minimum frame without the FCS
    assert data == expected
    assert parse_pfc(data) == {3: 0xFFFF, 6: 0x1234}


def test_scapy_dissects_the_frame_as_pfc() -> None:
    from scapy.contrib.mac_control import MACControlClassBasedFlowControl
    from scapy.layers.l2 import Ether

    packet = Ether(pfc_frame(SOURCE, {0: 7, 5: 0}))
    pfc = packet[MACControlClassBasedFlowControl]
    assert packet.dst == "01:80:c2:00:00:01" and packet.type == 0x8808
    enabled = [cls for cls in range(8) if getattr(pfc, f"c{cls}_enabled")]
    assert (enabled, pfc.c0_pause_time, pfc.c5_pause_time, pfc._op_code) == ([0, 5], 7, 0, 0x0101)
    built = bytes(
        Ether(src="02:aa:bb:cc:dd:ee", dst="01:80:c2:00:00:01")
        / MACControlClassBasedFlowControl(c2_enabled=1, c2_pause_time=99)
    )
    assert parse_pfc(built) == {2: 99}


def test_other_frames_are_not_pfc() -> None:
    pause = bytearray(pfc_frame(SOURCE, {1: 1}))
    pause[14:16] = b"\x00\x01"  # 802.3x PAUSE opcode: not class based
    assert parse_pfc(bytes(pause)) is None
    assert parse_pfc(bytes(64)) is None
    with pytest.raises(ValueError):
        pfc_frame(SOURCE, {8: 1})


class Wire:
    """Records what a PfcState sends; each port is a 1 Mb/s link (one quantum: 512 us)."""

    def __init__(self, **settings) -> None:
        self.sent: list[tuple[int, dict[int, int]]] = []
        self.state = PfcState(PfcSettings(**settings), {1: SOURCE, 2: SOURCE}, self.record, lambda port: 1e6)

    def record(self, port: int, frame: bytes) -> None:
        self.sent.append((port, parse_pfc(frame)))


def test_xoff_above_threshold_xon_at_or_below_and_headroom_beyond() -> None:
    wire = Wire(xoff=4, xon=2, headroom=3)
    state = wire.state
    for _ in range(4):
        assert state.may_hold(1, 5)
        state.hold(1, 5, now=0.0)
    assert wire.sent == []
    state.hold(1, 5, now=0.0)  # the fifth frame: above XOFF
    assert wire.sent == [(1, {5: MAX_PAUSE_QUANTA})]
    state.hold(1, 5, now=0.0)
    state.hold(1, 5, now=0.0)  # 7 = XOFF + headroom held: the next one is refused
    assert not state.may_hold(1, 5) and state.may_hold(1, 4) and state.may_hold(2, 5)
    for _ in range(4):
        state.release(1, 5)  # 7 -> 3
    assert len(wire.sent) == 1
    state.release(1, 5)  # 2 = XON
    assert wire.sent[-1] == (1, {5: 0})
    row = state.snapshot(1, 0.0)[5]
    assert (row["pause_frames_sent"], row["resume_frames_sent"], row["headroom_drops"], row["held"]) == (
        1,
        1,
        1,
        2,
    )


def test_pause_is_renewed_at_half_its_time_while_above_xon() -> None:
    wire = Wire(xoff=1, xon=0, headroom=1)
    state = wire.state
    state.hold(2, 0, now=10.0)
    state.hold(2, 0, now=10.0)
    full = MAX_PAUSE_QUANTA * 512 / 1e6
    assert state.next_deadline() == pytest.approx(10.0 + full / 2)
    state.tick(10.0 + full / 2 - 1e-3)
    assert len(wire.sent) == 1
    state.tick(10.0 + full / 2)
    assert wire.sent == [(2, {0: MAX_PAUSE_QUANTA})] * 2


def test_received_pause_stops_one_class_for_its_time_or_until_resumed() -> None:
    wire = Wire()
    state = wire.state
    assert state.receive(1, pfc_frame(SOURCE, {2: 100, 6: 1000}), now=0.0)
    assert state.paused_masks[1] == 1 << 2 | 1 << 6 and state.paused_masks[2] == 0
    state.tick(0.0512 - 1e-6)  # 100 quanta at 1 Mb/s: 51.2 ms
    assert state.paused_masks[1] == 1 << 2 | 1 << 6
    state.tick(0.0512)
    assert state.paused_masks[1] == 1 << 6
    state.receive(1, pfc_frame(SOURCE, {6: 0}), now=0.2)
    assert state.paused_masks[1] == 0
    rows = state.snapshot(1, 1.0)
    assert rows[2]["paused_s"] == pytest.approx(0.0512) and rows[6]["paused_s"] == pytest.approx(0.2)
    assert (rows[6]["pause_frames_received"], rows[6]["resume_frames_received"]) == (1, 1)
    assert not state.receive(1, bytes(60), now=1.0)


def test_paused_priority_is_skipped_and_others_served() -> None:
    queues = PortQueues(port=1, priority_count=8, depth=10)
    for priority, name in [(7, "high"), (0, "low")]:
        queues.enqueue(priority, name, 0)
    assert queues.dequeue(paused=1 << 7).state == "low"
    assert not queues.sendable(1 << 7) and queues.sendable(0)
    assert queues.dequeue(paused=1 << 7) is None and queues.backlog == 1


def test_class_field_reads_the_arrival_class() -> None:
    field = ClassField.parse("0x88b5,20,40,0x0f")
    frame = bytearray(64)
    frame[12:14] = struct.pack("!H", 0x88B5)
    frame[40] = 0x13
    assert field.read(bytes(frame)) == 0  # guard byte 0: no trace entry yet
    frame[20] = 1
    assert field.read(bytes(frame)) == 3
    assert ClassField.parse("0x88b5,20,40,0xf0").read(bytes(frame)) == 1
    frame[12:14] = b"\x08\x00"
    assert field.read(bytes(frame)) == 0
    with pytest.raises(ValueError, match="ETHERTYPE,GUARD,OFFSET,MASK"):
        ClassField.parse("88b5")
