"""Twin composition, the compile step and `twinnet shell`'s settings, without switches."""

from __future__ import annotations

import gc
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from controller.compile import CompileError, compile_card_program, p4c_command
from controller.p4runtime_conn import CONTROLLER_ELECTION_ID
from controller.routing import compute_tables
from controller.twins import PlanError, distinct_rows, plan_cards
from emulation.shell_cli import find_card, shell_settings
from p4src import card as names
from topologies.build import build_topology


@pytest.fixture(scope="module")
def ndt():
    return build_topology("ndt", dims="2x4x2", config="cbest")


def test_every_route_entry_becomes_one_route_entry_of_its_card(ndt) -> None:
    tables = compute_tables(ndt, "ts-dor")
    plans = plan_cards(ndt, tables)
    assert set(plans) == set(ndt.cards)
    planned = {
        (plan.card_id, spec.match, spec.params)
        for plan in plans.values()
        for spec in plan.entries.values()
        if spec.table == names.ROUTE
    }
    model = {
        (e.card_id, (e.ingress_port, e.dst_pe, e.routing_class), (e.egress_port, e.vc))
        for e in tables.entries()
    }
    assert planned == model and len(model) == len(tables)


def test_host_ports_get_the_pe_and_the_class_the_first_card_assigns(ndt) -> None:
    tables = compute_tables(ndt, "ts-dor")
    plans = plan_cards(ndt, tables)
    for host in ndt.hosts:
        plan = plans[host.card]
        entry = plan.entries[names.HOST_IN, (host.port,)]
        assert entry.params == (host.pe, tables.class_of_source(host.pe)) and entry.action == names.FROM_HOST
        assert plan.entries[names.HOST_OUT, (host.port,)].action == names.TO_HOST
        assert plan.roles[host.port] == f"host PE {host.pe}"
    assert {tables.class_of_source(host.pe) for host in ndt.hosts} == {
        0,
        1,
    }  # TS-DOR: PE0 class 0, PE1 class 1


def test_queues_follow_the_tables_rule_for_the_pairs_each_card_uses(ndt) -> None:
    tables = compute_tables(ndt, "ts-dor")
    for plan in plan_cards(ndt, tables).values():
        used = {
            (spec.match[2], spec.params[1]) for spec in plan.entries.values() if spec.table == names.ROUTE
        }
        queues = {
            spec.match: spec.params[0] for spec in plan.entries.values() if spec.table == names.VC_QUEUE
        }
        assert set(queues) == used
        assert all(queue == 2 * cls + vc for (cls, vc), queue in queues.items())


def test_card_config_carries_the_card_id_and_a_hop_limit_above_the_longest_path(ndt) -> None:
    tables = compute_tables(ndt, "dort")
    plans = plan_cards(ndt, tables)
    limits = {plan.hop_limit for plan in plans.values()}
    assert len(limits) == 1 and 2 < limits.pop() <= names.MAX_TRACE
    assert all(plan.card_id_param == ndt.cards[name].card_id for name, plan in plans.items())
    assert plan_cards(ndt, tables, hop_limit=7)["c0"].hop_limit == 7


def test_both_cards_of_every_twin_get_a_plan_even_an_idle_root_card() -> None:
    fattree = build_topology("fattree", k=4, n=2, twin=True)
    plans = plan_cards(fattree, compute_tables(fattree, "destro"))
    assert set(plans) == set(fattree.cards)
    sides = {(plan.twin, plan.side) for plan in plans.values()}
    assert sides == {(card.twin, card.side) for card in fattree.cards.values()}


def test_tables_of_another_topology_or_with_too_many_queues_are_refused(ndt) -> None:
    other = build_topology("ndt", dims="3x3x3")
    with pytest.raises(PlanError, match="another topology"):
        plan_cards(ndt, compute_tables(other, "dort"))
    tables = compute_tables(ndt, "dort")
    tables.vc = tables.vc.copy()
    tables.vc[0] = 9
    with pytest.raises(PlanError, match="queue 9"):
        plan_cards(ndt, tables, hop_limit=10)


