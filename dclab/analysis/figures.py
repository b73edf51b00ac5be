"""Figures and the tables behind them, from stored runs (store rows, or a repetition's
record of the same shape) and run directories (matplotlib, PNG files). Generic: the
experiment says which metric and which flows; nothing here knows an experiment.

- ``metric_vs_param``: mean of a metric against the swept parameter, one line per series;
- ``flow_bars``: each flow's mean throughput per parameter value, grouped, with an
  annotation metric (Jain's index) and optionally further metrics (e.g. a throughput
  ratio) above each group;
- ``flows_over_time``: per-flow (bearer) throughput over time of one run, optionally with
  a warm-up left out of the measurement shaded; over an LTE cell, three panels more: each
  device's rate out of the cell, share of resource blocks and queue (``cell.py``);
- ``link_usage``: per-leg downlink throughput of one run over the whole transfer, with the
  events that explain its shape and the first seconds (``run_figure.py``).

A row is a ``StoredRun`` (``stored_run.py``); the tables behind the figures are
``MetricRow``, ``FlowRow`` and ``StallRow``, each at a ``Point`` (swept value and
series). Every function writes a figure even when there is
nothing to show (it then says why), so a report of a half-finished or failed campaign
still builds.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only; no display
import matplotlib.pyplot as plt  # noqa: E402

from ..dcemu.records import Stats, StatsRecords, stats_file  # noqa: E402
from ..files import JsonObject  # noqa: E402
from ..scenario import Scenario  # noqa: E402
from . import cell, diagnosis, run_figure, split_bearer  # noqa: E402
from .diagnosis import Diagnosis  # noqa: E402
from .figure_info import save_figure  # noqa: E402
from .metrics import MeanStd, PdcpSummary, bearer_series, jain, mean_std  # noqa: E402
from .plots import Span  # noqa: E402
from .run_events import RunFacts, Timeline, read_timeline  # noqa: E402
from .stored_run import StoredRun  # noqa: E402

Run = StoredRun[Any]


def _x_scale(rows: Sequence[Run]) -> float:
    """File sizes may be stored in bytes; the axis is in MB."""
    if rows and (rows[0].param or rows[0].sweep) == "size":
        nums = [r.value_num for r in rows if r.value_num is not None]
        if nums and max(nums) >= 1e5:
            return 1e-6
    return 1.0


# ---------------------------------------------------------------------------------------
# Grouping and the numbers behind the figures

Value = tuple[float | None, str]  # a swept value: as a number (None: not one) and as written


def _differing(rows: Sequence[Run], parts: Sequence[JsonObject]) -> list[str]:
    """Keys of ``parts`` (each row's options or scenario, as JSON) in which two rows at the
    same swept value differ: what a campaign's groups set apart (e.g. --streams, --link),
    not the sweep."""
    at: dict[Value, list[JsonObject]] = {}
    for r, d in zip(rows, parts, strict=True):
        at.setdefault((r.value_num, r.value), []).append(d)
    keys = sorted({k for ds in at.values() for d in ds for k in d} - {"stack", "cc", "udp_buffer", "stand_in", "backend"})
    return [k for k in keys if any(len({repr(d.get(k)) for d in ds}) > 1 for ds in at.values())]


def series_of(rows: Sequence[Run]) -> dict[str, str]:
    """Series label per run key: the host configuration when all rows share one stack and
    congestion control and none ran on a stand-in model, else 'stack cc host_config' (a
    stand-in's stack as ``stand_in.stack_label`` shows it); then any option or scenario
    field in which rows at the same swept value differ (a campaign's groups), as
    ``name=value``; a simulated run's label ends in "(simulated)", whether or not emulated
    runs share its figure. Rows that all carry a ``series`` of their own (an experiment's
    view of its runs) keep it."""
    if rows and all(r.series is not None for r in rows):
        return {r.run_key: r.series or "" for r in rows}
    combos = {(r.stack_shown, r.cc) for r in rows}
    plain = len(combos) <= 1 and not any(r.stand_in for r in rows)
    options = [r.options_json() for r in rows]  # each dumped once, not per key and row
    scenarios = [r.scenario_json() for r in rows]
    keys = [(0, k) for k in _differing(rows, options)] + [(1, k) for k in _differing(rows, scenarios)]

    def label(r: Run, parts: tuple[JsonObject, JsonObject]) -> str:
        base = r.host_config or "-" if plain else f"{r.stack_shown} {r.cc} {r.host_config}"
        extra = [f"{k}={_short(parts[part].get(k))}" for part, k in keys]
        simulated = ["(simulated)"] if r.simulated else []
        return " ".join([base, *extra, *simulated])

    return {r.run_key: label(r, parts) for r, parts in zip(rows, zip(options, scenarios, strict=True), strict=True)}


def _short(v: object) -> str:
    if isinstance(v, list):
        return ":".join(f"{x:g}" if isinstance(x, float) else str(x) for x in v)
    return f"{v:g}" if isinstance(v, float) else str(v)


def _natural(text: str) -> tuple[tuple[int, float | str], ...]:
    """Text in natural order: its numbers by value ("250 a" before "1500 a")."""
    parts = re.split(r"(\d+(?:\.\d+)?)", text)
    return tuple((0, float(p)) if i % 2 else (1, p) for i, p in enumerate(parts) if p)


def _value_key(num: float | None, text: str) -> tuple[bool, float, tuple[tuple[int, float | str], ...]]:
    return num is None, num if num is not None else 0.0, _natural(text)


def values_of(rows: Iterable[Run]) -> list[Value]:
    """Distinct (value_num, value) pairs, sorted by number (non-numeric last, by text in
    natural order)."""
    seen = {(r.value_num, r.value) for r in rows}
    return sorted(seen, key=lambda v: _value_key(*v))


@dataclass(frozen=True)
class Point:
    """Where a row of a sweep's table sits: the swept value and the series."""

    value_num: float | None
    value: str
    series: str

    def key(self) -> tuple[bool, float, tuple[tuple[int, float | str], ...], str]:
        return (*_value_key(self.value_num, self.value), self.series)


def _groups(rows: Sequence[Run]) -> dict[Point, list[Run]]:
    """Rows by swept value and series label."""
    labels = series_of(rows)
    groups: dict[Point, list[Run]] = {}
    for r in rows:
        groups.setdefault(Point(r.value_num, r.value, labels[r.run_key]), []).append(r)
    return groups


@dataclass(frozen=True)
class MetricRow:
    """A metric at one point: mean and std over the successful runs that have it, their
    number, and the number of the others (failed, or without it)."""

    at: Point
    mean: float | None
    std: float | None
    n: int
    failed: int


def metric_table(rows: Sequence[Run], metric: str) -> list[MetricRow]:
    """Per parameter value and series: the metric's mean, std and n over successful runs,
    and the number of failed runs. Sorted by value, then series."""
    out = []
    for at, rs in _groups(rows).items():
        ok = [r for r in rs if r.ok and r.metric(metric) is not None]
        ms = mean_std([r.metric(metric) for r in ok])
        out.append(MetricRow(at, ms.mean, ms.std, ms.n, len(rs) - len(ok)))
    return sorted(out, key=lambda d: d.at.key())


# The PDCP receiver's stall statistics of a run (metrics "pdcp", analysis.metrics.pdcp_summary):
# name -> (column, reader). Waits are dcemu's per-delivery histogram, in microseconds.
PDCP_STALLS: dict[str, tuple[str, Callable[[PdcpSummary], float | None]]] = {
    "expiries": ("t-Reordering expiries", lambda p: p.rx.get("timer_expiries")),
    "given_up": ("COUNTs given up", lambda p: p.rx.get("counts_given_up")),
    "lost": ("lost on the legs", lambda p: sum(leg.dropped_loss_packets for leg in p.legs.values())),
    "wait_mean_ms": ("wait mean (ms)", lambda p: p.rx_wait_us.mean_us / 1e3 if p.rx_wait_us else None),
    "wait_p99_ms": ("wait p99 (ms)", lambda p: p.rx_wait_us.p99_us / 1e3 if p.rx_wait_us else None),
    "wait_max_ms": ("wait max (ms)", lambda p: p.rx_wait_us.max_us / 1e3 if p.rx_wait_us else None),
}


def pdcp_stalls_vs_param(rows: Sequence[Run], key: str, path: Path, title: str, xlabel: str) -> Path | None:
    """One of the PDCP receiver's stall statistics (a key of PDCP_STALLS) against the
    swept value, per series; None where no run kept its receiver's counters."""
    label, read = PDCP_STALLS[key]
    with_stalls = [r.model_copy(update={"metrics": {**r.metrics, f"pdcp_{key}": read(p)}})
                   for r in rows if (p := r.pdcp) is not None and p.rx]
    if not with_stalls:
        return None
    return metric_vs_param(with_stalls, f"pdcp_{key}", label, path, title, xlabel)


@dataclass(frozen=True)
class StallRow:
    """The PDCP receiver's stall statistics at one point: the mean per run of each of
    PDCP_STALLS (by its key), over ``n`` successful runs that kept them."""

    at: Point
    n: int
    means: dict[str, float | None]


def pdcp_stall_table(rows: Sequence[Run]) -> list[StallRow]:
    """Per parameter value and series, over the successful runs that kept PDCP receiver
    statistics: the mean per run of each of PDCP_STALLS, and n. Empty when no run has them
    (reordering off: the receiver is bypassed)."""
    out = []
    for at, rs in _groups(rows).items():
        pdcps = [p for r in rs if r.ok and (p := r.pdcp) is not None and p.rx]
        if pdcps:
            out.append(StallRow(at, len(pdcps), {name: mean_std([read(p) for p in pdcps]).mean
                                                 for name, (_, read) in PDCP_STALLS.items()}))
    return sorted(out, key=lambda d: d.at.key())


def _row_annotation(r: Run, annotate: str, flows: list[str]) -> float | None:
    v = r.metric(annotate)
    if v is not None or annotate != "jfi":
        return v
    return jain([x for x in (r.flow_mbps(f) for f in flows) if x is not None])


@dataclass(frozen=True)
class FlowRow:
    """Each flow's throughput at one point (mean, std over the successful runs), the mean
    of an annotation metric and of further metrics, and the runs: successful, failed."""

    at: Point
    n: int
    failed: int
    flows: dict[str, MeanStd]
    annotation: float | None
    more: dict[str, float | None]


def flow_table(rows: Sequence[Run], flows: list[str], annotate: str | None = None,
               more: Iterable[str] = ()) -> list[FlowRow]:
    """Per parameter value and series: mean and std of each flow's throughput, the mean of
    the runs' ``annotate`` metric and of each metric in ``more`` (None where no run has
    it), n successful and failed runs."""
    out = []
    for at, rs in _groups(rows).items():
        ok = [r for r in rs if r.ok]
        per = {}
        for name in flows:
            per[name] = mean_std([r.flow_mbps(name) for r in ok])
        annotation = mean_std([_row_annotation(r, annotate, flows) for r in ok]).mean if annotate else None
        out.append(FlowRow(at, len(ok), len(rs) - len(ok), per, annotation,
                           {name: mean_std([r.metric(name) for r in ok]).mean for name in more}))
    return sorted(out, key=lambda d: d.at.key())


# ---------------------------------------------------------------------------------------
# Figures

def _save(fig, path: Path) -> Path:
    return save_figure(fig, path)


def empty_figure(path: Path, title: str | None, message: str = "no successful runs") -> Path:
    """A figure that says why there is nothing to plot."""
    fig, ax = plt.subplots(figsize=(8, 3.6))
    ax.text(0.5, 0.5, message, ha="center", va="center", fontsize=14, color="0.35", transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return _save(fig, path)


def _default_title(rows: Sequence[Run], what: str) -> str:
    if not rows:
        return what
    sweeps = sorted({r.sweep for r in rows})
    return f"{what}: {', '.join(s for s in sweeps if s) or 'runs'}"


def metric_vs_param(rows: Sequence[Run], metric: str, ylabel: str, path: Path, title: str | None = None,
                    xlabel: str = "value") -> Path:
    """Mean of ``metric`` (std error bars, successful runs only) against the swept value,
    one line per series (host configuration, or stack, cc and host configuration)."""
    title = title or _default_title(rows, metric)
    table = [d for d in metric_table(rows, metric) if d.mean is not None]
    if not table:
        return empty_figure(path, title)
    nums = [d.at.value_num for d in table]
    numeric = all(x is not None for x in nums)
    scale = _x_scale(rows)
    cats = values_of(rows)
    fig, ax = plt.subplots(figsize=(8, 4.2))
    names = sorted({d.at.series for d in table})
    if numeric:
        all_x = [(x or 0.0) * scale for x in nums]
        step = (max(all_x) - min(all_x)) * 0.008 or 0.05
    else:
        step = 0.06
    for i, series in enumerate(names):
        pts = [d for d in table if d.at.series == series]
        if numeric:
            xs = [(d.at.value_num or 0.0) * scale for d in pts]
        else:
            xs = [cats.index((d.at.value_num, d.at.value)) for d in pts]
        # Series sharing an x are drawn slightly apart so their error bars stay readable.
        dx = (i - (len(names) - 1) / 2) * step
        # Categories (not numbers) are not joined: nothing lies between them.
        ax.errorbar([x + dx for x in xs], [d.mean or 0.0 for d in pts], yerr=[d.std or 0.0 for d in pts], marker="o",
                    markersize=4, capsize=3, linewidth=1.3 if numeric else 0, elinewidth=1.0, label=series)
    if not numeric:
        ax.set_xticks(range(len(cats)), [c[1] for c in cats], rotation=30 if len(cats) > 8 else 0)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    return _save(fig, path)


COLORS = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink", "tab:gray"]


def flow_bars(rows: Sequence[Run], flows: list[str], path: Path, title: str | None = None, xlabel: str = "value",
              labels: dict[str, str] | None = None, annotate: str | None = None,
              more: dict[str, str] | None = None) -> Path:
    """Grouped bars per swept value: each flow's mean throughput (std error bars), with the
    mean of the ``annotate`` metric (e.g. Jain's index) above each group, and below it the
    mean of each metric of ``more`` (metric name -> label) that the group has; one panel
    per series."""
    labels = labels or {}
    more = more or {}
    title = title or _default_title(rows, "flows")
    table = [d for d in flow_table(rows, flows, annotate, more) if d.n > 0]
    if not table:
        return empty_figure(path, title)
    series = sorted({d.at.series for d in table})
    cats = values_of(r for r in rows if r.ok)
    width = 0.8 / max(len(flows), 1)
    fig, axes = plt.subplots(len(series), 1, figsize=(max(8, 0.75 * len(cats) + 3), 3.3 * len(series) + 0.6),
                             squeeze=False, sharey=True)
    top = max((d.flows[f].mean or 0) + (d.flows[f].std or 0) for d in table for f in flows) or 1.0
    for ax, s in zip(axes[:, 0], series, strict=True):
        pts = {(d.at.value_num, d.at.value): d for d in table if d.at.series == s}
        for j, flow in enumerate(flows):
            xs, ys, es = [], [], []
            for i, c in enumerate(cats):
                d = pts.get(c)
                if d and d.flows[flow].mean is not None:
                    xs.append(i + (j - (len(flows) - 1) / 2) * width)
                    ys.append(d.flows[flow].mean)
                    es.append(d.flows[flow].std)
            ax.bar(xs, ys, width, yerr=es, capsize=2, label=labels.get(flow, flow), color=COLORS[j % len(COLORS)],
                   error_kw={"linewidth": 0.8})
        if annotate:
            for i, c in enumerate(cats):
                d = pts.get(c)
                if d and d.annotation is not None:
                    h = max((d.flows[f].mean or 0) + (d.flows[f].std or 0) for f in flows)
                    name = "JFI" if annotate == "jfi" else annotate
                    extra = "".join(f"\n{label} {v:.2f}" for m, label in more.items() if (v := d.more.get(m)) is not None)
                    ax.text(i, h + 0.03 * top, f"{name} {d.annotation:.2f}{extra}", ha="center", va="bottom",
                            fontsize=7)
        ax.set_xticks(range(len(cats)), [c[1] or "-" for c in cats], rotation=30 if len(cats) > 10 else 0)
        ax.set_ylim(0, top * (1.2 + 0.1 * len(more)))
        ax.set_ylabel("throughput (Mbit/s)")
        ax.set_title(s, fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    axes[0, 0].legend(fontsize=8 if len(flows) <= 8 else 6, loc="upper right", ncol=min(len(flows), 4))
    axes[-1, 0].set_xlabel(xlabel)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return _save(fig, path)


# Records a figure reads at most (about twice this): a 10 ms record for over half an hour.
# A longer run is thinned as it is read (records.py, _lines), so a run of gigabytes, or a
# small gzip from elsewhere that expands to gigabytes, is drawn in bounded memory.
FIGURE_RECORDS = 200_000


def read_stats(run_dir: Path) -> Sequence[Stats]:
    """The dcemu records of a run (``dcemu-stats.jsonl``, or ``.jsonl.gz`` from a
    simulation, its own last line left out), thinned past FIGURE_RECORDS; a torn last line
    is skipped."""
    path = stats_file(Path(run_dir))
    return StatsRecords.of_file(path, drop_last_of_type="sim", most=FIGURE_RECORDS) if path else []


def _rebin(pts: Iterable[tuple[float, float]], bin_s: float) -> list[tuple[float, float]]:
    """Means over bins of ``bin_s`` seconds, placed at each bin's centre."""
    bins: dict[int, list[float]] = {}
    for t, v in pts:
        bins.setdefault(math.floor(t / bin_s), []).append(v)
    return [((k + 0.5) * bin_s, sum(vs) / len(vs)) for k, vs in sorted(bins.items())]


def flows_over_time(run_dir: Path, t0_ms: float, path: Path, window_s: float | None = None,
                    title: str | None = None, bin_s: float | None = None, labels: dict[str, str] | None = None,
                    warmup_s: float | None = None) -> Path:
    """Per-flow (bearer) delivered throughput over time of one run, from ``t0_ms`` (the
    start of the clients) for ``window_s`` seconds. Long windows are shown as means over
    ``bin_s`` bins (default: about 200 bins). A ``warmup_s`` left out of the measurement
    is shaded, so the measured window [warmup, window] stands out."""
    title = title or f"per-flow throughput: {Path(run_dir).name}"
    records = read_stats(run_dir)
    series = bearer_series(records, t0_ms or 0.0)
    if window_s:
        series = {k: [(t, v) for t, v in pts if 0 <= t <= window_s] for k, pts in series.items()}
    else:
        series = {k: [(t, v) for t, v in pts if t >= 0] for k, pts in series.items()}
    series = {k: pts for k, pts in series.items() if pts}
    if not series:
        return empty_figure(path, title, "no dcemu statistics for this run")
    span = window_s or max(t for pts in series.values() for t, _ in pts)
    if bin_s is None and span > 20:
        bin_s = max(0.1, round(span / 200, 1))
    if bin_s:
        series = {k: _rebin(pts, bin_s) for k, pts in series.items()}
    labels = labels or {}
    order = [b for b in labels if b in series] + sorted(b for b in series if b not in labels)
    devices = cell.cell_series(records, t0_ms or 0.0) if cell.has_cell(records) else {}
    if devices:  # a cell below: what its scheduler gave each device, and each device's queue
        fig, axes = plt.subplots(4, 1, figsize=(8, 8.4), sharex=True, height_ratios=[1.6, 1, 1, 1])
        ax = axes[0]
        cell.cell_panels(list(axes[1:]), devices, [b for b in order if b in devices], span)
        axes[1].set_title("the cell, per device (bearer)", fontsize=9)
    else:
        fig, ax = plt.subplots(figsize=(8, 3.6))
    for b in order:
        pts = series[b]
        ax.plot([t for t, _ in pts], [v for _, v in pts], linewidth=1.1, label=labels.get(b, b))
    peak = max((v for pts in series.values() for _, v in pts), default=0.0) or 1.0
    if warmup_s:
        ax.axvspan(0, warmup_s, color="0.85", alpha=0.6, linewidth=0, label=f"warm-up ({warmup_s:g} s, not measured)")
    ax.set_xlim(0, span)
    ax.set_ylim(0, peak * (1.25 if len(order) <= 4 else 1.45))  # room for the legend above the lines
    xlabel = "time since start (s)" + (f", {bin_s:g} s means" if bin_s else "")
    (axes[-1] if devices else ax).set_xlabel(xlabel + (" (cell panels: each record)" if devices and bin_s else ""))
    ax.set_ylabel("flow throughput (Mbit/s)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8 if len(order) <= 8 else 6, loc="upper right", ncol=min(len(order) + bool(warmup_s), 4))
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return _save(fig, path)


def link_usage(run_dir: Path, t0_ms: float, capacities: list[float | None], path: Path,
               title: str | None = None, window_s: float | None = None, spans: tuple[Span, ...] = (),
               facts: RunFacts | None = None) -> Path:
    """Per-leg downlink throughput over the whole transfer (to ``facts.end_s``, else
    ``window_s``, else the last record), capacities dashed, ``spans`` shaded, with the
    events that explain its shape, the stalls the diagnosis found and the first seconds
    (``run_figure.run_figure``; docs/run-figure.md)."""
    title = title or f"link utilization: {Path(run_dir).name}"
    tl = run_timeline(run_dir, t0_ms, capacities, window_s, facts)
    if not any(0 <= t <= tl.end_s for t in tl.t):
        return empty_figure(path, title, "no dcemu statistics for this run")
    found = diagnosis.stalls(tl)
    dipped = diagnosis.dips(tl, found)
    spans = spans + tuple((a, b, f"{leg}'s scheduled outage") for a, b, leg in tl.outages)
    return run_figure.run_figure(tl, found, diagnosis.diagnose(tl, found=found, dipped=dipped), Path(path), title,
                                 spans, dips=dipped)


def run_timeline(run_dir: Path, t0_ms: float, capacities: Sequence[float | None], window_s: float | None = None,
                 facts: RunFacts | None = None) -> Timeline:
    """A run's timeline (``run_events.py``) from its directory and its record's facts
    (only ``t0_ms`` without them); ``window_s`` ends it where the record does not."""
    facts = facts or RunFacts(t0_ms=t0_ms or 0.0)
    if facts.end_s is None and window_s is not None:
        facts = replace(facts, end_s=window_s)
    return read_timeline(Path(run_dir), read_stats(run_dir), facts, capacities)


def run_diagnosis(run_dir: Path, facts: RunFacts, capacities: Sequence[float | None] = ()) -> Diagnosis | None:
    """The diagnosis of one run (``diagnosis.diagnose``), None without one or without records."""
    tl = run_timeline(run_dir, facts.t0_ms, capacities, None, facts)
    return diagnosis.diagnose(tl) if tl.t else None


def shows_split(scenario: Scenario) -> bool:
    """Whether a scenario's runs are drawn as a split bearer's (``split_usage``): EN-DC, a
    flow-controlled split, or secondary node events."""
    return scenario.split_policy != "static" or bool(scenario.sn_events) \
        or (scenario.link is not None and scenario.link.kind == "endc")


def split_usage(run_dir: Path, t0_ms: float, capacities: list[float | None], path: Path, title: str,
                bearer: str = "dc") -> Path:
    """The split bearer's figure over the whole run (``split_bearer.split_figure``)."""
    s = split_bearer.split_series(read_stats(run_dir), bearer, t0_ms or 0.0)
    if not s.t:
        return empty_figure(path, title, f"no dcemu statistics of bearer {bearer} for this run")
    return split_bearer.split_figure(s, capacities, Path(path), title)


def capacities_of(scenario: Scenario) -> list[float | None]:
    """Configured downlink rate per leg of a scenario (None for trace-driven legs; a cell's
    level: its mean capacity for one device, dclab/radio.py)."""
    if scenario.link is not None:
        return list(scenario.link.capacities)
    bw = scenario.bw
    return [None] * len(bw) if scenario.trace or scenario.traces else [float(x) for x in bw]
