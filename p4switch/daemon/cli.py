"""``twinnet-switch``: the embedded target as a drop-in for bmv2's ``simple_switch_grpc``.

    twinnet-switch [options] (PROGRAM.p4 | --no-p4) [-- target options]
    twinnet-switch --cards CARDS.json [--process-control unix:PATH] [options] (PROGRAM.p4 | --no-p4)
                   [-- target options]
    twinnet-switch --stf TEST.stf PROGRAM.p4 [--p4-include DIR] [--fused]

``--stf`` runs p4c's STF packet test on the program instead of starting the switch
(see p4switch/stf): exit 0 when every expected frame arrived and nothing else, 1 with
the differences, 2 for a program the target refuses; ``--fused`` runs the fused driver.

``--cards`` runs many cards in one process (p4switch/daemon/host.py): CARDS.json (written by
``p4switch.daemon.host_config.write_cards_file``) gives each card's device id, ports and side
channel; the program, the gRPC server (requests routed by device id), the target options
and one forwarding loop are shared. ``--process-control unix:PATH`` answers {"cmd": "health"}
for all cards. With ``--cards``, -i, --device-id, --thrift-port and --side-channel are refused
(the file has them); a bad file is refused with one line and exit status 2.

Options (before ``--``), as simple_switch_grpc takes them:
    --device-id N           P4Runtime device id (default 0)
    -i, --interface P@IF    port number P on interface IF (repeat); P = Mininet's interface number
    --thrift-port N         port of the JSON side channel on 127.0.0.1 (queue counters, rates;
                            see p4switch/daemon/side_channel.py); default 9090 like bmv2's Thrift
                            server; 0 picks a free port, ``--no-side-channel`` turns it off
    --side-channel unix:PATH  the side channel on a Unix socket instead (private to the user who
                            can enter PATH's folder; see p4switch/README.md, security model)
    --log-console           log to stderr;  --log-file PATH  log to PATH;  -L/--log-level LEVEL
                            (trace, debug, info, warn, error, off; default info when logging is on,
                            else warnings and errors only, to stderr)
    --pcap [DIR]            write <iface>_in.pcap / <iface>_out.pcap per port into DIR (default .)
    --p4-include DIR        include directory for compiling P4 sources (repeat)
    PROGRAM.p4              a P4_16 v1model source, where bmv2 takes a JSON; --no-p4 starts without
                            a program (set it over P4Runtime: SetForwardingPipelineConfig)
    --nanolog, --debugger, --notifications-addr: accepted for compatibility and ignored

Target options (after ``--``):
    --grpc-server-addr ADDR        P4Runtime server: unix:/path (private to the folder's owner) or
                                   HOST:PORT on loopback (default 127.0.0.1:9559; any local user)
    --priority-queues N            strict-priority queues per egress port, 1..8 (default 1)
    --queue-depth N                packets per queue (default 64, as bmv2)
    --queue-rate PPS               initial rate of every port in packets per second (default unlimited)
    --cpu-port N                   port number of the CPU port (packet-in/out over the StreamChannel
                                   when the program's P4Info has packet_in/packet_out headers)
    --lossless                     IEEE 802.1Qbb priority flow control per priority queue (PFC; see
                                   p4switch/daemon/pfc.py): pause the sender instead of dropping
    --pfc-xoff N / --pfc-xon N     held frames per (ingress port, priority) above which the class is
                                   paused (default 16) / at or below which it is resumed (default 8)
    --pfc-headroom N               frames accepted above XOFF before a drop (default 96: a receive
                                   batch and two transmit bursts of a peer not yet paused)
    --link-bps BPS                 link rate of ports without a packet rate, for pause quanta
                                   (default 1e8); a port with --queue-rate R is R 84-byte frames/s
    --pfc-class-field F            ETHERTYPE,GUARD,OFFSET,MASK: where a frame carries its arrival class
                                   (default: the priority it is queued with)
    With --lossless, --queue-depth defaults to ports x (XOFF + headroom), which no ingress overruns.

SIGTERM or SIGINT stops the switch cleanly (exit code 0). If the forwarding thread fails, the
switch stops and exits with code 70, so that a card without a data plane is seen as dead
(with --cards: every card of the process).
"""

from __future__ import annotations

import argparse
import logging
import os
import resource
import signal
import sys
import threading
from collections.abc import Sequence

