"""The card program's interface: header layout, table/action/counter names, drop reasons.

The one definition that the controller (which entries to install), the emulation (how
to build and read packets and counters) and the tests share; ``p4src/card.p4`` is the
other side of it (p4src/README.md documents both byte by byte). Names are P4Info names:
a controller looks their ids and widths up in the P4Info in use. No routing here.
"""

from __future__ import annotations

from typing import Any

from p4src import CARD_PROGRAM

__all__ = ["CARD_PROGRAM"]  # and every constant below

# ---- packet layout -----------------------------------------------------------------
#: EtherType of the twinnet header (IEEE 802 Local Experimental EtherType 1).
ETHERTYPE_TWINNET = 0x88B5
ETHERTYPE_IPV4 = 0x0800
#: ``next_type`` of a probe: what follows the trace is the sender's opaque payload.
NEXT_PROBE = 0x0000
TWINNET_HEADER_LEN = 20
TRACE_ENTRY_LEN = 16
#: Where a frame between cards carries the class it was queued with on its last link (the newest
#: trace entry's ``prio``, low nibble of the entry's byte 6; no entry yet: class 0), for the
#: embedded switch's lossless accounting (``twinnet-switch --pfc-class-field``).
PFC_CLASS_FIELD = f"{ETHERTYPE_TWINNET:#x},{14 + 6},{14 + TWINNET_HEADER_LEN + 6},0x0f"
#: Trace entries a packet can carry (``TW_MAX_TRACE`` in card.p4): the highest useful hop limit.
MAX_TRACE = 40
#: Default hop limit of a card (``TW_DEFAULT_HOP_LIMIT`` in card.p4).
DEFAULT_HOP_LIMIT = MAX_TRACE
#: Cards a packet may visit beyond the longest model path before it is dropped as hop_limit.
HOP_LIMIT_MARGIN = 2
#: Card id in the trace of a card whose ``MyIngress.card_config`` was not set.
UNSET_CARD_ID = 0xFFFF
#: The card program's 48-bit time fields wrap at this value (microseconds).
TIME_MODULUS = 1 << 48
#: The routing class and VC fields are 4 bits wide.
MAX_CLASS = 15
MAX_VC = 15
#: Priority queues per port (bmv2 --priority-queues 8): priorities 0..7.
PRIORITY_QUEUES = 8

# ---- tables and actions --------------------------------------------------------------
CARD_CONFIG = "MyIngress.card_config"
SET_CARD = "MyIngress.set_card"
HOST_IN = "MyIngress.host_in"
FROM_HOST = "MyIngress.from_host"
ROUTE = "MyIngress.route"
SET_ROUTE = "MyIngress.set_route"
DROP_NO_ROUTE = "MyIngress.drop_no_route"
VC_QUEUE = "MyIngress.vc_queue"
SET_QUEUE = "MyIngress.set_queue"
DROP_NO_QUEUE = "MyIngress.drop_no_queue"
SELECTION_CONFIG = "MyIngress.selection_config"
SET_SELECTION = "MyIngress.set_selection"
DETERMINISTIC = "MyIngress.deterministic"
ADAPTIVE_ROUTE = "MyIngress.adaptive_route"
SET_CANDIDATES = "MyIngress.set_candidates"
HOST_OUT = "MyEgress.host_out"
TO_HOST = "MyEgress.to_host"
NO_ACTION = "NoAction"

INGRESS_PORT = "standard_metadata.ingress_port"
EGRESS_PORT = "standard_metadata.egress_port"
DST_PE = "hdr.tw.dst_pe"
RCLASS = "hdr.tw.rclass"
VC = "hdr.tw.vc"
ESCAPED = "hdr.tw.escaped"

# ---- adaptive routing (p4src/README.md, "Adaptive routing") ---------------------------
#: Candidate slots of an adaptive route entry (``TW_SLOTS``); port 0 marks an empty slot.
ADAPTIVE_SLOTS = 8
#: Priority level that leaves a port class out of the selection (``TW_LEVEL_NEVER``).
LEVEL_NEVER = 3
#: Per (port, VC) occupancy in packets, cell ``port * VCS_PER_PORT + vc`` (a top-level register).
REGISTER_OCCUPANCY = "occupancy"
#: Round-robin pointer over the slots, per ingress port.
REGISTER_RR_POINTER = "MyIngress.rr_pointer"

