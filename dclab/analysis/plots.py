"""Figures of the kinds the study used (matplotlib, written as PNG)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display
import matplotlib.pyplot as plt  # noqa: E402


def link_utilization(series: dict[str, list[tuple[float, float]]], capacity_mbps: list[float | None], path: Path,
                     title: str, window_s: float = 3.0) -> Path:
    """Per-leg downlink throughput over the first ``window_s`` seconds after the request,
    with each leg's configured capacity dashed (none for trace-driven legs)."""
    fig, ax = plt.subplots(figsize=(8, 3.6))
    for i, (leg, pts) in enumerate(sorted(series.items())):
        pts = [(t, v) for t, v in pts if 0 <= t <= window_s]
        line, = ax.plot([t for t, _ in pts], [v for _, v in pts], label=leg, linewidth=1.2)
        cap = capacity_mbps[i] if i < len(capacity_mbps) else None
        if cap:
            ax.axhline(cap, color=line.get_color(), linestyle="--", linewidth=0.8)
    ax.set_xlim(0, window_s)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("time since request (s)")
    ax.set_ylabel("leg throughput (Mbit/s)")
    ax.set_title(title, fontsize=10)
    ax.legend(loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
