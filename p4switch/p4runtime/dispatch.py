"""One P4Runtime server for the many devices (cards) of a switch process, each request routed by device id.

As the P4Runtime specification intends for a server with several devices: every
request names its ``device_id`` and goes to that device's ``P4RuntimeService``
(arbitration, pipeline config, reads and writes are per device); a StreamChannel is
routed by the device id of its first message, the arbitration update. A request for a
device the process does not host (never had, or killed) gets NOT_FOUND naming the id.
Capabilities is the same for all devices.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator

import grpc
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from p4switch.p4runtime.server import P4RuntimeService, p4runtime_version


class DispatchingService(p4runtime_pb2_grpc.P4RuntimeServicer):
    """Routes each RPC to the service of its device id; devices can be added and removed while serving."""

    def __init__(self) -> None:
        self._services: dict[int, P4RuntimeService] = {}
        self._lock = threading.Lock()

    def add(self, service: P4RuntimeService) -> None:
        with self._lock:
            if service.device_id in self._services:
                raise ValueError(f"device id {service.device_id} is served already")
            self._services[service.device_id] = service

    def remove(self, device_id: int) -> P4RuntimeService | None:
        """Stop serving ``device_id``: then NOT_FOUND for it; its running Write ends, its streams end."""
        with self._lock:
            service = self._services.pop(device_id, None)
        if service is not None:
            service.stop()
            service.end_streams()
        return service

    def device_ids(self) -> list[int]:
        with self._lock:
            return sorted(self._services)

    def _service(self, device_id: int, context: grpc.ServicerContext) -> P4RuntimeService:
        service = self._services.get(device_id)
        if service is None:
            context.abort(
                grpc.StatusCode.NOT_FOUND, f"device id {device_id} is not served by this switch process"
            )
        return service

    # ----- RPCs ------------------------------------------------------------------------------
    def Capabilities(self, request, context):  # noqa: N802 - gRPC method name
        return p4runtime_pb2.CapabilitiesResponse(p4runtime_api_version=p4runtime_version())

    def SetForwardingPipelineConfig(self, request, context):  # noqa: N802
        return self._service(request.device_id, context).SetForwardingPipelineConfig(request, context)

    def GetForwardingPipelineConfig(self, request, context):  # noqa: N802
        return self._service(request.device_id, context).GetForwardingPipelineConfig(request, context)

    def Write(self, request, context, raw: bytes | None = None):  # noqa: N802
        return self._service(request.device_id, context).Write(request, context, raw=raw)

    def Read(self, request, context):  # noqa: N802
        return self._service(request.device_id, context).Read(request, context)

    def StreamChannel(self, request_iterator: Iterator, context):  # noqa: N802
        """Routed by the first message, which must be the arbitration update naming the device."""
        first = next(request_iterator, None)
        if first is None:
            return
        if first.WhichOneof("update") != "arbitration":
            context.abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                "the first message of a StreamChannel must be an arbitration update (it names the device)",
            )
        service = self._service(first.arbitration.device_id, context)
        yield from service.StreamChannel(itertools.chain((first,), request_iterator), context)