#: Every table as P4Info names it: match fields (name, bit width; all exact) in P4Info
#: order, actions with their parameters (name, bit width), and the default action.
CARD_TABLES: dict[str, dict[str, Any]] = {
    CARD_CONFIG: {
        "keys": [],
        "actions": {SET_CARD: [("card_id", 16), ("hop_limit", 8)]},
        "default": (SET_CARD, {"card_id": UNSET_CARD_ID, "hop_limit": DEFAULT_HOP_LIMIT}),
    },
    HOST_IN: {
        "keys": [(INGRESS_PORT, 9)],
        "actions": {FROM_HOST: [("pe", 16), ("rclass", 4)], NO_ACTION: []},
        "default": (NO_ACTION, {}),
    },
    ROUTE: {
        "keys": [(INGRESS_PORT, 9), (DST_PE, 16), (RCLASS, 4)],
        "actions": {SET_ROUTE: [("port", 9), ("vc", 4)], DROP_NO_ROUTE: []},
        "default": (DROP_NO_ROUTE, {}),
    },
    VC_QUEUE: {
        "keys": [(RCLASS, 4), (VC, 4)],
        "actions": {SET_QUEUE: [("prio", 3)], DROP_NO_QUEUE: []},
        "default": (DROP_NO_QUEUE, {}),
    },
    SELECTION_CONFIG: {
        "keys": [],
        "actions": {
            SET_SELECTION: [
                ("threshold", 16),
                ("capacity", 16),
                ("level_external", 2),
                ("level_split", 2),
                ("level_internal", 2),
            ],
            DETERMINISTIC: [],
        },
        "default": (DETERMINISTIC, {}),
    },
    ADAPTIVE_ROUTE: {
        "keys": [(INGRESS_PORT, 9), (DST_PE, 16), (RCLASS, 4), (ESCAPED, 1)],
        "actions": {
            SET_CANDIDATES: [("escape_port", 9), ("escape_vc", 4)]
            + [
                (f"{name}{slot}", width)
                for slot in range(8)
                for name, width in (("port", 9), ("vc", 4), ("class", 2))
            ],
            DROP_NO_ROUTE: [],
        },
        "default": (DROP_NO_ROUTE, {}),
    },
    HOST_OUT: {
        "keys": [(EGRESS_PORT, 9)],
        "actions": {TO_HOST: [], NO_ACTION: []},
        "default": (NO_ACTION, {}),
    },
}
#: The actions the controller installs, per table (the first action of each table above).
_CONTROLLER_ACTIONS = {CARD_CONFIG: SET_CARD, HOST_IN: FROM_HOST, ROUTE: SET_ROUTE,
                       VC_QUEUE: SET_QUEUE, HOST_OUT: TO_HOST, SELECTION_CONFIG: SET_SELECTION,
                       ADAPTIVE_ROUTE: SET_CANDIDATES}
#: table -> (match field names in P4Info order, actions the controller uses)
TABLES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    table: (tuple(name for name, _ in spec["keys"]), (_CONTROLLER_ACTIONS[table],))
    for table, spec in CARD_TABLES.items()
}
#: action the controller uses -> its parameter names in P4Info order
ACTIONS: dict[str, tuple[str, ...]] = {
    action: tuple(name for name, _ in CARD_TABLES[table]["actions"][action])
    for table, action in _CONTROLLER_ACTIONS.items()
}
#: tables holding entries the controller installs (card_config and selection_config have only their
#: default actions)
ENTRY_TABLES: tuple[str, ...] = (HOST_IN, ROUTE, VC_QUEUE, HOST_OUT, ADAPTIVE_ROUTE)

# ---- counters and drop reasons --------------------------------------------------------
#: ``MyIngress.drops`` cell of each drop reason (cell 0 is never counted).
DROP_REASONS: dict[str, int] = {
    "malformed": 1,  # parser error: truncated frame, more trace entries than the stack holds
    "unknown_type": 2,  # not twinnet (from a card port), neither twinnet nor IPv4 (from a host port)
    "bad_address": 3,  # IPv4 from a host whose destination is no PE's address
    "no_route": 4,  # MyIngress.route missed
    "hop_limit": 5,  # hop_count reached the card's hop limit
    "trace_full": 6,  # TW_MAX_TRACE entries already: this card could not append its own
    "no_queue": 7,  # MyIngress.vc_queue has no entry for (routing class, VC)
}
DROP_REASON_CELLS = 8
COUNTER_RX_PORT = "MyIngress.rx_port"  # index: ingress port
COUNTER_DROPS = "MyIngress.drops"  # index: DROP_REASONS[reason]
COUNTER_TX_PORT_VC = "MyEgress.tx_port_vc"  # index: port_vc_index(egress port, vc)
PORTS = 512
VCS_PER_PORT = 16
#: Indexed counters (P4Info name -> number of cells), in P4Info order; all count packets and bytes.
CARD_COUNTERS: dict[str, int] = {
    COUNTER_RX_PORT: PORTS,
    COUNTER_DROPS: DROP_REASON_CELLS,
    COUNTER_TX_PORT_VC: PORTS * VCS_PER_PORT,
}
COUNTERS: tuple[str, ...] = tuple(CARD_COUNTERS)


def port_vc_index(port: int, vc: int) -> int:
    """Cell of ``MyEgress.tx_port_vc`` counting packets sent on ``port`` with VC ``vc``."""
    if not (0 <= port < PORTS and 0 <= vc < VCS_PER_PORT):
        raise ValueError(f"port {port} / vc {vc} out of range (ports < {PORTS}, vcs < {VCS_PER_PORT})")
    return port * VCS_PER_PORT + vc
