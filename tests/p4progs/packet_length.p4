/* Ingress records packet_length and overwrites it; egress records what it sees. */
#include <core.p4>
#include <v1model.p4>
header h_t { bit<32> ingress_len; bit<32> egress_len; }
struct H { h_t h; }
struct M { }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control V(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply {
        hdr.h.ingress_len = sm.packet_length;
        sm.packet_length = 3;
        sm.egress_spec = 1;
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply { hdr.h.egress_len = sm.packet_length; }
}
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
