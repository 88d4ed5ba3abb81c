"""Spreading cards over shared switch processes: blocks of consecutive cards, sizes within one."""

from __future__ import annotations

import itertools

import pytest

from emulation import switch_groups
from emulation.switch_groups import GroupError, check_process_count, spread


@pytest.mark.parametrize("cards, processes", [(1, 1), (5, 2), (16, 2), (128, 3), (250, 7), (3, 8)])
def test_blocks_cover_every_card_once_in_order_with_sizes_within_one(cards: int, processes: int) -> None:
    ids = [10 * i + 1 for i in range(cards)]  # any ids, kept in the order given
    blocks = spread(ids, processes)
    assert list(itertools.chain.from_iterable(blocks)) == ids
    assert len(blocks) == min(cards, processes)
    sizes = [len(block) for block in blocks]
    assert max(sizes) - min(sizes) <= 1 and min(sizes) >= 1


def test_a_twin_pair_shares_its_process_when_blocks_are_even() -> None:
    for block in spread(list(range(128)), 2):
        assert all(card ^ 1 in block for card in block)


def test_the_process_count_defaults_to_the_cores_and_never_exceeds_the_cards(monkeypatch) -> None:
    monkeypatch.setattr(switch_groups, "default_process_count", lambda: 2)
    assert check_process_count(None, 128) == 2
    assert check_process_count(None, 1) == 1
    assert check_process_count(8, 3) == 3
    many = 5 * switch_groups.MAX_CARDS_PER_PROCESS  # the default grows so that no process gets too many
    assert check_process_count(None, many) == 5


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "2"])
def test_a_bad_process_count_is_refused_by_name(bad) -> None:
    with pytest.raises(GroupError, match="--switch-processes must be a positive integer"):
        check_process_count(bad, 16)


def test_too_many_cards_for_the_processes_is_refused() -> None:
    too_many = switch_groups.MAX_CARDS_PER_PROCESS * 2 + 1
    with pytest.raises(GroupError, match="give more --switch-processes"):
        check_process_count(2, too_many)
