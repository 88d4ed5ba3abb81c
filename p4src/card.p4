/*
 * twinnet card program (P4_16, v1model).
 *
 * One program for every card of every topology: a card forwards by tables the
 * controller fills (no topology logic here), appends one trace entry per hop,
 * maps (routing class, VC) to a priority queue, encapsulates plain IPv4 from a
 * host at the first card and restores it at the last one, and counts what it
 * receives, sends and drops.  The header layout, tables, counters and drop
 * reasons are documented byte by byte in p4src/README.md; emulation/packets.py
 * is the Python side of the same layout.
 */

#include <core.p4>
#include <v1model.p4>

/* ---------------------------------------------------------------- constants */

/* Trace entries a packet can carry.  Every card a packet crosses appends one,
 * so this bounds the path length in cards (see README: 24 covers the longest
 * paths the emulation accepts, 18 cards for DORT on a 3DT 8x8x8).  Override
 * with -DTW_MAX_TRACE=N; emulation/packets.py must agree. */
#ifndef TW_MAX_TRACE
#define TW_MAX_TRACE 24
#endif

/* Hop limit of a card whose card_config default action the controller has not
 * set: as many cards as the trace can record. */
#ifndef TW_DEFAULT_HOP_LIMIT
#define TW_DEFAULT_HOP_LIMIT TW_MAX_TRACE
#endif

/* Card id written into the trace by a card the controller has not configured. */
#define TW_UNSET_CARD_ID 0xFFFF

const bit<16> ETHERTYPE_IPV4    = 0x0800;
/* IEEE 802 Local Experimental EtherType 1. */
const bit<16> ETHERTYPE_TWINNET = 0x88B5;

/* Hosts live in 10.0.0.0/8 and PE p has address 10.0.0.0 + p + 1
 * (topologies/addressing.py), so p = address - 10.0.0.1. */
const bit<32> TW_HOST_BASE = 0x0A000001;

/* Drop reasons: the index of MyIngress.drops each reason counts in. */
#define DROP_NONE         0
#define DROP_MALFORMED    1
#define DROP_UNKNOWN_TYPE 2
#define DROP_BAD_ADDRESS  3
#define DROP_NO_ROUTE     4
#define DROP_HOP_LIMIT    5
#define DROP_TRACE_FULL   6
#define DROP_NO_QUEUE     7
#define TW_DROP_REASONS   8

/* Counter sizes: every 9-bit port, and 16 VCs per port. */
#define TW_PORTS        512
#define TW_VCS_PER_PORT 16

/* ------------------------------------------------------------------ headers */

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

/* The twinnet routing header, 20 bytes, right after Ethernet. */
header twinnet_t {
    bit<16> dst_pe;       /* destination PE */
    bit<16> src_pe;       /* source PE, written by the first card */
    bit<4>  rclass;       /* routing class, written by the first card */
    bit<4>  vc;           /* VC the packet travels on, written by every card */
    bit<8>  hop_count;    /* cards that have forwarded the packet */
    bit<8>  trace_count;  /* trace entries that follow this header */
    bit<8>  tc;           /* user traffic class: carried, never used for routing */
    bit<16> next_type;    /* EtherType of what follows the trace: 0x0800 IPv4, 0 probe payload */
    bit<32> probe_id;     /* set by the sender (0 for encapsulated IPv4) */
    bit<48> send_time;    /* sender's clock, microseconds mod 2^48 (0 for encapsulated IPv4) */
}

