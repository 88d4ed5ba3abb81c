"""Mininet switch classes for P4 cards: bmv2's ``simple_switch_grpc`` and the embedded ``twinnet-switch``.

A card is a Mininet :class:`~mininet.node.Switch` in the root namespace whose data
ports are its interfaces ``c<id>-eth<p>`` (port p) and whose switch process is
started as simple_switch_grpc's command line has it::

    simple_switch_grpc --device-id N -i 1@c3-eth1 -i 2@c3-eth2 ... --thrift-port T card.json \\
        -- --grpc-server-addr 127.0.0.1:G --priority-queues 8
    twinnet-switch     --device-id N -i 1@c3-eth1 ...            --thrift-port T card.p4 \\
        -- --grpc-server-addr 127.0.0.1:G --priority-queues 8

Device id = card id. By default (a network's ``control="unix"``) P4Runtime listens on
``unix:<socket_dir>/<card>.p4rt`` and the embedded target's JSON side channel (queue
counters and rates) on ``unix:<socket_dir>/<card>.ctl``, in a folder only the network's
owner can enter; with ``control="tcp"`` (and always for bmv2's Thrift server), on
127.0.0.1:(:data:`GRPC_PORT_BASE` + card id) and 127.0.0.1:(:data:`SIDE_CHANNEL_PORT_BASE` +
card id). Both bases stay below Linux's ephemeral port range (32768-60999) so that no
client connection takes them.

Starting is split in two so that a network starts all its cards at once:
:meth:`P4CardSwitch.start` launches the process and returns; :func:`wait_until_ready`
waits, with one deadline for all, until every card's gRPC address accepts connections,
and fails with the card's name and log file if a process dies or the deadline passes.
:func:`stop_switches` stops many at once (SIGTERM, then SIGKILL after a grace period).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from mininet.node import Switch

from emulation.state import MarkedPopenMixin
from topologies.errors import TwinnetError

if TYPE_CHECKING:
    from emulation.capacity import SwitchMemory
    from emulation.switch_groups import CardGroup

#: P4Runtime port of card i: GRPC_PORT_BASE + i, on 127.0.0.1.
GRPC_PORT_BASE = 20000
#: bmv2 Thrift / embedded side-channel port of card i: SIDE_CHANNEL_PORT_BASE + i, on 127.0.0.1.
SIDE_CHANNEL_PORT_BASE = 24000
#: Cards a machine can number under these bases (the ports must stay below 32768).
MAX_CARD_ID = 32767 - SIDE_CHANNEL_PORT_BASE
#: Priority queues per egress port (docs/contracts.md: VC queues; bmv2's --priority-queues).
PRIORITY_QUEUES = 8
#: Seconds between two rounds of readiness checks (one connect per pending card).
READY_POLL_SECONDS = 0.1
#: Seconds a switch gets between SIGTERM and SIGKILL.
STOP_GRACE_SECONDS = 3.0
#: Seconds a shared switch process gets to answer "kill" for one of its cards.
KILL_TIMEOUT_SECONDS = 2.0
#: Repository root: the embedded target runs from it.
REPO_ROOT = Path(__file__).resolve().parents[1]

Progress = Callable[[str], None]


class SwitchError(TwinnetError, RuntimeError):
    """A card's switch could not be prepared, started or reached."""


@dataclass(frozen=True)
class PreparedProgram:
    """The card program as the target loads it: what the switch is started with, and its P4Info."""

    source: Path
    device_config: Path
    p4info: Path | None


