"""The forwarding pipeline config: compiling it, and the slot that the data plane and P4Runtime share.

``p4_device_config`` (P4Runtime's ForwardingPipelineConfig) carries, for this target,
the P4_16 source text of the program (UTF-8), compiled by the switch. It comes from the
network, so it is treated as a stranger's text (untrusted.py): no ``file:`` references,
``#include`` of ``<core.p4>`` and ``<v1model.p4>`` only, compiled in a child with time and
memory limits. (A program given on the command line is the local user's own: it is
compiled in-process with ``--p4-include`` folders and its own folder.) The P4Info sent with the config must
describe the same tables, actions, fields, counters and registers (same ids, names
and widths) as the P4Info the switch's compiler produces for that program.

All pipeline calls happen with ``PipelineSlot.lock`` held: the language core is not
thread-safe, and the lock also makes a whole Write batch atomic for the data plane.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from google.rpc import code_pb2
from p4.config.v1 import p4info_pb2

from p4switch.daemon.untrusted import UntrustedProgramError, compile_untrusted
from p4switch.p4runtime.entities import PipelineEntities
from p4switch.p4runtime.info import P4InfoIndex, P4RuntimeError, p4info_mismatch

CompileFunction = Callable[..., Any]
FILE_REFERENCE = "file:"


def default_compile(path: str, include_dirs: Sequence[str] = ()) -> Any:
    """The language core's compiler (imported on first use)."""
    from p4switch import compile_program

    return compile_program(path, include_dirs=tuple(include_dirs))


@dataclass
class LoadedConfig:
    """A verified config: the compiled program, its P4Info index and what the controller sent."""

    program: Any
    index: P4InfoIndex
    p4info: p4info_pb2.P4Info
    device_config: bytes
    cookie: int


def compile_device_config(
    device_config: bytes, compile_function: CompileFunction, include_dirs: Sequence[str]
) -> Any:
    """Compile a ``p4_device_config`` (P4 source text); INVALID_ARGUMENT on errors.

    The text comes from the network: ``file:`` references are refused, and with the
    default compiler it is checked and compiled in a limited child (untrusted.py), with
    the switch's own include folder only. A compiler given by the embedding code (tests'
    stand-ins) is called in-process with ``include_dirs``.
    """
    try:
        text = device_config.decode("utf-8")
    except UnicodeDecodeError as error:
        raise P4RuntimeError(
            code_pb2.INVALID_ARGUMENT, f"p4_device_config must be P4 source text (UTF-8): {error}"
        ) from error
    if not text.strip():
        raise P4RuntimeError(code_pb2.INVALID_ARGUMENT, "p4_device_config is empty")
    if text.startswith(FILE_REFERENCE):
        raise P4RuntimeError(
            code_pb2.INVALID_ARGUMENT,
            "p4_device_config must be the program's text: file: references are not accepted",
        )
    if compile_function is default_compile:
        try:
            return compile_untrusted(text)
        except UntrustedProgramError as error:
            raise P4RuntimeError(code_pb2.INVALID_ARGUMENT, f"the P4 program is refused: {error}") from None
    try:
        with tempfile.TemporaryDirectory(prefix="twinnet-switch-") as directory:
            path = os.path.join(directory, "program.p4")
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
            return compile_function(path, include_dirs=tuple(include_dirs))
    except P4RuntimeError:
        raise
    except Exception as error:  # P4CompileError and anything the compiler raises
        raise P4RuntimeError(
            code_pb2.INVALID_ARGUMENT, f"the P4 program does not compile: {error}"
        ) from error


def verify_config(
    p4info: p4info_pb2.P4Info,
    device_config: bytes,
    cookie: int,
    compile_function: CompileFunction,
    include_dirs: Sequence[str],
) -> LoadedConfig:
    """Compile and check that the P4Info matches the program's."""
    program = compile_device_config(device_config, compile_function, include_dirs)
    mismatch = p4info_mismatch(p4info, program.p4info)
    if mismatch:
        raise P4RuntimeError(code_pb2.INVALID_ARGUMENT, mismatch)
    index, p4info, device_config = shared_parts(program, p4info, device_config)
    return LoadedConfig(program, index, p4info, device_config, cookie)


#: the parts of the last config verified (program, P4Info index, P4Info as sent, serialised, and the
#: device config): the many cards of a process are sent the same config, and keep one copy of it
_last_parts: list[Any] = []
_last_parts_lock = threading.Lock()


def shared_parts(
    program: Any, p4info: p4info_pb2.P4Info, device_config: bytes
) -> tuple[P4InfoIndex, p4info_pb2.P4Info, bytes]:
    """The index of ``program``'s P4Info, ``p4info`` and ``device_config``: the last config's objects
    when they are equal to them (read-only from then on: a new config replaces them, never edits)."""
    serialized = p4info.SerializeToString(deterministic=True)
    with _last_parts_lock:
        if _last_parts and _last_parts[0] is program:
            _, index, known_serialized, known_p4info, known_config = _last_parts
            if serialized == known_serialized:
                p4info = known_p4info
            if device_config == known_config:
                device_config = known_config
            return index, p4info, device_config
        index = P4InfoIndex(program.p4info)
        _last_parts[:] = [program, index, serialized, p4info, device_config]
        return index, p4info, device_config


class PipelineSlot:
    """The running pipeline (or none), the saved config, and the lock that serialises pipeline use."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.control_waiting = 0  # control-plane threads waiting for the lock (the data plane yields to them)
        self.config: LoadedConfig | None = None
        self.saved: LoadedConfig | None = None
        self.pipeline: Any = None
        self.entities: PipelineEntities | None = None
        self.generation = 0
        #: sends a message to the primary controller's StreamChannel (digest lists); set by P4Runtime
        self.stream_send: Callable[[Any], bool] | None = None

    def commit(self, config: LoadedConfig) -> None:
        """Run ``config`` on a fresh pipeline (empty tables, zero counters)."""
        try:
            pipeline = config.program.new_pipeline()
            entities = PipelineEntities(pipeline, config.index, self._send)
        except Exception as error:  # a language-core failure, not the controller's
            raise P4RuntimeError(
                code_pb2.INTERNAL, f"cannot start the pipeline: {type(error).__name__}: {error}"
            ) from error
        with self.lock:
            old = getattr(self.pipeline, "digests", None)
            if old is not None:
                old.close()  # its timer stops; nothing more is sent for the replaced pipeline
            self.config = config
            self.pipeline = pipeline
            self.entities = entities
            self.generation += 1

    def _send(self, message: Any) -> bool:
        """A message to the primary controller's stream; False when there is none."""
        send = self.stream_send
        return send is not None and send(message)

    @contextmanager
    def control(self) -> Iterator[None]:
        """Hold the lock for control-plane work, announced so that the data plane lets it in promptly."""
        self.control_waiting += 1
        try:
            self.lock.acquire()
        finally:
            self.control_waiting -= 1
        try:
            yield
        finally:
            self.lock.release()

    def require_entities(self) -> PipelineEntities:
        entities = self.entities
        if entities is None:
            raise P4RuntimeError(code_pb2.FAILED_PRECONDITION, "no forwarding pipeline config has been set")
        return entities