def test_a_route_to_a_port_without_a_link_is_refused_naming_the_card_and_port(ndt) -> None:
    tables = compute_tables(ndt, "dort")
    card_name = tables.network.card_names[int(tables.card_id[5])]
    beyond = max(ref.port for ref in ndt.card_ports(card_name)) + 1  # a port the card does not have
    egress = tables.egress_port.copy()
    egress[5] = beyond
    with pytest.raises(PlanError, match=f"card {card_name}: route entry to port {beyond}, which has no link"):
        plan_cards(ndt, tables.replaced(egress_port=egress), hop_limit=10)
    assert gc.isenabled()  # the collector, paused while the routes are added, is back on
    assert len(plan_cards(ndt, tables, hop_limit=10)[card_name].entries) > 0


def test_two_route_entries_with_one_match_are_refused_naming_the_card(ndt) -> None:
    tables = compute_tables(ndt, "dort")
    columns = ("card_id", "ingress_port", "dst_pe", "routing_class", "egress_port", "vc", "use")
    rows = np.r_[np.arange(len(tables)), 5]  # entry 5 twice
    twice = tables.replaced(**{name: getattr(tables, name)[rows] for name in columns})
    card_name = tables.network.card_names[int(tables.card_id[5])]
    match = (int(tables.ingress_port[5]), int(tables.dst_pe[5]), int(tables.routing_class[5]))
    with pytest.raises(PlanError, match=re.escape(f"card {card_name}: two entries for {names.ROUTE}{match}")):
        plan_cards(ndt, twice, hop_limit=10)


def test_each_cards_route_entries_keep_the_tables_order() -> None:
    fattree = build_topology("fattree", k=4, n=3, twin=True)
    tables = compute_tables(fattree, "destro")
    plans = plan_cards(fattree, tables)
    for card_id, name in enumerate(tables.network.card_names):
        rows = np.flatnonzero(tables.card_id == card_id)
        expected = list(
            zip(tables.ingress_port[rows], tables.dst_pe[rows], tables.routing_class[rows], strict=True)
        )
        planned = [spec.match for spec in plans[name].entries.values() if spec.table == names.ROUTE]
        assert planned == expected


def test_distinct_rows_are_the_sorted_set_of_the_rows() -> None:
    rng = np.random.default_rng(3)
    columns = [rng.integers(0, high, 500) for high in (7, 1, 300, 2)]
    brute_force = sorted(set(zip(*(column.tolist() for column in columns), strict=True)))
    assert distinct_rows(*columns) == brute_force
    assert distinct_rows(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)) == []


def test_the_embedded_compile_step_is_cached_and_sends_the_source() -> None:
    first = compile_card_program(names.CARD_PROGRAM, "embedded")
    again = compile_card_program(str(names.CARD_PROGRAM), "embedded")
    assert again is first
    p4info, device_config = first
    assert device_config == names.CARD_PROGRAM.read_bytes()
    assert {t.preamble.name for t in p4info.tables} >= set(names.TABLES)
    deeper = compile_card_program(names.CARD_PROGRAM, "embedded", defines={"TW_MAX_TRACE": 30})
    assert deeper.device_config.startswith(b"#define TW_MAX_TRACE 30\n") and deeper is not first
    with pytest.raises(CompileError, match="does not exist"):
        compile_card_program("/nonexistent/card.p4", "embedded")
    with pytest.raises(ValueError, match="target must be one of"):
        compile_card_program(names.CARD_PROGRAM, "tofino")


def test_the_bmv2_compile_step_runs_p4c() -> None:
    command = p4c_command(Path("/src/card.p4"), Path("/out"), {"TW_MAX_TRACE": 30}, ["/inc"])
    assert command[:5] == ["p4c", "--target", "bmv2", "--arch", "v1model"]
    assert command[command.index("--p4runtime-files") + 1] == "/out/card.p4info.txt"
    assert "-DTW_MAX_TRACE=30" in command and "-I/inc" in command and command[-1] == "/src/card.p4"
    if shutil.which("p4c") is None:
        with pytest.raises(CompileError, match="p4c is not on PATH"):
            compile_card_program(names.CARD_PROGRAM, "bmv2")
        pytest.skip("p4c is not installed here (the Vagrant VM has it): bmv2 compile not run")
    p4info, device_config = compile_card_program(names.CARD_PROGRAM, "bmv2")
    assert {t.preamble.name for t in p4info.tables} >= set(names.TABLES)
    assert device_config.lstrip().startswith(b"{")


