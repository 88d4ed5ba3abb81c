"""Many cards per switch process: which cards share a ``twinnet-switch``, and how it is started.

One embedded switch process hosts a group of cards, as one Open vSwitch daemon serves
many bridges: one P4Runtime server (each request routed by device id), one forwarding
loop over every port of every card, one side channel per card and one for the process
(``--process-control``, the health of all its cards in one answer). A group is started
with ``twinnet-switch --cards FILE`` (p4switch.daemon.host_config writes the file).

Cards are spread over the processes in blocks of consecutive card ids, so a twin pair
(cards 2k and 2k+1) and its neighbours share a process; the blocks differ in size by at
most one card. bmv2 keeps one process per card.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from topologies.errors import TwinnetError

#: Cards the forwarding loop of one process serves well at most (beyond, another process).
MAX_CARDS_PER_PROCESS = 1024


class GroupError(TwinnetError, ValueError):
    """A bad request for the number of switch processes."""


def default_process_count() -> int:
    """One switch process per CPU core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def check_process_count(processes: int | None, cards: int) -> int:
    """The number of switch processes for `cards` cards: as given or the default; GroupError if bad."""
    if processes is None:  # one per core, and more when a process would get too many cards
        processes = max(default_process_count(), -(-cards // MAX_CARDS_PER_PROCESS))
    if isinstance(processes, bool) or not isinstance(processes, int) or processes < 1:
        raise GroupError(f"--switch-processes must be a positive integer, got {processes!r}")
    processes = min(processes, max(1, cards))
    if cards > processes * MAX_CARDS_PER_PROCESS:
        raise GroupError(
            f"{cards} cards on {processes} switch processes is more than {MAX_CARDS_PER_PROCESS} "
            "per process: give more --switch-processes"
        )
    return processes


def spread(card_ids: Sequence[int], processes: int) -> list[list[int]]:
    """Blocks of consecutive card ids (in the order given), one per process, sizes differing by <= 1."""
    count = len(card_ids)
    processes = max(1, min(processes, count))
    base, extra = divmod(count, processes)
    blocks, start = [], 0
    for index in range(processes):
        size = base + (1 if index < extra else 0)
        blocks.append(list(card_ids[start : start + size]))
        start += size
    return [block for block in blocks if block]


class CardGroup:
    """One switch process and the cards it hosts.

    ``card_ids``/``card_names``: the cards, planned before any node exists; ``cards``: their
    EmbeddedSwitch nodes once created; ``grpc_address``: the process's one P4Runtime
    address; ``control``: its process side channel (``unix:/path``); ``cards_file``: the
    ``--cards`` file.
    """

    def __init__(
        self,
        index: int,
        card_ids: Sequence[int],
        card_names: Sequence[str],
        *,
        grpc_address: str,
        control: str,
        cards_file: Path,
        log_path: Path,
        run_env: Mapping[str, str],
    ) -> None:
        self.index = index
        self.card_ids = list(card_ids)
        self.names = list(card_names)
        self.cards: list[Any] = []
        self.grpc_address = grpc_address
        self.control = control
        self.cards_file = cards_file
        self.log_path = log_path
        self.run_env = dict(run_env)
        self.process: subprocess.Popen | None = None

    @property
    def name(self) -> str:
        return f"p{self.index}"

    def command_line(self) -> list[str]:
        """``twinnet-switch --cards FILE --process-control C PROGRAM -- <the cards' shared options>``."""
        first = self.cards[0]
        command = [*first.program_command(), "--cards", str(self.cards_file)]
        command += ["--process-control", str(self.control)]
        if first.log_console:
            command.append("--log-console")
        command += [str(first.program.device_config), "--", *first.shared_target_arguments()]
        return command

    def write_cards_file(self) -> None:
        from p4switch.daemon.host_config import CardConfig, write_cards_file

        self.cards_file.parent.mkdir(parents=True, exist_ok=True)
        write_cards_file(
            self.cards_file,
            [
                CardConfig(
                    device_id=card.device_id,
                    interfaces=card.data_ports(),
                    control_address=str(card.control_target),
                )
                for card in self.cards
            ],
        )

    def start(self) -> None:
        """Write the cards file, launch the process and hand it to every card; returns at once."""
        from emulation.switches import launch_switch_process

        self.write_cards_file()
        self.process = launch_switch_process(self.command_line(), self.log_path, self.run_env)
        for card in self.cards:
            card.process = self.process
            card.killed = False

    def is_alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def health(self, timeout: float) -> dict[str, Any]:
        """The process side channel's health answer (the loop, every card); OSError or ValueError if none."""
        from p4switch.daemon.side_channel import request

        return request(self.control, {"cmd": "health"}, timeout=timeout)
