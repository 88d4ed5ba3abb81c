"""One P4Runtime session per card, on the ``p4runtime`` package's gRPC stubs.

:class:`CardConnection` opens a gRPC channel to a card, starts the StreamChannel
with primary arbitration (the controller's election id; a connection that only
reads opens no StreamChannel) and offers what the controller needs, by P4Info
name: pipeline get/set, batched writes whose failures name the entry and carry
the target's message, table reads and counter reads.
Every failure is a :class:`CardError` naming the card, so a caller handling many
cards at once can report each one and go on.

The channel raises gRPC's metadata limit (:data:`CHANNEL_OPTIONS`): a Write that
fails reports one ``p4.v1.Error`` per update of the batch (OK ones included) in its
trailing metadata, ~100 bytes each, which for a batch of 2,000 is far above gRPC's
default limit (8 KiB soft, 16 KiB hard); with the default, such a batch would be
reported as a failure of the whole Write although most of it was applied.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import grpc
from google.rpc import code_pb2, status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from controller.translate import UPDATE_NAMES, WRITE_REQUEST_UPDATE_TAG, EntrySpec, spec_of, varint
from p4switch.p4runtime.info import P4InfoIndex
from topologies.errors import TwinnetError

#: Election id of the controller: (high, low). The read-only shell uses a lower one (emulation.shell_cli).
CONTROLLER_ELECTION_ID = (0, 100)
#: Seconds to wait for a card's gRPC server to accept the connection.
CONNECT_TIMEOUT = 5.0
#: Seconds to wait for the arbitration reply once connected (a busy machine answers late, a dead card never
#: gets this far: the connection itself fails first).
ARBITRATION_TIMEOUT = 30.0
#: Seconds any one RPC may take.
RPC_TIMEOUT = 60.0
#: Metadata a card may send back: a failed Write carries one p4.v1.Error per update (~100 bytes each).
MAX_METADATA_BYTES = 16 * 1024 * 1024
#: Largest reply (a Read streams its entities in messages far below this).
MAX_RECEIVE_BYTES = 64 * 1024 * 1024
CHANNEL_OPTIONS = (
    ("grpc.max_metadata_size", MAX_METADATA_BYTES),
    ("grpc.absolute_max_metadata_size", MAX_METADATA_BYTES),
    ("grpc.max_receive_message_length", MAX_RECEIVE_BYTES),
)

Request = p4runtime_pb2.SetForwardingPipelineConfigRequest
#: the Write RPC, called with a serialised WriteRequest (CardConnection.request_bytes)
WRITE_METHOD = "/p4.v1.P4Runtime/Write"


class CardError(TwinnetError, RuntimeError):
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


class ChannelPool:
    """One gRPC channel per address, shared by every card served there (a switch process hosting many
    cards is one server): one connection and one polling thread instead of one per card."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._channels: dict[str, tuple[grpc.Channel, int]] = {}

    def acquire(self, address: str) -> grpc.Channel:
        """The address's channel (made on first use); give it back with :meth:`release`."""
        with self._lock:
            channel, users = self._channels.get(address, (None, 0))
            if channel is None:
                channel = grpc.insecure_channel(address, options=CHANNEL_OPTIONS)
            self._channels[address] = (channel, users + 1)
            return channel

    def release(self, address: str) -> None:
        """One user fewer; the last one closes the channel."""
        with self._lock:
            channel, users = self._channels.get(address, (None, 0))
            if channel is None:
                return
            if users > 1:
                self._channels[address] = (channel, users - 1)
                return
            del self._channels[address]
        channel.close()


#: the controller's channels, shared by the connections to one address
CHANNELS = ChannelPool()


