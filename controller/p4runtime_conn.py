"""One P4Runtime session per card, on p4runtime-shell's client.

:class:`CardConnection` opens a :class:`p4runtime_sh.p4runtime.P4RuntimeClient`
(gRPC channel, StreamChannel, primary arbitration with the controller's election
id) and offers what the controller needs, by P4Info name: pipeline get/set,
batched writes whose failures name the entry and carry the target's message,
table reads and counter reads. Every failure is a :class:`CardError` naming the
card, so a caller handling many cards at once can report each one and go on.

The shell client would end the process (``sys.exit``) when the arbitration
reply does not come; :class:`ControllerClient` overrides only its handshake to
raise instead and to remember whether this session is the primary.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import grpc
from google.rpc import code_pb2, status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2
from p4runtime_sh.p4runtime import P4RuntimeClient

from controller.p4info_index import P4InfoIndex
from controller.translate import UPDATE_NAMES, EntrySpec
from controller.wire import table_entries, update_type, write_request

#: Election id of the controller: (high, low). The read-only shell uses a lower one (emulation.shell_cli).
CONTROLLER_ELECTION_ID = (0, 100)
#: Seconds to wait for a card's gRPC server to accept the connection.
CONNECT_TIMEOUT = 5.0
#: Seconds to wait for the arbitration reply once connected (a busy machine answers late, a dead card never
#: gets this far: the connection itself fails first).
ARBITRATION_TIMEOUT = 30.0
#: Seconds any one RPC may take.
RPC_TIMEOUT = 60.0

Request = p4runtime_pb2.SetForwardingPipelineConfigRequest


class CardError(RuntimeError):
    """A card could not be reached or refused what the controller sent; the message names the card."""

    def __init__(self, card: str, message: str) -> None:
        super().__init__(f"card {card}: {message}")
        self.card = card
        self.reason = message


class CardUnreachableError(CardError):
    """The card's P4Runtime server does not answer (process down, wrong address)."""


@dataclass(frozen=True)
class CardEndpoint:
    """Where a card's P4Runtime server is: name, card id, device id and gRPC address (HOST:PORT)."""

    name: str
    card_id: int
    device_id: int
    grpc_address: str


@dataclass(frozen=True)
class UpdateFailure:
    """One update of a Write the card rejected: what it was and the target's message."""

    card: str
    kind: str
    entry: str
    code: str
    message: str

    def __str__(self) -> str:
        return f"card {self.card}: {self.kind} {self.entry} rejected ({self.code}): {self.message}"


class ControllerClient(P4RuntimeClient):
    """p4runtime-shell's client with a handshake that raises instead of exiting, and records primacy."""

    arbitration_timeout = ARBITRATION_TIMEOUT

    def handshake(self) -> None:
        request = p4runtime_pb2.StreamMessageRequest()
        request.arbitration.device_id = self.device_id
        request.arbitration.election_id.high = self.election_id[0]
        request.arbitration.election_id.low = self.election_id[1]
        if self.role_name is not None:
            request.arbitration.role.name = self.role_name
        self.stream_out_q.put(request)
        reply = self.get_stream_packet("arbitration", timeout=self.arbitration_timeout)
        if reply is None:
            self._abort()
            raise ConnectionError("no arbitration reply on the StreamChannel")
        self.arbitration = reply.arbitration
        self.is_primary = reply.arbitration.status.code == code_pb2.OK

    def _abort(self) -> None:
        """End the stream and the channel of a session that never started."""
        self.stream_out_q.put(None)
        self.channel.close()
        self.stream_recv_thread.join(timeout=CONNECT_TIMEOUT)


def update_errors(error: grpc.RpcError) -> list[tuple[int, p4runtime_pb2.Error]] | None:
    """The failed updates of a Write (position in the batch, p4.v1.Error), from grpc-status-details-bin.

    None when the error carries no per-update details (then it is not a batch failure).
    Parsed here rather than by p4runtime-shell's P4RuntimeWriteException, whose iterator
    (0.0.6) never advances past an update reported OK.
    """
    status = None
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
    if status is None or not status.details:
        return None
    failed = []
    for position, packed in enumerate(status.details):
        detail = p4runtime_pb2.Error()
        if packed.Unpack(detail) and detail.canonical_code != code_pb2.OK:
            failed.append((position, detail))
    return failed


