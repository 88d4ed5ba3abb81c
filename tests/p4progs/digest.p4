/* Digests: a MAC-learning digest built from a list (digest<T>), and a struct carrying a header, a bool
   and an int, sent by an action of a table. The frame: ethernet, then one byte `tag`. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> type; }
header tag_t { bit<8> tag; }
struct H { ethernet_t eth; tag_t t; }
struct learn_t { bit<48> src; bit<9> port; }
struct seen_t { bit<8> tag; ethernet_t eth; bool odd; int<8> delta; }
struct M { seen_t seen; }

parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.eth); pk.extract(hdr.t); transition accept; }
}
control V(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    action report(int<8> delta) {
        m.seen.tag = hdr.t.tag;
        m.seen.eth = hdr.eth;
        m.seen.odd = hdr.t.tag[0:0] == 1;
        m.seen.delta = delta;
        digest(2, m.seen);
        m.seen.tag = 0;  // after the call: the digest keeps the value it was given
    }
    table watch { key = { hdr.t.tag : exact; } actions = { report; NoAction; } default_action = NoAction(); }
    apply {
        sm.egress_spec = 1;
        if (hdr.eth.type == 0x88b5) {
            digest<learn_t>(1, {hdr.eth.src, sm.ingress_port});
        }
        watch.apply();
        if (hdr.t.tag == 0xff) { mark_to_drop(sm); }  // dropped packets still send their digest
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.eth); pk.emit(hdr.t); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