/* One trace entry, 16 bytes; the newest entry is first on the wire. */
header trace_entry_t {
    bit<16> card_id;      /* the card's id (MyIngress.card_config) */
    bit<16> in_port;      /* ingress port */
    bit<16> out_port;     /* egress port */
    bit<4>  vc;           /* VC the packet leaves on */
    bit<4>  prio;         /* standard_metadata.priority it was queued with */
    bit<24> qdepth;       /* enq_qdepth: packets queued on the egress port when it was enqueued */
    bit<48> timestamp;    /* egress_global_timestamp, microseconds, card-local clock */
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

struct headers_t {
    ethernet_t                  ethernet;
    twinnet_t                   tw;
    trace_entry_t[TW_MAX_TRACE] trace;
    ipv4_t                      ipv4;   /* only for plain IPv4 from a host */
}

struct metadata_t {
    bit<16> card_id;          /* from MyIngress.card_config, used by egress for the trace */
    bit<8>  hop_limit;        /* from MyIngress.card_config */
    bit<8>  trace_remaining;  /* parser loop counter */
    bit<16> src_pe;           /* from MyIngress.host_in */
    bit<4>  rclass;           /* from MyIngress.host_in */
    bit<8>  drop_reason;      /* DROP_* */
    bit<3>  prio;             /* the priority set_queue chose, for the trace entry */
    bit<1>  to_host;          /* set by MyEgress.host_out */
}

/* ------------------------------------------------------------------- parser */

parser MyParser(packet_in packet,
                out headers_t hdr,
                inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {

    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_TWINNET: parse_twinnet;
            ETHERTYPE_IPV4:    parse_ipv4;
            default:           accept;   /* ingress drops it as DROP_UNKNOWN_TYPE */
        }
    }

    state parse_twinnet {
        packet.extract(hdr.tw);
        meta.trace_remaining = hdr.tw.trace_count;
        transition select(hdr.tw.trace_count) {
            0:       accept;
            default: parse_trace;
        }
    }

    /* One entry per iteration.  More than TW_MAX_TRACE entries overflow the
     * stack (error.StackOutOfBounds), fewer bytes than announced end in
     * error.PacketTooShort: ingress drops both as DROP_MALFORMED. */
    state parse_trace {
        packet.extract(hdr.trace.next);
        meta.trace_remaining = meta.trace_remaining - 1;
        transition select(meta.trace_remaining) {
            0:       accept;
            default: parse_trace;
        }
    }

    /* The IPv4 header is parsed only to read its destination when the first
     * card encapsulates; inside a twinnet frame it is payload. */
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition accept;
    }
}

/* ------------------------------------------------------------------ ingress */

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    /* IPv4 is carried unchanged, so its checksum is neither checked nor updated. */
    apply { }
}

