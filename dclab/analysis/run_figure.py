"""The run figure of a leg-usage run (docs/run-figure.md): each leg's downlink over the whole
transfer, a strip with the events that explain its shape (``run_events.py``), and the
first seconds at full resolution, where slow start and the first stalls are; the stalls
and dips the diagnosis found are shaded in the colour of their cause, dips more lightly
(``diagnosis.py``), and one legend below the panels names each mark with its count."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.colors import to_hex
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.transforms import Transform

from .diagnosis import THRESHOLD, Diagnosis, Dip, Stall, what
from .figure_info import save_figure
from .plots import Span, plt
from .run_events import CAUSES, PER_LEG, Cause, Event, Timeline

ZOOM_S = 3.0  # the first seconds, drawn at dcemu's resolution
STALL_ALPHA, DIP_ALPHA = 0.18, 0.07  # a dip's shade lighter than a stall's
NOTE_WIDTH = 150  # characters of the diagnosis per line under the title
MAX_POINTS = 600  # the whole transfer drawn as means over bins of at least span / MAX_POINTS


@dataclass(frozen=True)
class Mark:
    color: str
    marker: str


MARKS: dict[Cause, Mark] = {
    "socket_drops": Mark("tab:red", "v"),
    "queue_drops": Mark("tab:purple", "x"),
    "aqm_drops": Mark("tab:cyan", "x"),
    "aqm_marks": Mark("tab:green", "+"),
    "t_reordering": Mark("tab:brown", "|"),
    "sn_misread": Mark("tab:pink", "*"),
    "outage": Mark("0.35", "s"),
    "sender_loss": Mark("black", "."),
    "pto": Mark("tab:olive", "D"),
}


def _binned(t: Sequence[float], ys: Sequence[float], bin_s: float) -> tuple[list[float], list[float]]:
    bins: dict[int, list[float]] = {}
    for x, y in zip(t, ys, strict=True):
        bins.setdefault(math.floor(x / bin_s - 1e-9), []).append(y)
    keys = sorted(bins)
    return [(k + 0.5) * bin_s for k in keys], [sum(bins[k]) / len(bins[k]) for k in keys]


def _legs(ax: Axes, tl: Timeline, lo: float, hi: float, bin_s: float | None) -> dict[str, str]:
    """Each leg's line over [lo, hi] and its capacity dashed; the colour per leg."""
    colors = {}
    for name, ys in tl.legs.items():
        pts = [(x, y) for x, y in zip(tl.t, ys, strict=True) if lo - tl.dt_s <= x <= hi + tl.dt_s]
        xs, vs = [x for x, _ in pts], [y for _, y in pts]
        if bin_s and bin_s > tl.dt_s:
            xs, vs = _binned(xs, vs, bin_s)
        line, = ax.plot(xs, vs, linewidth=1.0, label=name)
        colors[name] = to_hex(line.get_color())
        cap = tl.capacities.get(name)
        if cap:
            ax.axhline(cap, color=line.get_color(), linestyle="--", linewidth=0.8)
    return colors


def _shade(ax: Axes, found: Sequence[Stall], spans: Sequence[Span], dips: Sequence[Dip] = ()) -> None:
    for start, end, _ in spans:
        ax.axvspan(start, end, color="0.85", zorder=0)
    for s in found:
        if s.cause is not None:
            ax.axvspan(s.start_s, s.end_s, color=MARKS[s.cause].color, alpha=STALL_ALPHA, linewidth=0, zorder=0)
    for d in dips:
        if d.cause is not None:
            ax.axvspan(d.start_s, d.end_s, color=MARKS[d.cause].color, alpha=DIP_ALPHA, linewidth=0, zorder=0)


def _rows(tl: Timeline) -> list[tuple[Cause, str]]:
    """The event strip's rows: (cause, where), one per leg for queue drops."""
    rows: list[tuple[Cause, str]] = []
    for c in CAUSES:
        wheres = sorted({e.where for e in tl.of(c)}) if c in PER_LEG else [""]
        if c == "socket_drops" and not tl.socket_drops and not tl.of(c):
            continue
        if c in ("sender_loss", "pto") and not tl.of(c):
            continue
        if c in (*PER_LEG, "t_reordering", "sn_misread", "outage") and not tl.of(c):
            continue
        rows += [(c, w) for w in wheres]
    return rows


