"""The fairness experiment: three flows at once, a DC flow over both legs (port 4433), an
SC flow on leg 1 (8000) and one on leg 2 (9000), each downloading a large file; measured
over the first `duration` seconds from dcemu's per-bearer delivered bytes. Reports each
flow's mean throughput and Jain's index over the flows' means (``jfi``, goodput after
duplicate removal), and beside it Jain's index with each flow counted at the links
(``jfi_links``, ``at_links``), the reference study's measure, under which a duplicated DC
flow counts twice."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import Field, model_validator

from ..analysis import figures
from ..analysis.metrics import jain
from ..analysis.stand_in import stack_label
from ..analysis.stored_run import StoredRun
from ..endpoints import get_stack
from ..endpoints.base import Workload
from ..files import JsonObject
from ..flowplan import Bearer, Flow, FlowPlan, PlanError, parse_assignments
from ..scenario import Scenario, build
from ..testbed import Bed
from .base import Experiment, FlowResult, Metric, RepResult, Size, StackName, StackOptions, Summary, Table, _fmt, stand_in_output
from .window import run_window

# The study's flows: name, bearer, leg (None: both), port.
FLOWS = (("dc", "dc", None, 4433), ("sc1", "sc1", 1, 8000), ("sc2", "sc2", 2, 9000))
FLOW_NAMES = [f for f, _, _, _ in FLOWS]
LABELS = {"dc": "DC (both legs)", "sc1": "SC leg 1", "sc2": "SC leg 2"}
STATS_INTERVAL_MS = 100.0  # 180 s of 10 ms records would be tens of MB per run


def at_links(delivered: dict[str, float], legs: dict[str, float]) -> dict[str, float]:
    """Each flow's Mbit/s as the links carried it, the study's measure: an SC flow is what
    its leg delivered of it; the DC flow is what is left of both legs' output (PDCP
    headers included), so with duplication it counts twice, once per leg. Empty when a
    flow or leg is missing."""
    if any(delivered.get(f) is None for f in FLOW_NAMES) or not {"leg1", "leg2"} <= set(legs):
        return {}
    dc = (legs["leg1"] - delivered["sc1"]) + (legs["leg2"] - delivered["sc2"])
    return {"dc": max(dc, 0.0), "sc1": delivered["sc1"], "sc2": delivered["sc2"]}


class FairnessOptions(StackOptions):
    stack: StackName = Field("aioquic", description="Transport stack of every flow.")
    stacks: str | None = Field(None, description="Per flow, e.g. dc=aioquic,sc1=tcp,sc2=tcp (flows not named use --stack).")
    cc: str | None = Field(None, description="Congestion control of every flow [default: each stack's default].")
    # The window, not the size, ends a fairness run: sweeping the size would measure nothing new.
    size: Size = Field(1_000_000_000, description="Bytes each client asks for.",
                       json_schema_extra={"show": "1GB", "sweep": False})
    duration: float = Field(180.0, ge=1, le=86400, description="Seconds measured from the start of the three clients.")

    @model_validator(mode="after")
    def _stacks(self) -> "FairnessOptions":
        per_flow = self.per_flow()
        for name in per_flow.values():
            get_stack(name)
        tcp = {self.cc or get_stack(n).default_cc for n in per_flow.values() if get_stack(n).transport == "tcp"}
        if len(tcp) > 1:
            raise ValueError("cc: TCP flows share the server namespace's congestion control; give them one")
        return self

    def per_flow(self) -> dict[str, str]:
        out = {f: self.stack for f in FLOW_NAMES}
        if self.stacks:
            out.update(parse_assignments(self.stacks, FLOW_NAMES, "--stacks"))
        return out


class Fairness(Experiment[FairnessOptions]):
    name = "fairness"
    help = ("Three flows at once: DC (port 4433, both legs), SC on leg 1 (8000), SC on leg 2 (9000). Each flow's "
            "mean throughput over the window and Jain's fairness index.")
    options_model = FairnessOptions
    metrics = (Metric("jfi", "Jain's fairness index", digits=3),
               Metric("jfi_links", "JFI with flows counted at the links", digits=3))
    run_figure_name = "flows.png"
    run_figure_kind = "flows"
    simulates = True

    def scenario(self, scenario: Scenario, options: FairnessOptions) -> Scenario:
        return build(scenario, stats_interval_ms=max(scenario.stats_interval_ms, STATS_INTERVAL_MS))

    def plan(self, scenario: Scenario, options: FairnessOptions) -> FlowPlan:
        o = options
        if scenario.legs != 2:
            raise PlanError(f"fairness needs two legs (an SC flow on each), the scenario has {scenario.legs}")
        stacks = o.per_flow()
        bearers = [Bearer("dc"), Bearer("sc1", "sc", (1,)), Bearer("sc2", "sc", (2,))]
        flows = [Flow(f, stacks[f], b, Workload.single(o.size), o.cc, port) for f, b, _, port in FLOWS]
        return FlowPlan.build(bearers, flows, scenario, STATS_INTERVAL_MS)

    def estimate_s(self, scenario: Scenario, options: FairnessOptions, capacity_mbps: float) -> float:
        return 2.0 + float(options.duration)

    def longest_s(self, scenario: Scenario, plan: FlowPlan, options: FairnessOptions) -> float | None:
        return float(options.duration)

    def measure(self, bed: Bed, scenario: Scenario, plan: FlowPlan, options: FairnessOptions, result: RepResult) -> RepResult:
        o = options
        w = run_window(bed, o.duration, 0.0)
        records, t0_ms, means, transfers = w.records, w.t0_ms, w.means, w.transfers
        values = [means.get(f) for f in FLOW_NAMES]
        result.flows = [FlowResult.of(plan, f, transfers.get(f), means.get(f)) for f in FLOW_NAMES]
        result.ok = bool(records) and all(v is not None for v in values)
        result.error = None if result.ok else "no dcemu statistics for the window"
        links = at_links(means, w.legs)
        result.metrics = {"jfi": jain([v for v in values if v is not None]) if result.ok else None,
                          "jfi_links": jain(list(links.values())) if result.ok and links else None}
        result.t0_ms = t0_ms
        result.details = {"window_s": o.duration, "size": o.size, "at_links_mbps": links}
        return result

    def describe(self, rep: RepResult) -> str:
        return ", ".join(f"{f.name} {f.mean_mbps or 0:.2f}" for f in rep.flows) + f" Mbit/s, JFI {rep.metrics.get('jfi') or 0:.3f}"

    def headline(self, summary: Summary) -> str:
        j = summary.metrics["jfi"]
        return f"JFI: {j.mean:.3f} (std {j.std:.3f})" if j.mean is not None and j.std is not None else "JFI: no successful run"

    def table(self, summary: Summary) -> Table:
        stand_in = summary.options.get("stand_in")
        rows = [[f, stack_label(v.stack, stand_in), _fmt(v.mean_mbps), _fmt(v.std_mbps)] for f, v in summary.flows.items()]
        return Table(["flow", "stack", "mean (Mbit/s)", "std"], rows, [v.mean_mbps is None for v in summary.flows.values()])

    def json_output(self, summary: Summary) -> JsonObject:
        flows = {f: {"mean_mbps": v.mean_mbps, "std_mbps": v.std_mbps, "stack": v.stack, "runs": v.runs}
                 for f, v in summary.flows.items()}
        return {"flows": flows, "jfi": summary.metrics["jfi"].model_dump(),
                "jfi_links": summary.metrics["jfi_links"].model_dump(), "host_config": summary.host_config,
                "cc": summary.cc, "scenario": summary.scenario, "seeds": summary.seeds, **stand_in_output(summary)}

    def run_title(self, scenario: Scenario, options: FairnessOptions, result: RepResult) -> str:
        stack = stack_label(result.stack, options.stand_in)
        return (f"fairness: {stack}, {scenario.split_text()}"
                + (", duplication" if scenario.duplicate else ""))

    def run_figure(self, run_dir: Path, run: Run, path: Path, title: str) -> Path:
        return figures.flows_over_time(run_dir, run.t0_ms, path, window_s=run.metric("window_s"), title=title,
                                       labels=LABELS)

    def sweep_figure(self, rows: Sequence[Run], path: Path, title: str, xlabel: str) -> Path:
        return figures.flow_bars(rows, FLOW_NAMES, path, title, xlabel, labels=LABELS, annotate="jfi",
                                 more={"jfi_links": "JFI at links"})

    def sweep_table(self, rows: Sequence[Run]) -> Table:
        cols = ["value", "series"] + [c for i, f in enumerate(FLOW_NAMES)
                                      for c in (f"{f.upper()} mean" + (" (Mbit/s)" if i == 0 else ""), f"{f.upper()} std")]
        cols += ["JFI", "JFI at links", "n", "failed"]
        out, failed = [], []
        for d in figures.flow_table(rows, FLOW_NAMES, annotate="jfi", more=["jfi_links"]):
            cells = [d.at.value or "-", d.at.series]
            for f in FLOW_NAMES:
                cells += [_fmt(d.flows[f].mean), _fmt(d.flows[f].std)]
            cells += [_fmt(d.annotation, 3), _fmt(d.more["jfi_links"], 3), str(d.n), str(d.failed)]
            out.append(cells)
            failed.append(d.n == 0)
        return Table(cols, out, failed)


Run = StoredRun[FairnessOptions]
EXPERIMENT = Fairness()
