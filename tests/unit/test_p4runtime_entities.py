"""The switch's P4Runtime entity writes against the specification (v1.3): keyless tables, full tables,
padded bytestrings, and MODIFY/DELETE found by key (no table scan); on the server objects, no gRPC."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from p4src import CARD_PROGRAM
from p4src import card as names
from p4switch.p4runtime.client import table_entry, update
from p4switch.p4runtime.entities import PipelineEntities
from p4switch.p4runtime.info import P4InfoIndex, P4RuntimeError

ACL = Path(__file__).resolve().parents[1] / "p4progs" / "acl.p4"
INSERT, MODIFY, DELETE = p4runtime_pb2.Update.INSERT, p4runtime_pb2.Update.MODIFY, p4runtime_pb2.Update.DELETE


@pytest.fixture(scope="module")
def card_program():
    from p4switch import compile_program

    return compile_program(str(CARD_PROGRAM))


@pytest.fixture(scope="module")
def acl_program():
    from p4switch import compile_program

    return compile_program(str(ACL))


def entities_of(program) -> PipelineEntities:
    return PipelineEntities(program.new_pipeline(), P4InfoIndex(program.p4info))


def code_of(entities: PipelineEntities, message: p4runtime_pb2.Update) -> int:
    try:
        entities.write(message)
    except P4RuntimeError as error:
        return error.code
    return code_pb2.OK


def route(entities: PipelineEntities, pe: bytes, port: bytes = b"\x02", ingress: bytes = b"\x01"):
    """A route entity: (ingress port, destination PE, routing class 0) -> set_route(port, vc 1)."""
    index = entities.index
    table = index.table_named(names.ROUTE)
    fields = [f.id for f in table.match_fields]
    action = index.action_named(names.SET_ROUTE)
    return table_entry(
        table.id,
        [(fields[0], ingress), (fields[1], pe), (fields[2], b"\x00")],
        action.id,
        [(action.params[0].id, port), (action.params[1].id, b"\x01")],
    )


def routes_read(entities: PipelineEntities) -> list[p4runtime_pb2.TableEntry]:
    wildcard = p4runtime_pb2.Entity()
    wildcard.table_entry.table_id = entities.index.table_id(names.ROUTE)
    return [found.table_entry for found in entities.read(wildcard)]


def test_a_keyless_table_takes_no_entries_only_its_default(card_program) -> None:
    entities = entities_of(card_program)
    index = entities.index
    action = index.action_named(names.SET_CARD)
    params = [(action.params[0].id, b"\x07"), (action.params[1].id, b"\x10")]
    entry = table_entry(index.table_id(names.CARD_CONFIG), [], action.id, params)
    for kind in (INSERT, MODIFY, DELETE):
        assert code_of(entities, update(kind, entry)) == code_pb2.INVALID_ARGUMENT
    assert entities.pipeline.table_default(names.CARD_CONFIG)[1] != (7, 16)  # nothing changed
    entry.table_entry.is_default_action = True
    assert code_of(entities, update(MODIFY, entry)) == code_pb2.OK
    assert entities.pipeline.table_default(names.CARD_CONFIG) == (names.SET_CARD, (7, 16))


def test_a_full_table_answers_resource_exhausted(acl_program) -> None:
    entities = entities_of(acl_program)
    table = entities.index.table_named("AclIngress.acl")
    allow = entities.index.action_id("AclIngress.allow")
    assert table.size == 64  # acl.p4 declares it
    for priority in range(1, table.size + 1):  # all-wildcard entries, one per priority
        assert code_of(entities, update(INSERT, table_entry(table.id, [], allow, priority=priority))) == 0
    one_more = update(INSERT, table_entry(table.id, [], allow, priority=table.size + 1))
    assert code_of(entities, one_more) == code_pb2.RESOURCE_EXHAUSTED
    assert len(entities.pipeline.table_entries(table.name)) == table.size


def test_values_padded_with_zero_bytes_are_accepted_and_read_back_canonical(card_program) -> None:
    entities = entities_of(card_program)
    # dst_pe is bit<16>: 4 as one, two and three bytes; port is bit<9>: 2 as three bytes
    assert code_of(entities, update(INSERT, route(entities, b"\x00\x00\x04", port=b"\x00\x00\x02"))) == 0
    assert code_of(entities, update(INSERT, route(entities, b"\x04"))) == code_pb2.ALREADY_EXISTS
    (entry,) = routes_read(entities)
    assert [m.exact.value for m in entry.match] == [b"\x01", b"\x04", b"\x00"]
    assert [p.value for p in entry.action.action.params] == [b"\x02", b"\x01"]
    # values that do not fit their width are refused, however they are padded
    for pe in (b"\x01\x00\x00", b"\x00\x01\x00\x00"):
        assert code_of(entities, update(INSERT, route(entities, pe))) == code_pb2.INVALID_ARGUMENT
    assert code_of(entities, update(INSERT, route(entities, b"\x05", port=b"\x02\x00"))) == (
        code_pb2.INVALID_ARGUMENT
    )


def test_modify_and_delete_find_the_entry_by_key_without_listing_the_table(card_program) -> None:
    entities = entities_of(card_program)
    for pe in range(1, 6):
        assert code_of(entities, update(INSERT, route(entities, bytes([pe])))) == 0

    def no_listing(table: str):
        raise AssertionError(f"the table {table} was listed to find one entry")

    pipeline = entities.pipeline
    pipeline.table_entries = no_listing  # what O(table size) MODIFY and DELETE did
    assert code_of(entities, update(MODIFY, route(entities, b"\x03", port=b"\x09"))) == 0
    assert code_of(entities, update(DELETE, route(entities, b"\x04"))) == 0
    assert code_of(entities, update(DELETE, route(entities, b"\x04"))) == code_pb2.NOT_FOUND
    assert code_of(entities, update(MODIFY, route(entities, b"\x04"))) == code_pb2.NOT_FOUND
    del pipeline.table_entries
    held = {e.match[1].exact.value: e.action.action.params[0].value for e in routes_read(entities)}
    assert held == {b"\x01": b"\x02", b"\x02": b"\x02", b"\x03": b"\x09", b"\x05": b"\x02"}


def test_modify_and_delete_are_undone_exactly(card_program) -> None:
    entities = entities_of(card_program)
    entities.write(update(INSERT, route(entities, b"\x01")))
    before = [entry.SerializeToString() for entry in routes_read(entities)]
    undo_modify = entities.write(update(MODIFY, route(entities, b"\x01", port=b"\x07")))
    undo_modify()
    assert [entry.SerializeToString() for entry in routes_read(entities)] == before
    undo_delete = entities.write(update(DELETE, route(entities, b"\x01")))
    assert routes_read(entities) == []
    undo_delete()
    assert [entry.SerializeToString() for entry in routes_read(entities)] == before
    # the key index follows the undo: the entry can be modified again, not inserted twice
    assert code_of(entities, update(INSERT, route(entities, b"\x01"))) == code_pb2.ALREADY_EXISTS
    assert code_of(entities, update(MODIFY, route(entities, b"\x01", port=b"\x03"))) == code_pb2.OK
