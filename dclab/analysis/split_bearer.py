"""A split bearer's view of a run, from dcemu's interval records: per leg, what the bearer
got out of it and what waited for it there (a cell device's queue, or a link's), the
secondaries' flow-control reports (``bearers[].flow``: the desired size each asked for,
and when each report reached the master), the secondary node's away spans
(``legs[].secondary``), the PDCP receiver's t-Reordering expiries and the COUNTs it
misread (HFN desynchronisation, ``rx.counts_misread``). Drawn by
``split_figure`` over the whole run (docs/endc.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..dcemu.records import Leg, Stats
from .figure_info import save_figure
from .plots import Span, plt


@dataclass
class SplitSeries:
    """Samples per interval record; times in seconds since the figure's t0."""

    t: list[float] = field(default_factory=list)
    mbps: dict[str, list[float]] = field(default_factory=dict)  # per leg: the bearer's Mbit/s out of it
    queue_kb: dict[str, list[float]] = field(default_factory=dict)  # per leg: the bearer's queue there
    desired_kb: dict[str, list[float | None]] = field(default_factory=dict)  # per secondary: last report's size
    reports: dict[str, list[float]] = field(default_factory=dict)  # per secondary: when reports reached the master
    # per secondary: intervals in which the master began an outage fallback (split.fallback_ms)
    outages: dict[str, list[float]] = field(default_factory=dict)
    expiries: list[float] = field(default_factory=list)  # intervals in which t-Reordering expired
    misread: list[float] = field(default_factory=list)  # intervals in which the receiver misread a COUNT
    away: list[Span] = field(default_factory=list)  # a secondary node released or changing
    policy: str = "static"


def _bearer_on(leg: Leg, bearer: str) -> tuple[float, float]:
    """The bearer's Mbit/s out of ``leg`` and its queue there in kB: its device's on a
    cell, the whole downlink's on a link (shared with any other bearer on it)."""
    if leg.cell is not None:
        d = next((d for d in leg.cell.devices if d.bearer == bearer), None)
        return (d.out_mbps, d.queue_bytes / 1e3) if d is not None else (0.0, 0.0)
    return leg.downlink.out_mbps, leg.downlink.queue_bytes / 1e3


def split_series(records: Sequence[Stats], bearer: str, t0_ms: float = 0.0) -> SplitSeries:
    """The bearer's series over every interval record."""
    s = SplitSeries()
    prev_reports: dict[str, int] = {}
    prev_outages: dict[str, int] = {}
    prev_expiries = 0
    prev_misread = 0
    away_since: dict[str, tuple[float, str]] = {}
    prev_t = 0.0
    for r in records:
        b = r.bearer(bearer)
        if r.type != "interval" or b is None:
            continue
        t = (r.t_ms - t0_ms) / 1e3
        s.t.append(t)
        legs = {leg.name: leg for leg in r.legs}
        for name, _ in b.tx_pdus:
            leg = legs.get(name)
            mbps, kb = _bearer_on(leg, bearer) if leg is not None else (0.0, 0.0)
            s.mbps.setdefault(name, []).append(mbps)
            s.queue_kb.setdefault(name, []).append(kb)
            sn = leg.secondary if leg is not None else None
            state = sn.state if sn is not None else "active"
            if state != "active" and name not in away_since:
                away_since[name] = (prev_t, state)
            elif state == "active" and name in away_since:
                start, what = away_since.pop(name)
                s.away.append((start, t, f"{name} {what}"))
        if b.flow is not None:
            s.policy = b.flow.policy
            for f in b.flow.secondaries:
                s.desired_kb.setdefault(f.leg, []).append(
                    None if f.desired_bytes is None else f.desired_bytes / 1e3)
                got = f.reports_received - prev_reports.get(f.leg, 0)
                prev_reports[f.leg] = f.reports_received
                if got > 0:
                    s.reports.setdefault(f.leg, []).append(t)
                if f.outages > prev_outages.get(f.leg, 0):
                    s.outages.setdefault(f.leg, []).append(t)
                prev_outages[f.leg] = f.outages
        expiries = b.rx.timer_expiries if b.rx is not None else 0
        if expiries > prev_expiries:
            s.expiries.append(t)
        prev_expiries = expiries
        misread = b.rx.counts_misread if b.rx is not None else 0
        if misread > prev_misread:
            s.misread.append(t)
        prev_misread = misread
        prev_t = t
    for name, (start, what) in away_since.items():
        s.away.append((start, prev_t, f"{name} {what}"))
    return s


