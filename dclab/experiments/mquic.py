"""The mQUIC experiment (docs/mquic-fidelity.md): short downloads over the study's LTE cell, each
file fetched in every mode (1c: one plain connection; 3c: N plain connections, one byte
range each; mquic: N coordinated connections; mquic-cwnd: cwnd-only synchronization).

One testbed serves every repetition (``one_testbed``): one aioquic server with the mQUIC
controllers, whose groups are named per download. A repetition fetches every size in
every mode, the modes in an order rotated by one each repetition (so that no mode always
follows another); every download is on pre-established connections (the handshake is
not timed) and its NFEs come from the server's log (``mquic.jsonl``, one group per
download: plain modes join as observers, ``sync=off``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, StrictBool, field_validator

from ..analysis import completion, cwnd, nfes
from ..analysis.completion import CompletionRow, CompletionSummary
from ..analysis.downloads import Download, MquicDownload, downloads_in
from ..analysis.figures import empty_figure
from ..analysis.stored_run import StoredRun
from ..endpoints.aioquic.hystart import EXITS, SlowStartExit
from ..endpoints.base import Workload
from ..errors import OptionError
from ..files import JsonObject, clip
from ..flowplan import Bearer, Flow, FlowPlan
from ..scenario import Scenario, build
from ..testbed import Bed
from ..testbed.rundir import write_json
from ..units import parse_sizes
from . import mquic_network as net
from .base import Experiment, Metric, Options, RepResult, Summary, Table, _fmt
from .mquic_downloads import (
    LOG,
    LogLine,
    counts_stalls,
    download_record,
    lines_of,
    pdcp_counters,
    pdcp_stalls,
    read_group,
)

MODES = ("1c", "3c", "mquic", "mquic-cwnd")
BASELINES = ["1c", "3c"]
PORT = 4433
STATS_INTERVAL_MS = 1000.0  # one testbed runs for minutes to hours; dcemu's stats are not used per download
DC_STATS_INTERVAL_MS = 100.0  # with DC, PDCP stalls are counted per download from dcemu's records
DOWNLOADS = "downloads.json"


class MquicOptions(Options):
    cc: Literal["reno", "cubic", "bbr"] = Field("reno", description="Congestion control (the mQUIC engine wraps it).")
    modes: str = Field("1c,3c,mquic", description="Modes, separated by commas: 1c, 3c, mquic, mquic-cwnd.")
    conns: int = Field(3, ge=2, le=16, description="Connections of the 3c and mquic modes (N).")
    sizes: str = Field("500KB,2400KB,6000KB", description="File sizes as in the paper, before scaling.")
    iw: int = Field(10, ge=1, le=1000, description="Initial window of one connection in packets (mquic: IW/N each).")
    preset: net.PresetName | Literal["none"] = Field(
        "domestic-low-loss", description="The paper's network (docs/mquic-fidelity.md); it sets the links (rate, delay, jitter, "
        "loss, queue, legs); none: the scenario options as given.",
        json_schema_extra={"choices": [*net.PRESETS, "none"]})
    radio: float = Field(net.RADIO_MBPS, gt=0, le=10_000,
                         description="The cell's rate before scaling, Mbit/s (the paper's 35.4, 65.9, 94.1).")
    scale: float = Field(0.25, gt=0, le=1, description="Factor on the cell's rate and the file sizes (aioquic's CPU limit).")
    params: Literal["aioquic", "paper"] = Field(
        "aioquic", description="mQUIC's beta/gamma0: the wrapped controller's real values, or the paper's 0.7/1.5.")
    ss_exit: SlowStartExit = Field(
        "aioquic", description="The delay-based slow-start exit of every mode's controllers: aioquic's RTT monitor, "
        "or hystart (Chromium's round-based HyStart; docs/mquic-implementation.md).", json_schema_extra={"choices": list(EXITS)})
    merge_rtt: StrictBool = Field(
        False, description="mquic: an NFE within one RTT of the NFE that began the group's network event is that "
        "same event (no second cut); not the paper's printed rule.")
    dc: StrictBool = Field(False, description="Our extension: the cell's rate over two DC legs, PDCP reordering on.")
    timeout: float = Field(60.0, ge=1, le=3600, description="Seconds one download may take.")

    @field_validator("modes")
    @classmethod
    def _modes(cls, v: str) -> str:
        items = [x.strip() for x in v.split(",")]
        bad = [x for x in items if x not in MODES]
        if bad or not items or len(set(items)) != len(items):
            raise ValueError(f"modes: a list of distinct modes from {', '.join(MODES)} (got {clip(v)})")
        return ",".join(items)

    @field_validator("sizes")
    @classmethod
    def _check_sizes(cls, v: str) -> str:
        parse_sizes(v)
        return v

    def mode_list(self) -> list[str]:
        return self.modes.split(",")

    def paper_sizes(self) -> tuple[int, ...]:
        return parse_sizes(self.sizes)

    def byte_sizes(self) -> tuple[int, ...]:
        """The sizes downloaded: the paper's, scaled."""
        return net.scaled_sizes(self.paper_sizes(), self.scale)


