"""What a user feels while a bulk flow fills the queues: the latency probe's echoes, the
short downloads' times and each leg's queue, as records, summaries and one run figure.

Responsiveness follows the IETF's "Responsiveness under Working Conditions"
(draft-ietf-ippm-responsiveness): round trips per minute, 60,000 over a working latency in
ms, each latency a 95th-percentile trimmed mean (the slowest 5 % left out). The draft
times HTTP probes (a new connection's TCP and TLS handshakes and a request, and requests
on the loaded connections); here the working latency is the ICMP echo's round trip
through the same bearer, so ``rpm`` is that formula on ICMP probes, and the short
downloads are reported beside it as what a new connection's transfer takes."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from ..dcemu.records import Stats
from .figure_info import save_figure
from .plots import plt

TRIM = 0.95  # the draft's trimmed mean keeps the fastest 95 % of the probes


@dataclass(frozen=True)
class Echo:
    """One echo request: its number (1-based), when it was sent (Unix time) and its round
    trip in ms (None: no reply came)."""

    seq: int
    sent_wall: float
    rtt_ms: float | None


class ProbeSummary(BaseModel):
    """The echoes sent inside a window: how many, how many had no reply, and the round
    trips of those that had one (ms)."""

    model_config = ConfigDict(frozen=True)

    sent: int = 0
    lost: int = 0
    rtt_p50_ms: float | None = None
    rtt_p90_ms: float | None = None
    rtt_p99_ms: float | None = None
    rtt_max_ms: float | None = None
    rtt_trimmed_ms: float | None = None  # the draft's 95th-percentile trimmed mean
    rpm: float | None = None  # 60,000 / rtt_trimmed_ms

    @property
    def loss(self) -> float | None:
        return self.lost / self.sent if self.sent else None


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) by linear interpolation between the nearest ranks."""
    xs = sorted(values)
    if not xs:
        raise ValueError("percentile of no values")
    pos = q * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def trimmed_mean(values: Sequence[float], keep: float = TRIM) -> float:
    """The mean of the smallest ``keep`` share of ``values`` (at least one)."""
    xs = sorted(values)
    if not xs:
        raise ValueError("trimmed mean of no values")
    n = max(1, math.floor(len(xs) * keep))
    return statistics.fmean(xs[:n])


def summarize(echoes: Sequence[Echo], since_wall: float, until_wall: float) -> ProbeSummary:
    """The echoes sent in [since, until] (Unix times). ``until`` should leave the last
    requests time to be answered: one sent just before the probe stopped is not lost."""
    inside = [e for e in echoes if since_wall <= e.sent_wall <= until_wall]
    rtts = [e.rtt_ms for e in inside if e.rtt_ms is not None]
    if not rtts:
        return ProbeSummary(sent=len(inside), lost=len(inside))
    trimmed = trimmed_mean(rtts)
    return ProbeSummary(sent=len(inside), lost=len(inside) - len(rtts), rtt_p50_ms=percentile(rtts, 0.5),
                        rtt_p90_ms=percentile(rtts, 0.9), rtt_p99_ms=percentile(rtts, 0.99), rtt_max_ms=max(rtts),
                        rtt_trimmed_ms=trimmed, rpm=60_000 / trimmed if trimmed > 0 else None)


class LegQueue(BaseModel):
    """One downlink leg's queue over the whole run (dcemu's summary record): each served
    packet's wait (ms), and what its discipline and its limit dropped and marked."""

    model_config = ConfigDict(frozen=True)

    leg: str
    sojourn_p50_ms: float | None = None
    sojourn_p99_ms: float | None = None
    sojourn_max_ms: float | None = None
    packets_out: int = 0
    dropped_full: int = 0  # refused at a full queue (tail drop, or the AQM's own limit)
    aqm_dropped: int = 0
    aqm_marked: int = 0


def leg_queues(records: Sequence[Stats]) -> list[LegQueue]:
    """Every downlink leg's queue from the last summary record ([] without one): its rate
    stage's, or on a cell leg (which has none) the device queue that served the most packets
    (a run's bearer is one device; the leg's AQM counters sum its devices')."""
    summary = next((r for r in reversed(records) if r.type == "summary"), None)
    if summary is None:
        return []
    out = []
    for leg in summary.legs:
        d = leg.downlink
        s = d.sojourn
        if s is None and leg.cell is not None and leg.cell.devices:
            s = max(leg.cell.devices, key=lambda dev: dev.packets_out).sojourn
        out.append(LegQueue(leg=leg.name, sojourn_p50_ms=s.p50_us / 1e3 if s else None,
                            sojourn_p99_ms=s.p99_us / 1e3 if s else None, sojourn_max_ms=s.max_us / 1e3 if s else None,
                            packets_out=d.packets_out, dropped_full=d.dropped_queue_packets,
                            aqm_dropped=d.aqm.dropped_packets if d.aqm else 0,
                            aqm_marked=d.aqm.marked_packets if d.aqm else 0))
    return out


