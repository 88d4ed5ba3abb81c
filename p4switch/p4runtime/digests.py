"""P4Runtime's DigestEntry, DigestList and DigestListAck on a pipeline's digest engine.

As the P4Runtime specification says of them: an unknown ``digest_id`` is NOT_FOUND; INSERT
of a configured digest is ALREADY_EXISTS; MODIFY or DELETE of one that is not configured is
NOT_FOUND; INSERT and MODIFY need a ``config`` (INVALID_ARGUMENT without one or with a
negative value). A read with ``digest_id`` 0 gives every configured digest; of one that is
not configured, NOT_FOUND (as PI, which simple_switch_grpc runs). Lists go to the
primary controller's StreamChannel; each sample is a P4Data built from the P4Info's
``type_info`` (a struct's members in order, a header with its validity).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from google.rpc import code_pb2
from p4.v1 import p4data_pb2, p4runtime_pb2

from p4switch.errors import EntryError
from p4switch.p4runtime.info import P4RuntimeError, canonical_length, invalid
from p4switch.runtime.digests import DigestConfig

Undo = Callable[[], None]
Send = Callable[[p4runtime_pb2.StreamMessageResponse], bool]


class DigestEntities:
    """Writes and reads of DigestEntry, the lists the engine sends, and acknowledgements."""

    def __init__(self, pipeline: Any, p4info: Any, send: Send) -> None:
        self.engine = pipeline.digests
        self.type_info = p4info.type_info
        self.by_id = {d.preamble.id: d for d in p4info.digests}
        self.ids = {d.preamble.name: d.preamble.id for d in p4info.digests}
        self.send = send
        self.engine.sink = self._deliver

    def _name(self, digest_id: int) -> str:
        digest = self.by_id.get(digest_id)
        if digest is None:
            raise P4RuntimeError(code_pb2.NOT_FOUND, f"no digest with id {digest_id} in the P4Info")
        return digest.preamble.name

    # ----- DigestEntry -----------------------------------------------------------------------
    def write(self, kind: int, entry: p4runtime_pb2.DigestEntry) -> Undo:
        name = self._name(entry.digest_id)
        engine = self.engine
        old = engine.config(name)
        Update = p4runtime_pb2.Update  # noqa: N806
        if kind == Update.INSERT and old is not None:
            raise P4RuntimeError(code_pb2.ALREADY_EXISTS, f"digest {name} is already configured")
        if kind in (Update.MODIFY, Update.DELETE) and old is None:
            raise P4RuntimeError(code_pb2.NOT_FOUND, f"digest {name} is not configured")
        if kind == Update.DELETE:
            new = None
        elif kind in (Update.INSERT, Update.MODIFY):
            if not entry.HasField("config"):
                raise invalid(f"digest {name}: INSERT and MODIFY need a config")
            c = entry.config
            new = DigestConfig(c.max_timeout_ns, c.max_list_size, c.ack_timeout_ns)
        else:
            raise invalid("update type UNSPECIFIED")
        try:
            engine.configure(name, new)
        except EntryError as error:
            raise invalid(str(error)) from error
        return lambda: engine.configure(name, old)

    def read(self, request: p4runtime_pb2.DigestEntry) -> Iterator[p4runtime_pb2.Entity]:
        ids = list(self.by_id) if request.digest_id == 0 else [request.digest_id]
        for digest_id in ids:
            config = self.engine.config(self._name(digest_id))
            if config is None:
                if request.digest_id:  # as PI answers for one digest that is not configured
                    raise P4RuntimeError(code_pb2.NOT_FOUND, f"digest {digest_id} is not configured")
                continue
            entity = p4runtime_pb2.Entity()
            entity.digest_entry.digest_id = digest_id
            entity.digest_entry.config.max_timeout_ns = config.max_timeout_ns
            entity.digest_entry.config.max_list_size = config.max_list_size
            entity.digest_entry.config.ack_timeout_ns = config.ack_timeout_ns
            yield entity

    # ----- DigestList, DigestListAck ---------------------------------------------------------
    def ack(self, message: p4runtime_pb2.DigestListAck) -> bool:
        """Release an acknowledged list's data; False for an unknown digest or list."""
        digest = self.by_id.get(message.digest_id)
        return digest is not None and self.engine.ack(digest.preamble.name, message.list_id)

    def _deliver(self, name: str, list_id: int, samples: list[tuple], timestamp: int) -> bool:
        response = p4runtime_pb2.StreamMessageResponse()
        digest_list = response.digest
        digest_list.digest_id = self.ids[name]
        digest_list.list_id = list_id
        digest_list.timestamp = timestamp
        spec = self.by_id[digest_list.digest_id].type_spec
        for sample in samples:
            values = iter(sample)
            self._fill(digest_list.data.add(), spec, values)
        return self.send(response)

    def _fill(self, data: p4data_pb2.P4Data, spec: Any, values: Iterator) -> None:
        """One P4Data of type ``spec`` from the flattened values (p4switch.compiler.codegen.digests)."""
        kind = spec.WhichOneof("type_spec")
        if kind == "bool":
            data.bool = bool(next(values))
        elif kind == "bitstring":
            signed = spec.bitstring.WhichOneof("type_spec") == "int"
            data.bitstring = _bytestring(int(next(values)), signed)
        elif kind == "struct":
            for member in self.type_info.structs[spec.struct.name].members:
                self._fill(data.struct.members.add(), member.type_spec, values)
        elif kind == "header":
            members = self.type_info.headers[spec.header.name].members
            valid = bool(next(values))
            fields = [
                _bytestring(int(next(values)), m.type_spec.WhichOneof("type_spec") == "int") for m in members
            ]
            data.header.is_valid = valid
            if valid:
                data.header.bitstrings.extend(fields)
        else:
            raise P4RuntimeError(code_pb2.INTERNAL, f"digest data of type {kind} cannot be encoded")


def _bytestring(value: int, signed: bool) -> bytes:
    """The canonical (shortest) bytestring: two's complement for int<W>."""
    if signed:
        bits = (value if value >= 0 else ~value).bit_length()  # without the sign bit
        return value.to_bytes(max(1, (bits + 8) // 8), "big", signed=True)
    return value.to_bytes(canonical_length(value), "big")
