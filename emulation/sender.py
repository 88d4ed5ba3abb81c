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
the send record. Progress and the request to stop early go through two pipes of
messages; Ctrl-C reaches both processes (one process group): the child stops and
reports what it sent.

While it sends, the child runs under the real-time policy ``SCHED_FIFO`` (when the
machine has two CPUs or more and the run may, as root may): it sleeps until each
send's time, and wakes then even while the switch processes fill every core. At
normal priority 0.3-1.4% of the sends of 3DT 4x4x4 at 0.15 of a 20 packets/s link
left more than 5 ms late (up to 18 ms; load 4-5), under SCHED_FIFO none did (at
most 4.9 ms, the time to send one slot's burst of frames one by one). It wakes at most
every ``traffic.PACING_QUANTUM_S`` (0.25 ms) and sends every probe then due: each wake of a
real-time thread preempts a switch process, and at 20k probes/s a wake per probe cost the
sender and the switches a third of a core.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import multiprocessing
import os
import pickle
import signal
import socket
import sys
import time
import types
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any, cast

from emulation.netns import CLONE_NEWNET

if TYPE_CHECKING:
    from emulation.traffic import HostPauses, Schedule, SendRecord, TrafficEngine

#: Seconds the parent waits for the child's record after the child was told to stop.
STOP_GRACE_S = 10.0
PR_SET_PDEATHSIG = 1
#: the sender's SCHED_FIFO priority (1-99): above every process of the normal policy, such as the
#: switch processes, and below the kernel's own real-time threads (99)
SENDER_RT_PRIORITY = 10


def inject_in_child(
    engine: TrafficEngine,
    schedule: Schedule,
    size: int,
    tick: Callable[[int, float], bool] | None,
    tick_every: float,
    real_time: bool = True,
) -> SendRecord:
    """Send ``schedule`` from a child process on ``engine``'s sockets; the same record as in-process.

    ``tick(sent, elapsed)`` runs in this process every ``tick_every`` s while the child
    sends; returning False makes the child stop (as in-process sending does). ``real_time``:
    the child asks for SCHED_FIFO (see the module doc); False keeps normal scheduling.
    """
    from emulation.traffic import TrafficError

    context = multiprocessing.get_context("spawn")
    receive_end, send_end = context.Pipe(duplex=False)  # the child's messages: began, sent, done
    stop_end, stop_sender = context.Pipe(duplex=False)  # a message here asks the child to stop
    child = context.Process(
        target=_child_main,
        # pauses and schedule as bytes: unpickled after the child left this network namespace
        args=(engine.sockets, engine.control_sockets, pickle.dumps((engine.pauses, schedule)))
        + (size, tick_every, real_time, stop_end, send_end),
        name="twinnet-sender",
        daemon=True,
    )
    with engine.control_handed_over():
        with _main_module_hidden():
            child.start()
        send_end.close()
        stop_end.close()
        try:
            outcome = _follow(child, receive_end, stop_sender, tick, tick_every)
        except KeyboardInterrupt:
            _ask_to_stop(stop_sender)
            outcome = _collect(child, receive_end, STOP_GRACE_S)
        finally:
            receive_end.close()
            stop_sender.close()
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


@contextlib.contextmanager
def _main_module_hidden() -> Iterator[None]:
    """Start a spawned child without the main script: it needs nothing from it, and spawn would import
    it again first (a script that imports the whole emulation took 10 s to start the sender)."""
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = main


def _follow(
    child: Any,
    messages: Connection,
    stop: Connection,
    tick: Callable[[int, float], bool] | None,
    tick_every: float,
) -> Any:
    """Tick while the child sends; its outcome (record and pauses, or the exception it raised).

    Elapsed time counts from the child's first send (0 while it starts), as in-process sending counts it.
    """
    sent, began = 0, 0.0
    next_tick = time.monotonic() + tick_every
    while True:
        if messages.poll(max(0.0, next_tick - time.monotonic())):
            message = _receive(messages)
            if message is None:  # the child is gone without a word
                return None
            kind, value = message
            if kind == "done":
                return value
            if kind == "began":
                began = value
            else:
                sent = value
            continue
        if not child.is_alive():
            return _collect(child, messages, 1.0)
        next_tick = time.monotonic() + tick_every
        elapsed = time.monotonic() - began if began else 0.0
        if tick is not None and not tick(sent, elapsed):
            _ask_to_stop(stop)
            return _collect(child, messages, STOP_GRACE_S)


def _ask_to_stop(stop: Connection) -> None:
    try:
        stop.send(True)
    except OSError:  # the child is gone already
        pass


def _collect(child: Any, messages: Connection, wait_s: float) -> Any:
    """The child's outcome if it comes within ``wait_s`` s, else None."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            if not messages.poll(0.05):
                if not child.is_alive() and not messages.poll(0):
                    return None
                continue
            message = _receive(messages)
        except KeyboardInterrupt:
            continue  # a second Ctrl-C: keep waiting for what was sent
        if message is None:
            return None
        if message[0] == "done":
            return message[1]
    return None


def _receive(messages: Connection) -> Any:
    try:
        return messages.recv()
    except (EOFError, OSError):
        return None


def _child_main(
    sockets: dict[int, socket.socket],
    control_sockets: dict[int, socket.socket],
    work: bytes,
    size: int,
    tick_every: float,
    real_time: bool,
    stop: Connection,
    messages: Connection,
) -> None:
    """The sender process: send the schedule; tell the parent when it began, what it sent, the outcome.

    It first moves to an empty network namespace of its own: its sockets are the parent's, bound
    where they were opened, and the packet code it imports (scapy) reads every interface of the
    namespace it starts in: seconds beside a network of hundreds of cards.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM))  # never outlive the run process
    libc.unshare(CLONE_NEWNET)  # without the privilege it stays where it is: slower to start, no more
    from emulation.traffic import TrafficEngine

    pauses, schedule = cast("tuple[HostPauses | None, Schedule]", pickle.loads(work))

    engine = TrafficEngine([], pauses)
    engine.sockets = sockets
    engine.control_sockets = control_sockets
    # before the PFC thread starts: it inherits the policy
    scheduling = _real_time() if real_time else "normal scheduling (asked for)"
    gc.collect()
    gc.freeze()  # the imports never collected again: a full collection of them takes ~30 ms

    def tick(done: int, elapsed: float) -> bool:
        messages.send(("sent", done))
        return not stop.poll()

    try:
        with engine.receiving_control():
            messages.send(("began", time.monotonic()))
            record = engine.send_schedule(schedule, size, tick=tick, tick_every=tick_every)
        record.sender = f"own process, {scheduling}"
        messages.send(("done", (record, None if pauses is None else dict(pauses.__dict__))))
    except BaseException as error:  # reported to the parent, which raises it as a TrafficError
        messages.send(("done", error))
    finally:
        messages.close()


def _real_time() -> str:
    """Put this thread under ``SCHED_FIFO`` at ``SENDER_RT_PRIORITY`` if it may; how it is scheduled.

    Not on a single CPU, where a sender behind its schedule (never sleeping) would leave the
    switches only what the kernel's real-time throttling keeps back (5% by default).
    """
    if len(os.sched_getaffinity(0)) < 2:
        return "normal scheduling (SCHED_FIFO needs two CPUs)"
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(SENDER_RT_PRIORITY))
    except OSError as error:  # no CAP_SYS_NICE, or a cgroup without real-time time
        return f"normal scheduling (SCHED_FIFO refused: {error.strerror})"
    return f"SCHED_FIFO {SENDER_RT_PRIORITY}"
