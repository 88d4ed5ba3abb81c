"""v1model meters as two-rate three-colour markers (RFC 2698, colour-blind), indexed and direct.

The expected colours are worked out by hand from RFC 2698's rules (buckets full at
configuration; a packet is RED if the peak bucket lacks its size, else YELLOW if the
committed bucket does, else GREEN; tokens refill at the rates between packets, time being
the packet's ingress timestamp in microseconds). P4Runtime's MeterEntry, DirectMeterEntry
and TableEntry.meter_config follow the specification's rules.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2
from test_p4runtime_entities import code_of, entities_of  # the same helpers as the other entity tests

from p4switch import compile_program
from p4switch.p4runtime.client import table_entry

PROGRAM_FILE = Path(__file__).resolve().parents[1] / "p4progs" / "meters.p4"
GREEN, YELLOW, RED = 0, 1, 2
MODIFY, INSERT = p4runtime_pb2.Update.MODIFY, p4runtime_pb2.Update.INSERT


@pytest.fixture(scope="module")
def program():
    return compile_program(str(PROGRAM_FILE))


def colors(pipeline, index: int, times_us: list[int], length: int = 4) -> list[tuple[int, int]]:
    """(indexed colour, direct colour) of one frame of `length` bytes at each time."""
    frame = bytes([index, 0xFF, 0xFF, 0]) + bytes(length - 4)
    out = []
    for now in times_us:
        ((_, sent),) = pipeline.process(frame, 0, now)
        out.append((sent[1], sent[2]))
    return out


def test_an_unconfigured_meter_is_green_and_a_miss_leaves_the_field(program) -> None:
    """No configuration: GREEN; no entry for idx 3: the direct colour field keeps its 0xFF."""
    pipeline = program.new_pipeline()
    assert colors(pipeline, 3, [0, 1, 2]) == [(GREEN, 0xFF)] * 3


def test_indexed_packets_meter_follows_rfc_2698(program) -> None:
    """CIR 1000/s, CBS 2, PIR 2000/s, PBS 4. Six packets at t=0: peak 4 and committed 2 give G G Y Y R R.
    At t=1 ms the peak bucket has 2 tokens back (0 + 2000/s * 1 ms) and the committed one 1:
    G (peak 1, committed 0), Y (peak 0), R. Cell 1 is not configured: GREEN throughout."""
    pipeline = program.new_pipeline()
    pipeline.meter_set("I.pm", 2, (1000, 2, 2000, 4))
    got = [c for c, _ in colors(pipeline, 2, [0] * 6 + [1000] * 3)]
    assert got == [GREEN, GREEN, YELLOW, YELLOW, RED, RED, GREEN, YELLOW, RED]
    assert [c for c, _ in colors(pipeline, 1, [0] * 6)] == [GREEN] * 6


def test_direct_bytes_meter_per_entry(program) -> None:
    """Entry idx 3, bytes meter CIR 0 CBS 100 PIR 0 PBS 150, 60-byte frames at t=0: peak 150 -> 90 and
    committed 100 -> 40: G; peak 90 -> 30, committed 40 < 60: Y; peak 30 < 60: R."""
    pipeline = program.new_pipeline()
    pipeline.table_insert("I.t", {"hdr.h.idx": 3}, "I.mark")
    pipeline.direct_meter_set("I.t", {"hdr.h.idx": 3}, (0, 100, 0, 150))
    assert [d for _, d in colors(pipeline, 3, [0, 0, 0], length=60)] == [GREEN, YELLOW, RED]


def meter_update(kind: int, meter_id: int, index: int | None, config=None) -> p4runtime_pb2.Update:
    message = p4runtime_pb2.Update(type=kind)
    entry = message.entity.meter_entry
    entry.meter_id = meter_id
    if index is not None:
        entry.index.index = index
    if config is not None:
        entry.config.CopyFrom(
            p4runtime_pb2.MeterConfig(cir=config[0], cburst=config[1], pir=config[2], pburst=config[3])
        )
    return message


def test_meter_entry_writes_and_reads(program) -> None:
    """MeterEntry: only MODIFY (INSERT: INVALID_ARGUMENT); index past the size: OUT_OF_RANGE; CIR above
    PIR: INVALID_ARGUMENT; a read gives the written config back and leaves the default unset; a
    MODIFY without config restores the default."""
    entities = entities_of(program)
    (meter,) = program.p4info.meters
    meter_id = meter.preamble.id
    assert meter.size == 4
    assert code_of(entities, meter_update(INSERT, meter_id, 1, (1, 1, 2, 2))) == code_pb2.INVALID_ARGUMENT
    assert code_of(entities, meter_update(MODIFY, meter_id, 4, (1, 1, 2, 2))) == code_pb2.OUT_OF_RANGE
    assert code_of(entities, meter_update(MODIFY, meter_id, 1, (3, 1, 2, 2))) == code_pb2.INVALID_ARGUMENT
    assert code_of(entities, meter_update(MODIFY, meter_id, 1, (1000, 2, 2000, 4))) == code_pb2.OK
    request = p4runtime_pb2.Entity()
    request.meter_entry.meter_id = meter_id
    read = [e.meter_entry for e in entities.read(request)]
    assert [(e.index.index, e.HasField("config")) for e in read] == [
        (0, False),
        (1, True),
        (2, False),
        (3, False),
    ]
    assert (read[1].config.cir, read[1].config.pburst) == (1000, 4)
    assert code_of(entities, meter_update(MODIFY, meter_id, 1)) == code_pb2.OK
    assert entities.pipeline.meter_config("I.pm", 1) is None


def test_table_entry_meter_config_and_direct_meter_entry(program) -> None:
    """TableEntry.meter_config configures the entry's direct meter on INSERT; DirectMeterEntry
    MODIFY changes it and reads it back; a DirectMeterEntry of a missing entry is NOT_FOUND."""
    entities = entities_of(program)
    index = entities.index
    table = index.table_named("I.t")
    action = index.action_named("I.mark")
    entry = table_entry(table.id, [(table.match_fields[0].id, b"\x05")], action.id, []).table_entry
    entry.meter_config.CopyFrom(p4runtime_pb2.MeterConfig(cir=0, cburst=100, pir=0, pburst=150))
    insert = p4runtime_pb2.Update(type=INSERT)
    insert.entity.table_entry.CopyFrom(entry)
    assert code_of(entities, insert) == code_pb2.OK
    assert entities.pipeline.direct_meter_config("I.t", {"hdr.h.idx": 5}) == (0, 100, 0, 150)
    modify = p4runtime_pb2.Update(type=MODIFY)
    modify.entity.direct_meter_entry.table_entry.CopyFrom(entry)
    modify.entity.direct_meter_entry.table_entry.ClearField("meter_config")
    modify.entity.direct_meter_entry.config.CopyFrom(
        p4runtime_pb2.MeterConfig(cir=1, cburst=2, pir=3, pburst=4)
    )
    assert code_of(entities, modify) == code_pb2.OK
    request = p4runtime_pb2.Entity()
    request.direct_meter_entry.table_entry.table_id = table.id
    (read,) = [e.direct_meter_entry for e in entities.read(request)]
    assert (read.config.cir, read.config.cburst, read.config.pir, read.config.pburst) == (1, 2, 3, 4)
    missing = p4runtime_pb2.Update(type=MODIFY)
    missing.entity.direct_meter_entry.CopyFrom(modify.entity.direct_meter_entry)
    missing.entity.direct_meter_entry.table_entry.match[0].exact.value = b"\x06"
    assert code_of(entities, missing) == code_pb2.NOT_FOUND
