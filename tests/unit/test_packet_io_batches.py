"""p4switch/daemon/packet_io.py's batched receive and send, on datagram socket pairs (no root).

A datagram keeps a frame's bounds as a packet socket does, so order, batch limits, cut frames and
refused frames are checked here against what one ``recv``/``send`` per frame gives; VLAN tags and
frames of the largest MTU on real veth pairs are tests/emulation/test_switch_hostile_frames.py's.
"""

from __future__ import annotations

import os
import random
import socket
import time

import pytest

from p4switch.daemon import packet_io
from p4switch.daemon.dataplane import RX_BATCH
from p4switch.daemon.ports import MAX_FRAME_BYTES

SO_TIMESTAMPNS = 35


@pytest.fixture
def pair() -> tuple[socket.socket, socket.socket]:
    ends = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    for end in ends:
        end.setblocking(False)
    yield ends
    for end in ends:
        end.close()


def frames_of(rng: random.Random, count: int) -> list[bytes]:
    """`count` random frames, small enough that all of them fit in a socket pair's default buffers."""
    return [rng.randbytes(rng.randrange(14, 600)) for _ in range(count)]


def test_a_batch_is_the_waiting_frames_in_order_at_most_count(pair) -> None:
    port, peer = pair
    frames = frames_of(random.Random(1), 100)
    for frame in frames:
        peer.send(frame)
    got, cut = packet_io.receive(port.fileno(), packet_io.MAX_BATCH)
    assert (got, cut) == (frames[: packet_io.MAX_BATCH], 0)
    got, cut = packet_io.receive(port.fileno(), 10)
    assert got == frames[packet_io.MAX_BATCH : packet_io.MAX_BATCH + 10]
    assert packet_io.receive(port.fileno(), 64)[0] == frames[packet_io.MAX_BATCH + 10 :]
    assert packet_io.receive(port.fileno(), 64) == ([], 0)  # nothing waits: an empty batch


def test_a_frame_longer_than_the_largest_is_counted_and_left_out(pair) -> None:
    port, peer = pair
    port.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    peer.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
    whole = bytes(range(256)) * 4
    for frame in (whole, bytes(MAX_FRAME_BYTES + 1), bytes(MAX_FRAME_BYTES), whole[:20]):
        peer.send(frame)
    got, cut = packet_io.receive(port.fileno(), 8)
    assert cut == 1
    assert got == [whole, bytes(MAX_FRAME_BYTES), whole[:20]]


def test_the_data_plane_batches_and_frames_fit_the_buffers() -> None:
    assert RX_BATCH <= packet_io.MAX_BATCH
    assert packet_io.FRAME_BYTES == MAX_FRAME_BYTES


def test_errors_are_named(pair) -> None:
    port, _ = pair
    for count in (0, packet_io.MAX_BATCH + 1):
        with pytest.raises(ValueError, match="1 to 64 frames"):
            packet_io.receive(port.fileno(), count)
    closed = os.dup(port.fileno())
    os.close(closed)
    with pytest.raises(OSError):
        packet_io.receive(closed, 4)
    with pytest.raises(TypeError, match="frame 1 is not bytes"):
        packet_io.send(port.fileno(), [b"x" * 20, "text"])


def test_every_frame_is_sent_in_order_and_a_refused_one_is_counted_and_skipped(pair) -> None:
    port, peer = pair
    port.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
    frames = frames_of(random.Random(2), 90)
    too_long = bytes(4 << 20)  # over the socket's send buffer: EMSGSIZE, as one send() would raise
    with pytest.raises(OSError):
        port.send(too_long)
    batch = [*frames[:70], too_long, *frames[70:]]
    assert packet_io.send(port.fileno(), batch) == (90, 1)
    received = []
    while True:
        try:
            received.append(peer.recv(1 << 16))
        except BlockingIOError:
            break
    assert received == frames
    assert packet_io.send(port.fileno(), []) == (0, 0)


def test_stamped_batches_give_each_frame_its_kernel_receive_time(pair) -> None:
    """``receive_stamped`` gives what ``receive`` gives, and per frame the time the kernel stamped it
    (SO_TIMESTAMPNS, ns since the epoch): in arrival order, between before its send and the read;
    -1 for frames the kernel stamped none (the option off)."""
    port, peer = pair
    frames = frames_of(random.Random(3), 70)
    peer.send(frames[0])
    assert packet_io.receive_stamped(port.fileno(), 8) == ([frames[0]], [-1], 0)
    port.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    before = time.time_ns()
    for frame in frames[1:]:
        peer.send(frame)
    first, stamps, cut = packet_io.receive_stamped(port.fileno(), packet_io.MAX_BATCH)
    rest, more_stamps, _ = packet_io.receive_stamped(port.fileno(), packet_io.MAX_BATCH)
    after = time.time_ns()
    assert first + rest == frames[1:] and cut == 0 and len(first) == packet_io.MAX_BATCH
    stamps += more_stamps
    assert len(stamps) == len(frames) - 1
    assert before <= stamps[0] and stamps == sorted(stamps) and stamps[-1] <= after
