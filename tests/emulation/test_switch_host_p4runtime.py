"""Many cards in one switch process: P4Runtime per device id, side channels, a card killed (no root needed).

Cards without ports, in-process, on the stand-in pipeline: one gRPC server routes every
request by its device id, each device has its own arbitration and tables, a device the
process does not host (or no longer hosts) gets NOT_FOUND naming it.
"""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2
from test_switch_standin import ACTION_FORWARD_ID, SOURCE, TABLE_ID, stand_in_compile, stand_in_p4info

from p4switch.daemon.card import SwitchOptions
from p4switch.daemon.host import HostOptions, SwitchHost
from p4switch.daemon.host_config import CardConfig
from p4switch.daemon.side_channel import request
from p4switch.p4runtime.client import P4RuntimeClient, table_entry, update

DEVICES = (3, 4, 9)


def route(in_port: int, dst: int, out_port: int) -> p4runtime_pb2.Entity:
    return table_entry(
        TABLE_ID,
        [(1, bytes([in_port])), (2, dst.to_bytes(6, "big"))],
        ACTION_FORWARD_ID,
        [(1, bytes([out_port])), (2, bytes([0]))],
    )


def read_routes(client: P4RuntimeClient) -> set[tuple[int, int]]:
    """(ingress port, destination) of every entry of the route table."""
    wildcard = p4runtime_pb2.Entity()
    wildcard.table_entry.table_id = TABLE_ID
    found = set()
    for entity in client.read([wildcard]):
        match = {m.field_id: int.from_bytes(m.exact.value, "big") for m in entity.table_entry.match}
        found.add((match[1], match[2]))
    return found


class Host:
    """A SwitchHost of cards without ports, each with its side channel, and a client per device."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        cards = [CardConfig(device, [], f"unix:{folder}/c{device}.ctl") for device in DEVICES]
        options = HostOptions(
            SwitchOptions(grpc_address="127.0.0.1:0", priority_queues=8), cards, f"unix:{folder}/group.ctl"
        )
        self.host = SwitchHost(options, compile_function=stand_in_compile)
        self.host.start()
        self.address = f"127.0.0.1:{self.host.grpc_port}"
        self.clients: dict[int, P4RuntimeClient] = {}
        for device in DEVICES:
            client = P4RuntimeClient(self.address, device, (0, 1))
            self.clients[device] = client
            assert client.arbitrate().status.code == code_pb2.OK
            client.set_pipeline(stand_in_p4info(), SOURCE.encode())

    def close(self) -> None:
        for client in self.clients.values():
            client.close()
        self.host.stop()


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Host]:
    made = Host(tmp_path)
    yield made
    made.close()


def test_writes_to_one_device_leave_the_others_unchanged(host: Host) -> None:
    expected: dict[int, set[tuple[int, int]]] = {device: set() for device in DEVICES}
    for position, device in enumerate(DEVICES):
        routes = {(1 + position, 0xA0 + k) for k in range(position + 2)}  # a different set per device
        host.clients[device].write(
            [update(p4runtime_pb2.Update.INSERT, route(port, dst, 2)) for port, dst in sorted(routes)]
        )
        expected[device] = routes
        for other in DEVICES:  # after every write: every device holds exactly its own
            assert read_routes(host.clients[other]) == expected[other]


def test_a_device_the_process_does_not_host_is_not_found(host: Host) -> None:
    stranger = P4RuntimeClient(host.address, 5, (0, 1))
    try:
        with pytest.raises(grpc.RpcError) as caught:
            stranger.read([p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(table_id=TABLE_ID))])
        assert caught.value.code() == grpc.StatusCode.NOT_FOUND and "device id 5" in caught.value.details()
        with pytest.raises(grpc.RpcError) as caught:
            stranger.stub.Write(p4runtime_pb2.WriteRequest(device_id=5), timeout=5)
        assert caught.value.code() == grpc.StatusCode.NOT_FOUND and "device id 5" in caught.value.details()
        with pytest.raises(grpc.RpcError) as caught:
            stranger.stub.GetForwardingPipelineConfig(
                p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=5), timeout=5
            )
        assert caught.value.code() == grpc.StatusCode.NOT_FOUND
        stranger.arbitrate(timeout=5)  # the stream ends with NOT_FOUND instead of an answer
    except ConnectionError:
        pass
    finally:
        stranger.close()
    assert stranger.stream_error is not None and stranger.stream_error.code() == grpc.StatusCode.NOT_FOUND
    assert "device id 5" in stranger.stream_error.details()


def test_arbitration_is_per_device(host: Host) -> None:
    """A higher election id on device 3 leaves device 4's primary (0, 1) primary: it may still write."""
    higher = P4RuntimeClient(host.address, 3, (0, 7))
    lower_on_3 = P4RuntimeClient(host.address, 3, (0, 2))
    try:
        assert higher.arbitrate().status.code == code_pb2.OK  # 7 > 1: the new primary of device 3
        assert lower_on_3.arbitrate().status.code == code_pb2.ALREADY_EXISTS  # 2 < 7 on device 3
        with pytest.raises(Exception) as refused:
            host.clients[3].write([update(p4runtime_pb2.Update.INSERT, route(1, 0xB1, 2))])
        assert refused.value.code == grpc.StatusCode.PERMISSION_DENIED  # type: ignore[attr-defined]
        host.clients[4].write(
            [update(p4runtime_pb2.Update.INSERT, route(1, 0xB1, 2))]
        )  # (0, 1) still primary of 4
        higher.write([update(p4runtime_pb2.Update.INSERT, route(1, 0xB2, 2))])
        assert read_routes(host.clients[4]) == {(1, 0xB1)}
        assert read_routes(host.clients[3]) == {(1, 0xB2)}
    finally:
        higher.close()
        lower_on_3.close()


def test_a_killed_card_is_gone_and_the_others_go_on(host: Host) -> None:
    folder = host.folder
    for device in DEVICES:  # side channels are the owner's only
        assert stat.S_IMODE((folder / f"c{device}.ctl").stat().st_mode) == 0o600
    assert request(f"unix:{folder}/c4.ctl", {"cmd": "kill"}) == {"ok": True}
    assert not (folder / "c4.ctl").exists()
    with pytest.raises(grpc.RpcError) as caught:
        host.clients[4].read([p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(table_id=TABLE_ID))])
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND and "device id 4" in caught.value.details()
    assert host.clients[4].stream_messages.get(timeout=5) is None  # its stream ended
    host.clients[3].write([update(p4runtime_pb2.Update.INSERT, route(1, 0xC3, 2))])
    assert read_routes(host.clients[3]) == {(1, 0xC3)}
    health = request(f"unix:{folder}/group.ctl", {"cmd": "health"})
    assert health["ok"] and health["alive"] and health["failure"] is None
    assert health["cards"] == {
        "3": {"alive": True, "failure": None},
        "4": {"alive": False, "failure": "killed"},
        "9": {"alive": True, "failure": None},
    }
    card_health = request(f"unix:{folder}/c9.ctl", {"cmd": "health"})
    assert card_health["alive"] is True and card_health["beat_age_s"] < 1.0
    assert request(f"unix:{folder}/c3.ctl", {"cmd": "stats"})["device_id"] == 3


def test_the_process_side_channel_refuses_other_commands(host: Host) -> None:
    answer = request(f"unix:{host.folder}/group.ctl", {"cmd": "stats"})
    assert answer["ok"] is False and "stats" in answer["error"]
    answer = request(f"unix:{host.folder}/c3.ctl", {"cmd": "set_queue_rate", "rate_pps": -1})
    assert answer["ok"] is False
