/* A calculator in the style of the p4lang tutorial "calc": the parser looks
 * ahead at a header before extracting it, a const-entries table selects the
 * operation, actions take directional arguments from the apply block, and
 * the answer header is rebuilt with a list initializer.  Also: nested
 * structs in metadata, control-local variables, @name/@hidden, serializable
 * enums and a plain enum. */
#include <core.p4>
#include <v1model.p4>

const bit<16> CALC_ETYPE = 0x1234;
const bit<8>  CALC_P     = 0x50;   // 'P'
const bit<8>  CALC_4     = 0x34;   // '4'

enum bit<8> Op {
    PLUS  = 0x2b,   // '+'
    MINUS = 0x2d,   // '-'
    AND   = 0x26,   // '&'
    OR    = 0x7c,   // '|'
    XOR   = 0x5e    // '^'
}

enum Verdict { ANSWERED, UNKNOWN }

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

header calc_t {
    bit<8>  p;
    bit<8>  four;
    bit<8>  ver;
    Op      op;
    bit<32> a;
    bit<32> b;
    bit<32> res;
}

header answer_t {
    bit<8>  verdict;
    bit<32> res;
}

struct headers_t {
    ethernet_t ethernet;
    calc_t     calc;
    answer_t   answer;
}

struct counters_t {
    bit<32> seen;
}

struct metadata_t {
    counters_t c;
    bit<32>    scratch;
}

parser CalcParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            CALC_ETYPE: check_calc;
            default: accept;
        }
    }
    state check_calc {
        transition select(packet.lookahead<calc_t>().p, packet.lookahead<calc_t>().four) {
            (CALC_P, CALC_4): parse_calc;
            default: accept;
        }
    }
    state parse_calc {
        packet.extract(hdr.calc);
        transition accept;
    }
}

control CalcVerify(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control CalcIngress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    bit<48> tmp_mac;
    Verdict verdict = Verdict.UNKNOWN;

    action send_back(in bit<32> result) {
        hdr.calc.res = result;
        tmp_mac = hdr.ethernet.dst;
        hdr.ethernet.dst = hdr.ethernet.src;
        hdr.ethernet.src = tmp_mac;
        standard_metadata.egress_spec = standard_metadata.ingress_port;
        verdict = Verdict.ANSWERED;
    }
    action operation_add() { send_back(hdr.calc.a + hdr.calc.b); }
    action operation_sub() { send_back(hdr.calc.a - hdr.calc.b); }
    action operation_and() { send_back(hdr.calc.a & hdr.calc.b); }
    action operation_or()  { send_back(hdr.calc.a | hdr.calc.b); }
    action operation_xor() { send_back(hdr.calc.a ^ hdr.calc.b); }
    @name(".drop_it") action operation_drop() { mark_to_drop(standard_metadata); }

    @name("calculate")
    table calc_table {
        key = { hdr.calc.op: exact @name("op"); }
        actions = {
            operation_add; operation_sub; operation_and; operation_or; operation_xor;
            operation_drop;
        }
        const default_action = operation_drop();
        const entries = {
            Op.PLUS : operation_add();
            Op.MINUS: operation_sub();
            Op.AND  : operation_and();
            Op.OR   : operation_or();
            Op.XOR  : operation_xor();
        }
    }

    @hidden table never_seen {
        actions = { NoAction; }
    }

    apply {
        meta.c.seen = meta.c.seen + 1;
        if (hdr.calc.isValid()) {
            calc_table.apply();
            never_seen.apply();
            if (verdict == Verdict.ANSWERED) {
                hdr.answer = { 1, hdr.calc.res };
            }
        } else {
            operation_drop();
        }
    }
}

control CalcEgress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    apply { }
}

control CalcCompute(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control CalcDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.calc);
        packet.emit(hdr.answer);
    }
}

V1Switch(CalcParser(), CalcVerify(), CalcIngress(), CalcEgress(), CalcCompute(), CalcDeparser()) main;
