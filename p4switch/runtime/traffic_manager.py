"""v1model's traffic manager: what happens after ingress and after egress, as simple_switch does it.

At the end of ingress (simple_switch's ingress_thread): an ingress clone (``clone``,
``clone_preserving_field_list``) re-parses the packet as it arrived, resets the metadata,
copies the field list's fields from the packet at the end of ingress, and sends one copy
per clone session replica (instance_type INGRESS_CLONE); then a resubmitted packet
(``resubmit_preserving_field_list``) goes through parser and ingress again from the packet
as it arrived (metadata reset but its field list, instance_type RESUBMITTED) and replaces
the original; else a multicast group makes one copy per replica (instance_type
REPLICATION, egress_rid the replica's instance), else the packet goes to egress_spec
(instance_type NORMAL) unless that is the drop port.

At the end of egress (egress_thread): an egress clone copies the headers as egress left
them (metadata reset, field list copied, instance_type EGRESS_CLONE), before the drop
check; a recirculated packet (``recirculate_preserving_field_list``) is deparsed and goes
through parser and ingress again (instance_type RECIRCULATED); ``truncate(n)`` cuts the
frame to n bytes. Clone sessions' ``packet_length_bytes`` truncate their copies.

The generated module (p4switch.compiler.codegen, for a program that calls these
externs) records requests in hidden attributes of the standard metadata object:
``_clone`` (session id, field list copier), ``_resub``, ``_recirc`` (field list
copiers), ``_trunc`` (bytes), and keeps the packet as received in ``_in``. A field list
copier is a generated function ``(src_meta, src_sm, dst_meta, dst_sm)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from p4switch.errors import PacketError
from p4switch.runtime.replication import (
    EGRESS_CLONE,
    INGRESS_CLONE,
    NORMAL,
    RECIRCULATED,
    REPLICATION,
    RESUBMITTED,
    Replica,
)

if TYPE_CHECKING:
    from p4switch.runtime.pipeline import IngressResult, Pipeline

#: resubmissions, recirculations and clones of clones of one packet before it is refused
#: (simple_switch would loop forever)
MAX_PASSES = 16
_REQUESTS = ("_clone", "_resub", "_recirc")


class TrafficManager:
    """The replication, clone, resubmit and recirculate steps of one pipeline."""

    def __init__(self, pipeline: Pipeline, namespace: dict) -> None:
        self.pipeline = pipeline
        self.pre = pipeline.pre
        self.drop_port = pipeline.model.drop_port
        self.pending: list[IngressResult] = []
        model = pipeline.model
        self._new_meta = namespace.get(model.metadata_class)
        self._new_sm = namespace.get(model.standard_metadata_class)
        self._run_parser = namespace.get("run_parser")
        self._run_ingress_again = namespace.get("run_ingress_again")
        namespace["egress_clone"] = self.egress_clone
        namespace["recirculate_frame"] = self.recirculate

    @staticmethod
    def has_requests(sm: Any) -> bool:
        """Whether ingress asked for a clone or a resubmission."""
        fields = sm.__dict__
        return "_clone" in fields or "_resub" in fields

    # ----- end of ingress ---------------------------------------------------------------------
    def after_ingress(self, result: IngressResult) -> list[IngressResult]:
        """The packets one ingress result gives the queues (see the module's docstring)."""
        state = result.state
        if state is None:
            raise PacketError("this ingress result was already used by egress")
        result.state = None
        hdr, meta, sm, payload = state
        out: list[IngressResult] = []
        fields = sm.__dict__
        while "_clone" in fields or "_resub" in fields:
            clone = fields.pop("_clone", None)
            if clone is not None:
                packet = fields["_in"]
                clone_hdr, clone_payload = self._run_parser(
                    packet, sm.f_ingress_port, sm.f_ingress_global_timestamp
                )
                out += self._clones(clone_hdr, clone_payload, meta, sm, clone, INGRESS_CLONE)
            copier = fields.pop("_resub", None)
            if copier is None:
                break
            new_meta, new_sm = self._fresh(meta, sm, copier, RESUBMITTED)
            packet = fields["_in"]
            hdr, meta, sm, payload = self._run_ingress_again(
                packet, sm.f_ingress_port, sm.f_ingress_global_timestamp, new_meta, new_sm
            )
            fields = sm.__dict__
        group = sm.f_mcast_grp
        if group:
            fields.pop("_recirc", None)  # simple_switch clears a replica's registers
            sm.f_instance_type = REPLICATION
            for replica in self.pre.group_replicas(group):
                copy_sm = sm.copy()
                copy_sm.f_egress_rid = replica.instance
                out.append(self._result(replica.port, (hdr.copy(), meta.copy(), copy_sm, payload)))
            return out
        if sm.f_egress_spec != self.drop_port:
            if self.pipeline.special_ops:
                sm.f_instance_type = NORMAL
            out.append(self._result(sm.f_egress_spec, (hdr, meta, sm, payload)))
        return out

    # ----- end of egress (called by the generated run_egress) -----------------------------------
    def egress_clone(self, hdr: Any, meta: Any, sm: Any, payload: bytes) -> None:
        """An egress clone request: the copies, with the headers as egress left them, to ``pending``."""
        clone = sm.__dict__.pop("_clone")
        self.pending += self._clones(hdr, payload, meta, sm, clone, EGRESS_CLONE)

    def recirculate(self, frame: bytes, meta: Any, sm: Any) -> None:
        """A recirculated packet: parser and ingress again on the deparsed frame; copies to ``pending``."""
        copier = sm.__dict__.pop("_recirc")
        new_meta, new_sm = self._fresh(meta, sm, copier, RECIRCULATED)
        new_sm.f_packet_length = len(frame)
        state = self._run_ingress_again(
            frame, sm.f_ingress_port, sm.f_egress_global_timestamp, new_meta, new_sm
        )
        self.pending += self.after_ingress(self.pipeline.result_of(state))

    # ----- helpers --------------------------------------------------------------------------------
    def _fresh(self, meta: Any, sm: Any, copier: Any, instance_type: int) -> tuple[Any, Any]:
        """Reset metadata with the field list's values copied from (meta, sm), counting passes."""
        new_meta, new_sm = self._new_meta(), self._new_sm()
        copier(meta, sm, new_meta, new_sm)
        new_sm.f_instance_type = instance_type
        passes = sm.__dict__.get("_passes", 0) + 1
        if passes > MAX_PASSES:
            raise PacketError(
                f"packet resubmitted, recirculated or cloned from a copy more than {MAX_PASSES} times"
            )
        new_sm._passes = passes
        return new_meta, new_sm

    def _clones(
        self, hdr: Any, payload: bytes, meta: Any, sm: Any, clone: tuple, instance_type: int
    ) -> list[IngressResult]:
        """One copy per replica of the clone session (none if the session is not programmed)."""
        session_id, copier = clone
        session, replicas = self.pre.clone_targets(session_id)
        if session is None:
            return []
        new_meta, new_sm = self._fresh(meta, sm, copier, instance_type)
        new_sm.f_packet_length = sm.f_packet_length
        new_sm.f_priority = session.class_of_service
        truncate = session.packet_length_bytes
        if truncate:
            new_sm._trunc = min(truncate, sm.__dict__.get("_trunc", truncate))
        copies = []
        for replica in replicas:
            copies.append(self._replica(replica, hdr, new_meta, new_sm, payload))
        return copies

    def _replica(self, replica: Replica, hdr: Any, meta: Any, sm: Any, payload: bytes) -> IngressResult:
        copy_sm = sm.copy()
        copy_sm.f_egress_rid = replica.instance
        return self._result(replica.port, (hdr.copy(), meta.copy(), copy_sm, payload))

    def _result(self, port: int, state: tuple) -> IngressResult:
        from p4switch.runtime.pipeline import IngressResult

        sm = state[2]
        return IngressResult(
            False, port, sm.f_priority, sm.f_packet_length, sm.f_mcast_grp, state, sm.f_parser_error
        )