control MyIngress(inout headers_t hdr,
                  inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {

    counter(TW_PORTS, CounterType.packets_and_bytes) rx_port;
    counter(TW_DROP_REASONS, CounterType.packets_and_bytes) drops;

    /* The card's identity and hop limit: a keyless table whose default
     * action the controller sets. */
    action set_card(bit<16> card_id, bit<8> hop_limit) {
        meta.card_id = card_id;
        meta.hop_limit = hop_limit;
    }

    table card_config {
        actions = { set_card; }
        default_action = set_card(TW_UNSET_CARD_ID, TW_DEFAULT_HOP_LIMIT);
    }

    /* A port that faces a host (PE pe): this card is the packet's first and
     * writes source PE and routing class, whatever the host put there. */
    action from_host(bit<16> pe, bit<4> rclass) {
        meta.src_pe = pe;
        meta.rclass = rclass;
    }

    table host_in {
        key = { standard_metadata.ingress_port: exact; }
        actions = { from_host; NoAction; }
        default_action = NoAction();   /* a card-to-card port */
    }

    /* A probe from a host keeps its destination, id, send time and payload;
     * everything the routing depends on is the card's. */
    action claim_probe() {
        hdr.tw.src_pe = meta.src_pe;
        hdr.tw.rclass = meta.rclass;
        hdr.tw.vc = 0;
        hdr.tw.hop_count = 0;
        hdr.tw.trace_count = 0;
        hdr.trace.pop_front(TW_MAX_TRACE);   /* a host cannot forge trace entries */
    }

    /* Ethernet|IPv4 -> Ethernet|twinnet|IPv4; the Ethernet addresses stay. */
    action encapsulate(bit<16> dst_pe) {
        hdr.tw.setValid();
        hdr.tw.dst_pe = dst_pe;
        hdr.tw.src_pe = meta.src_pe;
        hdr.tw.rclass = meta.rclass;
        hdr.tw.vc = 0;
        hdr.tw.hop_count = 0;
        hdr.tw.trace_count = 0;
        hdr.tw.tc = 0;
        hdr.tw.next_type = ETHERTYPE_IPV4;
        hdr.tw.probe_id = 0;
        hdr.tw.send_time = 0;
        hdr.ethernet.ether_type = ETHERTYPE_TWINNET;
    }

    /* The route table of docs/contracts.md: one entry per (ingress port,
     * destination PE, routing class) on the model's paths. */
    action set_route(bit<9> port, bit<4> vc) {
        standard_metadata.egress_spec = port;
        hdr.tw.vc = vc;
    }

    action drop_no_route() {
        meta.drop_reason = DROP_NO_ROUTE;
    }

    table route {
        key = {
            standard_metadata.ingress_port: exact;
            hdr.tw.dst_pe:                  exact;
            hdr.tw.rclass:                  exact;
        }
        actions = { set_route; drop_no_route; }
        default_action = drop_no_route();
        size = 65536;
    }

    /* (routing class, VC) -> priority queue of the egress port.  With
     * simple_switch --priority-queues 8, priority 7 is served first. */
    action set_queue(bit<3> prio) {
        standard_metadata.priority = prio;
        /* The trace reads this copy: what egress sees in standard_metadata.priority
         * is left to the target's traffic manager. */
        meta.prio = prio;
    }

    action drop_no_queue() {
        meta.drop_reason = DROP_NO_QUEUE;
    }

    table vc_queue {
        key = {
            hdr.tw.rclass: exact;
            hdr.tw.vc:     exact;
        }
        actions = { set_queue; drop_no_queue; }
        default_action = drop_no_queue();
        size = 256;
    }

    apply {
        rx_port.count((bit<32>) standard_metadata.ingress_port);
        meta.drop_reason = DROP_NONE;
        card_config.apply();

        if (standard_metadata.parser_error != error.NoError) {
            meta.drop_reason = DROP_MALFORMED;
        } else {
            if (host_in.apply().hit) {
                if (hdr.tw.isValid()) {
                    claim_probe();
                } else if (hdr.ipv4.isValid()) {
                    /* Unsigned wrap-around sends 10.0.0.0 and everything
                     * below it far out of range, so one compare suffices. */
                    bit<32> pe_offset = hdr.ipv4.dst_addr - TW_HOST_BASE;
                    if (pe_offset < 32w0x10000) {
                        encapsulate((bit<16>) pe_offset);
                    } else {
                        meta.drop_reason = DROP_BAD_ADDRESS;
                    }
                }
            }

            if (meta.drop_reason == DROP_NONE) {
                if (!hdr.tw.isValid()) {
                    meta.drop_reason = DROP_UNKNOWN_TYPE;
                } else if (hdr.tw.hop_count >= meta.hop_limit) {
                    meta.drop_reason = DROP_HOP_LIMIT;
                } else if (hdr.tw.trace_count >= TW_MAX_TRACE) {
                    /* egress could not append this card's entry */
                    meta.drop_reason = DROP_TRACE_FULL;
                } else {
                    hdr.tw.hop_count = hdr.tw.hop_count + 1;
                    if (route.apply().hit) {
                        vc_queue.apply();
                    }
                }
            }
        }

        if (meta.drop_reason != DROP_NONE) {
            drops.count((bit<32>) meta.drop_reason);
            mark_to_drop(standard_metadata);
        }
    }
}

/* ------------------------------------------------------------------- egress */

control MyEgress(inout headers_t hdr,
                 inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {

    counter(TW_PORTS * TW_VCS_PER_PORT, CounterType.packets_and_bytes) tx_port_vc;

    action to_host() {
        meta.to_host = 1;
    }

    /* Ports that face a host: encapsulated IPv4 leaves them restored. */
    table host_out {
        key = { standard_metadata.egress_port: exact; }
        actions = { to_host; NoAction; }
        default_action = NoAction();
    }

    /* Ethernet|twinnet|trace|IPv4 -> Ethernet|IPv4, the frame the host sent. */
    action decapsulate() {
        hdr.ethernet.ether_type = hdr.tw.next_type;
        hdr.tw.setInvalid();
        hdr.trace.pop_front(TW_MAX_TRACE);
    }

    /* Ingress has checked trace_count < TW_MAX_TRACE, so nothing valid is
     * pushed off the end of the stack. */
    action append_trace() {
        hdr.trace.push_front(1);
        hdr.trace[0].setValid();
        hdr.trace[0].card_id = meta.card_id;
        hdr.trace[0].in_port = (bit<16>) standard_metadata.ingress_port;
        hdr.trace[0].out_port = (bit<16>) standard_metadata.egress_port;
        hdr.trace[0].vc = hdr.tw.vc;
        hdr.trace[0].prio = (bit<4>) meta.prio;
        hdr.trace[0].qdepth = (bit<24>) standard_metadata.enq_qdepth;
        hdr.trace[0].timestamp = standard_metadata.egress_global_timestamp;
        hdr.tw.trace_count = hdr.tw.trace_count + 1;
    }

    apply {
        /* Only packets ingress forwarded reach egress: hdr.tw is valid. */
        tx_port_vc.count(((bit<32>) standard_metadata.egress_port) * TW_VCS_PER_PORT
                         + (bit<32>) hdr.tw.vc);
        meta.to_host = 0;
        host_out.apply();
        if (meta.to_host == 1 && hdr.tw.next_type == ETHERTYPE_IPV4) {
            decapsulate();
        } else {
            append_trace();
        }
    }
}

control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

/* ----------------------------------------------------------------- deparser */

control MyDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.tw);
        packet.emit(hdr.trace);
        packet.emit(hdr.ipv4);
    }
}

V1Switch(
    MyParser(),
    MyVerifyChecksum(),
    MyIngress(),
    MyEgress(),
    MyComputeChecksum(),
    MyDeparser()
) main;
