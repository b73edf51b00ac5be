"""Tables of repeated measurements as a reader compares them: a pivot of labelled rows and
keyed columns, each cell ``mean ± std (n)``. One copy for every table that sets values
side by side (``stacks.comparison_table``, a split-layer sweep's aggregations)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

R = TypeVar("R")
C = TypeVar("C")


@dataclass(frozen=True)
class NoValue:
    """A cell whose runs gave no value, and what it shows instead (``failed (0/3)``)."""

    text: str = "-"


def mean_std_text(mean: float, std: float | None, digits: int = 2, n: int | None = None,
                  total: int | None = None) -> str:
    """``mean ± std``, then ``(n)`` runs, or ``(n/total)`` when the runs attempted are
    shown too; a missing std (no spread known) is "-"."""
    spread = "-" if std is None else f"{std:.{digits}f}"
    runs = "" if n is None else f" ({n})" if total is None else f" ({n}/{total})"
    return f"{mean:.{digits}f} ± {spread}{runs}"


def pivot(rows: Sequence[R], columns: Sequence[C], text: Callable[[R, C], str | NoValue | None],
          label: Callable[[R], str] = str) -> tuple[list[list[str]], list[bool]]:
    """A line per row, its label first, then ``text(row, column)`` per column ("-" where it
    is None, a NoValue's text where the runs gave none); and per line whether no cell had a
    value (the report marks it failed)."""
    lines, empty = [], []
    for r in rows:
        cells = [NoValue() if (c := text(r, col)) is None else c for col in columns]
        lines.append([label(r), *(c.text if isinstance(c, NoValue) else c for c in cells)])
        empty.append(all(isinstance(c, NoValue) for c in cells))
    return lines, empty
