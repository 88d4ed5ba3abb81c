"""Control-plane state of the embedded P4 target: every EntryError case leaves the state as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch import Entry, EntryError, compile_program

PROGS = Path(__file__).resolve().parents[1] / "p4progs"
LPM = "MyIngress.ipv4_lpm"
FWD = "MyIngress.ipv4_forward"
ACL = "AclIngress.acl"


@pytest.fixture(scope="module")
def basic():
    """The basic forwarder, compiled once."""
    return compile_program(PROGS / "basic.p4", use_disk_cache=False)


@pytest.fixture(scope="module")
def acl():
    """The ACL program, compiled once."""
    return compile_program(PROGS / "acl.p4", use_disk_cache=False)


@pytest.fixture()
def pipe(basic):
    """A basic-forwarder pipeline with one LPM entry."""
    pipeline = basic.new_pipeline()
    pipeline.table_insert(LPM, {"hdr.ipv4.dstAddr": (0x0A000000, 8)}, FWD, (0xAA, 1))
    return pipeline


BASIC_ERRORS = [
    (lambda p: p.table_insert("MyIngress.nope", {}, FWD, ()), "unknown table 'MyIngress.nope'"),
    (
        lambda p: p.table_insert(LPM, {"hdr.ipv4.srcAddr": (0, 0)}, FWD, (1, 1)),
        "unknown match field 'hdr.ipv4.srcAddr'",
    ),
    (
        lambda p: p.table_insert(LPM, {"hdr.ipv4.dstAddr": (1 << 32, 32)}, FWD, (1, 1)),
        "does not fit in 32 bits",
    ),
    (lambda p: p.table_insert(LPM, {"hdr.ipv4.dstAddr": (0x0A000000, 33)}, FWD, (1, 1)), "prefix length 33"),
    (
        lambda p: p.table_insert(LPM, {"hdr.ipv4.dstAddr": (0x0A000001, 8)}, FWD, (1, 1)),
        "bits set beyond the /8 prefix",
    ),
    (lambda p: p.table_insert(LPM, {"hdr.ipv4.dstAddr": 5}, FWD, (1, 1)), "needs (value, prefix_len)"),
    (lambda p: p.table_insert(LPM, {"hdr.ipv4.dstAddr": (0x0A000000, 8)}, FWD, (1, 1)), "already exists"),
    (
        lambda p: p.table_insert(LPM, {"hdr.ipv4.dstAddr": (0x0B000000, 8)}, "MyIngress.nothing", ()),
        "is not one of its actions",
    ),
    (
        lambda p: p.table_insert(LPM, {"hdr.ipv4.dstAddr": (0x0B000000, 8)}, FWD, (1,)),
        "takes 2 parameters, got 1",
    ),
    (
        lambda p: p.table_insert(LPM, {"hdr.ipv4.dstAddr": (0x0B000000, 8)}, FWD, (1, 512)),
        "parameter port of MyIngress.ipv4_forward is 9 bits",
    ),
    (lambda p: p.table_insert(LPM, {"hdr.ipv4.dstAddr": (0x0B000000, 8)}, FWD, (-1, 1)), "parameter dstAddr"),
    (lambda p: p.table_delete(LPM, {"hdr.ipv4.dstAddr": (0x0B000000, 8)}), "no entry with match"),
    (
        lambda p: p.table_modify(LPM, {"hdr.ipv4.dstAddr": (0x0B000000, 8)}, FWD, (1, 1)),
        "no entry with match",
    ),
    (
        lambda p: p.table_modify(LPM, {"hdr.ipv4.dstAddr": (0x0A000000, 8)}, FWD, (1, 1, 1)),
        "takes 2 parameters",
    ),
    (lambda p: p.table_set_default(LPM, FWD, (1,)), "takes 2 parameters, got 1"),
    (lambda p: p.counter_read("MyIngress.none", 0), "unknown counter"),
    (lambda p: p.register_read("MyIngress.none", 0), "unknown register"),
]


@pytest.mark.parametrize("request_, message", BASIC_ERRORS, ids=[m for _, m in BASIC_ERRORS])
def test_invalid_requests_raise_entry_error_without_changing_state(pipe, request_, message):
    """Each invalid request names its problem and changes nothing."""
    before = (pipe.table_entries(LPM), pipe.table_default(LPM))
    with pytest.raises(EntryError) as caught:
        request_(pipe)
    assert message in str(caught.value)
    assert (pipe.table_entries(LPM), pipe.table_default(LPM)) == before


def test_insert_modify_delete_and_default_round_trip(pipe):
    """Valid requests change exactly what they say."""
    match = {"hdr.ipv4.dstAddr": (0x0A000000, 8)}
    assert pipe.table_entries(LPM) == [Entry(match, FWD, (0xAA, 1), 0)]
    pipe.table_modify(LPM, match, FWD, (0xBB, 2))
    assert pipe.table_entries(LPM) == [Entry(match, FWD, (0xBB, 2), 0)]
    assert pipe.table_default(LPM) == ("MyIngress.drop", ())
    pipe.table_set_default(LPM, FWD, (0xCC, 3))
    assert pipe.table_default(LPM) == (FWD, (0xCC, 3))
    pipe.table_reset_default(LPM)
    assert pipe.table_default(LPM) == ("MyIngress.drop", ())
    pipe.table_delete(LPM, match)
    assert pipe.table_entries(LPM) == []


def test_acl_specific_errors(acl):
    """Ternary masks, ranges, const tables, counter indices and priorities are checked."""
    pipe = acl.new_pipeline()
    with pytest.raises(EntryError, match="has bits outside its mask"):
        pipe.table_insert(ACL, {"hdr.ipv4.src_addr": (0x0A000001, 0xFF000000)}, "AclIngress.deny", (), 1)
    with pytest.raises(EntryError, match="low 9 > high 3"):
        pipe.table_insert(ACL, {"hdr.l4.dport": (9, 3)}, "AclIngress.deny", (), 1)
    with pytest.raises(EntryError, match="has const entries"):
        pipe.table_insert(
            "AclIngress.fwd", {"standard_metadata.ingress_port": 7}, "AclIngress.set_port", (1,)
        )
    with pytest.raises(EntryError, match="default action is const"):
        pipe.table_set_default("AclIngress.fwd", "AclIngress.set_port", (1,))
    with pytest.raises(EntryError, match="counter AclIngress.verdicts: index 2 out of range"):
        pipe.counter_read("AclIngress.verdicts", 2)
    # same match, different priorities: two entries; same priority again: duplicate
    pipe.table_insert(ACL, {"dscp": 1}, "AclIngress.deny", (), 1)
    pipe.table_insert(ACL, {"dscp": 1}, "AclIngress.deny", (), 2)
    with pytest.raises(EntryError, match="already exists"):
        pipe.table_insert(ACL, {"dscp": 1}, "AclIngress.allow", (), 2)
    assert len(pipe.table_entries(ACL)) == 2


def test_table_size_is_enforced(acl):
    """A table holds at most `size` entries."""
    pipe = acl.new_pipeline()
    for i in range(64):
        pipe.table_insert(ACL, {"hdr.ipv4.dst_addr": (i, 0xFFFFFFFF)}, "AclIngress.deny", (), 1)
    with pytest.raises(EntryError, match="is full"):
        pipe.table_insert(ACL, {"hdr.ipv4.dst_addr": (99, 0xFFFFFFFF)}, "AclIngress.deny", (), 1)


EXACT_PROGRAM = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<16> b; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pk, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control V(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action send(bit<9> port) { sm.egress_spec = port; }
    table t { key = { hdr.h.a: exact; hdr.h.b: exact; } actions = { send; } default_action = send(0); }
    apply { t.apply(); }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control C(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pk, in headers_t hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_exact_tables(tmp_path):
    """Exact keys are required and width-checked; lookups use all of them."""
    path = tmp_path / "exact.p4"
    path.write_text(EXACT_PROGRAM)
    pipe = compile_program(path, use_disk_cache=False).new_pipeline()
    with pytest.raises(EntryError, match="exact field hdr.h.b is missing"):
        pipe.table_insert("I.t", {"hdr.h.a": 1}, "I.send", (3,))
    with pytest.raises(EntryError, match="value 256 of hdr.h.a does not fit in 8 bits"):
        pipe.table_insert("I.t", {"hdr.h.a": 256, "hdr.h.b": 1}, "I.send", (3,))
    pipe.table_insert("I.t", {"hdr.h.a": 1, "hdr.h.b": 0x0203}, "I.send", (3,))
    assert pipe.process(b"\x01\x02\x03", 1) == [(3, b"\x01\x02\x03")]
    assert pipe.process(b"\x01\x02\x04", 1) == [(0, b"\x01\x02\x04")]


def test_register_write_checks_width_and_index(basic):
    """Register writes must fit the cell width and the array."""
    program = compile_program(PROGS / "srcroute.p4", use_disk_cache=False)
    pipe = program.new_pipeline()
    with pytest.raises(EntryError, match="does not fit in 16 bits"):
        pipe.register_write("SrIngress.last_depth", 0, 1 << 16)
    with pytest.raises(EntryError, match="index 1 out of range"):
        pipe.register_write("SrIngress.last_depth", 1, 0)
    pipe.register_write("SrIngress.last_depth", 0, 65535)
    assert pipe.register_read("SrIngress.last_depth", 0) == 65535
