"""The ``twinnet`` command: one sub-command per job, each defined in the module that does the job.

Each module listed in SUBCOMMANDS provides ``add_arguments(parser)`` and
``main(args) -> int`` and imports nothing heavy at module level, so that
``twinnet topo`` does not load Mininet or scapy.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from p4switch.errors import P4SwitchError
from topologies.errors import TwinnetError

#: sub-command -> (module, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "topo": ("topologies.cli", "describe, list or draw a topology (no emulation)"),
    "analyze": ("controller.analysis.cli", "route tables, paths, deadlock check, metrics and loads"),
    "clean": ("emulation.clean", "remove what a crashed twinnet network left (processes, interfaces, state)"),
    "cost": ("topologies.cost_cli", "fat-tree cost and optimum radix, monolithic vs twin; BvN link degrees"),
    "shell": ("emulation.shell_cli", "p4runtime-shell on a card of the running network (read-only default)"),
    "cli": ("emulation.mininet_cli", "Mininet's CLI on a routed network, plus path, load, counters"),
    "run": ("emulation.run_cli", "emulate a network: send probes, compare their paths with the model"),
    "sweep": (
        "emulation.sweep_cli",
        "offered load against accepted traffic and latency on rate-limited links",
    ),
    "collective": (
        "emulation.collective_cli",
        "broadcast, reduce, allgather, all-to-all: completion time on rate-limited links",
    ),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every sub-command; with `command`, only that one's module is imported for its
    options (the others are listed by name: importing e.g. scapy for ``analyze`` would cost seconds)."""
    parser = argparse.ArgumentParser(
        prog="twinnet",
        description="Emulate interconnection networks of twin switches with P4 cards.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        sub = commands.add_parser(name, help=help_text, description=help_text)
        if command is None or name == command:
            module = importlib.import_module(module_name)
            module.add_arguments(sub)
            sub.set_defaults(_module=module)
    return parser


def _command_of(argv: list[str]) -> str | None:
    """The sub-command named in `argv` (its first word that is one), or None."""
    for word in argv:
        if word in SUBCOMMANDS:
            return word
        if not word.startswith("-"):
            return None
    return None


def main(argv: list[str] | None = None) -> int:
    """Run one sub-command; bad input and environment problems (twinnet's and the switch's errors,
    ValueError, OSError) end as one line ``twinnet COMMAND: error: ...`` and exit status 2."""
    words = sys.argv[1:] if argv is None else argv
    parser = build_parser(_command_of(words))
    args = parser.parse_args(words)
    try:
        return int(args._module.main(args) or 0)
    except BrokenPipeError:  # output piped into `head` and the like: not an error
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print("twinnet: interrupted", file=sys.stderr)
        return 130
    except (TwinnetError, P4SwitchError, ValueError, OSError) as error:  # a message, not a trace
        print(f"twinnet {args.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
