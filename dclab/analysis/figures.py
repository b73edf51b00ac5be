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

A row is a dict with ``run_key``, ``stack``, ``cc``, ``host_config``, ``value``,
``value_num``, ``ok``, ``metrics`` (a dict) and ``flows`` (a list of dicts with ``name``,
``mean_mbps``, ``goodput_mbps``). Every function writes a figure even when there is
nothing to show (it then says why), so a report of a half-finished or failed campaign
still builds.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only; no display
import matplotlib.pyplot as plt  # noqa: E402

from .. import radio  # noqa: E402
from ..dcemu.records import Stats, StatsRecords, stats_file  # noqa: E402
from . import cell, diagnosis, run_figure, split_bearer  # noqa: E402
from .diagnosis import Diagnosis  # noqa: E402
from .figure_info import save_figure  # noqa: E402
from .metrics import bearer_series, jain, mean_std  # noqa: E402
from .plots import Span  # noqa: E402
from .run_events import RunFacts, Timeline, read_timeline  # noqa: E402
from .stand_in import row_stack, stand_in_of  # noqa: E402

Row = dict[str, Any]


def _number(v: object) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not math.isnan(v) else None


def metric_of(r: Row, name: str) -> float | None:
    return _number((r.get("metrics") or {}).get(name))


def flow_value(r: Row, flow: str) -> float | None:
    """A flow's throughput in a run: at its bearer when measured there, else its goodput."""
    for f in r.get("flows") or []:
        if f.get("name") == flow:
            v = _number(f.get("mean_mbps"))
            return v if v is not None else _number(f.get("goodput_mbps"))
    return None


def _x_scale(rows: list[Row]) -> float:
    """File sizes may be stored in bytes; the axis is in MB."""
    if rows and (rows[0].get("param") or rows[0].get("sweep")) == "size":
        nums = [r["value_num"] for r in rows if r.get("value_num") is not None]
        if nums and max(nums) >= 1e5:
            return 1e-6
    return 1.0


# ---------------------------------------------------------------------------------------
# Grouping and the numbers behind the figures

def _differing(rows: list[dict], part: str) -> list[str]:
    """Keys of ``part`` ("options" or "scenario") in which two rows at the same swept value
    differ: what a campaign's groups set apart (e.g. --streams, --link), not the sweep."""
    at: dict[tuple, list[dict]] = {}
    for r in rows:
        at.setdefault((r.get("value_num"), r.get("value")), []).append(r.get(part) or {})
    keys = sorted({k for r in rows for k in (r.get(part) or {})} - {"stack", "cc", "udp_buffer", "stand_in", "backend"})
    return [k for k in keys if any(len({repr(d.get(k)) for d in ds}) > 1 for ds in at.values())]


def series_of(rows: list[dict]) -> dict[str, str]:
    """Series label per run key: the host configuration when all rows share one stack and
    congestion control and none ran on a stand-in model, else 'stack cc host_config' (a
    stand-in's stack as ``stand_in.stack_label`` shows it); then any option or scenario
    field in which rows at the same swept value differ (a campaign's groups), as
    ``name=value``; a simulated run's label ends in "(simulated)", whether or not emulated
    runs share its figure. Rows that all carry a ``series`` of their own (an experiment's
    view of its runs) keep it."""
    if rows and all(isinstance(r.get("series"), str) for r in rows):
        return {r["run_key"]: r["series"] for r in rows}
    combos = {(row_stack(r), r.get("cc")) for r in rows}
    plain = len(combos) <= 1 and not any(stand_in_of(r) for r in rows)
    keys = [("options", k) for k in _differing(rows, "options")] + [("scenario", k) for k in _differing(rows, "scenario")]

    def label(r: dict) -> str:
        base = r.get("host_config") or "-" if plain else f"{row_stack(r)} {r.get('cc')} {r.get('host_config')}"
        extra = [f"{k}={_short((r.get(part) or {}).get(k))}" for part, k in keys]
        simulated = ["(simulated)"] if (r.get("options") or {}).get("backend") == "sim" else []
        return " ".join([base, *extra, *simulated])

    return {r["run_key"]: label(r) for r in rows}


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


def values_of(rows: list[dict]) -> list[tuple[float | None, str]]:
    """Distinct (value_num, value) pairs, sorted by number (non-numeric last, by text in
    natural order)."""
    seen = {(r.get("value_num"), r.get("value") or "") for r in rows}
    return sorted(seen, key=lambda v: _value_key(*v))


def _finite(x: object) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def _groups(rows: list[dict]) -> dict[tuple, list[dict]]:
    """Rows by (value as number, value as text, series label)."""
    labels = series_of(rows)
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r.get("value_num"), r.get("value") or "", labels[r["run_key"]]), []).append(r)
    return groups


def _by_value(table: list[dict]) -> list[dict]:
    table.sort(key=lambda d: (*_value_key(d["value_num"], d["value"] or ""), d["series"]))
    return table