def workload(mode: str, size: int, group: str, o: MquicOptions) -> Workload:
    """One download in ``mode``: the connections, their byte ranges and the group header."""
    n = 1 if mode == "1c" else o.conns
    sync = {"1c": "off", "3c": "off", "mquic": "full", "mquic-cwnd": "cwnd"}[mode]
    cc_options = tuple({"mquic_group": group, "mquic_n": str(n), "mquic_sync": sync, "mquic_params": o.params,
                        "mquic_iw": str(o.iw), "mquic_exit": o.ss_exit, "mquic_merge": str(int(o.merge_rtt))}
                       for _ in range(n))  # fmt: skip
    if n == 1:
        return Workload(objects=(size,), preconnect=True, cc_options=cc_options)
    return Workload.ranges(size, n, preconnect=True, cc_options=cc_options)


class Mquic(Experiment[MquicOptions]):
    name = "mquic"
    help = ("mQUIC: short downloads over the paper's LTE cell in modes 1c (one connection), 3c (N plain "
            "connections, one byte range each) and mquic (N connections whose congestion state the server's engine "
            "synchronizes); completion-time median, 95th percentile, CoV and mQUIC's improvement per size. One testbed "
            "serves every repetition; the cell's rate and the sizes are scaled by --scale (docs/mquic-fidelity.md).")
    options_model = MquicOptions
    metrics = (Metric("gain_vs_1c_pct", "mquic's gain over 1c (mean over sizes)", "%", 1),)
    run_figure_name = "cwnd.png"
    run_figure_kind = "cwnd"
    one_testbed = True

    def scenario(self, scenario: Scenario, options: MquicOptions) -> Scenario:
        o = options
        changes: dict[str, Any] = {}
        if o.preset != "none":
            changes.update(net.scenario_changes(o.preset, o.radio, o.scale, o.dc))
            default = Scenario()
            given = [k for k in changes if getattr(scenario, k) != getattr(default, k)]
            if given:  # silently overriding what the user asked for would measure something else
                option = "--" + given[0].replace("_", "-")
                raise OptionError(f"{option}: --preset {o.preset} sets the links ({', '.join(sorted(changes))}); "
                                    "give --preset none to set them yourself")
        s = build(scenario, **changes)
        interval = DC_STATS_INTERVAL_MS if counts_stalls(s) else STATS_INTERVAL_MS
        return build(s, stats_interval_ms=max(scenario.stats_interval_ms, interval))

    def plan(self, scenario: Scenario, options: MquicOptions) -> FlowPlan:
        o = options
        # The plan's workload is the largest download in the broadest mode, so that the
        # stack checks every capability the repetitions use before anything starts.
        wl = workload("mquic" if "mquic" in o.mode_list() else o.mode_list()[0], max(o.byte_sizes()), "check", o)
        return FlowPlan.build([Bearer("dc")], [Flow("mq", "aioquic-mquic", "dc", wl, f"mquic-{o.cc}", PORT)],
                              scenario, STATS_INTERVAL_MS)

    def estimate_s(self, scenario: Scenario, options: MquicOptions, capacity_mbps: float) -> float:
        o = options
        rtt = (sum(scenario.delay) / len(scenario.delay) + scenario.uplink_delay) / 1e3
        per = [s * 8 / (capacity_mbps * 1e6) + 10 * rtt + 0.6 for s in o.byte_sizes()]  # + client start-up
        return sum(per) * len(o.mode_list())

    def timeout_s(self, plan: FlowPlan, capacity_mbps: float) -> float:
        return 60.0

    # -- one repetition --------------------------------------------------------------------

    def measure(self, bed: Bed, scenario: Scenario, plan: FlowPlan, options: MquicOptions, result: RepResult) -> RepResult:
        o = options
        rep_dir = Path(bed.state["rep_dir"])
        modes = o.mode_list()
        k = (result.rep - 1) % len(modes)
        order = modes[k:] + modes[:k]
        downloads: list[MquicDownload] = []
        lines: list[LogLine] = []
        for paper_size, size in zip(o.paper_sizes(), o.byte_sizes(), strict=True):
            for mode in order:
                # unique on the testbed, which campaigns may reuse across runs with equal repetition numbers
                bed.state["downloads"] = n = bed.state.get("downloads", 0) + 1
                group = f"{bed.tag}-d{n}-r{result.rep}-{mode}-{size}"
                before = pdcp_counters(bed) if counts_stalls(scenario) else None
                # on the long-lived client: no process start-up between downloads
                r = bed.run_clients(o.timeout, workloads={"mq": workload(mode, size, group, o)}, persistent=True)["mq"]
                mine = read_group(bed, group)
                lines += mine
                stalls = pdcp_stalls(before, pdcp_counters(bed, after=time.time())) if before is not None else None
                downloads.append(download_record(mode, size, paper_size, r, mine, stalls))
        write_json(rep_dir / DOWNLOADS, downloads)
        (rep_dir / LOG).write_text("".join(json.dumps(d) + "\n" for d in lines))
        failed = [d for d in downloads if not d.ok]
        result.ok = not failed
        result.error = None if result.ok else f"{len(failed)} of {len(downloads)} downloads failed, first: {failed[0].error}"
        result.metrics = {"gain_vs_1c_pct": rep_gain(downloads)}
        result.details = {"downloads": downloads, "order": order, "scale": o.scale, "conns": o.conns, "iw": o.iw,
                          "preset": o.preset, "ss_exit": o.ss_exit, "merge_rtt": o.merge_rtt, "params": o.params}
        return result

    # -- summaries -------------------------------------------------------------------------

    def summarize(self, runs: list[RepResult], scenario: Scenario, options: MquicOptions) -> Summary:
        s = super().summarize(runs, scenario, options)
        o = options
        downloads = [d for r in runs for d in downloads_in(r.details, MquicDownload)]
        s.extra = completion.summary_extra(downloads, completion.completion_table(downloads, o.mode_list(), BASELINES))
        s.extra["nfe_evidence"] = nfes.nfe_evidence(downloads, o.mode_list())
        return s

    def describe(self, rep: RepResult) -> str:
        ds = downloads_in(rep.details, MquicDownload)
        if not ds:
            return f"failed: {rep.error}"
        largest = max(d.size for d in ds)
        parts = [f"{d.mode} {d.completion_s:.3f}s" if d.completion_s is not None else f"{d.mode} failed"
                 for d in ds if d.size == largest]
        return f"{completion.size_label(largest)}: " + ", ".join(parts) + ("" if rep.ok else f" ({rep.error})")

    def table(self, summary: Summary) -> Table:
        return improvement_table(Summarized.model_validate(summary.extra).table)

    def headline(self, summary: Summary) -> str:
        rows = [r for r in Summarized.model_validate(summary.extra).table if r.mode == "mquic"]
        if not rows:
            return "no mquic downloads"
        r = max(rows, key=lambda r: r.size)
        imp = r.improvement.get("1c") or completion.Improvement()
        return (f"mquic at {completion.size_label(r.size)}: median {_fmt(r.median, 3)} s, p95 {_fmt(r.p95, 3)} s; "
                f"vs 1c: median {_fmt(imp.median, 1)} %, p95 {_fmt(imp.p95, 1)} %")

    def json_output(self, summary: Summary) -> JsonObject:
        e = Summarized.model_validate(summary.extra)
        return {"table": [r.model_dump() for r in e.table], "nfe_evidence": [r.model_dump() for r in e.nfe_evidence],
                "downloads": e.downloads, "failed_downloads": e.failed_downloads, "failed": summary.failed,
                "options": summary.options, "scenario": summary.scenario, "seeds": summary.seeds}

    # -- figures ---------------------------------------------------------------------------

    def run_title(self, scenario: Scenario, options: MquicOptions, result: RepResult) -> str:
        return f"mquic {result.cc}, rep {result.rep}: cwnd per connection"

    def run_figure(self, run_dir: Path, run: Run, path: Path, title: str) -> Path:
        log = run_dir / LOG
        if not log.is_file():
            return empty_figure(path, title, "no mQUIC log in this run's directory")
        lines = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
        return cwnd.cwnd_over_time(lines, path, title)

    def sweep_figures(self, rows: Sequence[Run], out_dir: Path, stem: str, title: str,
                      xlabel: str) -> list[tuple[Path, str]]:
        out: list[tuple[Path, str]] = []
        by_series = _by_series(rows)
        for series, rs in by_series.items():
            ds = [d for r in rs for d in _downloads(r)]
            modes = _modes_of(ds)
            tag = f"{stem}-{_slug(series)}"
            out.append((completion.completion_cdfs(ds, modes, "1c", out_dir / f"{tag}-cdf.png", f"{title}: {series}"),
                        f"{series}: completion-time CDFs per size, normalized by the 1c median"))
            out.append((completion.completion_vs_first_nfe(ds, modes, out_dir / f"{tag}-nfe.png",
                                                           f"{title}: {series}"),
                        f"{series}: completion time against the first NFE's packet count"))
            out.append((median_windows(rs, modes, out_dir / f"{tag}-window.png", f"{title}: {series}"),
                        f"{series}: the summed window of each mode's median download at the largest size"))
        points = _points(rows)
        if len(points) > 1:
            out.append((completion.gain_against(points, "mquic", BASELINES, out_dir / f"{stem}-gain.png", title, xlabel),
                        f"mquic's improvement against {xlabel}"))
        return out

    def sweep_figure(self, rows: Sequence[Run], path: Path, title: str, xlabel: str) -> Path:
        ds = [d for r in rows for d in _downloads(r)]
        return completion.completion_cdfs(ds, _modes_of(ds), "1c", path, title)

    def sweep_tables(self, rows: Sequence[Run]) -> list[tuple[str, Table]]:
        out = []
        for series, rs in _by_series(rows).items():
            ds = [d for r in rs for d in _downloads(r)]
            out.append((series, improvement_table(completion.completion_table(ds, _modes_of(ds), BASELINES))))
            out.append((f"{series}: the NFEs behind it (medians per download)", evidence_table(ds, _modes_of(ds))))
        return paper_tables(rows) + out

    def sweep_table(self, rows: Sequence[Run]) -> Table:
        ds = [d for r in rows for d in _downloads(r)]
        return improvement_table(completion.completion_table(ds, _modes_of(ds), BASELINES))


