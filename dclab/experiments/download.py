"""The download experiment (experiment 3 of Kyratzis & Cottis 2022): many short
downloads of a few file sizes over one SC bearer on leg 1 (the study's device; with
``--link lte:LEVEL`` the cell), without resumption, resuming a session ticket, or
resuming with the request in 0-RTT early data.

One testbed serves every repetition (``one_testbed``), so the servers are warm: a fresh
testbed first gets one download that is not measured. A repetition downloads every size
``--count`` times, one download per client workload (a stack whose client serves many,
aioquic's, runs them all in one process: ``run_clients(persistent=True)``, and only the
first has a start-up); each round takes the sizes in an order
shuffled from the testbed's seed and the repetition (so that no size always follows
another). With resumption the stack's client makes a warm-up connection for the ticket
before the request, and every time is after the request: handshake, first byte, last
byte (the download time).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from ..analysis import completion, timings
from ..analysis.completion import CompletionSummary
from ..analysis.downloads import TimedDownload, downloads_in, with_mode
from ..analysis.metrics import distribution
from ..analysis.stored_run import StoredRun
from ..endpoints import get_stack
from ..endpoints.base import StackError, TransferResult, Workload
from ..files import JsonObject, clip
from ..flowplan import Bearer, Flow, FlowPlan
from ..scenario import Scenario, build
from ..testbed import Bed
from ..testbed.rundir import write_json
from ..units import parse_sizes
from .base import Experiment, Metric, RepResult, StackOptions, Summary, Table, _fmt

RESUME = ("off", "ticket", "0rtt")
PORT = 4433
STATS_INTERVAL_MS = 1000.0  # the testbed runs for minutes; dcemu's stats are not used per download
DOWNLOADS = "downloads.json"
MIN_SIZE = 1000
STARTUP_S = 0.6  # a client process's start-up, for estimates (aioquic's, the slowest)


class DownloadOptions(StackOptions):
    sizes: str = Field("64kB,256kB,512kB,1MB,2MB", description="File sizes, separated by commas (1 to 10, distinct, "
                       "each at least 1KB).")
    resume: Literal["off", "ticket", "0rtt"] = Field(
        "off", description="off: a full handshake per download; ticket: resume a session (the client's warm-up "
        "connection gets the ticket); 0rtt: resume and send the request as 0-RTT early data.")
    count: int = Field(10, ge=1, le=1000, description="Downloads of each size per repetition.")
    timeout: float = Field(30.0, ge=1, le=3600, description="Seconds one download may take (with the warm-up "
                           "connection).")
    bearer: Literal["sc", "dc"] = Field("sc", description="sc: over one SC bearer on leg 1 (the study's); dc: over "
                                       "the DC bearer, split over the legs as the scenario says (EN-DC: the LTE master "
                                       "and the NR secondary, --split-policy).")

    @field_validator("sizes")
    @classmethod
    def _check_sizes(cls, v: str) -> str:
        sizes = parse_sizes(v, least=MIN_SIZE)
        if len(set(sizes)) != len(sizes):
            raise ValueError(f"sizes: each size once (got {clip(v)})")
        return v

    def size_list(self) -> tuple[int, ...]:
        return parse_sizes(self.sizes, least=MIN_SIZE)


def workload(size: int, resume: str) -> Workload:
    """One download of ``size`` bytes on one connection, resumed as ``resume`` says."""
    return Workload(objects=(size,), resumption=resume != "off", zero_rtt=resume == "0rtt")


def order(sizes: tuple[int, ...], count: int, seed: int, rep: int) -> list[tuple[int, int]]:
    """(round, size) in download order: ``count`` rounds, each every size once, shuffled
    by a generator seeded from the testbed's seed and the repetition."""
    rng = random.Random(f"download-{seed}-{rep}")
    out = []
    for k in range(1, count + 1):
        shuffled = list(sizes)
        rng.shuffle(shuffled)
        out += [(k, s) for s in shuffled]
    return out


