"""The cards of one process share the compiled program (compiled once) and nothing they change.

p4src/card.p4 loaded into a two-card SwitchHost (cards without ports): one program, one
P4Info index and one source text for both, but each card its own pipeline, tables and
counters, and its own config object (a cookie set on one is not the other's).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from p4.v1 import p4runtime_pb2

from p4src import CARD_PROGRAM
from p4switch.daemon.card import SwitchOptions
from p4switch.daemon.host import HostOptions, SwitchHost
from p4switch.daemon.host_config import CardConfig
from p4switch.p4runtime.client import named_table_entry, update


@pytest.fixture
def host() -> Iterator[SwitchHost]:
    options = HostOptions(
        SwitchOptions(program=str(CARD_PROGRAM), grpc_address="127.0.0.1:0", priority_queues=8),
        [CardConfig(1), CardConfig(2)],
    )
    made = SwitchHost(options)
    made.start()
    yield made
    made.stop()


def test_the_program_is_shared_and_the_state_is_not(host: SwitchHost) -> None:
    one, two = host.cards[1].slot, host.cards[2].slot
    assert one.config.program is two.config.program  # compiled once
    assert one.config.index is two.config.index and one.config.device_config is two.config.device_config
    assert one.config is not two.config and one.pipeline is not two.pipeline
    p4info = one.config.p4info
    entry = named_table_entry(
        p4info,
        "MyIngress.route",
        {"standard_metadata.ingress_port": 1, "hdr.tw.dst_pe": 7, "hdr.tw.rclass": 0},
        "MyIngress.set_route",
        {"port": 2, "vc": 0},
    )
    with one.control():
        one.entities.write(update(p4runtime_pb2.Update.INSERT, entry))
    assert len(one.pipeline.table_entries("MyIngress.route")) == 1
    assert two.pipeline.table_entries("MyIngress.route") == []
    frame = bytes.fromhex("02000000000202000000000188b5") + bytes(50)
    one.pipeline.ingress(frame, 3)
    assert one.pipeline.counter_read("MyIngress.rx_port", 3)[0] == 1
    assert two.pipeline.counter_read("MyIngress.rx_port", 3)[0] == 0


def test_a_config_pushed_to_every_card_is_kept_once() -> None:
    """Two cards sent the same config over P4Runtime share its program, index, P4Info and text."""
    from p4switch import compile_program
    from p4switch.p4runtime.client import P4RuntimeClient

    options = HostOptions(
        SwitchOptions(grpc_address="127.0.0.1:0", priority_queues=8), [CardConfig(1), CardConfig(2)]
    )
    host = SwitchHost(options)
    host.start()
    clients = []
    try:
        p4info = compile_program(str(CARD_PROGRAM)).p4info
        for device in (1, 2):
            client = P4RuntimeClient(f"127.0.0.1:{host.grpc_port}", device, (0, 1))
            clients.append(client)
            client.arbitrate()
            client.set_pipeline(p4info, CARD_PROGRAM.read_bytes())
        one, two = host.cards[1].slot.config, host.cards[2].slot.config
        assert one is not two and one.program is two.program
        assert one.index is two.index and one.p4info is two.p4info and one.device_config is two.device_config
        assert one.p4info == p4info and one.device_config == CARD_PROGRAM.read_bytes()
        assert host.cards[1].slot.pipeline is not host.cards[2].slot.pipeline
    finally:
        for client in clients:
            client.close()
        host.stop()
