"""The card program's packet vectors (tests/vectors/*.json).

Each vector runs twice:

* on a small model of the card written from p4src/README.md (byte offsets
  and rules as documented, parsed by hand without scapy), which checks that
  the vectors say what the documentation says and that the runner works;
* on the embedded P4 target running p4src/card.p4 itself, the real test
  (skipped, with the reason, only where the language core is absent).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from emulation.card_vectors import (
    CARD_PROGRAM,
    Outcome,
    VectorError,
    compile_card_or_reason,
    embedded_factory,
    load_all,
    run_vector,
)

VECTOR_FILES = sorted((Path(__file__).resolve().parents[1] / "vectors").glob("*.json"))
VECTORS = load_all(VECTOR_FILES)
IDS = [f"{Path(v['file']).stem}:{v['name']}" for v in VECTORS]

# The layout and rules of p4src/README.md, written out again on purpose.
ETH_LEN, TW_LEN, ENTRY_LEN, IPV4_LEN = 14, 20, 16, 20
TWINNET, IPV4 = 0x88B5, 0x0800
MAX_TRACE = 40
REASONS = {
    "malformed": 1,
    "unknown_type": 2,
    "bad_address": 3,
    "no_route": 4,
    "hop_limit": 5,
    "trace_full": 6,
    "no_queue": 7,
}


class ModelCard:
    """The documented behaviour of one card, on bytes (a CardTarget for the vector runner)."""

    def __init__(self) -> None:
        self.card_id, self.hop_limit = 0xFFFF, MAX_TRACE
        self.host_in: dict[int, tuple[int, int]] = {}
        self.host_out: set[int] = set()
        self.routes: dict[tuple[int, int, int], tuple[int, int]] = {}
        self.queues: dict[tuple[int, int], int] = {}
        self.queue_default: int | None = None  # None: drop_no_queue
        self.counters: dict[tuple[str, int], int] = {}

    def set_default(self, table: str, action: str, params: Mapping[str, int]) -> None:
        if (table, action) == ("MyIngress.vc_queue", "MyIngress.set_queue"):
            self.queue_default = params["prio"]
            return
        assert (table, action) == ("MyIngress.card_config", "MyIngress.set_card"), (table, action)
        self.card_id, self.hop_limit = params["card_id"], params["hop_limit"]

    def insert(self, table: str, match: Mapping[str, Any], action: str, params: Mapping[str, int]) -> None:
        if table == "MyIngress.host_in":
            assert action == "MyIngress.from_host"
            self.host_in[match["standard_metadata.ingress_port"]] = (params["pe"], params["rclass"])
        elif table == "MyEgress.host_out":
            assert action == "MyEgress.to_host"
            self.host_out.add(match["standard_metadata.egress_port"])
        elif table == "MyIngress.route":
            assert action == "MyIngress.set_route"
            key = (match["standard_metadata.ingress_port"], match["hdr.tw.dst_pe"], match["hdr.tw.rclass"])
            self.routes[key] = (params["port"], params["vc"])
        elif table == "MyIngress.vc_queue":
            assert action == "MyIngress.set_queue"
            self.queues[(match["hdr.tw.rclass"], match["hdr.tw.vc"])] = params["prio"]
        else:
            raise AssertionError(f"unknown table {table}")

    def counter(self, name: str, index: int) -> tuple[int, int]:
        return self.counters.get((name, index), 0), 0

    def _count(self, name: str, index: int) -> None:
        self.counters[(name, index)] = self.counters.get((name, index), 0) + 1

    def _drop(self, reason: str) -> Outcome:
        self._count("MyIngress.drops", REASONS[reason])
        return Outcome(dropped=True)

    def send(
        self, frame: bytes, port: int, *, ingress_time_us: int, egress_time_us: int, enq_qdepth: int
    ) -> Outcome:
        self._count("MyIngress.rx_port", port)
        # parser
        if len(frame) < ETH_LEN:
            return self._drop("malformed")
        eth, ether_type, pos = bytearray(frame[:ETH_LEN]), int.from_bytes(frame[12:14], "big"), ETH_LEN
        tw: bytearray | None = None
        trace: list[bytes] = []
        ipv4: bytes | None = None
        if ether_type == TWINNET:
            if len(frame) < pos + TW_LEN:
                return self._drop("malformed")
            tw, pos = bytearray(frame[pos : pos + TW_LEN]), pos + TW_LEN
            for _ in range(tw[6]):
                if len(trace) == MAX_TRACE or len(frame) < pos + ENTRY_LEN:
                    return self._drop("malformed")
                trace.append(frame[pos : pos + ENTRY_LEN])
                pos += ENTRY_LEN
        elif ether_type == IPV4:
            if len(frame) < pos + IPV4_LEN:
                return self._drop("malformed")
            ipv4, pos = frame[pos : pos + IPV4_LEN], pos + IPV4_LEN
        rest = frame[pos:]
        # ingress
        if port in self.host_in:
            pe, rclass = self.host_in[port]
            if tw is not None:
                tw[2:4] = pe.to_bytes(2, "big")
                tw[4], tw[5], tw[6] = rclass << 4, 0, 0
                trace = []
            elif ipv4 is not None:
                dst_pe = (int.from_bytes(ipv4[16:20], "big") - 0x0A000001) % (1 << 32)
                if dst_pe >= 0x10000:
                    return self._drop("bad_address")
                tw = bytearray(
                    dst_pe.to_bytes(2, "big")
                    + pe.to_bytes(2, "big")
                    + bytes([rclass << 4, 0, 0, 0])
                    + IPV4.to_bytes(2, "big")
                    + bytes(10)
                )
                eth[12:14] = TWINNET.to_bytes(2, "big")
        if tw is None:
            return self._drop("unknown_type")
        if tw[5] >= self.hop_limit:
            return self._drop("hop_limit")
        if tw[6] >= MAX_TRACE:
            return self._drop("trace_full")
        tw[5] += 1
        key = (port, int.from_bytes(tw[0:2], "big"), tw[4] >> 4)
        if key not in self.routes:
            return self._drop("no_route")
        out_port, vc = self.routes[key]
        tw[4] = (tw[4] & 0xF0) | vc
        prio = self.queues.get((key[2], vc), self.queue_default)
        if prio is None:
            return self._drop("no_queue")
        # egress
        self._count("MyEgress.tx_port_vc", out_port * 16 + vc)
        if out_port in self.host_out and tw[8:10] == IPV4.to_bytes(2, "big"):
            eth[12:14] = tw[8:10]
            return Outcome(False, out_port, bytes(eth) + (ipv4 or b"") + rest, prio)
        entry = (
            self.card_id.to_bytes(2, "big")
            + port.to_bytes(2, "big")
            + out_port.to_bytes(2, "big")
            + bytes([(vc << 4) | prio])
            + enq_qdepth.to_bytes(3, "big")
            + egress_time_us.to_bytes(6, "big")
        )
        tw[6] += 1
        frame_out = bytes(eth) + bytes(tw) + entry + b"".join(trace) + (ipv4 or b"") + rest
        return Outcome(False, out_port, frame_out, prio)


@pytest.mark.parametrize("vector", VECTORS, ids=IDS)
def test_vector_on_documented_model(vector: dict[str, Any]) -> None:
    assert run_vector(vector, ModelCard)


def test_runner_reports_a_wrong_expectation() -> None:
    vector = copy.deepcopy(
        next(v for v in VECTORS if v["name"] == "route_entry_sets_port_vc_priority_and_trace")
    )
    vector["steps"][0]["expect"]["frame"]["twinnet"]["path"][-1]["qdepth"] = 3
    with pytest.raises(VectorError, match="frame differs"):
        run_vector(vector, ModelCard)
    # a target without a controllable clock and queues does not compare qdepth / timestamp
    assert run_vector(vector, ModelCard, exact_time=False)
    vector["steps"][0]["expect"] = {"drop": "no_route"}
    with pytest.raises(VectorError, match="expected a drop"):
        run_vector(vector, ModelCard)


def test_runner_skips_in_process_only_vectors_on_interfaces() -> None:
    runts = next(v for v in VECTORS if v.get("in_process_only"))
    assert not run_vector(runts, ModelCard, in_process=False)


def test_vectors_cover_every_drop_reason() -> None:
    reasons = {step["expect"].get("drop") for v in VECTORS for step in v["steps"]}
    assert set(REASONS) <= reasons


def embedded_program_or_skip() -> Any:
    """The card program compiled by the embedded target, or a skip if there is no language core."""
    program, reason = compile_card_or_reason(CARD_PROGRAM)
    if program is None:
        pytest.skip(reason)
    return program


@pytest.fixture(scope="module")
def embedded_program() -> Any:
    return embedded_program_or_skip()


@pytest.mark.parametrize("vector", VECTORS, ids=IDS)
def test_vector_on_embedded_target(vector: dict[str, Any], embedded_program: Any) -> None:
    assert run_vector(vector, embedded_factory(embedded_program))
