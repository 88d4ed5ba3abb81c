"""``twinnet shell CARD``: p4runtime-shell on one card of the running network.

    twinnet shell c3            # inspect c3's tables by hand: table_entry["MyIngress.route"].read(print)
    twinnet shell 3 --write     # card id 3, as primary: writes allowed (the controller loses primacy)

The card's gRPC address, device id and P4Info come from the state file the
network builder writes (emulation.state: ``/tmp/twinnet/current``, or
``--state PATH``). The shell never pushes a pipeline (that would empty the
card's tables) and, by default, arbitrates with an election id below the
controller's (controller.p4runtime_conn.CONTROLLER_ELECTION_ID), so that
while the controller is connected the shell is a backup: it reads, and the
card refuses its writes. ``--write`` takes an election id above the
controller's: the shell becomes primary on purpose.

p4runtime-shell 0.0.6 pins protobuf < 3.21, so it has an environment of its own
(``.venv/shell``, made by scripts/setup.sh): the command runs ``python -m p4runtime_sh``
there, which reads the card's P4Info from the card (GetForwardingPipelineConfig).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from controller.p4runtime_conn import CONTROLLER_ELECTION_ID
from emulation import state as network_state

#: p4runtime-shell's own environment (scripts/setup.sh).
SHELL_ENVIRONMENT = Path(__file__).resolve().parents[1] / ".venv" / "shell"
#: Election id of the read-only shell: below the controller's.
READ_ONLY_ELECTION_ID = (0, 1)
#: Election id of ``--write``: above the controller's.
WRITE_ELECTION_ID = (CONTROLLER_ELECTION_ID[0], CONTROLLER_ELECTION_ID[1] + 1)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("card", metavar="CARD", help="card name (c3) or card id (3)")
    parser.add_argument(
        "--write",
        action="store_true",
        help="arbitrate above the controller's election id: the shell becomes primary and may write",
    )
    parser.add_argument(
        "--state",
        metavar="PATH",
        help="state file of the network (default: the running network's, /tmp/twinnet/current)",
    )
    parser.add_argument(
        "--print-only",
        action="store_true",
        help="print the card's address, device id, election id and P4Info path, and exit",
    )


def find_card(state: Any, card: str) -> Any:
    """The CardState of `card` (a name such as "c3", or a card id) in `state`; KeyError naming the choices."""
    for entry in state.cards:
        if entry.name == card or (card.isdigit() and entry.card_id == int(card)):
            return entry
    known = ", ".join(entry.name for entry in state.cards[:10])
    raise KeyError(
        f"no card {card!r} in run {state.run_id} (cards: {known}{' ...' if len(state.cards) > 10 else ''})"
    )


def load_state(path: str | None) -> Any:
    """The running network's state (the current one, or `path`'s); StateFileError or OSError if none."""
    if path is None:
        network_state.read_current_state()  # a clear error when no network runs
        return network_state.read_live_state(network_state.current_link())
    return network_state.read_live_state(path)


def shell_settings(card_state: Any, write: bool) -> dict[str, Any]:
    """Where and how the shell connects: gRPC address, device id, election id and P4Info path (or None)."""
    p4info = card_state.p4info if card_state.p4info and Path(card_state.p4info).is_file() else None
    return {
        "card": card_state.name,
        "grpc_address": card_state.grpc_address,
        "device_id": card_state.device_id,
        "election_id": WRITE_ELECTION_ID if write else READ_ONLY_ELECTION_ID,
        "p4info": p4info,
    }


def shell_command(settings: dict[str, Any], environment: Path = SHELL_ENVIRONMENT) -> list[str]:
    """p4runtime-shell's command line for these settings (no --config: the shell never pushes a pipeline)."""
    high, low = settings["election_id"]
    return [
        str(environment / "bin" / "python"),
        "-m",
        "p4runtime_sh",
        "--grpc-addr",
        settings["grpc_address"],
        "--device-id",
        str(settings["device_id"]),
        "--election-id",
        f"{high},{low}",
    ]


def run_shell(settings: dict[str, Any], environment: Path = SHELL_ENVIRONMENT) -> int:
    """Replace this process by p4runtime-shell's IPython session on the card; 2 if it is not installed."""
    command = shell_command(settings, environment)
    if not any(environment.glob("lib/python3*/site-packages/p4runtime_sh")):
        print(
            f"twinnet shell: p4runtime-shell is not installed in {environment} (run scripts/setup.sh)",
            file=sys.stderr,
        )
        return 2
    election_id = tuple(settings["election_id"])
    role = "primary: writes allowed" if election_id > CONTROLLER_ELECTION_ID else "backup: read-only"
    print(
        f"twinnet shell: card {settings['card']} at {settings['grpc_address']}, "
        f"device {settings['device_id']}, election id {election_id} ({role})",
        flush=True,
    )
    os.execv(command[0], command)
    return 0  # not reached


def main(args: argparse.Namespace) -> int:
    try:
        state = load_state(args.state)
    except (OSError, network_state.StateFileError) as error:
        print(f"twinnet shell: {error}", file=sys.stderr)
        return 2
    try:
        card_state = find_card(state, args.card)
    except KeyError as error:
        print(f"twinnet shell: {error.args[0]}", file=sys.stderr)
        return 2
    settings = shell_settings(card_state, args.write)
    if args.print_only:
        print(json.dumps(settings))
        return 0
    return run_shell(settings)
