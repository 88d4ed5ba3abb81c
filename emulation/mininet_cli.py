"""``twinnet cli``: Mininet's CLI on a running twinnet network with the tables installed, and path tools.

    sudo twinnet cli fattree --k 4 --n 2 --twin
    sudo twinnet cli ndt --dims 2x4x2 --routing ts-dor

Besides Mininet's own commands (``h0 ping h5``, ``iperf h0 h5``, ``h3 ip a`` ...):

    path H1 H2       send one probe from H1 to H2; its measured hops beside the model's
    load             packets each card-to-card link carried since the tables were installed (counters),
                     beside the number of model paths on it
    counters CARD    a card's drop counters by reason, frames per port, packets per (port, VC), queues

The network is torn down when the CLI ends (``exit``, Ctrl-D, an error).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import logging
import time
from collections.abc import Iterator
from pathlib import Path

from emulation.run_settings import CONTROL_OPTION, SWITCH_PROCESSES_OPTION
from topologies.build import add_topology_arguments, topology_from_args

#: Seconds `path` waits for its probe.
PATH_TIMEOUT_S = 3.0
#: Probe ids of the CLI's probes start here (far from a run's 1, 2, ...).
CLI_PROBE_BASE = 0x7000_0000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from controller.routing import ALGORITHMS, routing_help

    add_topology_arguments(parser)
    group = parser.add_argument_group("cli")
    group.add_argument(
        "--routing",
        choices=sorted(ALGORITHMS),
        type=str.lower,
        help=f"routing algorithm: {routing_help()} "
        "(default: destro for fattree, dort for ndt, dor for torus)",
    )
    group.add_argument("--target", choices=("auto", "bmv2", "embedded"), default="auto", help="P4 switch")
    group.add_argument(
        "--out", type=Path, metavar="DIR", help="logs directory (default /tmp/twinnet/out/<run>)"
    )
    group.add_argument("--control", **CONTROL_OPTION)
    group.add_argument("--switch-processes", **SWITCH_PROCESSES_OPTION)


@contextlib.contextmanager
def routed_network(
    topology,
    routing: str | None,
    target: str,
    out: Path | None,
    progress=None,
    control: str = "unix",
    switch_processes: int | None = None,
) -> Iterator:
    """A running network with `routing`'s tables installed: yields (plan, network, cards); torn down after."""
    from emulation.card_access import open_cards
    from emulation.network import build_network
    from emulation.run import RunSettings, plan_run

    plan = plan_run(topology, RunSettings(routing=routing, target=target, out=out, packets=1))
    with build_network(
        topology,
        target=plan.switch_class.target_name,
        out_dir=out,
        check_capacity=False,
        progress=progress,
        control=control,
        switch_processes=switch_processes,
    ) as network:
        with open_cards(network) as cards:
            cards.install(plan.tables)
            yield plan, network, cards


class PathTool:
    """Sends single probes and shows their paths (the `path` command), on one TrafficEngine."""

    def __init__(self, plan, engine) -> None:
        self.plan = plan
        self.engine = engine
        self.ids = itertools.count(CLI_PROBE_BASE)

    def probe(self, src: int, dst: int, timeout: float = PATH_TIMEOUT_S):
        """Send one probe src -> dst; return (ProbeResult, lines to print)."""
        from emulation.measure import ModelPaths, SentProbe, decode_arrival, judge
        from emulation.packets import now_us
        from emulation.traffic import probe_frame, stamp

        probe_id = next(self.ids)
        frame = probe_frame(src, dst, self.plan.settings.size)
        sent_at = now_us()
        stamp(frame, probe_id, sent_at)
        self.engine.send_frame(src, bytes(frame))
        deadline = time.monotonic() + timeout
        arrival = None
        while time.monotonic() < deadline and arrival is None:
            for received in self.engine.take_received():  # anything else that arrived is not this probe's
                decoded = decode_arrival(received.pe, received.frame, received.receive_us)
                if decoded is not None and decoded.probe_id == probe_id:
                    arrival = decoded
            time.sleep(0.01)
        (result,) = judge(
            [SentProbe(probe_id, src, dst, sent_at)],
            [arrival] if arrival else [],
            ModelPaths(self.plan.tables),
        )
        return result, path_lines(result, self.plan.tables)


