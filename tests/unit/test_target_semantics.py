"""Smaller semantic points of the embedded P4 target, each on a short program written for it.

Expected values come from the P4 specification's rules and from the published
check values of the CRC algorithms (CRC-16/ARC and CRC-32 of b"123456789").
"""

from __future__ import annotations

import zlib

import pytest

from p4switch import compile_program

PROGRAM = """#include <core.p4>
#include <v1model.p4>
header a_t { bit<8> x; bit<8> y; }
header d_t { bit<72> data; }
header r_t { bit<16> h16; bit<32> h32; bit<32> id; bit<8> rnd; }
struct headers_t { a_t first; a_t second; a_t[3] st; d_t d; r_t r; }
struct inner_t { bit<8> v; }
struct meta_t { inner_t one; inner_t two; bit<8> idx; }
parser P(packet_in pk, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pk.extract(hdr.first);
        transition select(hdr.first.x) {
            1: copy_headers;
            2: stack_ops;
            3: hashes;
            default: accept;
        }
    }
    state copy_headers { pk.extract(hdr.second); transition accept; }
    state stack_ops {
        pk.extract(hdr.st.next);
        pk.extract(hdr.st.next);
        transition select(hdr.st.last.x) {
            7: accept;
            default: stack_ops_more;
        }
    }
    state stack_ops_more { pk.extract(hdr.st.next); transition accept; }
    state hashes { pk.extract(hdr.d); pk.extract(hdr.r); transition accept; }
}
control V(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.first.x == 1) {
            hdr.second.y = 0xEE;          // written before the copy: overwritten by it
            hdr.second = hdr.first;       // copies fields and validity
            hdr.first.y = hdr.first.y + 1; // the copy is independent
            meta.one.v = 5;
            meta.two = meta.one;
            meta.one.v = 6;
            hdr.second.x = meta.two.v;
        } else if (hdr.first.x == 2) {
            meta.idx = hdr.first.y;
            hdr.st[meta.idx].y = 0xAB;    // run-time index
            hdr.st.push_front(1);
            hdr.st[0] = { 0x10, 0x11 };   // list initializer: valid
            hdr.first.y = (bit<8>) hdr.st.lastIndex;
        } else if (hdr.first.x == 3) {
            hash(hdr.r.h16, HashAlgorithm.crc16, 16w0, { hdr.d.data }, 32w65536);
            hash(hdr.r.h32, HashAlgorithm.crc32, 32w0, { hdr.d.data }, 32w0);
            hash(hdr.r.id, HashAlgorithm.identity, 32w0, { hdr.first.y, hdr.d.data[15:0] }, 32w0);
            random(hdr.r.rnd, 8w10, 8w20);
        } else if (hdr.first.x == 4) {
            hdr.first.y = 9;
        }
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.first.x == 4) { mark_to_drop(sm); }   // dropped in egress
    }
}
control C(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pk, in headers_t hdr) { apply { pk.emit(hdr); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    """One pipeline of the semantics program for the module."""
    path = tmp_path_factory.mktemp("semantics") / "semantics.p4"
    path.write_text(PROGRAM)
    return compile_program(path, use_disk_cache=False).new_pipeline()


def test_header_and_struct_assignment_copy(pipeline):
    # first = (1, 0x20), second = (0x30, 0x40); after: first.y+1, second = old first with x = 5
    """Assignment copies headers (with validity) and structs; the copies are independent."""
    out = pipeline.process(bytes([1, 0x20, 0x30, 0x40]) + b"rest", 3)
    assert out == [(1, bytes([1, 0x21, 5, 0x20]) + b"rest")]


def test_stack_next_last_push_front_and_runtime_index(pipeline):
    # two elements parsed (the last has x == 7); st[1].y = 0xAB; push_front(1) shifts to st[1], st[2]
    """Parser .next/.last, push_front, lastIndex and a run-time index."""
    sent = bytes([2, 1, 0x01, 0x02, 0x07, 0x08]) + b"tail"
    out = pipeline.process(sent, 3)
    # lastIndex after the push: three elements -> 2
    assert out == [(1, bytes([2, 2, 0x10, 0x11, 0x01, 0x02, 0x07, 0xAB]) + b"tail")]
    # three elements when the second is not 7
    sent = bytes([2, 0, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06]) + b"t"
    out = pipeline.process(sent, 3)
    # st[0].y = 0xAB, then push_front(1) drops the third element (5, 6) off the end
    assert out == [(1, bytes([2, 2, 0x10, 0x11, 0x01, 0xAB, 0x03, 0x04]) + b"t")]


def test_hash_algorithms_match_their_check_values(pipeline):
    """crc16, crc32 and identity give the published values; random stays in range."""
    data = b"123456789"
    sent = bytes([3, 0x5A]) + data + bytes(11) + b"end"
    out = pipeline.process(sent, 3)
    result = out[0][1]
    h16 = int.from_bytes(result[11:13], "big")
    h32 = int.from_bytes(result[13:17], "big")
    ident = int.from_bytes(result[17:21], "big")
    rnd = result[21]
    assert h16 == 0xBB3D  # CRC-16/ARC check value
    assert h32 == zlib.crc32(data) == 0xCBF43926
    assert ident == (0x5A << 16) | int.from_bytes(data[-2:], "big")
    assert 10 <= rnd <= 20
    assert result[22:] == b"end"


def test_mark_to_drop_in_egress_drops(pipeline):
    """A drop marked in egress drops the packet after egress."""
    result = pipeline.ingress(bytes([4, 0]), 3)
    assert not result.dropped and result.egress_spec == 1
    assert pipeline.egress(result, 1) is None
    assert pipeline.process(bytes([5, 0]), 3) == [(1, bytes([5, 0]))]


def test_unparsed_headers_are_not_emitted_and_short_packets_survive(pipeline):
    """Short packets keep what was parsed and never raise."""
    assert pipeline.process(bytes([9, 9]) + b"xyz", 2) == [(1, bytes([9, 9]) + b"xyz")]
    # x == 1 but no second header: PacketTooShort, second stays invalid; the copy makes it valid
    assert pipeline.process(bytes([1, 0x20]), 2) == [(1, bytes([1, 0x21, 5, 0x20]))]
    assert pipeline.process(b"\x02", 2) == [(1, b"\x02")]  # first too short: nothing valid, no crash


FUNCTIONS = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct headers_t { h_t h; }
struct meta_t { }
bit<8> max8(in bit<8> x, in bit<8> y) {
    if (x > y) { return x; }
    return y;
}
void bump(inout h_t h) { h.b = h.b + 1; }
parser P(packet_in pk, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control V(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { hdr.h.a = max8(hdr.h.a, hdr.h.b); bump(hdr.h); sm.egress_spec = 1; }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control C(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pk, in headers_t hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


@pytest.mark.parametrize("a,b", [(3, 9), (10, 9), (255, 255)])
def test_functions_return_values_and_update_headers(tmp_path, a, b):
    """Functions return values and update inout headers."""
    path = tmp_path / "functions.p4"
    path.write_text(FUNCTIONS)
    pipe = compile_program(path, use_disk_cache=False).new_pipeline()
    assert pipe.process(bytes([a, b]), 2) == [(1, bytes([max(a, b), (b + 1) % 256]))]


LAYOUT = """#include <core.p4>
#include <v1model.p4>
header odd_t { bit<4> a; bit<20> b; bool c; int<7> d; bit<72> e; bit<3> f; bit<5> g; bit<48> h; }
struct headers_t { odd_t odd; }
struct meta_t { }
parser P(packet_in pk, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.odd); transition accept; }
}
control V(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.odd.a = hdr.odd.a + 1;
        hdr.odd.b = hdr.odd.b ^ 20w0xFFFFF;
        hdr.odd.c = !hdr.odd.c;
        hdr.odd.d = hdr.odd.d - 1;
        hdr.odd.e = hdr.odd.e + 1;
        hdr.odd.f = (bit<3>) ((bit<1>) hdr.odd.c);
        hdr.odd.h = hdr.odd.h >> 4;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control C(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pk, in headers_t hdr) { apply { pk.emit(hdr.odd); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def bits(*fields: tuple[int, int]) -> bytes:
    """Concatenate (value, width) as a string of binary digits, then to bytes (an independent packer)."""
    text = "".join(format(value % (1 << width), f"0{width}b") for value, width in fields)
    return int(text, 2).to_bytes(len(text) // 8, "big")


@pytest.mark.parametrize(
    "a,b,c,d,e,g,h",
    [
        (3, 0x12345, 1, -5, (1 << 72) - 1, 17, 0xABCDEF012345),
        (15, 0, 0, -64, 12345, 0, 0),
        (0, 0xFFFFF, 1, 63, 7, 31, 1),
    ],
)
def test_fields_of_any_width_round_trip(tmp_path, a, b, c, d, e, g, h):
    """Extract and emit of fields that straddle bytes, bool and signed fields, wide fields."""
    path = tmp_path / "layout.p4"
    path.write_text(LAYOUT)
    pipe = compile_program(path, use_disk_cache=False).new_pipeline()
    sent = bits((a, 4), (b, 20), (c, 1), (d, 7), (e, 72), (5, 3), (g, 5), (h, 48)) + b"pay"
    expected = (
        bits(
            ((a + 1) % 16, 4),
            (b ^ 0xFFFFF, 20),
            (1 - c, 1),
            (d - 1, 7),
            ((e + 1) % (1 << 72), 72),
            (1 - c, 3),
            (g, 5),
            (h >> 4, 48),
        )
        + b"pay"
    )
    assert pipe.process(sent, 2) == [(1, expected)]