class P4CardSwitch(MarkedPopenMixin, Switch):
    """A card: a Mininet switch whose data plane is a P4 switch process (subclasses give the command).

    Parameters (besides Mininet's): ``card_id``; ``program`` (a :class:`PreparedProgram`);
    ``log_path``; ``grpc_port`` and ``side_channel_port`` (default: the bases + card id);
    ``socket_dir``: a folder only the network's owner can enter, for the Unix sockets of
    P4Runtime (``<name>.p4rt``) and the side channel (``<name>.ctl``, the embedded target;
    bmv2's Thrift server is TCP only); without it both are TCP on loopback;
    ``device_id`` (default: card id); ``log_console`` (the switch logs every packet).
    """

    #: name used by --target and in the state file
    target_name: ClassVar[str] = ""
    #: resident memory of one switch process with the card program loaded, MB (capacity estimate)
    estimated_rss_mb: ClassVar[float] = 100.0
    #: whether the target's side channel can listen on a Unix socket (bmv2's Thrift server cannot)
    unix_side_channel: ClassVar[bool] = False

    def __init__(
        self,
        name: str,
        *,
        card_id: int,
        program: PreparedProgram,
        log_path: str | Path,
        grpc_port: int | None = None,
        side_channel_port: int | None = None,
        socket_dir: str | Path | None = None,
        device_id: int | None = None,
        log_console: bool = False,
        run_env: Mapping[str, str] | None = None,
        target_arguments: Sequence[str] = (),
        **params,
    ) -> None:
        self.target_arguments = list(target_arguments)
        self.card_id = card_id
        #: the private folder of the run's Unix sockets (None: TCP on loopback, reachable by any local user)
        self.socket_dir = Path(socket_dir) if socket_dir is not None else None
        self.device_id = card_id if device_id is None else device_id
        self.program = program
        self.log_path = Path(log_path)
        self.grpc_port = GRPC_PORT_BASE + card_id if grpc_port is None else grpc_port
        if side_channel_port is None:
            side_channel_port = SIDE_CHANNEL_PORT_BASE + card_id
        self.side_channel_port = side_channel_port
        self.log_console = log_console
        self.process: subprocess.Popen | None = None
        self.killed = False
        params.setdefault("inNamespace", False)
        params.setdefault("dpid", f"{card_id + 1:x}")
        super().__init__(name, run_env=run_env, **params)
        self._made = True

    # -- Mininet's node shell: only when a command needs it -----------------------

    def startShell(self, mnopts=None) -> None:  # noqa: N802 - Mininet's method name
        """No shell at creation: a card lives in the root namespace and twinnet runs no command in it.

        A bash shell per card costs ~0.45 MB PSS and a process (1,024 cards: ~0.5 GB);
        Mininet's CLI gets one on the card's first command (:meth:`sendCmd`).
        """
        if getattr(self, "_shell_wanted", False):
            super().startShell(mnopts)

    def cmd(self, *args, **kwargs) -> str | None:
        """Run a command in the card's shell, started on first use (``ifconfig lo up`` of Mininet's
        own set-up, which the root namespace does not need, is skipped while the node is made)."""
        if self.shell is None:
            if not getattr(self, "_made", False):
                return ""
            self._start_shell_now()
        return super().cmd(*args, **kwargs)

    def sendCmd(self, *args, **kwargs) -> None:  # noqa: N802 - Mininet's method name
        if self.shell is None:
            self._start_shell_now()
        super().sendCmd(*args, **kwargs)

    def _start_shell_now(self) -> None:
        self._shell_wanted = True
        self.startShell()

    # -- what subclasses say ----------------------------------------------------

    @classmethod
    def memory_plan(cls, cards: int, processes: int | None = None, control: str = "unix") -> SwitchMemory:
        """What `cards` cards' switch processes cost (capacity estimate): one process per card here."""
        from emulation.capacity import SwitchMemory

        return SwitchMemory(card_mb=cls.estimated_rss_mb)

    def program_command(self) -> list[str]:
        """The switch executable's argv prefix (``simple_switch_grpc``, or ``twinnet-switch``'s)."""
        raise NotImplementedError

    def command_line(self) -> list[str]:
        """The switch process's argv: simple_switch_grpc's form, which both targets take."""
        command = [*self.program_command(), "--device-id", str(self.device_id)]
        command += self.interface_arguments()
        command += ["--thrift-port", str(self.side_channel_port)]
        if self.log_console:
            command.append("--log-console")
        command += self.control_arguments()
        command += [str(self.program.device_config), "--", *self.shared_target_arguments()]
        return command

    def shared_target_arguments(self) -> list[str]:
        """The target options after ``--``: P4Runtime address, priority queues, what the run adds."""
        return [
            "--grpc-server-addr",
            self.grpc_address,
            "--priority-queues",
            str(PRIORITY_QUEUES),
            *self.target_arguments,
        ]

    def control_arguments(self) -> list[str]:
        """Options (before ``--``) that put the side channel on a Unix socket, if the target has one."""
        return []

    @classmethod
    def missing(cls) -> str | None:
        """Why this target cannot run here (None if it can)."""
        return None

    @classmethod
    def prepare_program(cls, program: Path, out_dir: Path) -> PreparedProgram:
        """Turn the card program into what the switch loads (compile, P4Info); SwitchError if it cannot."""
        raise NotImplementedError

    def set_port_rates(self, rates: Mapping[int, float | None]) -> None:
        """Set egress rates (packets per second, None = unlimited) of ports; the target's side channel."""
        raise NotImplementedError(f"{type(self).__name__} cannot set port rates")

    # -- common -----------------------------------------------------------------

    @classmethod
    def addresses(
        cls, name: str, socket_dir: Path | None, grpc_port: int, side_channel_port: int
    ) -> tuple[str, int | str]:
        """(P4Runtime address, side channel) of card ``name``: ``unix:<socket_dir>/<name>.p4rt`` (and
        ``.ctl`` where the target's side channel can be a Unix socket), else 127.0.0.1 TCP ports."""
        if socket_dir is None:
            return f"127.0.0.1:{grpc_port}", side_channel_port
        unix_control = f"unix:{socket_dir / f'{name}.ctl'}"
        control: int | str = unix_control if cls.unix_side_channel else side_channel_port
        return f"unix:{socket_dir / f'{name}.p4rt'}", control

    @property
    def grpc_address(self) -> str:
        return self.addresses(self.name, self.socket_dir, self.grpc_port, self.side_channel_port)[0]

    @property
    def control_target(self) -> int | str:
        """Where the side channel listens: ``unix:<socket_dir>/<name>.ctl`` or the Thrift TCP port."""
        return self.addresses(self.name, self.socket_dir, self.grpc_port, self.side_channel_port)[1]

    def data_ports(self) -> list[tuple[int, str]]:
        """(port number, interface name) of every data port, by port number."""
        return [(port, intf.name) for port, intf in sorted(self.intfs.items()) if port > 0]

    def interface_arguments(self) -> list[str]:
        arguments = []
        for port, name in self.data_ports():
            arguments += ["-i", f"{port}@{name}"]
        return arguments

    def start(self, controllers=()) -> None:  # Mininet passes OpenFlow controllers: unused
        """Launch the switch process and return at once (see :func:`wait_until_ready`)."""
        if self.process is not None and self.process.poll() is None:
            raise SwitchError(f"card {self.name}: switch already running (pid {self.process.pid})")
        self.process = launch_switch_process(self.command_line(), self.log_path, self.run_env)
        self.killed = False

    @property
    def switch_pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def is_alive(self) -> bool:
        """Whether the card runs: its switch process runs and the card was not killed."""
        return not self.killed and self.process is not None and self.process.poll() is None

    def accepts_connections(self) -> bool:
        """Whether something accepts connections on the card's gRPC address (Unix socket or TCP port)."""
        return address_open(self.grpc_address)

    def kill(self) -> None:
        """Stop the switch process abruptly (SIGKILL), as a card failure; the interfaces stay."""
        if self.is_alive():
            self.process.kill()
            self.process.wait()
        self.killed = True

    def process_alive(self) -> bool:
        """Whether the card's switch process runs (killed or not)."""
        return self.process is not None and self.process.poll() is None

    def stop(self, deleteIntfs: bool = False) -> None:
        """Stop the switch process (SIGTERM, SIGKILL after a grace period); optionally its interfaces."""
        stop_switches([self])
        if deleteIntfs:
            self.deleteIntfs()

    def log_tail(self, lines: int = 12) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def describe_failure(self, what: str) -> str:
        tail = self.log_tail()
        return (
            f"card {self.name} ({self.target_name} switch, device {self.device_id}, "
            f"gRPC {self.grpc_address}) {what}; log: {self.log_path}"
            + (f"\n--- last lines of {self.log_path.name} ---\n{tail}" if tail else "")
        )