Run = StoredRun[MquicOptions]


class Summarized(CompletionSummary[CompletionRow]):
    """The summary's extra: the completion table and the NFEs behind it."""

    nfe_evidence: list[nfes.NfeRow] = []


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in ".-" else "-" for c in text).strip("-").lower() or "none"


def _downloads(row: Run) -> list[MquicDownload]:
    return downloads_in(row.metrics, MquicDownload)


def _modes_of(downloads: list[MquicDownload]) -> list[str]:
    present = {d.mode for d in downloads}
    return [m for m in MODES if m in present]


# Options that make a series of their own when not at their default (a campaign's groups,
# e.g. mquic-fidelity's variants), unless they are the swept parameter.
VARIANT_OPTIONS = ("params", "ss_exit", "merge_rtt", "iw", "scale", "conns", "radio")


def _series_label(row: Run) -> str:
    where, variant = _setting(row)
    return f"{where}, {row.options.cc}{variant}"


def _setting(row: Run) -> tuple[str, str]:
    """The run's location (preset, DC) and the rest of its series label but the controller."""
    where = row.options.preset + (" DC" if row.options.dc else "")
    sweep = row.sweep
    value = f", {sweep}={row.value}" if sweep not in ("", "none") else ""
    o = row.options_json()  # each variant option as the store keeps it, against its default
    variant = "".join(f", {k}={_short(o[k])}" for k in VARIANT_OPTIONS
                      if k in o and k != sweep and o[k] != MquicOptions.model_fields[k].default)  # fmt: skip
    return where, variant + value


