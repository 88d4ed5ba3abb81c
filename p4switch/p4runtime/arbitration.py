"""Primary/backup arbitration of P4Runtime StreamChannel clients (P4Runtime spec, "Client Arbitration").

Per role, the open stream with the highest election id is the primary; only the
primary's election id may Write or set the pipeline. Every change of primary is
announced to all streams of the role: the primary gets status OK, the others
ALREADY_EXISTS (NOT_FOUND when no stream holds an election id), each with the
primary's election id.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from p4switch.p4runtime.info import P4RuntimeError

ElectionId = tuple[int, int]
Notify = Callable[[p4runtime_pb2.StreamMessageResponse], None]


def election_id_of(
    message: p4runtime_pb2.MasterArbitrationUpdate | p4runtime_pb2.WriteRequest,
) -> ElectionId | None:
    """The (high, low) election id, None when the message has none."""
    if not message.HasField("election_id"):
        return None
    return (message.election_id.high, message.election_id.low)


@dataclass
class StreamClient:
    """One open StreamChannel after its first arbitration message."""

    role: str
    election_id: ElectionId | None
    notify: Notify


class Arbitration:
    """The streams of one device and the primary of each role."""

    def __init__(self, device_id: int) -> None:
        self.device_id = device_id
        self._lock = threading.Lock()
        self._clients: dict[int, StreamClient] = {}

    def update(
        self, stream_key: int, arbitration: p4runtime_pb2.MasterArbitrationUpdate, notify: Notify
    ) -> None:
        """Register or update a stream's arbitration; raises P4RuntimeError for a bad request."""
        if arbitration.device_id != self.device_id:
            raise P4RuntimeError(
                code_pb2.NOT_FOUND, f"device id {arbitration.device_id} is not this device ({self.device_id})"
            )
        role = arbitration.role.name if arbitration.HasField("role") else ""
        election_id = election_id_of(arbitration)
        with self._lock:
            for key, client in self._clients.items():
                if (
                    key != stream_key
                    and client.role == role
                    and election_id is not None
                    and client.election_id == election_id
                ):
                    raise P4RuntimeError(
                        code_pb2.INVALID_ARGUMENT,
                        f"election id {election_id} is already used by another stream",
                    )
            old_primary = self._primary(role)
            previous = self._clients.get(stream_key)
            self._clients[stream_key] = StreamClient(role, election_id, notify)
            if previous is not None and previous.role != role:
                self._announce(previous.role, only=None)
            new_primary = self._primary(role)
            if old_primary != new_primary:
                self._announce(role, only=None)
            else:
                self._announce(role, only=stream_key)

    def remove(self, stream_key: int) -> None:
        """Forget a closed stream; if it was the primary, announce the new one."""
        with self._lock:
            client = self._clients.get(stream_key)
            if client is None:
                return
            was_primary = self._primary_key(client.role) == stream_key
            del self._clients[stream_key]
            if was_primary:
                self._announce(client.role, only=None)

    def check_primary(self, role: str, election_id: ElectionId | None) -> None:
        """Raise PERMISSION_DENIED unless ``election_id`` is the primary's of ``role``."""
        with self._lock:
            primary = self._primary(role)
        if primary is None or election_id != primary:
            raise P4RuntimeError(
                code_pb2.PERMISSION_DENIED,
                f"election id {election_id} is not the primary's ({primary}) for role {role!r}",
            )

    def primary_key(self, role: str = "") -> int | None:
        with self._lock:
            return self._primary_key(role)

    def notify_primary(self, message: p4runtime_pb2.StreamMessageResponse, role: str = "") -> bool:
        """Send a message (a packet-in) to the primary stream of ``role``; False when there is none."""
        with self._lock:
            key = self._primary_key(role)
            client = self._clients.get(key) if key is not None else None
        if client is None:
            return False
        client.notify(message)
        return True

    def _primary_key(self, role: str) -> int | None:
        best_key, best_id = None, None
        for key, client in self._clients.items():
            if (
                client.role == role
                and client.election_id is not None
                and (best_id is None or client.election_id > best_id)
            ):
                best_key, best_id = key, client.election_id
        return best_key

    def _primary(self, role: str) -> ElectionId | None:
        key = self._primary_key(role)
        return None if key is None else self._clients[key].election_id

    def _announce(self, role: str, only: int | None) -> None:
        primary_key = self._primary_key(role)
        primary_id = None if primary_key is None else self._clients[primary_key].election_id
        for key, client in self._clients.items():
            if client.role != role or (only is not None and key != only):
                continue
            response = p4runtime_pb2.StreamMessageResponse()
            update = response.arbitration
            update.device_id = self.device_id
            if role:
                update.role.name = role
            if primary_id is not None:
                update.election_id.high, update.election_id.low = primary_id
                update.status.code = code_pb2.OK if key == primary_key else code_pb2.ALREADY_EXISTS
                update.status.message = "primary" if key == primary_key else "backup: a primary exists"
            else:
                update.status.code = code_pb2.NOT_FOUND
                update.status.message = "no primary"
            client.notify(response)