def metric_table(rows: list[Row], metric: str) -> list[dict[str, Any]]:
    """Per parameter value and series: the metric's mean, std and n over successful runs,
    and the number of failed runs. Sorted by value, then series."""
    out = []
    for (num, text, series), rs in _groups(rows).items():
        ok = [r for r in rs if r.get("ok") and metric_of(r, metric) is not None]
        ms = mean_std([metric_of(r, metric) for r in ok])
        out.append({"value_num": num, "value": text, "series": series, "mean": ms["mean"], "std": ms["std"],
                    "n": ms["n"], "failed": len(rs) - len(ok)})
    return _by_value(out)


# The PDCP receiver's stall statistics of a run (metrics "pdcp", analysis.metrics.pdcp_summary):
# name -> (column, reader). Waits are dcemu's per-delivery histogram, in microseconds.
PDCP_STALLS: dict[str, tuple[str, Any]] = {
    "expiries": ("t-Reordering expiries", lambda p: (p.get("rx") or {}).get("timer_expiries")),
    "given_up": ("COUNTs given up", lambda p: (p.get("rx") or {}).get("counts_given_up")),
    "lost": ("lost on the legs", lambda p: sum(leg.get("dropped_loss_packets", 0) for leg in (p.get("legs") or {}).values())),
    "wait_mean_ms": ("wait mean (ms)", lambda p: _us_to_ms((p.get("rx_wait_us") or {}).get("mean_us"))),
    "wait_p99_ms": ("wait p99 (ms)", lambda p: _us_to_ms((p.get("rx_wait_us") or {}).get("p99_us"))),
    "wait_max_ms": ("wait max (ms)", lambda p: _us_to_ms((p.get("rx_wait_us") or {}).get("max_us"))),
}


def _us_to_ms(us: object) -> float | None:
    v = _number(us)
    return None if v is None else v / 1e3


def pdcp_stalls_vs_param(rows: list[Row], key: str, path: Path, title: str, xlabel: str) -> Path | None:
    """One of the PDCP receiver's stall statistics (a key of PDCP_STALLS) against the
    swept value, per series; None where no run kept its receiver's counters."""
    label, read = PDCP_STALLS[key]
    with_stalls = [{**r, "metrics": {**(r.get("metrics") or {}), f"pdcp_{key}": read(_pdcp_of(r))}}
                   for r in rows if _pdcp_of(r).get("rx")]
    if not with_stalls:
        return None
    return metric_vs_param(with_stalls, f"pdcp_{key}", label, path, title, xlabel)


def _pdcp_of(r: Row) -> dict[str, Any]:
    """A stored run's PDCP summary (``metrics.pdcp``), {} without one."""
    p = (r.get("metrics") or {}).get("pdcp")
    return p if isinstance(p, dict) else {}


def pdcp_stall_table(rows: list[Row]) -> list[dict[str, Any]]:
    """Per parameter value and series, over the successful runs that kept PDCP receiver
    statistics: the mean per run of each of PDCP_STALLS, and n. Empty when no run has them
    (reordering off: the receiver is bypassed)."""
    out = []
    for (num, text, series), rs in _groups(rows).items():
        pdcps = [p for r in rs if r.get("ok") and (p := (r.get("metrics") or {}).get("pdcp")) and p.get("rx")]
        if not pdcps:
            continue
        d: dict[str, Any] = {"value_num": num, "value": text, "series": series, "n": len(pdcps)}
        for name, (_, read) in PDCP_STALLS.items():
            d[name] = mean_std([_number(read(p)) for p in pdcps])["mean"]
        out.append(d)
    return _by_value(out)


def _row_annotation(r: Row, annotate: str, flows: list[str]) -> float | None:
    v = metric_of(r, annotate)
    if v is not None or annotate != "jfi":
        return v
    return jain([x for x in (flow_value(r, f) for f in flows) if x is not None])


def flow_table(rows: list[Row], flows: list[str], annotate: str | None = None,
               more: Iterable[str] = ()) -> list[dict[str, Any]]:
    """Per parameter value and series: mean and std of each flow's throughput, the mean of
    the runs' ``annotate`` metric and of each metric in ``more`` (None where no run has
    it), n successful and failed runs."""
    out = []
    for (num, text, series), rs in _groups(rows).items():
        ok = [r for r in rs if r.get("ok")]
        d: dict[str, Any] = {"value_num": num, "value": text, "series": series, "n": len(ok), "failed": len(rs) - len(ok)}
        for name in flows:
            ms = mean_std([flow_value(r, name) for r in ok])
            d[name] = {"mean": ms["mean"], "std": ms["std"]}
        d[annotate or ""] = mean_std([_row_annotation(r, annotate, flows) for r in ok])["mean"] if annotate else None
        for name in more:
            d[name] = mean_std([metric_of(r, name) for r in ok])["mean"]
        out.append(d)
    return _by_value(out)


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


def _default_title(rows: list[dict], what: str) -> str:
    if not rows:
        return what
    sweeps = sorted({r.get("sweep") or "" for r in rows})
    return f"{what}: {', '.join(s for s in sweeps if s) or 'runs'}"


