"""Split at the link layer or the transport layer: one connection's traffic over two legs
by PDCP Dual Connectivity (``pdcp``; ``pdcp-dup``: duplication), by the transport itself
(``mptcp``: the kernel's MPTCP; ``mpquic``: noq's multipath QUIC; each subflow or path
pinned to one leg both ways by a paths bearer), or not at all (``sc1``, ``sc2``: single
connectivity on one leg), over the same scenario and seed.

``--setting alone``: the flow alone downloads ``size`` bytes (goodput, completion time,
each leg's throughput and utilization over the transfer, the reordering its receiver
saw), then ``shorts`` downloads of ``short`` bytes one after another on fresh
connections (their completion times). ``--setting fairness``: the flow against one TCP
flow on each leg (SC bearers, ports 8000 and 9000), all downloading for ``duration``
seconds (each asks for more than the legs carry in that time, ``fairness_size``): each
flow's mean throughput over the window from dcemu's per-bearer records,
Jain's index over the three, and per leg Jain's index of the aggregated flow's share of
that leg (what the leg carried less the TCP flow) against the TCP flow, with the ratio of
the two (``share_leg1``: 1 is a TCP flow's share, 0.5 half of it): the coupled-congestion
question, is the multipath flow fair to the single-path one on each bottleneck?

Reordering the receiving transport saw (``reordered``): for PDCP bearers, SDUs that
waited in the PDCP reordering buffer (what the transport is spared; the stalls are in
the details); for MPTCP, segments the receiver queued out of order at the data level
(``MPTcpExt OFOQueue``: reordering across subflows reaches it); for multipath QUIC,
what noq's per-path counters report (None where it reports nothing). They count
different things at different layers; the docs page (docs/split-layer.md) says how to
read them side by side.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, ClassVar, Literal

from pydantic import Field, ValidationInfo, model_validator

from ..analysis import completion, figures
from ..analysis.downloads import Download
from ..analysis.grid import mean_std_text, pivot
from ..analysis.metrics import PdcpSummary, jain, leg_window_means, pdcp_summary
from ..analysis.run_events import RunFacts
from ..analysis.stored_run import StoredRun, number
from ..dcemu.records import Stats
from ..endpoints.base import TransferResult, Workload
from ..endpoints.mptcp.adapter import schedulers as mptcp_schedulers
from ..files import JsonObject, clip
from ..flowplan import Bearer, Flow, FlowPlan, PlanError
from ..scenario import STORED, Scenario, build
from ..testbed import Bed, stats_ms
from .base import Experiment, FlowResult, Metric, RepResult, Size, StackName, StackOptions, Summary, Table, _fmt, in_range
from .window import run_window

PORT = 4433
TCP_PORTS = (8000, 9000)  # the TCP flows on leg 1 and leg 2 in the fairness setting
STATS_INTERVAL_MS = 50.0
MAX_SHORTS = 100
MIN_FAIR_SIZE, MAX_FAIR_SIZE = 1_000_000_000, 100_000_000_000  # bytes each flow asks for in the fairness setting


@dataclass(frozen=True)
class Aggregation:
    """How one connection uses the legs: the layer that splits, the bearer it needs, and
    the stack it implies (None: ``--stack``)."""

    name: str
    layer: Literal["link", "transport", "none"]
    stack: str | None
    what: str

    def bearer(self) -> Bearer:
        if self.layer == "transport":
            return Bearer("agg", "paths")
        if self.layer == "none":
            return Bearer("agg", "sc", (int(self.name[-1]),))
        return Bearer("agg")


AGGREGATIONS = {a.name: a for a in (
    Aggregation("pdcp", "link", None, "PDCP Dual Connectivity: the bearer split over both legs, reordered at the device"),
    Aggregation("pdcp-dup", "link", None, "PDCP duplication: every packet on both legs, the first copy kept"),
    Aggregation("mptcp", "transport", "mptcp", "the kernel's Multipath TCP, a subflow per leg"),
    Aggregation("mpquic", "transport", "noq", "multipath QUIC (noq, draft-ietf-quic-multipath), a path per leg"),
    Aggregation("sc1", "none", None, "single connectivity on leg 1"),
    Aggregation("sc2", "none", None, "single connectivity on leg 2"),
)}  # fmt: skip
AggregationName = Literal["pdcp", "pdcp-dup", "mptcp", "mpquic", "sc1", "sc2"]


class SplitLayerOptions(StackOptions):
    aggregation: AggregationName = Field("pdcp", description=(
        "How the connection uses the two legs: " + "; ".join(f"{a.name}: {a.what}" for a in AGGREGATIONS.values())
        + "."))
    stack: StackName = Field("tcp", description=(
        "Stack of pdcp, pdcp-dup, sc1 and sc2 (mptcp runs the kernel's MPTCP over the tcp stack's programs, mpquic "
        "noq's multipath QUIC)."))
    setting: Literal["alone", "fairness"] = Field("alone", description=(
        "alone: the flow by itself (long then short downloads); fairness: against one TCP flow on each leg."))
    size: Size = Field(20_000_000, description=(
        "Bytes of the long download (alone); in the fairness setting each flow asks for at least this, 1 GB and twice "
        "what the legs carry in the window, so none ends within it."), json_schema_extra={"show": "20MB"})
    short: Size = Field(200_000, description="Bytes of each short download (alone).", json_schema_extra={"show": "200kB"})
    shorts: Annotated[int, in_range(0, MAX_SHORTS)] = Field(5, description=(
        f"Short downloads after the long one, one after another on fresh connections (0-{MAX_SHORTS}; alone)."))
    duration: float = Field(30.0, ge=1, le=86400, description="Seconds measured in the fairness setting.")
    timeout: float | None = Field(None, ge=1, le=86400, description="Seconds a download may take [default: from size and rate].")
    mptcp_scheduler: str = Field("default", description=(
        "The kernel's MPTCP packet scheduler (net.mptcp.scheduler, in both namespaces), one of "
        "net.mptcp.available_schedulers; with mptcp only."))

    @model_validator(mode="after")
    def _stack_of_the_aggregation(self, info: ValidationInfo) -> "SplitLayerOptions":
        # A run read back from a store ran where the scheduler was offered; this machine may have none.
        stored = bool((info.context or {}).get(STORED))
        if not stored and (self.mptcp_scheduler != "default" or "mptcp_scheduler" in self.model_fields_set):
            offered = mptcp_schedulers()
            if self.mptcp_scheduler not in offered:
                raise ValueError(f"mptcp_scheduler: this kernel offers {', '.join(offered) or 'none (no MPTCP)'} "
                                 f"(got {clip(self.mptcp_scheduler)})")
        implied = AGGREGATIONS[self.aggregation].stack
        if implied is not None and "stack" in self.model_fields_set and self.stack != implied:
            raise ValueError(f"stack: {self.aggregation} runs {implied}; --stack is for pdcp, pdcp-dup, sc1 and sc2 "
                             f"(got {self.stack})")
        if self.short < 1 and self.shorts:
            raise ValueError("short: must be at least 1 byte")
        return self

    def flow_stack(self) -> str:
        return AGGREGATIONS[self.aggregation].stack or self.stack


def fairness_size(scenario: Scenario, o: SplitLayerOptions) -> int:
    """What each flow asks for in the fairness setting: at least ``size`` and 1 GB, and
    twice what every leg together carries in the window, so that no flow ends within it
    (each flow's mean is taken over the whole window, as in the fairness experiment)."""
    rate = sum(scenario.bw) * 1e6 if not (scenario.trace or scenario.traces) else 0.0
    return int(min(MAX_FAIR_SIZE, max(o.size, MIN_FAIR_SIZE, 2 * rate * o.duration / 8)))


def _counters(transfer: TransferResult | None) -> JsonObject:
    mptcp = (transfer.extra.get("mptcp") if transfer else None) or {}
    return mptcp.get("counters") or {}


def reordered(summary: Stats | None, aggregation: Aggregation, transfer: TransferResult | None) -> int | None:
    """What the receiving transport was spared or saw of reordering (module docstring)."""
    if aggregation.layer != "transport":
        b = summary.bearer("agg") if summary else None
        if b is None or b.rx is None:
            return None
        waited_none = sum(n for lo, n in b.rx.wait.buckets if lo == 0)
        return b.rx.wait.count - waited_none
    if aggregation.stack == "mptcp":  # the counters that grew: an absent one stayed put
        return int(_counters(transfer).get("OFOQueue", 0)) if transfer and transfer.extra.get("mptcp") else None
    stack = (transfer.extra.get("stack") if transfer else None) or {}
    value = stack.get("reordered")
    return int(value) if isinstance(value, int) else None


def agg_bearers(summary: Stats | None) -> list[str]:
    """The dcemu bearers of the aggregated flow: ``agg``, or a paths bearer's ``agg-leg*``."""
    return [b.name for b in (summary.bearers if summary else []) if b.name == "agg" or b.name.startswith("agg-leg")]


class SplitLayer(Experiment[SplitLayerOptions]):
    name = "split-layer"
    help = ("One connection over two legs, split at the link layer (PDCP DC, duplication), at the transport layer "
            "(MPTCP, multipath QUIC, each path on one leg) or not at all (SC on leg 1 or 2): goodput, completion "
            "times, each leg's use and reordering, alone or against a TCP flow on each leg with Jain's index.")
    options_model = SplitLayerOptions
    metrics: ClassVar[tuple[Metric, ...]] = (
        Metric("goodput_mbps", "goodput", "Mbit/s"),
        Metric("completion_s", "completion time", "s", digits=3),
        Metric("short_completion_s", "short download completion (median)", "s", digits=3),
        Metric("jfi", "Jain's fairness index", digits=3),
        Metric("jfi_leg1", "JFI on leg 1", digits=3),
        Metric("jfi_leg2", "JFI on leg 2", digits=3),
        Metric("share_leg1", "aggregated / TCP on leg 1", digits=2),
        Metric("share_leg2", "aggregated / TCP on leg 2", digits=2),
        Metric("leg1_util", "leg 1 utilization", digits=3),
        Metric("leg2_util", "leg 2 utilization", digits=3),
        Metric("reordered", "reordered at the receiver", "packets", digits=0))
    run_figure_name = "legs.png"
    run_figure_kind = "legs"

    def scenario(self, scenario: Scenario, options: SplitLayerOptions) -> Scenario:
        # Each leg is a radio bearer, which delivers in order (RLC): jitter keeps the order
        # unless --jitter-reorders asks otherwise. netem's reordering jitter (the DC study's
        # legs) reached MPTCP and multipath QUIC raw, a path bearer having no PDCP receiver to
        # undo it, while PDCP and SC bearers had it undone: at 50:50 ms it cost noq 2.4 times
        # the bytes in spurious retransmissions, and reset MPTCP's joining subflow
        # (docs/split-layer.md, "Asymmetric delay").
        if scenario.duplicate and options.aggregation != "pdcp-dup":
            raise PlanError(f"--duplicate: the aggregation decides it here, and {options.aggregation} does not "
                            "duplicate (--aggregation pdcp-dup is PDCP duplication)")
        in_order = scenario.jitter_reorders is None
        return build(scenario, duplicate=options.aggregation == "pdcp-dup",
                     stats_interval_ms=max(scenario.stats_interval_ms, STATS_INTERVAL_MS),
                     jitter_reorders=False if in_order else None)

    def unused(self, options: SplitLayerOptions) -> dict[str, str]:
        out: dict[str, str] = {}
        if options.setting == "fairness":
            out |= {"short": "the fairness setting runs no short downloads", "shorts": "the fairness setting runs "
                    "no short downloads"}
        else:
            out["duration"] = "the alone setting measures downloads, not a window (--setting fairness does)"
        if options.aggregation != "mptcp":
            out["mptcp_scheduler"] = f"{options.aggregation} runs no MPTCP (--aggregation mptcp does)"
        return out

    def plan(self, scenario: Scenario, options: SplitLayerOptions) -> FlowPlan:
        o = options
        if scenario.legs != 2:
            raise PlanError(f"split-layer needs two legs (got {scenario.legs})")
        bearers = [AGGREGATIONS[o.aggregation].bearer()]
        flows = [Flow("agg", o.flow_stack(), "agg", Workload.single(o.size), o.cc, PORT)]
        if o.setting == "fairness":
            size = fairness_size(scenario, o)
            flows = [replace(flows[0], workload=Workload.single(size))]
            # TCP flows share the server namespace's congestion control with a TCP-family aggregated flow.
            tcp_cc = o.cc if o.flow_stack() in ("tcp", "mptcp") else None
            for leg, port in enumerate(TCP_PORTS, start=1):
                bearers.append(Bearer(f"tcp{leg}", "sc", (leg,)))
                flows.append(Flow(f"tcp{leg}", "tcp", f"tcp{leg}", Workload.single(size), tcp_cc, port))
        plan = FlowPlan.build(bearers, flows, scenario, STATS_INTERVAL_MS)
        if o.flow_stack() == "mptcp":
            plan = replace(plan, netns_sysctls=(("net.mptcp.scheduler", o.mptcp_scheduler),))
        return plan

    def estimate_s(self, scenario: Scenario, options: SplitLayerOptions, capacity_mbps: float) -> float:
        if options.setting == "fairness":
            return 2.0 + options.duration
        goodput = max(0.6 * capacity_mbps, 1.0)
        return (options.size + options.shorts * options.short) * 8 / (goodput * 1e6) + options.shorts * 0.3

    def longest_s(self, scenario: Scenario, plan: FlowPlan, options: SplitLayerOptions) -> float | None:
        if options.setting == "fairness":
            return float(options.duration)
        capacity = 2.0 if scenario.trace or scenario.traces else float(sum(scenario.bw))
        timeout = options.timeout or self.timeout_s(plan, capacity)
        return timeout + options.shorts * min(timeout, 60.0)

    def measure(self, bed: Bed, scenario: Scenario, plan: FlowPlan, options: SplitLayerOptions,
                result: RepResult) -> RepResult:
        if options.setting == "fairness":
            return self._fairness(bed, plan, options, result)
        return self._alone(bed, scenario, plan, options, result)

    def _alone(self, bed: Bed, scenario: Scenario, plan: FlowPlan, o: SplitLayerOptions, result: RepResult) -> RepResult:
        capacity = 2.0 if scenario.trace or scenario.traces else float(sum(scenario.bw))
        timeout = o.timeout or self.timeout_s(plan, capacity)
        r = bed.run_clients(timeout, flows=["agg"])["agg"]
        shorts = [bed.run_clients(min(timeout, 60.0), flows=["agg"], workloads={"agg": Workload.single(o.short)})["agg"]
                  for _ in range(o.shorts if r.ok else 0)]  # fmt: skip
        records = bed.finish()
        summary = records[-1] if records and records[-1].type == "summary" else None
        t0 = stats_ms(bed, r.request_wall)
        done = [s.completion_s for s in shorts if s.ok and s.completion_s is not None]
        legs = (leg_window_means(records, t0, r.completion_s)
                if records and t0 is not None and r.completion_s else {})  # fmt: skip
        fixed = not (scenario.trace or scenario.traces)
        agg = AGGREGATIONS[o.aggregation]
        result.ok = r.ok and len(done) == o.shorts
        failed_short = next((s.error for s in shorts if not s.ok), None)
        result.error = r.error or (f"short download: {failed_short}" if failed_short else None)
        result.metrics = {
            "goodput_mbps": r.goodput_mbps, "completion_s": r.completion_s,
            "short_completion_s": statistics.median(done) if done else None,
            "leg1_util": legs["leg1"] / scenario.bw[0] if fixed and "leg1" in legs else None,
            "leg2_util": legs["leg2"] / scenario.bw[1] if fixed and "leg2" in legs else None,
            "reordered": reordered(summary, agg, r),
        }  # fmt: skip
        result.flows = [FlowResult.of(plan, "agg", r)]
        result.details = {"aggregation": o.aggregation, "layer": agg.layer, "size": o.size, "short": o.short,
                          "short_completion_all_s": [s.completion_s if s.ok else None for s in shorts],
                          "leg_mbps": legs, "paths": self._paths(summary), "pdcp": self._pdcp(records, agg),
                          "transport": self._transport(r), "client_udp_drops": bed.client_udp_drops,
                          "outage": scenario.outage.model_dump() if scenario.outage else None}  # fmt: skip
        result.t0_ms = t0
        return result

    def _fairness(self, bed: Bed, plan: FlowPlan, o: SplitLayerOptions, result: RepResult) -> RepResult:
        w = run_window(bed, o.duration, 0.0)  # the transfers cut at the end of the window: expected
        records, t0, means, legs, transfers = w.records, w.t0_ms, w.means, w.legs, w.transfers
        summary = records[-1] if records and records[-1].type == "summary" else None
        parts = [means.get(b) for b in agg_bearers(summary)]
        agg = sum(v for v in parts if v is not None) if parts and None not in parts else None
        tcp = [means.get("tcp1"), means.get("tcp2")]
        result.ok = agg is not None and None not in tcp and {"leg1", "leg2"} <= set(legs)
        result.error = None if result.ok else "no dcemu statistics for the window"
        result.flows = [FlowResult.of(plan, "agg", transfers.get("agg"), agg)] + [
            FlowResult.of(plan, f"tcp{k}", transfers.get(f"tcp{k}"), tcp[k - 1]) for k in (1, 2)]
        on_leg: dict[int, float] = {}
        result.metrics = {"goodput_mbps": agg, "jfi": None, "jfi_leg1": None, "jfi_leg2": None, "share_leg1": None,
                          "share_leg2": None,
                          "reordered": reordered(summary, AGGREGATIONS[o.aggregation], transfers.get("agg"))}
        if agg is not None and tcp[0] is not None and tcp[1] is not None and result.ok:
            for k, t in ((1, tcp[0]), (2, tcp[1])):
                on_leg[k] = max(legs[f"leg{k}"] - t, 0.0)  # the leg's output less the TCP flow's
                result.metrics[f"jfi_leg{k}"] = jain([on_leg[k], t])
                # Jain's index is symmetric: the ratio says which way (1: a TCP's share of the leg).
                result.metrics[f"share_leg{k}"] = on_leg[k] / t if t > 0 else None
            result.metrics["jfi"] = jain([agg, tcp[0], tcp[1]])
        result.details = {"aggregation": o.aggregation, "layer": AGGREGATIONS[o.aggregation].layer,
                          "window_s": o.duration, "size": o.size, "leg_mbps": legs, "agg_on_leg_mbps": on_leg,
                          "paths": self._paths(summary), "transport": self._transport(transfers.get("agg"))}
        result.t0_ms = t0
        return result

    @staticmethod
    def _paths(summary: Stats | None) -> dict[str, dict[str, int]]:
        """Per dcemu bearer of the aggregated flow: bytes delivered down and carried up, and
        PDUs per leg: the proof of which legs carried it."""
        out = {}
        for name in agg_bearers(summary):
            b = summary.bearer(name) if summary else None
            if b is not None:
                out[name] = {"delivered_bytes": b.delivered_bytes, "uplink_bytes": b.uplink_bytes,
                             **{f"pdus_{leg}": n for leg, n in b.tx_pdus}}
        return out

    @staticmethod
    def _pdcp(records: Sequence[Stats], agg: Aggregation) -> PdcpSummary | None:
        return pdcp_summary(records, "agg") if agg.layer != "transport" and records else None

    @staticmethod
    def _transport(r: TransferResult | None) -> JsonObject:
        """What the stack reported of its subflows or paths: MPTCP's ``extra.mptcp``, a
        multipath QUIC stack's paths per connection (``extra.stack.connections[].paths``)."""
        if r is None:
            return {}
        out: JsonObject = {}
        if r.extra.get("mptcp"):
            out["mptcp"] = r.extra["mptcp"]
        conns = (r.extra.get("stack") or {}).get("connections") or []
        paths = [c.get("paths") for c in conns if isinstance(c, dict) and c.get("paths")]
        if paths:
            out["paths"] = paths
        return out

    # -- output ----------------------------------------------------------------------------

    def describe(self, rep: RepResult) -> str:
        m = rep.metrics
        if not rep.ok:
            return f"failed: {rep.error}"
        if m.get("jfi") is not None:
            return (f"{m.get('goodput_mbps') or 0:.2f} Mbit/s against TCP on each leg, JFI {m['jfi']:.3f} "
                    f"(leg 1 {m.get('jfi_leg1') or 0:.3f}, {m.get('share_leg1') or 0:.2f} of TCP's; "
                    f"leg 2 {m.get('jfi_leg2') or 0:.3f}, {m.get('share_leg2') or 0:.2f})")
        short = m.get("short_completion_s")
        return (f"{m.get('goodput_mbps') or 0:.2f} Mbit/s" + (f", short {short * 1e3:.0f} ms" if short else "")
                + f", reordered {m['reordered']}" * (m.get("reordered") is not None))

    def headline(self, summary: Summary) -> str:
        g = summary.metrics["goodput_mbps"]
        agg = summary.options.get("aggregation")
        if g.mean is None:
            return f"{agg}: no successful run"
        j = summary.metrics["jfi"].mean
        return f"{agg}: goodput {g.mean:.2f} Mbit/s" + (f", JFI {j:.3f}" if j is not None else "")

    def table(self, summary: Summary) -> Table:
        """One row per metric this setting measured (the others stay out)."""
        rows, failed = [], []
        for m in self.metrics:
            ms = summary.metrics[m.name]
            if all(v is None for v in ms.runs):
                continue
            rows.append([m.axis, _fmt(ms.mean, m.digits), _fmt(ms.std, m.digits),
                         f"{sum(v is not None for v in ms.runs)}/{summary.reps}"])
            failed.append(ms.mean is None)
        return Table([f"{summary.options.get('aggregation')} ({summary.stack} {summary.cc})", "mean", "std", "runs"],
                     rows, failed, text_columns=1)

    def run_title(self, scenario: Scenario, options: SplitLayerOptions, result: RepResult) -> str:
        stack = options.flow_stack()
        outage = f", leg {scenario.outage.leg} down {scenario.outage.duration_s:g} s" if scenario.outage else ""
        return f"split-layer {options.aggregation} ({stack} {result.cc}), {options.setting}{outage}"

    def run_figure(self, run_dir: Path, run: Run, path: Path, title: str) -> Path:
        """Each leg's throughput over the whole transfer (or window), the outage shaded."""
        window = run.metric("window_s") or (run.metric("completion_s") or 3.0) + 0.5
        spans: tuple[figures.Span, ...] = ()
        outage = run.scenario.outage
        if outage is not None:
            start = outage.at_s - run.t0_ms / 1e3
            spans = ((start, start + outage.duration_s, f"leg {outage.leg} down"),)
        return figures.link_usage(run_dir, run.t0_ms, figures.capacities_of(run.scenario), path, title, window, spans,
                                  RunFacts.of(run))

    def sweep_figures(self, rows: Sequence[Run], out_dir: Path, stem: str, title: str,
                      xlabel: str) -> list[tuple[Path, str]]:
        """Runs alone: goodput, the median short completion and the reordering against the
        swept value (a run without a sweep: against its condition, e.g. an outage or the
        traces), one series per aggregation, and completion-time CDFs. Runs against TCP:
        each flow's throughput as bars with Jain's index overall and per leg, and the JFI
        against the swept value. Runs through an outage: each leg's throughput over time."""
        out: list[tuple[Path, str]] = []
        none = all(r.sweep == "none" for r in rows)
        alone = _view([r for r in rows if not _fair(r)], none)
        fair = _view([r for r in rows if _fair(r)], none)
        xl = "condition" if none else xlabel
        if alone:
            for name, label in (("goodput_mbps", "goodput (Mbit/s)"), ("short_completion_s", "median short completion (s)"),
                                ("reordered", "reordered at the receiver (packets)")):
                if any(r.metric(name) is not None for r in alone):
                    path = figures.metric_vs_param(alone, name, label, out_dir / f"{stem}-{name}.png", title, xl)
                    out.append((path, f"{title}, alone ({label}: mean, std over repetitions; one series per aggregation)"))
            downloads = completion_downloads(alone)
            if downloads:
                modes = list(dict.fromkeys(d.mode for d in downloads))
                path = completion.completion_cdfs(downloads, modes, None, out_dir / f"{stem}-cdf.png", title)
                out.append((path, f"{title}, alone (completion times of every run's downloads, one panel per size)"))
        if fair:
            path = figures.flow_bars(fair, ["agg", "tcp1", "tcp2"], out_dir / f"{stem}-fairness.png",
                                     f"{title}, against TCP on each leg", xlabel,
                                     labels={"agg": "aggregated flow", "tcp1": "TCP on leg 1", "tcp2": "TCP on leg 2"},
                                     annotate="jfi", more={"jfi_leg1": "JFI leg 1", "jfi_leg2": "JFI leg 2",
                                                           "share_leg1": "share leg 1", "share_leg2": "share leg 2"})
            out.append((path, f"{title}: each flow's mean throughput over the window (std over repetitions), one panel "
                              f"per aggregation; Jain's index of the three and, per leg, of the aggregated flow's share "
                              f"of that leg against its TCP flow"))
            if not none:
                path = figures.metric_vs_param(fair, "jfi", "Jain's index", out_dir / f"{stem}-jfi.png", title, xlabel)
                out.append((path, f"{title}, against TCP on each leg (Jain's index: mean, std over repetitions)"))
        for r in rows:  # one outage run per aggregation: the time series explains the goodput
            if r.scenario.outage is not None and r.ok and r.rep == 1 and r.run_path is not None:
                agg = r.options.aggregation
                path = out_dir / f"{stem}-outage-{agg}.png"
                cap = f"{title}: {agg} ({r.stack}), each leg's throughput through the outage (shaded), rep 1"
                out.append((self.run_figure(r.run_path, r, path, cap), cap))
        return out

    def sweep_tables(self, rows: Sequence[Run]) -> list[tuple[str, Table]]:
        """The aggregations side by side (goodput alone, Jain's index against TCP: mean ±
        std (n) per value and aggregation), then per value (or condition) and aggregation
        every metric that has values, alone and against TCP apart."""
        none = all(r.sweep == "none" for r in rows)
        out = []
        for caption, part, metric in (("alone", [r for r in rows if not _fair(r)], "goodput_mbps"),
                                      ("against a TCP flow on each leg", [r for r in rows if _fair(r)], "jfi")):
            if part:
                view = _view(part, none)
                axis = next(m for m in self.metrics if m.name == metric)
                out.append((f"{caption}: {axis.axis} by aggregation, mean ± std (n runs)",
                            self._side_by_side(view, axis)))
                out.append((caption, self._table(view)))
        return out

    @staticmethod
    def _side_by_side(rows: Sequence[Run], metric: Metric) -> Table:
        """One row per value, one column per series: the comparison a reader looks for."""
        cells = {(d.at.value, d.at.series): d for d in figures.metric_table(rows, metric.name)}

        def text(value: str, series: str) -> str | None:
            d = cells.get((value, series))
            return None if d is None or d.mean is None else mean_std_text(d.mean, d.std, metric.digits, d.n)

        series = sorted({k[1] for k in cells})
        body, failed = pivot(list(dict.fromkeys(k[0] for k in cells)), series, text, label=lambda v: v or "-")
        return Table(["value", *series], body, failed, text_columns=1)

    def _table(self, rows: Sequence[Run]) -> Table:
        names = [m for m in self.metrics if any(r.metric(m.name) is not None for r in rows)]
        tables = {m.name: {(d.at.value, d.at.series): d for d in figures.metric_table(rows, m.name)} for m in names}
        keys = list(dict.fromkeys(k for t in tables.values() for k in t))
        body, failed = [], []
        for key in keys:
            cells = [key[0] or "-", key[1]]
            for m in names:
                d = tables[m.name].get(key)
                cells.append("-" if d is None or d.mean is None else mean_std_text(d.mean, d.std, m.digits))
            n = max((tables[m.name][key].n for m in names if key in tables[m.name]), default=0)
            body.append([*cells, str(n)])
            failed.append(n == 0)
        return Table(["value", "series", *(m.axis for m in names), "n"], body, failed)


Run = StoredRun[SplitLayerOptions]


def _fair(r: Run) -> bool:
    return r.options.setting == "fairness"


def condition(r: Run) -> str:
    """What a run without a sweep varied: an outage, traces, or nothing ("alone")."""
    sc = r.scenario
    if sc.outage is not None:
        return f"leg {sc.outage.leg} down {sc.outage.duration_s} s"
    traces = sc.traces or ([sc.trace] if sc.trace else [])
    if traces:
        return "traces " + " + ".join(Path(str(t)).parent.name for t in traces)
    return "fairness" if _fair(r) else "alone"


def _view(rows: Sequence[Run], by_condition: bool) -> list[Run]:
    """Rows as the figures should tell them apart: a series per aggregation and stack (not
    by the setting or the scenario a group set), and for runs without a sweep, the
    condition as the value."""
    out = []
    for r in rows:
        agg = r.flow("agg")
        stack = agg.stack if agg is not None else r.stack
        update: dict[str, object] = {"series": f"{r.options.aggregation} ({stack} {r.cc})"}
        if by_condition:
            update.update(value=condition(r), value_num=None)
        out.append(r.model_copy(update=update))
    return out


def completion_downloads(rows: Sequence[Run]) -> list[Download]:
    """Each run's long download and short downloads as ``completion`` downloads, the mode
    being the run's series (its aggregation)."""
    labels = figures.series_of(rows)
    out: list[Download] = []
    for r in rows:
        if not r.ok:
            continue
        mode = labels[r.run_key]
        size, short, done = r.metric("size"), r.metric("short"), r.metric("completion_s")
        if done is not None and size:
            out.append(Download(mode=mode, size=int(size), ok=True, completion_s=done))
        for t in r.metrics.get("short_completion_all_s") or []:
            if (s := number(t)) is not None and short:
                out.append(Download(mode=mode, size=int(short), ok=True, completion_s=s))
    return out


EXPERIMENT = SplitLayer()
