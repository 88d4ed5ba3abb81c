/* The packet replication engine and v1model's special operations, one packet kind each:
 * 1 unicast, 2 multicast, 3 ingress clone, 4 resubmit, 5 recirculate, 6 egress clone,
 * 7 truncate, 8 dropped but cloned, 9 multicast with egress_spec the drop port (simple_switch
 * replicates before its drop check, and egress starts with egress_spec 0), 10 ingress clone
 * to a session that sends to a multicast group. The header records
 * what ingress and egress saw. */
#include <core.p4>
#include <v1model.p4>

header rec_t {
    bit<8> kind;
    bit<8> tag;
    bit<8> iin;    // instance_type seen by ingress
    bit<8> ieg;    // instance_type seen by egress
    bit<8> rid;    // egress_rid seen by egress (low byte)
    bit<8> keep;   // a metadata field in field list 1
    bit<8> lose;   // a metadata field in no field list
    bit<8> pass;
}
struct H { rec_t r; }
struct M {
    @field_list(1) bit<8> keep;
    bit<8> lose;
}

parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.r); transition accept; }
}
control V(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply {
        hdr.r.iin = (bit<8>) sm.instance_type;
        sm.egress_spec = 2;
        if (hdr.r.kind == 2) {
            sm.mcast_grp = 7;
        } else if (hdr.r.kind == 3) {
            m.keep = 0xAA; m.lose = 0xBB; hdr.r.tag = 0x11;
            clone_preserving_field_list(CloneType.I2E, 5, 1);
        } else if (hdr.r.kind == 4) {
            if (sm.instance_type == 0) {
                m.keep = 0x33; m.lose = 0x44; hdr.r.tag = 0x99;
                resubmit_preserving_field_list(1);
            } else {
                hdr.r.keep = m.keep; hdr.r.lose = m.lose;
            }
        } else if (hdr.r.kind == 5 && sm.instance_type == 4) {
            hdr.r.keep = m.keep; hdr.r.lose = m.lose;
        } else if (hdr.r.kind == 7) {
            truncate(3);
        } else if (hdr.r.kind == 8) {
            mark_to_drop(sm);
            clone(CloneType.I2E, 5);
        } else if (hdr.r.kind == 9) {
            sm.egress_spec = 511;
            sm.mcast_grp = 7;
        } else if (hdr.r.kind == 10) {
            clone(CloneType.I2E, 9);
        }
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply {
        hdr.r.ieg = (bit<8>) sm.instance_type;
        hdr.r.rid = sm.egress_rid[7:0];
        if (hdr.r.kind == 9) { hdr.r.tag = sm.egress_spec[7:0]; }
        if (sm.instance_type == 1 || sm.instance_type == 2) {
            hdr.r.keep = m.keep; hdr.r.lose = m.lose;
        } else if (hdr.r.kind == 5 && hdr.r.pass == 0) {
            hdr.r.pass = 1; m.keep = 0x55; m.lose = 0x56;
            recirculate_preserving_field_list(1);
        } else if (hdr.r.kind == 6) {
            hdr.r.tag = 0x12; m.keep = 0x77; m.lose = 0x78;
            clone_preserving_field_list(CloneType.E2E, 6, 1);
        }
    }
}
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.r); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
