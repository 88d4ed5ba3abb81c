"""A pipeline of a compiled program: its state (tables, counters, registers) and v1model packet flow."""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from p4switch.errors import EntryError, PacketError
from p4switch.runtime import support as runtime
from p4switch.runtime.digests import DigestEngine
from p4switch.runtime.meters import Meter
from p4switch.runtime.replication import ReplicationEngine
from p4switch.runtime.support import Counter, ExitPipeline, PacketIn, ParserError, Register
from p4switch.runtime.tables import Entry, Table
from p4switch.runtime.traffic_manager import TrafficManager

if TYPE_CHECKING:
    from p4switch.compiler.compile import CompiledProgram

_MASK48 = (1 << 48) - 1
_MASK32 = (1 << 32) - 1
_MASK19 = (1 << 19) - 1


def stage_error(stage: str, error: Exception) -> Exception:
    """The exception a failure in a pipeline stage ("ingress", "egress") is reported as.

    A PacketError stays as it is; anything else (a bug or unsupported situation in this
    packet's processing) becomes a PacketError naming the stage and the original error.
    """
    if isinstance(error, PacketError):
        return error
    return PacketError(f"{stage} failed: {type(error).__name__}: {error}")


class IngressResult:
    """Outcome of the ingress half of the pipeline; `state` carries the packet to egress."""

    __slots__ = (
        "dropped",
        "egress_spec",
        "priority",
        "packet_length",
        "mcast_grp",
        "state",
        "parser_error",
        "replicate",
    )

    def __init__(
        self,
        dropped: bool,
        egress_spec: int,
        priority: int,
        packet_length: int,
        mcast_grp: int,
        state: Any,
        parser_error: int = 0,
        replicate: bool = False,
    ) -> None:
        """Keep the ingress outcome and the packet state for egress.

        `replicate`: the packet needs the replication engine (``Pipeline.replicate``) before
        the queues: a multicast group, or a clone or resubmit request.
        """
        self.dropped = dropped
        self.egress_spec = egress_spec
        self.priority = priority
        self.packet_length = packet_length
        self.mcast_grp = mcast_grp
        self.state = state
        self.parser_error = parser_error  # standard_metadata.parser_error (0: none), for the switch's counter
        self.replicate = replicate

    def copy(self) -> IngressResult:
        """An independent copy (headers, metadata, standard metadata), e.g. one per multicast replica."""
        if self.state is None:
            raise PacketError("this ingress result was already used by egress")
        hdr, meta, sm, payload = self.state
        state = (hdr.copy(), meta.copy(), sm.copy(), payload)
        return IngressResult(
            self.dropped,
            self.egress_spec,
            self.priority,
            self.packet_length,
            self.mcast_grp,
            state,
            self.parser_error,
            self.replicate,
        )

    def __repr__(self) -> str:
        """Short description without the packet state."""
        return (
            f"IngressResult(dropped={self.dropped}, egress_spec={self.egress_spec}, "
            f"priority={self.priority}, packet_length={self.packet_length})"
        )


def _runtime_namespace() -> dict:
    """Names the generated code uses besides its own definitions."""
    return {
        "ParserError": ParserError,
        "ExitPipeline": ExitPipeline,
        "PacketError": PacketError,
        "HeaderStack": runtime.HeaderStack,
        "stored_headers": runtime.stored_headers,
        "header_from_bytes": runtime.header_from_bytes,
        "make_blank": runtime.make_blank,
        "Struct": struct.Struct,
        "PacketIn": PacketIn,
        "pack_bits": runtime.pack_bits,
        "concat_bits": runtime.concat_bits,
        "hash_bytes": runtime.hash_bytes,
        "csum16_value": runtime.csum16_value,
        "checksum_value": runtime.checksum_value,
        "v1model_hash": runtime.v1model_hash,
        "random_between": runtime.random_between,
        "__name__": "p4_pipeline",
    }


class FusedHooks(Protocol):
    """What ``run_fused`` (Pipeline.fused_entry_point) reports besides a frame sent at once."""

    def parser_error(self, code: int) -> None:
        """The parser ended with this error (standard_metadata.parser_error); the packet goes on."""

    def ingress_drop(self) -> None:
        """Ingress dropped the packet (egress_spec = the drop port)."""

    def queue(self, egress_port: int, priority: int, state: Any, timestamp_us: int) -> None:
        """``admit`` refused: the packet state (as run_ingress returns it) goes to the port's queue."""

    def egress_drop(self) -> None:
        """Egress dropped the packet."""