def split_figure(s: SplitSeries, capacities: Sequence[float | None], path: Path, title: str) -> Path:
    """Three panels over the whole run: each leg's rate for the bearer (capacities
    dashed), each leg's queue for it (each secondary's last desired size dotted), and a
    strip with a tick per interval in which a report reached the master (per secondary),
    in which the master began an outage fallback (per secondary, where any did), per
    t-Reordering expiry and per misread COUNT (where any was); a secondary node's away
    spans shaded."""
    fig, (ax_rate, ax_queue, ax_events) = plt.subplots(
        3, 1, figsize=(8, 6.4), sharex=True, gridspec_kw={"height_ratios": [3, 3, 1.2]})
    for ax in (ax_rate, ax_queue, ax_events):
        for i, (start, end, label) in enumerate(s.away):
            ax.axvspan(start, end, color="0.85", zorder=0, label=label if ax is ax_rate and i < 4 else None)
    colors: dict[str, str] = {}
    for i, (name, ys) in enumerate(s.mbps.items()):
        line, = ax_rate.plot(s.t, ys, label=name, linewidth=1.1)
        colors[name] = line.get_color()
        cap = capacities[i] if i < len(capacities) else None
        if cap:
            ax_rate.axhline(cap, color=line.get_color(), linestyle="--", linewidth=0.8)
        ax_queue.plot(s.t, s.queue_kb[name], color=line.get_color(), linewidth=1.1, label=f"{name} queue")
    for name, desired in s.desired_kb.items():
        pts = [(t, y) for t, y in zip(s.t, desired, strict=False) if y is not None]
        ax_queue.plot([t for t, _ in pts], [y for _, y in pts], color=colors.get(name, "k"), linestyle=":",
                      linewidth=1.0, label=f"{name} desired (last report)")
    rows: list[tuple[str, list[float], str]] = [
        (f"{name} reports", ts, colors.get(name, "k")) for name, ts in s.reports.items()]
    rows += [(f"{name} outages (resent)", ts, "tab:purple") for name, ts in s.outages.items()]
    rows.append(("t-Reordering expiries", s.expiries, "tab:red"))
    if s.misread:
        rows.append(("COUNTs misread (HFN desync)", s.misread, "tab:pink"))
    for y, (_, ts, color) in enumerate(rows):
        ax_events.vlines(ts, y - 0.35, y + 0.35, color=color, linewidth=0.6)
    ax_events.set_yticks(range(len(rows)), [label for label, _, _ in rows], fontsize=7)
    ax_events.set_ylim(-0.6, len(rows) - 0.4)
    ax_rate.set_ylabel("Mbit/s for the bearer")
    ax_queue.set_ylabel("queue (kB)")
    ax_events.set_xlabel("time (s)")
    ax_rate.set_ylim(bottom=0)
    ax_queue.set_ylim(bottom=0)
    if s.t:
        ax_events.set_xlim(0, max(s.t))
    # Run titles already name a non-static policy (Scenario.split_text); say it once.
    named = f"split {s.policy}" in title
    ax_rate.set_title(title if named else f"{title} (split {s.policy})", fontsize=10)
    ax_rate.legend(loc="lower right", fontsize=7)
    ax_queue.legend(loc="upper right", fontsize=7)
    for ax in (ax_rate, ax_queue):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return save_figure(fig, path)