def _size(n: int) -> float:
    return 12 + 10 * math.log2(1 + n)


def _events(ax: Axes, events: Sequence[Event], y: float, mark: Mark, t_reordering_ms: float | None,
            transform: Transform | None = None) -> None:
    if not events:
        return
    xs = [e.t_s for e in events]
    if mark.marker == "|" and t_reordering_ms is not None and transform is None:
        ax.hlines([y] * len(xs), [x - t_reordering_ms / 1e3 for x in xs], xs, color=mark.color, linewidth=2.5,
                  alpha=0.6)  # each expiry ends a wait of t-Reordering
    sizes = [_size(e.count) for e in events]
    if transform is None:
        ax.scatter(xs, [y] * len(xs), s=sizes, c=mark.color, marker=mark.marker, linewidths=1.2)
    else:  # x in data, y in axes fractions: along the top of a panel
        ax.scatter(xs, [y] * len(xs), s=sizes, c=mark.color, marker=mark.marker, linewidths=1.2, transform=transform,
                   clip_on=False)


def _label(tl: Timeline, cause: Cause, where: str) -> str:
    if cause in PER_LEG:
        n = sum(e.count for e in tl.of(cause) if e.where == where)
        done = {"queue_drops": "dropped in {}'s queue", "aqm_drops": "dropped by {}'s AQM",
                "aqm_marks": "marked CE by {}'s AQM"}[cause].format(where)
        return f"{n} packet{'s' if n != 1 else ''} {done}"
    if cause == "socket_drops":
        n = tl.socket_drops if tl.socket_drops is not None else tl.total(cause)
        return what(cause, n) + ("" if tl.socket_drops_timed else " (when: not sampled)")
    return what(cause, tl.total(cause), tl.t_reordering_ms)