def path_lines(result, tables) -> list[str]:
    """A probe's measured hops beside the model's, one line per hop, and the verdict."""
    from emulation.measure import hop_kinds

    names = tables.network.card_names
    measured = list(result.arrival.hops) if result.arrival else []
    model = list(result.model.hops) if result.model else []
    kinds = hop_kinds(measured, tables)
    lines = [
        f"probe {result.probe_id}: PE {result.src} -> PE {result.dst}"
        + (f", latency {result.latency_us} us" if result.latency_us is not None else ""),
        f"{'hop':>3}  {'measured (card in>out vc prio qdepth)':<40} {'model (card in>out vc queue use)':<38}",
    ]
    for index in range(max(len(measured), len(model))):
        got = measured[index] if index < len(measured) else None
        want = model[index] if index < len(model) else None
        left = (
            (
                f"{_card_name(names, got.card_id)} {got.in_port}>{got.out_port} "
                f"vc{got.vc} p{got.prio} q{got.qdepth} {kinds[index]}"
            )
            if got
            else "-"
        )
        right = (
            (
                f"{names[want.card_id]} {want.ingress_port}>{want.egress_port} vc{want.vc} q{want.queue} "
                f"{want.use}"
            )
            if want
            else "-"
        )
        same = (
            got is not None
            and want is not None
            and (got.card_id, got.in_port, got.out_port, got.vc)
            == (want.card_id, want.ingress_port, want.egress_port, want.vc)
        )
        lines.append(f"{index:>3}  {left:<40} {right:<38} {'=' if same else 'DIFFERENT'}")
    verdict = result.verdict + (f" ({result.divergence})" if result.divergence else "")
    lines.append(f"verdict: {verdict}")
    return lines


def _card_name(names: list[str], card_id: int) -> str:
    return names[card_id] if 0 <= card_id < len(names) else f"card id {card_id}"


def load_lines(plan, cards, limit: int = 40) -> list[str]:
    """Card-to-card links by packets sent (counters, all VCs), with the model's number of paths on each."""
    net = plan.tables.network
    model = plan.all_pairs.loads()
    model_per_link: dict[tuple[int, int], float] = {}
    for index in range(len(plan.tables)):
        key = (int(plan.tables.card_id[index]), int(plan.tables.egress_port[index]))
        model_per_link[key] = model_per_link.get(key, 0.0) + float(model[index])
    rows = []
    for name, counters in cards.counters().items():
        card = net.card_id_of_name[name]
        per_port: dict[int, int] = {}
        for (port, _vc), count in counters.tx_packets.items():
            per_port[port] = per_port.get(port, 0) + count
        for port in range(1, net.max_port + 1):
            kind = net.link_kind_name(card, port)
            if kind in ("external", "internal"):
                peer = net.card_names[int(net.peer_card[card, port])]
                rows.append(
                    (
                        per_port.get(port, 0),
                        f"{name}:{port} ({net.port_name(card, port)}) -> {peer}",
                        kind,
                        int(model_per_link.get((card, port), 0)),
                    )
                )
    rows.sort(key=lambda row: (-row[0], row[1]))
    lines = [f"{'packets':>8}  {'link':<34} {'kind':<9} {'model paths':>11}"]
    lines += [f"{count:>8}  {link:<34} {kind:<9} {paths:>11}" for count, link, kind, paths in rows[:limit]]
    if len(rows) > limit:
        lines.append(f"... {len(rows) - limit} more links")
    return lines


