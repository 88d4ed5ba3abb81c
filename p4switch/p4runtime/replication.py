"""P4Runtime's PacketReplicationEngineEntry (multicast groups, clone sessions) on a replication engine.

The error codes are those of the P4Runtime specification (section "PacketReplicationEngineEntry"):
a group or session id of 0 in a Write, an instance beyond what the target's
``EgressInstance_t`` holds (v1model's egress_rid: 16 bits), a port outside v1model's
0..510, a (port, instance) pair given twice in one entry, or a class
of service beyond v1model's 3-bit priority are INVALID_ARGUMENT; backup replicas, which
the target does not support, UNIMPLEMENTED; an INSERT of an id in use ALREADY_EXISTS, a
MODIFY or DELETE of an id not in use NOT_FOUND. A Read considers only the id (0: every
entry) and returns each entry as it was written, metadata included.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from p4switch.errors import EntryError
from p4switch.p4runtime.info import P4RuntimeError, invalid
from p4switch.runtime.replication import CloneSession, MulticastGroup, Replica

Undo = Callable[[], None]
Update = p4runtime_pb2.Update


class ReplicationEntities:
    """Writes and reads of multicast group and clone session entries on one replication engine."""

    def __init__(self, pre: Any) -> None:
        self.pre = pre
        # id -> the entry as written (read-write symmetry: replicas' port form, metadata)
        self.groups: dict[int, p4runtime_pb2.MulticastGroupEntry] = {}
        self.sessions: dict[int, p4runtime_pb2.CloneSessionEntry] = {}

    # ----- write -----------------------------------------------------------------------------
    def write(self, kind: int, entry: p4runtime_pb2.PacketReplicationEngineEntry) -> Undo:
        """Apply one update; return how to undo it. Raises P4RuntimeError, leaving state unchanged."""
        which = entry.WhichOneof("type")
        if which == "multicast_group_entry":
            group = entry.multicast_group_entry
            return self._write(kind, group.multicast_group_id, "multicast group", group)
        if which == "clone_session_entry":
            session = entry.clone_session_entry
            return self._write(kind, session.session_id, "clone session", session)
        raise invalid("packet_replication_engine_entry carries neither a multicast group nor a clone session")

    def _write(self, kind: int, key: int, what: str, message: Any) -> Undo:
        if key == 0:
            raise invalid(f"a {what} id of 0 is reserved for wildcard reads")
        pre = self.pre
        if what == "multicast group":
            written, build, set_entry, remove_entry = self.groups, _group, pre.set_group, pre.remove_group
        else:
            written, build, set_entry, remove_entry = (
                self.sessions,
                _session,
                pre.set_session,
                pre.remove_session,
            )
        old = written.get(key)
        if kind == Update.INSERT:
            if old is not None:
                raise P4RuntimeError(code_pb2.ALREADY_EXISTS, f"{what} {key} already exists")
        elif kind in (Update.MODIFY, Update.DELETE):
            if old is None:
                raise P4RuntimeError(code_pb2.NOT_FOUND, f"no {what} {key}")
        else:
            raise invalid(f"update type {kind} is not INSERT, MODIFY or DELETE")
        if kind == Update.DELETE:
            remove_entry(key)
            del written[key]
        else:
            try:
                set_entry(build(message))
            except EntryError as error:  # ranges and duplicate replicas
                raise invalid(str(error)) from error
            copy = type(message)()
            copy.CopyFrom(message)
            written[key] = copy

        def undo() -> None:
            if old is None:
                remove_entry(key)
                written.pop(key, None)
            else:
                set_entry(build(old))
                written[key] = old

        return undo

    # ----- read ------------------------------------------------------------------------------
    def read(self, entry: p4runtime_pb2.PacketReplicationEngineEntry) -> Iterator[p4runtime_pb2.Entity]:
        """The entries one (possibly wildcard) request names."""
        which = entry.WhichOneof("type")
        if which == "multicast_group_entry":
            wanted, written, field = (
                entry.multicast_group_entry.multicast_group_id,
                self.groups,
                "multicast_group_entry",
            )
        elif which == "clone_session_entry":
            wanted, written, field = (
                entry.clone_session_entry.session_id,
                self.sessions,
                "clone_session_entry",
            )
        else:
            raise invalid(
                "packet_replication_engine_entry carries neither a multicast group nor a clone session"
            )
        keys = sorted(written) if wanted == 0 else [wanted] if wanted in written else []
        for key in keys:
            entity = p4runtime_pb2.Entity()
            getattr(entity.packet_replication_engine_entry, field).CopyFrom(written[key])
            yield entity


def _replicas(replicas: Any, what: str) -> tuple[Replica, ...]:
    """The engine's replicas of an entry's Replica messages (port as ``egress_port`` or ``port`` bytes)."""
    result = []
    for replica in replicas:
        if len(replica.backup_replicas):
            raise P4RuntimeError(
                code_pb2.UNIMPLEMENTED, f"{what}: backup replicas are not supported by this target"
            )
        kind = replica.WhichOneof("port_kind")
        if kind == "egress_port":
            port = replica.egress_port
        elif kind == "port":
            if not replica.port:
                raise invalid(f"{what}: a replica's port is empty")
            port = int.from_bytes(replica.port, "big")
        else:
            raise invalid(f"{what}: a replica has no port")
        result.append(Replica(port, replica.instance))
    return tuple(result)


def _group(message: p4runtime_pb2.MulticastGroupEntry) -> MulticastGroup:
    what = f"multicast group {message.multicast_group_id}"
    return MulticastGroup(
        message.multicast_group_id, _replicas(message.replicas, what), bytes(message.metadata)
    )


def _session(message: p4runtime_pb2.CloneSessionEntry) -> CloneSession:
    what = f"clone session {message.session_id}"
    replicas = _replicas(message.replicas, what)
    return CloneSession(message.session_id, replicas, message.class_of_service, message.packet_length_bytes)
