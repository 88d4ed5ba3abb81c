/* Expression and parser features of the embedded target's subset: width and
 * wrap-around rules, casts, slices, concatenation, saturating arithmetic,
 * select with masks/ranges/default/tuples, lookahead, verify, exit,
 * registers, counters, setValid/setInvalid and what the deparser emits. */
#include <core.p4>
#include <v1model.p4>

#define ETHERTYPE_OPS 0x88B6

error { BadValue }

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

header ops_t {
    bit<8>  kind;
    bit<8>  a;
    bit<8>  b;
    int<8>  s;
    int<8>  t;
    bit<16> w;
    bit<8>  sum;
    bit<8>  diff;
    bit<8>  prod;
    bit<8>  shl;
    bit<8>  shr;
    int<8>  ssum;
    int<8>  sshr;
    bit<8>  s2b;
    bit<16> ext;
    bit<16> sext;
    bit<4>  hi;
    bit<4>  lo;
    bit<16> cat;
    bit<8>  satadd;
    bit<8>  satsub;
    bit<8>  neg;
    bit<8>  cpl;
    bit<8>  mx;
    bit<8>  flags;
    bit<8>  path;
    bit<8>  peek;
}

header extra_t {
    bit<8> v;
}

struct headers_t {
    ethernet_t ethernet;
    ops_t      ops;
    extra_t    extra;
}

struct metadata_t {
    bit<8> path;
    bit<8> peek;
}

parser OpsParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_OPS: parse_ops;
            default: accept;
        }
    }
    state parse_ops {
        meta.peek = packet.lookahead<bit<8>>();
        packet.extract(hdr.ops);
        transition select(hdr.ops.kind) {
            8w1: path_exact;
            8w0x20 &&& 8w0xF0: path_mask;
            8w0x40 .. 8w0x4F: path_range;
            default: path_default;
        }
    }
    state path_exact {
        meta.path = 1;
        transition accept;
    }
    state path_mask {
        meta.path = 2;
        transition accept;
    }
    state path_range {
        meta.path = 3;
        transition accept;
    }
    state path_default {
        meta.path = 4;
        verify(hdr.ops.a != 0xEE, error.BadValue);
        transition select(hdr.ops.a, hdr.ops.b) {
            (0xAA, _): path_tuple;
            default: accept;
        }
    }
    state path_tuple {
        meta.path = 5;
        transition accept;
    }
}

control NoVerify(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control OpsIngress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    register<bit<32>>(4) total;
    counter(8, CounterType.packets_and_bytes) paths;

    apply {
        standard_metadata.egress_spec = 1;
        if (standard_metadata.parser_error == error.BadValue) {
            hdr.ops.path = 99;
            exit;
        }
        if (!hdr.ops.isValid()) {
            mark_to_drop(standard_metadata);
            exit;
        }
        if (hdr.ops.a == 0xFE) {
            standard_metadata.egress_spec = 2;
            exit;
        }
        hdr.ops.sum = hdr.ops.a + hdr.ops.b;
        hdr.ops.diff = hdr.ops.a - hdr.ops.b;
        hdr.ops.prod = hdr.ops.a * hdr.ops.b;
        hdr.ops.shl = hdr.ops.a << 3;
        hdr.ops.shr = hdr.ops.a >> 2;
        hdr.ops.ssum = hdr.ops.s + hdr.ops.t;
        hdr.ops.sshr = hdr.ops.s >> 1;
        hdr.ops.s2b = (bit<8>) hdr.ops.s;
        hdr.ops.ext = (bit<16>) hdr.ops.a;
        hdr.ops.sext = (bit<16>) ((int<16>) hdr.ops.s);
        hdr.ops.hi = hdr.ops.a[7:4];
        hdr.ops.lo = hdr.ops.b[3:0];
        hdr.ops.cat = hdr.ops.a ++ hdr.ops.b;
        hdr.ops.satadd = hdr.ops.a |+| hdr.ops.b;
        hdr.ops.satsub = hdr.ops.a |-| hdr.ops.b;
        hdr.ops.neg = -hdr.ops.a;
        hdr.ops.cpl = ~hdr.ops.a;
        hdr.ops.mx = hdr.ops.a > hdr.ops.b ? hdr.ops.a : hdr.ops.b;
        bit<8> f = 0;
        if (hdr.ops.a == hdr.ops.b) { f = f | 0x80; }
        if (hdr.ops.s < hdr.ops.t) { f = f | 0x40; }
        if (hdr.ops.a >= hdr.ops.b) { f = f | 0x20; }
        if ((hdr.ops.a & hdr.ops.b) != 0 && hdr.ops.kind != 0x7F) { f = f | 0x10; }
        f[3:0] = hdr.ops.w[11:8];
        hdr.ops.flags = f;
        hdr.ops.path = meta.path;
        hdr.ops.peek = meta.peek;

        bit<32> acc;
        total.read(acc, 0);
        total.write(0, acc + (bit<32>) hdr.ops.a);
        paths.count((bit<32>) meta.path);

        if (hdr.ops.b == 0xDD) {
            hdr.ops.setInvalid();
        }
        if (hdr.ops.kind == 1) {
            hdr.extra.setValid();
            hdr.extra.v = 0xAB;
        }
    }
}

control NoEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply { }
}

control NoCompute(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control OpsDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr);
    }
}

V1Switch(OpsParser(), NoVerify(), OpsIngress(), NoEgress(), NoCompute(), OpsDeparser()) main;
