"""The fast path of all-exact tables' writes (PipelineEntities.write_canonical, through `write`, and
with the updates read from a request's bytes by wire.exact_updates) against the generic path.

The reference is the same entities with the fast path turned off: every update, valid or
not, must get the same answer (code and message), and the tables must end up the same
(read back over P4Runtime and as the data plane looks them up); the undo steps as well.
"""

from __future__ import annotations

import random

import pytest
from google.protobuf.message import DecodeError
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from controller.translate import varint
from p4src import CARD_PROGRAM
from p4src import card as names
from p4switch.p4runtime.entities import PipelineEntities
from p4switch.p4runtime.info import P4InfoIndex, P4RuntimeError
from p4switch.p4runtime.server import Updates
from p4switch.p4runtime.wire import CanonicalUpdate, TableShapes, exact_updates

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


# ----- the same updates read from the request's bytes (server.Updates, wire.exact_updates) -------------
def test_updates_read_from_the_request_bytes_get_the_generic_paths_answers(card_program) -> None:
    fast, generic = pair(card_program)
    rng = random.Random(21)
    through_protobuf = 0
    write = fast.write

    def counted(message):
        nonlocal through_protobuf
        through_protobuf += 1
        return write(message)

    fast.write = counted
    undos, total = [], 0
    for batch in range(50):
        messages = [
            route_update(fast.index, rng.choice((INSERT, INSERT, MODIFY, DELETE)), rng) for _ in range(30)
        ]
        request = p4runtime_pb2.WriteRequest(device_id=1, updates=messages, atomicity=batch % 3)
        request.election_id.low = 7
        updates = Updates(request, request.SerializeToString(), fast)
        assert updates.canonical is not None and len(updates) == len(messages)
        for position, message in enumerate(messages):
            try:
                got = (code_pb2.OK, "", updates.write(fast, position))
            except P4RuntimeError as error:
                got = (error.code, error.message, None)
            want = answer(generic, message)
            assert got[:2] == want[:2], f"batch {batch}, update {position}: {message}"
            if got[2] is not None:
                undos.append((got[2], want[2]))
        total += len(messages)
        assert state(fast) == state(generic)
    assert 0.25 * total < through_protobuf < 0.75 * total  # the bent ones only
    for undo_fast, undo_generic in reversed(undos):
        undo_fast()
        undo_generic()
    assert state(fast) == state(generic)
    assert state(fast)[1] == {}


def test_updates_read_for_one_pipeline_are_not_applied_to_another(card_program) -> None:
    first, second = (
        pair(card_program)[0],
        PipelineEntities(card_program.new_pipeline(), P4InfoIndex(card_program.p4info)),
    )
    rng = random.Random(5)
    message = route_update(first.index, INSERT, rng, bent=0)
    request = p4runtime_pb2.WriteRequest(updates=[message])
    updates = Updates(request, request.SerializeToString(), first)
    taken = []
    second.write_canonical = lambda update: taken.append(update)  # second's own reading may come here
    updates.write(second, 0)
    assert not any(update is updates.canonical[0] for update in taken)  # first's reading never does
    assert state(second) == answer_state(card_program, [message])


def answer_state(program, messages: list[p4runtime_pb2.Update]) -> tuple:
    """The tables after writing `messages` through the generic path on a fresh pipeline."""
    _, generic = pair(program)
    for message in messages:
        answer(generic, message)
    return state(generic)


#: byte values that keep more mangled requests parseable: small lengths, tags of fields 1-4, a
#: continued varint
TELLING_BYTES = (0x00, 0x01, 0x02, 0x03, 0x08, 0x0A, 0x10, 0x12, 0x18, 0x1A, 0x20, 0x22, 0x80, 0xFF)


def mutated(data: bytes, rng: random.Random) -> bytes:
    """`data` with one byte changed, inserted or removed, or a slice of it repeated."""
    at = rng.randrange(len(data))
    byte = bytes([rng.choice(TELLING_BYTES) if rng.random() < 0.7 else rng.randrange(256)])
    choice = rng.randrange(4)
    if choice == 0:
        return data[:at] + byte + data[at + 1 :]
    if choice == 1:
        return data[:at] + byte + data[at:]
    if choice == 2:
        return data[:at] + data[at + 1 :]
    end = min(len(data), at + rng.randrange(1, 12))
    return data[:end] + data[at:end] + data[end:]


