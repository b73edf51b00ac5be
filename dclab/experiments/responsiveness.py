"""The responsiveness experiment: what a user feels while a bulk flow fills the queues.

One bearer (``--bearer dc``: the DC bearer, split as the scenario says; ``sc``: an SC
bearer on leg 1) carries a bulk download (``--bulk-stack``, TCP by default) that never
ends by itself. A latency probe first measures the idle round trip (ping, one second);
then the bulk flow starts, and after ``--warmup`` seconds, while it still runs, ``--count``
short downloads of ``--short`` bytes (``--stack``, each on a new connection: handshake,
request, body) go one after another with ``--gap`` seconds between them, and the probe
pings through the same bearer every ``--probe-ms``. When the last short download ends the
probe stops, then the bulk flow. Each leg's queue discipline is the scenario's
(``--aqm``: at the master leg, the secondary, both or neither), so this measures what
queue management at a base station does to a split bearer's latency under load.

Reported: the median short download (request to last byte), the probe's round trips (p50,
p99) and loss over the window, responsiveness in round trips per minute (the IETF draft's
formula on the ICMP probes, ``analysis/responsiveness.py``), the bearer's throughput in the
window, and per downlink leg its queue's sojourn (p50, p99) and the drops and CE marks of
its discipline. Emulation only: the simulation has no ICMP probe."""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from ..analysis import figures
from ..analysis.metrics import pdcp_summary, window_means
from ..analysis.responsiveness import ProbeRecord, ShortDownload, ce_seen, leg_queues, run_figure, summarize
from ..analysis.stand_in import stack_label
from ..analysis.stored_run import StoredRun
from ..endpoints.base import TransferResult, Workload
from ..files import JsonObject
from ..flowplan import Bearer, Flow, FlowPlan
from ..scenario import AQM_TARGET_MS, Scenario
from ..scenario import capacity_mbps as total_capacity_mbps
from ..testbed import Bed, stats_ms
from ..testbed.rundir import write_json
from .base import Experiment, FlowResult, Metric, RepResult, Size, StackName, StackOptions, Summary, Table, _fmt, in_range

PROBE = "probe.json"
BULK_BYTES = 10**12  # never reached: the bulk flow is stopped when the short downloads are done
IDLE_S = 1.0  # the idle probe before the bulk flow starts
TAIL_S = 1.0  # the probe runs on after the last short download, so its last echoes are answered
MAX_COUNT = 200
# A short download's round trips for the planner: its handshake and slow start to 100 kB. In
# the aqm campaign's runs (docs/explanation/aqm.md) kernel TCP took 4.9 loaded round trips
# under tail drop, quic-go 2.6.
SHORT_ROUNDS = 5
STATS_INTERVAL_MS = 100.0


class ResponsivenessOptions(StackOptions):
    stack: StackName = Field("tcp", description="Stack of the short downloads.")
    bulk_stack: StackName = Field("tcp", description="Stack of the bulk download that loads the bearer.")
    bulk_cc: str | None = Field(None, description="Congestion control of the bulk download [default: the stack's first].")
    bearer: Literal["dc", "sc"] = Field("dc", description=(
        "dc: every flow and the probe on the DC bearer, split over the legs as the scenario says; sc: on one SC "
        "bearer on leg 1 (single connectivity)."))
    short: Size = Field(100_000, description="Bytes of each short download.", json_schema_extra={"show": "100kB"})
    count: Annotated[int, in_range(1, MAX_COUNT)] = Field(10, description=f"Short downloads (1 to {MAX_COUNT}).")
    gap: float = Field(0.5, ge=0, le=60, description="Seconds between one short download's end and the next's start.")
    warmup: float = Field(5.0, ge=0.5, le=120, description=(
        "Seconds the bulk flow runs before the first short download (its queues fill)."))
    probe_ms: float = Field(50.0, ge=10, le=1000, description="Milliseconds between the latency probe's echoes.")
    short_timeout: float = Field(30.0, ge=1, le=600, description="Seconds one short download may take.")


