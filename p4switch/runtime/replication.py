"""The packet replication engine (PRE) of a v1model pipeline: multicast groups and clone sessions.

One definition for every user: the STF runner (``mc_*`` and ``mirroring_*`` verbs), the
P4Runtime server (``PacketReplicationEngineEntry``) and the data plane, which hands the
pipeline's ingress results to ``Pipeline.replicate`` (p4switch.runtime.pipeline). Semantics
are those of bmv2's simple_switch: a multicast group is an ordered list of (egress port,
egress_rid) replicas, each copy leaving ingress with ``instance_type`` REPLICATION and its
``egress_rid``; a group that is not programmed drops the packet; a clone session sends its
copies to its replicas (and, for an STF ``mirroring_add_mc`` session, to a multicast group),
truncated to ``packet_length_bytes`` when that is not 0; a session that is not programmed
makes no clone.
"""

from __future__ import annotations

from dataclasses import dataclass

from p4switch.errors import EntryError

# standard_metadata.instance_type values of simple_switch (its PktInstanceType enum)
NORMAL = 0
INGRESS_CLONE = 1
EGRESS_CLONE = 2
COALESCED = 3
RECIRCULATED = 4
REPLICATION = 5
RESUBMITTED = 6

#: v1model's egress_rid is bit<16>; ports are bit<9> and 511 is the drop port
MAX_INSTANCE = (1 << 16) - 1
MAX_PORT = 510
#: v1model's standard_metadata.priority is bit<3>: a clone session's class of service is a priority
MAX_CLASS_OF_SERVICE = 7


@dataclass(frozen=True)
class Replica:
    """One copy: the egress port and the instance (standard_metadata.egress_rid)."""

    port: int
    instance: int = 0


@dataclass(frozen=True)
class MulticastGroup:
    """A multicast group: its replicas in order, and the controller's opaque metadata."""

    group_id: int
    replicas: tuple[Replica, ...]
    metadata: bytes = b""


@dataclass(frozen=True)
class CloneSession:
    """A clone (mirroring) session: replicas, class of service, truncation (0: none), or a multicast group."""

    session_id: int
    replicas: tuple[Replica, ...]
    class_of_service: int = 0
    packet_length_bytes: int = 0
    multicast_group: int = 0  # an STF mirroring_add_mc session: copies go to this group's replicas


def check_replicas(replicas: tuple[Replica, ...], what: str) -> None:
    """EntryError unless every replica has a port and instance v1model can carry, each pair once."""
    seen: set[Replica] = set()
    for replica in replicas:
        if not 0 <= replica.port <= MAX_PORT:
            raise EntryError(f"{what}: egress port {replica.port} out of 0..{MAX_PORT}")
        if not 0 <= replica.instance <= MAX_INSTANCE:
            raise EntryError(
                f"{what}: instance {replica.instance} out of 0..{MAX_INSTANCE} (egress_rid is bit<16>)"
            )
        if replica in seen:
            raise EntryError(
                f"{what}: replica (port {replica.port}, instance {replica.instance}) given twice"
            )
        seen.add(replica)


class ReplicationEngine:
    """Multicast groups and clone sessions of one pipeline (one card)."""

    def __init__(self) -> None:
        self.groups: dict[int, MulticastGroup] = {}
        self.sessions: dict[int, CloneSession] = {}

    # ----- multicast groups -----------------------------------------------------------------
    def set_group(self, group: MulticastGroup) -> MulticastGroup | None:
        """Install or replace a group; returns the one it replaced (None if new)."""
        if not 0 < group.group_id <= 0xFFFF:
            raise EntryError(f"multicast group id {group.group_id} out of 1..65535 (mcast_grp is bit<16>)")
        check_replicas(group.replicas, f"multicast group {group.group_id}")
        old = self.groups.get(group.group_id)
        self.groups[group.group_id] = group
        return old

    def remove_group(self, group_id: int) -> MulticastGroup:
        """Remove a group; EntryError if there is none."""
        group = self.groups.pop(group_id, None)
        if group is None:
            raise EntryError(f"no multicast group {group_id}")
        return group

    def group_replicas(self, group_id: int) -> tuple[Replica, ...]:
        """The replicas of a group (none for a group that is not programmed: the packet is dropped)."""
        group = self.groups.get(group_id)
        return group.replicas if group is not None else ()

    # ----- clone sessions -------------------------------------------------------------------
    def set_session(self, session: CloneSession) -> CloneSession | None:
        """Install or replace a clone session; returns the one it replaced (None if new)."""
        if not 0 < session.session_id <= 0xFFFFFFFF:
            raise EntryError(f"clone session id {session.session_id} out of 1..2^32-1")
        check_replicas(session.replicas, f"clone session {session.session_id}")
        if not 0 <= session.class_of_service <= MAX_CLASS_OF_SERVICE:
            raise EntryError(
                f"clone session {session.session_id}: class of service {session.class_of_service} "
                f"out of 0..{MAX_CLASS_OF_SERVICE} (standard_metadata.priority is bit<3>)"
            )
        if session.packet_length_bytes < 0:
            raise EntryError(f"clone session {session.session_id}: negative packet length")
        old = self.sessions.get(session.session_id)
        self.sessions[session.session_id] = session
        return old

    def remove_session(self, session_id: int) -> CloneSession:
        """Remove a clone session; EntryError if there is none."""
        session = self.sessions.pop(session_id, None)
        if session is None:
            raise EntryError(f"no clone session {session_id}")
        return session

    def clone_targets(self, session_id: int) -> tuple[CloneSession | None, tuple[Replica, ...]]:
        """The session and where its copies go: its replicas, then its multicast group's."""
        session = self.sessions.get(session_id)
        if session is None:
            return None, ()
        replicas = session.replicas
        if session.multicast_group:
            replicas = replicas + self.group_replicas(session.multicast_group)
        return session, replicas

    def clear(self) -> None:
        """Forget every group and session."""
        self.groups.clear()
        self.sessions.clear()
