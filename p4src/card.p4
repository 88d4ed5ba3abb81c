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
 * so this bounds the path length in cards (see README: 40 covers the longest
 * paths of the papers' 1,024-PE networks, 33 cards for DOR on a 32x32 2D torus).  Override
 * with -DTW_MAX_TRACE=N; emulation/packets.py must agree. */
#ifndef TW_MAX_TRACE
#define TW_MAX_TRACE 40
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

/* Adaptive routing: candidate slots per route entry, and the level that
 * leaves a port class out of the selection. */
#define TW_SLOTS        8
#define TW_LEVEL_NEVER  3
/* Rank of a slot that cannot be selected (empty, never, or full). */
#define TW_RANK_NONE    15

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
    bit<1>  escaped;      /* adaptive routing: the packet took an escape VC; kept to the end */
    bit<7>  tc;           /* user traffic class: carried, never used for routing */
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
    bit<1>  adaptive;     /* 1: the card chose an adaptive VC, 0: escape or deterministic */
    bit<23> qdepth;       /* enq_qdepth: packets queued on the egress port when it was enqueued */
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
    bit<1>  adaptive_on;      /* MyIngress.selection_config: this card routes adaptively */
    bit<1>  adaptive_hop;     /* the VC chosen here is an adaptive one (for the trace) */
    /* the selection function (MyIngress.selection_config): threshold (16;
     * occupancy below it is "low") ++ capacity (16; below it: available) ++
     * the priority level of each port class, external ++ split ++ internal
     * (2 bits each; TW_LEVEL_NEVER: never) */
    bit<38> selection;
    /* the adaptive_route entry: escape (port ++ VC) and the candidate slots,
     * slot i in bits [16i+15 : 16i] as port (9) ++ VC (4) ++ class (2) ++ 0;
     * packed so that a deterministic card initialises two fields, not 26 */
    bit<13>  escape;
    bit<128> slots;
}

/* Per (port, VC) occupancy of an adaptive card, in packets: ingress adds the
 * packets it sends to a (port, VC), egress takes them off when they leave and
 * caps the cell at the port's remaining backlog (deq_qdepth counts the
 * packets left in all queues of the port), so that packets the traffic
 * manager dropped do not stay counted.  Shared by ingress and egress. */
register<bit<16>>(TW_PORTS * TW_VCS_PER_PORT) occupancy;

/* A slot's selection key: its rank (2 * level + high occupancy; TW_RANK_NONE
 * when it cannot be taken) above its round-robin distance from the pointer,
 * so that the smallest key is the first slot of the best rank at or after
 * the pointer. */
bit<7> slot_key(in bit<9> port, in bit<2> cls, in bit<16> occ, in bit<3> distance,
                in bit<38> selection) {
    bit<2> level = selection[1:0];
    if (cls == 0) {
        level = selection[5:4];
    } else if (cls == 1) {
        level = selection[3:2];
    }
    bit<4> rank = TW_RANK_NONE;
    if (port != 0 && level != TW_LEVEL_NEVER && occ < selection[21:6]) {
        rank = ((bit<4>) level) * 2;
        if (occ >= selection[37:22]) {
            rank = rank + 1;
        }
    }
    return rank ++ distance;
}

/* Keep the slot of smallest key (keys of different slots differ); a slot
 * that cannot be taken is never kept, so best stays 0x7F without one. */
