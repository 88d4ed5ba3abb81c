"""Several cards in one switch process on real veth pairs, in-process, with the stand-in pipeline.

h1 -- c1 -- c2 -- c3 -- h2, the three cards in one SwitchHost (one forwarding loop, one
gRPC server, one side-channel thread): frames cross all three cards both ways, each
card's queues and rates are its own, and a card killed over its side channel goes
silent while the cards beside it go on forwarding.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from google.rpc import code_pb2
from test_switch_dataplane import install_route
from test_switch_net import Lab, drain, frame, host_socket, receive
from test_switch_standin import SOURCE, stand_in_compile, stand_in_p4info

from p4switch.daemon.card import Card, SwitchOptions
from p4switch.daemon.host import HostOptions, SwitchHost
from p4switch.daemon.host_config import CardConfig
from p4switch.daemon.pfc import PfcSettings
from p4switch.daemon.side_channel import request
from p4switch.p4runtime.client import P4RuntimeClient

pytestmark = pytest.mark.root


class HostLine:
    """h1 -- c1 -- ... -- cN -- h2, all cards in one SwitchHost; ``switches``: (card, client) per card.

    Each card is seen as test_switch_dataplane's Line sees a switch: ``.dataplane`` and
    ``.control.port`` (its side channel's address).
    """

    def __init__(self, cards: int, folder: Path, lab_tag: str = "m", **options) -> None:
        self.lab = Lab(lab_tag)
        self.folder = folder
        self.switches: list[tuple[Card, P4RuntimeClient]] = []
        self.host: SwitchHost | None = None
        try:
            first, h1 = self.lab.host_link("c1p1", "a")
            interfaces = [[(1, first)]]
            for index in range(1, cards):
                left, right = self.lab.switch_link(f"c{index}p2", f"c{index + 1}p1")
                interfaces[-1].append((2, left))
                interfaces.append([(1, right)])
            last, h2 = self.lab.host_link(f"c{cards}p2", "b")
            interfaces[-1].append((2, last))
            configs = [
                CardConfig(10 + index, ports, f"unix:{folder}/c{index}.ctl")
                for index, ports in enumerate(interfaces)
            ]
            base = SwitchOptions(grpc_address="127.0.0.1:0", priority_queues=8, **options)
            self.host = SwitchHost(
                HostOptions(base, configs, f"unix:{folder}/group.ctl"), compile_function=stand_in_compile
            )
            self.host.start()
            for config in configs:
                card = self.host.cards[config.device_id]
                card.control = SimpleNamespace(port=config.control_address)  # type: ignore[attr-defined]
                client = P4RuntimeClient(f"127.0.0.1:{self.host.grpc_port}", config.device_id, (0, 1))
                assert client.arbitrate().status.code == code_pb2.OK
                client.set_pipeline(stand_in_p4info(), SOURCE.encode())
                self.switches.append((card, client))
            self.h1, self.h2 = host_socket(h1), host_socket(h2)
        except BaseException:
            self.close()
            raise

    def side(self, index: int, message: dict) -> dict:
        answer = request(f"unix:{self.folder}/c{index}.ctl", message)
        assert answer["ok"], answer
        return answer

    def stats(self, index: int) -> dict:
        return self.side(index, {"cmd": "stats"})

    def close(self) -> None:
        for _, client in self.switches:
            client.close()
        if self.host is not None:
            self.host.stop()
        for name in ("h1", "h2"):
            if hasattr(self, name):
                getattr(self, name).close()
        self.lab.close()


@pytest.fixture
def line3(tmp_path: Path) -> Iterator[HostLine]:
    line = HostLine(3, tmp_path)
    yield line
    line.close()
    names = {thread.name for thread in threading.enumerate()}
    assert not names & {"dataplane", "control"}, names


def port_row(stats: dict, number: int) -> dict:
    return next(p for p in stats["ports"] if p["port"] == number)


def test_cards_of_one_process_forward_between_each_other_and_to_hosts(line3: HostLine) -> None:
    clients = [client for _, client in line3.switches]
    for client in clients:
        install_route(client, 1, 0xAA, 2)  # h1 -> h2 through c1, c2, c3
        install_route(client, 2, 0xBB, 1)  # h2 -> h1
    east = [frame(0xAA, f"east {i}".encode()) for i in range(30)]
    west = [frame(0xBB, f"west {i}".encode()) for i in range(30)]
    for a, b in zip(east, west, strict=True):
        line3.h1.send(a)
        line3.h2.send(b)
    assert receive(line3.h2, 30, 3.0) == east
    assert receive(line3.h1, 30, 3.0) == west
    time.sleep(0.1)  # a batch's tx_frames is added after its last frame is sent
    for index in range(3):  # every card forwarded each frame once in each direction
        stats = line3.stats(index)
        assert port_row(stats, 2)["tx_frames"] == 30 and port_row(stats, 1)["tx_frames"] == 30
        # anything else the kernel put on a link (none expected) has no route: dropped by ingress
        received = port_row(stats, 1)["rx_frames"] + port_row(stats, 2)["rx_frames"]
        assert received - stats["counters"]["ingress_drops"] == 60
        assert stats["device_id"] == 10 + index


def test_a_rate_limit_on_one_card_paces_only_that_card(line3: HostLine) -> None:
    clients = [client for _, client in line3.switches]
    for client in clients:
        install_route(client, 1, 0xAA, 2)
    line3.side(1, {"cmd": "set_queue_rate", "rate_pps": 100, "port": 2})
    sent = [frame(0xAA, f"paced {i}".encode()) for i in range(20)]
    started = time.monotonic()
    for data in sent:
        line3.h1.send(data)
    got = receive(line3.h2, 20, 5.0)
    elapsed = time.monotonic() - started
    assert got == sent
    # 20 frames at 100 pps with a burst of 4: 16 intervals of 10 ms after the burst
    assert 0.14 < elapsed < 3.0
    assert port_row(line3.stats(1), 2)["rate_pps"] == 100
    assert port_row(line3.stats(0), 2)["rate_pps"] is None


def test_a_killed_card_goes_silent_and_the_others_go_on(line3: HostLine) -> None:
    clients = [client for _, client in line3.switches]
    for client in clients:
        install_route(client, 1, 0xAA, 2)
        install_route(client, 2, 0xBB, 1)
    line3.h1.send(frame(0xAA, b"before"))
    assert len(receive(line3.h2, 1, 2.0)) == 1
    assert request(f"unix:{line3.folder}/c1.ctl", {"cmd": "kill"}) == {"ok": True}
    drain(line3.h1)
    drain(line3.h2)
    c1_before = port_row(line3.stats(0), 2)["tx_frames"]
    c3_before = port_row(line3.stats(2), 1)["tx_frames"]
    for i in range(10):
        line3.h1.send(frame(0xAA, f"east {i}".encode()))
        line3.h2.send(frame(0xBB, f"west {i}".encode()))
    assert receive(line3.h2, 1, 0.5) == [] and receive(line3.h1, 1, 0.2) == []
    time.sleep(0.1)  # a batch's tx_frames is added after its last frame is sent
    # c1 and c3 still forward towards the dead card; nothing comes back out of it
    assert port_row(line3.stats(0), 2)["tx_frames"] == c1_before + 10
    assert port_row(line3.stats(2), 1)["tx_frames"] == c3_before + 10
    killed = line3.host.cards[11].dataplane
    assert all(port.sock is None for port in killed.ports.values())  # its ports are closed
    health = request(f"unix:{line3.folder}/group.ctl", {"cmd": "health"})
    assert health["cards"]["11"] == {"alive": False, "failure": "killed"} and health["alive"]


def test_lossless_cards_of_one_process_pause_each_other(tmp_path: Path) -> None:
    """c2's slow port pauses c1 over their link; c1 pauses the host: every frame arrives."""
    from test_switch_lossless import FRAMES, SEND_PPS, SLOW_PPS, send_obeying_pauses

    line = HostLine(2, tmp_path, lab_tag="q", queue_depth=None, lossless=PfcSettings())
    try:
        for _, client in line.switches:
            install_route(client, 1, 0xAA, 2)
        line.side(1, {"cmd": "set_queue_rate", "rate_pps": SLOW_PPS, "port": 2})
        sent = [frame(0xAA, index.to_bytes(4, "big")) for index in range(FRAMES)]
        host_pauses = send_obeying_pauses(line.h1, sent, SEND_PPS)
        got = receive(line.h2, FRAMES, FRAMES / SLOW_PPS + 3.0)
        s1, s2 = line.stats(0), line.stats(1)
        drops = sum(q["tail_drops"] for s in (s1, s2) for p in s["ports"] for q in p["queues"])
        assert (len(got), drops) == (FRAMES, 0) and got == sent
        s2_in = port_row(s2, 1)["pfc"][0]
        s1_out = port_row(s1, 2)["pfc"][0]
        assert (
            s2_in["pause_frames_sent"] >= 1 and s1_out["pause_frames_received"] == s2_in["pause_frames_sent"]
        )
        # the host reads pauses while it sends: one sent after its last frame is not seen
        assert 1 <= host_pauses <= port_row(s1, 1)["pfc"][0]["pause_frames_sent"]
    finally:
        line.close()