def paper_tables(rows: Sequence[Run]) -> list[tuple[str, Table]]:
    """The shape of the paper's Tables 6-9: per location and setting measured with more
    than one controller, a row per size (the paper's, before scaling) and per controller
    mquic's improvement over 1c and over 3c (median and p95, %)."""
    by_setting: dict[tuple[str, str], dict[str, list[MquicDownload]]] = {}
    for r in rows:
        by_setting.setdefault(_setting(r), {}).setdefault(r.options.cc, []).extend(_downloads(r))
    order = {"reno": 0, "cubic": 1, "bbr": 2}
    out = []
    for (where, variant), by_cc in by_setting.items():
        if len(by_cc) < 2:
            continue
        ccs = sorted(by_cc, key=lambda c: (order.get(c, 9), c))
        tables = {c: {t.size: t for t in completion.completion_table(ds, ["mquic"], BASELINES)} for c, ds in by_cc.items()}
        paper = {d.size: d.paper_size or d.size for ds in by_cc.values() for d in ds}
        cols = ["size (paper's)"] + [f"{c} vs {b} {stat}" for c in ccs for b in BASELINES for stat in ("median", "p95")]
        body, failed = [], []
        for size in sorted(paper):
            cells = [completion.size_label(paper[size])]
            for c in ccs:
                row = tables[c].get(size)
                imp = row.improvement if row is not None else {}
                cells += [_fmt(v, 1) for b in BASELINES for v in _imp(imp, b)]
            body.append(cells)
            failed.append(all(not (row.n if (row := tables[c].get(size)) else 0) for c in ccs))
        out.append((f"{where}{variant}: mquic's improvement (%) per controller, as the paper's Tables 6-9",
                    Table(cols, body, failed, text_columns=1)))
    return out


