#!/usr/bin/env python3
"""Cost of adaptive routing in the card program: frames per CPU-second of its fused driver (no I/O).

    .venv/bin/python scripts/bench_card_adaptive.py [--reference OTHER.p4] [--rounds 7]

Measures, in rounds taken in turn so that load on the machine hits all alike (best
round reported), p4src/card.p4 forwarding a twinnet frame (1) by ``MyIngress.route``
(a deterministic routing, the card's default) and (2) by ``MyIngress.adaptive_route``
with the 3-priority selection over 6 candidate slots; with ``--reference``, the same
deterministic case on another version of the program, e.g. the one before adaptive
routing (``git show main:p4src/card.p4 > /tmp/card-main.p4``). The full switch with
I/O is scripts/bench_switch.py.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from emulation import packets  # noqa: E402
from p4src import CARD_PROGRAM  # noqa: E402
from p4src import card as names  # noqa: E402

DST = 9


def pipeline_of(path: Path, adaptive: bool):
    from p4switch import compile_program

    pipeline = compile_program(str(path)).new_pipeline()
    pipeline.table_set_default(names.CARD_CONFIG, names.SET_CARD, (7, 24))
    for vc in range(8):
        pipeline.table_insert(names.VC_QUEUE, {names.RCLASS: 0, names.VC: vc}, names.SET_QUEUE, (vc,))
    if not adaptive:
        pipeline.table_insert(
            names.ROUTE, {names.INGRESS_PORT: 1, names.DST_PE: DST, names.RCLASS: 0}, names.SET_ROUTE, (2, 0)
        )
        return pipeline
    pipeline.table_set_default(names.SELECTION_CONFIG, names.SET_SELECTION, (4, 64, 0, 1, 2))
    slots = [(2, 2, 0), (2, 3, 0), (3, 2, 1), (3, 3, 1), (4, 4, 2), (4, 5, 2), (0, 0, 0), (0, 0, 0)]
    params = (4, 1) + tuple(value for slot in slots for value in slot)
    pipeline.table_insert(
        names.ADAPTIVE_ROUTE,
        {names.INGRESS_PORT: 1, names.DST_PE: DST, names.RCLASS: 0, names.ESCAPED: 0},
        names.SET_CANDIDATES,
        params,
    )
    return pipeline


def rate(pipeline, frame: bytes, frames: int) -> float:
    run_fused = pipeline.fused_entry_point()

    def admit(egress_port: int, priority: int) -> bool:
        return True

    start = time.process_time()
    for _ in range(frames):
        run_fused(frame, 1, 0, admit, None)
    return frames / (time.process_time() - start)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reference", type=Path, help="another card program to compare (deterministic case)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--frames", type=int, default=20000)
    args = parser.parse_args()
    frame = packets.encode(packets.probe(1, DST, probe_id=1, send_time=0, payload=bytes(20)))
    cases = {
        "card.p4, deterministic (route)": pipeline_of(CARD_PROGRAM, adaptive=False),
        "card.p4, adaptive 3-priority (6 slots)": pipeline_of(CARD_PROGRAM, adaptive=True),
    }
    if args.reference:
        cases[f"{args.reference}, deterministic (route)"] = pipeline_of(args.reference, adaptive=False)
    best = dict.fromkeys(cases, 0.0)
    for _ in range(args.rounds):
        for name, pipeline in cases.items():
            best[name] = max(best[name], rate(pipeline, frame, args.frames))
    print(f"fused driver, best of {args.rounds} rounds of {args.frames} frames (frames per CPU-second):")
    for name, value in best.items():
        print(f"  {value:10.0f}  {name}")
    if args.reference:
        ratio = best["card.p4, deterministic (route)"] / best[f"{args.reference}, deterministic (route)"]
        print(f"  deterministic card.p4 / reference: {ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
