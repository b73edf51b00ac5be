"""Timings of short downloads (``downloads.TimedDownload``): per size and
mode the median and p95 of the completion time, handshake, first byte and transfer
(``phases``) and the fractions resumed and with 0-RTT accepted (``timing_table``); the
completion time against the size on a log axis and its breakdown into phases
(``download_times``). Every figure function writes a figure even when there is nothing
to show."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only; no display
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from pydantic import BaseModel, ConfigDict  # noqa: E402

from .completion import MARKERS, completion_times, size_label, sizes_of  # noqa: E402
from .downloads import TimedDownload  # noqa: E402
from .figures import COLORS, _save, empty_figure  # noqa: E402
from .metrics import distribution  # noqa: E402

TIMINGS = ("completion_s", "handshake_s", "first_byte_s", "transfer_s", "startup_s")
PHASES = (("handshake", "tab:blue"), ("first byte - handshake", "tab:orange"), ("transfer", "tab:green"))


def phases(d: TimedDownload) -> tuple[float, float, float] | None:
    """A successful download's (handshake, first byte - handshake, last byte - first byte)
    in seconds, summing to its completion time; a handshake the stack cannot tell counts
    as 0 (its time is then in the second part); None when the first byte is unknown."""
    total, first = d.completion_s, d.first_byte_s
    if not d.completed or total is None or first is None:
        return None
    hs = min(max(d.handshake_s or 0.0, 0.0), first)  # 0.5-RTT data may precede the handshake's end
    return hs, first - hs, total - first


def _timing(d: TimedDownload, key: str) -> float | None:
    if key == "transfer_s":
        p = phases(d)
        return p[2] if p else None
    return {"completion_s": d.completion_s, "handshake_s": d.handshake_s, "first_byte_s": d.first_byte_s,
            "startup_s": d.startup_s}[key]


def _fraction(known: list[bool | None]) -> float | None:
    told = [k for k in known if k is not None]
    return sum(told) / len(told) if told else None


class Timing(BaseModel):
    """Median, p95 and count of one timing over the successful downloads."""

    model_config = ConfigDict(frozen=True)

    median: float | None
    p95: float | None
    n: int


class TimingRow(BaseModel):
    """One (size, mode) of ``timing_table``."""

    model_config = ConfigDict(frozen=True)

    size: int
    mode: str
    n: int  # successful downloads
    failed: int
    completion_s: Timing
    handshake_s: Timing
    first_byte_s: Timing
    transfer_s: Timing  # last byte - first byte
    startup_s: Timing  # where the stack gives it
    resumed: float | None  # the share the stack reported resumed (None: it could not tell)
    early_data: float | None  # ... with early data accepted


def timing_table(downloads: Iterable[TimedDownload], modes: list[str]) -> list[TimingRow]:
    """One row per (size, mode), sizes ascending, then in ``modes`` order: the median and
    p95 of each of TIMINGS over the successful downloads, and the fractions of them
    resumed and with 0-RTT accepted."""
    downloads = [d for d in downloads if d.mode in modes]
    rows = []
    for size in sizes_of(downloads):
        for mode in modes:
            mine = [d for d in downloads if d.mode == mode and d.size == size]
            ok = [d for d in mine if d.completed]
            timing = {}
            for key in TIMINGS:
                dist = distribution(_timing(d, key) for d in ok)
                timing[key] = Timing(median=dist.median, p95=dist.p95, n=dist.n)
            rows.append(TimingRow(size=size, mode=mode, n=len(ok), failed=len(mine) - len(ok), **timing,
                                  resumed=_fraction([d.resumed for d in ok]),
                                  early_data=_fraction([d.early_data for d in ok])))
    return rows


def _size_ticks(ax: Any, sizes: list[int]) -> None:
    ax.set_xticks(sizes, [size_label(s) for s in sizes], rotation=30 if len(sizes) > 6 else 0)
    ax.minorticks_off()


def download_times(downloads: Iterable[TimedDownload], modes: list[str], path: Path, title: str) -> Path:
    """Two panels: the median completion time against the size (log x axis, whiskers up
    to the 95th percentile), one line per mode; and per size a stacked bar per mode of
    the medians of its phases (``phases``: handshake, first byte - handshake, transfer).
    The sum of the phases' medians is close to, not exactly, the median completion time."""
    downloads = [d for d in downloads if d.mode in modes and d.completed]
    sizes = sizes_of(downloads)
    if not sizes:
        return empty_figure(path, title, "no successful downloads")
    modes = [m for m in modes if any(d.mode == m for d in downloads)]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.4))
    for i, mode in enumerate(modes):
        pts = []
        for size in sizes:
            dist = distribution(completion_times(downloads, mode, size))
            if dist.n and dist.median is not None and dist.p95 is not None:
                pts.append((size, dist.median, dist.p95))
        # Modes sharing a size are drawn slightly apart (a factor, on the log axis) so their whiskers stay readable.
        k = 1.0 + 0.025 * (i - (len(modes) - 1) / 2)
        left.errorbar([p[0] * k for p in pts], [p[1] for p in pts], yerr=[[0.0] * len(pts), [p[2] - p[1] for p in pts]],
                      marker=MARKERS[i % len(MARKERS)], markersize=4, capsize=3, linewidth=1.3,
                      color=COLORS[i % len(COLORS)], label=mode)
    left.set_xscale("log")
    _size_ticks(left, sizes)
    left.set_ylim(bottom=0)
    left.set_xlabel("file size")
    left.set_ylabel("download time (s): median, whisker to p95")
    left.grid(alpha=0.3)
    left.legend(fontsize=8, loc="upper left")
    width = 0.8 / len(modes)
    hatches = ["", "//", "..", "xx", "\\\\", "++", "oo", "--"]
    for i, mode in enumerate(modes):
        for j, size in enumerate(sizes):
            parts = [p for d in downloads if d.mode == mode and d.size == size if (p := phases(d))]
            if not parts:
                continue
            x, bottom = j + (i - (len(modes) - 1) / 2) * width, 0.0
            for k, (phase, color) in enumerate(PHASES):
                med = distribution(p[k] for p in parts).median or 0.0
                label = (phase if i == 0 else None) if j == 0 else None
                right.bar(x, med, width * 0.92, bottom=bottom, color=color, hatch=hatches[i % len(hatches)],
                          edgecolor="white", linewidth=0.5, label=label)
                bottom += med
    right.set_xticks(range(len(sizes)), [size_label(s) for s in sizes])
    right.set_xlabel("file size")
    right.set_ylabel("median of each phase (s)")
    right.grid(axis="y", alpha=0.3)
    handles, _ = right.get_legend_handles_labels()
    if len(modes) > 1:  # which bar of a size is which mode: its hatch, left to right
        handles += [Patch(facecolor="white", edgecolor="0.3", hatch=hatches[i % len(hatches)], label=mode)
                    for i, mode in enumerate(modes)]
    right.legend(handles=handles, fontsize=8, loc="upper left")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return _save(fig, path)
