"""Bandwidth traces as the harness sees them: their mean rate (for time estimates) and the
rows of a CSV trace (for cutting it, ``trace_levels.py``); dcemu reads the traces themselves."""

from __future__ import annotations

import csv
import io
from functools import lru_cache
from pathlib import Path

from .files import read_input


def read_csv(path: Path) -> tuple[list[str], list[list[str]]]:
    """The header and data rows of a UCC-style CSV trace as dcemu reads it
    (emu/src/config/trace_file.rs): blank lines skipped, a leading BOM dropped, fields
    stripped. An empty file has an empty header. FileRefused (files.py) if it is not a
    regular UTF-8 file below the input limit."""
    text = read_input(path, "trace").removeprefix("\ufeff")
    rows = [[x.strip() for x in r] for r in csv.reader(io.StringIO(text, newline="")) if any(x.strip() for x in r)]
    return (rows[0], rows[1:]) if rows else ([], [])


@lru_cache(maxsize=32)
def trace_mean_mbps(path: Path, column: str = "DL_bitrate") -> float:
    """Mean Mbit/s of a CSV trace (kbit/s per row) or a mahimahi trace (1500-byte
    delivery opportunities, ms timestamps)."""
    path = Path(path)
    if path.suffix == ".csv":
        header, rows = read_csv(path)
        i = header.index(column) if column in header else None
        vals = [float(r[i]) for r in rows if i is not None and i < len(r) and r[i]]
        return sum(vals) / len(vals) / 1e3 if vals else 0.0
    stamps = [int(x) for x in read_input(path, "trace").split()]
    period_s = max(stamps[-1], 1) / 1e3 if stamps else 1.0
    return len(stamps) * 1500 * 8 / period_s / 1e6
