"""Loops over a block's (destination, card) cells (controller/_kernels.c), with the dtypes they read
checked here: the builder's reachability and the analysis's follow.

Each loop is one pass over a block's cells in C, where numpy needed several (rounds of reachability,
pointer doubling, a sort by level, gathers and ``np.add.at``); the additions happen in the order
controller/analysis/follow.py documents, so the loads are bit for bit those of an in-order running
sum. scripts/setup.sh builds the extension (``pip install -e .``); tests/unit/test_analysis_kernels.py
holds each loop against a plain Python one.
"""

from __future__ import annotations

import numpy as np

try:
    from controller import _kernels
except ImportError as error:  # a source tree that was never installed
    raise ImportError(
        "twinnet's compiled loops (controller/_kernels.c) are not built: "
        "run `sudo bash scripts/setup.sh` (or `pip install -e .` in the project's .venv)"
    ) from error


def _as(array: np.ndarray, dtype: type) -> np.ndarray:
    """`array` flat and C-contiguous in `dtype` (no copy when it already is)."""
    return np.ascontiguousarray(array, dtype=dtype).reshape(-1)


def _in_place(name: str, array: np.ndarray, dtype: type) -> np.ndarray:
    """`array` itself, flat, if it is C-contiguous in `dtype`: a loop that writes to it needs that."""
    if array.dtype != dtype or not array.flags.c_contiguous:
        raise TypeError(f"{name} is written in place: it must be a C-contiguous {np.dtype(dtype)} array")
    return array.reshape(-1)


def reach(flags: np.ndarray, arrive: np.ndarray, card_of_link: np.ndarray) -> None:
    """Mark (in place) every cell of the (rows, cards) grid `flags` that packets get to from the cells
    marked: a cell's packets go on to the cell, in its row, of the card ``card_of_link[arrive]`` (the
    card at the far end of its egress link; `arrive` -1: delivered)."""
    _kernels.reach(
        _in_place("flags", flags, np.bool_),
        _as(arrive, np.int32),
        _as(card_of_link, np.int32),
        flags.shape[-1],
    )


def rest_links(value: np.ndarray, parent: np.ndarray, moving: np.ndarray) -> tuple[np.ndarray, int]:
    """Per cell, its own links `value` plus its parent's total when it `moving` (its links to delivery,
    packed as the values are); and -1, or a cell on a loop of parent pointers."""
    rest = np.empty(value.size, dtype=np.int32)
    loop = _kernels.rest_links(_as(value, np.int32), _as(parent, np.int32), _as(moving, np.bool_), rest)
    return rest, loop


def card_loads(
    load: np.ndarray,
    parent: np.ndarray,
    moving: np.ndarray,
    rest: np.ndarray,
    arrive: np.ndarray,
    port_of_link: np.ndarray,
) -> None:
    """Add every moving cell's `load` (in place) to its `parent`'s, deepest first (by `rest`, rest_links's
    packed links) and within a depth by the port it arrives on (``port_of_link[arrive]``, `arrive` the
    link id it arrives on): a card's children are added to it complete and in port order. The arrays
    are (rows, cards) grids, and a cell's parent is in its row."""
    _kernels.card_loads(
        _in_place("load", load, np.float64),
        _as(parent, np.int32),
        _as(moving, np.bool_),
        _as(rest, np.int32),
        _as(arrive, np.int32),
        _as(port_of_link, np.int32),
        load.shape[-1],
    )


def fold_loads(
    present: np.ndarray,
    load: np.ndarray,
    weights: np.ndarray,
    source_at: np.ndarray,
    link: np.ndarray,
    queue: np.ndarray,
    link_load: np.ndarray,
    channel_load: np.ndarray,
    classes: int,
    queue_stride: int,
) -> None:
    """Add each entry's load to its card's `link` and channel (``link * queue_stride + queue``), in
    place and one by one in table order. The entries are the `present` (row, card, ingress port) cells
    of the (rows, cards) grid `load`; an entry's load is the `load` of the cell it comes from, or for a
    first hop its PE's weight towards the row's destination (`weights`: PEs x destinations), as
    ``source_at`` (per card * width + port: a cell, or cards + the PE) says."""
    cards = load.shape[-1]
    _kernels.fold_loads(
        _as(present, np.bool_),
        _as(load, np.float64),
        _as(weights.T, np.float64),  # destinations x PEs: the PEs of a row's destination side by side
        _as(source_at, np.int32),
        _as(link, np.int32),
        _as(queue, np.int32),
        _in_place("link_load", link_load, np.float64),
        _in_place("channel_load", channel_load, np.float64),
        source_at.size // cards,
        cards,
        classes,
        queue_stride,
    )


def dependencies(
    card_link: np.ndarray,
    parent: np.ndarray,
    link: np.ndarray,
    egress: np.ndarray,
    queue: np.ndarray,
    channel_flags: np.ndarray,
    edge_flags: np.ndarray,
    width: int,
    stride: int,
) -> None:
    """Flag (in place) the channels ``link * stride + queue`` of the cells that send between cards
    (`card_link`), and each one's dependency on the channel of the card it sends to (`parent`), if that
    card sends on: ``channel * (width * stride) + its egress * stride + its queue``."""
    _kernels.dependencies(
        _as(card_link, np.bool_),
        _as(parent, np.int32),
        _as(link, np.int32),
        _as(egress, np.int32),
        _as(queue, np.int32),
        _in_place("channel_flags", channel_flags, np.bool_),
        _in_place("edge_flags", edge_flags, np.bool_),
        width,
        stride,
    )