class StreamSession:
    """The StreamChannel of one session: the arbitration goes out, the card's messages come in.

    A reader thread takes the card's messages off the stream; arbitration replies are
    kept in order for :meth:`arbitrate` (the latest says whether the session is primary).
    """

    def __init__(self, stub: p4runtime_pb2_grpc.P4RuntimeStub) -> None:
        self._requests: queue.SimpleQueue = queue.SimpleQueue()
        self._arbitrations: queue.SimpleQueue = queue.SimpleQueue()
        self._call = stub.StreamChannel(iter(self._requests.get, None))
        self.arbitration: p4runtime_pb2.MasterArbitrationUpdate | None = None
        #: why the stream ended, when the card ended it ("NOT_FOUND: device id 3 is not served ...")
        self.ended: str | None = None
        self._reader = threading.Thread(target=self._read, name="p4rt-session", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            for message in self._call:
                if message.HasField("arbitration"):
                    self.arbitration = message.arbitration
                    self._arbitrations.put(message.arbitration)
        except grpc.RpcError as error:  # the stream ended (card gone, or closed by us): arbitrate() says so
            code = error.code() if hasattr(error, "code") else None
            if code is not None and code != grpc.StatusCode.CANCELLED:
                self.ended = f"{code.name}: {error.details() if hasattr(error, 'details') else error}"
        finally:
            self._arbitrations.put(None)

    @property
    def is_primary(self) -> bool:
        return self.arbitration is not None and self.arbitration.status.code == code_pb2.OK

    def arbitrate(
        self, device_id: int, election_id: tuple[int, int], timeout: float
    ) -> p4runtime_pb2.MasterArbitrationUpdate:
        """Send the arbitration; the card's answer, or ConnectionError if none comes in `timeout` s."""
        request = p4runtime_pb2.StreamMessageRequest()
        request.arbitration.device_id = device_id
        request.arbitration.election_id.high, request.arbitration.election_id.low = election_id
        self._requests.put(request)
        try:
            reply = self._arbitrations.get(timeout=timeout)
        except queue.Empty:
            reply = None
        if reply is None:
            if self.ended is not None:
                raise ConnectionError(f"the StreamChannel ended: {self.ended}")
            raise ConnectionError(f"no arbitration reply on the StreamChannel within {timeout:.0f} s")
        return reply

    def close(self) -> None:
        self._requests.put(None)
        self._call.cancel()
        self._reader.join(timeout=CONNECT_TIMEOUT)


def update_errors(error: grpc.RpcError) -> list[tuple[int, p4runtime_pb2.Error]] | None:
    """The failed updates of a Write (position in the batch, p4.v1.Error), from grpc-status-details-bin.

    None when the error carries no per-update details (then it is not a batch failure).
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


def update_kind(update: p4runtime_pb2.Update | bytes) -> int:
    """The type (INSERT, MODIFY, DELETE) of an Update or of its bytes."""
    return (p4runtime_pb2.Update.FromString(update) if isinstance(update, bytes) else update).type


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
        self.channel: grpc.Channel | None = None
        self.stub: p4runtime_pb2_grpc.P4RuntimeStub | None = None
        self.session: StreamSession | None = None

    @property
    def name(self) -> str:
        return self.endpoint.name

    @property
    def is_primary(self) -> bool:
        return self.session is not None and self.session.is_primary

    # -- session ------------------------------------------------------------------

    def open(self, require_primary: bool = True) -> CardConnection:
        """Connect and arbitrate; CardUnreachableError if the card does not answer, CardError if backup.

        Without `require_primary` (a reader) it only connects: P4Runtime lets any client Read, and a
        StreamChannel costs a thread on both sides (reading 1,024 cards' counters with one took 7.5 s).
        """
        address = self.endpoint.grpc_address
        channel = CHANNELS.acquire(address)
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        # Capabilities, waiting for the connection, says the server answers. (grpc.channel_ready_future
        # would leave a polling thread that raises in the background when a shared channel closes.)
        try:
            stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=self.timeout, wait_for_ready=True)
        except grpc.RpcError as error:
            CHANNELS.release(address)
            raise CardUnreachableError(
                self.name,
                f"no P4Runtime server answers at {address} within {self.timeout:.0f} s "
                f"(is the switch process running?): {error.code().name}",
            ) from None
        self.channel, self.stub = channel, stub
        if not require_primary:
            return self
        self.session = StreamSession(self.stub)
        try:
            reply = self.session.arbitrate(self.endpoint.device_id, self.election_id, ARBITRATION_TIMEOUT)
        except ConnectionError as error:
            self.close()
            raise CardUnreachableError(self.name, f"arbitration with {address} failed: {error}") from None
        if require_primary and reply.status.code != code_pb2.OK:
            self.close()
            raise CardError(
                self.name,
                f"not the primary controller (election id {self.election_id}); "
                f"the card says: {reply.status.message or code_pb2.Code.Name(reply.status.code)}",
            )
        return self

    def close(self) -> None:
        """End the session (the card keeps its tables)."""
        session, channel = self.session, self.channel
        self.session = self.channel = self.stub = None
        if session is not None:
            session.close()
        if channel is not None:
            CHANNELS.release(self.endpoint.grpc_address)

    def _stub(self) -> p4runtime_pb2_grpc.P4RuntimeStub:
        if self.stub is None:
            raise CardError(self.name, "not connected")
        return self.stub

    # -- pipeline -----------------------------------------------------------------

    def get_p4info(self) -> p4info_pb2.P4Info | None:
        """The P4Info of the program the card runs, or None if it has none yet."""
        request = p4runtime_pb2.GetForwardingPipelineConfigRequest(
            device_id=self.endpoint.device_id,
            response_type=p4runtime_pb2.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE,
        )
        try:
            reply = self._stub().GetForwardingPipelineConfig(request, timeout=RPC_TIMEOUT)
        except grpc.RpcError as error:
            raise CardError(self.name, f"cannot read its pipeline config: {_rpc_message(error)}") from None
        return reply.config.p4info if reply.config.HasField("p4info") else None

    def set_pipeline(self, p4info: p4info_pb2.P4Info, device_config: bytes) -> None:
        """SetForwardingPipelineConfig(VERIFY_AND_COMMIT): the card runs the program with empty tables."""
        request = Request(device_id=self.endpoint.device_id, action=Request.VERIFY_AND_COMMIT)
        request.election_id.high, request.election_id.low = self.election_id
        request.config.p4info.CopyFrom(p4info)
        request.config.p4_device_config = device_config
        try:
            self._stub().SetForwardingPipelineConfig(request, timeout=RPC_TIMEOUT)
        except grpc.RpcError as error:
            raise CardError(self.name, f"refused the pipeline config: {_rpc_message(error)}") from None

    # -- writes -------------------------------------------------------------------

    def request_bytes(self, updates: Sequence[p4runtime_pb2.Update | bytes]) -> bytes:
        """The serialised WriteRequest (CONTINUE_ON_ERROR) of `updates`: Update messages or their bytes
        (translate.UpdateEncoder), each framed as a field of the request as protobuf frames it."""
        header = p4runtime_pb2.WriteRequest(device_id=self.endpoint.device_id)
        header.election_id.high, header.election_id.low = self.election_id
        parts = [header.SerializeToString()]
        for update in updates:
            data = update if isinstance(update, bytes) else update.SerializeToString()
            parts += (WRITE_REQUEST_UPDATE_TAG, varint(len(data)), data)
        return b"".join(parts)

    def write(
        self,
        updates: Sequence[p4runtime_pb2.Update | bytes],
        describe: Callable[[int], str],
        batch_size: int = 500,
        progress: Callable[[int], None] | None = None,
    ) -> list[UpdateFailure]:
        """Write `updates` (Update messages or their bytes) in batches of `batch_size` per WriteRequest.

        Atomicity CONTINUE_ON_ERROR: the card applies every valid update; the rejected ones
        are returned, each named by ``describe(i)`` (i its position in `updates`). A failure
        of the whole RPC (card gone, not primary) raises CardError.
        """
        self._stub()  # CardError when not connected
        # the requests go out as the bytes request_bytes makes (no message object per update)
        send = self.channel.unary_unary(
            WRITE_METHOD,
            request_serializer=None,
            response_deserializer=p4runtime_pb2.WriteResponse.FromString,
        )
        failures: list[UpdateFailure] = []
        for start in range(0, len(updates), batch_size):
            batch = updates[start : start + batch_size]
            try:
                send(self.request_bytes(batch), timeout=RPC_TIMEOUT)
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
                            UPDATE_NAMES.get(update_kind(batch[position]), "update"),
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
        stub = self._stub()
        request = p4runtime_pb2.ReadRequest(device_id=self.endpoint.device_id)
        request.entities.extend(entities)
        found: list[p4runtime_pb2.Entity] = []
        try:
            for reply in stub.Read(request, timeout=RPC_TIMEOUT):
                found.extend(reply.entities)
        except grpc.RpcError as error:
            raise CardError(self.name, f"read failed: {_rpc_message(error)}") from None
        return found

    def read_specs(self, entities: Iterable[p4runtime_pb2.Entity]) -> list[tuple[bool, EntrySpec]]:
        """Table entries matching `entities` as (is default entry, EntrySpec), in tables the P4Info knows."""
        tables = self.index.tables
        return [
            (found.table_entry.is_default_action, spec_of(self.index, found.table_entry))
            for found in self.read(entities)
            if found.HasField("table_entry") and found.table_entry.table_id in tables
        ]

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
            name = self.index.counter(entry.counter_id).name
            result[name, entry.index.index] = (entry.data.packet_count, entry.data.byte_count)
        return result
