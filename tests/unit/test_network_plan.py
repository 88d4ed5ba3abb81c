"""The builder's pure parts, no root: veth plan, names and MACs, host set-up lines, state file, refusals."""

from __future__ import annotations

import json

import pytest

from emulation import capacity, state
from emulation.capacity import CapacityError, SwitchMemory, check_memory, estimate_memory
from emulation.hosts import ip_batch_lines
from emulation.links import (
    ENCAPSULATION_OVERHEAD,
    HOST_IP_MTU,
    LINK_MTU,
    card_port_mac,
    is_twinnet_group,
    link_group_for,
    plan_veths,
    root_interfaces,
)
from emulation.network import NetworkError, build_network
from emulation.state import CardState, HostState, NetworkState, process_identity
from emulation.switches import BMv2Switch, EmbeddedSwitch, SwitchError, select_target
from topologies.addressing import pe_of_mac
from topologies.build import build_topology


@pytest.fixture(scope="module")
def ndt():
    return build_topology("ndt", dims="2x4x2")


def test_mtu_fits_a_full_trace_over_1500_bytes() -> None:
    from emulation import packets

    assert ENCAPSULATION_OVERHEAD == packets.TWINNET_HEADER_LEN + packets.MAX_TRACE * packets.TRACE_ENTRY_LEN
    assert LINK_MTU == HOST_IP_MTU + ENCAPSULATION_OVERHEAD == 1500 + 20 + 40 * 16  # p4src/README.md


def test_card_macs_are_unique_and_never_host_macs(ndt) -> None:
    macs = {
        card_port_mac(card.card_id, ref.port)
        for card in ndt.cards.values()
        for ref in ndt.card_ports(card.name)
    }
    assert len(macs) == sum(card.num_ports for card in ndt.cards.values())
    for mac in macs:
        assert int(mac.split(":")[0], 16) & 0x02  # locally administered
        with pytest.raises(ValueError):
            pe_of_mac(mac)


def test_plan_puts_card_ends_in_the_root_namespace_and_hosts_in_theirs(ndt) -> None:
    pids = {host.name: 1000 + host.pe for host in ndt.hosts}
    plan = plan_veths(ndt, pids)
    assert len(plan) == len(ndt.links)
    for veth in plan:
        assert veth.root.ref.node in ndt.cards
        assert veth.root.name == f"{veth.root.ref.node}-eth{veth.root.ref.port}"
        if veth.link.kind == "host":
            assert veth.other.namespace_pid == pids[veth.other.ref.node]
            assert veth.other.name == f"{veth.other.ref.node}-eth0"
            assert veth.other.mac == ndt.hosts[pids[veth.other.ref.node] - 1000].mac
        else:
            assert veth.other.namespace_pid is None
    names = root_interfaces(plan)
    assert (
        len(names)
        == len(set(names))
        == sum(1 for link in ndt.links for end in (link.a, link.b) if end.node in ndt.cards)
    )
    assert all(len(name) <= 15 for name in names)


def test_parallel_links_get_distinct_interfaces(ndt) -> None:
    plan = plan_veths(ndt, {host.name: 1 for host in ndt.hosts})
    pairs = {}
    for veth in plan:
        if veth.link.kind != "host":
            pairs.setdefault(frozenset((veth.root.ref.node, veth.other.ref.node)), []).append(veth)
    parallel = [veths for veths in pairs.values() if len(veths) > 1]
    assert parallel, "3DT 2x4x2 has parallel links on its k=2 dimensions"
    for veths in parallel:
        assert len({veth.root.name for veth in veths}) == len(veths)


def test_host_lines_configure_address_route_and_mtu(ndt) -> None:
    host = ndt.hosts[3]
    lines = ip_batch_lines(host)
    assert f"address add {host.ip}/8 dev h3-eth0 noprefixroute" in lines
    assert f"route add 10.0.0.0/8 dev h3-eth0 src {host.ip} mtu lock {HOST_IP_MTU}" in lines
    assert f"link set dev h3-eth0 mtu {LINK_MTU} up" in lines


def test_link_groups_are_twinnet_groups() -> None:
    assert is_twinnet_group(link_group_for(123456))
    assert not is_twinnet_group(0)


def test_memory_estimate_refuses_what_does_not_fit() -> None:
    big = build_topology("ndt", dims="4x4x4")
    estimate = estimate_memory(big, SwitchMemory(card_mb=64), available_mb=24 * 1024)
    assert estimate.fits and estimate.cards_mb == 128 * 64
    assert not estimate_memory(big, SwitchMemory(card_mb=64), available_mb=4 * 1024).fits
    shared = estimate_memory(big, SwitchMemory(card_mb=8, process_mb=60, processes=2), available_mb=1e6)
    assert shared.cards_mb == 128 * 8 + 2 * 60
    tables = SwitchMemory(card_mb=0.5, process_mb=40, processes=2, entry_kb=2.0)
    with_entries = estimate_memory(big, tables, available_mb=1e6, entries=10_240)
    assert with_entries.cards_mb == pytest.approx(128 * 0.5 + 10_240 * 2.0 / 1024 + 2 * 40)


