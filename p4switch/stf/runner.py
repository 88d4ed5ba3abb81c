"""Run an STF script on a pipeline of the language core and compare the frames out with those expected.

Each ``packet`` goes through the pipeline at once (queues empty): on the general path
(``ingress`` then ``egress`` per copy) or on the fused driver (``run_fused``, whose
queued packets go through ``egress``). Between the two, the pipeline's replication
engine and traffic manager (p4switch.runtime.replication, traffic_manager) do what
simple_switch does: multicast groups (``mc_*`` verbs: one copy per node port, nodes in
the order they were associated), clone sessions (``mirroring_add``, ``mirroring_add_mc``),
resubmission and recirculation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from p4switch.compiler.model import TableSpec
from p4switch.errors import EntryError, PacketError
from p4switch.runtime.replication import CloneSession, MulticastGroup, Replica
from p4switch.stf.script import Command, Expected, StfError


@dataclass
class StfResult:
    """Whether every expected frame arrived and nothing else, and a readable account of the differences."""

    passed: bool
    differences: list[str] = field(default_factory=list)

    def report(self) -> str:
        """The differences, one a line (empty when passed)."""
        return "\n".join(self.differences)


class _Hooks:
    """FusedHooks of the runner: drops are dropped; a queued packet's state is kept for run_egress."""

    def __init__(self) -> None:
        self.queued: list[tuple[int, Any]] = []

    def parser_error(self, code: int) -> None:
        pass

    def ingress_drop(self) -> None:
        pass

    def egress_drop(self) -> None:
        pass

    def queue(self, egress_port: int, priority: int, state: Any, timestamp_us: int) -> None:
        self.queued.append((egress_port, state))


class StfRun:
    """One STF script against one fresh pipeline."""

    def __init__(self, program: Any, stf_file: str, fused: bool) -> None:
        self.program = program
        self.model = program.model
        self.pipeline = program.new_pipeline()
        self.stf_file = stf_file
        self.fused = fused
        self.nodes: list[tuple[Replica, ...]] = []  # mc_node_create handles: 0, 1, ...
        self.received: dict[int, list[bytes]] = {}
        self.expected: dict[int, list[Expected]] = {}
        self.errors: list[str] = []

    def fail(self, command: Command, message: str) -> StfError:
        """An error located at the command's line."""
        return StfError(self.stf_file, command.line, 1, message)

    def run(self, commands: list[Command]) -> StfResult:
        """Run every command, then compare."""
        for command in commands:  # every port named in the script is an interface from the start
            if command.verb == "packet":
                self.received.setdefault(command.args["port"], [])
            elif command.verb == "expect":
                self.received.setdefault(command.args["expected"].port, [])
        for command in commands:
            getattr(self, f"_do_{command.verb}")(command)
        return self.compare()

    # ------------------------------------------------------------ control plane
    def _table(self, command: Command, name: str) -> TableSpec:
        return self.model.tables[_resolve(name, list(self.model.tables), command, self, "table")]

    def _action(self, command: Command, name: str) -> str:
        return _resolve(name, list(self.model.actions), command, self, "action")

    def _arguments(self, command: Command, action: str) -> tuple[int, ...]:
        spec = self.model.actions[action]
        given = dict(command.args["arguments"])
        missing = [p.name for p in spec.params if p.name not in given]
        if missing or len(given) != len(spec.params):
            raise self.fail(
                command, f"action {action} takes {[p.name for p in spec.params]}, got {sorted(given)}"
            )
        return tuple(given[p.name] for p in spec.params)

    def _do_add(self, command: Command) -> None:
        table = self._table(command, command.args["table"])
        action = self._action(command, command.args["action"])
        match = {}
        for name, value in command.args["keys"]:
            key = _resolve_key(name, table, command, self)
            match[key.name] = _key_value(value, key.match_kind, key.width, command, self)
        priority = command.args["priority"]
        needs_priority = any(k.match_kind in ("ternary", "range", "optional") for k in table.keys)
        if priority is None:
            priority = 1 if needs_priority else 0
        try:
            self.pipeline.table_insert(table.name, match, action, self._arguments(command, action), priority)
        except EntryError as error:
            raise self.fail(command, str(error)) from error

    def _do_setdefault(self, command: Command) -> None:
        table = self._table(command, command.args["table"])
        action = self._action(command, command.args["action"])
        try:
            self.pipeline.table_set_default(table.name, action, self._arguments(command, action))
        except EntryError as error:
            raise self.fail(command, str(error)) from error

    def _do_mc_mgrp_create(self, command: Command) -> None:
        self._pre(command, self.pipeline.pre.set_group, MulticastGroup(command.args["group"], ()))

    def _do_mc_node_create(self, command: Command) -> None:
        # a node's ports are a bitmap in simple_switch's PRE: its copies leave in port order
        rid = command.args["rid"]
        self.nodes.append(tuple(Replica(port, rid) for port in sorted(set(command.args["ports"]))))

    def _do_mc_node_associate(self, command: Command) -> None:
        group, node = command.args["group"], command.args["node"]
        pre = self.pipeline.pre
        if group not in pre.groups or not 0 <= node < len(self.nodes):
            raise self.fail(command, f"no multicast group {group} or node {node}")
        replicas = pre.groups[group].replicas + self.nodes[node]
        self._pre(command, pre.set_group, MulticastGroup(group, replicas))

    def _do_mirroring_add(self, command: Command) -> None:
        session, port = command.args["session"], command.args["target"]
        self._pre(command, self.pipeline.pre.set_session, CloneSession(session, (Replica(port),)))

    def _do_mirroring_add_mc(self, command: Command) -> None:
        session, group = command.args["session"], command.args["target"]
        self._pre(command, self.pipeline.pre.set_session, CloneSession(session, (), multicast_group=group))

    def _pre(self, command: Command, write: Any, entry: Any) -> None:
        """A write to the replication engine; its EntryError located at the command."""
        try:
            write(entry)
        except EntryError as error:
            raise self.fail(command, str(error)) from error

    def _do_no_op(self, command: Command) -> None:
        pass

    # ------------------------------------------------------------ data plane
    def _do_expect(self, command: Command) -> None:
        expected = command.args["expected"]
        self.expected.setdefault(expected.port, []).append(expected)
        self.received.setdefault(expected.port, [])

    def _do_packet(self, command: Command) -> None:
        port, data = command.args["port"], command.args["data"]
        self.received.setdefault(port, [])
        try:
            for out_port, frame in self._process(data, port):
                if out_port in self.received:
                    self.received[out_port].append(frame)
        except PacketError as error:
            self.errors.append(f"line {command.line}: packet on port {port}: {error}")
        except Exception as error:  # noqa: BLE001 - the generated code failing is reported, not raised
            self.errors.append(f"line {command.line}: packet on port {port}: {type(error).__name__}: {error}")

    def _process(self, data: bytes, port: int) -> list[tuple[int, bytes]]:
        """The frames one packet gives: its ingress results through the replication engine, then egress."""
        pipeline = self.pipeline
        if self.fused:
            hooks = _Hooks()
            sent = pipeline.fused_entry_point()(data, port, 0, _every_port_idle, hooks)
            if sent is not None:
                return [sent]
            results = [pipeline.result_of(state) for _, state in hooks.queued]
        else:
            results = [pipeline.ingress(data, port, 0)]
        return pipeline.egress_all([copy for result in results for copy in pipeline.replicate(result)])

    def compare(self) -> StfResult:
        """Every port's received frames against its expected ones, in order."""
        differences = list(self.errors)
        for port in sorted(set(self.received) | set(self.expected)):
            expected = self.expected.get(port, [])
            received = self.received.get(port, [])
            for index in range(max(len(expected), len(received))):
                want = expected[index] if index < len(expected) else None
                got = received[index] if index < len(received) else None
                if want is not None and got is not None and want.matches(got):
                    continue
                wanted = want.text() if want else "nothing"
                came = got.hex().upper() if got else "nothing"
                differences.append(f"port {port} frame {index + 1}: expected {wanted}, received {came}")
        return StfResult(not differences, differences)


