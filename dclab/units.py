"""Sizes as people write them ("100MB", "1GB", "5000000")."""

from __future__ import annotations

import re

SIZE_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "kib": 2**10, "mib": 2**20, "gib": 2**30}
MAX_SIZE = 100 * 10**9


def parse_size(text: str | int, option: str = "--size") -> int:
    """Bytes from "100MB", "1GB", "64KiB" or a plain number; ValueError names ``option``."""
    if isinstance(text, int):
        n = text
    else:
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
        if not m or m.group(2).lower() not in SIZE_UNITS:
            raise ValueError(f"{option}: expected a size like 100MB, 1GB or 5000000 (got {text!r})")
        n = int(float(m.group(1)) * SIZE_UNITS[m.group(2).lower()])
    if not 1 <= n <= MAX_SIZE:
        raise ValueError(f"{option}: must be between 1 B and 100 GB (got {text!r})")
    return n
