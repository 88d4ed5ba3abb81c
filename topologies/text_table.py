"""Plain-text tables of the ``twinnet cost`` reports (fat-tree cost and BvN degrees): cells and columns."""

from __future__ import annotations


def fmt(value: float | int | None) -> str:
    """A count or cost for a table: thousands separated, fractions to 4 digits, None as "-"."""
    if value is None:
        return "-"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"
    return f"{int(value):,}"


def table(headers: list[str], rows: list[list[str]]) -> str:
    """Columns padded to their widest cell: the first left-aligned (names), the others right-aligned."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = (c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True))
        return "  ".join([first, *rest]).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(row) for row in rows)])
