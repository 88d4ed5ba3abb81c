"""The P4Runtime gRPC service of the switch.

Capabilities, Set/GetForwardingPipelineConfig, Write, Read and StreamChannel with
primary arbitration. Status codes follow the P4Runtime spec: a wrong device id is
NOT_FOUND, a Write or SetForwardingPipelineConfig from anyone but the primary is
PERMISSION_DENIED, a Write or Read before a pipeline is set is FAILED_PRECONDITION,
and a Write batch with failed updates ends with UNKNOWN and one ``p4.v1.Error`` per
update (in order, OK ones included) packed into ``grpc-status-details-bin``.

Write atomicity: CONTINUE_ON_ERROR applies every valid update, giving the pipeline lock
back to the data plane every 5 ms (a long batch does not stall forwarding; once the switch
is stopping, the updates not yet applied are answered UNAVAILABLE). ROLLBACK_ON_ERROR and
DATAPLANE_ATOMIC hold the lock for the whole batch, stop at the first failed update and
undo the ones applied, so the data plane never sees the batch half done (the failed
update gets its own code, the others ABORTED).
"""

from __future__ import annotations

import functools
import gc
import importlib.metadata
import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent import futures

import grpc
from google.protobuf import any_pb2
from google.protobuf.message import DecodeError
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from p4switch.daemon.program import CompileFunction, PipelineSlot, default_compile, verify_config
from p4switch.p4runtime.arbitration import Arbitration, election_id_of
from p4switch.p4runtime.entities import PipelineEntities, Undo
from p4switch.p4runtime.info import P4RuntimeError
from p4switch.p4runtime.wire import exact_updates

log = logging.getLogger("twinnet.switch.p4runtime")

GRPC_CODES = {code.value[0]: code for code in grpc.StatusCode}
READ_BATCH_ENTITIES = 1000
WRITE_SLICE_SECONDS = 0.005
#: Largest request the server reads. gRPC refuses a longer one (RESOURCE_EXHAUSTED) from its length
#: prefix, before the handler runs or the message is parsed, so a huge Write costs the switch no memory.
#: 4 MiB is gRPC's own default and ~70,000 route-entry updates per Write (the controller sends 500);
#: a device config here is P4 source text, far smaller.
MAX_RECEIVE_BYTES = 4 * 1024 * 1024
#: Largest response (a wildcard Read is streamed in READ_BATCH_ENTITIES entities per message).
MAX_SEND_BYTES = 64 * 1024 * 1024
Request = p4runtime_pb2.SetForwardingPipelineConfigRequest
SERVICE_NAME = p4runtime_pb2.DESCRIPTOR.services_by_name["P4Runtime"].full_name


class Updates:
    """A WriteRequest's updates: each applied from the request's bytes when it is a canonical write of
    an all-exact table (wire.exact_updates), through protobuf's objects otherwise."""

    def __init__(
        self, request: p4runtime_pb2.WriteRequest, raw: bytes | None, entities: PipelineEntities
    ) -> None:
        self.updates = request.updates
        #: the pipeline whose tables the canonical updates were read for
        self.entities = entities
        data = request.SerializeToString() if raw is None else raw
        canonical = exact_updates(data, entities.exact_shapes())
        self.canonical = canonical if canonical is not None and len(canonical) == len(self.updates) else None

    def __len__(self) -> int:
        return len(self.updates)

    def write(self, entities: PipelineEntities, position: int) -> Undo:
        """Apply the update at `position` to `entities`; how to undo it (raises as entities.write)."""
        if self.canonical is not None and entities is self.entities:
            update = self.canonical[position]
            if update is not None:
                undo = entities.write_canonical(update)
                if undo is not None:
                    return undo
        return entities.write(self.updates[position])


@functools.cache
def p4runtime_version() -> str:
    """The p4runtime package's version (read once: each look-up parses the package's metadata file,
    ~1 ms, and every session starts with Capabilities)."""
    try:
        return importlib.metadata.version("p4runtime")
    except importlib.metadata.PackageNotFoundError:
        return "1.4.1"


def abort(context: grpc.ServicerContext, error: P4RuntimeError) -> None:
    context.abort(GRPC_CODES.get(error.code, grpc.StatusCode.UNKNOWN), error.message)