def _every_port_idle(egress_port: int, priority: int) -> bool:
    """The fused driver's ``admit``: every port is idle (a queued packet is a multicast or special one)."""
    return True


def _resolve(name: str, names: list[str], command: Command, run: StfRun, kind: str) -> str:
    """A P4Info name from an STF name: itself, or the one name it is a dotted suffix of."""
    if name in names:
        return name
    found = [n for n in names if n.endswith("." + name)]
    if len(found) != 1:
        raise run.fail(command, f"no single {kind} named {name!r} (candidates: {found or sorted(names)})")
    return found[0]


def _resolve_key(name: str, table: TableSpec, command: Command, run: StfRun):
    """A table's key field from an STF key name (the P4Info name, or a dotted suffix of it, or it of it)."""
    keys = [k for k in table.keys if k.name == name]
    keys = keys or [k for k in table.keys if k.name.endswith("." + name) or name.endswith("." + k.name)]
    if len(keys) != 1:
        raise run.fail(
            command, f"table {table.name} has no single key {name!r} ({[k.name for k in table.keys]})"
        )
    return keys[0]


def _key_value(text: str, kind: str, width: int, command: Command, run: StfRun) -> Any:
    """The control-plane match value of one STF key value."""
    full = (1 << width) - 1
    try:
        if "&&&" in text:
            value, mask = (int(part, 0) for part in text.split("&&&"))
            return (value & mask, mask) if kind == "ternary" else value
        if "/" in text:
            value, length = text.split("/")
            return (int(value, 0), int(length))
        if ".." in text or "->" in text:
            low, high = text.replace("->", "..").split("..")
            return (int(low, 0), int(high, 0))
        if "*" in text:
            digits = text[2:] if text.lower().startswith("0x") else text
            value = int(digits.replace("*", "0"), 16)
            mask = int("".join("0" if d == "*" else "f" for d in digits), 16)
            return (value, mask & full)
        value = int(text, 0)
    except ValueError as error:
        raise run.fail(command, f"cannot read key value {text!r}") from error
    if kind == "ternary":
        return (value, full)
    if kind == "lpm":
        return (value, width)
    if kind == "range":
        return (value, value)
    return value


def run_stf(program: Any, commands: list[Command], stf_file: str, fused: bool = False) -> StfResult:
    """Run an STF script on a fresh pipeline of `program`; StfError for a line that cannot be run."""
    return StfRun(program, stf_file, fused).run(commands)
