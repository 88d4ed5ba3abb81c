"""The switch's P4Runtime server under load and abuse (real gRPC on loopback, no root): a request above
the receive limit, a batch of hundreds of failed updates as the controller sees it, and stopping the
switch during a long Write batch or a compile."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from p4.v1 import p4runtime_pb2

from controller.p4runtime_conn import CardConnection, CardEndpoint
from controller.translate import DELETE, INSERT, EntrySpec, spec_update
from p4src import CARD_PROGRAM
from p4src import card as names
from p4switch.daemon.program import PipelineSlot
from p4switch.p4runtime.info import P4InfoIndex
from p4switch.p4runtime.server import (
    MAX_RECEIVE_BYTES,
    SERVICE_NAME,
    P4RuntimeService,
    p4runtime_handlers,
    start_p4runtime_server,
)

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def program():
    from p4switch import compile_program

    return compile_program(str(CARD_PROGRAM))


class CountingService(P4RuntimeService):
    """The service, counting the Write requests that reach it (parsed by gRPC)."""

    writes = 0

    def Write(self, request, context, raw=None):  # noqa: N802 - gRPC method name
        type(self).writes += 1
        return super().Write(request, context, raw=raw)


@pytest.fixture
def card(program) -> Iterator[tuple[CountingService, CardConnection]]:
    """A card on loopback running the card program, with the controller connected as primary."""
    CountingService.writes = 0
    service = CountingService(1, PipelineSlot())
    server, port = start_p4runtime_server("127.0.0.1:0", service)
    index = P4InfoIndex(program.p4info)
    connection = CardConnection(CardEndpoint("c1", 1, 1, f"127.0.0.1:{port}"), index)
    try:
        connection.open()
        connection.set_pipeline(program.p4info, CARD_PROGRAM.read_bytes())
        yield service, connection
    finally:
        connection.close()
        server.stop(grace=0).wait(5)


def routes(count: int, first_pe: int = 0) -> list[EntrySpec]:
    return [
        EntrySpec(names.ROUTE, (1, pe, 0), names.SET_ROUTE, (2, 0))
        for pe in range(first_pe, first_pe + count)
    ]


def test_a_write_above_the_receive_limit_is_refused_before_it_is_parsed(card) -> None:
    service, connection = card
    index = connection.index
    request = p4runtime_pb2.WriteRequest(device_id=1)
    request.election_id.high, request.election_id.low = connection.election_id
    update = spec_update(index, INSERT, routes(1)[0])
    update.entity.table_entry.match[1].exact.value = b"\x00" * (64 * 1024 * 1024)  # a 64 MiB Write
    request.updates.append(update)
    assert request.ByteSize() > MAX_RECEIVE_BYTES
    with pytest.raises(grpc.RpcError) as error:
        connection.stub.Write(request, timeout=60)
    assert error.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert service.writes == 0  # the handler never saw it: the message was not kept
    assert connection.write([spec_update(index, INSERT, routes(1)[0])], str) == []  # the switch goes on
    assert service.writes == 1


def test_write_bytes_that_are_not_a_write_request_are_invalid_argument(card) -> None:
    service, connection = card
    write = connection.channel.unary_unary(f"/{SERVICE_NAME}/Write")
    with pytest.raises(grpc.RpcError) as error:
        write(b"\x22\x05\x08", timeout=10)  # an update whose length runs past the end
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "cannot be parsed" in error.value.details()
    assert service.writes == 0
    entries = routes(3)
    assert connection.write([spec_update(connection.index, INSERT, spec) for spec in entries], str) == []
    assert sorted(spec for _, spec in connection.read_specs([_wildcard(connection.index)])) == sorted(entries)


def test_the_server_serves_every_method_of_the_p4runtime_service() -> None:
    methods = p4runtime_pb2.DESCRIPTOR.services_by_name["P4Runtime"].methods
    assert set(p4runtime_handlers(P4RuntimeService(1, PipelineSlot()))) == {method.name for method in methods}


def test_hundreds_of_failed_updates_in_one_batch_are_each_reported(card) -> None:
    _, connection = card
    index = connection.index
    present, absent = routes(250), routes(250, first_pe=1000)
    assert connection.write([spec_update(index, INSERT, spec) for spec in present], str) == []
    # 500 updates in one Write: 250 DELETEs of entries that are not there, 250 new INSERTs
    batch = [spec_update(index, DELETE, spec) for spec in absent] + [
        spec_update(index, INSERT, spec) for spec in routes(250, first_pe=2000)
    ]
    failures = connection.write(batch, lambda i: f"update {i}", batch_size=500)
    assert [failure.entry for failure in failures] == [f"update {i}" for i in range(250)]
    assert {(failure.kind, failure.code) for failure in failures} == {("delete", "NOT_FOUND")}
    held = connection.read_specs([_wildcard(index)])
    assert len(held) == 500


def _wildcard(index: P4InfoIndex) -> p4runtime_pb2.Entity:
    entity = p4runtime_pb2.Entity()
    entity.table_entry.table_id = index.table_id(names.ROUTE)
    return entity


def test_a_stopping_switch_ends_a_long_write_batch_at_its_next_slice(card) -> None:
    service, connection = card
    index = connection.index
    count = 60_000
    updates = [spec_update(index, INSERT, spec) for spec in routes(count)]
    outcome: list = []
    writer = threading.Thread(target=lambda: outcome.append(connection.write(updates, str, batch_size=count)))
    writer.start()
    keys = service.slot.entities.keys[index.table_id(names.ROUTE)]
    deadline = time.monotonic() + 30
    while not keys and time.monotonic() < deadline:  # the batch has started
        time.sleep(0.001)
    service.stop()
    writer.join(timeout=30)
    assert not writer.is_alive()
    (failures,) = outcome
    applied = count - len(failures)
    assert 0 < applied < count
    assert {(failure.kind, failure.code) for failure in failures} == {("insert", "UNAVAILABLE")}
    assert [failure.entry for failure in failures] == [str(i) for i in range(applied, count)]  # the tail
    assert len(keys) == applied


SLOW_COMPILE_SWITCH = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
import p4switch.daemon.cli as cli
import p4switch.daemon.switch as switch_module
def slow_compile(path, include_dirs=()):
    print("compiling", flush=True)
    time.sleep(120)
original = switch_module.Switch.__init__
def patched(self, options, compile_function=None):
    original(self, options, slow_compile)
switch_module.Switch.__init__ = patched
sys.exit(cli.main(sys.argv[2:]))
"""


def test_sigterm_during_a_compile_stops_the_switch_promptly(program) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-c", SLOW_COMPILE_SWITCH, str(REPO), "--no-p4", "--no-side-channel"]
    command += ["--device-id", "1", "--", "--grpc-server-addr", f"127.0.0.1:{port}"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    connection = CardConnection(CardEndpoint("c1", 1, 1, f"127.0.0.1:{port}"), P4InfoIndex(program.p4info))
    try:
        connection.open()
        pusher = threading.Thread(
            target=_ignore_errors, args=(connection.set_pipeline, program.p4info, b"control { }"), daemon=True
        )
        pusher.start()
        while (line := process.stdout.readline()) and line.strip() != "compiling":
            pass
        assert line.strip() == "compiling"  # the compile runs in a gRPC worker now
        signalled = time.monotonic()
        os.kill(process.pid, signal.SIGTERM)
        assert process.wait(timeout=20) == 0
        assert time.monotonic() - signalled < 10  # the compile would take 120 s
    finally:
        connection.close()
        if process.poll() is None:
            process.kill()
            process.wait()


def _ignore_errors(function, *args) -> None:
    try:
        function(*args)
    except Exception:  # the switch went away mid-call: expected here
        pass
