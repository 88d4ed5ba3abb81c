#!/usr/bin/env python3
"""Time the controller installing full routing tables onto running embedded cards.

    .venv/bin/python scripts/bench_install.py      # 3DT 4x4x4 DORT, twin 4-ary 3-tree DESTRO, table ops
    .venv/bin/python scripts/bench_install.py --case ndt-4x4x4-dort --batch-size 500
    .venv/bin/python scripts/bench_install.py --case table-ops   # INSERT/MODIFY/DELETE at 65,536 entries
    .venv/bin/python scripts/bench_install.py --processes 2      # the cards spread over 2 processes
    .venv/bin/python scripts/bench_install.py --case ndt-8x8x8-dort --processes 2 --no-verify  # 2.1M entries
    .venv/bin/python scripts/bench_install.py --case ndt-8x8x8-dort --processes 2 --per-process 3,8

For each case it starts one ``twinnet-switch`` process per card, or with
``--processes N`` N processes hosting the cards between them (``--cards``, as the
emulation runs them; one gRPC address per process) (the embedded target, started
with the card program, without data-plane interfaces: the control plane is what
is measured; no root needed), waits until all serve
P4Runtime, then times, end to end, a full install (connect, read back, write
every entry, over gRPC on loopback) and a verify (read everything back and
compare). It prints entries/s and seconds, and stops the processes it started.

The ``table-ops`` case measures one card's table operations at scale: it fills the
route table (65,536 entries) to 1,000 below its size, then times INSERT of 1,000
entries (filling it), MODIFY of 1,000 and DELETE of 1,000, each as Writes of
``--batch-size`` updates; INSERT, which costs the same at any table size, is the
reference MODIFY and DELETE are compared with in the same run.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from controller.compile import compile_card_program  # noqa: E402
from controller.install import DEFAULT_BATCH_SIZE, DEFAULT_WORKERS, WORKERS_PER_ADDRESS, TwinController  # noqa: E402
from controller.p4runtime_conn import CardConnection, CardEndpoint  # noqa: E402
from controller.routing import compute_tables  # noqa: E402
from controller.translate import DELETE, INSERT, MODIFY, EntrySpec, spec_update  # noqa: E402
from controller.twins import plan_cards  # noqa: E402
from emulation.headroom import process_cpu_s  # noqa: E402
from emulation.switch_launcher import switch_command  # noqa: E402
from p4src import CARD_PROGRAM, card  # noqa: E402
from p4switch.daemon.host_config import CardConfig, write_cards_file  # noqa: E402
from p4switch.p4runtime.info import P4InfoIndex  # noqa: E402
from topologies.build import build_topology  # noqa: E402

#: case -> (topology, algorithm installed first, algorithm switched to live afterwards or None)
CASES = {
    "ndt-4x4x4-dort": (lambda: build_topology("ndt", dims="4x4x4", config="cbest"), "dort", "ts-dor"),
    "twin-4-ary-3-tree-destro": (lambda: build_topology("fattree", k=4, n=3, twin=True), "destro", None),
    # the papers' size: 1,024 cards, ~2.1M route entries (run it with --processes; not in the default set)
    "ndt-8x8x8-dort": (lambda: build_topology("ndt", dims="8x8x8", config="cbest"), "dort", None),
}
DEFAULT_CASES = ["ndt-4x4x4-dort", "twin-4-ary-3-tree-destro"]
#: the switch as the emulation starts it (its own environment, .venv/switch, when scripts/setup.sh made it)
SWITCH = switch_command()
TABLE_OPS = "table-ops"
#: seconds the idle switches' CPU is measured before the install
IDLE_SECONDS = 2.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_switches(
    cards: list[tuple[str, int]], program: Path, log_dir: Path, wave: int = 8, timeout: float = 120.0
) -> tuple[list, list[CardEndpoint]]:
    """One switch process per (name, card id), on free loopback ports, `wave` at a time (each wave waits
    until its switches serve P4Runtime, so that the machine's cores are not swamped by start-ups);
    returns processes and endpoints."""
    processes: list = []
    endpoints: list[CardEndpoint] = []
    try:
        for first in range(0, len(cards), wave):
            started = _start(cards[first : first + wave], program, log_dir)
            processes += [process for process, _ in started]
            endpoints += [endpoint for _, endpoint in started]
            wait_ready([endpoint for _, endpoint in started], timeout, [process for process, _ in started])
    except BaseException:
        stop_switches(processes)
        raise
    return processes, endpoints


def _start(cards: list[tuple[str, int]], program: Path, log_dir: Path) -> list:
    started = []
    for name, card_id in cards:
        port = free_port()
        command = [
            *SWITCH,
            "--device-id",
            str(card_id),
            "--no-side-channel",
            str(program),
            "--",
            "--grpc-server-addr",
            f"127.0.0.1:{port}",
            "--priority-queues",
            "8",
        ]
        log = open(log_dir / f"{name}.log", "w")  # noqa: SIM115 - closed with the process
        process = subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
        started.append(((process, log), CardEndpoint(name, card_id, card_id, f"127.0.0.1:{port}")))
    return started


def start_switch_groups(
    cards: list[tuple[str, int]], program: Path, log_dir: Path, processes: int, timeout: float = 120.0
) -> tuple[list, list[CardEndpoint]]:
    """The cards spread round-robin over `processes` multi-card switch processes (``--cards``, no
    data-plane interfaces), each on its own loopback port; returns processes and endpoints."""
    groups = [cards[i::processes] for i in range(processes) if cards[i::processes]]
    started: list = []
    endpoints: list[CardEndpoint] = []
    firsts: list[CardEndpoint] = []
    try:
        for number, group in enumerate(groups):
            port = free_port()
            cards_file = log_dir / f"p{number}.cards.json"
            write_cards_file(cards_file, [CardConfig(card_id) for _name, card_id in group])
            command = [*SWITCH, "--cards", str(cards_file), str(program)]
            command += ["--", "--grpc-server-addr", f"127.0.0.1:{port}", "--priority-queues", "8"]
            log = open(log_dir / f"p{number}.log", "w")  # noqa: SIM115 - closed with the process
            started.append((subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT), log))
            address = f"127.0.0.1:{port}"
            group_endpoints = [CardEndpoint(name, card_id, card_id, address) for name, card_id in group]
            endpoints += group_endpoints
            firsts.append(group_endpoints[0])
        wait_ready(firsts, timeout, started)
    except BaseException:
        stop_switches(started)
        raise
    return started, endpoints


def wait_ready(endpoints: list[CardEndpoint], timeout: float, processes: list) -> None:
    deadline = time.monotonic() + timeout
    for endpoint, (process, log) in zip(endpoints, processes, strict=True):
        host, port = endpoint.grpc_address.rsplit(":", 1)
        while True:
            try:
                socket.create_connection((host, int(port)), timeout=0.5).close()
                break
            except OSError:
                if process.poll() is not None:
                    raise RuntimeError(
                        f"{endpoint.name} ended (exit {process.returncode}); see {log.name}"
                    ) from None
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{endpoint.name} did not open {endpoint.grpc_address}") from None
                time.sleep(0.1)


def processes_cpu(pids: list[int]) -> float:
    """CPU seconds (user + system) the processes `pids` have used so far."""
    return sum(process_cpu_s(pids).values())


def stop_switches(processes: list) -> None:
    for process, _log in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process, log in processes:
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def run_case(
    name: str,
    batch_size: int,
    workers: int,
    processes: int = 0,
    verify: bool = True,
    pipeline: str = "push",
    per_process: int = WORKERS_PER_ADDRESS,
) -> dict:
    """One install case; `processes` 0 starts a process per card, else that many multi-card processes;
    `pipeline` as TwinController.apply takes it ("push", as the emulation installs, or "auto");
    `per_process`: cards of one switch process written at once."""
    build, algorithm, switch_to = CASES[name]
    topology = build()
    tables = compute_tables(topology, algorithm)
    program = compile_card_program(CARD_PROGRAM, "embedded")
    plans = plan_cards(topology, tables)
    entries = sum(len(plan.entries) + 1 for plan in plans.values())
    cards = sorted((card.name, card.card_id) for card in topology.cards.values())
    with tempfile.TemporaryDirectory(prefix="twinnet-bench-") as logs:
        started = time.monotonic()
        if processes:
            switches, endpoints = start_switch_groups(cards, program.source, Path(logs), processes)
        else:
            switches, endpoints = start_switches(cards, program.source, Path(logs))
        try:
            boot = time.monotonic() - started
            pids = [process.pid for process, _log in switches]
            idle_cpu = processes_cpu(pids)
            time.sleep(IDLE_SECONDS)  # what the switches use doing nothing, the reference for their CPU
            idle_cpu = (processes_cpu(pids) - idle_cpu) / IDLE_SECONDS
            begin, cpu, switch_cpu = time.monotonic(), time.process_time(), processes_cpu(pids)
            with TwinController(
                endpoints, program, batch_size=batch_size, workers=workers, workers_per_address=per_process
            ) as controller:
                report = controller.apply(plans, pipeline=pipeline, label=f"install {algorithm}")
                installed = time.monotonic() - begin
                controller_cpu = time.process_time() - cpu
                switch_cpu = processes_cpu(pids) - switch_cpu
                report.raise_for_errors()
                verify_seconds = None
                if verify:
                    verify_start = time.monotonic()
                    verified = controller.verify_plans(plans)
                    verify_seconds = time.monotonic() - verify_start
                    if not verified.ok:
                        raise SystemExit(f"verify found differences: {verified.summary()}")
                live = None
                if switch_to:  # re-install another algorithm on the running cards: read back, write the diff
                    other = compute_tables(topology, switch_to)
                    live_start = time.monotonic()
                    switched = controller.reinstall(topology, other)
                    live = (switch_to, time.monotonic() - live_start, switched.written)
                    switched.raise_for_errors()
                    if not controller.verify(topology, other).ok:
                        raise SystemExit(f"after switching to {switch_to}, the cards differ from the model")
        finally:
            stop_switches(switches)
    return {
        "case": name,
        "processes": processes or len(cards),
        "switch_cpu_s": switch_cpu,
        "switch_idle_cpu": idle_cpu,
        "cards": len(cards),
        "entries": entries,
        "route_entries": len(tables),
        "switch_start_s": boot,
        "install_s": installed,
        "entries_per_s": entries / installed,
        "controller_cpu_s": controller_cpu,
        "verify_s": verify_seconds,
        "verified_per_s": entries / verify_seconds if verify_seconds else None,
        "live": live,
    }


def run_table_ops(batch_size: int, count: int = 1000) -> dict:
    """Times of INSERT, MODIFY and DELETE of `count` route entries in a full 65,536-entry table (one card)."""
    program = compile_card_program(CARD_PROGRAM, "embedded")
    index = P4InfoIndex(program.p4info)
    size = index.table_named(card.ROUTE).size
    specs = [EntrySpec(card.ROUTE, (1, pe, 0), card.SET_ROUTE, (2, 0)) for pe in range(size)]
    changed = [EntrySpec(spec.table, spec.match, card.SET_ROUTE, (3, 1)) for spec in specs]
    with tempfile.TemporaryDirectory(prefix="twinnet-bench-") as logs:
        processes, (endpoint,) = start_switches([("c1", 1)], program.source, Path(logs))
        connection = CardConnection(endpoint, index)
        try:
            connection.open()
            connection.set_pipeline(program.p4info, program.device_config)

            def write(kind: int, entries: list[EntrySpec]) -> float:
                updates = [spec_update(index, kind, spec) for spec in entries]
                begin = time.monotonic()
                failures = connection.write(updates, lambda i: entries[i].describe(), batch_size)
                seconds = time.monotonic() - begin
                if failures:
                    raise SystemExit(f"{len(failures)} updates failed, first: {failures[0]}")
                return seconds

            write(INSERT, specs[: size - count])  # the table, 1,000 below its size
            figures = {"size": size, "count": count}
            figures["insert_s"] = write(INSERT, specs[size - count :])  # fills it
            spread = range(0, size, size // count)[:count]  # entries from all over the table
            figures["modify_s"] = write(MODIFY, [changed[i] for i in spread])
            figures["delete_s"] = write(DELETE, [specs[i] for i in spread])
        finally:
            connection.close()
            stop_switches(processes)
    return figures


def verified_text(figures: dict) -> str:
    if figures["verify_s"] is None:
        return "not verified"
    return f"read back and verify {figures['verify_s']:.2f} s = {figures['verified_per_s']:.0f} entries/s"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", choices=[*sorted(CASES), TABLE_OPS], action="append")
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)
    parser.add_argument("--workers", type=int, default=DEFAULT_WORKERS)
    parser.add_argument(
        "--processes", type=int, default=0, help="multi-card switch processes (0: one process per card)"
    )
    parser.add_argument("--no-verify", action="store_true", help="skip reading every entry back")
    parser.add_argument(
        "--pipeline", choices=("push", "auto"), default="push", help="push the program first (as runs do)"
    )
    parser.add_argument(
        "--per-process",
        default=str(WORKERS_PER_ADDRESS),
        help="cards of one switch process written at once; a list (3,8) runs each case once per value",
    )
    args = parser.parse_args()
    print(
        f"machine: {os.cpu_count()} CPUs; {args.batch_size} updates per WriteRequest, "
        f"at most {args.workers} cards at once, "
        + (f"cards in {args.processes} processes" if args.processes else "one process per card")
        + f", pipeline {args.pipeline}"
    )
    for name in args.case or [*DEFAULT_CASES, TABLE_OPS]:
        if name == TABLE_OPS:
            ops = run_table_ops(args.batch_size)
            count, insert, modify, delete = ops["count"], ops["insert_s"], ops["modify_s"], ops["delete_s"]
            print(
                f"{TABLE_OPS}: route table of {ops['size']} entries, {count} updates each: "
                f"INSERT {insert:.3f} s = {count / insert:.0f}/s, "
                f"MODIFY {modify:.3f} s = {count / modify:.0f}/s, "
                f"DELETE {delete:.3f} s = {count / delete:.0f}/s "
                f"(MODIFY {insert / modify:.2f}x, DELETE {insert / delete:.2f}x the speed of INSERT)",
                flush=True,
            )
            continue
        for per_process in [int(value) for value in args.per_process.split(",")]:
            report_case(args, name, per_process)
    return 0


def report_case(args: argparse.Namespace, name: str, per_process: int) -> None:
    """Run one install case and print its figures."""
    figures = run_case(
        name, args.batch_size, args.workers, args.processes, not args.no_verify, args.pipeline, per_process
    )
    per_entry = 1e6 / figures["entries"]
    print(
        f"{figures['case']}: {figures['cards']} cards in {figures['processes']} processes "
        f"(at most {per_process} of a process at once), "
        f"{figures['entries']} entries ({figures['route_entries']} route entries); "
        f"switches up in {figures['switch_start_s']:.1f} s; "
        f"install {figures['install_s']:.2f} s end to end = {figures['entries_per_s']:.0f} entries/s "
        f"(CPU per entry: controller {figures['controller_cpu_s'] * per_entry:.1f} us, "
        f"switches {figures['switch_cpu_s'] * per_entry:.1f} us, of which idle "
        f"{figures['switch_idle_cpu'] * figures['install_s'] * per_entry:.1f} us); " + verified_text(figures),
        flush=True,
    )
    if figures["live"]:
        algorithm, seconds, written = figures["live"]
        print(f"  live switch to {algorithm}: {written} updates (read back, diff, write) in {seconds:.2f} s")


if __name__ == "__main__":
    sys.exit(main())