def test_shell_settings_come_from_the_state_file_and_stay_below_the_controller() -> None:
    cards = [
        SimpleNamespace(
            name=f"c{i}", card_id=i, device_id=i, grpc_address=f"127.0.0.1:{20000 + i}", p4info=None
        )
        for i in range(4)
    ]
    state = SimpleNamespace(run_id="r1", cards=cards)
    assert find_card(state, "c2") is cards[2] and find_card(state, "3") is cards[3]
    with pytest.raises(KeyError, match="no card 'c9'"):
        find_card(state, "c9")
    reading = shell_settings(cards[2], write=False)
    assert reading["grpc_address"] == "127.0.0.1:20002" and reading["device_id"] == 2
    assert (
        reading["election_id"] < CONTROLLER_ELECTION_ID < shell_settings(cards[2], write=True)["election_id"]
    )


def test_the_shell_runs_p4runtime_sh_from_its_own_environment(tmp_path, monkeypatch, capsys) -> None:
    from emulation import shell_cli

    card_state = SimpleNamespace(
        name="c3", card_id=3, device_id=3, grpc_address="127.0.0.1:20003", p4info=None
    )
    settings = shell_settings(card_state, write=False)
    command = shell_cli.shell_command(settings, tmp_path)
    high, low = settings["election_id"]
    assert command == [
        str(tmp_path / "bin" / "python"),
        "-m",
        "p4runtime_sh",
        "--grpc-addr",
        "127.0.0.1:20003",
        "--device-id",
        "3",
        "--election-id",
        f"{high},{low}",
    ]  # no --config: the shell never pushes a pipeline
    assert shell_cli.run_shell(settings, tmp_path) == 2  # not installed there: one line, no traceback
    assert "p4runtime-shell is not installed" in capsys.readouterr().err
    (tmp_path / "lib" / "python3.11" / "site-packages" / "p4runtime_sh").mkdir(parents=True)
    started = []
    monkeypatch.setattr(shell_cli.os, "execv", lambda path, argv: started.append(argv))
    shell_cli.run_shell(shell_settings(card_state, write=True), tmp_path)
    assert started and "(primary: writes allowed)" in capsys.readouterr().out


def test_twinnet_shell_is_a_subcommand() -> None:
    from emulation.cli import SUBCOMMANDS

    assert SUBCOMMANDS["shell"][0] == "emulation.shell_cli"


def test_counter_readings_subtract_cell_by_cell() -> None:
    from controller.install import CardCounters

    before = CardCounters("c1", {1: (2, 200)}, {(3, 0): (1, 100)}, {"no_route": (0, 0)})
    after = CardCounters("c1", {1: (5, 500)}, {(3, 0): (4, 400), (3, 1): (1, 64)}, {"no_route": (1, 70)})
    since = after.minus(before)
    assert since.rx == {1: (3, 300)} and since.tx == {(3, 0): (3, 300), (3, 1): (1, 64)}
    assert since.sent_packets() == 4 and since.dropped_packets() == 1


def test_the_program_of_a_network_comes_from_its_state_files(tmp_path) -> None:
    from google.protobuf import text_format

    from controller.install import TwinController, program_of_state

    compiled = compile_card_program(names.CARD_PROGRAM, "embedded")
    p4info_file = tmp_path / "card.p4info.txt"
    p4info_file.write_text(text_format.MessageToString(compiled.p4info))
    card = SimpleNamespace(
        name="c0",
        card_id=0,
        device_id=0,
        grpc_address="127.0.0.1:1",
        p4info=str(p4info_file),
        device_config=str(names.CARD_PROGRAM),
    )
    state = SimpleNamespace(cards=[card], target="embedded", program=str(names.CARD_PROGRAM))
    p4info, device_config = program_of_state(state)
    assert p4info == compiled.p4info and device_config == names.CARD_PROGRAM.read_bytes()
    card.p4info = None  # no files recorded: the program is compiled
    assert program_of_state(state) is compiled
    controller = TwinController.from_state(state)
    assert list(controller.endpoints) == ["c0"] and controller.endpoints["c0"].grpc_address == "127.0.0.1:1"
