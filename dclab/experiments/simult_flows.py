"""The kernel's MPTCP selftest ``simult_flows.sh`` rebuilt on dcemu legs, as an outside
yardstick for every aggregation of the split-layer study: one download of 16 MiB over two
legs with the selftest's rates and delays, judged by its pass rule
(analysis/simult_flows.py; docs/split-layer.md, "An outside yardstick").

A case fixes the legs: each leg's rate, its round trip (the selftest delays both
directions of a path by D; here the downlink carries 2 D and the uplinks none, since
dcemu's uplinks share one delay; the round trip is the same), no jitter, and a queue of
1000 packets (netem's default limit); giving any of these is refused. ``pdcp`` splits in the legs' rate ratio (the best
static split). What the case does not set (loss, t-Reordering, a trace) stays as given.
The run is split-layer's ``alone`` setting without short downloads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal

from pydantic import Field

from ..analysis.metrics import mean_std
from ..analysis.simult_flows import CASES, SIZE, CaseName, judge
from ..analysis.stored_run import StoredRun
from ..flowplan import FlowPlan
from ..scenario import OPTIONS, Scenario, ScenarioError, build
from ..testbed import Bed
from .base import Metric, RepResult, Size, Summary, Table, _fmt
from .split_layer import SplitLayer, SplitLayerOptions, _view

QUEUE_PACKETS = 1000  # netem's default limit, the selftest's queue on each path
# What a case sets; given otherwise, it is refused rather than silently replaced.
CASE_FIELDS = ("bw", "delay", "delay_cov", "uplink_delay", "queue_packets", "trace", "traces", "link")


class SimultFlowsOptions(SplitLayerOptions):
    aggregation: Literal["mptcp", "mpquic", "pdcp", "sc1", "sc2"] = Field("mptcp", description=(
        "How the download uses the two legs: mptcp (the kernel's MPTCP, the selftest's subject), mpquic (noq), pdcp "
        "(a DC bearer split in the legs' rate ratio) or sc1/sc2 (one leg alone)."))
    case: CaseName = Field("balanced", description=(
        "The selftest's case: " + "; ".join(f"{c.name}: {c.rates[0]}/{c.rates[1]} Mbit/s, {c.delays[0]}/{c.delays[1]} "
                                            f"ms each way" for c in CASES.values()) + "."))
    size: Size = Field(SIZE, description="Bytes of the download (the selftest's 16 MiB).",
                       json_schema_extra={"show": "16MiB"})
    shorts: int = Field(0, ge=0, le=0, description="No short downloads (the selftest has none).")
    setting: Literal["alone"] = Field("alone", description="The download alone (the selftest's setting).")


class SimultFlows(SplitLayer):
    name = "simult-flows"
    help = ("The kernel's MPTCP selftest simult_flows.sh on dcemu legs: a 16 MiB download over two legs with the "
            "selftest's rates and delays, for MPTCP, multipath QUIC, PDCP or one leg, judged by the selftest's rule "
            "(done within the legs' summed rate plus 10 % and 450 ms).")
    options_model = SimultFlowsOptions  # type: ignore[assignment]  # mypy holds the attribute invariant; it is a SplitLayerOptions
    metrics: ClassVar[tuple[Metric, ...]] = (
        Metric("completion_s", "completion time", "s", digits=3),
        Metric("max_time_s", "the selftest's limit", "s", digits=3),
        Metric("time_ratio", "completion / limit", digits=3),
        Metric("passed", "passed (share of runs)", digits=2),
        Metric("goodput_mbps", "goodput", "Mbit/s"),
        Metric("leg1_util", "leg 1 utilization", digits=3),
        Metric("leg2_util", "leg 2 utilization", digits=3),
        Metric("reordered", "reordered at the receiver", "packets", digits=0))

    def scenario(self, scenario: Scenario, options: SplitLayerOptions) -> Scenario:
        case = CASES[_case(options)]
        reference = Scenario()
        given = [f for f in CASE_FIELDS if getattr(scenario, f) != getattr(reference, f)]
        if given:
            raise ScenarioError(f"simult-flows: the case sets {', '.join(given)} (the selftest's legs); "
                                f"drop {', '.join(OPTIONS.get(f, '--' + f.replace('_', '-')) for f in given)}")
        fixed = build(scenario, bw=list(map(float, case.rates)), delay=list(map(float, case.rtts_ms)), uplink_delay=0.0,
                      delay_cov=0.0, queue_packets=QUEUE_PACKETS,
                      split=list(map(float, case.rates)) if options.aggregation == "pdcp" else None)
        return super().scenario(fixed, options)

    def measure(self, bed: Bed, scenario: Scenario, plan: FlowPlan, options: SplitLayerOptions,
                result: RepResult) -> RepResult:
        result = super().measure(bed, scenario, plan, options, result)
        v = judge(CASES[_case(options)], result.metrics.get("completion_s") if result.ok else None, options.size)
        result.metrics = {**result.metrics, "max_time_s": v.max_time_s, "time_ratio": v.ratio,
                          "passed": 1.0 if v.passed else 0.0}
        result.details = {**result.details, "case": v.case, "rule": "simult_flows.sh"}
        return result

    def estimate_s(self, scenario: Scenario, options: SplitLayerOptions, capacity_mbps: float) -> float:
        return judge(CASES[_case(options)], None, options.size).max_time_s

    def describe(self, rep: RepResult) -> str:
        m = rep.metrics
        if not rep.ok or m.get("completion_s") is None:
            return f"failed: {rep.error}"
        verdict = "pass" if m.get("passed") else "FAIL"
        return f"{m['completion_s']:.3f} s of {m['max_time_s']:.3f} allowed: {verdict} ({m.get('goodput_mbps') or 0:.2f} Mbit/s)"

    def headline(self, summary: Summary) -> str:
        p = summary.metrics["passed"]
        agg, case = summary.options.get("aggregation"), summary.options.get("case")
        runs = [v for v in p.runs if v is not None]
        return f"{agg}, {case}: passed {int(sum(runs))} of {summary.reps} (the selftest's rule)"

    def sweep_tables(self, rows: Sequence[StoredRun[SplitLayerOptions]]) -> list[tuple[str, Table]]:
        """Per case and aggregation: runs passed of runs, and the completion time against the limit."""
        by: dict[tuple[str, str], list[StoredRun[SplitLayerOptions]]] = {}
        for r in _view(rows, by_condition=False):  # split-layer's series: "AGG (STACK CC)"
            by.setdefault((_case(r.options), r.series or ""), []).append(r)
        body, failed = [], []
        order = list(CASES)
        for (case, series), rs in sorted(by.items(), key=lambda kv: (order.index(kv[0][0]) if kv[0][0] in order else 99,
                                                                      kv[0][1])):
            times = mean_std(r.metric("completion_s") for r in rs)
            passed = sum(1 for r in rs if r.metrics.get("passed"))
            allowed = judge(CASES[case], None, rs[0].options.size).max_time_s if case in CASES else None
            body.append([case, series, f"{passed} of {len(rs)}", f"{_fmt(times.mean, 3)} ± {_fmt(times.std, 3)}", _fmt(allowed, 3)])
            failed.append(not times.n)
        return [("the selftest's rule per case (pass: done within the limit)",
                 Table(["case", "series", "passed", "completion (s)", "limit (s)"], body, failed))]


def _case(options: SplitLayerOptions) -> str:
    """The case of this experiment's options (the runner hands it its own options_model's)."""
    if not isinstance(options, SimultFlowsOptions):
        raise TypeError(f"simult-flows runs with SimultFlowsOptions (got {type(options).__name__})")
    return options.case


EXPERIMENT = SimultFlows()
