"""Build a running Mininet network of P4 cards and hosts from a topology, and tear it down always.

    from emulation.network import build_network
    from topologies.build import build_topology

    topology = build_topology("ndt", dims="2x4x2")
    with build_network(topology, target="embedded", out_dir="out/run1") as network:
        network.state.cards[0].grpc_address     # "unix:/tmp/twinnet-.../c0.p4rt" (see emulation.state)
        network.host(3).cmd("ping -c1", network.host(5).IP())
        network.kill_card("c7"); network.alive_cards()

:func:`build_network` refuses before anything starts (unknown target, missing program,
not enough memory, another network running, leftovers of a crashed run), then:

1. creates one Mininet switch per card (``c<id>``, root namespace) and one host per
   PE (``h<pe>``, own namespace), in parallel threads;
2. creates every link as a veth pair in one ``ip -batch`` (card port p is
   ``c<id>-eth<p>``; host end ``h<pe>-eth0``), IPv6 and offloads off, MTUs set
   (emulation.links), and registers them with Mininet under the model's port numbers;
3. configures every host (emulation.hosts), all at once;
4. starts every card's switch process at once and waits until every card's gRPC port
   accepts connections (the switches' start-up is CPU-bound: ~0.4 s of CPU each for the
   embedded target, so a 2-core machine needs ~25 s for 128 cards);
5. writes the state file (emulation.state) that the controller and ``twinnet clean`` read,
   before the first node exists and again as pids become known.

Teardown (:meth:`TwinnetNetwork.stop`, the context manager's exit, Ctrl-C, SIGTERM,
SIGHUP, interpreter exit) stops the switches, deletes the run's link group, ends
the hosts' shells (their namespaces go with them), kills any process still marked
with the run, and removes the run's state. A crash that skips all of it is what
``twinnet clean`` is for.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from mininet.link import Intf, Link
from mininet.net import Mininet

from emulation import links as veths
from emulation.capacity import check_memory
from emulation.hosts import TwinnetHost, configure_hosts, disable_ipv6_at_start, host_interface
from emulation.state import (
    CardState,
    HostState,
    NetworkState,
    acquire_network_lock,
    forget_run,
    marked_processes,
    marker_environment,
    namespace_inode,
    new_run_id,
    process_identity,
    processes_in_namespaces,
    write_record,
    write_state,
)
from emulation.switch_groups import CardGroup, GroupError, check_process_count, spread
from emulation.switches import (
    GRPC_PORT_BASE,
    MAX_CARD_ID,
    SIDE_CHANNEL_PORT_BASE,
    P4CardSwitch,
    PreparedProgram,
    SwitchError,
    port_open,
    select_target,
    stop_switches,
    wait_until_ready,
)
from p4src import CARD_PROGRAM
from topologies.errors import TwinnetError
from topologies.model import PortRef, Topology

Progress = Callable[[str], None]

#: The card program every card runs unless told otherwise.
DEFAULT_PROGRAM = CARD_PROGRAM
#: Where a run's logs and records go when no out_dir is given: <this>/<run id>.
DEFAULT_OUT_ROOT = Path("/tmp/twinnet/out")
#: Seconds to wait for another twinnet network to end before refusing.
DEFAULT_LOCK_TIMEOUT = 600.0
#: Signals that interrupt a running network (as Ctrl-C does) and are ignored while it is torn down.
TEARDOWN_IGNORED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: Programs the builder runs: Mininet's mnexec, iproute2's ip, ethtool (in the hosts' namespaces).
REQUIRED_TOOLS = ("mnexec", "ip", "ethtool")
#: where the cards' control surfaces listen: Unix sockets in a private folder, or loopback TCP ports
CONTROL_KINDS = ("unix", "tcp")
#: Seconds Mininet shells get between SIGHUP and SIGKILL at teardown.
SHELL_GRACE_SECONDS = 3.0
#: Threads creating Mininet nodes (each waits for a bash shell to start).
NODE_THREADS = 8


def default_start_timeout(cards: int) -> float:
    """Seconds all switches together get to open their gRPC ports: 60 s + 0.5 s per card."""
    return 60.0 + 0.5 * cards


def stderr_progress(message: str) -> None:
    print(f"twinnet: {message}", file=sys.stderr, flush=True)


class NetworkError(TwinnetError, RuntimeError):
    """The network cannot be built here (bad input or environment); nothing was left running."""


class PlainIntf(Intf):
    """A Mininet interface object for a veth twinnet has already created and configured: no commands."""

    def config(self, **_params):
        return {}

    def delete(self) -> None:
        """Forget the interface (the run's link group is deleted in one go at teardown)."""
        self.node.delIntf(self)
        self.link = None


class PrebuiltLink(Link):
    """A Mininet link over a veth pair twinnet has already created (see emulation.links.create_veths)."""

    @classmethod
    def makeIntfPair(cls, *_args, **_kwargs) -> None:  # Mininet's method name
        return None


class TwinnetNetwork:
    """A network of P4 cards and hosts built from a topology; see the module doc and build_network().

    Attributes: ``topology``; ``mininet`` (the Mininet object, for its CLI); ``cards``
    {name: P4CardSwitch}; ``hosts`` {name: TwinnetHost}; ``state`` (NetworkState, as
    written to ``state_file``); ``out_dir``; ``run_id``; ``timings`` {stage: seconds}.
    """

    def __init__(
        self,
        topology: Topology,
        switch_class: type[P4CardSwitch],
        program: PreparedProgram,
        out_dir: Path,
        *,
        run_id: str,
        grpc_port_base: int = GRPC_PORT_BASE,
        side_channel_port_base: int = SIDE_CHANNEL_PORT_BASE,
        link_delay: str | None = None,
        log_console: bool = False,
        switch_arguments: Sequence[str] = (),
        start_timeout: float | None = None,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        progress: Progress | None = stderr_progress,
        control: str = "unix",
        switch_processes: int | None = None,
    ) -> None:
        if control not in CONTROL_KINDS:
            raise NetworkError(f"control must be one of {', '.join(CONTROL_KINDS)}, got {control!r}")
        self.control = control
        #: the run's private folder (mode 0700) of the cards' Unix sockets; None with control="tcp"
        self.socket_dir = Path(tempfile.mkdtemp(prefix="twinnet-")) if control == "unix" else None
        self.topology = topology
        self.switch_class = switch_class
        self.program = program
        self.out_dir = out_dir
        self.run_id = run_id
        self.grpc_port_base = grpc_port_base
        self.side_channel_port_base = side_channel_port_base
        self.link_delay = link_delay
        self.log_console = log_console
        self.switch_arguments = list(switch_arguments)
        self.start_timeout = start_timeout or default_start_timeout(len(topology.cards))
        self.lock_timeout = lock_timeout
        self.progress = progress or (lambda message: None)
        self.owner = process_identity()
        self.run_env = marker_environment(run_id, self.owner)
        self.link_group = veths.link_group_for(os.getpid())  # replaced by a free one once the lock is held
        self._links_created = False
        self.mininet = Mininet(
            topo=None,
            build=False,
            controller=None,
            switch=switch_class,
            host=TwinnetHost,
            link=PrebuiltLink,
            intf=PlainIntf,
            autoSetMacs=False,
            autoStaticArp=False,
        )
        self.cards: dict[str, P4CardSwitch] = {}
        self.hosts: dict[str, TwinnetHost] = {}
        #: the shared switch processes (empty: one process per card)
        self.groups: list[CardGroup] = self._plan_groups(switch_processes)
        self._group_of = {card: group for group in self.groups for card in group.card_ids}
        self.timings: dict[str, float] = {}
        self.state = self._initial_state()
        self.state_file: Path | None = None
        self._lock_fd: int | None = None
        self._started = False
        self._stopped = False
        self._previous_handlers: dict[int, object] = {}

    # -- look-ups ------------------------------------------------------------------

    def host(self, pe_or_name: int | str) -> TwinnetHost:
        """The Mininet host of a PE index or host name."""
        name = self.topology.host_of_pe(pe_or_name).name if isinstance(pe_or_name, int) else pe_or_name
        return self.hosts[name]

    def card(self, name_or_id: str | int) -> P4CardSwitch:
        """The switch of a card name or card id."""
        name = self.topology.card_by_id(name_or_id).name if isinstance(name_or_id, int) else name_or_id
        return self.cards[name]

    def switch_processes(self) -> dict[str, int | None]:
        """Every switch process by name (a shared process's, or the card's own) and its pid."""
        if self.groups:
            return {group.name: group.process.pid if group.process else None for group in self.groups}
        return {name: card.switch_pid for name, card in self.cards.items()}

    def alive_cards(self) -> list[str]:
        """Cards whose switch process runs."""
        return [name for name, card in self.cards.items() if card.is_alive()]

    def dead_cards(self) -> list[str]:
        """Cards whose switch process has ended (killed by kill_card, or crashed)."""
        return [name for name, card in self.cards.items() if not card.is_alive()]

    # -- changes while running ----------------------------------------------------------

    def kill_card(self, name: str) -> None:
        """Stop one card's switch process abruptly (SIGKILL), as a hardware failure; its links stay."""
        self.cards[name].kill()
        self.state.card(name).killed = True
        self._write_state()

    def set_link_rates(self, pps: float | None | Mapping[PortRef, float | None]) -> None:
        """Emulate link bandwidth: egress rate of card ports in packets per second (None: unlimited).

        A number applies to every connected port of every card; a mapping {PortRef: rate}
        to the listed card ports. Rates are enforced by the cards' queues (the
        target's side channel), so VC priorities and queue depths show.
        """
        if isinstance(pps, Mapping):
            wanted = dict(pps)
        else:
            wanted = {
                ref: pps
                for name in self.cards
                for ref in self.topology.card_ports(name)
                if self.topology.is_connected(ref)
            }
        per_card: dict[str, dict[int, float | None]] = {}
        for ref, rate in wanted.items():
            if ref.node not in self.cards:
                raise KeyError(f"{ref} is not a card port")
            per_card.setdefault(ref.node, {})[ref.port] = rate
        for name, rates in per_card.items():
            self.cards[name].set_port_rates(rates)

    # -- bring-up -----------------------------------------------------------------------

    def start(self) -> TwinnetNetwork:
        """Build and start everything (see the module doc); on any failure tear down and re-raise."""
        if self._started:
            raise RuntimeError("a TwinnetNetwork starts once")
        self._started = True
        self._install_signal_handlers()
        atexit.register(self.stop)
        started = time.monotonic()
        try:
            self._bring_up()
        except BaseException:
            self.stop()
            raise
        self.timings["total"] = time.monotonic() - started
        counts = self.topology.counts()
        self.progress(
            f"network up in {self.timings['total']:.1f} s: {counts['cards']} cards "
            f"({self.switch_class.target_name}), {counts['hosts']} hosts, {len(self.topology.links)} links; "
            f"state {self.state_file}"
        )
        return self

    def _bring_up(self) -> None:
        with self._stage("lock"):
            self._lock_fd = acquire_network_lock(self.lock_timeout, self.progress)
            self._refuse_leftovers()
            self.link_group = self.state.link_group = veths.free_link_group(os.getpid())
        self._write_state()
        with self._stage("nodes"):
            self._create_nodes()
            disable_ipv6_at_start(self.hosts.values())
            for host_state in self.state.hosts:
                host_state.pid = self.hosts[host_state.name].pid
                host_state.netns = namespace_inode(host_state.pid)
            self._write_state()
        with self._stage("links"):
            self._create_links()
        with self._stage("hosts"):
            configure_hosts(self.hosts, self.topology.hosts, self.out_dir / "hosts")
        with self._stage("switch launch"):
            for group in self.groups:
                group.start()
            for card in self.cards.values():
                card.start()  # a card of a group: its group's process is already running
            for card_state in self.state.cards:
                card_state.pid = self.cards[card_state.name].switch_pid
            self._write_state()
        processes = len(self.groups) or len(self.cards)
        self.progress(
            f"waiting for {processes} switch processes ({len(self.cards)} cards) to open their gRPC ports"
        )
        with self._stage("switches ready"):
            wait_until_ready(self.cards.values(), self.start_timeout, self.progress)
        self.state.status = "running"
        self._write_state()

    @contextlib.contextmanager
    def _stage(self, name: str) -> Iterator[None]:
        started = time.monotonic()
        yield
        self.timings[name] = time.monotonic() - started

    def _refuse_leftovers(self) -> None:
        names = [
            veths.interface_name(ref)
            for link in self.topology.links
            for ref in (link.a, link.b)
            if ref.node in self.topology.cards
        ]
        present = veths.existing_interfaces(names)
        if present:
            raise NetworkError(
                f"interfaces {', '.join(present[:5])}{' ...' if len(present) > 5 else ''} "
                "already exist: a crashed run left them (run `twinnet clean`) or another network "
                "uses these names"
            )
        busy = [
            (card.name, port)
            for card in self.cards_in_order()
            for port in (self._grpc_port(card.card_id), self._side_channel_port(card.card_id))
            if self.socket_dir is None and port_open(port)
        ]
        if busy:
            card, port = busy[0]
            raise NetworkError(
                f"port {port} of card {card} on 127.0.0.1 is in use by another process "
                f"({len(busy)} such ports; a crashed run? `twinnet clean`)"
            )

    def cards_in_order(self):
        return sorted(self.topology.cards.values(), key=lambda card: card.card_id)

    def _grpc_port(self, card_id: int) -> int:
        return self.grpc_port_base + card_id

    def _side_channel_port(self, card_id: int) -> int:
        return self.side_channel_port_base + card_id

    def _create_nodes(self) -> None:

        def make_card(card) -> P4CardSwitch:
            group = self._group_of.get(card.card_id)
            extra = {"group": group} if group is not None else {}
            return self.switch_class(
                card.name,
                card_id=card.card_id,
                program=self.program,
                log_path=self._log_path(card),
                **extra,
                grpc_port=self._grpc_port(card.card_id),
                side_channel_port=self._side_channel_port(card.card_id),
                socket_dir=self.socket_dir,
                log_console=self.log_console,
                run_env=self.run_env,
                target_arguments=self.switch_arguments,
            )

        def make_host(host) -> TwinnetHost:
            return TwinnetHost(host.name, run_env=self.run_env)

        jobs = [(make_host, host, self.hosts) for host in self.topology.hosts]
        jobs += [(make_card, card, self.cards) for card in self.cards_in_order()]
        errors = []
        with ThreadPoolExecutor(NODE_THREADS) as pool:
            futures = [(pool.submit(make, item), item, into) for make, item, into in jobs]
            for future, item, into in futures:
                try:
                    into[item.name] = future.result()
                except Exception as error:  # keep every node that did start, so that teardown ends it
                    errors.append(f"{item.name}: {error}")
        # Mininet's own registries, in the model's order, for its CLI and helpers
        for host in self.topology.hosts:
            if host.name in self.hosts:
                self.mininet.hosts.append(self.hosts[host.name])
                self.mininet.nameToNode[host.name] = self.hosts[host.name]
        for card in self.cards_in_order():
            if card.name in self.cards:
                self.mininet.switches.append(self.cards[card.name])
                self.mininet.nameToNode[card.name] = self.cards[card.name]
        for group in self.groups:
            group.cards = [self.cards[name] for name in group.names if name in self.cards]
        if errors:
            raise NetworkError("cannot create Mininet nodes: " + "; ".join(errors[:5]))
        self.progress(f"{len(self.cards)} cards and {len(self.hosts)} hosts created")

    def _create_links(self) -> None:
        host_pids = {name: host.pid for name, host in self.hosts.items()}
        plan = veths.plan_veths(self.topology, host_pids)
        self._links_created = True
        veths.create_veths(plan, self.link_group, f"{veths.ALIAS_PREFIX}{self.run_id}")
        nodes = {**self.cards, **self.hosts}
        for veth in plan:
            link = self.mininet.addLink(
                nodes[veth.root.ref.node],
                nodes[veth.other.ref.node],
                port1=veth.root.ref.port,
                port2=veth.other.ref.port,
                intfName1=veth.root.name,
                intfName2=veth.other.name,
                addr1=veth.root.mac,
                addr2=veth.other.mac,
            )
            link.model = veth.link
        root_names = veths.root_interfaces(plan)
        veths.prepare_root_interfaces(root_names)
        if self.link_delay:
            card_ends = [
                end.name for veth in plan for end in (veth.root, veth.other) if end.namespace_pid is None
            ]
            veths.add_delay(card_ends, self.link_delay)
        self.progress(f"{len(plan)} links created ({len(root_names)} card interfaces, MTU {veths.LINK_MTU})")

    # -- state file ------------------------------------------------------------------------

    def _addresses(self, card) -> tuple[str, int | str]:
        grpc, control = self.switch_class.addresses(
            card.name, self.socket_dir, self._grpc_port(card.card_id), self._side_channel_port(card.card_id)
        )
        group = self._group_of.get(card.card_id)
        return (group.grpc_address if group is not None else grpc), control

    def _log_path(self, card) -> Path:
        """The log of the card's switch process: its own, or its shared process's."""
        group = self._group_of.get(card.card_id)
        return group.log_path if group is not None else self.out_dir / "logs" / f"{card.name}.log"

    def _plan_groups(self, switch_processes: int | None) -> list[CardGroup]:
        """The shared switch processes and their cards (none if the target or control keeps one per card)."""
        shares = getattr(self.switch_class, "shares_processes", False)
        if not shares or self.socket_dir is None:
            if switch_processes is not None:
                why = (
                    f"the {self.switch_class.target_name} target runs one process per card"
                    if not shares
                    else "with --control tcp every card has a process of its own"
                )
                raise NetworkError(f"--switch-processes cannot be used: {why}")
            return []
        cards = self.cards_in_order()
        try:
            count = check_process_count(switch_processes, len(cards))
        except GroupError as error:
            raise NetworkError(str(error)) from error
        names = {card.card_id: card.name for card in cards}
        groups = []
        for index, block in enumerate(spread([card.card_id for card in cards], count)):
            group = CardGroup(
                index,
                block,
                [names[card_id] for card_id in block],
                grpc_address=f"unix:{self.socket_dir / f'p{index}.p4rt'}",
                control=f"unix:{self.socket_dir / f'p{index}.ctl'}",
                cards_file=self.out_dir / "logs" / f"p{index}.cards.json",
                log_path=self.out_dir / "logs" / f"p{index}.log",
                run_env=self.run_env,
            )
            groups.append(group)
        return groups

    def _initial_state(self) -> NetworkState:
        cards = [
            CardState(
                name=card.name,
                card_id=card.card_id,
                device_id=card.card_id,
                grpc_address=self._addresses(card)[0],
                side_channel_port=self._side_channel_port(card.card_id),
                control=str(self._addresses(card)[1]),
                target=self.switch_class.target_name,
                p4info=str(self.program.p4info) if self.program.p4info else None,
                device_config=str(self.program.device_config),
                log=str(self._log_path(card)),
                interfaces=[
                    veths.interface_name(ref)
                    for ref in self.topology.card_ports(card.name)
                    if self.topology.is_connected(ref)
                ],
            )
            for card in self.cards_in_order()
        ]
        hosts = []
        for host in self.topology.hosts:
            card_port = self.topology.peer(PortRef(host.name, 0))
            hosts.append(
                HostState(
                    name=host.name,
                    pe=host.pe,
                    ip=host.ip,
                    mac=host.mac,
                    interface=host_interface(host),
                    card=card_port.node,
                    card_port=card_port.port,
                )
            )
        return NetworkState(
            run_id=self.run_id,
            owner=self.owner,
            status="starting",
            created=time.time(),
            topology={
                "family": self.topology.family,
                "params": _jsonable(self.topology.params),
                "counts": self.topology.counts(),
            },
            target=self.switch_class.target_name,
            program=str(self.program.source),
            out_dir=str(self.out_dir),
            link_group=self.link_group,
            mtu={"link": veths.LINK_MTU, "host_ip": veths.HOST_IP_MTU},
            cards=cards,
            hosts=hosts,
            socket_dir=str(self.socket_dir or ""),
        )

    def _write_state(self, *, make_current: bool = True) -> None:
        self.state_file = write_state(
            self.state, record=self.out_dir / "state.json", make_current=make_current
        )

    # -- teardown -----------------------------------------------------------------------------

    def __enter__(self) -> TwinnetNetwork:
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def stop(self) -> None:
        """Tear everything down (idempotent; every step runs even if an earlier one fails)."""
        if self._stopped or not self._started:
            return
        self._stopped = True
        started = time.monotonic()
        problems = []
        with _interrupts_deferred():
            for what, step in (
                ("switches", lambda: stop_switches(self.cards.values())),
                ("links", self._delete_links),
                ("host processes", self._kill_host_processes),
                ("nodes", self._terminate_nodes),
                ("leftover processes", lambda: kill_run_processes(self.run_id)),
                ("state", self._forget_state),
            ):
                try:
                    step()
                except Exception as error:  # keep tearing down; report at the end
                    problems.append(f"{what}: {error}")
            if self._lock_fd is not None:
                os.close(self._lock_fd)
                self._lock_fd = None
            atexit.unregister(self.stop)
        self._restore_signal_handlers()
        self.timings["teardown"] = time.monotonic() - started
        if problems:
            self.progress("teardown problems (run `twinnet clean`): " + "; ".join(problems))
        else:
            self.progress(f"network stopped in {self.timings['teardown']:.1f} s")

    def _delete_links(self) -> None:
        if self._links_created:
            veths.delete_link_group(self.link_group)

    def _kill_host_processes(self) -> None:
        """SIGKILL whatever runs in the hosts' namespaces besides their shells (traffic tools, iperf ...)."""
        inodes = {host.netns for host in self.state.hosts if host.netns is not None}
        shells = {node.pid for node in self.hosts.values()}
        for pid in processes_in_namespaces(inodes):
            if pid not in shells and pid != os.getpid():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)

    def _terminate_nodes(self) -> None:
        """End every Mininet shell: SIGHUP to all, SIGKILL to those left after the grace period, then reap."""
        nodes = [*self.hosts.values(), *self.cards.values()]
        for node in nodes:
            if node.shell and node.shell.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(node.shell.pid, signal.SIGHUP)
        deadline = time.monotonic() + SHELL_GRACE_SECONDS
        running = [node for node in nodes if node.shell]
        while running and time.monotonic() < deadline:
            running = [node for node in running if node.shell.poll() is None]
            if running:
                time.sleep(0.02)
        for node in running:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(node.shell.pid, signal.SIGKILL)
        for node in nodes:
            node.terminate()

    def _forget_state(self) -> None:
        forget_run(self.run_id)
        if self.socket_dir is not None:
            shutil.rmtree(self.socket_dir, ignore_errors=True)
        self.state.status = "stopped"
        write_record(self.state, self.out_dir / "state.json")

    def _install_signal_handlers(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return

        def interrupt(signum, _frame):
            raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")

        for signum in (signal.SIGTERM, signal.SIGHUP):
            self._previous_handlers[signum] = signal.signal(signum, interrupt)

    def _restore_signal_handlers(self) -> None:
        for signum, handler in self._previous_handlers.items():
            signal.signal(signum, handler)
        self._previous_handlers.clear()


@contextlib.contextmanager
def _interrupts_deferred() -> Iterator[None]:
    """Ignore Ctrl-C, SIGTERM and SIGHUP while tearing down: a second one must not leave half a network."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.signal(signum, signal.SIG_IGN) for signum in TEARDOWN_IGNORED_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def kill_run_processes(run_id: str) -> list[int]:
    """SIGKILL every process marked with `run_id` (not this one); return their pids."""
    killed = []
    for pid, (run, _owner) in marked_processes().items():
        if run == run_id and pid != os.getpid():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
    return killed


def _jsonable(params: Mapping) -> dict:
    return {
        key: value if isinstance(value, (int, float, str, bool, type(None), list)) else str(value)
        for key, value in params.items()
    }


def build_network(
    topology: Topology,
    *,
    program: str | Path = DEFAULT_PROGRAM,
    target: str = "auto",
    out_dir: str | Path | None = None,
    switch_class: type[P4CardSwitch] | None = None,
    grpc_port_base: int = GRPC_PORT_BASE,
    side_channel_port_base: int = SIDE_CHANNEL_PORT_BASE,
    link_delay: str | None = None,
    log_console: bool = False,
    switch_arguments: Sequence[str] = (),
    start_timeout: float | None = None,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    check_capacity: bool = True,
    progress: Progress | None = stderr_progress,
    control: str = "unix",
    switch_processes: int | None = None,
) -> TwinnetNetwork:
    """Build and start a network for `topology`; use it as a context manager so that it is torn down.

    ``target``: "auto", "bmv2" or "embedded" (``switch_class`` overrides it with any
    P4CardSwitch subclass). ``program``: the card program (.p4; bmv2 also takes p4c's
    .json). ``out_dir``: logs (logs/c<id>.log), host set-up files and the state record
    (default /tmp/twinnet/out/<run id>). ``link_delay``: a netem delay on card-card
    links, e.g. "1ms". ``control``: "unix" (default) puts every card's P4Runtime server
    and side channel on Unix sockets in a folder only this user can enter (the run's
    ``socket_dir``); "tcp" on 127.0.0.1 ports, as simple_switch_grpc has them, which any
    local user can reach. ``switch_arguments``: more target options for every card's switch
    (after ``--``, e.g. ``--lossless``). ``switch_processes``: embedded switch processes that share
    the cards (default one per CPU core; see emulation.switch_groups). Raises NetworkError /
    SwitchError / CapacityError before
    anything starts when the network cannot run here.
    """
    if control not in CONTROL_KINDS:
        raise NetworkError(f"control must be one of {', '.join(CONTROL_KINDS)}, got {control!r}")
    switch_class = switch_class or select_target(target)
    program = Path(program).resolve()
    if not program.is_file():
        raise NetworkError(f"card program {program} does not exist")
    if not topology.cards:
        raise NetworkError("the topology has no cards")
    highest = max(card.card_id for card in topology.cards.values())
    if max(grpc_port_base, side_channel_port_base) + highest > 32767:
        raise NetworkError(
            f"card ids up to {highest} do not fit under the port bases "
            f"(at most {MAX_CARD_ID} with the defaults)"
        )
    if check_capacity:
        estimate = check_memory(
            topology,
            switch_class.memory_plan(len(topology.cards), switch_processes, control),
            switch_class.target_name,
        )
        if progress:
            progress(f"memory: {estimate.summary()}")
    if os.geteuid() != 0:
        raise NetworkError("building a network needs root (network namespaces, veths)")
    absent = [tool for tool in REQUIRED_TOOLS if shutil.which(tool) is None]
    if absent:
        raise NetworkError(
            f"building a network needs {', '.join(absent)} on PATH (scripts/setup.sh installs them)"
        )
    if link_delay:
        reason = veths.netem_missing()
        if reason:
            raise NetworkError(f"link delay {link_delay!r} needs tc netem: {reason}")
    run_id = new_run_id()
    out = Path(out_dir) if out_dir is not None else DEFAULT_OUT_ROOT / run_id
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    try:
        prepared = switch_class.prepare_program(program, out)
    except SwitchError:
        raise
    except Exception as error:
        raise SwitchError(f"cannot prepare {program} for {switch_class.target_name}: {error}") from error
    network = TwinnetNetwork(
        topology,
        switch_class,
        prepared,
        out,
        run_id=run_id,
        grpc_port_base=grpc_port_base,
        side_channel_port_base=side_channel_port_base,
        link_delay=link_delay,
        log_console=log_console,
        switch_arguments=switch_arguments,
        start_timeout=start_timeout,
        lock_timeout=lock_timeout,
        progress=progress,
        control=control,
        switch_processes=switch_processes,
    )
    return network.start()
