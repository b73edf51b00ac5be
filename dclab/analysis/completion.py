"""Completion times of short downloads by mode and size.

A download is a ``downloads.Download`` (``MquicDownload`` where the first NFE is drawn);
its *mode* is any string (how the download was made), and the caller names the modes to
compare against (baselines).

- ``completion_table``: per size and mode, n, failed, median, p95 and cov of the
  completion times, and the improvement over each baseline;
- ``completion_cdfs``: CDFs of completion times relative to a baseline's median, one
  panel per size;
- ``completion_vs_first_nfe``: completion time against the packets sent before the first
  NFE (network feedback event, e.g. a loss);
- ``gain_table`` / ``gain_against``: the improvement of one mode against a swept value;

Download timings (handshake, first byte, transfer) are in ``timings.py``, congestion
windows from an mQUIC log in ``cwnd.py``.

An improvement is ``(baseline stat - mode stat) / baseline stat * 100``: positive when
the mode completes faster. Every figure function writes a figure even when there is
nothing to show (it then says why).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Generic, TypeVar

import matplotlib

matplotlib.use("Agg")  # files only; no display
import matplotlib.pyplot as plt  # noqa: E402
from pydantic import BaseModel, ConfigDict  # noqa: E402

from .downloads import Download, MquicDownload  # noqa: E402
from .figures import COLORS, _save, empty_figure  # noqa: E402
from .metrics import distribution  # noqa: E402

MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]


def size_label(size: int | float) -> str:
    """Bytes as people write them: 100 KB, 1 MB, 1.5 MB (decimal units)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if size >= scale:
            return f"{size / scale:g} {unit}"
    return f"{size:g} B"


def _number(v: object) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and not math.isnan(v) else None


class Improvement(BaseModel):
    """A mode's improvement over a baseline, % (``improvement``)."""

    model_config = ConfigDict(frozen=True)

    median: float | None = None
    p95: float | None = None


class CompletionRow(BaseModel):
    """One (size, mode) of ``completion_table``."""

    model_config = ConfigDict(frozen=True)

    size: int
    mode: str
    n: int  # successful downloads
    failed: int
    median: float | None = None
    p95: float | None = None
    mean: float | None = None
    cov: float | None = None
    improvement: dict[str, Improvement] = {}  # per baseline other than the mode itself


RowT = TypeVar("RowT", bound=BaseModel)


class CompletionSummary(BaseModel, Generic[RowT]):
    """What a summary of many short downloads adds (``Summary.extra``, read back with
    ``CompletionSummary[ROW].model_validate``): its table and how many downloads there
    were and failed."""

    model_config = ConfigDict(frozen=True)

    table: list[RowT] = []
    downloads: int = 0
    failed_downloads: int = 0


def summary_extra(downloads: Sequence[Download], table: Sequence[BaseModel]) -> dict[str, object]:
    """``CompletionSummary``'s fields, as ``Summary.extra`` keeps them."""
    return {"table": list(table), "downloads": len(downloads), "failed_downloads": sum(1 for d in downloads if not d.ok)}


def sizes_of(downloads: Iterable[Download]) -> list[int]:
    """The distinct sizes, ascending."""
    return sorted({d.size for d in downloads})


def completion_times(downloads: Iterable[Download], mode: str, size: int) -> list[float]:
    """Completion times (s) of the successful downloads of ``mode`` at ``size``."""
    return [d.completion_s for d in downloads if d.mode == mode and d.size == size and d.completed
            and d.completion_s is not None]  # fmt: skip


def improvement(baseline: float | None, value: float | None) -> float | None:
    """(baseline - value) / baseline * 100: positive when ``value`` is smaller (faster);
    None when either is missing or the baseline is 0."""
    if baseline is None or value is None or baseline == 0:
        return None
    return (baseline - value) / baseline * 100.0


def _stats(downloads: Sequence[Download], mode: str, size: int) -> CompletionRow:
    of_mode = [d for d in downloads if d.mode == mode and d.size == size]
    dist = distribution(completion_times(of_mode, mode, size))
    return CompletionRow(size=size, mode=mode, n=dist.n, failed=len(of_mode) - dist.n, median=dist.median,
                         p95=dist.p95, mean=dist.mean, cov=dist.cov)


