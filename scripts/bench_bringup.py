#!/usr/bin/env python3
"""Bring-up time and memory of emulated networks against Mininet's own floor, measured in the same run.

    sudo .venv/bin/python scripts/bench_bringup.py                  # the three small benchmark networks
    sudo .venv/bin/python scripts/bench_bringup.py --only 3DT-4x4x4 --only 3DT-8x8x8 --floor --install
    sudo .venv/bin/python scripts/bench_bringup.py --only 3DT-4x4x4 --standin

Networks: twin 4-ary 2-tree (16 cards), twin 4-ary 3-tree (96 cards), 3DT 4x4x4
(128 cards, 128 hosts), and the papers' 1,024-PE networks: 3DT 8x8x8, 5DT 4x4x2x4x4
(1,024 cards each) and the 32x32 2D torus (1,024 cards). "up" is the moment every
switch process accepts P4Runtime connections.

``--floor``: first the same shape through Mininet's own API (``addHost``, ``addSwitch`` with
switches that start nothing, ``addLink`` making its veth pairs, ``build``, ``start``): what
any Mininet network of that shape costs, the floor twinnet's bring-up is compared with.
``--install``: then the routing tables through the controller (entries per second, all
cards concurrently), before memory is measured.
Memory: the summed RSS and PSS of the switch processes (each process once) and PSS per
card, the PSS of the Mininet shells, and the drop of the machine's MemAvailable while
the network runs (kernel state included), next to the capacity estimate.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from mininet.net import Mininet
from mininet.node import Switch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from emulation.capacity import available_memory_mb, estimate_memory  # noqa: E402
from emulation.network import build_network  # noqa: E402
from topologies.build import build_topology  # noqa: E402

NETWORKS = {
    "twin-4-ary-2-tree": lambda: build_topology("fattree", k=4, n=2, twin=True),
    "twin-4-ary-3-tree": lambda: build_topology("fattree", k=4, n=3, twin=True),
    "3DT-4x4x4": lambda: build_topology("ndt", dims="4x4x4"),
    "3DT-8x8x8": lambda: build_topology("ndt", dims="8x8x8"),
    "5DT-4x4x2x4x4": lambda: build_topology("ndt", dims="4x4x2x4x4"),
    "2D-torus-32x32": lambda: build_topology("torus", dims="32x32"),
}
#: what --only runs when not given
DEFAULT_NETWORKS = ("twin-4-ary-2-tree", "twin-4-ary-3-tree", "3DT-4x4x4")


class IdleSwitch(Switch):
    """A Mininet switch that starts nothing: its node's shell is its only process (the floor)."""

    def start(self, controllers) -> None:
        pass

    def stop(self, deleteIntfs: bool = True) -> None:
        if deleteIntfs:
            self.deleteIntfs()


def mininet_floor(topology) -> dict:
    """Seconds Mininet's own API takes to build and start the same shape (idle switches), and to stop it."""
    started = time.monotonic()
    net = Mininet(topo=None, build=False, controller=None, switch=IdleSwitch, autoSetMacs=False)
    for host in topology.hosts:
        net.addHost(host.name)
    for card in sorted(topology.cards.values(), key=lambda card: card.card_id):
        net.addSwitch(card.name, dpid=f"{card.card_id + 1:x}")
    for link in topology.links:
        net.addLink(link.a.node, link.b.node, port1=link.a.port, port2=link.b.port)
    net.build()
    net.start()
    up = time.monotonic() - started
    stopping = time.monotonic()
    net.stop()
    return {"up_s": up, "teardown_s": time.monotonic() - stopping}


def rss_mb(pid: int | None) -> float:
    if pid is None:
        return 0.0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def pss_mb(pid: int | None) -> float:
    """Proportional set size: shared pages divided among the processes that share them."""
    if pid is None:
        return 0.0
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def install_tables(network) -> dict:
    """Install the topology's default routing through the controller; entries, seconds, entries/s."""
    from emulation.card_access import open_cards
    from emulation.run import RunSettings, plan_run

    plan = plan_run(network.topology, RunSettings(packets=1, check_capacity=False), need_root=False)
    started = time.monotonic()
    with open_cards(network) as cards:
        written = cards.install(plan.tables).written
    seconds = time.monotonic() - started
    return {"entries": written, "install_s": seconds, "entries_per_s": written / seconds}


