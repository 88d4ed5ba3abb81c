"""A port's frames received and sent in batches, one system call per batch (recvmmsg, sendmmsg), in C
(p4switch/daemon/_packet_io.c).

The data plane's fast path reads and writes frames here: through Python's socket module each frame
cost a system call and several objects, about as much CPU as the card program itself. A received
frame is what ``recvmsg`` made of it (a cut one counted and left out, a VLAN tag the kernel took off
put back); a frame the kernel refuses to send is counted and skipped, as with ``send``. The hosts'
receiver (emulation.traffic) reads its frames here too, with their kernel receive times.
scripts/setup.sh builds the extension (``pip install -e .``); tests/unit/test_packet_io_batches.py
checks it on socket pairs, tests/emulation/test_switch_hostile_frames.py (VLAN tags, the largest
frames) on veth pairs.
"""

from __future__ import annotations

try:
    from p4switch.daemon import _packet_io
except ImportError as error:  # a source tree that was never installed
    raise ImportError(
        "the switch's compiled packet I/O (p4switch/daemon/_packet_io.c) is not built: "
        "run `sudo bash scripts/setup.sh` (or `pip install -e .` in the project's .venv)"
    ) from error

#: the most frames one ``receive`` returns
MAX_BATCH: int = _packet_io.MAX_BATCH
#: the longest frame ``receive`` takes whole (its buffers' size: ports.MAX_FRAME_BYTES)
FRAME_BYTES: int = _packet_io.FRAME_BYTES


def receive(fd: int, count: int) -> tuple[list[bytes], int]:
    """Up to `count` (1..MAX_BATCH) frames waiting on the non-blocking packet socket `fd`, in order,
    and how many more were read but cut by the kernel (left out). Raises OSError for an error other
    than "nothing is waiting"."""
    return _packet_io.receive(fd, count)


def receive_stamped(fd: int, count: int) -> tuple[list[bytes], list[int], int]:
    """``receive``, with each frame's kernel receive time in ns since the epoch (the socket's
    SO_TIMESTAMPNS; -1 for a frame the kernel gave none)."""
    return _packet_io.receive_stamped(fd, count)


def send(fd: int, frames: list[bytes]) -> tuple[int, int]:
    """Write `frames` to the packet socket `fd` in order, in as few system calls as the kernel allows;
    (frames sent, frames refused), each refused frame skipped as a failing ``send`` would be."""
    return _packet_io.send(fd, frames)
