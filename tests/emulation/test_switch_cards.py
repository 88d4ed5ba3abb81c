"""Switch processes running the card program p4src/card.p4, on veth pairs, controlled over P4Runtime.

Each test starts real switch processes (``twinnet-switch``, and ``simple_switch_grpc``
when it and p4c are installed: the ``target`` parameter; absent ones are skipped with
the reason), loads the card program over P4Runtime, installs entries and sends frames
from host namespaces. Expected frames and counts are built here from the byte layout of
p4src/README.md, not from the switch's code.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from google.protobuf import text_format
from google.rpc import code_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2
from test_switch_net import Lab, drain, host_socket, receive

from emulation.switch_launcher import switch_command
from p4src import CARD_PROGRAM
from p4switch.daemon.side_channel import request
from p4switch.p4runtime.client import P4RuntimeClient, WriteFailure, named_table_entry, update

pytestmark = [pytest.mark.root, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
CARD = CARD_PROGRAM
TWINNET = 0x88B5
DROP_MALFORMED, DROP_UNKNOWN_TYPE, DROP_NO_ROUTE = 1, 2, 4
INSERT, MODIFY, DELETE = p4runtime_pb2.Update.INSERT, p4runtime_pb2.Update.MODIFY, p4runtime_pb2.Update.DELETE


@dataclass
class Target:
    """How to start one kind of switch and what config to load into it."""

    name: str
    command: list[str]
    p4info: p4info_pb2.P4Info
    device_config: bytes
    bmv2: bool


def twinnet_target() -> Target:
    try:
        from p4switch import compile_program

        program = compile_program(str(CARD))
    except Exception as error:  # the language core cannot run the card program (yet)
        pytest.skip(f"the language core cannot compile {CARD.name}: {type(error).__name__}: {error}")
    return Target("twinnet-switch", switch_command(), program.p4info, CARD.read_bytes(), bmv2=False)


def bmv2_target() -> Target:
    missing = [tool for tool in ("simple_switch_grpc", "p4c-bm2-ss") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not installed: the bmv2 variant of the test is skipped")
    directory = tempfile.mkdtemp(prefix="tswbmv2-")
    subprocess.run(
        [
            "p4c-bm2-ss",
            "--p4runtime-files",
            f"{directory}/p4info.txt",
            "-o",
            f"{directory}/card.json",
            str(CARD),
        ],
        check=True,
    )
    p4info = text_format.Parse(Path(directory, "p4info.txt").read_text(), p4info_pb2.P4Info())
    return Target(
        "simple_switch_grpc",
        ["simple_switch_grpc"],
        p4info,
        Path(directory, "card.json").read_bytes(),
        bmv2=True,
    )


@pytest.fixture(scope="module", params=["twinnet-switch", "simple_switch_grpc"])
def target(request: pytest.FixtureRequest) -> Target:
    return twinnet_target() if request.param == "twinnet-switch" else bmv2_target()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Card:
    """One switch process and its primary controller connection."""

    def __init__(self, target: Target, device_id: int, interfaces: list[tuple[int, str]]) -> None:
        self.target = target
        self.grpc_port, self.side_channel_port = free_port(), free_port()
        arguments = ["--device-id", str(device_id), "--thrift-port", str(self.side_channel_port)]
        for number, interface in interfaces:
            arguments += ["-i", f"{number}@{interface}"]
        arguments += [
            "--no-p4",
            "--",
            "--grpc-server-addr",
            f"127.0.0.1:{self.grpc_port}",
            "--priority-queues",
            "8",
        ]
        self.stderr = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            [*target.command, *arguments], stderr=self.stderr, stdout=subprocess.DEVNULL
        )
        self.address = f"127.0.0.1:{self.grpc_port}"
        self.client = P4RuntimeClient(self.address, device_id, (0, 10))
        self._wait_ready()
        assert self.client.arbitrate().status.code == code_pb2.OK
        self.client.set_pipeline(target.p4info, target.device_config)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 60
        while True:
            try:
                self.client.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=2)
                return
            except grpc.RpcError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"switch did not start: {self.errors()}") from None
                time.sleep(0.2)

    def errors(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")

    def entry(self, table: str, match: dict, action: str = "", params: dict | None = None):
        return named_table_entry(self.target.p4info, table, match, action, params)

    def insert(self, *entities) -> None:
        self.client.write([update(INSERT, entity) for entity in entities])

    def set_default(self, table: str, action: str, params: dict) -> None:
        entity = self.entry(table, {}, action, params)
        entity.table_entry.is_default_action = True
        self.client.write([update(MODIFY, entity)])

    def configure(self, card_id: int) -> None:
        """card id, VC 0 -> queue 0 and VC 1 -> queue 7 for routing class 0."""
        self.set_default("MyIngress.card_config", "MyIngress.set_card", {"card_id": card_id, "hop_limit": 8})
        self.insert(
            self.entry(
                "MyIngress.vc_queue", {"hdr.tw.rclass": 0, "hdr.tw.vc": 0}, "MyIngress.set_queue", {"prio": 0}
            ),
            self.entry(
                "MyIngress.vc_queue", {"hdr.tw.rclass": 0, "hdr.tw.vc": 1}, "MyIngress.set_queue", {"prio": 7}
            ),
        )

    def route(self, in_port: int, dst_pe: int, out_port: int, vc: int = 0):
        return self.entry(
            "MyIngress.route",
            {"standard_metadata.ingress_port": in_port, "hdr.tw.dst_pe": dst_pe, "hdr.tw.rclass": 0},
            "MyIngress.set_route",
            {"port": out_port, "vc": vc},
        )

    def counter(self, name: str, index: int) -> tuple[int, int]:
        counter_id = next(c.preamble.id for c in self.target.p4info.counters if c.preamble.name == name)
        entity = p4runtime_pb2.Entity()
        entity.counter_entry.counter_id = counter_id
        entity.counter_entry.index.index = index
        (cell,) = self.client.read([entity])
        return cell.counter_entry.data.packet_count, cell.counter_entry.data.byte_count

    def set_rate(self, port: int, rate_pps: int) -> None:
        if self.target.bmv2:
            subprocess.run(
                ["simple_switch_CLI", "--thrift-port", str(self.side_channel_port)],
                input=f"set_queue_rate {rate_pps} {port}\n",
                text=True,
                check=True,
                capture_output=True,
            )
        else:
            command = {"cmd": "set_queue_rate", "rate_pps": rate_pps, "port": port}
            assert request(self.side_channel_port, command)["ok"]

    def stop(self) -> int:
        self.client.close()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                return self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                raise
        return self.process.returncode


def probe(
    dst_pe: int,
    probe_id: int,
    trace_count: int = 0,
    src_pe: int = 0x3333,
    class_vc: int = 0,
    hops: int = 0,
    payload: bytes = b"",
) -> bytes:
    """A twinnet probe: Ethernet, the 20-byte routing header (p4src/README.md), payload; 64 bytes at least."""
    ethernet = bytes.fromhex("0200000000aa020000000001") + TWINNET.to_bytes(2, "big")
    header = struct.pack("!HHBBBBHI", dst_pe, src_pe, class_vc, hops, trace_count, 0, 0, probe_id) + bytes(6)
    data = ethernet + header + payload
    return data + bytes(max(0, 64 - len(data)))


@dataclass
class Received:
    dst_pe: int
    src_pe: int
    rclass: int
    vc: int
    hop_count: int
    probe_id: int
    trace: list[tuple[int, int, int, int, int, int]]  # card, in, out, vc, prio, qdepth


def parse(frame: bytes) -> Received:
    dst_pe, src_pe, class_vc, hops, trace_count, _tc, _next, probe_id = struct.unpack(
        "!HHBBBBHI", frame[14:28]
    )
    trace = []
    for index in range(trace_count):
        entry = frame[34 + 16 * index : 50 + 16 * index]
        card, in_port, out_port, vc_prio = struct.unpack("!HHHB", entry[:7])
        trace.append(
            (card, in_port, out_port, vc_prio >> 4, vc_prio & 0xF, int.from_bytes(entry[7:10], "big"))
        )
    return Received(dst_pe, src_pe, class_vc >> 4, class_vc & 0xF, hops, probe_id, trace)


class Network:
    """Cards in a line between host a (port 1 of the first card) and host b (port 2 of the last)."""

    def __init__(self, target: Target, cards: int) -> None:
        self.lab = Lab("c")
        self.cards: list[Card] = []
        try:
            first_host, namespace_a = self.lab.host_link("1p1", "a")
            interfaces = [[(1, first_host)]]
            for index in range(1, cards):
                left, right = self.lab.switch_link(f"{index}p2", f"{index + 1}p1")
                interfaces[-1].append((2, left))
                interfaces.append([(1, right)])
            last_host, namespace_b = self.lab.host_link(f"{cards}p2", "b")
            interfaces[-1].append((2, last_host))
            for index, card_interfaces in enumerate(interfaces):
                self.cards.append(Card(target, index + 1, card_interfaces))
            self.a, self.b = host_socket(namespace_a), host_socket(namespace_b)
        except BaseException:
            self.close()
            raise

    def close(self) -> list[int]:
        codes = []
        for card in self.cards:
            codes.append(card.stop())
        for name in ("a", "b"):
            if hasattr(self, name):
                getattr(self, name).close()
        self.lab.close()
        return codes


@pytest.fixture
def two_cards(target: Target) -> Iterator[Network]:
    network = Network(target, 2)
    yield network
    network.close()


@pytest.fixture
def one_card(target: Target) -> Iterator[Network]:
    network = Network(target, 1)
    yield network
    network.close()


def test_two_cards_forward_append_traces_and_count(two_cards: Network) -> None:
    c1, c2 = two_cards.cards
    c1.configure(card_id=11)
    c2.configure(card_id=12)
    c1.insert(
        c1.entry(
            "MyIngress.host_in",
            {"standard_metadata.ingress_port": 1},
            "MyIngress.from_host",
            {"pe": 0, "rclass": 0},
        ),
        c1.route(1, dst_pe=1, out_port=2),
    )
    c2.insert(c2.route(1, dst_pe=1, out_port=2))
    for probe_id in range(20):  # what the host writes into source, class, VC and hops is overwritten
        two_cards.a.send(probe(1, probe_id, class_vc=0x05, hops=3))
    got = [parse(frame) for frame in receive(two_cards.b, 20, 10.0, TWINNET)]
    assert [p.probe_id for p in got] == list(range(20))
    for packet in got:
        assert (packet.dst_pe, packet.src_pe, packet.rclass, packet.vc, packet.hop_count) == (1, 0, 0, 0, 2)
        assert [t[:5] for t in packet.trace] == [(12, 1, 2, 0, 0), (11, 1, 2, 0, 0)]  # newest first
    two_cards.a.send(probe(dst_pe=5, probe_id=99))  # no route on the first card
    assert receive(two_cards.b, 1, 0.5, TWINNET) == []
    time.sleep(0.2)
    assert c1.counter("MyIngress.rx_port", 1)[0] == 21
    assert c2.counter("MyIngress.rx_port", 1)[0] == 20
    assert c1.counter("MyIngress.drops", DROP_NO_ROUTE)[0] == 1
    assert c2.counter("MyIngress.drops", DROP_NO_ROUTE)[0] == 0


def test_high_vc_overtakes_low_vc_under_a_rate_limit(one_card: Network) -> None:
    (card,) = one_card.cards
    card.configure(card_id=21)
    card.insert(card.route(1, dst_pe=1, out_port=2, vc=0), card.route(1, dst_pe=2, out_port=2, vc=1))
    card.set_rate(2, 100)
    low = [probe(1, i) for i in range(30)]
    high = [probe(2, 100 + i) for i in range(10)]
    for frame in low + high:
        one_card.a.send(frame)
    got = [parse(frame) for frame in receive(one_card.b, 40, 10.0, TWINNET)]
    order = [p.probe_id for p in got]
    assert sorted(order) == list(range(30)) + list(range(100, 110))
    last_high = max(order.index(100 + i) for i in range(10))
    assert sum(1 for probe_id in order[:last_high] if probe_id < 100) <= 8, order
    assert order[-1] < 100
    for packet in got:
        assert packet.trace[0][3:5] == ((1, 7) if packet.probe_id >= 100 else (0, 0))  # trace: vc, priority
    assert max(packet.trace[0][5] for packet in got) >= 10  # enq_qdepth shows the queue filling


def test_bad_writes_are_rejected_with_their_codes_and_change_nothing(one_card: Network) -> None:
    (card,) = one_card.cards
    card.insert(card.route(1, dst_pe=1, out_port=2))
    wildcard = p4runtime_pb2.Entity()
    wildcard.table_entry.SetInParent()
    before = card.client.read([wildcard])
    unknown_table = card.route(1, dst_pe=3, out_port=2)
    unknown_table.table_entry.table_id = 0x02FFFFFF
    wrong_action = card.route(1, dst_pe=4, out_port=2)
    wrong_action.table_entry.action.action.action_id = next(
        a.preamble.id for a in card.target.p4info.actions if a.preamble.name == "MyIngress.set_queue"
    )
    too_wide = card.route(1, dst_pe=5, out_port=2)
    too_wide.table_entry.action.action.params[0].value = b"\x02\x00"  # 512 in a 9-bit port
    long_key = card.route(1, dst_pe=6, out_port=2)
    long_key.table_entry.match[1].exact.value = b"\x01\x00\x06"  # 65542 in 16 bits (zero padding is fine)
    cases = [
        (INSERT, card.route(1, dst_pe=1, out_port=2), code_pb2.ALREADY_EXISTS),
        (DELETE, card.route(1, dst_pe=2, out_port=2), code_pb2.NOT_FOUND),
        (MODIFY, card.route(1, dst_pe=2, out_port=2), code_pb2.NOT_FOUND),
        # An unknown table id: the P4Runtime spec's NOT_FOUND on the embedded target; bmv2's PI
        # answers INVALID_ARGUMENT ("Invalid P4 id"), its documented behaviour.
        (INSERT, unknown_table, code_pb2.INVALID_ARGUMENT if card.target.bmv2 else code_pb2.NOT_FOUND),
        (INSERT, wrong_action, code_pb2.INVALID_ARGUMENT),
        (INSERT, too_wide, code_pb2.INVALID_ARGUMENT),
        (INSERT, long_key, code_pb2.INVALID_ARGUMENT),
    ]
    for kind, entity, code in cases:
        with pytest.raises(WriteFailure) as failure:
            card.client.write([update(kind, entity)])
        assert failure.value.code == grpc.StatusCode.UNKNOWN
        assert [e.canonical_code for e in failure.value.errors] == [code], (kind, entity)
    assert card.client.read([wildcard]) == before


def test_a_lower_election_id_cannot_write(one_card: Network) -> None:
    (card,) = one_card.cards
    backup = P4RuntimeClient(card.address, card.client.device_id, (0, 5))
    try:
        answer = backup.arbitrate()
        assert answer.status.code == code_pb2.ALREADY_EXISTS and answer.election_id.low == 10
        with pytest.raises(WriteFailure) as failure:
            backup.write([update(INSERT, card.route(1, dst_pe=1, out_port=2))])
        assert failure.value.code == grpc.StatusCode.PERMISSION_DENIED
        wildcard = p4runtime_pb2.Entity()
        wildcard.table_entry.table_id = card.route(1, 1, 2).table_entry.table_id
        assert card.client.read([wildcard]) == []
    finally:
        backup.close()


def test_malformed_frames_are_counted_and_never_stop_the_card(one_card: Network) -> None:
    (card,) = one_card.cards
    card.configure(card_id=31)
    card.insert(card.route(1, dst_pe=1, out_port=2))
    drain(one_card.b)
    for index in range(5):  # announces 3 trace entries, carries none: PacketTooShort
        one_card.a.send(probe(1, index, trace_count=3)[:34])
    for _ in range(4):  # not twinnet, not IPv4
        one_card.a.send(bytes.fromhex("0200000000aa020000000001") + b"\x12\x34" + os.urandom(50))
    one_card.a.send(probe(1, 77))
    got = [parse(frame) for frame in receive(one_card.b, 1, 5.0, TWINNET)]
    assert [p.probe_id for p in got] == [77]
    assert card.counter("MyIngress.drops", DROP_MALFORMED)[0] == 5
    assert card.counter("MyIngress.drops", DROP_UNKNOWN_TYPE)[0] == 4
    assert card.process.poll() is None


def test_sigterm_stops_the_card_cleanly(target: Target) -> None:
    network = Network(target, 1)
    (card,) = network.cards
    card.configure(card_id=41)
    codes = network.close()
    if not target.bmv2:
        assert codes == [0]
        assert "Traceback" not in card.errors(), card.errors()
    else:
        assert card.process.returncode is not None