def completion_table(downloads: Iterable[Download], modes: list[str], baselines: list[str]) -> list[CompletionRow]:
    """One row per (size, mode), sizes ascending, then in ``modes`` order, with the
    improvement over every baseline other than the mode itself (None where either side
    has no value). Sizes are those of the downloads of ``modes`` and ``baselines``; a mode
    without downloads at a size gets a row with n 0 and None statistics."""
    downloads = list(downloads)
    wanted = set(modes) | set(baselines)
    sizes = sizes_of(d for d in downloads if d.mode in wanted)
    cache: dict[tuple[str, int], CompletionRow] = {}

    def stats(mode: str, size: int) -> CompletionRow:
        if (mode, size) not in cache:
            cache[(mode, size)] = _stats(downloads, mode, size)
        return cache[(mode, size)]

    rows = []
    for size in sizes:
        for mode in modes:
            s = stats(mode, size)
            imp = {}
            for b in baselines:
                if b == mode:
                    continue
                bs = stats(b, size)
                imp[b] = Improvement(median=improvement(bs.median, s.median), p95=improvement(bs.p95, s.p95))
            rows.append(s.model_copy(update={"improvement": imp}))
    return rows


def _baseline_medians(downloads: Sequence[Download], baseline: str | None, sizes: list[int]) -> dict[int, float]:
    """The baseline's median completion time per size (sizes without one left out)."""
    if baseline is None:
        return {}
    out = {}
    for size in sizes:
        med = distribution(completion_times(downloads, baseline, size)).median
        if med:
            out[size] = med
    return out


