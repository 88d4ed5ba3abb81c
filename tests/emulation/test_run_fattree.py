"""``twinnet run`` on a twin 4-ary 2-tree with DESTRO, on the embedded target; one network for the module.

All pairs: every probe arrives along the model's path; crossings equal the
analysis's. ping and iperf between hosts across twin switches. Last, a card is
killed mid-run: the run names it and the probes it took, and the network is torn
down leaving nothing behind.
"""

from __future__ import annotations

import os
import re
import signal
import time

import pytest
from network_checks import leftovers
from run_checks import check_all_pairs, run

from emulation import run as run_module
from emulation.liveness import ANSWER_TIMEOUT_S, CHECK_INTERVAL_S, PROCESS_ANSWER_TIMEOUT_S
from emulation.measure import EQUAL, LOST
from emulation.network import TwinnetNetwork, build_network
from emulation.report import write_report
from emulation.state import read_current_state
from emulation.switches import wait_until_ready
from topologies.build import build_topology

pytestmark = pytest.mark.root


@pytest.fixture(scope="module")
def topology():
    return build_topology("fattree", k=4, n=2, twin=True)


@pytest.fixture(scope="module")
def network(topology, tmp_path_factory) -> TwinnetNetwork:
    built = build_network(
        topology, target="embedded", out_dir=tmp_path_factory.mktemp("fattree"), lock_timeout=900
    )
    try:
        yield built
    finally:
        built.stop()


def test_all_pairs_follow_destro_hop_by_hop(network, topology, tmp_path) -> None:
    outcome = run(network, topology, tmp_path, routing="destro", traffic="all-to-all")
    check_all_pairs(outcome)
    files = write_report(outcome)
    assert all(path.exists() for path in files.values())


def test_ping_and_iperf_cross_twin_switches(network, topology) -> None:
    # h0 and h15 hang off different leaf twins: their packets cross a root twin
    run(network, topology, None, routing="destro", traffic="bit-reversal", packets=1)  # tables in place
    sender, receiver = network.host(0), network.host(15)
    output = sender.cmd(f"ping -c 3 -i 0.2 -W 2 {receiver.IP()}")
    assert re.search(r"3 packets transmitted, 3 received", output), output
    server = receiver.popen(["iperf", "-s", "-p", "5001"])
    try:
        time.sleep(0.5)
        output = sender.cmd(f"iperf -c {receiver.IP()} -p 5001 -t 2 -y C")
    finally:
        server.kill()
        server.wait()
    fields = output.strip().splitlines()[-1].split(",")
    assert int(fields[-1]) > 0, output  # bits per second measured by iperf


#: the watch's worst case from a stop to a death: one interval and two unanswered requests (0.8 s for
#: a card alone, 2.3 s for a process that hosts many cards) ...
WATCH_WORST_CASE_S = CHECK_INTERVAL_S + 2 * ANSWER_TIMEOUT_S
SHARED_WATCH_WORST_CASE_S = CHECK_INTERVAL_S + 2 * PROCESS_ANSWER_TIMEOUT_S
#: ... and what a loaded machine adds to its threads' wake-ups (seen: 0.3 s at load average 35)
SCHEDULING_SLACK_S = 0.5


def test_a_card_whose_data_plane_stops_is_found_dead_by_the_watch(
    network, topology, tmp_path, monkeypatch
) -> None:
    """The switch process stays (SIGSTOP), its data plane does not run: the run's watch finds it.

    Cards sharing the process stop with it: all of them are found dead, as one process.
    """
    victim = "c8"  # card alpha of the first root twin: DESTRO routes probes across it
    card = network.cards[victim]
    sharing = [c.name for c in card.group.cards] if card.group is not None else [victim]
    worst_case_s = WATCH_WORST_CASE_S if card.group is None else SHARED_WATCH_WORST_CASE_S
    moments: dict[str, float] = {}

    class RecordingWatch(run_module.DataPlaneWatch):
        def __enter__(self):
            moments["started"] = self.started
            return super().__enter__()

    def stop_data_plane(name: str) -> None:
        os.kill(network.cards[name].switch_pid, signal.SIGSTOP)
        moments["stopped"] = time.monotonic()

    monkeypatch.setattr(run_module, "DataPlaneWatch", RecordingWatch)
    monkeypatch.setattr(network, "kill_card", stop_data_plane)  # --kill stops the process instead
    # 15 probes a host at 4/s: the run lasts 3.75 s, past the kill at 0.5 s and the watch's verdict
    outcome = run(
        network, topology, tmp_path, routing="destro", traffic="all-to-all", rate=4.0, kill=(victim, 0.5)
    )
    try:
        assert sorted(entry["card"] for entry in outcome.dead_cards) == sorted(sharing)
        stopped_after_s = moments["stopped"] - moments["started"]
        for entry in outcome.dead_cards:
            seen_after_s = entry["detected_after_s"] - stopped_after_s
            assert 0 < seen_after_s < worst_case_s + SCHEDULING_SLACK_S, (
                outcome.dead_cards,
                stopped_after_s,
            )
            assert entry.get("process_died", True)
        lost = [r for r in outcome.results if r.verdict == LOST]
        causes = {f"card {name} died" for name in sharing}
        assert lost and all(r.cause in causes for r in lost)
        accounting = outcome.accounting.to_json()
        assert accounting["all_accounted"] and sum(accounting["loss_causes"].values()) == len(lost)
        assert set(accounting["loss_causes"]) <= causes
    finally:  # bring the cards back for the tests that follow
        if not card.is_alive():
            card.start()
            wait_until_ready([card], 60)


def test_a_card_killed_mid_run_is_reported_with_its_lost_probes(network, topology, tmp_path) -> None:
    victim = "c8"  # card alpha of the first root twin
    state = read_current_state()
    outcome = run(
        network, topology, tmp_path, routing="destro", traffic="all-to-all", rate=10.0, kill=(victim, 0.5)
    )
    assert [entry["card"] for entry in outcome.dead_cards] == [victim]
    assert outcome.dead_cards[0]["detected_after_s"] is not None
    lost = [r for r in outcome.results if r.verdict == LOST]
    assert lost, "probes crossing the dead card after its death are lost"
    names = outcome.plan.tables.network.card_names
    for result in lost:
        assert result.cause == f"card {victim} died"
        assert victim in [names[hop.card_id] for hop in result.model.hops]
    assert all(r.verdict == EQUAL for r in outcome.results if r.verdict != LOST)
    accounting = outcome.accounting.to_json()
    assert accounting["all_accounted"] and accounting["loss_causes"] == {f"card {victim} died": len(lost)}
    assert outcome.accounting.dead_cards == [victim]
    # and the network still goes away cleanly
    interfaces = [name for card in state.cards for name in card.interfaces]
    pids = [card.pid for card in state.cards] + [host.pid for host in state.hosts]
    network.stop()
    assert leftovers(state.run_id, interfaces, pids) == []