from p4switch.daemon.addresses import check_address
from p4switch.daemon.host import HostOptions, SwitchHost
from p4switch.daemon.host_config import CardsFileError, read_cards_file
from p4switch.daemon.pfc import (
    DEFAULT_HEADROOM,
    DEFAULT_LINK_BPS,
    DEFAULT_XOFF,
    DEFAULT_XON,
    ClassField,
    PfcSettings,
)
from p4switch.daemon.ports import MAX_PORT_NUMBER, parse_port_spec
from p4switch.daemon.queues import DEFAULT_QUEUE_DEPTH, MAX_PRIORITY_QUEUES, MAX_QUEUE_DEPTH, check_rate
from p4switch.daemon.switch import Switch, SwitchOptions
from p4switch.errors import P4SwitchError

GIL_SWITCH_INTERVAL_SECONDS = 0.001
EXIT_DATAPLANE_FAILED = 70  # EX_SOFTWARE
#: how often the main thread looks at the data plane (a failed card exits within this)
FAILURE_CHECK_SECONDS = 0.1
MAX_DEVICE_ID = 2**64 - 1
LOG_LEVELS = {
    "trace": logging.DEBUG,
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "off": None,
}


def build_parsers() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    main = argparse.ArgumentParser(
        prog="twinnet-switch", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    main.add_argument("program", nargs="?", help="P4_16 v1model source")
    main.add_argument("--no-p4", action="store_true", help="start without a program")
    main.add_argument("--device-id", type=int, default=None)
    main.add_argument("-i", "--interface", action="append", default=[], metavar="PORT@IFACE")
    main.add_argument("--thrift-port", type=int, default=None)
    main.add_argument("--cards", metavar="CARDS.json", help="many cards in one process (see above)")
    main.add_argument("--process-control", metavar="unix:PATH", default=None)
    main.add_argument("--no-side-channel", action="store_true")
    main.add_argument("--side-channel", metavar="unix:PATH", default=None)
    main.add_argument("--log-console", action="store_true")
    main.add_argument("--log-file")
    main.add_argument("-L", "--log-level", choices=sorted(LOG_LEVELS), default=None)
    main.add_argument("--pcap", nargs="?", const=".", default=None, metavar="DIR")
    main.add_argument("--p4-include", action="append", default=[], metavar="DIR")
    main.add_argument("--stf", metavar="TEST.stf", help="run an STF packet test on PROGRAM and exit")
    main.add_argument("--fused", action="store_true", help="with --stf: run the fused driver")
    main.add_argument("--nanolog")
    main.add_argument("--debugger", action="store_true")
    main.add_argument("--notifications-addr")
    target = argparse.ArgumentParser(prog="twinnet-switch ... --", add_help=True)
    target.add_argument("--grpc-server-addr", default="127.0.0.1:9559")
    target.add_argument("--priority-queues", type=int, default=1)
    target.add_argument("--queue-depth", type=int, default=None, help=f"default {DEFAULT_QUEUE_DEPTH}")
    target.add_argument("--queue-rate", type=float, default=None)
    target.add_argument("--cpu-port", type=int, default=None)
    target.add_argument("--lossless", action="store_true")
    target.add_argument("--pfc-xoff", type=int, default=DEFAULT_XOFF)
    target.add_argument("--pfc-xon", type=int, default=DEFAULT_XON)
    target.add_argument("--pfc-headroom", type=int, default=DEFAULT_HEADROOM)
    target.add_argument("--link-bps", type=float, default=DEFAULT_LINK_BPS)
    target.add_argument("--pfc-class-field", default=None)
    return main, target


def parse_options(argv: Sequence[str]) -> tuple[SwitchOptions, argparse.Namespace]:
    argv = list(argv)
    split = argv.index("--") if "--" in argv else len(argv)
    main_parser, target_parser = build_parsers()
    args = main_parser.parse_args(argv[:split])
    target = target_parser.parse_args(argv[split + 1 :])
    if bool(args.program) == bool(args.no_p4):
        main_parser.error("give exactly one of PROGRAM.p4 and --no-p4")
    if args.cards is not None:
        given = [
            name
            for name, value in (
                ("-i", args.interface),
                ("--device-id", args.device_id is not None),
                ("--thrift-port", args.thrift_port is not None),
                ("--side-channel", args.side_channel is not None),
                ("--no-side-channel", args.no_side_channel),
            )
            if value
        ]
        if given:
            main_parser.error(
                f"--cards takes every card's ports, device id and side channel from its file: "
                f"do not give {', '.join(given)}"
            )
    elif args.process_control is not None:
        main_parser.error("--process-control goes with --cards")
    if args.process_control is not None:
        try:
            check_address(args.process_control)
        except ValueError as error:
            main_parser.error(f"--process-control: {error}")
        if not args.process_control.startswith("unix:"):
            main_parser.error("--process-control takes unix:/path")
    args.device_id = 0 if args.device_id is None else args.device_id
    args.thrift_port = 9090 if args.thrift_port is None else args.thrift_port
    if not 1 <= target.priority_queues <= MAX_PRIORITY_QUEUES:
        target_parser.error(f"--priority-queues must be 1..{MAX_PRIORITY_QUEUES}")
    if target.queue_depth is not None and not 1 <= target.queue_depth <= MAX_QUEUE_DEPTH:
        target_parser.error(f"--queue-depth must be 1..{MAX_QUEUE_DEPTH}")
    try:
        check_rate(target.queue_rate)
    except ValueError as error:
        target_parser.error(f"--queue-rate: {error}")
    try:
        check_address(target.grpc_server_addr)
    except ValueError as error:
        target_parser.error(f"--grpc-server-addr: {error}")
    if target.cpu_port is not None and not 0 <= target.cpu_port <= MAX_PORT_NUMBER:
        target_parser.error(f"--cpu-port must be 0..{MAX_PORT_NUMBER}")
    if not 0 <= args.device_id <= MAX_DEVICE_ID:
        main_parser.error(
            f"--device-id must be 0..{MAX_DEVICE_ID} (P4Runtime's uint64), not {args.device_id}"
        )
    if args.side_channel is not None:
        try:
            check_address(args.side_channel)
        except ValueError as error:
            main_parser.error(f"--side-channel: {error}")
        if not args.side_channel.startswith("unix:"):
            main_parser.error("--side-channel takes unix:/path (a TCP side channel is --thrift-port)")
    if not 0 <= args.thrift_port <= 65535:
        main_parser.error(f"--thrift-port must be 0..65535, not {args.thrift_port}")
    lossless = None
    if target.lossless:
        try:
            field = ClassField.parse(target.pfc_class_field) if target.pfc_class_field else None
            lossless = PfcSettings(
                target.pfc_xoff, target.pfc_xon, target.pfc_headroom, target.link_bps, field
            )
            lossless.check()
        except ValueError as error:
            target_parser.error(str(error))
    try:
        interfaces = [parse_port_spec(spec) for spec in args.interface]
    except ValueError as error:
        main_parser.error(str(error))
    numbers = [number for number, _ in interfaces]
    if len(set(numbers)) != len(numbers):
        main_parser.error("a port number is given twice")
    options = SwitchOptions(
        device_id=args.device_id,
        interfaces=interfaces,
        program=args.program,
        include_dirs=tuple(args.p4_include),
        grpc_address=target.grpc_server_addr,
        control_port=None if args.no_side_channel else args.thrift_port,
        control_address=None if args.no_side_channel else args.side_channel,
        priority_queues=target.priority_queues,
        queue_depth=target.queue_depth,
        queue_rate_pps=target.queue_rate,
        cpu_port=target.cpu_port,
        pcap_dir=args.pcap,
        lossless=lossless,
    )
    return options, args


def host_options(options: SwitchOptions, args: argparse.Namespace) -> HostOptions:
    """The multi-card options: the shared ones from the command line, the cards from ``--cards``.

    Raises CardsFileError (one line naming the problem) for a file that cannot be right.
    """
    cards = read_cards_file(args.cards)
    taken = {card.control_address: card.device_id for card in cards if card.control_address}
    for name, address in (
        ("--process-control", args.process_control),
        ("--grpc-server-addr", options.grpc_address),
    ):
        if address in taken:
            raise CardsFileError(
                f"cards file {args.cards}: device {taken[address]}'s side channel {address} is also {name}"
            )
    return HostOptions(options, cards, args.process_control)


def raise_file_limit() -> None:
    """Raise the soft limit of open files to the hard one (a card holds several sockets)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):
            pass


def configure_logging(args: argparse.Namespace) -> None:
    if args.log_console or args.log_file:
        level = LOG_LEVELS[args.log_level or "info"]
    else:
        level = logging.WARNING
    handler: logging.Handler
    if level is None:
        handler = logging.NullHandler()
        level = logging.CRITICAL
    elif args.log_file:
        handler = logging.FileHandler(args.log_file)
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    root = logging.getLogger("twinnet")
    root.setLevel(level)
    root.addHandler(handler)


def run_stf_test(argv: Sequence[str]) -> int:
    """``--stf TEST.stf PROGRAM.p4``: run the test, print the outcome, return its exit status."""
    from p4switch.stf.command import run_stf_file

    args, _ = build_parsers()[0].parse_known_args(argv)
    if not args.program:
        print("twinnet-switch: --stf needs a PROGRAM.p4", file=sys.stderr)
        return 2
    outcome = run_stf_file(args.stf, args.program, tuple(args.p4_include), fused=args.fused)
    print(outcome.text, file=sys.stdout if outcome.status == 0 else sys.stderr)
    return outcome.status


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--stf" in argv or any(arg.startswith("--stf=") for arg in argv):
        return run_stf_test(argv)
    options, args = parse_options(argv)
    host: HostOptions | None = None
    if args.cards is not None:
        try:
            host = host_options(options, args)
        except P4SwitchError as error:
            print(f"twinnet-switch: {error}", file=sys.stderr)
            return 2
    configure_logging(args)
    log = logging.getLogger("twinnet.switch")
    stop_requested = threading.Event()

    def request_stop(signum: int, _frame: object) -> None:
        log.warning("signal %d (%s): stopping", signum, signal.Signals(signum).name)
        stop_requested.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    # P4Runtime calls need the GIL a few times each; a shorter switch interval than Python's 5 ms
    # lets them through a busy data plane (costs nothing while no other thread is runnable)
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_SECONDS)
    if host is not None:
        return run_host(host, stop_requested, log)
    switch = Switch(options)
    try:
        switch.start()
    except Exception as error:
        print(f"twinnet-switch: cannot start: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    side = f", side channel {switch.control.address}" if switch.control else ""
    log.info(
        "device %d up: ports %s, P4Runtime %s%s",
        options.device_id,
        [f"{n}@{i}" for n, i in options.interfaces],
        switch.grpc_listening_address(),
        side,
    )
    return serve_until_stopped(switch, stop_requested, log)


def serve_until_stopped(
    server: Switch | SwitchHost, stop_requested: threading.Event, log: logging.Logger
) -> int:
    """Wait for a signal or a failed data plane; stop (exit 0) or exit at once with EXIT_DATAPLANE_FAILED."""
    while not stop_requested.wait(FAILURE_CHECK_SECONDS):
        if server.failed.is_set():
            break
    if server.failed.is_set():
        # a card without a data plane is dead (with --cards: every card of the process): exit at once (the
        # kernel closes every socket), so that whoever watches sees it now, not after gRPC's orderly shutdown
        print(f"twinnet-switch: data plane failed: {server.failure}", file=sys.stderr, flush=True)
        server.remove_socket_files()
        logging.shutdown()
        os._exit(EXIT_DATAPLANE_FAILED)
    server.stop()
    exit_promptly(log)
    return 0


def run_host(options: HostOptions, stop_requested: threading.Event, log: logging.Logger) -> int:
    """``--cards``: start the cards, wait for a signal or a failed loop; the exit status."""
    raise_file_limit()
    host = SwitchHost(options)
    try:
        host.start()
    except Exception as error:
        print(f"twinnet-switch: cannot start: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    log.info(
        "%d cards up (devices %s), P4Runtime %s",
        len(host.cards),
        sorted(host.cards),
        host.grpc_listening_address(),
    )
    return serve_until_stopped(host, stop_requested, log)


def exit_promptly(log: logging.Logger) -> None:
    """End the process now that the switch is stopped, even if a gRPC worker still runs.

    A SetForwardingPipelineConfig may be compiling in a worker thread; Python would wait for
    it at exit (the thread pool's workers are joined), so a SIGTERM would take as long as
    the compile. Everything the switch owns is closed by now: flush the logs and leave.
    """
    busy = [thread.name for thread in threading.enumerate() if thread is not threading.current_thread()]
    if busy:
        log.info("stopped; not waiting for %d worker thread(s)", len(busy))
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
