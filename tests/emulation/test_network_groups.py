"""Cards sharing switch processes in a real network (3DT 2x4x2, 32 cards on 3 processes).

The cards of a process forward to each other and to the hosts along the model's paths;
each process is asked for the health of all its cards at once; a card's Mininet node has
no shell until a command needs one; a switch process that dies takes exactly its cards,
and the run reports them with their lost probes.
"""

from __future__ import annotations

import os
import signal
from collections import Counter

import pytest
from run_checks import check_all_pairs, run

from emulation.measure import LOST
from emulation.network import TwinnetNetwork, build_network
from topologies.build import build_topology

pytestmark = pytest.mark.root

PROCESSES = 3


@pytest.fixture(scope="module")
def topology():
    return build_topology("ndt", dims="2x4x2")


@pytest.fixture(scope="module")
def network(topology, tmp_path_factory) -> TwinnetNetwork:
    built = build_network(
        topology,
        target="embedded",
        out_dir=tmp_path_factory.mktemp("groups"),
        lock_timeout=900,
        switch_processes=PROCESSES,
    )
    try:
        yield built
    finally:
        built.stop()


def test_the_cards_are_spread_in_blocks_over_the_processes(network, topology) -> None:
    pids = Counter(card.switch_pid for card in network.cards.values())
    sizes = sorted(pids.values())
    assert len(pids) == PROCESSES and sum(sizes) == len(topology.cards) and sizes[-1] - sizes[0] <= 1
    for group in network.groups:
        ids = [card.card_id for card in group.cards]
        assert ids == list(range(ids[0], ids[0] + len(ids)))  # consecutive card ids
        assert {card.switch_pid for card in group.cards} == {group.process.pid}
        assert {card.grpc_address for card in group.cards} == {group.grpc_address}


def test_cards_of_one_process_forward_to_each_other_and_to_hosts(network, topology, tmp_path) -> None:
    outcome = run(network, topology, tmp_path, routing="dort", traffic="all-to-all")
    check_all_pairs(outcome)
    shared = 0
    for result in outcome.results:  # consecutive hops on cards of one process: frames between them
        hops = [network.cards[outcome.plan.tables.network.card_names[h.card_id]] for h in result.arrival.hops]
        shared += sum(a.group is b.group for a, b in zip(hops, hops[1:], strict=False))
    assert shared > 0


def test_one_request_tells_the_health_of_every_card_of_a_process(network) -> None:
    for group in network.groups:
        answer = group.health(2.0)
        assert answer["ok"] and answer["alive"] and answer["beat_age_s"] < 1.0
        assert sorted(map(int, answer["cards"])) == sorted(card.device_id for card in group.cards)
        assert all(entry["alive"] for entry in answer["cards"].values())


def test_a_card_node_starts_its_shell_only_for_a_command(network) -> None:
    card = network.cards[sorted(network.cards)[0]]
    assert card.shell is None or card.shell.poll() is None
    assert card.cmd("echo card-shell").strip() == "card-shell"


def test_a_process_that_dies_takes_exactly_its_cards(network, topology, tmp_path, monkeypatch) -> None:
    group = network.groups[1]
    victim = group.cards[0].name

    def kill_process(name: str) -> None:
        os.kill(network.cards[name].switch_pid, signal.SIGKILL)

    monkeypatch.setattr(network, "kill_card", kill_process)
    outcome = run(
        network, topology, tmp_path, routing="dort", traffic="all-to-all", rate=20.0, kill=(victim, 0.3)
    )
    assert sorted(entry["card"] for entry in outcome.dead_cards) == sorted(group.names)
    assert all(
        entry["process_died"] and entry["switch_process"] == group.name for entry in outcome.dead_cards
    )
    assert sorted(network.dead_cards()) == sorted(group.names)
    lost = [r for r in outcome.results if r.verdict == LOST]
    assert lost and all(r.cause in {f"card {name} died" for name in group.names} for r in lost)
    assert outcome.accounting.to_json()["all_accounted"]
    others = [group for group in network.groups if group.index != 1]
    assert all(card.is_alive() for other in others for card in other.cards)
