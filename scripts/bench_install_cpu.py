#!/usr/bin/env python3
"""CPU per route entry of a table install, each side alone, in one process (no gRPC, no other processes).

    .venv/bin/python scripts/bench_install_cpu.py                 # 3DT 4x4x4 DORT, 8 cards
    .venv/bin/python scripts/bench_install_cpu.py --cards 32 --batch-size 2000

Controller: the updates of a card's plan (``TwinController._updates_for`` against an
empty card) and the serialised WriteRequests (``CardConnection.request_bytes``), as
the install sends them. Switch: those bytes parsed and applied by the P4Runtime
service (``P4RuntimeService`` over a fresh pipeline of the card program, as a Write
RPC runs them: the route entries read from the request's bytes, ``server.Updates``). The
reference, measured in the same run, is the generic path: one ``p4runtime_pb2.Update`` per
entry built field by field (``translate.spec_update``)
and written update by update by the entities without their fast path. Prints microseconds per
entry for each; the sum of the fast columns is what an install costs per entry besides
gRPC's own transport.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from p4.v1 import p4runtime_pb2  # noqa: E402

from controller.compile import compile_card_program  # noqa: E402
from controller.install import DEFAULT_BATCH_SIZE, CardResult, TwinController  # noqa: E402
from controller.p4runtime_conn import CardConnection, CardEndpoint  # noqa: E402
from controller.routing import compute_tables  # noqa: E402
from controller.translate import default_entry, spec_update, update  # noqa: E402
from controller.twins import plan_cards  # noqa: E402
from p4src import CARD_PROGRAM  # noqa: E402
from p4src.card import CARD_CONFIG, SET_CARD  # noqa: E402
from p4switch.daemon.program import LoadedConfig, PipelineSlot  # noqa: E402
from p4switch.p4runtime.info import P4InfoIndex  # noqa: E402
from p4switch.p4runtime.server import P4RuntimeService, Updates  # noqa: E402
from topologies.build import build_topology  # noqa: E402


def cpu(function) -> tuple[float, object]:
    """(CPU seconds, result) of function()."""
    begin = time.process_time()
    result = function()
    return time.process_time() - begin, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dims", default="4x4x4")
    parser.add_argument("--algorithm", default="dort")
    parser.add_argument("--cards", type=int, default=8, help="cards measured (their plans, in turn)")
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)
    args = parser.parse_args()
    topology = build_topology("ndt", dims=args.dims, config="cbest")
    plans = plan_cards(topology, compute_tables(topology, args.algorithm))
    names = sorted(plans)[: args.cards]
    program = compile_card_program(CARD_PROGRAM, "embedded")
    from p4switch import compile_program

    compiled = compile_program(str(program.source))
    index = P4InfoIndex(compiled.p4info)
    endpoints = [CardEndpoint(name, 1, 1, "unused") for name in names]
    controller = TwinController(endpoints, program)
    figures = dict.fromkeys(
        ("build", "serialize", "generic", "switch", "switch_protobuf", "switch_generic"), 0.0
    )
    entries = 0
    for name in names:
        plan = plans[name]
        seconds, built = cpu(lambda: controller._updates_for(plan, {}, {}, CardResult(name)))  # noqa: B023
        figures["build"] += seconds
        updates, described = built
        connection = CardConnection(endpoints[0], controller.index)
        seconds, requests = cpu(
            lambda: [  # noqa: B023
                connection.request_bytes(updates[start : start + args.batch_size])  # noqa: B023
                for start in range(0, len(updates), args.batch_size)  # noqa: B023
            ]
        )
        figures["serialize"] += seconds
        kinds = [p4runtime_pb2.Update.FromString(data).type for data in updates]
        seconds, generic = cpu(
            lambda: [  # noqa: B023
                update(kind, default_entry(index, CARD_CONFIG, SET_CARD, plan.config))  # noqa: B023
                if isinstance(spec, str)
                else spec_update(index, kind, spec)
                for kind, spec in zip(kinds, described, strict=True)  # noqa: B023
            ]
        )
        figures["generic"] += seconds
        entries += len(updates)
        for key in ("switch", "switch_generic"):
            slot = PipelineSlot()
            slot.commit(LoadedConfig(compiled, index, compiled.p4info, b"", 0))
            service = P4RuntimeService(1, slot)
            if key == "switch_generic":
                entities = slot.require_entities()
                entities.exact = {}  # the generic path only (what the switch did before its fast path)
                seconds, _ = cpu(lambda: [entities.write(u) for u in generic])  # noqa: B023
            else:

                def apply(requests=requests, service=service) -> None:
                    for data in requests:
                        request = p4runtime_pb2.WriteRequest.FromString(data)
                        updates = Updates(request, data, service.slot.require_entities())
                        errors = service._write_each(updates)
                        if any(errors):
                            raise SystemExit(f"rejected: {next(e for e in errors if e)}")

                seconds, _ = cpu(apply)
            figures[key] += seconds
    per = {key: value / entries * 1e6 for key, value in figures.items()}
    print(
        f"3DT {args.dims} {args.algorithm}: {len(names)} cards, {entries} updates, "
        f"{args.batch_size} per WriteRequest; CPU us per entry: "
        f"controller {per['build'] + per['serialize']:.1f} (updates {per['build']:.1f}, "
        f"WriteRequests {per['serialize']:.1f}; reference spec_update alone {per['generic']:.1f}), "
        f"switch {per['switch']:.1f} (parse and apply; reference update by update "
        f"{per['switch_generic']:.1f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
