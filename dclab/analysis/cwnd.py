"""Per-connection congestion windows of one mQUIC group, from the JSON lines of the
server's log (``join``, ``nfe``, ``round``, ``rate``, ``cwnd``, ``done`` events; see
dclab/endpoints/aioquic/mquic/), and the figure of them over time."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display
import matplotlib.pyplot as plt  # noqa: E402

from ..files import JsonObject
from .completion import _number  # noqa: E402
from .figures import COLORS, _save, empty_figure  # noqa: E402

MSS = 1200  # bytes per packet in the cwnd figure (QUIC's usual max datagram size)
SYNC_ACTIONS = ("sync", "mean", "stop")


def groups_of(lines: Iterable[JsonObject]) -> list[str]:
    """Group ids in order of first appearance."""
    seen: dict[str, None] = {}
    for d in lines:
        if d.get("group") is not None:
            seen.setdefault(str(d["group"]), None)
    return list(seen)


def pick_group(lines: list[JsonObject], group: str | None = None) -> str | None:
    """``group`` if given; else the first group (in the order of the lines) with a "sync"
    or "mean" action, else the first group; None without lines."""
    if group is not None:
        return group
    groups = groups_of(lines)
    synced = {str(d.get("group")) for d in lines if d.get("action") in ("sync", "mean")}
    return next((g for g in groups if g in synced), groups[0] if groups else None)


def _conn_key(c: object) -> tuple[int, float, str]:
    s = str(c)
    try:
        return (0, float(s), s)
    except ValueError:
        return (1, 0.0, s)


def cwnd_series(lines: Iterable[JsonObject], group: str) -> dict[str, list[tuple[float, float]]]:
    """Per connection (id as text, numerically ordered), (seconds since the group's first
    line, cwnd in bytes) from ``join`` and ``cwnd`` lines and the ``before`` then ``after``
    of ``nfe`` and ``round`` lines, in time order."""
    mine = sorted((d for d in lines if str(d.get("group")) == group and _number(d.get("time")) is not None),
                  key=lambda d: d["time"])
    if not mine:
        return {}
    t0 = float(mine[0]["time"])
    series: dict[str, list[tuple[float, float]]] = {}
    for d in mine:
        t = float(d["time"]) - t0
        ev = d.get("event")
        if ev in ("join", "cwnd") and _number(d.get("cwnd")) is not None:
            series.setdefault(str(d.get("conn")), []).append((t, float(d["cwnd"])))
        elif ev in ("nfe", "round"):
            for key in ("before", "after"):
                for c, v in (d.get(key) or {}).items():
                    if _number(v) is not None:
                        series.setdefault(str(c), []).append((t, float(v)))
    return {c: series[c] for c in sorted(series, key=_conn_key)}


def aggregate(series: dict[str, list[tuple[float, float]]]) -> list[tuple[float, float]]:
    """The group's window over time: at every time any connection's window changed, the
    sum of each connection's latest value (0 before its first)."""
    latest: dict[str, float] = {}
    out: list[tuple[float, float]] = []
    for t, c, v in sorted((t, c, v) for c, pts in series.items() for t, v in pts):
        latest[c] = v
        total = sum(latest.values())
        if out and out[-1][0] == t:
            out[-1] = (t, total)
        else:
            out.append((t, total))
    return out


