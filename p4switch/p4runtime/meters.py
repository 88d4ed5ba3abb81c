"""P4Runtime's MeterEntry and DirectMeterEntry on a pipeline's meters (p4switch.runtime.meters).

As the P4Runtime specification says of them: a meter entry is only modified (INSERT and
DELETE are INVALID_ARGUMENT); a MODIFY without ``config`` restores the default (every packet
GREEN); an index out of the meter's size is OUT_OF_RANGE; a read without an index gives
every cell, and ``config`` is left unset in a read for a cell with the default
configuration (read-write symmetry). A configuration whose committed rate is above its
peak rate (RFC 2698 needs PIR >= CIR) or with a negative value is INVALID_ARGUMENT.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from p4.v1 import p4runtime_pb2

from p4switch.errors import EntryError
from p4switch.p4runtime.info import invalid, requested_cells, written_cell

Undo = Callable[[], None]
Config = tuple[int, int, int, int] | None


def config_of(message: Any) -> Config:
    """(cir, cburst, pir, pburst) of a message's ``config`` (None when it is unset)."""
    if not message.HasField("config"):
        return None
    config = message.config
    return (config.cir, config.cburst, config.pir, config.pburst)


def set_config(message: Any, config: Config) -> None:
    """Fill a message's ``config`` (left unset for the default)."""
    if config is not None:
        cir, cburst, pir, pburst = config
        message.config.CopyFrom(p4runtime_pb2.MeterConfig(cir=cir, cburst=cburst, pir=pir, pburst=pburst))


def configure(apply: Callable[[Config], None], config: Config) -> None:
    """Apply a configuration; the core's EntryError (rates) as INVALID_ARGUMENT."""
    try:
        apply(config)
    except EntryError as error:
        raise invalid(str(error)) from error


class MeterEntities:
    """Writes and reads of indexed meter cells."""

    def __init__(self, pipeline: Any, index: Any) -> None:
        self.pipeline = pipeline
        self.index = index

    def write(self, kind: int, entry: p4runtime_pb2.MeterEntry) -> Undo:
        meter = self.index.meter(entry.meter_id)
        cell = written_cell(kind, entry, meter, "meter")
        pipeline = self.pipeline
        old = pipeline.meter_config(meter.name, cell)
        configure(lambda config: pipeline.meter_set(meter.name, cell, config), config_of(entry))
        return lambda: pipeline.meter_set(meter.name, cell, old)

    def read(self, request: p4runtime_pb2.MeterEntry) -> Iterator[p4runtime_pb2.Entity]:
        meters = (
            list(self.index.meters.values())
            if request.meter_id == 0
            else [self.index.meter(request.meter_id)]
        )
        for meter in meters:
            for cell in requested_cells(request, meter):
                entity = p4runtime_pb2.Entity()
                entity.meter_entry.meter_id = meter.id
                entity.meter_entry.index.index = cell
                set_config(entity.meter_entry, self.pipeline.meter_config(meter.name, cell))
                yield entity