class Pipeline:
    """State of one program instance (one card): tables, counters, registers, and the packet path."""

    def __init__(self, program: CompiledProgram) -> None:
        """Execute the program's code in a fresh namespace holding this pipeline's state."""
        model = program.model
        self.program = program
        self.model = model
        ns = _runtime_namespace()
        exec(program.code, ns)  # noqa: S102 - code generated from the P4 program by codegen
        functions = {name: ns[spec.function] for name, spec in model.actions.items()}
        self.tables: dict[str, Table] = {}
        for name, spec in model.tables.items():
            bound = {action: ns[function] for action, function in spec.bound_functions.items()}
            table = Table(spec, model.actions, functions | bound if bound else functions)
            self.tables[name] = table
            ns[spec.global_name] = table
        self.counters: dict[str, Counter] = {}
        for name, spec in model.counters.items():
            counter = Counter(name, spec.size)
            self.counters[name] = counter
            ns[spec.global_name] = counter
        for spec in model.direct_counters.values():
            ns[spec.global_name] = None
        self.meters: dict[str, Meter] = {}
        for name, spec in model.meters.items():
            meter = Meter(name, spec.size, spec.unit)
            self.meters[name] = meter
            ns[spec.global_name] = meter
        for spec in model.direct_meters.values():
            ns[spec.global_name] = None  # its cells are the table entries' (RuntimeEntry.meter)
        self.registers: dict[str, Register] = {}
        for name, spec in model.registers.items():
            register = Register(name, spec.size, spec.width, spec.signed)
            self.registers[name] = register
            ns[spec.global_name] = register
        #: digest() data for the control plane (P4Runtime DigestEntry, DigestList)
        self.digests = DigestEngine(list(model.digests))
        ns["digest_learn"] = self.digests.learn
        self._run_ingress = ns["run_ingress"]
        self._run_egress = ns["run_egress"]
        self._run_fused = ns["run_fused"]
        self._drop_port = model.drop_port
        #: multicast groups and clone sessions (P4Runtime's PacketReplicationEngineEntry, STF mc_* verbs)
        self.pre = ReplicationEngine()
        #: the program calls clone/resubmit/recirculate/truncate: every packet passes the traffic manager
        self.special_ops = model.uses_special_ops
        self.traffic = TrafficManager(self, ns)
        #: what ``take_pending`` gives (true when not empty): one list, shared with the traffic manager
        self.pending = self.traffic.pending

    # ================================================================ data plane
    def raw_entry_points(self) -> tuple[Callable[..., Any], Callable[..., bytes | None], int]:
        """(run_ingress, run_egress, drop port): the generated drivers, for a caller that counts per frame.

        ``run_ingress(packet: bytes, port, timestamp_us)`` returns the packet state, a tuple
        whose third item is the standard metadata (``f_egress_spec``, ``f_priority``,
        ``f_parser_error``...); ``run_egress(state, port, enq_qdepth, deq_qdepth,
        deq_timedelta, timestamp_us)`` takes it (once) and returns the frame or None.
        They skip what ``ingress``/``egress`` add per packet (an IngressResult, the use-once
        check, exception wrapping: wrap an escaping exception with ``stage_error``), which
        the switch's forwarding loop does not need for a packet that goes straight through.
        """
        return self._run_ingress, self._run_egress, self._drop_port

    def fused_entry_point(self) -> Callable[..., tuple[int, bytes] | None]:
        """The generated driver that runs ingress and, if the egress port is idle, egress in one call.

        ``run_fused(packet: bytes, port, timestamp_us, admit, hooks)``: parser, ingress,
        then ``admit(egress_port, priority)``; if that is true, egress and deparser run at
        once (queue depths 0, the same timestamp) and the result is ``(egress_port, frame)``.
        Everything else is reported to ``hooks`` (see FusedHooks) and the result is None.
        The headers and metadata live in local variables of one function (see
        p4switch.compiler.fusion): the cheapest path the language core has for a packet.
        An escaping exception is not wrapped (see ``stage_error``).
        """
        return self._run_fused

    def ingress(self, packet: bytes, ingress_port: int, timestamp_us: int = 0) -> IngressResult:
        """Parser, checksum verification and ingress control of one packet."""
        try:
            state = self._run_ingress(
                packet if type(packet) is bytes else bytes(packet), ingress_port, timestamp_us
            )
        except PacketError:
            raise
        except Exception as exc:  # a bug or unsupported situation in this packet's processing
            raise stage_error("ingress", exc) from exc
        if self.special_ops:
            return self.result_of(state)
        sm = state[2]
        spec = sm.f_egress_spec
        group = sm.f_mcast_grp
        return IngressResult(
            spec == self._drop_port and not group,
            spec,
            sm.f_priority,
            sm.f_packet_length,
            group,
            state,
            sm.f_parser_error,
            group != 0,
        )

    def result_of(self, state: Any) -> IngressResult:
        """The IngressResult of a packet state as ``run_ingress`` (or ``run_fused``'s queue hook) gives it."""
        sm = state[2]
        spec = sm.f_egress_spec
        replicate = bool(sm.f_mcast_grp) or (self.special_ops and self.traffic.has_requests(sm))
        return IngressResult(
            spec == self._drop_port and not replicate,
            spec,
            sm.f_priority,
            sm.f_packet_length,
            sm.f_mcast_grp,
            state,
            sm.f_parser_error,
            replicate,
        )

    def replicate(self, result: IngressResult) -> list[IngressResult]:
        """What the traffic manager queues for one ingress result, in simple_switch's order.

        Ingress clones first, then (after any resubmission, which runs ingress again) the
        multicast copies or the unicast packet; each result's ``egress_spec`` is its egress
        port. Uses the result's state up.
        """
        return self.traffic.after_ingress(result)

    def egress_all(self, results: list[IngressResult], timestamp_us: int = 0) -> list[tuple[int, bytes]]:
        """Egress of every result with empty queues, and of the egress clones and recirculated
        packets they make, in that order: [(egress_port, frame)] (what ``process`` gives)."""
        work = deque(results)
        frames = []
        while work:
            result = work.popleft()
            frame = self.egress(result, result.egress_spec, 0, 0, 0, timestamp_us)
            if frame is not None:
                frames.append((result.egress_spec, frame))
            if self.pending:
                work.extend(self.take_pending())
        return frames

    def take_pending(self) -> list[IngressResult]:
        """Packets the last ``egress`` calls made besides their frame (egress clones,
        recirculated packets after their new ingress), ready for the queues."""
        pending = list(self.pending)
        self.pending.clear()
        return pending

    def egress(
        self,
        result: IngressResult,
        egress_port: int,
        enq_qdepth: int = 0,
        deq_qdepth: int = 0,
        deq_timedelta: int = 0,
        timestamp_us: int = 0,
    ) -> bytes | None:
        """Egress control, checksum computation and deparser: the frame to send, or None if dropped."""
        state = result.state
        if state is None:
            raise PacketError("egress needs the result of ingress (and uses it up)")
        result.state = None
        try:
            return self._run_egress(state, egress_port, enq_qdepth, deq_qdepth, deq_timedelta, timestamp_us)
        except PacketError:
            raise
        except Exception as exc:
            raise stage_error("egress", exc) from exc

    def process(self, packet: bytes, ingress_port: int, timestamp_us: int = 0) -> list[tuple[int, bytes]]:
        """Both halves with empty queues: [(egress_port, frame)], empty if dropped."""
        try:
            state = self._run_ingress(
                packet if type(packet) is bytes else bytes(packet), ingress_port, timestamp_us
            )
            sm = state[2]
            if sm.f_mcast_grp or self.special_ops:  # copies: the replication engine decides
                return self.egress_all(self.replicate(self.result_of(state)), timestamp_us)
            port = sm.f_egress_spec
            if port == self._drop_port:
                return []
            frame = self._run_egress(state, port, 0, 0, 0, timestamp_us)
        except PacketError:
            raise
        except Exception as exc:
            raise PacketError(f"processing failed: {type(exc).__name__}: {exc}") from exc
        return [] if frame is None else [(port, frame)]

    # ================================================================ control plane
    def _table(self, name: str) -> Table:
        """The table of that name, or EntryError."""
        table = self.tables.get(name)
        if table is None:
            raise EntryError(f"unknown table {name!r} (tables: {sorted(self.tables)})")
        return table

    def table_insert(self, table: str, match: dict, action: str, params=(), priority: int = 0) -> None:
        """Add an entry."""
        self._table(table).insert(match, action, params, priority)

    def table_modify(self, table: str, match: dict, action: str, params=(), priority: int = 0) -> None:
        """Change an entry's action and parameters."""
        self._table(table).modify(match, action, params, priority)

    def table_delete(self, table: str, match: dict, priority: int = 0) -> None:
        """Remove an entry."""
        self._table(table).delete(match, priority)

    def table_set_default(self, table: str, action: str, params=()) -> None:
        """Set the default action."""
        self._table(table).set_default(action, params)

    def table_reset_default(self, table: str) -> None:
        """Restore the program's default action."""
        self._table(table).reset_default()

    def table_entries(self, table: str) -> list[Entry]:
        """Installed entries (including const entries)."""
        return self._table(table).list_entries()

    def table_default(self, table: str) -> tuple[str, tuple]:
        """(action, params) of the default action."""
        default = self._table(table).default
        return default.action_name, tuple(default.args)

    def counter_read(self, name: str, index: int) -> tuple[int, int]:
        """(packets, bytes) of an indexed counter cell."""
        counter = self.counters.get(name)
        if counter is None:
            raise EntryError(f"unknown counter {name!r} (counters: {sorted(self.counters)})")
        if not isinstance(index, int) or not 0 <= index < counter.size:
            raise EntryError(f"counter {name}: index {index!r} out of range 0..{counter.size - 1}")
        return self._by_unit(self.model.counters[name].unit, counter.packets[index], counter.bytes[index])

    @staticmethod
    def _by_unit(unit: str, packets: int, byte_count: int) -> tuple[int, int]:
        """(packets, bytes) with the quantity the counter's unit does not count reported as 0."""
        if unit == "packets":
            return packets, 0
        if unit == "bytes":
            return 0, byte_count
        return packets, byte_count

    def counter_reset(self, name: str) -> None:
        """Zero all cells of an indexed counter, or all entries' cells of a direct counter."""
        if name in self.counters:
            self.counters[name].reset()
            return
        spec = self.model.direct_counters.get(name)
        if spec is None or spec.table is None:
            raise EntryError(f"unknown counter {name!r}")
        for entry in self.tables[spec.table].entries.values():
            entry.counts[0] = entry.counts[1] = 0

    def direct_counter_read(self, table: str, match: dict, priority: int = 0) -> tuple[int, int]:
        """(packets, bytes) counted by a table's direct counter for one entry."""
        tbl = self._table(table)
        if tbl.spec.direct_counter is None:
            raise EntryError(f"table {table} has no direct counter")
        entry = tbl.find(match, priority)
        unit = self.model.direct_counters[tbl.spec.direct_counter].unit
        return self._by_unit(unit, entry.counts[0], entry.counts[1])

    def _register(self, name: str, index: int) -> Register:
        """The register of that name with a valid index, or EntryError."""
        register = self.registers.get(name)
        if register is None:
            raise EntryError(f"unknown register {name!r} (registers: {sorted(self.registers)})")
        if not isinstance(index, int) or not 0 <= index < register.size:
            raise EntryError(f"register {name}: index {index!r} out of range 0..{register.size - 1}")
        return register

    def register_read(self, name: str, index: int) -> int:
        """One register cell."""
        return self._register(name, index).cells[index]

    def register_write(self, name: str, index: int, value: int) -> None:
        """Set one register cell (value must fit the cell width)."""
        register = self._register(name, index)
        if register.signed:
            low, high = -(1 << (register.width - 1)), (1 << (register.width - 1)) - 1
        else:
            low, high = 0, (1 << register.width) - 1
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise EntryError(f"register {name}: value {value!r} does not fit in {register.width} bits")
        register.cells[index] = value

    # ----- meters: (cir, cburst, pir, pburst) per second, or None for every packet GREEN
    def _meter_cell(self, name: str, index: int):
        meter = self.meters.get(name)
        if meter is None:
            raise EntryError(f"unknown meter {name!r} (meters: {sorted(self.meters)})")
        if not isinstance(index, int) or not 0 <= index < meter.size:
            raise EntryError(f"meter {name}: index {index!r} out of range 0..{meter.size - 1}")
        return meter.cells[index]

    def meter_set(self, name: str, index: int, config: tuple[int, int, int, int] | None) -> None:
        """Configure one cell of an indexed meter (its buckets start full)."""
        self._meter_cell(name, index).configure(config)

    def meter_config(self, name: str, index: int) -> tuple[int, int, int, int] | None:
        """One cell's configuration (None: the default, every packet GREEN)."""
        return self._meter_cell(name, index).config

    def _direct_meter_cell(self, table: str, match: dict, priority: int):
        tbl = self._table(table)
        if tbl.spec.direct_meter is None:
            raise EntryError(f"table {table} has no direct meter")
        return tbl.find(match, priority).meter

    def direct_meter_set(
        self, table: str, match: dict, config: tuple[int, int, int, int] | None, priority: int = 0
    ) -> None:
        """Configure the direct meter cell of one table entry."""
        self._direct_meter_cell(table, match, priority).configure(config)

    def direct_meter_config(
        self, table: str, match: dict, priority: int = 0
    ) -> tuple[int, int, int, int] | None:
        """The configuration of one table entry's direct meter cell."""
        return self._direct_meter_cell(table, match, priority).config
