"""p4src/card.p4's control-plane interface: what the controller relies on, checked in the P4Info.

The P4Info comes from the embedded target's front end (the one p4c would
emit for the same program); these tests are skipped, with the reason, only
where the language core is absent.
"""

from __future__ import annotations

from typing import Any

import pytest

from emulation import packets
from emulation.card_vectors import CARD_PROGRAM, compile_card_or_reason


def compiled(defines: dict[str, str] | None = None) -> Any:
    """The card program on the embedded target, or a skip if there is no language core."""
    program, reason = compile_card_or_reason(CARD_PROGRAM, defines)
    if program is None:
        pytest.skip(reason)
    return program


@pytest.fixture(scope="module")
def p4info() -> Any:
    return compiled().p4info


def test_tables_keys_and_actions(p4info: Any) -> None:
    actions = {a.preamble.id: a for a in p4info.actions}
    tables = {t.preamble.name: t for t in p4info.tables}
    assert set(packets.CARD_TABLES) <= set(tables)
    for name, spec in packets.CARD_TABLES.items():
        table = tables[name]
        keys = [(m.name, m.bitwidth) for m in table.match_fields]
        assert keys == spec["keys"], name
        assert all(m.match_type == m.EXACT for m in table.match_fields), name
        got = {
            actions[ref.id].preamble.name: [(p.name, p.bitwidth) for p in actions[ref.id].params]
            for ref in table.action_refs
        }
        assert got == spec["actions"], name
        assert not table.const_default_action_id, f"{name}: the controller must be able to set its default"


def test_counters(p4info: Any) -> None:
    counters = {c.preamble.name: c for c in p4info.counters}
    for name, size in packets.CARD_COUNTERS.items():
        assert counters[name].size == size, name
        assert counters[name].spec.unit == counters[name].spec.BOTH, name


def test_compiles_with_another_trace_depth() -> None:
    assert compiled({"TW_MAX_TRACE": "8"}).source_hash != compiled().source_hash
