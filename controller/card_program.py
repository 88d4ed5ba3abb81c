"""The card program's control-plane interface as the controller uses it (p4src/README.md: Tables, Counters).

Names are P4Info names; the controller looks their ids and widths up in the
P4Info in use (:class:`controller.p4info_index.P4InfoIndex`). This module holds
no routing: it only says which table, action and counter carries what.
``emulation/packets.py`` keeps the same names for the emulation's side (a unit
test checks that the two agree).
"""

from __future__ import annotations

from pathlib import Path

#: The card program every card runs.
CARD_PROGRAM = Path(__file__).resolve().parents[1] / "p4src" / "card.p4"

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
HOST_OUT = "MyEgress.host_out"
TO_HOST = "MyEgress.to_host"
NO_ACTION = "NoAction"

INGRESS_PORT = "standard_metadata.ingress_port"
EGRESS_PORT = "standard_metadata.egress_port"
DST_PE = "hdr.tw.dst_pe"
RCLASS = "hdr.tw.rclass"
VC = "hdr.tw.vc"

#: table -> (match fields in P4Info order, actions the controller uses)
TABLES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    CARD_CONFIG: ((), (SET_CARD,)),
    HOST_IN: ((INGRESS_PORT,), (FROM_HOST,)),
    ROUTE: ((INGRESS_PORT, DST_PE, RCLASS), (SET_ROUTE,)),
    VC_QUEUE: ((RCLASS, VC), (SET_QUEUE,)),
    HOST_OUT: ((EGRESS_PORT,), (TO_HOST,)),
}
#: action -> parameter names in P4Info order
ACTIONS: dict[str, tuple[str, ...]] = {
    SET_CARD: ("card_id", "hop_limit"),
    FROM_HOST: ("pe", "rclass"),
    SET_ROUTE: ("port", "vc"),
    SET_QUEUE: ("prio",),
    TO_HOST: (),
}
#: tables holding entries the controller installs (card_config has only its default action)
ENTRY_TABLES: tuple[str, ...] = (HOST_IN, ROUTE, VC_QUEUE, HOST_OUT)

COUNTER_RX_PORT = "MyIngress.rx_port"  # index: ingress port
COUNTER_DROPS = "MyIngress.drops"  # index: drop reason
COUNTER_TX_PORT_VC = "MyEgress.tx_port_vc"  # index: egress port * VCS_PER_PORT + vc
COUNTERS: tuple[str, ...] = (COUNTER_RX_PORT, COUNTER_DROPS, COUNTER_TX_PORT_VC)
VCS_PER_PORT = 16

#: ``MyIngress.drops`` cell of each drop reason (cell 0 is never counted)
DROP_REASONS: dict[str, int] = {
    "malformed": 1,
    "unknown_type": 2,
    "bad_address": 3,
    "no_route": 4,
    "hop_limit": 5,
    "trace_full": 6,
    "no_queue": 7,
}

#: Trace depth of the card program (TW_MAX_TRACE): the highest hop limit that makes sense.
MAX_TRACE = 24
#: Cards a packet may visit beyond the longest model path before it is dropped as hop_limit.
HOP_LIMIT_MARGIN = 2
#: Priority queues per port (bmv2 --priority-queues 8): priorities 0..7.
PRIORITY_QUEUES = 8
#: The routing class and VC fields are 4 bits wide.
MAX_CLASS = 15
MAX_VC = 15


def port_vc_index(port: int, vc: int) -> int:
    """Cell of ``MyEgress.tx_port_vc`` for packets sent on `port` with VC `vc`."""
    return port * VCS_PER_PORT + vc
