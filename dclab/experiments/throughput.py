"""The throughput experiment: one client downloads a file through the DC bearer; per
repetition a fresh testbed, the goodput, timings, PDCP summary, dcemu's stats and a
link-utilization plot of the whole transfer with the events that explain its shape (and a
one-line diagnosis of its stalls, docs/run-figure.md), all kept in the run directory.

With ``--streams N`` (N > 1) the download is N objects of size/N bytes (``GET /<n>`` each,
the first size % N one byte longer) requested at once on one connection, a stream each
(HTTP/3 for the QUIC stacks, HTTP/2 for tcp); the goodput is still all bytes over (last
byte - request), and each object's first byte and completion time (its last byte after the
request) are kept in the repetition's details (``stream_*``) with the min, median and max
completion; a sweep over ``streams`` draws goodput and the median completion against N."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, model_validator

from ..analysis import figures
from ..analysis.metrics import pdcp_summary
from ..analysis.stand_in import stack_label
from ..analysis.stored_run import StoredRun
from ..endpoints.base import TransferResult, Workload
from ..files import JsonObject
from ..flowplan import Flow, FlowPlan, single_bearer_plan
from ..scenario import Scenario, capacity_mbps
from ..testbed import Bed, stats_ms
from .base import Experiment, FlowResult, Metric, RepResult, Size, StackOptions, Summary, Table, _fmt, in_range, stand_in_output

DC_PORT = 4433  # the study's port of the DC flow
MAX_STREAMS = 64  # below every stack's limit of streams open at once (aioquic 128, ngtcp2 and curl 100)


class ThroughputOptions(StackOptions):
    size: Size = Field(100_000_000, description="Bytes to download (100MB, 1GB, ...).", json_schema_extra={"show": "100MB"})
    timeout: float | None = Field(None, ge=1, le=86400, description="Seconds a download may take [default: from size and rate].")
    streams: Annotated[int, in_range(1, MAX_STREAMS)] = Field(1, description=(
        f"Concurrent streams on the one connection (1 to {MAX_STREAMS}): the download becomes this many objects of "
        f"size/N bytes, requested at once; per-stream completion times are recorded."))

    @model_validator(mode="after")
    def _streams_fit(self) -> "ThroughputOptions":
        if self.streams > self.size:
            raise ValueError(f"streams: must be 1 to {min(MAX_STREAMS, self.size)} for a size of {self.size} bytes "
                             f"(every stream needs a byte) (got {self.streams})")
        return self


def workload(size: int, streams: int) -> Workload:
    """The download: one object (streams 1, the study's), else ``streams`` objects of
    nearly equal size (the first ``size % streams`` one byte longer) at once on one
    connection."""
    if streams == 1:
        return Workload.single(size)
    base, extra = divmod(size, streams)
    objects = tuple(base + 1 if i < extra else base for i in range(streams))
    return Workload(objects=objects, connections=1, streams="parallel")


def stream_details(r: TransferResult) -> dict[str, Any]:
    """Per object (stream), in workload order: its first byte and its completion (last
    byte), seconds after the workload's request (None when not reached or failed); and
    the min, median and max completion over the streams that completed."""
    done = [o.last_byte_s - r.request_s if o.ok and o.last_byte_s is not None else None for o in r.objects]
    times = [t for t in done if t is not None]
    return {"stream_first_byte_s": [None if o.first_byte_s is None else o.first_byte_s - r.request_s for o in r.objects],
            "stream_completion_s": done,
            "stream_completion_min_s": min(times) if times else None,
            "stream_completion_median_s": statistics.median(times) if times else None,
            "stream_completion_max_s": max(times) if times else None}


class Throughput(Experiment[ThroughputOptions]):
    name = "throughput"
    help = ("One client downloads a file through the DC bearer; goodput per repetition, mean and standard "
            "deviation, PDCP statistics and a per-leg link-utilization plot.")
    options_model = ThroughputOptions
    metrics = (Metric("goodput_mbps", "goodput", "Mbit/s"),)
    run_figure_name = "link-utilization.png"
    run_figure_kind = "links"
    diagnoses = True
    simulates = True
    default = True

    def plan(self, scenario: Scenario, options: ThroughputOptions) -> FlowPlan:
        o = options
        return single_bearer_plan(scenario, [Flow("dc", o.stack, "dc", workload(o.size, o.streams), o.cc, DC_PORT)])

    def estimate_s(self, scenario: Scenario, options: ThroughputOptions, capacity_mbps: float) -> float:
        """The transfer at three quarters of the capacity (aioquic's receiver tops out near
        50 Mbit/s on the 2-core machine)."""
        goodput = 0.75 * capacity_mbps
        if options.stack == "aioquic":
            goodput = min(goodput, 50.0)
        return float(options.size) * 8 / (max(goodput, 0.5) * 1e6)

    def longest_s(self, scenario: Scenario, plan: FlowPlan, options: ThroughputOptions) -> float | None:
        return options.timeout or self.timeout_s(plan, 2.0 if scenario.trace else capacity_mbps(scenario))

    def measure(self, bed: Bed, scenario: Scenario, plan: FlowPlan, options: ThroughputOptions, result: RepResult) -> RepResult:
        o = options
        # Traces: assume at least 2 Mbit/s; a cell: its level's mean capacity.
        capacity = 2.0 if scenario.trace else capacity_mbps(scenario)
        timeout = o.timeout or self.timeout_s(plan, capacity)
        r = bed.run_clients(timeout)["dc"]
        records = bed.finish()
        result.ok, result.error = r.ok, r.error
        result.metrics = {"goodput_mbps": r.goodput_mbps}
        result.flows = [FlowResult.of(plan, "dc", r)]
        result.details = {"size": o.size, "pdcp": pdcp_summary(records, "dc"),
                          "client_udp_drops": bed.client_udp_drops}
        if o.streams > 1:  # streams 1 keeps the study's record as it was
            result.details.update(stream_details(r))
        result.t0_ms = stats_ms(bed, r.request_wall)
        return result

    def sweep_figures(self, rows: Sequence[StoredRun[ThroughputOptions]], out_dir: Path, stem: str, title: str,
                      xlabel: str) -> list[tuple[Path, str]]:
        """The goodput figure; with runs of several streams, also their median per-stream
        completion time (runs of one stream have none)."""
        out = super().sweep_figures(rows, out_dir, stem, title, xlabel)
        stalls = figures.pdcp_stalls_vs_param(rows, "expiries", out_dir / f"{stem}-expiries.png", title, xlabel)
        if stalls is not None:
            out.append((stalls, f"{title} (t-Reordering expiries per run: mean, std over repetitions)"))
        if any(r.metric("stream_completion_median_s") is not None for r in rows):
            path = figures.metric_vs_param(rows, "stream_completion_median_s", "median stream completion (s)",
                                           out_dir / f"{stem}-streams.png", title, xlabel)
            out.append((path, f"{title} (median per-stream completion time: mean, std over repetitions; "
                              f"runs of more than one stream)"))
        return out

    def sweep_tables(self, rows: Sequence[StoredRun[ThroughputOptions]]) -> list[tuple[str, Table]]:
        """The goodput table; then, where runs kept them, the PDCP receiver's stalls: how
        often t-Reordering expired, how many COUNTs it gave up, packets lost on the legs, and
        how long deliveries waited in the reordering buffer (means per run)."""
        out = super().sweep_tables(rows)
        stalls = figures.pdcp_stall_table(rows)
        if stalls:
            cols = ["value", "series"] + [c for c, _ in figures.PDCP_STALLS.values()] + ["n"]
            body = [[d.at.value or "-", d.at.series]
                    + [_fmt(d.means[k], 0 if k in ("expiries", "given_up", "lost") else 2) for k in figures.PDCP_STALLS]
                    + [str(d.n)] for d in stalls]
            out.append(("PDCP receiver per run (means over the successful runs): t-Reordering expiries, COUNTs "
                        "given up, packets lost on the legs, and each delivery's wait in the reordering buffer",
                        Table(cols, body, [False] * len(body))))
        return out

    def run_title(self, scenario: Scenario, options: ThroughputOptions, result: RepResult) -> str:
        streams = f", {options.streams} streams" if options.streams > 1 else ""
        return (f"{stack_label(result.stack, options.stand_in)} {result.cc}, {options.size / 1e6:g} MB{streams}, "
                f"{scenario.split_text()}")

    def describe(self, rep: RepResult) -> str:
        g = rep.metrics.get("goodput_mbps")
        if g is None:
            return f"failed: {rep.error}"
        median = rep.details.get("stream_completion_median_s")
        return f"{g:.2f} Mbit/s" + (f", median stream {median:.2f} s" if median is not None else "")

    def headline(self, summary: Summary) -> str:
        g = summary.metrics["goodput_mbps"].mean
        return f"goodput: {g:.2f} Mbit/s" if g is not None else "goodput: no successful run"

    def json_output(self, summary: Summary) -> JsonObject:
        return {"goodput_mbps": summary.metrics["goodput_mbps"].model_dump(), "stack": summary.stack, "cc": summary.cc,
                "scenario": summary.scenario, "host_config": summary.host_config, "failed": summary.failed,
                "seeds": summary.seeds, **stand_in_output(summary)}


EXPERIMENT = Throughput()