class Responsiveness(Experiment[ResponsivenessOptions]):
    name = "responsiveness"
    help = ("Short downloads and a latency probe (ping) while a bulk download fills the queues, through the DC "
            "bearer or one SC bearer: their times, round trips per minute, and each leg's queue wait under its "
            "discipline (--aqm).")
    options_model = ResponsivenessOptions
    metrics = (Metric("short_s", "short download (median)", "s", digits=3),
               Metric("rtt_p50_ms", "RTT under load (p50)", "ms", digits=1),
               Metric("rtt_p99_ms", "RTT under load (p99)", "ms", digits=1),
               Metric("rpm", "responsiveness (ICMP)", "RPM", digits=0),
               Metric("sojourn_p99_ms", "leg queue wait (p99)", "ms", digits=1),
               Metric("load_mbps", "bearer throughput", "Mbit/s"))
    run_figure_name = "responsiveness.png"
    run_figure_kind = "responsiveness"

    def plan(self, scenario: Scenario, options: ResponsivenessOptions) -> FlowPlan:
        o = options
        bearer = Bearer("dc", "dc") if o.bearer == "dc" else Bearer("sc", "sc", legs=(1,))
        flows = [Flow("bulk", o.bulk_stack, bearer.name, Workload.single(BULK_BYTES), o.bulk_cc),
                 Flow("short", o.stack, bearer.name, Workload.single(o.short), o.cc)]
        # the bearer is the plan's first, so the probe's echoes (claimed by no flow) cross it
        return FlowPlan.build([bearer], flows, scenario, STATS_INTERVAL_MS)

    def estimate_s(self, scenario: Scenario, options: ResponsivenessOptions, capacity_mbps: float) -> float:
        """The idle probe, the warm-up, each short download and the gaps between them: SHORT_ROUNDS
        round trips through the queues the bulk flow keeps, then its bytes at a quarter of the
        capacity (the bulk flow has the rest). Split over legs, the bulk flow's window backs
        off at the first leg that signals, so the shortest standing queue is every leg's
        (one managed leg held both in the aqm campaign, docs/explanation/aqm.md); PDCP then
        delivers at the longest delay."""
        o = options
        s = scenario
        legs = range(s.legs) if o.bearer == "dc" else range(1)
        rtt = max(s.delay[leg] + s.delay[0] for leg in legs) / 1e3 + min(standing_wait_s(s, leg) for leg in legs)
        short = SHORT_ROUNDS * rtt + o.short * 8 / (max(capacity_mbps, 1.0) / 4 * 1e6)
        return IDLE_S + o.warmup + o.count * short + (o.count - 1) * o.gap + TAIL_S

    def longest_s(self, scenario: Scenario, plan: FlowPlan, options: ResponsivenessOptions) -> float | None:
        return self._bulk_timeout(options)

    def _bulk_timeout(self, o: ResponsivenessOptions) -> float:
        return IDLE_S + o.warmup + o.count * (o.short_timeout + o.gap) + TAIL_S + 10

    def measure(self, bed: Bed, scenario: Scenario, plan: FlowPlan, options: ResponsivenessOptions,
                result: RepResult) -> RepResult:
        o = options
        interval = o.probe_ms / 1e3
        idle = bed.ping(interval)
        time.sleep(IDLE_S)
        idle_rtts = [e.rtt_ms for e in idle.stop() if e.rtt_ms is not None]
        idle_rtt = statistics.median(idle_rtts) if idle_rtts else None
        bulk: dict[str, TransferResult] = {}
        start = time.time()
        thread = threading.Thread(target=lambda: bulk.update(bed.run_clients(self._bulk_timeout(o), flows=["bulk"])),
                                  name="bulk", daemon=True)
        thread.start()
        thread.join(o.warmup)
        probe = bed.ping(interval)
        since = time.time()
        shorts: list[tuple[float, TransferResult]] = []
        while thread.is_alive() and len(shorts) < o.count:
            if shorts and o.gap:
                time.sleep(o.gap)
            at = time.time()
            shorts.append((at, bed.run_clients(o.short_timeout, flows=["short"])["short"]))
        until = time.time()
        loaded = thread.is_alive()  # the bulk flow ran through the window
        thread.join(TAIL_S)
        echoes = probe.stop()
        bed.stop_clients()
        thread.join(10)
        records = bed.finish()

        t0_ms = stats_ms(bed, start)
        downloads = [ShortDownload(start_s=at - start, ok=r.ok, completion_s=r.completion_s, error=r.error,
                                   first_byte_s=None if r.first_byte_s is None else r.first_byte_s - r.request_s)
                     for at, r in shorts]
        write_json(bed.workdir / PROBE, ProbeRecord(
            t_s=[e.sent_wall - start for e in echoes], rtt_ms=[e.rtt_ms for e in echoes], shorts=downloads,
            window_s=(since - start, until - start), idle_rtt_ms=idle_rtt))
        window = summarize(echoes, since, until)
        queues = leg_queues(records)
        done = [d.completion_s for d in downloads if d.ok and d.completion_s is not None]
        load = (window_means(records, t0_ms, until - start, since - start).get(plan.default_bearer)
                if records and t0_ms is not None else None)
        waits = [q.sojourn_p99_ms for q in queues if q.packets_out and q.sojourn_p99_ms is not None]
        failed = next((d for d in downloads if not d.ok), None)
        bulk_r = bulk.get("bulk")
        if not loaded:
            result.ok = False
            result.error = (f"the bulk flow ended before the short downloads did: "
                            f"{bulk_r.error if bulk_r else 'it did not start'}")
        elif failed is not None:
            result.ok, result.error = False, f"short download at {failed.start_s:.1f} s: {failed.error}"
        else:
            result.ok = bool(done) and window.sent > 0
            result.error = None if result.ok else "the probe sent no echo in the window"
        result.metrics = {
            "short_s": statistics.median(done) if done else None, "short_max_s": max(done) if done else None,
            "rtt_p50_ms": window.rtt_p50_ms, "rtt_p99_ms": window.rtt_p99_ms, "rpm": window.rpm,
            "echo_loss": window.loss, "idle_rtt_ms": idle_rtt,
            "sojourn_p99_ms": max(waits) if waits else None, "load_mbps": load,
            "aqm_dropped": float(sum(q.aqm_dropped for q in queues)),
            "aqm_marked": float(sum(q.aqm_marked for q in queues)),
            # what the receivers saw of those marks (a marked packet PDCP discarded never arrives)
            "ce_bulk": _num(ce_seen(records, plan.flow("bulk").port)),
            "ce_short": _num(ce_seen(records, plan.flow("short").port)),
        }
        result.flows = [FlowResult.of(plan, "bulk", None, load), FlowResult.of(plan, "short", None)]
        result.details = {"probe": window, "legs": queues, "short": o.short,
                          "short_completion_all_s": [d.completion_s for d in downloads],
                          "pdcp": pdcp_summary(records, plan.default_bearer)}
        result.t0_ms = t0_ms
        return result

    def run_figure(self, run_dir: Path, run: StoredRun[ResponsivenessOptions], path: Path, title: str) -> Path:
        probe = Path(run_dir) / PROBE
        if not probe.is_file() or run.t0_ms is None:
            return figures.empty_figure(path, title, "no probe record in this run")
        record = ProbeRecord.model_validate_json(probe.read_bytes())
        return run_figure(record, figures.read_stats(run_dir), run.t0_ms, path, title)

    def run_title(self, scenario: Scenario, options: ResponsivenessOptions, result: RepResult) -> str:
        aqm = ",".join(scenario.aqm) if scenario.aqm else "tail-drop"
        return (f"{stack_label(result.stack, options.stand_in)} short downloads beside {options.bulk_stack} bulk, "
                f"{options.bearer.upper()}, {aqm}")

    def table(self, summary: Summary) -> Table:
        """One row per metric: six metrics side by side do not fit a terminal."""
        runs = f"{summary.reps - summary.failed}/{summary.reps}"
        rows = [[m.label, m.unit, _fmt(summary.metrics[m.name].mean, m.digits), _fmt(summary.metrics[m.name].std, m.digits),
                 runs] for m in self.metrics]
        return Table(["metric", "unit", "mean", "std", "runs"], rows, [summary.failed == summary.reps] * len(rows))

    def describe(self, rep: RepResult) -> str:
        if not rep.ok:
            return f"failed: {rep.error}"
        m = rep.metrics
        return (f"short {_fmt(m.get('short_s'), 3)} s, RTT p50 {_fmt(m.get('rtt_p50_ms'), 1)} ms p99 "
                f"{_fmt(m.get('rtt_p99_ms'), 1)} ms, {_fmt(m.get('rpm'), 0)} RPM, queue p99 "
                f"{_fmt(m.get('sojourn_p99_ms'), 1)} ms")

    def headline(self, summary: Summary) -> str:
        m = summary.metrics
        if m["short_s"].mean is None:
            return "short download: no successful run"
        return (f"short download {m['short_s'].mean:.3f} s, RTT under load p99 {_fmt(m['rtt_p99_ms'].mean, 1)} ms, "
                f"{_fmt(m['rpm'].mean, 0)} RPM (ICMP probes)")

    def json_output(self, summary: Summary) -> JsonObject:
        return {"metrics": {k: v.model_dump() for k, v in summary.metrics.items()}, "stack": summary.stack,
                "scenario": summary.scenario, "host_config": summary.host_config, "failed": summary.failed,
                "seeds": summary.seeds}

    def sweep_tables(self, rows: Sequence[StoredRun[ResponsivenessOptions]]) -> list[tuple[str, Table]]:
        """Every headline metric per point (mean and std over the successful runs)."""
        tables = {m.name: {d.at: d for d in figures.metric_table(rows, m.name)} for m in self.metrics}
        cols = ["value", "series"] + [c for m in self.metrics for c in (m.column(), "std")] + ["n"]
        body, failed = [], []
        for at, d in tables[self.metrics[0].name].items():
            row = [at.value or "-", at.series]
            for m in self.metrics:
                e = tables[m.name].get(at)
                row += [_fmt(e.mean if e else None, m.digits), _fmt(e.std if e else None, m.digits)]
            body.append(row + [str(d.n)])
            failed.append(d.n == 0)
        caption = "short downloads, the probe's round trips and the legs' queue waits under load (mean, std over runs)"
        return [(caption, Table(cols, body, failed))]

EXPERIMENT = Responsiveness()


def standing_wait_s(s: Scenario, leg: int) -> float:
    """How long a packet waits in ``leg``'s downlink queue (0-based) while a bulk flow keeps
    it: under tail drop the whole queue at the leg's rate (a full-sized packet per slot of a
    leg's rate stage; a device's bytes at a cell), under an AQM about twice its target. A
    planner's figure, not a prediction of the run."""
    kind = s.aqm[leg] if s.aqm is not None else "tail-drop"
    if kind != "tail-drop":
        return 2 * (s.aqm_target_ms if s.aqm_target_ms is not None else AQM_TARGET_MS[kind]) / 1e3
    if s.link is not None:
        cell = s.link.cells[leg]
        return cell.queue_bytes * 8 / (max(cell.capacity_mbps, 0.1) * 1e6)
    rate_mbps = total_capacity_mbps(s) / s.legs if s.trace else s.bw[leg]
    return s.queue_packets * 1500 * 8 / (max(rate_mbps, 0.1) * 1e6)


def _num(n: int | None) -> float | None:
    return None if n is None else float(n)

