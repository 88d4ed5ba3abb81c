"""The fast path of all-exact tables' writes (PipelineEntities._write_exact) against the generic path.

The reference is the same entities with the fast path turned off: every update, valid or
not, must get the same answer (code and message), and the tables must end up the same
(read back over P4Runtime and as the data plane looks them up); the undo steps as well.
"""

from __future__ import annotations

import random

import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from p4src import CARD_PROGRAM
from p4src import card as names
from p4switch.p4runtime.entities import PipelineEntities
from p4switch.p4runtime.info import P4InfoIndex, P4RuntimeError

INSERT, MODIFY, DELETE = p4runtime_pb2.Update.INSERT, p4runtime_pb2.Update.MODIFY, p4runtime_pb2.Update.DELETE


@pytest.fixture(scope="module")
def card_program():
    from p4switch import compile_program

    return compile_program(str(CARD_PROGRAM))


def pair(program) -> tuple[PipelineEntities, PipelineEntities]:
    """(entities with the fast path, entities without it) on two fresh pipelines of `program`."""
    fast = PipelineEntities(program.new_pipeline(), P4InfoIndex(program.p4info))
    generic = PipelineEntities(program.new_pipeline(), P4InfoIndex(program.p4info))
    generic.exact = {}
    return fast, generic


def answer(entities: PipelineEntities, message: p4runtime_pb2.Update):
    """(code, message, undo) of one write."""
    try:
        undo = entities.write(message)
    except P4RuntimeError as error:
        return error.code, error.message, None
    return code_pb2.OK, "", undo


def state(entities: PipelineEntities) -> tuple:
    """Every table's entries as read back (serialised), and the route table as the data plane sees it."""
    wildcard = p4runtime_pb2.Entity()
    wildcard.table_entry.table_id = 0
    read = sorted(entity.SerializeToString(deterministic=True) for entity in entities.read(wildcard))
    core = entities.pipeline.tables[names.ROUTE]
    lookup = {
        key: (entry.action_name, tuple(entry.args), entry.value, entry.mask)
        for key, entry in core.by_key.items()
    }
    calls = [entry.call.args if hasattr(entry.call, "args") else None for entry in core.by_key.values()]
    return read, lookup, sorted(calls, key=repr), sorted(core.entries)


def route_update(
    index: P4InfoIndex, kind: int, rng: random.Random, pes: int = 6, bent: float = 0.5
) -> p4runtime_pb2.Update:
    """A route-table update in canonical form, then (with probability `bent`) bent one way or another."""
    table = index.table_named(names.ROUTE)
    action = index.action_named(names.SET_ROUTE)
    message = p4runtime_pb2.Update(type=kind)
    entry = message.entity.table_entry
    entry.table_id = table.id
    values = [rng.randrange(1, 3), rng.randrange(pes), rng.randrange(2)]
    for info, value in zip(table.match_fields, values, strict=True):
        entry.match.add(field_id=info.id).exact.value = value.to_bytes(max(1, (value.bit_length() + 7) // 8))
    if kind != DELETE or rng.random() < 0.2:
        entry.action.action.action_id = action.id
        for param, value in zip(action.params, (rng.randrange(1, 5), rng.randrange(2)), strict=True):
            entry.action.action.params.add(param_id=param.id, value=bytes([value]))
    if rng.random() < bent:
        bend(index, entry, rng, message)
    return message


def bend(index: P4InfoIndex, entry: p4runtime_pb2.TableEntry, rng: random.Random, message) -> None:
    """One change that the fast path must leave to the generic path, or that makes the entry invalid."""
    fields = list(entry.match)
    choice = rng.randrange(15)
    if choice == 0:  # padded: valid
        fields[1].exact.value = b"\x00" + fields[1].exact.value
    elif choice == 1:  # too wide
        fields[1].exact.value = b"\x01\x00\x00"
    elif choice == 2:  # empty
        fields[2].exact.value = b""
    elif choice == 3:  # fields in another order: valid
        del entry.match[:]
        entry.match.extend(reversed(fields))
    elif choice == 4:  # a field missing
        del entry.match[1]
    elif choice == 5:  # a field twice
        entry.match.add().CopyFrom(fields[0])
    elif choice == 6:  # unknown field id
        fields[0].field_id = 99
    elif choice == 7:  # lpm for an exact field
        value = fields[0].exact.value
        fields[0].lpm.value, fields[0].lpm.prefix_len = value, 9
    elif choice == 8:
        entry.priority = 3
    elif choice == 9:  # an action of another table
        entry.action.action.action_id = index.action_id(names.SET_CARD)
    elif choice == 10 and entry.action.action.params:  # a parameter too wide
        entry.action.action.params[0].value = b"\x7f\xff"
    elif choice == 11 and entry.action.action.params:  # a parameter missing
        del entry.action.action.params[1]
    elif choice == 12:  # no action at all
        entry.ClearField("action")
    elif choice == 13:
        entry.meter_config.cir = 1
    else:
        message.type = p4runtime_pb2.Update.UNSPECIFIED


def test_every_update_gets_the_generic_paths_answer_and_the_tables_stay_the_same(card_program) -> None:
    fast, generic = pair(card_program)
    rng = random.Random(15)
    undos = []
    fast_calls = 0
    decode = fast._decode_match

    def counted(*args):
        nonlocal fast_calls
        fast_calls += 1
        return decode(*args)

    fast._decode_match = counted
    for step in range(1500):
        message = route_update(fast.index, rng.choice((INSERT, INSERT, MODIFY, DELETE)), rng)
        got, want = answer(fast, message), answer(generic, message)
        assert got[:2] == want[:2], f"update {step}: {message}"
        if got[2] is not None:
            undos.append((got[2], want[2]))
        if step % 100 == 0:
            assert state(fast) == state(generic)
    assert state(fast) == state(generic)
    assert 0 < fast_calls < 1500 * 0.75  # the bent ones went the generic way, the canonical ones did not
    for undo_fast, undo_generic in reversed(undos):
        undo_fast()
        undo_generic()
    assert state(fast) == state(generic)
    assert state(fast)[1] == {}  # everything undone: the route table is empty again


def test_a_full_exact_table_answers_resource_exhausted_after_the_key_checks(card_program) -> None:
    fast, generic = pair(card_program)
    rng = random.Random(7)
    for entities in (fast, generic):
        entities.index.table_named(names.ROUTE).size = 4
    messages = [route_update(fast.index, INSERT, rng, pes=40) for _ in range(60)]
    messages = [m for m in messages if not m.entity.table_entry.priority]
    answers = [(answer(fast, m)[:2], answer(generic, m)[:2]) for m in messages]
    assert all(got == want for got, want in answers)
    assert (code_pb2.RESOURCE_EXHAUSTED, f"{names.ROUTE} is full (4 entries)") in [got for got, _ in answers]
    assert len(fast.keys[fast.index.table_id(names.ROUTE)]) == 4
    assert state(fast) == state(generic)


def test_entries_with_the_same_action_share_its_binding_and_keep_their_own_counts(card_program) -> None:
    fast, _ = pair(card_program)
    rng = random.Random(3)
    for _ in range(200):
        answer(fast, route_update(fast.index, INSERT, rng, pes=100, bent=0))
    entries = list(fast.pipeline.tables[names.ROUTE].by_key.values())
    distinct = {(entry.action_name, entry.args) for entry in entries}
    assert len({id(entry.call) for entry in entries}) == len(distinct) < len(entries)
    assert len({id(entry.counts) for entry in entries}) == len(entries)