def metric_vs_param(rows: list[Row], metric: str, ylabel: str, path: Path, title: str | None = None,
                    xlabel: str = "value") -> Path:
    """Mean of ``metric`` (std error bars, successful runs only) against the swept value,
    one line per series (host configuration, or stack, cc and host configuration)."""
    title = title or _default_title(rows, metric)
    table = [d for d in metric_table(rows, metric) if d["mean"] is not None]
    if not table:
        return empty_figure(path, title)
    numeric = all(d["value_num"] is not None for d in table)
    scale = _x_scale(rows)
    cats = values_of(rows)
    fig, ax = plt.subplots(figsize=(8, 4.2))
    names = sorted({d["series"] for d in table})
    if numeric:
        all_x = [d["value_num"] * scale for d in table]
        step = (max(all_x) - min(all_x)) * 0.008 or 0.05
    else:
        step = 0.06
    for i, series in enumerate(names):
        pts = [d for d in table if d["series"] == series]
        if numeric:
            xs = [d["value_num"] * scale for d in pts]
        else:
            xs = [cats.index((d["value_num"], d["value"])) for d in pts]
        # Series sharing an x are drawn slightly apart so their error bars stay readable.
        dx = (i - (len(names) - 1) / 2) * step
        # Categories (not numbers) are not joined: nothing lies between them.
        ax.errorbar([x + dx for x in xs], [d["mean"] for d in pts], yerr=[d["std"] for d in pts], marker="o",
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


def flow_bars(rows: list[Row], flows: list[str], path: Path, title: str | None = None, xlabel: str = "value",
              labels: dict[str, str] | None = None, annotate: str | None = None,
              more: dict[str, str] | None = None) -> Path:
    """Grouped bars per swept value: each flow's mean throughput (std error bars), with the
    mean of the ``annotate`` metric (e.g. Jain's index) above each group, and below it the
    mean of each metric of ``more`` (metric name -> label) that the group has; one panel
    per series."""
    labels = labels or {}
    more = more or {}
    title = title or _default_title(rows, "flows")
    table = [d for d in flow_table(rows, flows, annotate, more) if d["n"] > 0]
    if not table:
        return empty_figure(path, title)
    series = sorted({d["series"] for d in table})
    cats = values_of([r for r in rows if r.get("ok")])
    width = 0.8 / max(len(flows), 1)
    fig, axes = plt.subplots(len(series), 1, figsize=(max(8, 0.75 * len(cats) + 3), 3.3 * len(series) + 0.6),
                             squeeze=False, sharey=True)
    top = max((d[f]["mean"] or 0) + (d[f]["std"] or 0) for d in table for f in flows) or 1.0
    for ax, s in zip(axes[:, 0], series, strict=True):
        pts = {(d["value_num"], d["value"]): d for d in table if d["series"] == s}
        for j, flow in enumerate(flows):
            xs, ys, es = [], [], []
            for i, c in enumerate(cats):
                d = pts.get(c)
                if d and d[flow]["mean"] is not None:
                    xs.append(i + (j - (len(flows) - 1) / 2) * width)
                    ys.append(d[flow]["mean"])
                    es.append(d[flow]["std"])
            ax.bar(xs, ys, width, yerr=es, capsize=2, label=labels.get(flow, flow), color=COLORS[j % len(COLORS)],
                   error_kw={"linewidth": 0.8})
        if annotate:
            for i, c in enumerate(cats):
                d = pts.get(c)
                if d and d[annotate] is not None:
                    h = max((d[f]["mean"] or 0) + (d[f]["std"] or 0) for f in flows)
                    name = "JFI" if annotate == "jfi" else annotate
                    extra = "".join(f"\n{label} {d[m]:.2f}" for m, label in more.items() if d.get(m) is not None)
                    ax.text(i, h + 0.03 * top, f"{name} {d[annotate]:.2f}{extra}", ha="center", va="bottom",
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


def shows_split(scenario: dict) -> bool:
    """Whether a stored scenario's runs are drawn as a split bearer's (``split_usage``):
    EN-DC, a flow-controlled split, or secondary node events."""
    return (scenario.get("split_policy") or "static") != "static" or bool(scenario.get("sn_events")) \
        or str(scenario.get("link") or "").startswith("endc:")


def split_usage(run_dir: Path, t0_ms: float, capacities: list[float | None], path: Path, title: str,
                bearer: str = "dc") -> Path:
    """The split bearer's figure over the whole run (``split_bearer.split_figure``)."""
    s = split_bearer.split_series(read_stats(run_dir), bearer, t0_ms or 0.0)
    if not s.t:
        return empty_figure(path, title, f"no dcemu statistics of bearer {bearer} for this run")
    return split_bearer.split_figure(s, capacities, Path(path), title)


def capacities_of(scenario: dict) -> list[float | None]:
    """Configured downlink rate per leg of a stored scenario (None for trace-driven legs;
    a cell's level: its mean capacity for one device, dclab/radio.py)."""
    if scenario.get("link"):
        return list(radio.parse_link(scenario["link"]).capacities)
    bw = list(scenario.get("bw") or [])
    return [None] * len(bw) if scenario.get("trace") or scenario.get("traces") else [float(x) for x in bw]