def counter_lines(network, cards, name: str) -> list[str]:
    """One card's counters (P4Runtime) and, on the embedded target, its queues (side channel)."""
    counters = cards.counters([name]).get(name)
    if counters is None:
        return [f"card {name}: counters cannot be read (is it alive? {network.cards[name].is_alive()})"]
    drops = counters.drop_packets
    lines = [f"card {name} drops: " + ", ".join(f"{reason} {count}" for reason, count in drops.items())]
    lines.append(
        "frames received per port: " + ", ".join(f"{p}: {c}" for p, c in sorted(counters.rx_packets.items()))
    )
    lines.append(
        "packets sent per (port, vc): "
        + ", ".join(f"{p}/{vc}: {c}" for (p, vc), c in sorted(counters.tx_packets.items()))
    )
    if network.switch_class.target_name == "embedded":
        from p4switch.daemon.side_channel import request

        with contextlib.suppress(OSError):
            stats = request(network.cards[name].control_target, {"cmd": "stats"}, timeout=2.0)
            for port in stats.get("ports", []):
                drops = sum(q["tail_drops"] for q in port.get("queues", []))
                lines.append(
                    f"port {port['port']} ({port.get('interface')}): rx {port.get('rx_frames')} "
                    f"tx {port.get('tx_frames')} backlog {port.get('backlog')} tail drops {drops} "
                    f"rate {port.get('rate_pps') or 'unlimited'}"
                )
                lines += pfc_lines(port)
    return lines


def pfc_lines(port: dict) -> list[str]:
    """A port's PFC counters (lossless cards), one line per priority that has any."""
    lines = []
    for row in port.get("pfc", []):
        if any(row[key] for key in ("pause_frames_sent", "pause_frames_received", "held", "headroom_drops")):
            lines.append(
                f"  prio {row['priority']}: pause sent {row['pause_frames_sent']} "
                f"(resume {row['resume_frames_sent']}) received {row['pause_frames_received']} "
                f"(resume {row['resume_frames_received']}) paused {row['paused_s']:.3f} s"
                f"{' now' if row['paused'] else ''} held {row['held']} headroom drops {row['headroom_drops']}"
            )
    return lines


def make_cli_class():
    """Mininet's CLI with the twinnet commands (built lazily: Mininet is imported only here)."""
    from mininet.cli import CLI
    from mininet.log import setLogLevel

    setLogLevel("output")  # what `mn` does: the CLI's command output is logged at this level
    logging.getLogger("mininet").propagate = False  # printed once, by Mininet's own handler

    class TwinnetCLI(CLI):
        prompt = "twinnet> "

        def __init__(self, mininet, plan, network, cards, path_tool, **kwargs) -> None:
            self.plan, self.network, self.cards, self.path_tool = plan, network, cards, path_tool
            super().__init__(mininet, **kwargs)

        def _pe(self, name: str) -> int:
            from topologies.addressing import pe_of_ip

            host = self.mn[name]
            return pe_of_ip(host.IP())

        def do_path(self, line: str) -> None:
            """path H1 H2: send one probe from H1 to H2 and show its measured path beside the model's."""
            words = line.split()
            if len(words) != 2:
                print("usage: path H1 H2   (e.g. path h0 h5)")
                return
            try:
                src, dst = (self._pe(word) for word in words)
            except (KeyError, ValueError) as error:
                print(f"path: unknown host {error}")
                return
            if src == dst:
                print("path: give two different hosts")
                return
            _result, lines = self.path_tool.probe(src, dst)
            print("\n".join(lines))

        def do_load(self, _line: str) -> None:
            """load: packets per card-to-card link since the tables were installed, with the model's paths."""
            print("\n".join(load_lines(self.plan, self.cards)))

        def do_counters(self, line: str) -> None:
            """counters CARD: drops by reason, frames per port, packets per (port, VC), queues."""
            name = line.strip()
            if name not in self.network.cards:
                print(f"usage: counters CARD   (cards: {', '.join(sorted(self.network.cards)[:8])} ...)")
                return
            print("\n".join(counter_lines(self.network, self.cards, name)))

    return TwinnetCLI


def main(args: argparse.Namespace) -> int:
    from emulation.network import stderr_progress
    from emulation.traffic import TrafficEngine, endpoints_of_network

    topology = topology_from_args(args)
    with routed_network(
        topology, args.routing, args.target, args.out, stderr_progress, args.control, args.switch_processes
    ) as (
        plan,
        network,
        cards,
    ):
        stderr_progress(
            f"tables of {plan.tables.algorithm} installed; extra commands: path H1 H2, load, "
            "counters CARD; `exit` tears the network down"
        )
        with TrafficEngine(endpoints_of_network(network)) as engine:
            make_cli_class()(network.mininet, plan, network, cards, PathTool(plan, engine))
    return 0