def test_the_embedded_target_plans_shared_processes_and_bmv2_one_per_card() -> None:
    plan = EmbeddedSwitch.memory_plan(128, 3)
    assert (plan.processes, plan.card_mb) == (3, EmbeddedSwitch.estimated_card_mb)
    assert EmbeddedSwitch.memory_plan(128, 3, control="tcp").processes == 0
    assert EmbeddedSwitch.memory_plan(2, 5).processes == 2  # never more processes than cards
    assert BMv2Switch.memory_plan(128, 3) == SwitchMemory(card_mb=BMv2Switch.estimated_rss_mb)


def test_build_refuses_a_network_too_large_before_anything_starts(monkeypatch) -> None:
    monkeypatch.setattr(capacity, "available_memory_mb", lambda: 2048.0)
    with pytest.raises(CapacityError, match="128 cards and 128 hosts"):
        check_memory(build_topology("ndt", dims="4x4x4"), SwitchMemory(card_mb=64), "embedded")
    # the builder alone (BUILDER_MB) is more than a quarter of this: nothing may start
    monkeypatch.setattr(capacity, "available_memory_mb", lambda: capacity.BUILDER_MB / 4)
    with pytest.raises(CapacityError):
        build_network(build_topology("ndt", dims="4x4x4"), switch_class=EmbeddedSwitch, progress=None)


def test_build_refuses_a_missing_program_and_an_unknown_target(ndt, tmp_path) -> None:
    with pytest.raises(NetworkError, match="does not exist"):
        build_network(ndt, program=tmp_path / "nothing.p4", switch_class=EmbeddedSwitch, progress=None)
    with pytest.raises(SwitchError, match="--target must be one of"):
        build_network(ndt, target="tofino", progress=None)
    with pytest.raises(SwitchError, match="--target must be one of"):
        select_target("bmv3")


def test_state_round_trip_and_current_pointer(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(state, "STATE_DIR", tmp_path / "state")
    card = CardState(
        "c0", 0, 0, "127.0.0.1:20000", 24000, "embedded", None, "card.p4", "c0.log", ["c0-eth1"], 42
    )
    host = HostState("h0", 0, "10.0.0.1", "02:00:00:00:00:01", "h0-eth0", "c0", 2, 43, 4026531840)
    written = NetworkState(
        "run-1",
        process_identity(),
        "running",
        0.0,
        {"family": "ndt"},
        "embedded",
        "card.p4",
        str(tmp_path),
        link_group_for(1),
        {"link": LINK_MTU},
        [card],
        [host],
    )
    path = state.write_state(written, record=tmp_path / "state.json")
    assert json.loads(path.read_text())["cards"][0]["grpc_address"] == "127.0.0.1:20000"
    read = state.read_current_state()
    assert read == written == state.read_state(tmp_path / "state.json")
    assert read.card("c0").pid == 42 and read.host("h0").netns == 4026531840
    assert state.identity_alive(read.owner)
    assert [found.run_id for _, found in state.recorded_states()] == ["run-1"]
    state.forget_run("run-1")
    assert not state.current_link().exists() and state.recorded_states() == []
    with pytest.raises(FileNotFoundError, match="no twinnet network is running"):
        state.read_current_state()


def test_a_record_written_before_the_side_channel_rename_still_reads(tmp_path) -> None:
    """Records of runs started before the rename name the port ``thrift_port``: `twinnet clean` reads them."""
    card = CardState(
        "c0", 0, 0, "127.0.0.1:20000", 24005, "embedded", None, "card.p4", "c0.log", ["c0-eth1"], 42
    )
    written = NetworkState(
        "run-1", "1:1", "running", 0.0, {}, "embedded", "card.p4", str(tmp_path), 1, {}, [card], []
    )
    data = json.loads(json.dumps(written.to_json()))
    data["cards"][0]["thrift_port"] = data["cards"][0].pop("side_channel_port")
    (tmp_path / "old.json").write_text(json.dumps(data))
    assert state.read_state(tmp_path / "old.json") == written


def test_a_dead_process_identity_is_not_alive() -> None:
    assert not state.identity_alive("999999999:1")
    pid, start = process_identity().split(":")
    assert not state.identity_alive(f"{pid}:{int(start) + 1}")  # same pid, another start: pid reused


def test_a_run_is_refused_when_its_tables_would_not_fit(monkeypatch) -> None:
    """The cards' memory grows with their tables: the run's estimate counts the entries it installs."""
    from emulation.run import plan_run
    from emulation.run_settings import RunInputError, RunSettings

    topology = build_topology("ndt", dims="4x4x4")
    switches = EmbeddedSwitch.memory_plan(len(topology.cards))
    bare = estimate_memory(topology, switches, available_mb=1e6).need_mb
    entries = len(plan_run(topology, RunSettings(packets=1, check_capacity=False), need_root=False).tables)
    tables_mb = entries * switches.entry_kb / 1024
    assert tables_mb > 1  # 3DT 4x4x4 DORT: tens of thousands of entries
    # room for the bare network, not for its tables
    monkeypatch.setattr(
        capacity, "available_memory_mb", lambda: (bare + tables_mb / 2) / capacity.USABLE_FRACTION
    )
    with pytest.raises(RunInputError, match="128 cards and 128 hosts"):
        plan_run(topology, RunSettings(packets=1, target="embedded"), need_root=False)