def run_figure(tl: Timeline, found: Sequence[Stall], diagnosis: Diagnosis | None, path: Path, title: str,
               spans: Sequence[Span] = (), zoom_s: float = ZOOM_S, dips: Sequence[Dip] = ()) -> Path:
    """Three panels (the whole transfer, its events, its first ``zoom_s`` seconds) and a
    legend below them; the diagnosis line (if any) under the title; stalls shaded in their
    cause's colour, dips more lightly. A transfer no longer
    than ``zoom_s`` is drawn whole at full resolution, without the third panel, which
    would repeat it."""
    span = max(tl.end_s, tl.dt_s)
    rows = _rows(tl)
    zoomed = span > zoom_s
    fig = plt.figure(figsize=(9, 8.2 if zoomed else 5.8))
    strip = 0.45 * max(len(rows), 1) + 0.3
    grid = fig.add_gridspec(3 if zoomed else 2, 1, height_ratios=[3, strip, 2.4] if zoomed else [3, strip],
                            hspace=0.4 if zoomed else 0.12)
    ax_all = fig.add_subplot(grid[0])
    ax_ev = fig.add_subplot(grid[1], sharex=ax_all)
    ax_zoom = fig.add_subplot(grid[2]) if zoomed else None
    bin_s = max(tl.dt_s, round(span / MAX_POINTS, 2))
    colors = _legs(ax_all, tl, 0.0, span, bin_s)
    if ax_zoom is not None:
        _legs(ax_zoom, tl, 0.0, zoom_s, None)
    for ax in (ax_all, ax_ev, ax_zoom):
        if ax is not None:
            _shade(ax, found, spans, dips)
    for y, (cause, where) in enumerate(rows):
        evs = [e for e in tl.of(cause) if e.where == where or cause not in PER_LEG]
        _events(ax_ev, evs, y, MARKS[cause], tl.t_reordering_ms)
        if ax_zoom is not None:  # in the first seconds: the same marks along the top, one height per row
            _events(ax_zoom, [e for e in evs if e.t_s <= zoom_s], 0.97 - 0.07 * y, MARKS[cause],
                    tl.t_reordering_ms, ax_zoom.get_xaxis_transform())
    ax_ev.set_yticks(range(len(rows)), [c.replace("_", " ") + (f" {w}" if w else "") for c, w in rows], fontsize=7)
    ax_ev.set_ylim(-0.6, max(len(rows), 1) - 0.4)
    if not rows:
        ax_ev.text(0.5, 0.5, "no drops, expiries or sender losses recorded", ha="center", va="center", fontsize=8,
                   color="0.4", transform=ax_ev.transAxes)
        ax_ev.set_yticks([])
    ax_all.set_xlim(0, span)
    ax_all.tick_params(labelbottom=False)
    ax_ev.set_xlabel("time since the request (s)", fontsize=8)
    peak = max((v for ys in tl.legs.values() for v in ys), default=0.0) or 1.0
    ax_all.set_ylim(0, peak * 1.05)
    means = f", {bin_s:g} s means" if bin_s > tl.dt_s else f", {tl.dt_s * 1e3:g} ms intervals"
    ax_all.set_title(f"whole transfer ({span:.1f} s{means})", fontsize=8)
    for ax in (ax_all, ax_zoom):
        if ax is not None:
            ax.set_ylabel("leg throughput\n(Mbit/s)", fontsize=8)
            ax.grid(alpha=0.3)
    if ax_zoom is not None:
        ax_zoom.set_xlim(0, zoom_s)
        ax_zoom.set_ylim(0, peak * 1.4)  # room along the top for the marks
        ax_zoom.set_title(f"the first {zoom_s:g} s ({tl.dt_s * 1e3:g} ms intervals)", fontsize=8)
        ax_zoom.set_xlabel("time since the request (s)", fontsize=8)
    handles: list[Line2D | Patch] = [Line2D([], [], color=c, label=name) for name, c in colors.items()]
    if any(tl.capacities.values()):
        handles.append(Line2D([], [], color="0.3", linestyle="--", linewidth=0.8, label="configured rate"))
    for _, _, label in spans[:1]:
        handles.append(Patch(color="0.85", label=label))
    for cause, where in rows:
        m = MARKS[cause]
        handles.append(Line2D([], [], color=m.color, marker=m.marker, linestyle="", label=_label(tl, cause, where)))
    for c in dict.fromkeys(s.cause for s in found if s.cause is not None):
        n = sum(1 for s in found if s.cause == c)
        total = sum(s.duration_s for s in found if s.cause == c)
        handles.append(Patch(color=MARKS[c].color, alpha=STALL_ALPHA,
                             label=f"{n} stall{'s' if n != 1 else ''} after {c.replace('_', ' ')} ({total:.2f} s)"))
    for c in dict.fromkeys(d.cause for d in dips if d.cause is not None):
        n = sum(1 for d in dips if d.cause == c)
        lost = sum(d.lost_s for d in dips if d.cause == c)
        handles.append(Patch(color=MARKS[c].color, alpha=DIP_ALPHA,
                             label=f"{n} dip{'s' if n != 1 else ''} after {c.replace('_', ' ')} ({lost:.2f} s of the rate)"))
    fig.legend(handles=handles, loc="lower center", ncol=2, fontsize=7, frameon=False)
    fig.suptitle(title, fontsize=10, y=1 - 0.12 / fig.get_figheight())
    quiet = f"diagnosis: stalls and dips after a cause cost {100 * THRESHOLD:g} % of the transfer or less"
    note = diagnosis.line() if diagnosis is not None else quiet
    lines = textwrap.wrap(note, NOTE_WIDTH)  # a diagnosis of several causes takes two lines or three
    inch = 1 / fig.get_figheight()  # the title, diagnosis lines and legend keep their size in inches
    fig.text(0.5, 1 - 0.33 * inch, "\n".join(lines), ha="center", va="top", fontsize=7.5,
             color="tab:red" if diagnosis else "0.35")
    legend_rows = math.ceil(len(handles) / 2)
    fig.subplots_adjust(top=1 - (0.74 + 0.13 * (len(lines) - 1)) * inch, bottom=(0.74 + 0.18 * legend_rows) * inch,
                        left=0.12, right=0.97)
    return save_figure(fig, path)