def wire_fields(data: bytes) -> list[tuple[int, int, bytes]]:
    """(number, wire type, payload) of each field of a serialised message: a plain reading of the
    wire format (varints, length-delimited and fixed fields), which the mangling below rewrites."""
    found, at = [], 0

    def varint() -> int:
        nonlocal at
        value = shift = 0
        while True:
            byte = data[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value

    while at < len(data):
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            start = at
            varint()
            found.append((number, wire, data[start:at]))
        elif wire == 2:
            length = varint()
            found.append((number, wire, data[at : at + length]))
            at += length
        else:
            size = 8 if wire == 1 else 4
            found.append((number, wire, data[at : at + size]))
            at += size
    return found


def wire_join(fields: list[tuple[int, int, bytes]]) -> bytes:
    """The bytes of `fields` (wire_fields' form) as one message."""
    out = b""
    for number, wire, payload in fields:
        out += varint(number << 3 | wire) + (varint(len(payload)) if wire == 2 else b"") + payload
    return out


def mangled(data: bytes, rng: random.Random, depth: int = 0) -> bytes:
    """`data` with one field, at some depth of the nested messages, repeated, dropped, moved last,
    or given as a varint: valid protobuf still, with the merging and last-one-wins rules in play."""
    fields = wire_fields(data)
    if not fields:
        return data
    at = rng.randrange(len(fields))
    number, wire, payload = fields[at]
    if wire == 2 and depth < 5 and rng.random() < 0.75:
        try:
            fields[at] = (number, wire, mangled(payload, rng, depth + 1))
            return wire_join(fields)
        except IndexError:  # a bytes field, not a message
            pass
    choice = rng.randrange(4)
    if choice == 0:
        fields.insert(rng.randrange(len(fields) + 1), fields[at])
    elif choice == 1:
        del fields[at]
    elif choice == 2:
        fields.append(fields.pop(at))
    else:
        fields[at] = (number, 0, varint(rng.randrange(4)))
    return wire_join(fields)


def protobuf_reading(update: p4runtime_pb2.Update, shapes: TableShapes) -> CanonicalUpdate | None:
    """What the protobuf path reads from `update` when it is a canonical all-exact write, else None."""
    if update.entity.WhichOneof("entity") != "table_entry" or update.type not in (INSERT, MODIFY, DELETE):
        return None
    entry = update.entity.table_entry
    shape = shapes.get(entry.table_id)
    if shape is None or entry.priority or entry.is_default_action or entry.HasField("meter_config"):
        return None
    if len(entry.match) != len(shape[0]):
        return None
    values = []
    for field_match, field_id, width in zip(entry.match, *shape, strict=True):
        data = field_match.exact.value
        if field_match.field_id != field_id or not data or int.from_bytes(data, "big") >> width:
            return None
        values.append(int.from_bytes(data, "big"))
    return update.type, entry.table_id, tuple(values), entry.action.SerializeToString()


def test_exact_updates_reads_what_protobuf_reads_from_mangled_requests(card_program) -> None:
    """Whatever bytes protobuf accepts, an update read from them is the update protobuf reads
    (same type, table, values and action), or it is left to protobuf (None)."""
    entities = PipelineEntities(card_program.new_pipeline(), P4InfoIndex(card_program.p4info))
    shapes = entities.exact_shapes()
    rng = random.Random(11)
    compared = left = 0
    for _ in range(10000):
        messages = [
            route_update(entities.index, rng.choice((INSERT, MODIFY, DELETE)), rng, bent=0.3)
            for _ in range(4)
        ]
        request = p4runtime_pb2.WriteRequest(device_id=rng.randrange(3), updates=messages, role="r")
        data = request.SerializeToString()
        data = mutated(data, rng) if rng.random() < 0.5 else mangled(data, rng)
        try:
            parsed = p4runtime_pb2.WriteRequest.FromString(data)
        except DecodeError:
            continue
        items = exact_updates(data, shapes)
        if items is None:
            left += len(parsed.updates)
            continue
        assert len(items) == len(parsed.updates)
        for item, update in zip(items, parsed.updates, strict=True):
            if item is None:
                left += 1
                continue
            want = protobuf_reading(update, shapes)
            assert want is not None, f"{data.hex()}: read as canonical, protobuf reads {update}"
            assert item[:3] == want[:3]
            assert p4runtime_pb2.TableAction.FromString(item[3]) == update.entity.table_entry.action
            compared += 1
    assert compared > 2000 and left > 1000  # both kinds were met


def test_exact_updates_takes_every_canonical_update_and_no_other(card_program) -> None:
    entities = PipelineEntities(card_program.new_pipeline(), P4InfoIndex(card_program.p4info))
    shapes = entities.exact_shapes()
    rng = random.Random(4)
    messages = [route_update(entities.index, rng.choice((INSERT, MODIFY, DELETE)), rng) for _ in range(2000)]
    items = exact_updates(p4runtime_pb2.WriteRequest(updates=messages).SerializeToString(), shapes)
    wanted = [protobuf_reading(message, shapes) for message in messages]
    # protobuf's canonical reading also takes padded values, which the bytes keep as they are
    assert [item[:3] if item else None for item in items] == [want[:3] if want else None for want in wanted]
    assert 500 < sum(item is not None for item in items) < 1800
    assert exact_updates(b"\x0a", shapes) is None  # cut in a field's length: not walked at all
