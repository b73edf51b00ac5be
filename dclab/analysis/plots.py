"""Figures of the kinds the study used (matplotlib, written as PNG)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display
import matplotlib.pyplot as plt  # noqa: E402

from .figure_info import save_figure  # noqa: E402

Span = tuple[float, float, str]  # a shaded stretch of a time axis: start, end (s), label


def time_series(series: dict[str, list[tuple[float, float]]], path: Path, title: str, window_s: float, ylabel: str,
                capacity_mbps: list[float | None] | None = None, spans: tuple[Span, ...] = ()) -> Path:
    """One line per series over [0, window_s] seconds; optional dashed capacity lines
    (same order as the sorted series names) and shaded ``spans`` (e.g. a leg's outage)."""
    fig, ax = plt.subplots(figsize=(8, 3.6))
    for start, end, label in spans:
        ax.axvspan(start, end, color="0.85", zorder=0, label=label)
    for i, (name, pts) in enumerate(sorted(series.items())):
        pts = [(t, v) for t, v in pts if 0 <= t <= window_s]
        line, = ax.plot([t for t, _ in pts], [v for _, v in pts], label=name, linewidth=1.2)
        cap = capacity_mbps[i] if capacity_mbps and i < len(capacity_mbps) else None
        if cap:
            ax.axhline(cap, color=line.get_color(), linestyle="--", linewidth=0.8)
    ax.set_xlim(0, window_s)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("time (s)")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return save_figure(fig, path)


def link_utilization(series: dict[str, list[tuple[float, float]]], capacity_mbps: list[float | None], path: Path,
                     title: str, window_s: float = 3.0, spans: tuple[Span, ...] = ()) -> Path:
    """Per-leg downlink throughput over the first ``window_s`` seconds after the request,
    each leg's configured capacity dashed (none for trace-driven legs)."""
    return time_series(series, path, title, window_s, "leg throughput (Mbit/s)", capacity_mbps, spans)
