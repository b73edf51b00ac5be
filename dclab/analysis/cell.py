"""An LTE cell's own view of a run, from dcemu's interval records (``legs[].cell``, see
``--link lte:LEVEL``): per device, what the scheduler gave it and what waited in its
queue at the base station.

- ``cell_series``: per device (named after its bearer), over time: Mbit/s out of the
  cell, share of the resource blocks, queue in kB, CQI of the last TTI, drops;
- ``cell_shares``: per device over a window, its share of the resource blocks and of the
  bytes the cell sent, and whether it used what it was granted;
- ``cell_panels``: three panels (served rate, RB share, queue) under a figure's first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..dcemu.records import Cell, Device, Stats


@dataclass
class DeviceSeries:
    """One device's samples; times in seconds since the figure's t0."""

    t: list[float] = field(default_factory=list)
    out_mbps: list[float] = field(default_factory=list)
    rb_share: list[float] = field(default_factory=list)  # of the cell's RBs in the interval
    queue_kb: list[float] = field(default_factory=list)
    cqi: list[int] = field(default_factory=list)
    dropped_packets: list[int] = field(default_factory=list)  # cumulative


def _cells(r: Stats) -> list[Cell]:
    return [leg.cell for leg in r.legs if leg.cell is not None]


def has_cell(records: Sequence[Stats]) -> bool:
    return any(r.type == "interval" and _cells(r) for r in records)


def cell_series(records: Sequence[Stats], t0_ms: float = 0.0) -> dict[str, DeviceSeries]:
    """Per device of every cell leg (by bearer name), its samples per interval record.
    The RB share is the device's RBs over the cell's RBs in the interval (TTIs run and
    idle both count: an idle TTI's RBs are wasted, not given to anyone)."""
    out: dict[str, DeviceSeries] = {}
    prev: dict[str, tuple[int, int]] = {}  # bearer -> (rbs, cell RBs so far)
    for r in records:
        if r.type != "interval":
            continue
        t = (r.t_ms - t0_ms) / 1e3
        for cell in _cells(r):
            total = (cell.ttis + cell.idle_ttis) * cell.rbs_per_tti
            for d in cell.devices:
                name = d.bearer
                rbs0, total0 = prev.get(name, (0, 0))
                prev[name] = (d.rbs, total)
                s = out.setdefault(name, DeviceSeries())
                s.t.append(t)
                s.out_mbps.append(d.out_mbps)
                s.rb_share.append((d.rbs - rbs0) / (total - total0) if total > total0 else 0.0)
                s.queue_kb.append(d.queue_bytes / 1e3)
                s.cqi.append(d.cqi)
                s.dropped_packets.append(d.dropped_packets)
    return out


def _at(records: Sequence[Stats], t_ms: float) -> Stats | None:
    """The last interval record at or before ``t_ms`` that has a cell."""
    last = None
    for r in records:
        if r.type == "interval" and _cells(r):
            if r.t_ms > t_ms:
                break
            last = r
    return last


def cell_shares(records: Sequence[Stats], start_ms: float, end_ms: float) -> dict[str, dict[str, float]]:
    """Per device over [start_ms, end_ms] (the interval records nearest inside): its
    share of the RBs the scheduler allocated, its share of the bytes out of the cell,
    its Mbit/s out, and ``used``: bits sent over the capacity of the RBs it was given
    (1.0 when it always had data for its grants). Empty without two records."""
    a = _at(records, start_ms)
    b = _at(records, end_ms)
    if a is None or b is None or b.t_ms <= a.t_ms:
        return {}
    span_s = (b.t_ms - a.t_ms) / 1e3
    before = {d.bearer: d for c in _cells(a) for d in c.devices}
    after = {d.bearer: d for c in _cells(b) for d in c.devices}
    none = Device()  # a device that was not there yet: all counters 0

    rbs = {n: d.rbs - before.get(n, none).rbs for n, d in after.items()}
    sent = {n: d.bytes_out - before.get(n, none).bytes_out for n, d in after.items()}
    cap = {n: d.capacity_bits - before.get(n, none).capacity_bits for n, d in after.items()}
    all_rbs, all_sent = sum(rbs.values()), sum(sent.values())
    return {n: {"rb_share": rbs[n] / all_rbs if all_rbs else 0.0,
                "byte_share": sent[n] / all_sent if all_sent else 0.0,
                "out_mbps": sent[n] * 8 / span_s / 1e6,
                "used": sent[n] * 8 / cap[n] if cap[n] else 0.0} for n in after}


def cell_panels(axes: list[Any], series: dict[str, DeviceSeries], order: list[str], span_s: float) -> None:
    """Draws the served rate, the RB share and the queue per device on three axes."""
    what = [("out_mbps", "out of the cell (Mbit/s)"), ("rb_share", "share of RBs"), ("queue_kb", "queue (kB)")]
    for ax, (key, label) in zip(axes, what, strict=True):
        for name in order:
            s = series[name]
            pts = [(t, v) for t, v in zip(s.t, getattr(s, key), strict=True) if 0 <= t <= span_s]
            ax.plot([t for t, _ in pts], [v for _, v in pts], linewidth=1.0, label=name)
        ax.set_ylabel(label, fontsize=8)
        ax.set_xlim(0, span_s)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    axes[1].set_ylim(0, 1.05)