def launch_switch_process(command: list[str], log_path: Path, run_env: Mapping[str, str]) -> subprocess.Popen:
    """Start a switch process (own session, marked with the run, logging to `log_path`); return at once."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), environment.get("PYTHONPATH")]))
    environment.update(run_env)
    with open(log_path, "wb") as log:
        log.write((" ".join(command) + "\n").encode())
        log.flush()
        return subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=environment,
            cwd=log_path.parent,
            start_new_session=True,
        )


class EmbeddedSwitch(P4CardSwitch):
    """The embedded P4 target (``twinnet-switch``, p4switch): runs the .p4 source directly."""

    target_name = "embedded"
    unix_side_channel = True
    #: one twinnet-switch with p4src/card.p4 loaded measures 48-51 MB RSS idle (scripts/bench_bringup.py,
    #: of which shared libraries are counted in every process); room for tables and full queues
    estimated_rss_mb = 56.0
    #: the daemon's module, used when ``twinnet-switch`` is not on PATH
    MODULE = "p4switch.daemon.cli"
    #: one process hosts many cards (``twinnet-switch --cards``; emulation.switch_groups)
    shares_processes = True
    #: a card in a shared process before its tables, a shared process before its cards (MB), and an
    #: installed entry (KB): 3DT 8x8x8, two processes, 2.1M DORT entries: 0.34 GB RSS up, 3.04 GB
    #: installed (scripts/bench_bringup.py --install measures it)
    estimated_card_mb = 0.25
    estimated_process_mb = 50.0
    estimated_entry_kb = 1.3

    @classmethod
    def memory_plan(cls, cards: int, processes: int | None = None, control: str = "unix") -> SwitchMemory:
        """Shared processes (one per core unless told) unless ``control`` is tcp: one process per card."""
        from emulation.capacity import SwitchMemory
        from emulation.switch_groups import check_process_count

        if control == "tcp":
            return super().memory_plan(cards, processes, control)
        count = check_process_count(processes, cards)
        return SwitchMemory(cls.estimated_card_mb, cls.estimated_process_mb, count, cls.estimated_entry_kb)

    @classmethod
    def executable(cls) -> list[str] | None:
        """The switch's own fast environment when scripts/setup.sh built it, else this interpreter."""
        if importlib.util.find_spec(cls.MODULE) is None:
            return None
        from emulation.switch_launcher import switch_command

        return switch_command()

    @classmethod
    def missing(cls) -> str | None:
        if cls.executable() is None:
            return f"the embedded switch (twinnet-switch, {cls.MODULE}) is not installed"
        return None

    @classmethod
    def prepare_program(cls, program: Path, out_dir: Path) -> PreparedProgram:
        if program.suffix != ".p4":
            raise SwitchError(f"the embedded target runs P4_16 sources (.p4), got {program}")
        p4info = None
        try:
            from p4switch import compile_program
        except ImportError:  # the target's compiler API is optional: the switch compiles the program itself
            compile_program = None
        if compile_program is not None:
            try:
                compiled = compile_program(str(program))
            except Exception as error:  # the compiler's own error names file, line and column
                raise SwitchError(f"cannot compile {program} for the embedded target: {error}") from error
            from google.protobuf import text_format

            p4info = out_dir / f"{program.stem}.p4info.txt"
            p4info.write_text(text_format.MessageToString(compiled.p4info))
        return PreparedProgram(program, program, p4info)

    def __init__(self, name: str, *, group: CardGroup | None = None, **params) -> None:
        #: the switch process this card shares with other cards (None: a process of its own)
        self.group = group
        super().__init__(name, **params)

    @property
    def grpc_address(self) -> str:
        """The card's P4Runtime address: its own, or its process's (shared, routed by device id)."""
        if self.group is not None:
            return self.group.grpc_address
        return super().grpc_address

    def start(self, controllers=()) -> None:
        """Launch the card's own process, or its group's if the group has none running yet."""
        if self.group is None:
            super().start(controllers)
        elif not self.group.is_alive():
            self.group.start()

    def kill(self) -> None:
        """Fail the card abruptly: its own process SIGKILLed, or in a shared process the card alone.

        In a shared process the card's side channel is told ``kill``: its ports go silent,
        its queued frames are lost, its P4Runtime device is gone; the other cards go on.
        """
        if self.group is None:
            super().kill()
            return
        if self.is_alive():
            from p4switch.daemon.side_channel import request

            try:
                answer = request(self.control_target, {"cmd": "kill"}, timeout=KILL_TIMEOUT_SECONDS)
            except (OSError, ValueError) as error:
                answer = {"ok": False, "error": str(error)}
            if not answer.get("ok"):
                raise SwitchError(
                    f"card {self.name}: its switch process did not kill it: {answer.get('error')}"
                )
        self.killed = True

    def program_command(self) -> list[str]:
        return self.executable() or ["twinnet-switch"]

    def control_arguments(self) -> list[str]:
        return ["--side-channel", str(self.control_target)] if self.socket_dir is not None else []

    def set_port_rates(self, rates: Mapping[int, float | None]) -> None:
        from p4switch.daemon.side_channel import request

        for port, rate in rates.items():
            answer = request(
                self.control_target, {"cmd": "set_queue_rate", "rate_pps": rate or None, "port": port}
            )
            if not answer.get("ok"):
                raise SwitchError(
                    f"card {self.name}: cannot set the rate of port {port}: {answer.get('error')}"
                )


