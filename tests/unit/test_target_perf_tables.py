"""Incrementally maintained table lookup structures agree with a brute-force reference.

Tables keep their lookup structures up to date entry by entry (dict per exact key,
dict per lpm prefix length, a priority-ordered list for ternary/range/optional keys).
These tests insert, modify and delete thousands of entries in random order and check
every lookup against a reference that scans all installed entries with the P4 match
rules, so a stale or misordered index cannot go unnoticed.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest

from p4src import CARD_PROGRAM
from p4switch import EntryError, compile_program
from p4switch.runtime.tables import Table

PROGS = Path(__file__).resolve().parents[1] / "p4progs"
CARD = CARD_PROGRAM


def big_table(pipeline, name: str, size: int = 100_000) -> Table:
    """A fresh copy of one of the pipeline's tables, with room for `size` entries."""
    table = pipeline.tables[name]
    return Table(dataclasses.replace(table.spec, size=size), table.actions, table.functions)


def reference_lookup(table: Table, installed: list[tuple[dict, int, tuple]], key: tuple):
    """The winning (match, priority, params) for key among installed entries (insertion order), or None.

    P4 rules: every field must match; lpm tables take the longest prefix; tables with
    priorities take the highest priority, the earliest installed among equals.
    """
    best, best_rank = None, None
    for order, (match, priority, params) in enumerate(installed):
        prefix = 0
        for spec, value in zip(table.spec.keys, key, strict=True):
            given = match.get(spec.name)
            full = (1 << spec.width) - 1
            if spec.match_kind == "exact":
                ok = value == given
            elif spec.match_kind == "lpm":
                field, length = given if given is not None else (0, 0)
                field_mask = full ^ ((1 << (spec.width - length)) - 1)
                ok = value & field_mask == field
                prefix += length
            elif spec.match_kind == "ternary":
                field, field_mask = given if given is not None else (0, 0)
                ok = value & field_mask == field
            elif spec.match_kind == "range":
                low, high = given if given is not None else (0, full)
                ok = low <= value <= high
            else:  # optional
                ok = given is None or value == given
            if not ok:
                break
        else:
            rank = (prefix,) if table.lpm_only else (priority, -order)
            if best_rank is None or rank > best_rank:
                best, best_rank = (match, priority, params), rank
    return best


def check_lookups(table: Table, installed: list, keys: list[tuple]) -> None:
    """Every key finds the entry the reference finds (or the default)."""
    for key in keys:
        expected = reference_lookup(table, installed, key)
        found = table.lookup(key)
        if expected is None:
            assert found is table.default, key
        else:
            assert found.hit and found.args == expected[2] and found.match == expected[0], key


def test_exact_table_thousands_of_entries():
    """The card's route table (exact keys): insert, modify and delete in random order."""
    pipeline = compile_program(CARD).new_pipeline()
    table = big_table(pipeline, "MyIngress.route")
    assert table.all_exact
    rng = random.Random(1)
    installed: dict[tuple, tuple] = {}
    names = ("standard_metadata.ingress_port", "hdr.tw.dst_pe", "hdr.tw.rclass")
    for _ in range(6000):
        key = (rng.randrange(16), rng.randrange(400), rng.randrange(2))
        match = dict(zip(names, key, strict=True))
        params = (rng.randrange(1, 64), rng.randrange(8))
        operation = rng.random()
        if key not in installed:
            table.insert(match, "MyIngress.set_route", params)
            installed[key] = params
        elif operation < 0.3:
            table.delete(match)
            del installed[key]
        else:
            table.modify(match, "MyIngress.set_route", params)
            installed[key] = params
    assert len(installed) > 2000
    assert len(table.by_key) == len(table.entries) == len(installed)
    for _ in range(3000):
        key = (rng.randrange(17), rng.randrange(401), rng.randrange(2))
        entry = table.by_key.get(key) or table.default
        assert table.lookup(key) is entry
        if key in installed:
            assert entry.hit and entry.args == installed[key]
        else:
            assert entry is table.default


def test_lpm_table_thousands_of_entries():
    """The basic forwarder's lpm table: prefixes of all lengths come and go."""
    pipeline = compile_program(PROGS / "basic.p4").new_pipeline()
    table = big_table(pipeline, "MyIngress.ipv4_lpm")
    assert table.lpm_only
    rng = random.Random(2)
    installed: dict[tuple, tuple] = {}
    for _ in range(4000):
        length = rng.choice((0, 4, 8, 12, 16, 20, 24, 28, 32))
        address = rng.getrandbits(32) & (0xFFFFFFFF ^ ((1 << (32 - length)) - 1)) & 0xFFF0FFFF
        match = {"hdr.ipv4.dstAddr": (address, length)}
        params = (rng.getrandbits(48), rng.randrange(1, 500))
        identity = (address, length)
        if identity not in installed:
            table.insert(match, "MyIngress.ipv4_forward", params)
            installed[identity] = (match, 0, params)
        elif rng.random() < 0.5:
            table.delete(match)
            del installed[identity]
        else:
            table.modify(match, "MyIngress.ipv4_forward", params)
            installed[identity] = (match, 0, params)
    # empty a whole prefix length, so its bucket must disappear from the lookup order
    for identity in [i for i in installed if i[1] == 8]:
        table.delete(installed.pop(identity)[0])
    assert all(mask.bit_count() != 8 for mask, _ in table.by_mask)
    keys = [rng.getrandbits(32) & 0xFFF0FFFF for _ in range(200)]
    keys += [address | rng.getrandbits(4) for address, _ in list(installed)[:200]]
    check_lookups(table, list(installed.values()), [(k,) for k in keys])