def aggregate_windows(by_label: dict[str, tuple[list[JsonObject], str]], path: Path, title: str) -> Path:
    """One step line per label: the summed cwnd (packets of ``MSS`` bytes) of group
    ``by_label[label][1]`` in the lines ``by_label[label][0]``, over the time since its
    first line, NFEs marked on it ("x"; merged NFEs open circles)."""
    fig, ax = plt.subplots(figsize=(8, 4.0))
    drawn = 0
    for i, (label, (lines, group)) in enumerate(by_label.items()):
        series = cwnd_series(lines, group)
        total = aggregate(series)
        if not total:
            continue
        color = COLORS[i % len(COLORS)]
        ax.step([t for t, _ in total], [v / MSS for _, v in total], where="post", color=color, linewidth=1.4,
                label=label)  # fmt: skip
        t0 = min(float(d["time"]) for d in lines if str(d.get("group")) == group and _number(d.get("time")) is not None)
        for d in lines:
            if str(d.get("group")) != group or d.get("event") != "nfe" or _number(d.get("time")) is None:
                continue
            t = float(d["time"]) - t0
            at = [v for s, v in total if s <= t]
            ax.plot([t], [at[-1] / MSS if at else 0], linestyle="none", markersize=6, color=color,
                    marker="o" if d.get("action") == "merged" else "x",
                    markerfacecolor="none" if d.get("action") == "merged" else color)  # fmt: skip
        drawn += 1
    if not drawn:
        plt.close(fig)
        return empty_figure(path, title, "no mQUIC log lines for these downloads")
    ax.plot([], [], "kx", linestyle="none", label="NFE")
    ax.plot([], [], "ko", markerfacecolor="none", linestyle="none", label="NFE merged (within one RTT)")
    ax.set_ylim(bottom=0)
    ax.set_xlabel("time since the group's first line (s)")
    ax.set_ylabel(f"summed cwnd (packets of {MSS} B)")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    return _save(fig, path)


def cwnd_over_time(lines: Iterable[JsonObject], path: Path, title: str, group: str | None = None) -> Path:
    """Per-connection cwnd (packets of ``MSS`` bytes) of one group as step lines over the
    time since the group's first line; each NFE an "x" on the connection it hit (at the
    cwnd before the reaction), each synchronization (nfe "sync"/"stop", round or rate
    "mean") a vertical line. ``group`` None: the first group that synchronized
    (``pick_group``)."""
    lines = list(lines)
    g = pick_group(lines, group)
    series = cwnd_series(lines, g) if g is not None else {}
    if g is None or not series:
        return empty_figure(path, title, "no data" if g is None else f"no data for group {g}")
    mine = sorted((d for d in lines if str(d.get("group")) == g and _number(d.get("time")) is not None),
                  key=lambda d: d["time"])
    t0 = float(mine[0]["time"])
    fig, ax = plt.subplots(figsize=(8, 4.0))
    colors = {}
    for i, (c, pts) in enumerate(series.items()):
        colors[c] = COLORS[i % len(COLORS)]
        ax.step([t for t, _ in pts], [v / MSS for _, v in pts], where="post", color=colors[c], linewidth=1.3,
                label=f"conn {c}")
    sync_styles = {"sync": ("tab:red", "--"), "mean": ("tab:green", ":"), "stop": ("0.3", "-.")}
    nfe_labelled = False
    drawn: set[str] = set()
    end = max(t for pts in series.values() for t, _ in pts)
    for d in mine:
        t = float(d["time"]) - t0
        end = max(end, t)
        ev, action = d.get("event"), d.get("action")
        if ev == "nfe":
            c = str(d.get("conn"))
            before = _number((d.get("before") or {}).get(c))
            if before is None and c in series:
                known = [v for s, v in series[c] if s <= t]
                before = known[-1] if known else None
            if before is not None:
                ax.plot([t], [before / MSS], marker="x", markersize=7, markeredgewidth=1.6, linestyle="none",
                        color=colors.get(c, "k"), label=None if nfe_labelled else "NFE")
                nfe_labelled = True
        if ev in ("nfe", "round", "rate") and action in SYNC_ACTIONS:
            label = f"{ev} {action}"
            color, style = sync_styles[str(action)]
            ax.axvline(t, color=color, linestyle=style, linewidth=0.9, alpha=0.8, label=None if label in drawn else label)
            drawn.add(label)
    # Each connection's last value holds to the end of the group's lines.
    for c, pts in series.items():
        if pts[-1][0] < end:
            ax.plot([pts[-1][0], end], [pts[-1][1] / MSS] * 2, color=colors[c], linewidth=1.3)
    if len(series) > 1:  # the group's window: what the bottleneck sees
        total = aggregate(series)
        ax.step([t for t, _ in total] + [end], [v / MSS for _, v in total] + [total[-1][1] / MSS], where="post",
                color="k", linewidth=1.0, alpha=0.6, label="sum")  # fmt: skip
    ax.set_xlim(0, end * 1.02 or 1.0)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("time since the group's first line (s)")
    ax.set_ylabel(f"cwnd (packets of {MSS} B)")
    ax.set_title(f"{title} (group {g})", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    return _save(fig, path)
