"""Packet-in and packet-out through the CPU port (``--cpu-port``) over the P4Runtime StreamChannel.

A small program sends every frame from a front port to the CPU port and every frame
from the CPU port to port 1; the controller sees host frames as PacketIn and its
PacketOut frames reach the host. The program has no controller headers, so metadata
is empty and payloads are whole frames.
"""

from __future__ import annotations

import queue
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.rpc import code_pb2
from test_switch_net import Lab, frame, host_socket, receive

from p4switch.daemon.switch import Switch, SwitchOptions
from p4switch.p4runtime.client import P4RuntimeClient

pytestmark = pytest.mark.root

CPU_PORT = 64
PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
struct headers_t { ethernet_t ethernet; }
struct metadata_t { }
parser P(packet_in packet, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    state start { packet.extract(hdr.ethernet); transition accept; }
}
control VC(inout headers_t hdr, inout metadata_t meta) { apply { } }
control I(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.ingress_port == CPU) { sm.egress_spec = 1; } else { sm.egress_spec = CPU; }
    }
}
control E(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout metadata_t meta) { apply { } }
control D(packet_out packet, in headers_t hdr) { apply { packet.emit(hdr.ethernet); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
""".replace("CPU", str(CPU_PORT))


@pytest.fixture
def cpu_switch(tmp_path: Path) -> Iterator[tuple[P4RuntimeClient, object]]:
    source = tmp_path / "to_cpu.p4"
    source.write_text(PROGRAM)
    try:
        from p4switch import compile_program

        program = compile_program(str(source))
    except Exception as error:  # the language core cannot run it (yet)
        pytest.skip(f"the language core cannot compile the CPU-port program: {type(error).__name__}: {error}")
    lab = Lab("k")
    switch = client = host = None
    try:
        switch_end, namespace = lab.host_link("s1p1", "a")
        options = SwitchOptions(
            interfaces=[(1, switch_end)], grpc_address="127.0.0.1:0", control_port=None, cpu_port=CPU_PORT
        )
        switch = Switch(options)
        switch.start()
        client = P4RuntimeClient(f"127.0.0.1:{switch.grpc_port}", 0, (0, 1))
        assert client.arbitrate().status.code == code_pb2.OK
        client.set_pipeline(program.p4info, PROGRAM.encode())
        host = host_socket(namespace)
        yield client, host
    finally:
        if client is not None:
            client.close()
        if switch is not None:
            switch.stop()
        if host is not None:
            host.close()
        lab.close()


def test_host_frames_reach_the_controller_and_packet_out_reaches_the_host(cpu_switch) -> None:
    client, host = cpu_switch
    sent = frame(0x42, b"to the controller")
    host.send(sent)
    packet_in = None
    while packet_in is None:
        message = client.stream_messages.get(timeout=5)
        assert message is not None, "stream closed"
        if message.HasField("packet"):
            packet_in = message.packet
    assert packet_in.payload == sent and list(packet_in.metadata) == []
    out = frame(0x43, b"from the controller")
    client.send_packet_out(out)
    assert receive(host, 1, 3.0) == [out]
    with pytest.raises(queue.Empty):  # the frame sent out is not echoed back as a packet-in
        while True:
            message = client.stream_messages.get(timeout=0.5)
            assert not (message is not None and message.HasField("packet"))