class BMv2Switch(P4CardSwitch):
    """bmv2's ``simple_switch_grpc`` with the program compiled by ``p4c`` (JSON + P4Info)."""

    target_name = "bmv2"
    #: simple_switch_grpc with a small program: ~40-60 MB resident
    estimated_rss_mb = 64.0

    @classmethod
    def missing(cls) -> str | None:
        absent = [tool for tool in ("simple_switch_grpc", "p4c") if shutil.which(tool) is None]
        return f"bmv2 needs {' and '.join(absent)} on PATH" if absent else None

    @classmethod
    def prepare_program(cls, program: Path, out_dir: Path) -> PreparedProgram:
        if program.suffix == ".json":
            p4info = next(
                (
                    candidate
                    for candidate in (
                        program.with_suffix(".p4info.txt"),
                        program.with_suffix(".p4info.txtpb"),
                    )
                    if candidate.exists()
                ),
                None,
            )
            return PreparedProgram(program, program, p4info)
        if program.suffix != ".p4":
            raise SwitchError(f"bmv2 takes a P4_16 source (.p4) or p4c's JSON (.json), got {program}")
        from controller.compile import p4c_command, p4c_outputs

        build = out_dir / "p4c"
        build.mkdir(parents=True, exist_ok=True)
        result = subprocess.run(p4c_command(program, build), capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise SwitchError(
                f"p4c cannot compile {program}:\n{result.stderr.strip() or result.stdout.strip()}"
            )
        json_path, p4info = p4c_outputs(program, build)
        return PreparedProgram(program, json_path, p4info)

    def program_command(self) -> list[str]:
        return ["simple_switch_grpc"]

    def set_port_rates(self, rates: Mapping[int, float | None]) -> None:
        lines = [f"set_queue_rate {int(rate) if rate else 0} {port}" for port, rate in rates.items()]
        result = subprocess.run(
            ["simple_switch_CLI", "--thrift-port", str(self.side_channel_port)],
            input="\n".join(lines) + "\n",
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise SwitchError(f"card {self.name}: simple_switch_CLI failed: {result.stderr.strip()}")


#: --target names and their classes ("auto" chooses, see select_target)
SWITCH_CLASSES: dict[str, type[P4CardSwitch]] = {"bmv2": BMv2Switch, "embedded": EmbeddedSwitch}
TARGETS = ("auto", *SWITCH_CLASSES)


def select_target(target: str) -> type[P4CardSwitch]:
    """The switch class for --target: auto = bmv2 when simple_switch_grpc and p4c are on PATH, else embedded.

    Raises SwitchError naming what is missing if the chosen target cannot run here.
    """
    if target == "auto":
        target = "bmv2" if BMv2Switch.missing() is None else "embedded"
    if target not in SWITCH_CLASSES:
        raise SwitchError(f"--target must be one of {', '.join(TARGETS)}, got {target!r}")
    switch_class = SWITCH_CLASSES[target]
    reason = switch_class.missing()
    if reason:
        raise SwitchError(f"target {target} cannot run here: {reason}")
    return switch_class


# -- many switches at once ---------------------------------------------------------


def address_open(address: str, timeout: float = 0.2) -> bool:
    """Whether a connection to ``unix:/path`` or ``HOST:PORT`` is accepted."""
    if not address.startswith("unix:"):
        host, _, port = address.rpartition(":")
        return port_open(int(port), host, timeout)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(timeout)
        try:
            probe.connect(address[len("unix:") :])
        except OSError:
            return False
    return True


def port_open(port: int, host: str = "127.0.0.1", timeout: float = 0.2) -> bool:
    """Whether a TCP connection to host:port is accepted."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(timeout)
        try:
            probe.connect((host, port))
        except OSError:
            return False
    return True


def wait_until_ready(
    switches: Iterable[P4CardSwitch], timeout: float, progress: Progress | None = None
) -> float:
    """Wait until every switch's gRPC port accepts connections; return the seconds waited.

    Raises SwitchError naming the card and its log if a process exits, or naming the
    cards still not ready (and the first one's log) when `timeout` seconds have passed.
    """
    pending = list({id(switch.process): switch for switch in switches}.values())  # one check per process
    total = len(pending)
    start = time.monotonic()
    deadline = start + timeout
    last_report = start
    while pending:
        still = []
        for switch in pending:
            if not switch.process_alive():
                code = switch.process.returncode if switch.process else None
                raise SwitchError(switch.describe_failure(f"exited with status {code} while starting"))
            if not switch.accepts_connections():
                still.append(switch)
        pending = still
        now = time.monotonic()
        if progress and pending and now - last_report >= 2.0:
            progress(f"switch processes ready: {total - len(pending)}/{total} ({now - start:.1f} s)")
            last_report = now
        if not pending:
            break
        if now >= deadline:
            names = ", ".join(switch.name for switch in pending[:8]) + (" ..." if len(pending) > 8 else "")
            raise SwitchError(
                pending[0].describe_failure(
                    f"did not open its gRPC port within {timeout:.0f} s "
                    f"({len(pending)} cards not ready: {names})"
                )
            )
        time.sleep(READY_POLL_SECONDS)
    return time.monotonic() - start


def stop_switches(switches: Iterable[P4CardSwitch], grace: float = STOP_GRACE_SECONDS) -> list[str]:
    """Stop many switch processes at once: SIGTERM all, SIGKILL those left after `grace` s.

    Returns the names of the cards that had to be killed.
    """
    running = [switch for switch in switches if switch.process_alive()]
    running = list({id(switch.process): switch for switch in running}.values())  # a shared process once
    for switch in running:
        with contextlib.suppress(ProcessLookupError):
            switch.process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    while running and time.monotonic() < deadline:
        running = [switch for switch in running if switch.process.poll() is None]
        if running:
            time.sleep(0.05)
    for switch in running:
        with contextlib.suppress(ProcessLookupError):
            switch.process.kill()
    for switch in running:
        switch.process.wait()
    return [switch.name for switch in running]
