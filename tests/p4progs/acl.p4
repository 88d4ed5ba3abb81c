/* Ternary ACL with priorities (ternary, range and optional keys, direct
 * counter), port forwarding by const entries, a classifier whose result is
 * used through switch on action_run, and the IPv4 checksum recomputed. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> total_len;
    bit<16> identification;
    bit<3>  flags;
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdr_checksum;
    bit<32> src_addr;
    bit<32> dst_addr;
}

header l4_t {
    bit<16> sport;
    bit<16> dport;
}

struct headers_t {
    ethernet_t ethernet;
    ipv4_t     ipv4;
    l4_t       l4;
}

struct metadata_t { }

parser AclParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            0x0800: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol) {
            6: parse_l4;
            17: parse_l4;
            default: accept;
        }
    }
    state parse_l4 {
        packet.extract(hdr.l4);
        transition accept;
    }
}

control AclVerify(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control AclIngress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    direct_counter(CounterType.packets_and_bytes) acl_hits;
    counter(2, CounterType.packets) verdicts;

    action allow() { }
    action deny() {
        mark_to_drop(standard_metadata);
    }

    table acl {
        key = {
            hdr.ipv4.src_addr: ternary;
            hdr.ipv4.dst_addr: ternary;
            hdr.ipv4.protocol: ternary;
            hdr.l4.dport: range;
            hdr.ipv4.diffserv: optional @name("dscp");
        }
        actions = { allow; deny; }
        default_action = allow();
        counters = acl_hits;
        size = 64;
    }

    action set_port(bit<9> port) {
        standard_metadata.egress_spec = port;
    }

    table fwd {
        key = { standard_metadata.ingress_port: exact; }
        actions = { set_port; @defaultonly NoAction; }
        const default_action = NoAction();
        const entries = {
            1: set_port(2);
            2: set_port(1);
        }
    }

    action mark_tcp() { }
    action mark_udp() { }

    table classify {
        key = { hdr.ipv4.protocol: exact; hdr.l4.isValid(): exact; }
        actions = { mark_tcp; mark_udp; NoAction; }
        default_action = NoAction();
        const entries = {
            (6, true): mark_tcp();
            (17, true): mark_udp();
        }
    }

    apply {
        if (!hdr.ipv4.isValid()) {
            mark_to_drop(standard_metadata);
            return;
        }
        fwd.apply();
        switch (acl.apply().action_run) {
            deny: {
                verdicts.count(1);
                return;
            }
            allow: {
                verdicts.count(0);
            }
        }
        switch (classify.apply().action_run) {
            mark_tcp: { hdr.ipv4.diffserv = 4; }
            mark_udp: { hdr.ipv4.diffserv = 8; }
            default: { hdr.ipv4.diffserv = 0; }
        }
    }
}

control AclEgress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply { }
}

control AclCompute(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control AclDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.l4);
    }
}

V1Switch(AclParser(), AclVerify(), AclIngress(), AclEgress(), AclCompute(), AclDeparser()) main;
