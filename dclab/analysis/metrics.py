"""Numbers computed from what a run recorded."""

from __future__ import annotations

import bisect
import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from ..dcemu.records import Stats


@dataclass(frozen=True)
class MeanStd:
    """Mean and sample standard deviation of ``n`` values (None for none)."""

    mean: float | None
    std: float | None
    n: int = 0


def mean_std(values: Iterable[float | None]) -> MeanStd:
    """Mean and sample standard deviation (0 for one value), as the study reports."""
    vals = [v for v in values if v is not None and not math.isnan(v)]
    if not vals:
        return MeanStd(None, None, 0)
    return MeanStd(statistics.fmean(vals), statistics.stdev(vals) if len(vals) > 1 else 0.0, len(vals))


def jain(values: list[float]) -> float | None:
    """Jain's fairness index (sum x)^2 / (n sum x^2)."""
    vals = [v for v in values if v is not None]
    sq = sum(v * v for v in vals)
    if not vals or sq == 0:
        return None
    return sum(vals) ** 2 / (len(vals) * sq)


def leg_series(records: Sequence[Stats], t0_ms: float = 0.0) -> dict[str, list[tuple[float, float]]]:
    """Per downlink leg, (seconds since t0, Mbit/s out over the interval) from dcemu's
    interval records."""
    series: dict[str, list[tuple[float, float]]] = {}
    for r in records:
        if r.type != "interval":
            continue
        t = (r.t_ms - t0_ms) / 1e3
        for leg in r.legs:
            series.setdefault(leg.name, []).append((t, leg.downlink.out_mbps))
    return series


def bearer_series(records: Sequence[Stats], t0_ms: float = 0.0) -> dict[str, list[tuple[float, float]]]:
    """Per bearer, (seconds since t0, Mbit/s delivered to the client over the interval)."""
    series: dict[str, list[tuple[float, float]]] = {}
    for r in records:
        if r.type != "interval":
            continue
        t = (r.t_ms - t0_ms) / 1e3
        for b in r.bearers:
            series.setdefault(b.name, []).append((t, b.delivered_mbps))
    return series


def nearest(records: Sequence[Stats], t_ms: float) -> Stats:
    """The record nearest ``t_ms`` (of several as near, the first), ``records`` being in time
    order as dcemu writes them: a binary search, so that records parsed as they are looked at
    (``StatsRecords``) are parsed a few at a time, not all 18,000 of a 180 s run."""
    i = bisect.bisect_left(records, t_ms, key=lambda r: r.t_ms)
    if i == len(records) or (i > 0 and t_ms - records[i - 1].t_ms <= records[i].t_ms - t_ms):
        i -= 1
        while i > 0 and records[i - 1].t_ms == records[i].t_ms:  # the first of equal times
            i -= 1
    return records[i]


def window_deltas(records: Sequence[Stats], t0_ms: float, window_s: float, start_s: float,
                  counters: Callable[[Stats], dict[str, int]]) -> tuple[float, dict[str, int]]:
    """How much each cumulative counter that ``counters`` reads from a record grew over
    [t0 + start, t0 + window] (seconds from t0), at the records nearest to both ends, and
    the seconds between those records; (0, {}) without records."""
    if not 0 <= start_s < window_s:
        raise ValueError(f"need 0 <= start_s < window_s (got {start_s}, {window_s})")
    if not records:
        return 0.0, {}

    def at(t_ms: float) -> tuple[float, dict[str, int]]:
        best = nearest(records, t_ms)
        return best.t_ms, counters(best)

    (ta, a), (tb, b) = at(t0_ms + start_s * 1e3), at(t0_ms + window_s * 1e3)
    return (tb - ta) / 1e3, {name: b[name] - a.get(name, 0) for name in b}


def _rates(records: Sequence[Stats], t0_ms: float, window_s: float, start_s: float,
           counters: Callable[[Stats], dict[str, int]]) -> dict[str, float]:
    """Mbit/s of each cumulative byte counter that ``counters`` reads from a record, over
    [t0 + start, t0 + window] (seconds from t0), at the records nearest to both ends."""
    span, grown = window_deltas(records, t0_ms, window_s, start_s, counters)
    return {name: n * 8 / max(span, 1e-12) / 1e6 for name, n in grown.items()}


