#!/usr/bin/env python3
"""Bring-up time and memory of emulated networks: build, wait for every card's P4Runtime port, tear down.

    sudo .venv/bin/python scripts/bench_bringup.py                  # the three benchmark networks
    sudo .venv/bin/python scripts/bench_bringup.py --only 3DT-4x4x4 --standin

Networks: twin 4-ary 2-tree (16 cards), twin 4-ary 3-tree (96 cards), 3DT 4x4x4
(128 cards, 128 hosts). "up" is the moment every card's switch process accepts
P4Runtime connections (tables are the controller's job, measured elsewhere).
Memory: the summed RSS and PSS of the switch processes, the RSS of the Mininet shells, and
the drop of the machine's MemAvailable while the network runs (kernel state included).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from emulation.capacity import available_memory_mb  # noqa: E402
from emulation.network import build_network  # noqa: E402
from topologies.build import build_topology  # noqa: E402

NETWORKS = {
    "twin-4-ary-2-tree": lambda: build_topology("fattree", k=4, n=2, twin=True),
    "twin-4-ary-3-tree": lambda: build_topology("fattree", k=4, n=3, twin=True),
    "3DT-4x4x4": lambda: build_topology("ndt", dims="4x4x4"),
}


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


def bench(name: str, switch_class, target: str, settle: float) -> dict:
    topology = NETWORKS[name]()
    before = available_memory_mb()
    started = time.monotonic()
    network = build_network(
        topology,
        target=target,
        switch_class=switch_class,
        out_dir=Path("/tmp/twinnet/bench") / name,
        progress=None,
    )
    try:
        up = time.monotonic() - started
        time.sleep(settle)
        switches = [rss_mb(card.switch_pid) for card in network.cards.values()]
        switches_pss = [pss_mb(card.switch_pid) for card in network.cards.values()]
        shells = [rss_mb(node.pid) for node in [*network.cards.values(), *network.hosts.values()]]
        used = before - available_memory_mb()
        stages = dict(network.timings)
        kind = network.switch_class.target_name
    finally:
        network.stop()
    counts = topology.counts()
    return {
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
        "shell_rss_mb": sum(shells),
        "memavailable_drop_mb": used,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", choices=sorted(NETWORKS), action="append", help="bench only these networks")
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
    for name in args.only or list(NETWORKS):
        print(f"== {name} ...", flush=True)
        row = bench(name, switch_class, args.target, args.settle)
        rows.append(row)
        stages = ", ".join(
            f"{stage} {seconds:.1f}" for stage, seconds in row["stages"].items() if stage != "total"
        )
        print(
            f"   {row['cards']} cards ({row['target']}), {row['hosts']} hosts, {row['links']} links: "
            f"up in {row['up_s']:.1f} s ({stages}); teardown {row['teardown_s']:.1f} s"
        )
        print(
            f"   memory: switches RSS {row['switch_rss_mb']:.0f} MB "
            f"({row['switch_rss_each_mb']:.1f} MB each), "
            f"PSS {row['switch_pss_mb']:.0f} MB, "
            f"Mininet shells {row['shell_rss_mb']:.0f} MB, "
            f"MemAvailable drop {row['memavailable_drop_mb']:.0f} MB",
            flush=True,
        )
    header = (
        "network              target    cards hosts  up (s)  teardown (s)  switch RSS (MB)  "
        "MemAvail. drop (MB)"
    )
    print("\n" + header)
    for row in rows:
        print(
            f"{row['network']:<20} {row['target']:<9} {row['cards']:>5} {row['hosts']:>5} "
            f"{row['up_s']:>7.1f} {row['teardown_s']:>13.1f} {row['switch_rss_mb']:>16.0f} "
            f"{row['memavailable_drop_mb']:>19.0f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
