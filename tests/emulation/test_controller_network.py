"""The controller on real networks of embedded cards: install, read back, switch live, counters, faults.

One network per topology for the module (a twin 4-ary 2-tree, and a 3DT 2x4x2 with
CBest), built by emulation.network. Expected state comes from the routing tables'
own entries (and the topology's hosts), decoded here from P4Runtime reads with
the P4Info alone, not through the controller's translation. The fault tests run
last: the final one stops a card for good.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
from p4.v1 import p4runtime_pb2

from controller.compile import compile_card_program
from controller.install import TwinController, endpoints_from_state
from controller.p4runtime_conn import CardConnection
from controller.routing import algorithms_for, compute_tables, walk
from controller.translate import EntrySpec
from controller.twins import plan_cards
from emulation.network import TwinnetNetwork, build_network
from emulation.packets import probe
from p4src import card as names
from p4switch.p4runtime.info import P4InfoIndex
from topologies.build import build_topology

pytestmark = pytest.mark.root

TOPOLOGIES = {
    "twin-4-ary-2-tree": lambda: build_topology("fattree", k=4, n=2, twin=True),
    "3DT-2x4x2-cbest": lambda: build_topology("ndt", dims="2x4x2", config="cbest"),
}
PROGRAM = compile_card_program(names.CARD_PROGRAM, "embedded")


@pytest.fixture(scope="module", params=sorted(TOPOLOGIES))
def network(request, tmp_path_factory) -> TwinnetNetwork:
    topology = TOPOLOGIES[request.param]()
    built = build_network(
        topology,
        target="embedded",
        out_dir=tmp_path_factory.mktemp(request.param),
        lock_timeout=900,
        progress=None,
    )
    try:
        yield built
    finally:
        built.stop()


def controller_for(network: TwinnetNetwork, **options) -> TwinController:
    """The controller of the network, from its state alone (addresses, P4Info and device config files)."""
    return TwinController.from_state(network.state, **options)


# -- reading a card with the P4Info only -------------------------------------------------


def read_card(
    network: TwinnetNetwork, name: str
) -> dict[str, set[tuple[tuple[int, ...], str, tuple[int, ...]]]]:
    """Every entry of every table of card `name`, as (match values, action name, parameter values)."""
    index = P4InfoIndex(PROGRAM.p4info)
    endpoint = next(e for e in endpoints_from_state(network.state) if e.name == name)
    connection = CardConnection(endpoint, index, election_id=(0, 1)).open(require_primary=False)
    try:
        wildcard = p4runtime_pb2.Entity()
        wildcard.table_entry.SetInParent()
        found = connection.read([wildcard])
        default = p4runtime_pb2.Entity()
        default.table_entry.table_id = index.table_id(names.CARD_CONFIG)
        default.table_entry.is_default_action = True
        found += connection.read([default])
    finally:
        connection.close()
    tables = {table.preamble.id: table for table in PROGRAM.p4info.tables}
    actions = {action.preamble.id: action for action in PROGRAM.p4info.actions}
    result: dict[str, set] = {}
    for entity in found:
        entry = entity.table_entry
        table = tables[entry.table_id]
        values = {m.field_id: int.from_bytes(m.exact.value, "big") for m in entry.match}
        match = tuple(values[f.id] for f in table.match_fields) if not entry.is_default_action else ()
        action = actions[entry.action.action.action_id]
        params = {p.param_id: int.from_bytes(p.value, "big") for p in entry.action.action.params}
        result.setdefault(table.preamble.name, set()).add(
            (match, action.preamble.name, tuple(params[p.id] for p in action.params))
        )
    return result


def expected_card(network: TwinnetNetwork, tables, name: str) -> dict[str, set]:
    """What card `name` must hold, from the routing tables' entries and the topology's hosts."""
    topology = network.topology
    card_id = topology.cards[name].card_id
    expected: dict[str, set] = {
        names.ROUTE: set(),
        names.VC_QUEUE: set(),
        names.HOST_IN: set(),
        names.HOST_OUT: set(),
    }
    for entry in tables.entries():
        if entry.card_id == card_id:
            expected[names.ROUTE].add(
                (
                    (entry.ingress_port, entry.dst_pe, entry.routing_class),
                    names.SET_ROUTE,
                    (entry.egress_port, entry.vc),
                )
            )
            expected[names.VC_QUEUE].add(
                (
                    (entry.routing_class, entry.vc),
                    names.SET_QUEUE,
                    (tables.queue_of(entry.routing_class, entry.vc),),
                )
            )
    for host in topology.hosts:
        if host.card == name:
            expected[names.HOST_IN].add(
                ((host.port,), names.FROM_HOST, (host.pe, tables.class_of_source(host.pe)))
            )
            expected[names.HOST_OUT].add(((host.port,), names.TO_HOST, ()))
    return {table: entries for table, entries in expected.items() if entries}


def check_cards_hold(network: TwinnetNetwork, tables) -> None:
    cards = sorted(network.topology.cards)
    with ThreadPoolExecutor(8) as pool:
        readings = dict(zip(cards, pool.map(lambda name: read_card(network, name), cards), strict=True))
    for name, held in readings.items():
        config = held.pop(names.CARD_CONFIG)
        ((_, action, (card_id, hop_limit)),) = config
        assert action == names.SET_CARD and card_id == network.topology.cards[name].card_id
        assert 1 < hop_limit <= names.MAX_TRACE
        assert held == expected_card(network, tables, name), f"card {name}"


# -- install, read back, switch live --------------------------------------------------------


def test_install_each_algorithm_and_read_everything_back(network: TwinnetNetwork) -> None:
    events = []
    with controller_for(network, progress=events.append) as controller:
        for algorithm in algorithms_for(network.topology.family):
            events.clear()
            tables = compute_tables(network.topology, algorithm)
            report = controller.install(network.topology, tables)
            assert report.ok, report.errors()
            assert max(e.done for e in events) == max(e.total for e in events) >= len(tables)
            assert {event.card for event in events if event.stage == "done"} == set(network.topology.cards)
            verified = controller.verify(network.topology, tables)
            assert verified.ok, verified.summary()
            check_cards_hold(network, tables)


def test_switching_algorithms_live_writes_only_the_difference(network: TwinnetNetwork) -> None:
    if network.topology.family != "ndt":
        pytest.skip("one routing algorithm for fat trees")
    topology = network.topology
    dort, tsdor = compute_tables(topology, "dort"), compute_tables(topology, "ts-dor")
    with controller_for(network) as controller:
        assert controller.install(topology, dort).ok
        report = controller.reinstall(topology, tsdor)
        assert report.ok, report.errors()
        assert not any(result.pipeline_pushed for result in report.cards.values())
        old = {
            (e.card_id, e.ingress_port, e.dst_pe, e.routing_class): (e.egress_port, e.vc)
            for e in dort.entries()
        }
        new = {
            (e.card_id, e.ingress_port, e.dst_pe, e.routing_class): (e.egress_port, e.vc)
            for e in tsdor.entries()
        }
        inserted = sum(1 for key in new if key not in old)
        deleted = sum(1 for key in old if key not in new)
        changed = sum(1 for key in new if key in old and old[key] != new[key])
        # route entries dominate; host_in (PE1's class), vc_queue and card_config changes come on top
        assert report.written >= inserted + deleted + changed
        assert sum(result.deleted for result in report.cards.values()) >= deleted
        assert sum(result.unchanged for result in report.cards.values()) >= len(new) - inserted - changed
        verified = controller.verify(topology, tsdor)
        assert verified.ok, verified.summary()
        assert not controller.verify(topology, dort).ok
    check_cards_hold(network, tsdor)


# -- counters after traffic ------------------------------------------------------------------

SENDER = (
    "import socket, sys; s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW); s.bind((sys.argv[1], 0)); "
    "[s.send(bytes.fromhex(frame)) for frame in sys.argv[2:]]"
)


def send_frames(network: TwinnetNetwork, pe: int, frames: list[bytes]) -> None:
    host = network.state.host(network.topology.hosts[pe].name)
    subprocess.run(
        [
            "nsenter",
            "-t",
            str(host.pid),
            "-n",
            sys.executable,
            "-c",
            SENDER,
            host.interface,
            *[frame.hex() for frame in frames],
        ],
        check=True,
        timeout=30,
    )


def test_counters_count_probes_on_their_model_path(network: TwinnetNetwork) -> None:
    topology = network.topology
    algorithm = algorithms_for(topology.family)[-1]
    tables = compute_tables(topology, algorithm)
    src, repeats = 1, 3
    destinations = [pe for pe in (0, 5, len(topology.hosts) - 1) if pe != src]
    with controller_for(network) as controller:
        assert controller.install(topology, tables).ok
        before = controller.read_counters(topology)
        for dst in destinations:
            send_frames(network, src, [bytes(probe(src, dst, probe_id=i)) for i in range(repeats)])
        expected_tx: Counter = Counter()
        for dst in destinations:
            for hop in walk(tables, src, dst).hops:
                expected_tx[topology.card_by_id(hop.card_id).name, hop.egress_port, hop.vc] += repeats
        deadline_ok = False
        for _ in range(50):  # the cards forward asynchronously: wait until the last hop has counted
            after = controller.read_counters(topology)
            sent = Counter()
            for name, counters in after.items():
                for (port, vc), (packets, _) in counters.tx.items():
                    delta = packets - before[name].tx[port, vc][0]
                    if delta:
                        sent[name, port, vc] = delta
            if sent == expected_tx:
                deadline_ok = True
                break
            time.sleep(0.1)
        assert deadline_ok, f"sent {dict(sent)} expected {dict(expected_tx)}"
        first = topology.hosts[src]
        received = after[first.card].rx[first.port][0] - before[first.card].rx[first.port][0]
        assert received == repeats * len(destinations)
        assert all(counters.drops == before[name].drops for name, counters in after.items())


# -- faults -----------------------------------------------------------------------------------


def test_an_entry_the_card_rejects_is_named_and_the_rest_is_installed(network: TwinnetNetwork) -> None:
    topology = network.topology
    tables = compute_tables(topology, algorithms_for(topology.family)[0])
    plans = plan_cards(topology, tables)
    victim = sorted(plans)[3]
    bad = EntrySpec(names.ROUTE, (1, 0, 7), names.SET_QUEUE, (1,))  # route offers no set_queue
    plans[victim].add(bad)
    with controller_for(network) as controller:
        report = controller.apply(plans)
        assert report.failed_cards() == [victim]
        (failure,) = report.cards[victim].failures
        assert failure.card == victim and failure.kind == "insert"
        assert failure.entry == bad.describe() and failure.code == "INVALID_ARGUMENT"
        assert "set_queue" in failure.message and "not an action of this table" in failure.message
        assert f"card {victim}" in report.errors()[0]
        verified = controller.verify(topology, tables)
        assert verified.ok, verified.summary()


def test_a_p4info_that_does_not_match_the_program_changes_no_card(network: TwinnetNetwork) -> None:
    topology = network.topology
    tables = compute_tables(topology, algorithms_for(topology.family)[0])
    with controller_for(network) as controller:
        assert controller.install(topology, tables).ok
    wrong = type(PROGRAM.p4info)()
    wrong.CopyFrom(PROGRAM.p4info)
    route = next(table for table in wrong.tables if table.preamble.name == names.ROUTE)
    next(field for field in route.match_fields if field.name == names.DST_PE).bitwidth = 12
    cards = sorted(topology.cards)[:3]
    plans = {name: plan for name, plan in plan_cards(topology, tables).items() if name in cards}
    with TwinController(endpoints_from_state(network.state), (wrong, PROGRAM.device_config)) as controller:
        checked = controller.apply(plans)  # the cards run the real program: the controller refuses
        pushed = controller.apply(plans, pipeline="push")  # the target refuses the config
    for name in cards:
        assert checked.cards[name].error.startswith(f"card {name}: its program's P4Info does not match")
        assert pushed.cards[name].error.startswith(
            f"card {name}: refused the pipeline config: INVALID_ARGUMENT"
        )
        assert "P4Info" in pushed.cards[name].error
    with controller_for(network) as controller:
        verified = controller.verify(topology, tables)
        assert verified.ok, verified.summary()


def test_a_card_that_is_down_is_named_and_the_others_are_installed(network: TwinnetNetwork) -> None:
    topology = network.topology
    algorithms = algorithms_for(topology.family)
    tables = compute_tables(topology, algorithms[0])
    victim = sorted(topology.cards)[2]
    with controller_for(network, timeout=2.0) as controller:
        assert controller.install(topology, tables).ok
        network.kill_card(victim)
        again = compute_tables(topology, algorithms[-1])
        report = controller.install(topology, again)
        assert report.failed_cards() == [victim]
        assert f"card {victim}" in report.cards[victim].error
        shared = getattr(network.cards[victim], "group", None) is not None  # its process serves the others
        expected = "NOT_FOUND: device id" if shared else "no P4Runtime server answers"
        assert expected in report.cards[victim].error
        plans = {name: plan for name, plan in plan_cards(topology, again).items() if name != victim}
        assert controller.verify_plans(plans).ok
        unreadable = controller.verify(topology, again)
        assert list(unreadable.errors) == [victim]
        counters = controller.read_counters(topology)
        assert isinstance(counters[victim], str) and victim in counters[victim]
