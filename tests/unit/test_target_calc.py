"""The calculator program (tests/p4progs/calc.p4): lookahead, serializable enums, actions calling actions."""

from __future__ import annotations

import operator
from pathlib import Path

import pytest
from scapy.fields import ByteField, IntField, StrFixedLenField
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw

from p4switch import compile_program

PROGRAM = Path(__file__).resolve().parents[1] / "p4progs" / "calc.p4"
OPS = {"+": operator.add, "-": operator.sub, "&": operator.and_, "|": operator.or_, "^": operator.xor}


class Calc(Packet):
    """The calc_t header of calc.p4."""

    name = "Calc"
    fields_desc = [
        StrFixedLenField("p", b"P", 1),
        StrFixedLenField("four", b"4", 1),
        ByteField("ver", 1),
        StrFixedLenField("op", b"+", 1),
        IntField("a", 0),
        IntField("b", 0),
        IntField("res", 0),
    ]


class Answer(Packet):
    """The answer_t header of calc.p4."""

    name = "Answer"
    fields_desc = [ByteField("verdict", 0), IntField("res", 0)]


@pytest.fixture(scope="module")
def pipeline():
    """One pipeline of calc.p4 for the module."""
    return compile_program(PROGRAM, use_disk_cache=False).new_pipeline()


def request(op: str, a: int, b: int, magic: bytes = b"P4") -> Packet:
    """A calculator request frame."""
    return (
        Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:02", type=0x1234)
        / Calc(p=magic[:1], four=magic[1:], op=op.encode(), a=a, b=b)
        / Raw(b"end")
    )


@pytest.mark.parametrize(
    "op,a,b", [("+", 7, 9), ("-", 3, 10), ("&", 0xF0F0, 0xFF00), ("|", 1, 6), ("^", 5, 5)]
)
def test_answers_come_back_to_the_sender(pipeline, op, a, b):
    """Each operation's result (modulo 2**32) comes back on the ingress port with the MACs swapped."""
    result = OPS[op](a, b) % (1 << 32)
    out = pipeline.process(bytes(request(op, a, b)), 4)
    expected = (
        Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01", type=0x1234)
        / Calc(op=op.encode(), a=a, b=b, res=result)
        / Answer(verdict=1, res=result)
        / Raw(b"end")
    )
    assert out == [(4, bytes(expected))]


def test_unknown_operation_and_wrong_magic_are_dropped(pipeline):
    """The const default action drops unknown operations; non-calc frames are dropped."""
    assert pipeline.process(bytes(request("*", 1, 2)), 4) == []
    # a wrong magic is not extracted (lookahead only): no calc header, dropped by the apply block
    assert pipeline.process(bytes(request("+", 1, 2, magic=b"Q4")), 4) == []


def test_p4info_names_follow_name_annotations():
    """@name renames tables, keys and actions; @hidden tables are not in P4Info."""
    info = compile_program(PROGRAM, use_disk_cache=False).p4info
    (table,) = info.tables  # the @hidden table is not in P4Info
    assert table.preamble.name == "CalcIngress.calculate"
    assert [(f.name, f.bitwidth) for f in table.match_fields] == [("op", 8)]
    names = {a.preamble.name for a in info.actions}
    assert "drop_it" in names and "CalcIngress.operation_add" in names
    assert table.const_default_action_id == next(
        a.preamble.id for a in info.actions if a.preamble.name == "drop_it"
    )