void keep_best(inout bit<7> best, inout bit<9> best_port, inout bit<4> best_vc,
               in bit<7> key, in bit<9> port, in bit<4> vc) {
    if (key < best && key[6:3] != TW_RANK_NONE) {
        best = key;
        best_port = port;
        best_vc = vc;
    }
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
        hdr.tw.escaped = 0;
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
        hdr.tw.escaped = 0;
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

    /* Adaptive routing (p4src/README.md, "Adaptive routing"): the selection
     * function of this card, a keyless table; its default leaves the card
     * deterministic (MyIngress.route). */
    action set_selection(bit<16> threshold, bit<16> capacity, bit<2> level_external,
                         bit<2> level_split, bit<2> level_internal) {
        meta.adaptive_on = 1;
        meta.selection = threshold ++ capacity ++ level_external ++ level_split ++ level_internal;
    }

    action deterministic() {
        meta.adaptive_on = 0;
    }

    table selection_config {
        actions = { set_selection; deterministic; }
        default_action = deterministic();
    }

    /* Round-robin pointer of each ingress port over the candidate slots. */
    register<bit<3>>(TW_PORTS) rr_pointer;

    /* The adaptive route table: per (ingress port, destination PE, routing
     * class, escaped) the escape (port, VC) and up to TW_SLOTS adaptive
     * candidates (port, VC, port class 0 external / 1 split dimension /
     * 2 internal link); port 0 is an empty slot. */
    action set_candidates(bit<9> escape_port, bit<4> escape_vc,
                          bit<9> port0, bit<4> vc0, bit<2> class0,
                          bit<9> port1, bit<4> vc1, bit<2> class1,
                          bit<9> port2, bit<4> vc2, bit<2> class2,
                          bit<9> port3, bit<4> vc3, bit<2> class3,
                          bit<9> port4, bit<4> vc4, bit<2> class4,
                          bit<9> port5, bit<4> vc5, bit<2> class5,
                          bit<9> port6, bit<4> vc6, bit<2> class6,
                          bit<9> port7, bit<4> vc7, bit<2> class7) {
        meta.escape = escape_port ++ escape_vc;
        meta.slots = port7 ++ vc7 ++ class7 ++ 1w0 ++ port6 ++ vc6 ++ class6 ++ 1w0
                     ++ port5 ++ vc5 ++ class5 ++ 1w0 ++ port4 ++ vc4 ++ class4 ++ 1w0
                     ++ port3 ++ vc3 ++ class3 ++ 1w0 ++ port2 ++ vc2 ++ class2 ++ 1w0
                     ++ port1 ++ vc1 ++ class1 ++ 1w0 ++ port0 ++ vc0 ++ class0 ++ 1w0;
    }

    table adaptive_route {
        key = {
            standard_metadata.ingress_port: exact;
            hdr.tw.dst_pe:                  exact;
            hdr.tw.rclass:                  exact;
            hdr.tw.escaped:                 exact;
        }
        actions = { set_candidates; drop_no_route; }
        default_action = drop_no_route();
        size = 131072;
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
                    /* A deterministic card hits route; an adaptive card has
                     * no route entries and turns to its selection function. */
                    bool routed = false;
                    if (route.apply().hit) {
                        routed = true;
                    } else {
                        selection_config.apply();
                    }
                    if (meta.adaptive_on == 1) {
                        if (adaptive_route.apply().hit) {
                            meta.drop_reason = DROP_NONE;   /* route's miss set no_route */
                            /* The selection function over the entry's slots: the
                             * best slot (the round-robin pointer moving past it),
                             * or the escape when no slot can be taken, the packet
                             * then being escaped to the end of its path. */
                            bit<3> rr;
                            rr_pointer.read(rr, (bit<32>) standard_metadata.ingress_port);
                            bit<7> best = 0x7F;
                            bit<9> best_port = meta.escape[12:4];
                            bit<4> best_vc = meta.escape[3:0];
                            bit<16> occ;
                            occupancy.read(occ, ((bit<32>) meta.slots[15:7]) * TW_VCS_PER_PORT + (bit<32>) meta.slots[6:3]);
                            keep_best(best, best_port, best_vc,
                                      slot_key(meta.slots[15:7], meta.slots[2:1], occ, 0 - rr, meta.selection),
                                      meta.slots[15:7], meta.slots[6:3]);
                            occupancy.read(occ, ((bit<32>) meta.slots[31:23]) * TW_VCS_PER_PORT + (bit<32>) meta.slots[22:19]);
                            keep_best(best, best_port, best_vc,
                                      slot_key(meta.slots[31:23], meta.slots[18:17], occ, 1 - rr, meta.selection),
                                      meta.slots[31:23], meta.slots[22:19]);
                            occupancy.read(occ, ((bit<32>) meta.slots[47:39]) * TW_VCS_PER_PORT + (bit<32>) meta.slots[38:35]);
                            keep_best(best, best_port, best_vc,
                                      slot_key(meta.slots[47:39], meta.slots[34:33], occ, 2 - rr, meta.selection),
                                      meta.slots[47:39], meta.slots[38:35]);
                            occupancy.read(occ, ((bit<32>) meta.slots[63:55]) * TW_VCS_PER_PORT + (bit<32>) meta.slots[54:51]);
                            keep_best(best, best_port, best_vc,
                                      slot_key(meta.slots[63:55], meta.slots[50:49], occ, 3 - rr, meta.selection),
                                      meta.slots[63:55], meta.slots[54:51]);
                            occupancy.read(occ, ((bit<32>) meta.slots[79:71]) * TW_VCS_PER_PORT + (bit<32>) meta.slots[70:67]);
                            keep_best(best, best_port, best_vc,
                                      slot_key(meta.slots[79:71], meta.slots[66:65], occ, 4 - rr, meta.selection),
                                      meta.slots[79:71], meta.slots[70:67]);
                            occupancy.read(occ, ((bit<32>) meta.slots[95:87]) * TW_VCS_PER_PORT + (bit<32>) meta.slots[86:83]);
                            keep_best(best, best_port, best_vc,
                                      slot_key(meta.slots[95:87], meta.slots[82:81], occ, 5 - rr, meta.selection),
                                      meta.slots[95:87], meta.slots[86:83]);
                            occupancy.read(occ, ((bit<32>) meta.slots[111:103]) * TW_VCS_PER_PORT + (bit<32>) meta.slots[102:99]);
                            keep_best(best, best_port, best_vc,
                                      slot_key(meta.slots[111:103], meta.slots[98:97], occ, 6 - rr, meta.selection),
                                      meta.slots[111:103], meta.slots[102:99]);
                            occupancy.read(occ, ((bit<32>) meta.slots[127:119]) * TW_VCS_PER_PORT + (bit<32>) meta.slots[118:115]);
                            keep_best(best, best_port, best_vc,
                                      slot_key(meta.slots[127:119], meta.slots[114:113], occ, 7 - rr, meta.selection),
                                      meta.slots[127:119], meta.slots[118:115]);
                            standard_metadata.egress_spec = best_port;
                            hdr.tw.vc = best_vc;
                            if (best[6:3] == TW_RANK_NONE) {
                                hdr.tw.escaped = 1;
                            } else {
                                meta.adaptive_hop = 1;
                                rr_pointer.write((bit<32>) standard_metadata.ingress_port, best[2:0] + rr + 1);
                            }
                            routed = true;
                        }
                    }
                    if (routed) {
                        if (vc_queue.apply().hit) {
                            if (meta.adaptive_on == 1) {
                                bit<32> cell = ((bit<32>) standard_metadata.egress_spec) * TW_VCS_PER_PORT
                                               + (bit<32>) hdr.tw.vc;
                                bit<16> queued;
                                occupancy.read(queued, cell);
                                if (queued != 0xFFFF) {
                                    occupancy.write(cell, queued + 1);
                                }
                            }
                        }
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
        hdr.trace[0].adaptive = meta.adaptive_hop;
        hdr.trace[0].qdepth = (bit<23>) standard_metadata.enq_qdepth;
        hdr.trace[0].timestamp = standard_metadata.egress_global_timestamp;
        hdr.tw.trace_count = hdr.tw.trace_count + 1;
    }

    apply {
        /* Only packets ingress forwarded reach egress: hdr.tw is valid. */
        tx_port_vc.count(((bit<32>) standard_metadata.egress_port) * TW_VCS_PER_PORT
                         + (bit<32>) hdr.tw.vc);
        if (meta.adaptive_on == 1) {
            /* this packet leaves its (port, VC): one less queued, and no more
             * than the port has left */
            bit<32> cell = ((bit<32>) standard_metadata.egress_port) * TW_VCS_PER_PORT
                           + (bit<32>) hdr.tw.vc;
            bit<16> queued;
            occupancy.read(queued, cell);
            if (queued != 0) {
                queued = queued - 1;
            }
            bit<16> left = (bit<16>) standard_metadata.deq_qdepth;
            if (queued > left) {
                queued = left;
            }
            occupancy.write(cell, queued);
        }
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