def _rpc_message(error: grpc.RpcError) -> str:
    try:
        return f"{error.code().name}: {error.details()}"
    except Exception:  # not a call error: its own text
        return str(error)


class CardConnection:
    """A P4Runtime session with one card (see the module doc). Use :meth:`open`, then :meth:`close`."""

    def __init__(
        self,
        endpoint: CardEndpoint,
        index: P4InfoIndex,
        election_id: tuple[int, int] = CONTROLLER_ELECTION_ID,
        timeout: float = CONNECT_TIMEOUT,
    ) -> None:
        self.endpoint = endpoint
        self.index = index
        self.election_id = election_id
        self.timeout = timeout
        self.client: ControllerClient | None = None
        self._raw_write = None
        self._raw_read = None

    @property
    def name(self) -> str:
        return self.endpoint.name

    # -- session ------------------------------------------------------------------

    def open(self, require_primary: bool = True) -> CardConnection:
        """Connect and arbitrate; CardUnreachableError if the card does not answer, CardError if backup."""
        address = self.endpoint.grpc_address
        probe = grpc.insecure_channel(address)
        try:
            grpc.channel_ready_future(probe).result(timeout=self.timeout)
        except grpc.FutureTimeoutError:
            raise CardUnreachableError(
                self.name,
                f"no P4Runtime server answers at {address} within {self.timeout:.0f} s "
                "(is the switch process running?)",
            ) from None
        finally:
            probe.close()
        try:
            client = ControllerClient(self.endpoint.device_id, address, self.election_id)
        except (ConnectionError, grpc.RpcError) as error:
            raise CardUnreachableError(self.name, f"arbitration with {address} failed: {error}") from None
        self.client = client
        if require_primary and not client.is_primary:
            status = client.arbitration.status
            self.close()
            raise CardError(
                self.name,
                f"not the primary controller (election id {self.election_id}); "
                f"the card says: {status.message or code_pb2.Code.Name(status.code)}",
            )
        return self

    def close(self) -> None:
        """End the session (the card keeps its tables)."""
        client, self.client = self.client, None
        self._raw_write = None
        self._raw_read = None
        if client is not None:
            client.tear_down()

    def _client(self) -> ControllerClient:
        if self.client is None:
            raise CardError(self.name, "not connected")
        return self.client

    # -- pipeline -----------------------------------------------------------------

    def get_p4info(self) -> p4info_pb2.P4Info | None:
        """The P4Info of the program the card runs, or None if it has none yet."""
        request = p4runtime_pb2.GetForwardingPipelineConfigRequest(
            device_id=self.endpoint.device_id,
            response_type=p4runtime_pb2.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE,
        )
        try:
            reply = self._client().stub.GetForwardingPipelineConfig(request, timeout=RPC_TIMEOUT)
        except grpc.RpcError as error:
            raise CardError(self.name, f"cannot read its pipeline config: {_rpc_message(error)}") from None
        return reply.config.p4info if reply.config.HasField("p4info") else None

    def set_pipeline(self, p4info: p4info_pb2.P4Info, device_config: bytes) -> None:
        """SetForwardingPipelineConfig(VERIFY_AND_COMMIT): the card runs the program with empty tables."""
        client = self._client()
        request = Request(device_id=self.endpoint.device_id, action=Request.VERIFY_AND_COMMIT)
        request.election_id.high, request.election_id.low = self.election_id
        request.config.p4info.CopyFrom(p4info)
        request.config.p4_device_config = device_config
        try:
            client.stub.SetForwardingPipelineConfig(request, timeout=RPC_TIMEOUT)
        except grpc.RpcError as error:
            raise CardError(self.name, f"refused the pipeline config: {_rpc_message(error)}") from None

    # -- writes -------------------------------------------------------------------

    def write(
        self,
        updates: Sequence[p4runtime_pb2.Update | bytes],
        describe: Callable[[int], str],
        batch_size: int = 500,
        progress: Callable[[int], None] | None = None,
    ) -> list[UpdateFailure]:
        """Write `updates` (messages, or serialized Updates from controller.wire) in batches.

        Atomicity CONTINUE_ON_ERROR: the card applies every valid update; the rejected ones
        are returned, each named by ``describe(i)`` (i its position in `updates`). A failure
        of the whole RPC (card gone, not primary) raises CardError.
        """
        client = self._client()
        if self._raw_write is None:
            self._raw_write = client.channel.unary_unary(
                "/p4.v1.P4Runtime/Write", response_deserializer=p4runtime_pb2.WriteResponse.FromString
            )
        encoded = [u if isinstance(u, bytes) else u.SerializeToString(deterministic=True) for u in updates]
        failures: list[UpdateFailure] = []
        for start in range(0, len(encoded), batch_size):
            batch = encoded[start : start + batch_size]
            request = write_request(self.endpoint.device_id, self.election_id, batch)
            try:
                self._raw_write(request, timeout=RPC_TIMEOUT)
            except grpc.RpcError as error:
                details = update_errors(error) if error.code() == grpc.StatusCode.UNKNOWN else None
                if details is None:
                    raise CardError(
                        self.name,
                        f"write failed after {start} of {len(updates)} updates: {_rpc_message(error)}",
                    ) from None
                for position, detail in details:
                    failures.append(
                        UpdateFailure(
                            self.name,
                            UPDATE_NAMES.get(update_type(batch[position]), "update"),
                            describe(start + position),
                            code_pb2.Code.Name(detail.canonical_code),
                            detail.message,
                        )
                    )
            if progress is not None:
                progress(len(batch))
        return failures

    # -- reads --------------------------------------------------------------------

    def read(self, entities: Iterable[p4runtime_pb2.Entity]) -> list[p4runtime_pb2.Entity]:
        """Read `entities` (wildcards allowed) in one ReadRequest; all the entities the card returns."""
        client = self._client()
        request = p4runtime_pb2.ReadRequest(device_id=self.endpoint.device_id)
        request.entities.extend(entities)
        found: list[p4runtime_pb2.Entity] = []
        try:
            for reply in client.stub.Read(request, timeout=RPC_TIMEOUT):
                found.extend(reply.entities)
        except grpc.RpcError as error:
            raise CardError(self.name, f"read failed: {_rpc_message(error)}") from None
        return found

    def read_specs(self, entities: Iterable[p4runtime_pb2.Entity]) -> list[tuple[bool, EntrySpec]]:
        """Table entries matching `entities` as (is default entry, EntrySpec), decoded from the wire."""
        client = self._client()
        if self._raw_read is None:
            self._raw_read = client.channel.unary_stream("/p4.v1.P4Runtime/Read")
        request = p4runtime_pb2.ReadRequest(device_id=self.endpoint.device_id)
        request.entities.extend(entities)
        found: list[tuple[bool, EntrySpec]] = []
        try:
            for reply in self._raw_read(request.SerializeToString(), timeout=RPC_TIMEOUT):
                found.extend(table_entries(reply, self.index))
        except grpc.RpcError as error:
            raise CardError(self.name, f"read failed: {_rpc_message(error)}") from None
        return found

    def read_counters(self, cells: Sequence[tuple[str, int]]) -> dict[tuple[str, int], tuple[int, int]]:
        """(packets, bytes) of each (counter name, index) asked for, in one ReadRequest."""
        entities = []
        for name, cell in cells:
            entity = p4runtime_pb2.Entity()
            entity.counter_entry.counter_id = self.index.counter_id(name)
            entity.counter_entry.index.index = cell
            entities.append(entity)
        result: dict[tuple[str, int], tuple[int, int]] = {}
        for found in self.read(entities):
            entry = found.counter_entry
            name = self.index.counter_by_id[entry.counter_id].name
            result[name, entry.index.index] = (entry.data.packet_count, entry.data.byte_count)
        return result