def test_priority_table_keeps_order_through_changes():
    """The ACL's ternary/range/optional table: priority order, ties in insertion order."""
    pipeline = compile_program(PROGS / "acl.p4").new_pipeline()
    table = big_table(pipeline, "AclIngress.acl")
    assert not table.all_exact and not table.lpm_only
    rng = random.Random(3)
    installed: list[tuple[dict, int, tuple]] = []  # in insertion order, as the reference wants

    def random_match() -> dict:
        low = rng.randrange(0, 60000)
        match = {
            "hdr.ipv4.src_addr": rng.choice(((0, 0), (0x0A000000, 0xFF000000), (0x0A010000, 0xFFFF0000))),
            "hdr.ipv4.dst_addr": (rng.randrange(4) << 8, 0x300),
            "hdr.ipv4.protocol": rng.choice(((6, 0xFF), (17, 0xFF), (0, 0))),
            "hdr.l4.dport": (low, low + rng.randrange(0, 6000)),
        }
        if rng.random() < 0.5:
            match["dscp"] = rng.randrange(4)
        return match

    for _ in range(1500):
        operation = rng.random()
        if installed and operation < 0.25:
            match, priority, _ = installed.pop(rng.randrange(len(installed)))
            table.delete(match, priority)
        elif installed and operation < 0.4:
            index = rng.randrange(len(installed))
            match, priority, _ = installed.pop(index)
            action = rng.choice(("AclIngress.allow", "AclIngress.deny"))
            table.modify(match, action, (), priority)
            installed.append((match, priority, ()))  # a modified entry goes after its equals
        else:
            match, priority = random_match(), rng.randrange(1, 20)
            try:
                table.insert(match, rng.choice(("AclIngress.allow", "AclIngress.deny")), (), priority)
            except EntryError:
                continue  # the same match and priority again
            installed.append((match, priority, ()))
    assert len(table.ordered) == len(table.entries) == len(installed) > 500
    assert [e.priority for e in table.ordered] == sorted((e.priority for e in table.ordered), reverse=True)
    keys = [
        (
            rng.choice((0x0A000001, 0x0A010203, 0x0B000000)),
            rng.randrange(4) << 8,
            rng.choice((6, 17, 1)),
            rng.randrange(0, 66000) & 0xFFFF,
            rng.randrange(4),
        )
        for _ in range(400)
    ]
    for key in keys:
        expected = reference_lookup(table, installed, key)
        found = table.lookup(key)
        if expected is None:
            assert found is table.default
        else:
            assert found.hit and found.match == expected[0] and found.priority == expected[1], key


def test_failed_changes_leave_lookups_alone():
    """Duplicate inserts and missing deletes raise and change nothing the data plane sees."""
    pipeline = compile_program(PROGS / "basic.p4").new_pipeline()
    table = big_table(pipeline, "MyIngress.ipv4_lpm")
    table.insert({"hdr.ipv4.dstAddr": (0x0A000000, 8)}, "MyIngress.ipv4_forward", (1, 2))
    with pytest.raises(EntryError):
        table.insert({"hdr.ipv4.dstAddr": (0x0A000000, 8)}, "MyIngress.ipv4_forward", (3, 4))
    with pytest.raises(EntryError):
        table.delete({"hdr.ipv4.dstAddr": (0x0B000000, 8)})
    assert table.lookup((0x0A010101,)).args == (1, 2)
    assert len(table.by_mask) == 1


def test_entries_call_their_actions_without_needless_layers():
    """Parameterless actions are called directly, empty ones (NoAction) not at all; results unchanged."""
    pipeline = compile_program(CARD).new_pipeline()
    assert pipeline.tables["MyEgress.host_out"].default.call is id  # NoAction: nothing to run
    no_route = pipeline.tables["MyIngress.route"].default
    assert no_route.call is no_route.action  # drop_no_route(L) itself, no partial around it
    table = pipeline.tables["MyIngress.route"]
    table.insert(
        {"standard_metadata.ingress_port": 1, "hdr.tw.dst_pe": 7, "hdr.tw.rclass": 0},
        "MyIngress.set_route",
        (2, 3),
    )
    entry = table.by_key[(1, 7, 0)]
    assert entry.call.func is entry.action and entry.call.args == (2, 3)
