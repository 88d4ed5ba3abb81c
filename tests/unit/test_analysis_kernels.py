"""The compiled loops of the builder and the analysis (controller/kernels.py) against plain Python
loops written from their descriptions, on random forests and grids: the same integers, the same
float bits (the order of the additions is part of what they promise), and clear errors on bad input."""

from __future__ import annotations

import numpy as np
import pytest

from controller import kernels

EXTERNAL, INTERNAL = 1 << 16, 1  # packed links, as follow.PACKED_LINKS


def random_forest(rng: np.random.Generator, rows: int, cards: int, width: int):
    """Per row, a tree of cards towards one root card, as the follow's grids hold one: each other card
    points to a parent card in its row, arriving there on a port no other child of that parent uses.
    Returns (parent, moving, arrive, value) as (rows, cards) arrays; arrive is parent * width + port."""
    parent = np.zeros((rows, cards), dtype=np.int32)
    moving = np.zeros((rows, cards), dtype=bool)
    arrive = np.full((rows, cards), -1, dtype=np.int32)
    value = np.zeros((rows, cards), dtype=np.int32)
    for row in range(rows):
        order = rng.permutation(cards)  # the root first, then each card below one placed before it
        free_ports = {int(order[0]): list(rng.permutation(width))}
        for at in range(1, cards):
            card = int(order[at])
            candidates = [c for c in order[:at] if free_ports[int(c)]]
            up = int(rng.choice(candidates))
            port = free_ports[up].pop()
            parent[row, card] = row * cards + up
            moving[row, card] = True
            arrive[row, card] = up * width + port
            value[row, card] = EXTERNAL if rng.random() < 0.7 else INTERNAL
            free_ports[card] = list(rng.permutation(width))
    return parent, moving, arrive, value


@pytest.mark.parametrize("seed", range(4))
def test_reach_marks_what_the_marked_cells_lead_to(seed: int) -> None:
    """Any decisions (loops among unmarked cells included): the closure of the marked cells under
    "goes on to the card at the far end of its egress link", found round by round as a reference."""
    rng = np.random.default_rng(seed)
    rows, cards, width = 3, 50, 4
    card_of_link = np.repeat(np.arange(cards, dtype=np.int32), width)
    arrive = rng.integers(0, cards * width, (rows, cards)).astype(np.int32)
    arrive[rng.random((rows, cards)) < 0.03] = -1  # delivered
    flags = rng.random((rows, cards)) < 0.05
    first, expected = flags.copy(), flags.copy()
    frontier = list(zip(*np.nonzero(flags), strict=True))
    while frontier:
        row, card = frontier.pop()
        if arrive[row, card] >= 0:
            after = (row, int(card_of_link[arrive[row, card]]))
            if not expected[after]:
                expected[after] = True
                frontier.append(after)
    kernels.reach(flags, arrive, card_of_link)
    assert np.array_equal(flags, expected) and expected.sum() > 2 * first.sum()


def test_reach_refuses_a_link_outside_the_network() -> None:
    card_of_link = np.repeat(np.arange(2, dtype=np.int32), 2)
    with pytest.raises(IndexError, match="arrival link"):
        kernels.reach(np.ones((1, 2), dtype=bool), np.array([[4, -1]], dtype=np.int32), card_of_link)


def rest_reference(value: np.ndarray, parent: np.ndarray, moving: np.ndarray) -> np.ndarray:
    value, parent, moving = value.ravel(), parent.ravel(), moving.ravel()
    rest = np.empty(value.size, dtype=np.int32)
    for cell in range(value.size):
        total, at = 0, cell
        while True:
            total += int(value[at])
            if not moving[at]:
                break
            at = int(parent[at])
        rest[cell] = total
    return rest


@pytest.mark.parametrize("seed", range(4))
def test_rest_links_sums_the_links_up_to_the_root(seed: int) -> None:
    rng = np.random.default_rng(seed)
    parent, moving, _, value = random_forest(rng, rows=3, cards=40, width=6)
    value[~moving] = rng.integers(0, 3, int((~moving).sum()))  # a root's own link counts too
    rest, loop = kernels.rest_links(value, parent, moving)
    assert loop == -1
    assert np.array_equal(rest, rest_reference(value, parent, moving))


