"""A minimal P4Runtime client: one stream with arbitration, pipeline config, Write and Read.

Used by the switch's tests and benchmark; it speaks plain P4Runtime, so it works
against ``simple_switch_grpc`` as well. Errors of a Write come back as
``WriteFailure`` with the per-update ``p4.v1.Error`` list decoded from the status
details.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Sequence

import grpc
from google.rpc import status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from p4switch.p4runtime.info import encode_bytestring


class WriteFailure(Exception):
    """A failed Write: the gRPC code and one (canonical_code, message) per update."""

    def __init__(self, code: grpc.StatusCode, details: str, errors: list[p4runtime_pb2.Error]) -> None:
        super().__init__(f"{code.name}: {details}")
        self.code = code
        self.details = details
        self.errors = errors


def write_errors_of(error: grpc.RpcError) -> list[p4runtime_pb2.Error]:
    """The per-update errors packed in a failed Write's ``grpc-status-details-bin``."""
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
            errors = []
            for packed in status.details:
                detail = p4runtime_pb2.Error()
                packed.Unpack(detail)
                errors.append(detail)
            return errors
    return []


class P4RuntimeClient:
    """A controller connection to one device; ``arbitrate()`` opens the stream."""

    def __init__(self, address: str, device_id: int = 0, election_id: tuple[int, int] = (0, 1)) -> None:
        self.address = address
        self.device_id = device_id
        self.election_id = election_id
        self.channel = grpc.insecure_channel(address)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.stream_messages: queue.Queue = queue.Queue()
        self._requests: queue.Queue = queue.Queue()
        self._stream: grpc.Future | None = None
        self._reader: threading.Thread | None = None
        self.stream_error: grpc.RpcError | None = None

    # ----- stream ----------------------------------------------------------------------------
    def arbitrate(self, timeout: float = 5.0) -> p4runtime_pb2.MasterArbitrationUpdate:
        """Open the StreamChannel, send the arbitration, return the switch's first answer."""
        self._stream = self.stub.StreamChannel(iter(self._requests.get, None))
        self._reader = threading.Thread(target=self._read_stream, daemon=True)
        self._reader.start()
        self.send_arbitration()
        return self.next_arbitration(timeout)

    def send_arbitration(self) -> None:
        request = p4runtime_pb2.StreamMessageRequest()
        request.arbitration.device_id = self.device_id
        request.arbitration.election_id.high, request.arbitration.election_id.low = self.election_id
        self._requests.put(request)

    def send_packet_out(self, payload: bytes, metadata: Sequence[tuple[int, bytes]] = ()) -> None:
        request = p4runtime_pb2.StreamMessageRequest()
        request.packet.payload = payload
        for meta_id, value in metadata:
            meta = request.packet.metadata.add()
            meta.metadata_id, meta.value = meta_id, value
        self._requests.put(request)

    def next_arbitration(self, timeout: float = 5.0) -> p4runtime_pb2.MasterArbitrationUpdate:
        while True:
            message = self.stream_messages.get(timeout=timeout)
            if message is None:
                raise ConnectionError(f"stream closed: {self.stream_error}")
            if message.HasField("arbitration"):
                return message.arbitration

    def _read_stream(self) -> None:
        try:
            for message in self._stream:
                self.stream_messages.put(message)
        except grpc.RpcError as error:
            self.stream_error = error
        finally:
            self.stream_messages.put(None)

    def close(self) -> None:
        self._requests.put(None)
        if self._stream is not None:
            self._stream.cancel()
        if self._reader is not None:
            self._reader.join(timeout=5)
        self.channel.close()

    # ----- unary RPCs ------------------------------------------------------------------------
    def set_pipeline(
        self,
        p4info: p4info_pb2.P4Info,
        device_config: bytes,
        cookie: int = 0,
        action: int = p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT,
    ) -> None:
        """Set (or with COMMIT, which carries no config, commit the saved) forwarding pipeline config."""
        request = p4runtime_pb2.SetForwardingPipelineConfigRequest(device_id=self.device_id, action=action)
        request.election_id.high, request.election_id.low = self.election_id
        if action != p4runtime_pb2.SetForwardingPipelineConfigRequest.COMMIT:
            request.config.p4info.CopyFrom(p4info)
            request.config.p4_device_config = device_config
            request.config.cookie.cookie = cookie
        self.stub.SetForwardingPipelineConfig(request, timeout=120)

    def write(
        self,
        updates: Iterable[p4runtime_pb2.Update],
        atomicity: int = p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR,
    ) -> None:
        request = p4runtime_pb2.WriteRequest(device_id=self.device_id, atomicity=atomicity)
        request.election_id.high, request.election_id.low = self.election_id
        request.updates.extend(updates)
        try:
            self.stub.Write(request, timeout=60)
        except grpc.RpcError as error:
            raise WriteFailure(error.code(), error.details(), write_errors_of(error)) from error

    def read(self, entities: Iterable[p4runtime_pb2.Entity]) -> list[p4runtime_pb2.Entity]:
        request = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        request.entities.extend(entities)
        return [entity for response in self.stub.Read(request, timeout=60) for entity in response.entities]


def update(kind: int, entity: p4runtime_pb2.Entity) -> p4runtime_pb2.Update:
    """An Update of ``kind`` (p4runtime_pb2.Update.INSERT/MODIFY/DELETE) carrying ``entity``."""
    message = p4runtime_pb2.Update(type=kind)
    message.entity.CopyFrom(entity)
    return message


def table_entry(
    table_id: int,
    exact: Sequence[tuple[int, bytes]],
    action_id: int = 0,
    params: Sequence[tuple[int, bytes]] = (),
    priority: int = 0,
) -> p4runtime_pb2.Entity:
    """A table-entry entity with exact matches ``(field_id, value)`` and an action ``(param_id, value)``."""
    entity = p4runtime_pb2.Entity()
    entry = entity.table_entry
    entry.table_id = table_id
    entry.priority = priority
    for field_id, value in exact:
        field_match = entry.match.add()
        field_match.field_id = field_id
        field_match.exact.value = value
    if action_id:
        entry.action.action.action_id = action_id
        for param_id, value in params:
            param = entry.action.action.params.add()
            param.param_id, param.value = param_id, value
    return entity


def named_table_entry(
    p4info: p4info_pb2.P4Info,
    table: str,
    match: dict[str, int],
    action: str = "",
    params: dict[str, int] | None = None,
    priority: int = 0,
) -> p4runtime_pb2.Entity:
    """A table-entry entity from names (exact matches only), encoded canonically."""
    table_info = next(t for t in p4info.tables if t.preamble.name == table)
    fields = {f.name: f.id for f in table_info.match_fields}
    exact = [(fields[name], encode_bytestring(value)) for name, value in match.items()]
    if not action:
        return table_entry(table_info.preamble.id, exact, priority=priority)
    action_info = next(a for a in p4info.actions if a.preamble.name == action)
    param_ids = {p.name: p.id for p in action_info.params}
    encoded = [(param_ids[name], encode_bytestring(value)) for name, value in (params or {}).items()]
    return table_entry(table_info.preamble.id, exact, action_info.preamble.id, encoded, priority)