def download_record(size: int, k: int, resume: str, r: TransferResult) -> TimedDownload:
    """One download as the tables and figures read it."""
    c = r.connections[0] if r.connections else None
    startup = r.extra.get("startup_s")
    return TimedDownload(mode=resume, size=size, round=k, ok=r.ok, error=r.error, completion_s=r.completion_s,
                         handshake_s=r.handshake_s, first_byte_s=r.first_byte_s, last_byte_s=r.last_byte_s,
                         bytes=r.bytes, resumed=c.resumed if c else None, early_data=c.early_data if c else None,
                         startup_s=float(startup) if isinstance(startup, (int, float)) else None)


def _median(values: Iterable[float | None]) -> float | None:
    return distribution(values).median


Summarized = CompletionSummary[timings.TimingRow]


class Download(Experiment[DownloadOptions]):
    name = "download"
    help = ("Short downloads (the study's 64 kB to 2 MB) over one SC bearer on leg 1, many per testbed (warm servers), "
            "with a full handshake, a resumed session (--resume ticket) or the request in 0-RTT (--resume 0rtt): per "
            "size the median and 95th percentile of the download time, handshake and time to first byte.")
    options_model = DownloadOptions
    metrics = (Metric("download_s", "median download time of the largest file", "s", 3),
               Metric("handshake_s", "median handshake", "s", 3),
               Metric("ttfb_s", "median time to first byte", "s", 3))
    run_figure_name = "downloads.png"
    run_figure_kind = "downloads"
    one_testbed = True

    def scenario(self, scenario: Scenario, options: DownloadOptions) -> Scenario:
        return build(scenario, stats_interval_ms=max(scenario.stats_interval_ms, STATS_INTERVAL_MS))

    def plan(self, scenario: Scenario, options: DownloadOptions) -> FlowPlan:
        o = options
        wl = workload(max(o.size_list()), o.resume)
        stack = get_stack(o.stack)
        stack.resolve_cc(o.cc)  # raises naming --cc
        try:
            stack.check(o.cc, wl)
        except StackError as e:
            raise StackError(f"--resume {o.resume}: {e}") from None
        bearer = Bearer("sc", "sc", (1,)) if o.bearer == "sc" else Bearer("dc")
        return FlowPlan.build([bearer], [Flow("dl", o.stack, bearer.name, wl, o.cc, PORT)], scenario,
                              STATS_INTERVAL_MS)

    def estimate_s(self, scenario: Scenario, options: DownloadOptions, capacity_mbps: float) -> float:
        o = options
        rtt = (scenario.delay[0] + scenario.uplink_delay) / 1e3
        rate = min(0.75 * capacity_mbps, 40.0) * 1e6  # aioquic's receiver is CPU-bound near 50 Mbit/s
        rtts = 4 + (2 if o.resume != "off" else 0)  # handshake, request, a few rounds; the warm-up connection
        return sum(STARTUP_S + rtts * rtt + s * 8 / rate for s in o.size_list()) * o.count

    # -- one repetition --------------------------------------------------------------------

    def measure(self, bed: Bed, scenario: Scenario, plan: FlowPlan, options: DownloadOptions, result: RepResult) -> RepResult:
        o = options
        rep_dir = Path(bed.state["rep_dir"])
        sizes = o.size_list()
        if "download_warm" not in bed.state:  # the servers' first request (imports, caches) is not measured
            w = bed.run_clients(o.timeout, workloads={"dl": workload(min(sizes), o.resume)}, persistent=True)["dl"]
            bed.state["download_warm"] = {"ok": w.ok, "completion_s": w.completion_s, "error": w.error}
        downloads: list[TimedDownload] = []
        sequence = order(sizes, o.count, scenario.seed, result.rep)
        for k, size in sequence:
            r = bed.run_clients(o.timeout, workloads={"dl": workload(size, o.resume)}, persistent=True)["dl"]
            downloads.append(download_record(size, k, o.resume, r))
        write_json(rep_dir / DOWNLOADS, downloads)
        failed = [d for d in downloads if not d.ok]
        result.ok = not failed
        result.error = None if not failed else f"{len(failed)} of {len(downloads)} downloads failed, first: {failed[0].error}"
        ok = [d for d in downloads if d.ok]
        result.metrics = {"download_s": _median(d.completion_s for d in ok if d.size == max(sizes)),
                          "handshake_s": _median(d.handshake_s for d in ok),
                          "ttfb_s": _median(d.first_byte_s for d in ok),
                          **{f"download_s_{s}": _median(d.completion_s for d in ok if d.size == s) for s in sizes}}
        result.details = {"downloads": downloads, "table": timings.timing_table(downloads, [o.resume]),
                          "first_round": [s for _, s in sequence[: len(sizes)]], "resume": o.resume, "count": o.count,
                          "warmup": bed.state["download_warm"]}
        return result

    # -- summaries -------------------------------------------------------------------------

    def summarize(self, runs: list[RepResult], scenario: Scenario, options: DownloadOptions) -> Summary:
        s = super().summarize(runs, scenario, options)
        o = options
        downloads = [d for r in runs for d in downloads_in(r.details, TimedDownload)]
        s.extra = completion.summary_extra(downloads, timings.timing_table(downloads, [o.resume]))
        return s

    def describe(self, rep: RepResult) -> str:
        ds = downloads_in(rep.details, TimedDownload)
        if not ds:
            return f"failed: {rep.error}"
        largest = max(d.size for d in ds)
        return (f"{len(ds)} downloads; {completion.size_label(largest)}: median "
                f"{_fmt(rep.metrics.get('download_s'), 3)} s" + ("" if rep.ok else f" ({rep.error})"))

    def table(self, summary: Summary) -> Table:
        return timing_table(Summarized.model_validate(summary.extra).table, series=False)

    def headline(self, summary: Summary) -> str:
        e = Summarized.model_validate(summary.extra)
        rows = e.table
        if not rows or not any(r.n for r in rows):
            return "download: no successful download"
        r = max((r for r in rows if r.n), key=lambda r: r.size)
        out = (f"{r.mode} at {completion.size_label(r.size)}: median {_fmt(r.completion_s.median, 3)} s, "
               f"p95 {_fmt(r.completion_s.p95, 3)} s; handshake {_fmt(r.handshake_s.median, 3)} s, "
               f"first byte {_fmt(r.first_byte_s.median, 3)} s (medians)")
        if r.mode != "off":
            resumed = _overall([(x.resumed, x.n) for x in rows])
            out += f"; resumed {_pct(resumed)}, 0-RTT accepted {_pct(_overall([(x.early_data, x.n) for x in rows]))}"
        failed = e.failed_downloads
        return out + (f"; {failed} of {e.downloads} downloads failed" if failed else "")

    def json_output(self, summary: Summary) -> JsonObject:
        e = Summarized.model_validate(summary.extra)
        return {"table": [r.model_dump() for r in e.table], "downloads": e.downloads,
                "failed_downloads": e.failed_downloads, "failed": summary.failed,
                "metrics": {k: v.model_dump() for k, v in summary.metrics.items()}, "stack": summary.stack,
                "cc": summary.cc, "options": summary.options, "scenario": summary.scenario, "seeds": summary.seeds}

    # -- figures ---------------------------------------------------------------------------

    def run_title(self, scenario: Scenario, options: DownloadOptions, result: RepResult) -> str:
        where = scenario.link or f"leg 1: {scenario.bw[0]:g} Mbit/s"
        return (f"download {result.stack} {result.cc}, resume {options.resume}, {where}, delay {scenario.delay[0]:g} ms, "
                f"loss {scenario.loss[0]:g} %, rep {result.rep}")

    def run_figure(self, run_dir: Path, run: Run, path: Path, title: str) -> Path:
        ds = downloads_in(run.metrics, TimedDownload)
        return timings.download_times(ds, sorted({d.mode for d in ds}, key=_resume_key), path, title)

    def sweep_figures(self, rows: Sequence[Run], out_dir: Path, stem: str, title: str,
                      xlabel: str) -> list[tuple[Path, str]]:
        path = self.sweep_figure(rows, out_dir / f"{stem}.png", title, xlabel)
        return [(path, f"{title}: download time against size (median, whisker to p95) and its phases "
                       "(medians of handshake, first byte - handshake, transfer), per series")]

    def sweep_figure(self, rows: Sequence[Run], path: Path, title: str, xlabel: str) -> Path:
        ds, series = labelled_downloads(rows)
        return timings.download_times(ds, series, path, title)

    def sweep_tables(self, rows: Sequence[Run]) -> list[tuple[str, Table]]:
        return [("", self.sweep_table(rows))]

    def sweep_table(self, rows: Sequence[Run]) -> Table:
        ds, series = labelled_downloads(rows)
        return timing_table(timings.timing_table(ds, series), series=True)