def test_rest_links_names_a_cell_on_a_loop() -> None:
    rng = np.random.default_rng(7)
    parent, moving, _, value = random_forest(rng, rows=1, cards=12, width=4)
    root = int(np.flatnonzero(~moving.ravel())[0])
    child = int(np.flatnonzero(parent.ravel() == root)[0])
    moving.ravel()[root], parent.ravel()[root] = True, child  # root -> child -> root
    _, loop = kernels.rest_links(value, parent, moving)
    assert loop in (root, child)


def test_rest_links_refuses_a_parent_outside_the_grid() -> None:
    value = np.ones(4, dtype=np.int32)
    moving = np.array([True, False, False, False])
    with pytest.raises(IndexError, match="parent out of range: 9"):
        kernels.rest_links(value, np.array([9, 0, 0, 0], dtype=np.int32), moving)
    with pytest.raises(ValueError, match="parent"):
        kernels.rest_links(value, np.zeros(3, dtype=np.int32), moving)


def loads_reference(
    heads: np.ndarray, parent: np.ndarray, moving: np.ndarray, arrive: np.ndarray, width: int
) -> np.ndarray:
    """A card's load: its own first hops (heads), then each child's whole load, children in the order
    of the ports they arrive on, one addition after the other."""
    heads, parent, moving, arrive = heads.ravel(), parent.ravel(), moving.ravel(), arrive.ravel()
    children: dict[int, list[tuple[int, int]]] = {}
    for cell in np.flatnonzero(moving):
        children.setdefault(int(parent[cell]), []).append((int(arrive[cell]) % width, int(cell)))

    def load(cell: int) -> float:
        total = float(heads[cell])
        for _, child in sorted(children.get(cell, [])):
            total += load(child)
        return total

    return np.array([load(cell) for cell in range(heads.size)])


@pytest.mark.parametrize("seed", range(4))
def test_card_loads_adds_complete_children_in_port_order(seed: int) -> None:
    rng = np.random.default_rng(seed)
    rows, cards, width = 3, 60, 5
    parent, moving, arrive, value = random_forest(rng, rows, cards, width)
    rest, _ = kernels.rest_links(value, parent, moving)
    port_of_link = (np.arange(cards * width) % width).astype(np.int32)
    heads = rng.random((rows, cards)) * 10.0 ** rng.integers(-8, 8, (rows, cards))  # order shows in bits
    load = heads.copy()
    kernels.card_loads(load, parent, moving, rest.reshape(rows, cards), arrive, port_of_link)
    expected = loads_reference(heads, parent, moving, arrive, width)
    assert np.array_equal(load.ravel(), expected)
    # the order matters on these numbers: children in reverse port order give other bits somewhere
    reverse = loads_reference(heads, parent, moving, np.where(moving, width - 1 - arrive % width, -1), width)
    assert not np.array_equal(reverse, expected)


def test_card_loads_refuses_a_parent_in_another_row_and_wrong_arrays() -> None:
    rng = np.random.default_rng(3)
    parent, moving, arrive, value = random_forest(rng, rows=2, cards=5, width=4)
    rest, _ = kernels.rest_links(value, parent, moving)
    port_of_link = (np.arange(20) % 4).astype(np.int32)
    cell = int(np.flatnonzero(moving.ravel())[0])
    parent.ravel()[cell] = (parent.ravel()[cell] + 5) % 10  # the same card in the other row
    with pytest.raises(IndexError, match="parent of a moving cell"):
        kernels.card_loads(np.zeros((2, 5)), parent, moving, rest, arrive, port_of_link)
    with pytest.raises(TypeError, match="float64"):
        kernels.card_loads(np.zeros((2, 5), dtype=np.float32), parent, moving, rest, arrive, port_of_link)