def bench(
    name: str, switch_class, target: str, settle: float, processes: int | None, install: bool
) -> dict:
    topology = NETWORKS[name]()
    before = available_memory_mb()
    started = time.monotonic()
    extra = {"switch_processes": processes} if processes is not None else {}
    network = build_network(
        topology,
        target=target,
        switch_class=switch_class,
        out_dir=Path("/tmp/twinnet/bench") / name,
        progress=None,
        **extra,
    )
    try:
        up = time.monotonic() - started
        installed = install_tables(network) if install else None
        time.sleep(settle)
        pids = {card.switch_pid for card in network.cards.values()}
        switches = [rss_mb(pid) for pid in pids]
        switches_pss = [pss_mb(pid) for pid in pids]
        shells = [pss_mb(node.pid) for node in [*network.cards.values(), *network.hosts.values()]]
        used = before - available_memory_mb()
        stages = dict(network.timings)
        kind = network.switch_class.target_name
        estimate = estimate_memory(
            topology,
            network.switch_class.memory_plan(len(topology.cards), processes, network.control),
            entries=installed["entries"] if installed else 0,
        )
    finally:
        network.stop()
    counts = topology.counts()
    return {
        "processes": len(pids),
        "installed": installed,
        "estimate_mb": estimate.need_mb - estimate.builder_mb,
        "switch_pss_per_card_mb": sum(switches_pss) / counts["cards"],
        "network": name,
        "target": kind,
        "cards": counts["cards"],
        "hosts": counts["hosts"],
        "links": len(topology.links),
        "up_s": up,
        "stages": stages,
        "teardown_s": network.timings["teardown"],
        "switch_rss_mb": sum(switches),
        "switch_rss_each_mb": sum(switches) / len(switches),
        "switch_pss_mb": sum(switches_pss),
        "shell_pss_mb": sum(shells),
        "memavailable_drop_mb": used,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", choices=sorted(NETWORKS), action="append", help="bench only these networks")
    parser.add_argument("--floor", action="store_true", help="measure Mininet's own floor first (same shape)")
    parser.add_argument("--install", action="store_true", help="install the routing tables before measuring")
    parser.add_argument("--switch-processes", type=int, help="embedded switch processes")
    parser.add_argument("--target", default="embedded", help="auto, bmv2 or embedded (default embedded)")
    parser.add_argument(
        "--standin",
        action="store_true",
        help="cards run the test suite's stand-in process (holds ports, forwards nothing)",
    )
    parser.add_argument("--settle", type=float, default=2.0, help="seconds to wait before measuring memory")
    args = parser.parse_args()
    switch_class = None
    if args.standin:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "emulation"))
        from standin_switch import StandinSwitch

        switch_class = StandinSwitch
    rows = []
    for name in args.only or list(DEFAULT_NETWORKS):
        print(f"== {name} ...", flush=True)
        floor = mininet_floor(NETWORKS[name]()) if args.floor else None
        if floor:
            print(f"   Mininet's floor: up in {floor['up_s']:.1f} s, stopped in {floor['teardown_s']:.1f} s")
        row = bench(name, switch_class, args.target, args.settle, args.switch_processes, args.install)
        row["floor"] = floor
        rows.append(row)
        stages = ", ".join(
            f"{stage} {seconds:.1f}" for stage, seconds in row["stages"].items() if stage != "total"
        )
        print(
            f"   {row['cards']} cards ({row['target']}), {row['hosts']} hosts, {row['links']} links: "
            f"up in {row['up_s']:.1f} s ({stages}); teardown {row['teardown_s']:.1f} s"
        )
        if row["installed"]:
            installed = row["installed"]
            print(
                f"   tables: {installed['entries']} entries in {installed['install_s']:.1f} s "
                f"({installed['entries_per_s']:.0f} entries/s)"
            )
        print(
            f"   memory: {row['processes']} switch processes, RSS {row['switch_rss_mb']:.0f} MB, "
            f"PSS {row['switch_pss_mb']:.0f} MB ({row['switch_pss_per_card_mb']:.1f} MB a card), "
            f"Mininet shells PSS {row['shell_pss_mb']:.0f} MB, "
            f"MemAvailable drop {row['memavailable_drop_mb']:.0f} MB (estimate {row['estimate_mb']:.0f} MB)",
            flush=True,
        )
    header = (
        "network              target    cards hosts  up (s)  floor (s)  ratio  teardown (s)  "
        "PSS/card (MB)  MemAvail. drop (MB)  estimate (MB)"
    )
    print("\n" + header)
    for row in rows:
        floor = row["floor"]["up_s"] if row["floor"] else None
        ratio = f"{row['up_s'] / floor:>6.2f}" if floor else f"{'-':>6}"
        print(
            f"{row['network']:<20} {row['target']:<9} {row['cards']:>5} {row['hosts']:>5} "
            f"{row['up_s']:>7.1f} {floor or 0:>10.1f} {ratio} {row['teardown_s']:>13.1f} "
            f"{row['switch_pss_per_card_mb']:>14.1f} {row['memavailable_drop_mb']:>20.0f} "
            f"{row['estimate_mb']:>14.0f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