def _short(v: object) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v).lower() if isinstance(v, bool) else str(v)


def _by_series(rows: Sequence[Run]) -> dict[str, list[Run]]:
    out: dict[str, list[Run]] = {}
    for r in rows:
        out.setdefault(_series_label(r), []).append(r)
    return out


def _points(rows: Sequence[Run]) -> list[tuple[float, list[Download]]]:
    by: dict[float, list[Download]] = {}
    for r in rows:
        if r.value_num is not None and r.sweep not in ("", "none"):
            by.setdefault(r.value_num, []).extend(_downloads(r))
    return sorted(by.items())


def _imp(improvements: dict[str, completion.Improvement], baseline: str) -> tuple[float | None, float | None]:
    i = improvements.get(baseline)
    return (i.median, i.p95) if i is not None else (None, None)


def improvement_table(rows: list[completion.CompletionRow]) -> Table:
    """Per size and mode: median, p95, CoV, and the improvement over 1c and 3c."""
    cols = ["size", "mode", "median (s)", "p95 (s)", "CoV", "n", "failed", "vs 1c median %", "vs 1c p95 %",
            "vs 3c median %", "vs 3c p95 %"]
    out, failed = [], []
    for r in rows:
        cells = [completion.size_label(r.size), r.mode, _fmt(r.median, 3), _fmt(r.p95, 3), _fmt(r.cov, 3), str(r.n),
                 str(r.failed)]
        for b in BASELINES:
            cells += [_fmt(v, 1) for v in _imp(r.improvement, b)]
        out.append(cells)
        failed.append(not r.n)
    return Table(cols, out, failed)