def completion_cdfs(downloads: Iterable[Download], modes: list[str], baseline: str | None, path: Path,
                    title: str) -> Path:
    """Side-by-side panels, one per size: per mode, the step CDF of its completion times
    divided by ``baseline``'s median at that size (a panel without a baseline median, or
    ``baseline`` None, shows seconds)."""
    downloads = [d for d in downloads if d.mode in modes and d.completed]
    sizes = sizes_of(downloads)
    if not sizes:
        return empty_figure(path, title, "no successful downloads")
    medians = _baseline_medians(downloads, baseline, sizes)
    fig, axes = plt.subplots(1, len(sizes), figsize=(max(8.0, 3.6 * len(sizes)), 3.8), squeeze=False, sharey=True)
    for ax, size in zip(axes[0], sizes, strict=True):
        scale = medians.get(size)
        for i, mode in enumerate(modes):
            vals = sorted(t / scale if scale else t for t in completion_times(downloads, mode, size))
            if not vals:
                continue
            ys = [k / len(vals) for k in range(1, len(vals) + 1)]
            ax.step([vals[0]] + vals, [0.0] + ys, where="post", color=COLORS[i % len(COLORS)], linewidth=1.3,
                    label=f"{mode} (n={len(vals)})")
        if scale:
            ax.axvline(1.0, color="0.5", linestyle=":", linewidth=0.9)
            ax.set_xlabel(f"completion time / {baseline} median")
        else:
            ax.set_xlabel("completion time (s)" + (f", no {baseline} median" if baseline else ""))
        ax.set_xlim(left=0)
        ax.set_ylim(0, 1.02)
        ax.set_title(size_label(size) + (f" ({baseline} median {scale * 1e3:.0f} ms)" if scale else ""), fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    axes[0, 0].set_ylabel("CDF of downloads")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return _save(fig, path)


def completion_vs_first_nfe(downloads: Iterable[MquicDownload], modes: list[str], path: Path, title: str,
                            baseline: str | None = None) -> Path:
    """Completion time (divided by ``baseline``'s median at the download's size when
    given and known at every size, else in seconds) against the packets sent before the first NFE; one color per mode,
    one marker per size. Downloads without an NFE are drawn in a column at the right
    edge, labelled "no NFE"."""
    downloads = [d for d in downloads if d.mode in modes and d.completed]
    sizes = sizes_of(downloads)
    if not downloads:
        return empty_figure(path, title, "no successful downloads")
    medians = _baseline_medians(downloads, baseline, sizes)
    normalized = baseline is not None and all(s in medians for s in sizes)

    def y_of(d: MquicDownload) -> float:
        t = d.completion_s or 0.0
        return t / medians[d.size] if normalized else t

    with_nfe = [_number(d.first_nfe_packets) for d in downloads]
    xs_known = [x for x in with_nfe if x is not None]
    right = max(xs_known) * 1.15 if xs_known else 1.0
    fig, ax = plt.subplots(figsize=(8, 4.2))
    for i, mode in enumerate(modes):
        for j, size in enumerate(sizes):
            pts = [d for d in downloads if d.mode == mode and d.size == size]
            if not pts:
                continue
            xs = [_number(d.first_nfe_packets) for d in pts]
            label = mode if len(sizes) == 1 else f"{mode}, {size_label(size)}"
            ax.scatter([right if x is None else x for x in xs], [y_of(d) for d in pts], s=18, alpha=0.75,
                       color=COLORS[i % len(COLORS)], marker=MARKERS[j % len(MARKERS)], label=label)
    if any(x is None for x in with_nfe):
        last = max(xs_known) if xs_known else 0.0
        ax.axvline((last + right) / 2, color="0.6", linestyle="--", linewidth=0.8)  # apart from the NFE axis
        ax.text(right, 1.0, "no NFE", transform=ax.get_xaxis_transform(), ha="center", va="bottom", fontsize=8,
                color="0.3")
    ax.set_xlim(left=0, right=right * 1.06)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("packets sent before the first NFE")
    ax.set_ylabel(f"completion time / {baseline} median" if normalized else "completion time (s)")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    return _save(fig, path)


class GainRow(BaseModel):
    """One (x, size, baseline) of ``gain_table``: the mode's improvement, %."""

    model_config = ConfigDict(frozen=True)

    x: float
    size: int
    baseline: str
    median: float | None
    p95: float | None
    n: int
    n_baseline: int


def gain_table(points: list[tuple[float, list[Download]]], mode: str, baselines: list[str]) -> list[GainRow]:
    """For each (x, downloads) of ``points`` (e.g. x the number of connections or the
    initial window), each size and each baseline other than ``mode``: the improvement of
    ``mode`` over the baseline (None where either side has no value). Ordered by x as
    given, then size, then ``baselines`` order."""
    rows = []
    for x, downloads in points:
        table = completion_table(downloads, [mode] + [b for b in baselines if b != mode], [])
        by = {(r.size, r.mode): r for r in table}
        for size in sorted({r.size for r in table}):
            m = by[(size, mode)]
            for b in baselines:
                if b == mode:
                    continue
                base = by[(size, b)]
                rows.append(GainRow(x=x, size=size, baseline=b, median=improvement(base.median, m.median),
                                    p95=improvement(base.p95, m.p95), n=m.n, n_baseline=base.n))
    return rows


def gain_against(points: list[tuple[float, list[Download]]], mode: str, baselines: list[str], path: Path, title: str,
                 xlabel: str) -> Path:
    """Two panels (median, p95): the improvement (%) of ``mode`` over each baseline
    against x, one line per (size, baseline): color per size, line style per baseline."""
    table = gain_table(points, mode, baselines)
    if not any(v is not None for r in table for v in (r.median, r.p95)):
        return empty_figure(path, title, "no improvement to show (missing downloads)")
    sizes = sorted({r.size for r in table})
    others = [b for b in baselines if b != mode]
    styles = ["-", "--", ":", "-."]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.0), sharey=True)
    for ax, stat in zip(axes, ("median", "p95"), strict=True):
        for i, size in enumerate(sizes):
            for j, b in enumerate(others):
                pts = sorted((r.x, v) for r in table if r.size == size and r.baseline == b
                             and (v := r.median if stat == "median" else r.p95) is not None)
                if not pts:
                    continue
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=MARKERS[j % len(MARKERS)], markersize=4,
                        linestyle=styles[j % len(styles)], linewidth=1.2, color=COLORS[i % len(COLORS)],
                        label=f"{size_label(size)} vs {b}")
        ax.axhline(0.0, color="0.4", linewidth=0.8)
        xs = sorted({r.x for r in table})
        if len(xs) <= 12:
            ax.set_xticks(xs, [f"{x:g}" for x in xs])
        ax.set_xlabel(xlabel)
        ax.set_title(f"{stat} completion time", fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(f"improvement of {mode} (%)")
    axes[0].legend(fontsize=7, loc="best")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return _save(fig, path)
