"""Packet test vectors for the card program: load them, build their frames, run them on a card target.

A vector file (``tests/vectors/*.json``, format in ``tests/vectors/README.md``)
holds table entries and default actions by P4Info name, frames to send on an
ingress port, and what must come out (port, priority, frame) or which drop
reason must be counted. Frames are described by fields and built here with
:mod:`emulation.packets` and scapy, so a vector states the layout it expects,
not bytes some target produced.

The runner speaks to a card through :class:`CardTarget`, four operations that
any target offers: set a default action, insert an entry, send a frame on a
port and see what leaves, read a counter cell. :class:`EmbeddedCard` runs the
program on twinnet's embedded target (docs/target-api.md); a bmv2 back end
implements the same four with P4Runtime and veth interfaces (p4src/README.md),
and passes ``exact_time=False`` so that the trace fields a real switch fills
from its own clock and queues are not compared.

    python -m emulation.card_vectors tests/vectors/*.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw

from emulation import packets
from p4src import CARD_PROGRAM
from topologies.addressing import host_mac
from topologies.errors import TwinnetError

#: Trace fields a target without a controllable clock and queues cannot reproduce.
TIME_DEPENDENT_TRACE_FIELDS = ("qdepth", "timestamp")


class VectorError(TwinnetError, AssertionError):
    """A vector whose outcome differs from what it expects (or a malformed vector)."""


@dataclass(frozen=True)
class Outcome:
    """What a card did with one frame: the port and frame it sent, or a drop.

    ``priority`` is the queue priority ingress chose, None where the target
    cannot show it (bmv2: the trace entry's ``prio`` field carries it).
    """

    dropped: bool
    port: int | None = None
    frame: bytes | None = None
    priority: int | None = None


class CardTarget(Protocol):
    """One card running the card program, as the vector runner drives it."""

    def set_default(self, table: str, action: str, params: Mapping[str, int]) -> None: ...

    def insert(
        self, table: str, match: Mapping[str, Any], action: str, params: Mapping[str, int]
    ) -> None: ...

    def send(
        self, frame: bytes, port: int, *, ingress_time_us: int, egress_time_us: int, enq_qdepth: int
    ) -> Outcome: ...

    def counter(self, name: str, index: int) -> tuple[int, int]: ...


class EmbeddedCard:
    """A card on the embedded target: one pipeline of the compiled card program.

    Ingress and egress run separately so that the vector sets the times and
    the queue depth egress sees, and the priority ingress chose is visible.
    """

    def __init__(self, program: Any) -> None:
        self.pipeline = program.new_pipeline()
        # the pipeline takes action parameters in declaration order, as P4Info lists them
        self.param_names = {a.preamble.name: [p.name for p in a.params] for a in program.p4info.actions}

    def _ordered(self, action: str, params: Mapping[str, int]) -> tuple[int, ...]:
        names = self.param_names.get(action, [])
        if set(names) != set(params):
            raise VectorError(f"action {action} takes parameters {names}, the vector gives {sorted(params)}")
        return tuple(int(params[name]) for name in names)

    def set_default(self, table: str, action: str, params: Mapping[str, int]) -> None:
        self.pipeline.table_set_default(table, action, self._ordered(action, params))

    def insert(self, table: str, match: Mapping[str, Any], action: str, params: Mapping[str, int]) -> None:
        self.pipeline.table_insert(table, dict(match), action, self._ordered(action, params))

    def send(
        self, frame: bytes, port: int, *, ingress_time_us: int, egress_time_us: int, enq_qdepth: int
    ) -> Outcome:
        result = self.pipeline.ingress(frame, port, timestamp_us=ingress_time_us)
        if result.dropped:
            return Outcome(dropped=True, priority=result.priority)
        out = self.pipeline.egress(
            result, result.egress_spec, enq_qdepth=enq_qdepth, timestamp_us=egress_time_us
        )
        if out is None:
            return Outcome(dropped=True, priority=result.priority)
        return Outcome(dropped=False, port=result.egress_spec, frame=out, priority=result.priority)

    def counter(self, name: str, index: int) -> tuple[int, int]:
        return self.pipeline.counter_read(name, index)


def compile_card(path: Path = CARD_PROGRAM, defines: Mapping[str, str] | None = None) -> Any:
    """Compile the card program on the embedded target (strict: what p4c's bmv2 back end accepts)."""
    from p4switch import compile_program  # the language core; imported only when used

    return compile_program(
        str(path), include_dirs=(), defines=dict(defines) if defines else None, strict=True
    )


def compile_card_or_reason(
    path: Path = CARD_PROGRAM, defines: Mapping[str, str] | None = None
) -> tuple[Any, str | None]:
    """``(program, None)``, or ``(None, reason)`` when there is no embedded target to compile with.

    Only a missing language core (its API cannot be imported) is a reason; a
    compile error of the program is raised, since the core runs the program.
    """
    try:
        from p4switch import compile_program  # noqa: F401
    except ImportError as error:
        return None, f"embedded target: p4switch.compile_program is not available ({error})"
    return compile_card(path, defines), None


def embedded_factory(program: Any) -> Callable[[], CardTarget]:
    """A factory of fresh embedded cards running ``program``."""
    return lambda: EmbeddedCard(program)


# ---------------------------------------------------------------- vector files


def load(path: str | Path) -> list[dict[str, Any]]:
    """The vectors of one file, each with the file's shared setups resolved into its cards."""
    data = json.loads(Path(path).read_text())
    setups: dict[str, Any] = data.get("setups", {})
    vectors = data["vectors"]
    for vector in vectors:
        vector.setdefault("file", str(path))
        for card in vector["cards"].values():
            names = card.pop("setups", [])
            unknown = [name for name in names if name not in setups]
            if unknown:
                raise VectorError(f"{path}: vector {vector['name']!r} uses unknown setups {unknown}")
            # the setups in the order named, then the card's own: a later default wins
            for part in ("defaults", "entries"):
                shared = [item for name in names for item in setups[name].get(part, [])]
                card[part] = shared + card.get(part, [])
    return vectors


def load_all(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """The vectors of several files, in order."""
    return [vector for path in paths for vector in load(path)]


# -------------------------------------------------------------------- frames


def _mac(desc: Mapping[str, Any], key: str) -> str:
    if f"{key}_pe" in desc:
        return host_mac(desc[f"{key}_pe"])
    return desc[key]


def _trace_entries(hops: Iterable[Mapping[str, int]]) -> list[packets.TraceEntry]:
    """Trace entries in wire order (newest first) from hops in path order; ``repeat`` copies a hop."""
    entries = []
    for hop in hops:
        fields = {field: int(value) for field, value in hop.items() if field != "repeat"}
        entries.extend(packets.TraceEntry(**fields) for _ in range(int(hop.get("repeat", 1))))
    return entries[::-1]


def build_frame(desc: Mapping[str, Any]) -> bytes:
    """The bytes of a frame described by fields (format: tests/vectors/README.md).

    ``{"hex": ...}`` is taken as is; otherwise the frame is Ethernet, then an
    optional twinnet header (its trace given as ``path``, first card first),
    an optional IPv4 header and UDP header, and a payload; ``truncate`` cuts
    the built frame to that many bytes.
    """
    if "hex" in desc:
        frame = bytes.fromhex(desc["hex"])
    else:
        eth = desc["eth"]
        if "twinnet" in desc:
            ether_type = packets.ETHERTYPE_TWINNET
        elif "ipv4" in desc:
            ether_type = packets.ETHERTYPE_IPV4
        else:
            ether_type = eth["type"]
        pkt: Packet = Ether(dst=_mac(eth, "dst"), src=_mac(eth, "src"), type=eth.get("type", ether_type))
        if "twinnet" in desc:
            fields = dict(desc["twinnet"])
            hops = fields.pop("path", [])
            header = packets.Twinnet(**fields)
            header.trace = _trace_entries(hops)
            if "ipv4" in desc and "next_type" not in fields:
                header.next_type = packets.ETHERTYPE_IPV4
            pkt = pkt / header
        if "ipv4" in desc:
            ip = dict(desc["ipv4"])
            ip.setdefault("ttl", 64)
            ip.setdefault("id", 1)
            pkt = pkt / IP(**ip)
            if "udp" in desc:
                pkt = pkt / UDP(**desc["udp"])
        if "payload_hex" in desc:
            pkt = pkt / Raw(bytes.fromhex(desc["payload_hex"]))
        elif "payload" in desc:
            pkt = pkt / Raw(desc["payload"].encode())
        frame = bytes(pkt)
    if "truncate" in desc:
        frame = frame[: desc["truncate"]]
    return frame


def _masked(frame: bytes, fields: Iterable[str]) -> bytes:
    """``frame`` with the given trace-entry fields zeroed (frames without twinnet are unchanged)."""
    fields = tuple(fields)
    if not fields:
        return frame
    pkt = packets.decode(frame)
    if packets.Twinnet not in pkt:
        return frame
    for entry in pkt[packets.Twinnet].trace:
        for field in fields:
            setattr(entry, field, 0)
    return bytes(pkt)


def describe_difference(expected: bytes, actual: bytes) -> str:
    """A readable account of how two frames differ: the decoded fields that differ, then the bytes."""
    exp_lines = packets.decode(expected).show(dump=True).splitlines()
    act_lines = packets.decode(actual).show(dump=True).splitlines()
    diffs = [
        f"  expected {e.strip()!r}, got {a.strip()!r}"
        for e, a in zip(exp_lines, act_lines, strict=False)
        if e != a
    ]
    if len(exp_lines) != len(act_lines):
        diffs.append(f"  decoded lengths differ: {len(exp_lines)} vs {len(act_lines)} lines")
    return "\n".join(diffs + [f"  expected bytes {expected.hex()}", f"  actual bytes   {actual.hex()}"])


# -------------------------------------------------------------------- running


def counter_index(spec: Mapping[str, Any]) -> int:
    """The counter cell a vector names: ``index``, or ``reason`` (drops), or ``port`` and ``vc``."""
    if "index" in spec:
        return int(spec["index"])
    if "reason" in spec:
        return packets.DROP_REASONS[spec["reason"]]
    if "vc" in spec:
        return packets.port_vc_index(spec["port"], spec["vc"])
    return int(spec["port"])


def _check_step(
    here: str, card: CardTarget, step: Mapping[str, Any], frame: bytes, ignore: tuple[str, ...]
) -> Outcome:
    """Send one step's frame and compare the outcome with the step's ``expect``."""
    expect = step["expect"]
    reason = expect.get("drop")
    cell = packets.DROP_REASONS[reason] if reason else None
    drops_before = card.counter(packets.COUNTER_DROPS, cell)[0] if cell is not None else 0
    ingress_time = int(step.get("ingress_time_us", 0))
    outcome = card.send(
        frame,
        int(step["port"]),
        ingress_time_us=ingress_time,
        egress_time_us=int(step.get("egress_time_us", ingress_time)),
        enq_qdepth=int(step.get("enq_qdepth", 0)),
    )
    if cell is not None:
        if not outcome.dropped:
            raise VectorError(f"{here}: expected a drop ({reason}), got a frame on port {outcome.port}")
        counted = card.counter(packets.COUNTER_DROPS, cell)[0] - drops_before
        if counted != 1:
            raise VectorError(f"{here}: drop counted {counted} times as {reason}, expected once")
        return outcome
    if outcome.dropped:
        raise VectorError(f"{here}: dropped, expected a frame on port {expect['port']}")
    if outcome.port != expect["port"]:
        raise VectorError(f"{here}: sent on port {outcome.port}, expected port {expect['port']}")
    if "priority" in expect and outcome.priority is not None and outcome.priority != expect["priority"]:
        raise VectorError(f"{here}: priority {outcome.priority}, expected {expect['priority']}")
    expected_frame = build_frame(expect["frame"])
    actual = outcome.frame or b""
    if _masked(actual, ignore) != _masked(expected_frame, ignore):
        raise VectorError(f"{here}: frame differs\n{describe_difference(expected_frame, actual)}")
    return outcome


def run_vector(
    vector: Mapping[str, Any],
    new_card: Callable[[], CardTarget],
    *,
    exact_time: bool = True,
    in_process: bool = True,
) -> bool:
    """Run one vector on fresh cards; raise :class:`VectorError` at the first difference.

    With ``exact_time`` False (targets whose clocks and queues the runner does
    not control) the trace entries' qdepth and timestamp are not compared.
    With ``in_process`` False (frames go through real interfaces) vectors
    marked ``in_process_only`` (runt frames no interface sends) are skipped.
    Returns whether the vector ran.
    """
    where = f"{vector.get('file', '?')}: {vector['name']}"
    if vector.get("in_process_only") and not in_process:
        return False
    cards: dict[str, CardTarget] = {}
    for name, setup in vector["cards"].items():
        card = new_card()
        for default in setup.get("defaults", []):
            card.set_default(default["table"], default["action"], default.get("params", {}))
        for entry in setup.get("entries", []):
            card.insert(entry["table"], entry["match"], entry["action"], entry.get("params", {}))
        cards[name] = card

    ignore = () if exact_time else TIME_DEPENDENT_TRACE_FIELDS
    outputs: list[bytes | None] = []
    for number, step in enumerate(vector["steps"]):
        here = f"{where}: step {number}"
        source = step["frame"].get("from_step")
        if source is None:
            frame = build_frame(step["frame"])
        elif outputs[source] is None:
            raise VectorError(f"{here}: step {source} sent no frame to feed on")
        else:
            frame = outputs[source]
        outputs.append(_check_step(here, cards[step["card"]], step, frame, ignore).frame)

    for spec in vector.get("counters", []):
        index = counter_index(spec)
        count = cards[spec["card"]].counter(spec["name"], index)[0]
        if count != spec["packets"]:
            raise VectorError(
                f"{where}: counter {spec['name']}[{index}] on card {spec['card']} "
                f"is {count} packets, expected {spec['packets']}"
            )
    return True


def main(argv: list[str] | None = None) -> int:
    """Run vector files on the embedded target and print one line per vector."""
    parser = argparse.ArgumentParser(description="Run card-program packet vectors on the embedded P4 target.")
    parser.add_argument("files", nargs="+", help="vector files (JSON)")
    parser.add_argument("--program", default=str(CARD_PROGRAM), help="P4 program (default: p4src/card.p4)")
    args = parser.parse_args(argv)
    factory = embedded_factory(compile_card(Path(args.program)))
    failures = 0
    for vector in load_all(args.files):
        try:
            run_vector(vector, factory)
        except VectorError as error:
            failures += 1
            print(f"FAIL {error}")
        else:
            print(f"ok   {vector['file']}: {vector['name']}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
