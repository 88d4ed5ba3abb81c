"""The controller against real embedded switch processes on loopback, without a Mininet network (no root).

Four cards of a twin 4-ary 2-tree (twin switches t0/t1 and their cards), each a
``twinnet-switch`` process started with the card program and no data-plane
interfaces: the control plane is what is checked. Covers every kind of
difference verify must report, repair by re-install, arbitration, and the faults
(a rejected entry, a P4Info that does not match, a card that is down).
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from controller.compile import compile_card_program
from controller.install import TwinController
from controller.p4runtime_conn import CONTROLLER_ELECTION_ID, CardConnection, CardEndpoint
from controller.routing import compute_tables
from controller.translate import DELETE, INSERT, MODIFY, EntrySpec, table_entry, update
from controller.twins import CardPlan, plan_cards
from p4src import card as names
from p4switch.p4runtime.info import P4InfoIndex
from topologies.build import build_topology

REPO = Path(__file__).resolve().parents[2]
PROGRAM = compile_card_program(names.CARD_PROGRAM, "embedded")
CARDS = ("c0", "c1", "c2", "c3")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Switches:
    """Switch processes of the embedded target, one per card, on loopback; stopped at the end in any case."""

    def __init__(self, topology, cards, log_dir: Path) -> None:
        self.processes: dict[str, subprocess.Popen] = {}
        self.endpoints: list[CardEndpoint] = []
        for name in cards:
            card_id = topology.cards[name].card_id
            port = free_port()
            command = [
                sys.executable,
                "-m",
                "p4switch.daemon.cli",
                "--device-id",
                str(card_id),
                "--no-side-channel",
                str(names.CARD_PROGRAM),
                "--",
                "--grpc-server-addr",
                f"127.0.0.1:{port}",
                "--priority-queues",
                "8",
            ]
            with open(log_dir / f"{name}.log", "w") as log:
                self.processes[name] = subprocess.Popen(
                    command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT
                )
            self.endpoints.append(CardEndpoint(name, card_id, card_id, f"127.0.0.1:{port}"))

    def wait_ready(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        for endpoint in self.endpoints:
            host, port = endpoint.grpc_address.rsplit(":", 1)
            while True:
                try:
                    socket.create_connection((host, int(port)), timeout=0.5).close()
                    break
                except OSError:
                    assert self.processes[endpoint.name].poll() is None, f"{endpoint.name} ended"
                    assert time.monotonic() < deadline, f"{endpoint.name} did not start"
                    time.sleep(0.1)

    def stop(self, name: str) -> None:
        process = self.processes[name]
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def stop_all(self) -> None:
        for name in self.processes:
            self.stop(name)


@pytest.fixture(scope="module")
def topology():
    return build_topology("fattree", k=4, n=2, twin=True)


@pytest.fixture(scope="module")
def switches(topology, tmp_path_factory) -> Iterator[Switches]:
    started = Switches(topology, CARDS, tmp_path_factory.mktemp("controller-switches"))
    try:
        started.wait_ready()
        yield started
    finally:
        started.stop_all()


@pytest.fixture(scope="module")
def plans(topology) -> dict[str, CardPlan]:
    every = plan_cards(topology, compute_tables(topology, "destro"))
    return {name: every[name] for name in CARDS}


def controller(switches: Switches, **options) -> TwinController:
    return TwinController(switches.endpoints, PROGRAM, **options)


def endpoint(switches: Switches, name: str) -> CardEndpoint:
    return next(e for e in switches.endpoints if e.name == name)


def test_install_then_everything_reads_back_as_planned(switches: Switches, plans) -> None:
    with controller(switches, batch_size=7) as installer:  # small batches: many WriteRequests per card
        report = installer.apply(plans, pipeline="push")
        assert report.ok, report.errors()
        assert all(result.pipeline_pushed for result in report.cards.values())
        assert report.written == sum(len(plan.entries) + 1 for plan in plans.values())
        verified = installer.verify_plans(plans)
        assert verified.ok and verified.differences == []
        again = installer.apply(plans)  # nothing to change: nothing written, nothing pushed
        assert again.ok and again.written == 0
        assert not any(result.pipeline_pushed for result in again.cards.values())


def test_verify_reports_every_difference_and_a_reinstall_repairs_them(switches: Switches, plans) -> None:
    name = "c1"
    plan = plans[name]
    routes = sorted(spec for spec in plan.entries.values() if spec.table == names.ROUTE)
    removed, changed = routes[0], routes[1]
    altered = EntrySpec(
        changed.table, changed.match, changed.action, (changed.params[0], changed.params[1] + 1)
    )
    extra = EntrySpec(names.ROUTE, (1, 0, 9), names.SET_ROUTE, (2, 0))
    with controller(switches) as installer:
        assert installer.apply(plans).ok
        installer.close()  # hand-made changes need the primary's seat
        index = P4InfoIndex(PROGRAM.p4info)
        hand = CardConnection(endpoint(switches, name), index).open()
        try:
            failures = hand.write(
                [
                    update(DELETE, table_entry(index, removed)),
                    update(MODIFY, table_entry(index, altered)),
                    update(INSERT, table_entry(index, extra)),
                ],
                describe=str,
            )
            assert failures == []
        finally:
            hand.close()
        report = installer.verify_plans(plans)
        found = {(d.card, d.kind, d.expected, d.actual) for d in report.differences}
        assert found == {
            (name, "missing", removed, None),
            (name, "different", changed, altered),
            (name, "extra", None, extra),
        }
        assert "1 different, 1 extra, 1 missing" in report.summary()
        repaired = installer.apply(plans)
        assert repaired.cards[name].inserted == 1 and repaired.cards[name].modified == 1
        assert repaired.cards[name].deleted == 1 and repaired.written == 3
        assert installer.verify_plans(plans).ok


def test_a_card_held_by_another_primary_is_refused_by_name(switches: Switches, plans) -> None:
    other = CardConnection(
        endpoint(switches, "c2"),
        P4InfoIndex(PROGRAM.p4info),
        election_id=(CONTROLLER_ELECTION_ID[0], CONTROLLER_ELECTION_ID[1] + 5),
    ).open()
    try:
        with controller(switches) as installer:
            report = installer.apply(plans)
            assert report.failed_cards() == ["c2"]
            assert report.cards["c2"].error.startswith("card c2: not the primary controller")
            assert installer.verify_plans(plans).ok  # reading needs no primacy
    finally:
        other.close()


def test_a_reader_opens_no_session_and_takes_no_primary_seat(switches: Switches, plans) -> None:
    higher = (CONTROLLER_ELECTION_ID[0], CONTROLLER_ELECTION_ID[1] + 5)  # would win an arbitration
    reader = CardConnection(endpoint(switches, "c2"), P4InfoIndex(PROGRAM.p4info), election_id=higher)
    reader.open(require_primary=False)
    try:
        assert reader.session is None and not reader.is_primary
        with controller(switches) as installer:
            assert installer.apply(plans).ok  # c2 too: the reader holds no seat
        wildcard = p4runtime_pb2.Entity()
        wildcard.table_entry.SetInParent()
        assert len(reader.read([wildcard])) == len(plans["c2"].entries)
    finally:
        reader.close()


def test_an_entry_the_card_rejects_is_named_with_the_targets_message(switches: Switches, plans) -> None:
    tampered = {
        name: CardPlan(plan.name, plan.card_id, plan.twin, plan.side, plan.config, dict(plan.entries))
        for name, plan in plans.items()
    }
    bad = EntrySpec(names.ROUTE, (1, 0, 7), names.SET_QUEUE, (1,))  # route offers no set_queue
    tampered["c3"].add(bad)
    with controller(switches, batch_size=4) as installer:
        report = installer.apply(tampered, pipeline="push")
        assert report.failed_cards() == ["c3"]
        (failure,) = report.cards["c3"].failures
        assert (failure.card, failure.kind, failure.entry, failure.code) == (
            "c3",
            "insert",
            bad.describe(),
            "INVALID_ARGUMENT",
        )
        assert "not an action of this table" in failure.message
        assert str(failure).startswith(
            "card c3: insert MyIngress.route(1, 0, 7) -> MyIngress.set_queue(1) rejected"
        )
        assert report.cards["c3"].inserted == len(plans["c3"].entries)  # every other entry went in
        assert installer.verify_plans(plans).ok


def test_a_p4info_that_does_not_match_the_program_changes_no_card(switches: Switches, plans) -> None:
    with controller(switches) as installer:
        assert installer.apply(plans).ok
    wrong = p4info_pb2.P4Info()
    wrong.CopyFrom(PROGRAM.p4info)
    route = next(table for table in wrong.tables if table.preamble.name == names.ROUTE)
    next(field for field in route.match_fields if field.name == names.DST_PE).bitwidth = 12
    with TwinController(switches.endpoints, (wrong, PROGRAM.device_config)) as mistaken:
        checked = mistaken.apply(plans)
        pushed = mistaken.apply(plans, pipeline="push")
    for name in CARDS:
        assert checked.cards[name].error.startswith(f"card {name}: its program's P4Info does not match")
        assert "MyIngress.route" in checked.cards[name].error
        assert pushed.cards[name].error.startswith(
            f"card {name}: refused the pipeline config: INVALID_ARGUMENT"
        )
    with controller(switches) as installer:
        assert installer.verify_plans(plans).ok


def test_a_card_that_is_down_is_named_and_the_others_are_installed(
    switches: Switches, plans, topology
) -> None:
    with controller(switches, timeout=2.0) as installer:
        assert installer.apply(plans).ok
        switches.stop("c0")
        report = installer.apply(plans, pipeline="push")
        assert report.failed_cards() == ["c0"]
        assert report.cards["c0"].error.startswith("card c0: no P4Runtime server answers at 127.0.0.1:")
        assert all(report.cards[name].written == len(plans[name].entries) + 1 for name in CARDS[1:])
        verified = installer.verify_plans(plans)
        assert list(verified.errors) == ["c0"] and verified.differences == []
        counters = installer.read_counters(topology, cards=CARDS)
        assert isinstance(counters["c0"], str) and counters["c0"].startswith("card c0:")
        assert all(counters[name].sent_packets() == 0 for name in CARDS[1:])
