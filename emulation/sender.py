"""Paced injection in a process of its own, so that the run process's threads cannot make it late.

The run process shares one interpreter among the receiver, the liveness and
deadlock watches and the P4Runtime sessions; a sender among them waits for the
GIL and sends late (3DT 4x4x4 at 20 packets/s per link: 3-12% of sends more
than 5 ms late while the switch processes used a quarter of a core).
:func:`inject_in_child` runs :meth:`TrafficEngine.send_schedule` in a spawned
child instead: a fresh interpreter (``spawn``; not a fork of this process and its
threads), started in about half a second. Not the fork server: it hands
descriptors over in one message, at most 253 of them, and a run has a socket per
host (two in lossless runs). The child gets the engine's sockets themselves (their file
descriptors are duplicated into it), sends on the data sockets and never reads
them: the parent's receiver still receives every probe. In lossless runs the
child also owns the hosts' PFC sockets for the duration, so that a pause reaches
the sender without crossing processes, and hands its pause accounting back with
the send record. Progress and the request to stop early go through two shared
integers; Ctrl-C reaches both processes (one process group): the child stops and
reports what it sent.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import signal
import socket
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from emulation.traffic import HostPauses, Schedule, SendRecord, TrafficEngine

#: Seconds the parent waits for the child's record after the child was told to stop.
STOP_GRACE_S = 10.0
PR_SET_PDEATHSIG = 1


def inject_in_child(
    engine: TrafficEngine,
    schedule: Schedule,
    size: int,
    tick: Callable[[int, float], bool] | None,
    tick_every: float,
) -> SendRecord:
    """Send ``schedule`` from a child process on ``engine``'s sockets; the same record as in-process.

    ``tick(sent, elapsed)`` runs in this process every ``tick_every`` s while the child
    sends; returning False makes the child stop (as in-process sending does).
    """
    from emulation.traffic import TrafficError

    context = multiprocessing.get_context("spawn")
    sent = context.RawValue("q", 0)
    stop = context.RawValue("b", 0)
    began = context.RawValue("d", 0.0)  # when the child began to send (time.monotonic: one clock for both)
    receive_end, send_end = context.Pipe(duplex=False)
    child = context.Process(
        target=_child_main,
        args=(engine.sockets, engine.control_sockets, engine.pauses, schedule, size, tick_every)
        + (sent, stop, began, send_end),
        name="twinnet-sender",
        daemon=True,
    )
    with engine.control_handed_over():
        child.start()
        send_end.close()
        try:
            outcome = _follow(child, receive_end, sent, stop, began, tick, tick_every)
        except KeyboardInterrupt:
            stop.value = 1
            outcome = _collect(child, receive_end, STOP_GRACE_S)
        finally:
            receive_end.close()
            child.join(timeout=STOP_GRACE_S)
            if child.is_alive():
                child.kill()
                child.join()
    if isinstance(outcome, KeyboardInterrupt):  # Ctrl-C before the child began to send
        raise outcome
    if outcome is None:
        raise TrafficError(f"the sender process ended without a record (exit code {child.exitcode})")
    if isinstance(outcome, BaseException):
        raise TrafficError(f"the sender process failed: {type(outcome).__name__}: {outcome}")
    record, pauses_state = outcome
    if engine.pauses is not None and pauses_state is not None:
        engine.pauses.__dict__.update(pauses_state)
    return record


def _follow(
    child: Any,
    results: Connection,
    sent: Any,
    stop: Any,
    began: Any,
    tick: Callable[[int, float], bool] | None,
    tick_every: float,
) -> Any:
    """Tick while the child sends; its outcome (record and pauses, or the exception it raised).

    Elapsed time counts from the child's first send (0 while it starts), as in-process sending counts it.
    """
    while True:
        if results.poll(tick_every):
            return _receive(results)
        if not child.is_alive():
            return _collect(child, results, 1.0)
        elapsed = time.monotonic() - began.value if began.value else 0.0
        if tick is not None and not tick(sent.value, elapsed):
            stop.value = 1
            return _collect(child, results, STOP_GRACE_S)


def _collect(child: Any, results: Connection, wait_s: float) -> Any:
    """The child's outcome if it comes within ``wait_s`` s, else None."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            if results.poll(0.05):
                return _receive(results)
        except KeyboardInterrupt:
            continue  # a second Ctrl-C: keep waiting for what was sent
        if not child.is_alive() and not results.poll(0):
            return None
    return None


def _receive(results: Connection) -> Any:
    try:
        return results.recv()
    except EOFError:
        return None


def _child_main(
    sockets: dict[int, socket.socket],
    control_sockets: dict[int, socket.socket],
    pauses: HostPauses | None,
    schedule: Schedule,
    size: int,
    tick_every: float,
    sent: Any,
    stop: Any,
    began: Any,
    results: Connection,
) -> None:
    """The sender process: send the schedule, report the record (or the error) through ``results``."""
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM))  # never outlive the run process
    from emulation.traffic import TrafficEngine

    engine = TrafficEngine([], pauses)
    engine.sockets = sockets
    engine.control_sockets = control_sockets

    def tick(done: int, elapsed: float) -> bool:
        sent.value = done
        return not stop.value

    try:
        with engine.receiving_control():
            began.value = time.monotonic()
            record = engine.send_schedule(schedule, size, tick=tick, tick_every=tick_every)
        results.send((record, None if pauses is None else dict(pauses.__dict__)))
    except BaseException as error:  # reported to the parent, which raises it as a TrafficError
        results.send(error)
    finally:
        results.close()
