"""The canonical all-exact table writes of a serialised WriteRequest, read from its bytes in C
(p4switch/p4runtime/_wire.c).

An install writes millions of route entries; reading each Update through protobuf's Python objects
cost about half of the switch's time per entry. ``exact_updates`` walks the request's bytes once and
gives, per Update, the values ``PipelineEntities.write_canonical`` needs, or None for any Update of
another shape, which is then read through protobuf as before. scripts/setup.sh builds the extension
(``pip install -e .``); tests/unit/test_p4runtime_wire.py holds it against protobuf's own parse.
"""

from __future__ import annotations

try:
    from p4switch.p4runtime import _wire
except ImportError as error:  # a source tree that was never installed
    raise ImportError(
        "the switch's compiled request reader (p4switch/p4runtime/_wire.c) is not built: "
        "run `sudo bash scripts/setup.sh` (or `pip install -e .` in the project's .venv)"
    ) from error

#: (update type, table id, match values in P4Info order, the entry's serialised TableAction)
CanonicalUpdate = tuple[int, int, tuple[int, ...], bytes]
#: table id -> (its match fields' ids, their bit widths), in P4Info order
TableShapes = dict[int, tuple[tuple[int, ...], tuple[int, ...]]]


def exact_updates(request: bytes, shapes: TableShapes) -> list[CanonicalUpdate | None] | None:
    """One item per Update of the serialised WriteRequest `request`, in order: its
    (type, table id, values, action bytes) when it is an INSERT, MODIFY or DELETE of an entry of a
    table in `shapes` with exactly that table's fields, in order, each once, as an exact value that
    fits its width, maybe an action, and no other field; else None. None for the whole request when
    its bytes cannot be walked (the caller reads every Update through protobuf)."""
    return _wire.exact_updates(request, shapes)


def exact_update(update: bytes, shapes: TableShapes) -> CanonicalUpdate | None:
    """``exact_updates``' item for one serialised Update."""
    return _wire.exact_update(update, shapes)