def median_windows(rows: Sequence[Run], modes: list[str], path: Path, title: str) -> Path:
    """Per mode, the summed cwnd over time of its median download (the lower median of
    the completion times) at the largest size, from the server log in its run's
    directory (``run_path``)."""
    located = [(d, r.run_path) for r in rows for d in _downloads(r)]
    ok = [(d, p) for d, p in located if d.completed]
    if not ok:
        return empty_figure(path, title, "no successful download")
    largest = max(d.size for d, _ in ok)
    chosen: dict[str, tuple[list[LogLine], str]] = {}
    for mode in modes:
        mine = sorted(((d, p) for d, p in ok if d.mode == mode and d.size == largest),
                      key=lambda x: x[0].completion_s or 0.0)  # fmt: skip
        if not mine:
            continue
        d, run_path = mine[(len(mine) - 1) // 2]
        log = Path(run_path) / LOG if run_path else None
        if log is None or not log.is_file():
            continue
        every = [x for x in (json.loads(t) for t in log.read_text().splitlines() if t.strip()) if isinstance(x, dict)]
        own = lines_of(d, every)
        if own:
            chosen[f"{mode} ({d.completion_s or 0.0:.3f} s)"] = (own, str(own[0]["group"]))
    return cwnd.aggregate_windows(chosen, path, f"{title}: median downloads, {completion.size_label(largest)}")


def evidence_table(downloads: list[MquicDownload], modes: list[str]) -> Table:
    """Per size and mode, the medians of what the downloads' NFEs were (analysis/nfes.py)."""
    cols = ["size", "mode", "n", "NFEs", "delay exits", "within 1 RTT", "syncs", "first NFE a delay exit %",
            "group cwnd at first NFE (kB)", "packets before the stop %"]  # fmt: skip
    out, failed = [], []
    for r in nfes.nfe_evidence(downloads, modes):
        cwnd_kb = r.first_nfe_group_cwnd / 1e3 if r.first_nfe_group_cwnd is not None else None
        out.append([completion.size_label(r.size), r.mode, str(r.n), _fmt(r.nfes, 1), _fmt(r.delay_exits, 1),
                    _fmt(r.nfes_within_rtt, 1), _fmt(r.syncs, 1), _fmt(r.first_delay_pct, 0), _fmt(cwnd_kb, 1),
                    _fmt(r.synchronized_pct, 0)])  # fmt: skip
        failed.append(not r.n)
    return Table(cols, out, failed)


def rep_gain(downloads: list[MquicDownload]) -> float | None:
    """mquic's gain over 1c in one repetition: the mean over sizes of (1c - mquic) / 1c, in %."""
    gains = []
    for size in sorted({d.size for d in downloads}):
        ct = {d.mode: d.completion_s for d in downloads if d.size == size and d.ok}
        one, mq = ct.get("1c"), ct.get("mquic")
        if one and mq is not None:
            gains.append((one - mq) / one * 100)
    return sum(gains) / len(gains) if gains else None


EXPERIMENT = Mquic()