def fold_reference(present, load, weights, source_at, link, queue, link_load, channel_load, classes, stride):
    rows, cards = load.shape
    width = source_at.size // cards
    for row in range(rows):
        for card in range(cards):
            for port in range(width):
                if not present[(row * cards + card) * width + port]:
                    continue
                source = int(source_at[card * width + port])
                value = load[row, source] if source < cards else weights[source - cards, row // classes]
                link_load[link[row, card]] += value
                channel_load[link[row, card] * stride + queue[row, card]] += value


@pytest.mark.parametrize(("classes", "width"), [(1, 4), (2, 4), (1, 19), (2, 24)])
def test_fold_loads_adds_every_entry_in_table_order(classes: int, width: int) -> None:
    """Narrow cards, and wide ones (eight ports at a time are skipped when none has an entry)."""
    rng = np.random.default_rng(classes * width)
    count, cards, pes, stride = 3, 7, 5, 2
    rows = count * classes
    present = rng.random(rows * cards * width) < (0.4 if width < 8 else 0.06)
    load = rng.random((rows, cards)) * 10.0 ** rng.integers(-6, 6, (rows, cards))
    weights = rng.random((pes, count))  # PEs x destinations, as Traffic.pair_weights gives them
    source_at = rng.integers(0, cards + pes, cards * width).astype(np.int32)
    link = (np.arange(cards)[None, :] * width + rng.integers(0, width, (rows, cards))).astype(np.int32)
    queue = rng.integers(0, stride, (rows, cards)).astype(np.int8)
    start = rng.random(cards * width)
    link_load, channel_load = start.copy(), np.repeat(start, stride)
    kernels.fold_loads(
        present, load, weights, source_at, link, queue, link_load, channel_load, classes, stride
    )
    expected_link, expected_channel = start.copy(), np.repeat(start, stride)
    fold_reference(
        present, load, weights, source_at, link, queue, expected_link, expected_channel, classes, stride
    )
    assert np.array_equal(link_load, expected_link) and np.array_equal(channel_load, expected_channel)


def test_fold_loads_refuses_sources_and_links_outside_their_arrays() -> None:
    cards, width, pes = 2, 2, 1
    args = dict(
        present=np.ones(cards * width, dtype=bool),
        load=np.ones((1, cards)),
        weights=np.ones((pes, 1)),
        source_at=np.zeros(cards * width, dtype=np.int32),
        link=np.array([[0, 2]], dtype=np.int32),
        queue=np.zeros((1, cards), dtype=np.int32),
        link_load=np.zeros(cards * width),
        channel_load=np.zeros(cards * width),
        classes=1,
        queue_stride=1,
    )
    kernels.fold_loads(**args)
    with pytest.raises(IndexError, match="source_at"):
        kernels.fold_loads(**{**args, "source_at": np.array([0, 1, 3, 0], dtype=np.int32)})
    with pytest.raises(IndexError, match="link or channel"):
        kernels.fold_loads(**{**args, "link": np.array([[0, 4]], dtype=np.int32)})
    with pytest.raises(TypeError, match="link_load"):
        kernels.fold_loads(**{**args, "link_load": np.zeros(cards * width)[::-1]})


def test_dependencies_flags_each_channel_and_the_next_cards_channel() -> None:
    rng = np.random.default_rng(11)
    rows, cards, width, stride = 2, 30, 4, 2
    parent, moving, _, _ = random_forest(rng, rows, cards, width)
    card_link = moving & (rng.random((rows, cards)) < 0.8)
    link = (np.arange(cards)[None, :] * width + rng.integers(0, width, (rows, cards))).astype(np.int32)
    egress = (link % width).astype(np.int16)
    queue = rng.integers(0, stride, (rows, cards)).astype(np.int8)
    channels = np.zeros(cards * width * stride, dtype=bool)
    edges = np.zeros(channels.size * width * stride, dtype=bool)
    kernels.dependencies(card_link, parent, link, egress, queue, channels, edges, width, stride)
    want_channels, want_edges = set(), set()
    flat = [a.ravel() for a in (card_link, parent, link, egress, queue)]
    for cell in np.flatnonzero(flat[0]):
        channel = int(flat[2][cell]) * stride + int(flat[4][cell])
        want_channels.add(channel)
        after = int(flat[1][cell])
        if flat[0][after]:
            want_edges.add(channel * width * stride + int(flat[3][after]) * stride + int(flat[4][after]))
    assert set(np.flatnonzero(channels).tolist()) == want_channels
    assert set(np.flatnonzero(edges).tolist()) == want_edges and want_edges