def window_means(records: Sequence[Stats], t0_ms: float, window_s: float, start_s: float = 0.0) -> dict[str, float]:
    """Each bearer's mean Mbit/s over [t0 + start, t0 + window] (seconds from t0) from
    cumulative delivered bytes, at the records nearest to both ends. ``start_s`` (a
    warm-up left out) must be below ``window_s``."""
    return _rates(records, t0_ms, window_s, start_s, lambda r: {b.name: b.delivered_bytes for b in r.bearers})


def leg_window_means(records: Sequence[Stats], t0_ms: float, window_s: float, start_s: float = 0.0) -> dict[str, float]:
    """Each downlink leg's mean Mbit/s out (PDCP headers included, as on the wire) over the
    same window as ``window_means``."""
    return _rates(records, t0_ms, window_s, start_s, lambda r: {leg.name: leg.downlink.bytes_out for leg in r.legs})


class RxWait(BaseModel):
    """How long the PDCP receiver held SDUs for reordering, µs: the fields of its histogram's
    summary (``dcemu.records.Hist``) a run's details keep."""

    model_config = ConfigDict(frozen=True)

    count: int = 0
    mean_us: float = 0.0
    p50_us: float = 0.0
    p99_us: float = 0.0
    max_us: float = 0.0


class LegTotals(BaseModel):
    """One downlink leg's totals over a run: the fields of its summary record
    (``dcemu.records.Direction``) a run's details keep."""

    model_config = ConfigDict(frozen=True)

    bytes_out: int = 0
    packets_out: int = 0
    dropped_queue_packets: int = 0
    dropped_loss_packets: int = 0


class PdcpSummary(BaseModel):
    """A bearer's final PDCP counters and its legs' totals, as a run's details keep them
    (``pdcp``, JSON in its result and the store; ``PdcpSummary.of`` reads them back)."""

    model_config = ConfigDict(frozen=True)

    tx_pdus: dict[str, int] = {}  # PDUs sent per downlink leg
    rx: dict[str, int] = {}  # the receiver's counters by name (dcemu.records.Rx); {} without one
    delivered_bytes: int | None = None
    rx_wait_us: RxWait | None = None
    legs: dict[str, LegTotals] = {}

    @classmethod
    def of(cls, stored: object) -> PdcpSummary | None:
        """A run's stored ``pdcp`` detail; None where it kept none (or an empty one)."""
        return cls.model_validate(stored) if stored else None


def pdcp_summary(records: Sequence[Stats], bearer: str) -> PdcpSummary | None:
    """The final PDCP counters and link totals of one bearer, from the summary record
    (None without one)."""
    summary = next((r for r in reversed(records) if r.type == "summary"), None)
    if summary is None:
        return None
    legs = {leg.name: LegTotals.model_validate(leg.downlink.model_dump(include=set(LegTotals.model_fields)))
            for leg in summary.legs}
    b = summary.bearer(bearer)
    if b is None:
        return PdcpSummary(legs=legs)
    if b.rx is None:
        return PdcpSummary(tx_pdus=dict(b.tx_pdus), delivered_bytes=b.delivered_bytes, legs=legs)
    return PdcpSummary(tx_pdus=dict(b.tx_pdus), rx=b.rx.model_dump(exclude={"wait"}), delivered_bytes=b.delivered_bytes,
                       rx_wait_us=RxWait.model_validate(b.rx.wait.model_dump(include=set(RxWait.model_fields))),
                       legs=legs)


def quantile(sorted_vals: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of sorted values, linear interpolation between the two
    closest ranks (numpy's default, "linear")."""
    pos = (len(sorted_vals) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


class Distribution(BaseModel):
    """``distribution``'s summary of some values."""

    model_config = ConfigDict(frozen=True)

    n: int
    median: float | None = None
    p95: float | None = None
    mean: float | None = None
    cov: float | None = None


def distribution(values: Iterable[float | None]) -> Distribution:
    """n, median, p95 (linear interpolation, as numpy), mean and coefficient of variation
    (cov: *sample* standard deviation / mean; None for fewer than two values or a zero mean)
    of the values; None and NaN skipped. With no values all but n are None."""
    vals = sorted(float(v) for v in values if v is not None and not math.isnan(v))
    if not vals:
        return Distribution(n=0)
    mean = statistics.fmean(vals)
    cov = statistics.stdev(vals) / mean if len(vals) > 1 and mean != 0 else None
    return Distribution(n=len(vals), median=quantile(vals, 0.5), p95=quantile(vals, 0.95), mean=mean, cov=cov)
