#!/usr/bin/env python3
"""Benchmark of the embedded P4 target's language core: compile time, cache hits and packets per second.

Runs a typical routed packet through the card program (p4src/card.p4) and
through the basic IPv4 forwarder of the tests (tests/p4progs/basic.p4), with
no I/O: pipeline.process() per packet, and ingress() + egress() as the switch
daemon calls them. Times are CPU times of this process (time.process_time);
packet rates are those of the fastest batch of 2000 packets, so that other
load on a shared machine distorts them less.

    .venv/bin/python scripts/bench_pipeline.py [--packets 100000]
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from p4src import CARD_PROGRAM  # noqa: E402
from p4switch import compile_program  # noqa: E402
from p4switch.compiler.compile import clear_memory_cache  # noqa: E402
from p4switch.compiler.parser import _lark  # noqa: E402

CARD = CARD_PROGRAM
BASIC = ROOT / "tests" / "p4progs" / "basic.p4"


def cpu_time(function, repeat: int = 1) -> float:
    """CPU seconds of one call (best of `repeat`)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        function()
        best = min(best, time.process_time() - start)
    return best


def compile_figures(path: Path) -> dict[str, float]:
    """Cold compile (empty caches but the grammar tables), memory cache hit, disk cache hit; seconds."""
    import os

    figures = {}
    with tempfile.TemporaryDirectory() as folder:
        old = os.environ.get("TWINNET_CACHE")
        os.environ["TWINNET_CACHE"] = folder
        try:
            clear_memory_cache()
            figures["compile"] = cpu_time(lambda: compile_program(path))
            figures["memory hit"] = cpu_time(lambda: compile_program(path), repeat=5)
            clear_memory_cache()
            figures["disk hit"] = cpu_time(lambda: compile_program(path))
            figures["new pipeline"] = cpu_time(lambda: compile_program(path).new_pipeline(), repeat=5)
        finally:
            if old is None:
                del os.environ["TWINNET_CACHE"]
            else:
                os.environ["TWINNET_CACHE"] = old
    return figures


def best_rate(run_batch, count: int, batch: int = 2000) -> float:
    """Packets per CPU second of the fastest batch (on a shared machine, the least disturbed one)."""
    best = float("inf")
    for _ in range(max(1, count // batch)):
        start = time.process_time()
        run_batch(batch)
        best = min(best, time.process_time() - start)
    return batch / best


def packets_per_second(pipeline, packet: bytes, port: int, count: int) -> float:
    """process() rate for one packet repeated (CPU time)."""
    process = pipeline.process
    assert process(packet, port), "the benchmark packet must be forwarded"

    def run(batch: int) -> None:
        """One batch of packets."""
        for _ in range(batch):
            process(packet, port)

    return best_rate(run, count)


def split_rate(pipeline, packet: bytes, port: int, count: int) -> float:
    """ingress() + egress() rate, as the switch daemon calls them (CPU time)."""
    ingress, egress = pipeline.ingress, pipeline.egress

    def run(batch: int) -> None:
        """One batch of packets."""
        for _ in range(batch):
            result = ingress(packet, port, 1000)
            egress(result, result.egress_spec, 3, 2, 10, 1010)

    return best_rate(run, count)


def card_setup(pipeline) -> tuple[bytes, int]:
    """Entries of a card on a routed path and a probe with two trace entries arriving on port 2."""
    pipeline.table_set_default("MyIngress.card_config", "MyIngress.set_card", (7, 24))
    pipeline.table_insert(
        "MyIngress.route",
        {"standard_metadata.ingress_port": 2, "hdr.tw.dst_pe": 5, "hdr.tw.rclass": 0},
        "MyIngress.set_route",
        (3, 1),
    )
    pipeline.table_insert(
        "MyIngress.vc_queue", {"hdr.tw.rclass": 0, "hdr.tw.vc": 1}, "MyIngress.set_queue", (1,)
    )
    ethernet = bytes.fromhex("020000000006020000000001") + struct.pack("!H", 0x88B5)
    twinnet = struct.pack("!HHBBBBHI", 5, 0, 0x00, 2, 2, 0, 0, 42) + (1000).to_bytes(6, "big")
    trace = bytes(16) * 2
    return ethernet + twinnet + trace + bytes(64), 2


def basic_setup(pipeline) -> tuple[bytes, int]:
    """Ten prefixes and an IPv4/UDP packet to one of them."""
    for i in range(10):
        pipeline.table_insert(
            "MyIngress.ipv4_lpm",
            {"hdr.ipv4.dstAddr": ((10 << 24) | (i << 16), 16)},
            "MyIngress.ipv4_forward",
            (0x0200000000AA + i, 1 + i),
        )
    ethernet = bytes.fromhex("020000000001020000000002") + struct.pack("!H", 0x0800)
    header = struct.pack(
        "!BBHHHBBH4s4s", 0x45, 0, 20 + 8 + 64, 1, 0, 64, 17, 0, bytes([192, 168, 0, 1]), bytes([10, 5, 1, 2])
    )
    total = sum(struct.unpack("!10H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    header = header[:10] + struct.pack("!H", ~total & 0xFFFF) + header[12:]
    return ethernet + header + struct.pack("!HHHH", 1234, 80, 72, 0) + bytes(64), 1


def main() -> None:
    """Print the figures for the card program and the basic forwarder."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=100_000)
    args = parser.parse_args()
    grammar = cpu_time(lambda: (_lark.cache_clear(), _lark()))
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"machine: {os.cpu_count()} cores, load average {load} (1, 5, 15 min): figures are CPU time")
    print(f"grammar tables (lark, from its cache file when present): {grammar * 1000:.0f} ms")
    programs = [("card.p4", CARD, card_setup), ("basic.p4", BASIC, basic_setup)]
    for label, path, setup in programs:
        if not path.is_file():
            print(f"{label}: not found, skipped")
            continue
        figures = compile_figures(path)
        print(f"{label}: " + ", ".join(f"{name} {value * 1000:.1f} ms" for name, value in figures.items()))
        pipeline = compile_program(path, use_disk_cache=False).new_pipeline()
        packet, port = setup(pipeline)
        rate = packets_per_second(pipeline, packet, port, args.packets)
        split = split_rate(pipeline, packet, port, args.packets)
        print(
            f"{label}: {rate:,.0f} packets/s with process(), {split:,.0f} packets/s with ingress()+egress() "
            f"({len(packet)}-byte packet, one core, CPU time)"
        )


if __name__ == "__main__":
    main()
