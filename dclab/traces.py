"""Bandwidth traces as the harness sees them: only their mean rate (for time estimates);
dcemu reads the traces themselves."""

from __future__ import annotations

import csv
from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=32)
def trace_mean_mbps(path: Path, column: str = "DL_bitrate") -> float:
    """Mean Mbit/s of a CSV trace (kbit/s per row) or a mahimahi trace (1500-byte
    delivery opportunities, ms timestamps)."""
    path = Path(path)
    if path.suffix == ".csv":
        with open(path, newline="") as f:
            vals = [float(r[column]) for r in csv.DictReader(f) if r.get(column, "").strip()]
        return sum(vals) / len(vals) / 1e3 if vals else 0.0
    stamps = [int(x) for x in path.read_text().split()]
    period_s = max(stamps[-1], 1) / 1e3 if stamps else 1.0
    return len(stamps) * 1500 * 8 / period_s / 1e6