class P4RuntimeService(p4runtime_pb2_grpc.P4RuntimeServicer):
    """P4Runtime for one device, over the shared pipeline slot."""

    def __init__(
        self,
        device_id: int,
        slot: PipelineSlot,
        compile_function: CompileFunction = default_compile,
        include_dirs: Sequence[str] = (),
        packet_out: Callable[[p4runtime_pb2.PacketOut], None] | None = None,
    ) -> None:
        self.device_id = device_id
        self.slot = slot
        self.compile_function = compile_function
        self.include_dirs = tuple(include_dirs)
        self.packet_out = packet_out
        self.arbitration = Arbitration(device_id)
        self._stream_keys = itertools.count(1)
        self._config_lock = threading.Lock()
        self.stopping = threading.Event()
        self._outboxes: dict[int, queue.SimpleQueue] = {}
        slot.stream_send = self.arbitration.notify_primary  # digest lists go to the primary

    def stop(self) -> None:
        """The switch is stopping: a running Write batch ends at its next slice (the rest UNAVAILABLE)."""
        self.stopping.set()

    def end_streams(self) -> None:
        """End every open StreamChannel of this device (the device is gone: a card killed)."""
        for outbox in list(self._outboxes.values()):
            outbox.put(None)

    # ----- helpers ---------------------------------------------------------------------------
    def _check_device(self, device_id: int) -> None:
        if device_id != self.device_id:
            raise P4RuntimeError(
                code_pb2.NOT_FOUND, f"device id {device_id} is not this device ({self.device_id})"
            )

    def _check_primary(self, request: p4runtime_pb2.WriteRequest | Request) -> None:
        self.arbitration.check_primary(request.role, election_id_of(request))

    # ----- RPCs ------------------------------------------------------------------------------
    def Capabilities(self, request, context):  # noqa: N802 - gRPC method name
        return p4runtime_pb2.CapabilitiesResponse(p4runtime_api_version=p4runtime_version())

    def SetForwardingPipelineConfig(self, request, context):  # noqa: N802
        try:
            self._check_device(request.device_id)
            self._check_primary(request)
            with self._config_lock:
                self._set_config(request)
        except P4RuntimeError as error:
            abort(context, error)
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    def _set_config(self, request: Request) -> None:
        action = request.action
        slot = self.slot
        if action == Request.COMMIT:  # spec: NOT_FOUND without a saved config, INVALID_ARGUMENT with a config
            if request.HasField("config"):
                raise P4RuntimeError(
                    code_pb2.INVALID_ARGUMENT, "COMMIT takes no config: it commits the saved one"
                )
            if slot.saved is None:
                raise P4RuntimeError(code_pb2.NOT_FOUND, "COMMIT without a config saved by VERIFY_AND_SAVE")
            slot.commit(slot.saved)
            slot.saved = None
            return
        if action == Request.UNSPECIFIED:
            raise P4RuntimeError(code_pb2.INVALID_ARGUMENT, "action UNSPECIFIED")
        if action not in (
            Request.VERIFY,
            Request.VERIFY_AND_SAVE,
            Request.VERIFY_AND_COMMIT,
            Request.RECONCILE_AND_COMMIT,
        ):
            raise P4RuntimeError(code_pb2.INVALID_ARGUMENT, f"unknown action {action}")
        if not request.HasField("config") or not request.config.HasField("p4info"):
            raise P4RuntimeError(code_pb2.INVALID_ARGUMENT, "the config has no P4Info")
        config = verify_config(
            request.config.p4info,
            request.config.p4_device_config,
            request.config.cookie.cookie,
            self.compile_function,
            self.include_dirs,
        )
        if action == Request.VERIFY:
            return
        if action == Request.VERIFY_AND_SAVE:
            slot.saved = config
            return
        if action == Request.RECONCILE_AND_COMMIT and slot.config is not None:
            current = slot.config
            if getattr(current.program, "source_hash", None) != getattr(config.program, "source_hash", None):
                raise P4RuntimeError(
                    code_pb2.UNIMPLEMENTED,
                    "RECONCILE_AND_COMMIT of a different program is not "
                    "supported: use VERIFY_AND_COMMIT (state is cleared)",
                )
            with slot.lock:
                current.cookie = config.cookie
                current.p4info = config.p4info
            return
        slot.commit(config)

    def GetForwardingPipelineConfig(self, request, context):  # noqa: N802
        try:
            self._check_device(request.device_id)
        except P4RuntimeError as error:
            abort(context, error)
        response = p4runtime_pb2.GetForwardingPipelineConfigResponse()
        config = self.slot.config
        if config is None:
            return response
        kind = request.response_type
        Get = p4runtime_pb2.GetForwardingPipelineConfigRequest  # noqa: N806
        response.config.cookie.cookie = config.cookie
        if kind in (Get.ALL, Get.P4INFO_AND_COOKIE):
            response.config.p4info.CopyFrom(config.p4info)
        if kind in (Get.ALL, Get.DEVICE_CONFIG_AND_COOKIE):
            response.config.p4_device_config = config.device_config
        return response

    def Write(self, request, context, raw: bytes | None = None):  # noqa: N802
        """`raw`: the request's bytes as received (serialised again when not given), from which the
        route entries are read without protobuf's per-field objects (see wire.exact_updates)."""
        try:
            self._check_device(request.device_id)
            self._check_primary(request)
            self.slot.require_entities()
            if request.atomicity not in (
                p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR,
                p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR,
                p4runtime_pb2.WriteRequest.DATAPLANE_ATOMIC,
            ):
                raise P4RuntimeError(
                    code_pb2.UNIMPLEMENTED, f"atomicity {request.atomicity} is not supported"
                )
            updates = Updates(request, raw, self.slot.require_entities())
        except P4RuntimeError as error:
            abort(context, error)
        if request.atomicity == p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR:
            errors = self._write_each(updates)
        else:
            errors = self._write_all_or_nothing(updates)
        # Installed entries live as long as the tables: kept out of the cyclic collector's full
        # passes, which otherwise scan every entry of every card and stall the data plane (one
        # process with 1M entries: ~4 s a pass) and the writes themselves.
        gc.freeze()
        if any(error is not None for error in errors):
            self._report_write_errors(context, errors)
        return p4runtime_pb2.WriteResponse()

    def _write_each(self, updates: Updates) -> list[P4RuntimeError | None]:
        """CONTINUE_ON_ERROR: every update on its own; the lock is given back to the data plane
        every WRITE_SLICE_SECONDS so that a long batch does not stall forwarding."""
        errors: list[P4RuntimeError | None] = []
        count = len(updates)
        while len(errors) < count:
            if self.stopping.is_set():
                stopped = P4RuntimeError(code_pb2.UNAVAILABLE, "the switch is stopping: update not applied")
                return errors + [stopped] * (count - len(errors))
            with self.slot.control():
                entities = self.slot.require_entities()
                deadline = time.perf_counter() + WRITE_SLICE_SECONDS
                while len(errors) < count:
                    try:
                        updates.write(entities, len(errors))
                        errors.append(None)
                    except P4RuntimeError as error:
                        errors.append(error)
                    if time.perf_counter() > deadline:
                        break
        return errors

    def _write_all_or_nothing(self, updates: Updates) -> list[P4RuntimeError | None]:
        """ROLLBACK_ON_ERROR and DATAPLANE_ATOMIC: under one lock hold, undone at the first failure."""
        errors: list[P4RuntimeError | None] = []
        with self.slot.control():
            entities = self.slot.require_entities()
            undo_steps = []
            for position in range(len(updates)):
                try:
                    undo_steps.append(updates.write(entities, position))
                    errors.append(None)
                except P4RuntimeError as error:
                    errors.append(error)
                    break
            if errors and errors[-1] is not None:
                for undo in reversed(undo_steps):
                    undo()
                aborted = P4RuntimeError(code_pb2.ABORTED, "rolled back: another update of the batch failed")
                errors = [error or aborted for error in errors]
                errors += [aborted] * (len(updates) - len(errors))
        return errors

    @staticmethod
    def _report_write_errors(context: grpc.ServicerContext, errors: list[P4RuntimeError | None]) -> None:
        status = status_pb2.Status(code=code_pb2.UNKNOWN, message="Write failure")
        failed = [error for error in errors if error is not None]
        for error in errors:
            detail = p4runtime_pb2.Error(canonical_code=code_pb2.OK)
            if error is not None:
                detail = p4runtime_pb2.Error(canonical_code=error.code, message=error.message)
            packed = any_pb2.Any()
            packed.Pack(detail)
            status.details.append(packed)
        summary = f"Write failure: {len(failed)} of {len(errors)} updates failed; first: {failed[0].message}"
        status.message = summary
        context.set_trailing_metadata((("grpc-status-details-bin", status.SerializeToString()),))
        context.set_code(grpc.StatusCode.UNKNOWN)
        context.set_details(summary)

    def Read(self, request, context):  # noqa: N802
        try:
            self._check_device(request.device_id)
            entities = self.slot.require_entities()
            results: list[p4runtime_pb2.Entity] = []
            with self.slot.control():
                for entity in request.entities:
                    results.extend(entities.read(entity))
        except P4RuntimeError as error:
            abort(context, error)
        for start in range(0, max(len(results), 1), READ_BATCH_ENTITIES):
            yield p4runtime_pb2.ReadResponse(entities=results[start : start + READ_BATCH_ENTITIES])

    def StreamChannel(self, request_iterator, context):  # noqa: N802
        outbox: queue.SimpleQueue = queue.SimpleQueue()
        key = next(self._stream_keys)
        context.add_callback(lambda: outbox.put(None))
        self._outboxes[key] = outbox
        if self.stopping.is_set():
            outbox.put(None)
        reader = threading.Thread(
            target=self._read_stream,
            args=(key, request_iterator, outbox),
            name=f"p4rt-stream-{key}",
            daemon=True,
        )
        reader.start()
        try:
            while True:
                item = outbox.get()
                if item is None:
                    return
                if isinstance(item, P4RuntimeError):
                    abort(context, item)
                yield item
        finally:
            self._outboxes.pop(key, None)
            self.arbitration.remove(key)

    def _read_stream(self, key: int, request_iterator: Iterator, outbox: queue.SimpleQueue) -> None:
        arbitrated = False
        try:
            for message in request_iterator:
                kind = message.WhichOneof("update")
                if kind == "arbitration":
                    try:
                        self.arbitration.update(key, message.arbitration, outbox.put)
                        arbitrated = True
                    except P4RuntimeError as error:
                        outbox.put(error)
                        return
                elif kind == "packet":
                    if not arbitrated or self.arbitration.primary_key() != key:
                        log.warning("packet-out from a stream that is not the primary: ignored")
                    elif self.packet_out is None:
                        log.warning("packet-out ignored: the switch has no CPU port")
                    else:
                        self.packet_out(message.packet)
                elif kind == "digest_ack":
                    entities = self.slot.entities
                    if not arbitrated or self.arbitration.primary_key() != key:
                        log.warning("digest ack from a stream that is not the primary: ignored")
                    elif (
                        entities is None
                        or entities.digests is None
                        or not entities.digests.ack(message.digest_ack)
                    ):
                        log.warning("digest ack for no list waiting for one: ignored")
        except grpc.RpcError:
            pass
        except Exception:  # a broken stream must not take the server down
            log.exception("stream %d failed", key)
        finally:
            outbox.put(None)