Run = StoredRun[DownloadOptions]


def _resume_key(mode: str) -> tuple[int, str]:
    return (RESUME.index(mode) if mode in RESUME else len(RESUME), mode)


def _overall(fractions: list[tuple[float | None, int]]) -> float | None:
    """A fraction over every size (each with its count of successful downloads), weighted
    by the successful downloads."""
    known = [(f, n) for f, n in fractions if f is not None and n]
    n = sum(w for _, w in known)
    return sum(f * w for f, w in known) / n if n else None


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:.0f} %"


def series_label(row: Run, multi_config: bool) -> str:
    """A stored run's series: its resume mode, with stack and cc when the rows have several,
    and the swept value when it is a sweep."""
    label = f"resume {row.options.resume}"
    if multi_config:
        label = f"{row.stack} {row.cc}, {label}"
    if row.sweep not in ("", "none"):
        label += f", {row.sweep}={row.value}"
    return label


def labelled_downloads(rows: Sequence[Run]) -> tuple[list[TimedDownload], list[str]]:
    """Every download of the rows, its ``mode`` the row's series label; and the labels
    ordered by stack, resume mode, then swept value."""
    multi = len({(r.stack, r.cc) for r in rows}) > 1
    keys: dict[str, tuple[str, str, tuple[int, str], float, str]] = {}
    out: list[TimedDownload] = []
    for r in rows:
        label = series_label(r, multi)
        num = r.value_num
        keys.setdefault(label, (r.stack, r.cc, _resume_key(r.options.resume), num if num is not None else 0.0, r.value))
        out += with_mode(downloads_in(r.metrics, TimedDownload), label)
    return out, sorted(keys, key=lambda k: keys[k])


def timing_table(rows: list[timings.TimingRow], series: bool) -> Table:
    """Per size (and series): median and p95 (s) of download time, handshake and time to
    first byte (TTFB), n, failures, the share resumed and with 0-RTT accepted, and the
    client's start-up (median, s) where the stack reports it."""
    startup = any(r.startup_s.n for r in rows)
    cols = (["series"] if series else []) + ["size", "time med (s)", "p95", "handshake med", "p95", "TTFB med", "p95", "n",
                                             "failed", "resumed", "0-RTT"]
    cols += ["start-up med"] if startup else []
    out, failed = [], []
    for r in rows:
        cells = [r.mode] if series else []
        cells.append(completion.size_label(r.size))
        for t in (r.completion_s, r.handshake_s, r.first_byte_s):
            cells += [_fmt(t.median, 3), _fmt(t.p95, 3)]
        cells += [str(r.n), str(r.failed), _pct(r.resumed), _pct(r.early_data)]
        cells += [_fmt(r.startup_s.median, 3)] if startup else []
        out.append(cells)
        failed.append(not r.n)
    return Table(cols, out, failed, text_columns=2 if series else 1)


EXPERIMENT = Download()