def ce_seen(records: Sequence[Stats], server_port: int | None) -> int | None:
    """The CE marks the receivers of every connection to ``server_port`` saw: the marked
    packets dcemu handed to the client, from the last summary record's flows. None without
    a summary or a port, or from a dcemu before it counted them (version 9)."""
    summary = next((r for r in reversed(records) if r.type == "summary"), None)
    if summary is None or summary.version < 9 or server_port is None:
        return None
    return sum(f.ce_packets for f in summary.flows if f.server_port == server_port)


class ShortDownload(BaseModel):
    """One short download under load, seconds on the run's clock (from the bulk flow's
    start): requested at ``start_s``; its first and last byte after the request."""

    model_config = ConfigDict(frozen=True)

    start_s: float
    ok: bool
    first_byte_s: float | None = None
    completion_s: float | None = None
    error: str | None = None


class ProbeRecord(BaseModel):
    """What a responsiveness run keeps for its figure (``probe.json``): the echoes (sent
    at ``t_s`` on the run's clock, their round trip or None), the short downloads, and the
    window the summaries cover."""

    model_config = ConfigDict(frozen=True)

    t_s: list[float]
    rtt_ms: list[float | None]
    shorts: list[ShortDownload]
    window_s: tuple[float, float]
    idle_rtt_ms: float | None = None


def queue_series(records: Sequence[Stats], t0_ms: float) -> dict[str, list[tuple[float, int]]]:
    """Each downlink leg's queue (packets) over time, seconds from ``t0_ms``."""
    out: dict[str, list[tuple[float, int]]] = {}
    for r in records:
        if r.type != "interval":
            continue
        for leg in r.legs:
            out.setdefault(leg.name, []).append(((r.t_ms - t0_ms) / 1e3, leg.downlink.queue_packets))
    return out


def run_figure(record: ProbeRecord, records: Sequence[Stats], t0_ms: float, path: Path, title: str) -> Path:
    """Above: each echo's round trip over time (a lost one as a cross at the top), the short
    downloads as bars from request to last byte, the measured window shaded. Below: each
    downlink leg's queue in packets."""
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 5.6), sharex=True, height_ratios=(3, 2))
    lo, hi = record.window_s
    answered = [(t, r) for t, r in zip(record.t_s, record.rtt_ms, strict=True) if r is not None]
    lost = [t for t, r in zip(record.t_s, record.rtt_ms, strict=True) if r is None]
    top_ms = max([r for _, r in answered] + [1.0]) * 1.1
    top.axvspan(lo, hi, color="0.93", zorder=0, label="measured window")
    if answered:
        top.plot([t for t, _ in answered], [r for _, r in answered], ".", ms=3, color="tab:blue", label="ping RTT")
    if lost:
        top.plot(lost, [top_ms] * len(lost), "x", ms=4, color="tab:red", label="echo lost")
    if record.idle_rtt_ms is not None:
        top.axhline(record.idle_rtt_ms, color="0.5", lw=0.8, ls="--", label="idle RTT")
    for k, d in enumerate(record.shorts):
        end = d.start_s + d.completion_s if d.completion_s is not None else hi
        y = top_ms * (0.05 + 0.04 * (k % 3))
        top.plot([d.start_s, end], [y, y], lw=4, color="tab:green" if d.ok else "tab:red", solid_capstyle="butt",
                 label="short download" if k == 0 else None)
    top.set_ylabel("round trip (ms)")
    top.set_ylim(0, top_ms * 1.05)
    top.legend(fontsize=7, loc="upper right")
    top.set_title(title, fontsize=10)
    for leg, pts in sorted(queue_series(records, t0_ms).items()):
        bottom.plot([t for t, _ in pts], [q for _, q in pts], lw=1, label=leg)
    bottom.set_ylabel("downlink queue (packets)")
    bottom.set_xlabel("time since the bulk flow's start (s)")
    bottom.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    return save_figure(fig, path)