#: gRPC's handler maker for a method, by (client streams, server streams)
HANDLER_KINDS = {
    (False, False): grpc.unary_unary_rpc_method_handler,
    (False, True): grpc.unary_stream_rpc_method_handler,
    (True, False): grpc.stream_unary_rpc_method_handler,
    (True, True): grpc.stream_stream_rpc_method_handler,
}


def p4runtime_handlers(service: p4runtime_pb2_grpc.P4RuntimeServicer) -> dict[str, grpc.RpcMethodHandler]:
    """Every method of the P4Runtime service (from its descriptor) served by `service`, as
    p4runtime_pb2_grpc registers them, but for Write, which gets the request's bytes as well
    (``Updates`` reads the route entries from them)."""

    def write(raw: bytes, context: grpc.ServicerContext) -> p4runtime_pb2.WriteResponse:
        try:
            request = p4runtime_pb2.WriteRequest.FromString(raw)
        except DecodeError as error:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"the WriteRequest cannot be parsed: {error}")
        return service.Write(request, context, raw=raw)

    handlers = {}
    for method in p4runtime_pb2.DESCRIPTOR.services_by_name["P4Runtime"].methods:
        request = getattr(p4runtime_pb2, method.input_type.name)
        response = getattr(p4runtime_pb2, method.output_type.name)
        behaviour, parse = getattr(service, method.name), request.FromString
        if method.name == "Write":
            behaviour, parse = write, None
        make = HANDLER_KINDS[method.client_streaming, method.server_streaming]
        handlers[method.name] = make(
            behaviour, request_deserializer=parse, response_serializer=response.SerializeToString
        )
    return handlers


def start_p4runtime_server(
    address: str, service: p4runtime_pb2_grpc.P4RuntimeServicer, workers: int = 16
) -> tuple[grpc.Server, int]:
    """Serve ``service`` on ``address`` (HOST:PORT, port 0 picks one); returns the server and its port.

    An open StreamChannel holds a worker for its life: ``workers`` must exceed the streams
    expected (the pool starts its threads only when needed).

    Raises OSError when the address cannot be bound.
    """
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="p4rt"),
        options=[
            ("grpc.max_receive_message_length", MAX_RECEIVE_BYTES),
            ("grpc.max_send_message_length", MAX_SEND_BYTES),
            ("grpc.so_reuseport", 0),
        ],
    )
    handlers = p4runtime_handlers(service)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE_NAME, handlers),))
    server.add_registered_method_handlers(SERVICE_NAME, handlers)
    port = server.add_insecure_port(address)
    if port == 0:
        raise OSError(f"cannot listen on {address}")
    server.start()
    return server, port
