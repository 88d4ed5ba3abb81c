"""P4Info of the embedded P4 target: parses with the p4runtime protobufs and matches the programs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from p4.config.v1 import p4info_pb2

from p4switch import compile_program
from p4switch.compiler.p4info import jenkins_one_at_a_time

PROGS = Path(__file__).resolve().parents[1] / "p4progs"
PROGRAMS = ["basic.p4", "acl.p4", "srcroute.p4", "features.p4", "calc.p4"]


def reparsed(program) -> p4info_pb2.P4Info:
    """The P4Info after a round trip through its wire format."""
    info = p4info_pb2.P4Info()
    info.ParseFromString(program.p4info.SerializeToString())
    return info


@pytest.mark.parametrize("name", PROGRAMS)
def test_ids_are_unique_and_carry_their_resource_prefix(name):
    """Ids are unique, typed by their top byte, hashed from the name."""
    info = reparsed(compile_program(PROGS / name, use_disk_cache=False))
    assert info.pkg_info.arch == "v1model"
    prefixes = p4info_pb2.P4Ids
    groups = [
        (info.tables, prefixes.TABLE),
        (info.actions, prefixes.ACTION),
        (info.counters, prefixes.COUNTER),
        (info.direct_counters, prefixes.DIRECT_COUNTER),
        (info.registers, prefixes.REGISTER),
    ]
    ids = []
    for items, prefix in groups:
        for item in items:
            assert item.preamble.id >> 24 == prefix, item.preamble.name
            # the low 24 bits are the name's one-at-a-time hash (p4c's scheme), unless probing moved them
            assert item.preamble.id & 0xFFFFFF == jenkins_one_at_a_time(item.preamble.name) & 0xFFFFFF
            ids.append(item.preamble.id)
    assert len(ids) == len(set(ids))
    action_ids = {a.preamble.id for a in info.actions}
    for table in info.tables:
        assert [f.id for f in table.match_fields] == list(range(1, len(table.match_fields) + 1))
        assert {ref.id for ref in table.action_refs} <= action_ids


def test_basic_matches_p4c_output_for_the_tutorial_program():
    # The p4lang tutorial "basic" uses the same names; p4c gives these ids in its basic.p4info.txt.
    """Ids, names and widths equal what p4c emits for the same names."""
    info = reparsed(compile_program(PROGS / "basic.p4", use_disk_cache=False))
    tables = {t.preamble.name: t for t in info.tables}
    actions = {a.preamble.name: a for a in info.actions}
    assert tables["MyIngress.ipv4_lpm"].preamble.id == 37375156
    assert actions["MyIngress.ipv4_forward"].preamble.id == 28792405
    assert actions["MyIngress.drop"].preamble.id == 25652968
    assert actions["NoAction"].preamble.id == 21257015
    table = tables["MyIngress.ipv4_lpm"]
    assert table.preamble.alias == "ipv4_lpm"
    assert [(f.name, f.bitwidth, f.match_type) for f in table.match_fields] == [
        ("hdr.ipv4.dstAddr", 32, p4info_pb2.MatchField.LPM)
    ]
    assert [r.id for r in table.action_refs] == [28792405, 25652968, 21257015]
    assert table.size == 1024 and not table.const_default_action_id
    params = [(p.id, p.name, p.bitwidth) for p in actions["MyIngress.ipv4_forward"].params]
    assert params == [(1, "dstAddr", 48), (2, "port", 9)]


def test_acl_tables_counters_and_annotations():
    """Match kinds, direct counters, const tables and action scopes."""
    info = reparsed(compile_program(PROGS / "acl.p4", use_disk_cache=False))
    tables = {t.preamble.name: t for t in info.tables}
    acl = tables["AclIngress.acl"]
    kinds = [(f.name, f.bitwidth, f.match_type) for f in acl.match_fields]
    mf = p4info_pb2.MatchField
    assert kinds == [
        ("hdr.ipv4.src_addr", 32, mf.TERNARY),
        ("hdr.ipv4.dst_addr", 32, mf.TERNARY),
        ("hdr.ipv4.protocol", 8, mf.TERNARY),
        ("hdr.l4.dport", 16, mf.RANGE),
        ("dscp", 8, mf.OPTIONAL),
    ]
    assert acl.size == 64
    (direct,) = info.direct_counters
    assert direct.preamble.name == "AclIngress.acl_hits"
    assert direct.direct_table_id == acl.preamble.id and list(acl.direct_resource_ids) == [direct.preamble.id]
    assert direct.spec.unit == p4info_pb2.CounterSpec.BOTH
    (verdicts,) = info.counters
    assert (verdicts.preamble.name, verdicts.size, verdicts.spec.unit) == (
        "AclIngress.verdicts",
        2,
        p4info_pb2.CounterSpec.PACKETS,
    )
    fwd = tables["AclIngress.fwd"]
    assert fwd.is_const_table
    no_action = next(a for a in info.actions if a.preamble.name == "NoAction")
    assert fwd.const_default_action_id == no_action.preamble.id
    scopes = {r.id: r.scope for r in fwd.action_refs}
    assert scopes[no_action.preamble.id] == p4info_pb2.ActionRef.DEFAULT_ONLY
    classify = tables["AclIngress.classify"]
    assert [(f.name, f.bitwidth) for f in classify.match_fields] == [
        ("hdr.ipv4.protocol", 8),
        ("hdr.l4.isValid()", 1),
    ]


def test_registers_and_counters_of_srcroute_and_features():
    """Registers and counters with their sizes and widths."""
    info = reparsed(compile_program(PROGS / "srcroute.p4", use_disk_cache=False))
    (register,) = info.registers
    assert (register.preamble.name, register.size, register.type_spec.bitstring.bit.bitwidth) == (
        "SrIngress.last_depth",
        1,
        16,
    )
    assert not info.tables
    # p4c lists the actions a control body calls directly, as well as those of tables
    source = (PROGS / "srcroute.p4").read_text()
    apply_body = source[source.index("    apply {", source.index("control SrIngress")) :]
    declared = re.findall(r"action (\w+)\(", source)
    called = {name for name in declared if re.search(rf"\b{name}\(\);", apply_body.split("\ncontrol ")[0])}
    assert called and {a.preamble.name for a in info.actions} == {f"SrIngress.{name}" for name in called}
    info = reparsed(compile_program(PROGS / "features.p4", use_disk_cache=False))
    assert [(r.preamble.name, r.size, r.type_spec.bitstring.bit.bitwidth) for r in info.registers] == [
        ("OpsIngress.total", 4, 32)
    ]
    assert [(c.preamble.name, c.size, c.spec.unit) for c in info.counters] == [
        ("OpsIngress.paths", 8, p4info_pb2.CounterSpec.BOTH)
    ]
