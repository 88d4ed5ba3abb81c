"""The route-table model: look-ups, per-card grouping, JSON form and the VC conventions it exposes."""

from __future__ import annotations

import json

import numpy as np

from controller.routing import compute_tables
from topologies.fattree import twin_fattree
from topologies.torus import ndt_torus


def test_entries_lookup_and_grouping_agree():
    tables = compute_tables(ndt_torus((3, 2, 3)), "ts-dor")
    entries = list(tables.entries())
    assert len(entries) == len(tables)
    keys = {(e.card_id, e.ingress_port, e.dst_pe, e.routing_class) for e in entries}
    assert len(keys) == len(entries)  # exact match: one action per key
    for e in entries[::7]:
        assert tables.lookup(e.card_id, e.ingress_port, e.dst_pe, e.routing_class) == (e.egress_port, e.vc)
    grouped = {card: group for card, group in tables.entries_by_card()}
    assert sum(len(group) for group in grouped.values()) == len(entries)
    assert grouped[5] == tables.entries_of_card(5)
    pe_port = tables.network.port_number(0, "pe")
    assert tables.lookup(0, pe_port, 0, 0) is None  # a PE never sends to itself: no entry
    assert tables.lookup(0, pe_port, 1, 1) is None  # PE 0's packets are class 0, never class 1
    assert tables.lookup(0, pe_port, 1, 0) is not None


def test_to_json_lists_every_entry_with_the_conventions():
    tables = compute_tables(twin_fattree(4, 2), "destro")
    data = json.loads(json.dumps(tables.to_json()))
    assert data["match"] == ["ingress_port", "dst_pe", "routing_class"]
    assert data["action"] == ["egress_port", "vc"]
    assert sum(len(rows) for rows in data["cards"].values()) == len(tables) == data["num_entries"]
    assert data["queue_rule"] == "vc" and data["num_classes"] == 1


def test_uses_and_their_vcs_as_the_contracts_name_them():
    dort = compute_tables(ndt_torus((4, 4, 4)), "dort")
    assert dort.vcs_by_use() == {
        "external": [0, 1],
        "deliver": [0],
        "inject": [1],
        "ring": [2, 3],
        "eject": [0],
    }
    tsdor = compute_tables(ndt_torus((4, 4, 4)), "ts-dor")
    assert tsdor.vcs_by_use() == {
        "external": [0, 1],
        "deliver": [0],
        "inject": [0, 1],
        "ring": [0, 1],
        "eject": [0, 1],
    }
    # inject/eject: card 0 -> 1 on lower (1), card 1 -> 0 on upper (0)
    for e in tsdor.entries():
        if e.use in ("inject", "eject"):
            assert e.vc == (1 if tsdor.network.side[e.card_id] == 0 else 0)
    even = compute_tables(ndt_torus((3, 3, 3, 3)), "dort")
    assert even.vcs_per_link()["internal"] == 2


def test_entries_are_stored_sorted_by_destination_class_card_port():
    for topology, algorithm in ((ndt_torus((3, 4, 2)), "ts-dor"), (twin_fattree(4, 3), "destro")):
        tables = compute_tables(topology, algorithm)
        assert np.all(np.diff(tables.keys) > 0)
