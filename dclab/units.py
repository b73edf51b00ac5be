"""Sizes as people write them ("100MB", "1GB", "5000000")."""

from __future__ import annotations

import re

from .files import clip

SIZE_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "kib": 2**10, "mib": 2**20, "gib": 2**30}
MAX_SIZE = 100 * 10**9


def parse_size(text: str | int, option: str = "--size") -> int:
    """Bytes from "100MB", "1GB", "64KiB" or a plain number; ValueError names ``option``."""
    if isinstance(text, int):
        n = text
    else:
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
        if not m or m.group(2).lower() not in SIZE_UNITS:
            raise ValueError(f"{option}: expected a size like 100MB, 1GB or 5000000 (got {clip(text)})")
        n = int(float(m.group(1)) * SIZE_UNITS[m.group(2).lower()])
    if not 1 <= n <= MAX_SIZE:
        raise ValueError(f"{option}: must be between 1 B and 100 GB (got {clip(text)})")
    return n


def parse_sizes(value: object, option: str = "sizes", most: int = 10, least: int = 1000) -> tuple[int, ...]:
    """Sizes separated by commas ("64kB,1MB") or a list of sizes: 1 to ``most`` of them,
    each at least ``least`` bytes. ValueError names ``option`` and the allowed range."""
    items = [str(x) for x in value] if isinstance(value, (list, tuple)) else [x.strip() for x in str(value).split(",")]
    if not items or any(not x for x in items):
        raise ValueError(f"{option}: expected sizes separated by ',' (e.g. 500KB,2400KB,6000KB)")
    out = tuple(parse_size(x, option) for x in items)
    if len(out) > most or any(s < least for s in out):
        floor = f"{least // 1000}KB" if least % 1000 == 0 else f"{least} B"
        raise ValueError(f"{option}: 1 to {most} sizes, each at least {floor}")
    return out
