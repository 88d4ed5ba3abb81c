/* Meters: an indexed packets meter (index from the frame) and a bytes direct meter on a table. */
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> idx; bit<8> color; bit<8> dcolor; bit<8> pad; }
struct H { h_t h; }
struct M { }

parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control V(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    meter(32w4, MeterType.packets) pm;
    direct_meter<bit<8>>(MeterType.bytes) dm;
    action mark() { dm.read(hdr.h.dcolor); }
    table t { key = { hdr.h.idx : exact; } actions = { mark; NoAction; } default_action = NoAction(); meters = dm; }
    apply {
        sm.egress_spec = 1;
        pm.execute_meter((bit<32>) hdr.h.idx, hdr.h.color);
        t.apply();
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
