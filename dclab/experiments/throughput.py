"""The throughput experiment: one client downloads a file through the DC bearer; per
repetition a fresh testbed, the goodput, timings, PDCP summary, dcemu's stats and a
link-utilization plot of the first seconds, all kept in the run directory."""

from __future__ import annotations

from typing import Any

from pydantic import Field, StrictBool

from ..analysis.metrics import pdcp_summary
from ..endpoints.base import Workload
from ..flows import Flow, FlowPlan, single_bearer_plan
from ..scenario import Scenario, capacity_mbps
from ..testbed import Testbed
from .base import Experiment, FlowResult, Metric, RepResult, Size, StackOptions, Summary

DC_PORT = 4433  # the study's port of the DC flow


class ThroughputOptions(StackOptions):
    size: Size = Field(100_000_000, description="Bytes to download (100MB, 1GB, ...).", json_schema_extra={"show": "100MB"})
    qlog: StrictBool = Field(False, description="Write qlog files (QUIC stacks) into the run directory.")
    timeout: float | None = Field(None, ge=1, le=86400, description="Seconds a download may take [default: from size and rate].")


class Throughput(Experiment):
    name = "throughput"
    help = ("One client downloads a file through the DC bearer; goodput per repetition, mean and standard "
            "deviation, PDCP statistics and a per-leg link-utilization plot.")
    options_model = ThroughputOptions
    metrics = (Metric("goodput_mbps", "goodput", "Mbit/s"),)
    run_figure_name = "link-utilization.png"
    run_figure_kind = "links"
    default = True

    def plan(self, scenario: Scenario, options: Any) -> FlowPlan:
        o: ThroughputOptions = options
        return single_bearer_plan(scenario, [Flow("dc", o.stack, "dc", Workload.single(o.size), o.cc, DC_PORT)])

    def estimate_s(self, scenario: Scenario, options: Any, capacity_mbps: float) -> float:
        """The transfer at three quarters of the capacity (aioquic's receiver tops out near
        50 Mbit/s on the 2-core machine)."""
        goodput = 0.75 * capacity_mbps
        if options.stack == "aioquic":
            goodput = min(goodput, 50.0)
        return float(options.size) * 8 / (max(goodput, 0.5) * 1e6)

    def measure(self, bed: Testbed, scenario: Scenario, plan: FlowPlan, options: Any, result: RepResult) -> RepResult:
        o: ThroughputOptions = options
        # Traces: assume at least 2 Mbit/s; a cell: its level's mean capacity.
        capacity = 2.0 if scenario.trace else capacity_mbps(scenario)
        timeout = o.timeout or self.timeout_s(plan, capacity)
        r = bed.run_clients(timeout, qlog=o.qlog)["dc"]
        records = bed.finish()
        result.ok, result.error = r.ok, r.error
        result.metrics = {"goodput_mbps": r.goodput_mbps}
        result.flows = [FlowResult.of(plan, "dc", r)]
        result.details = {"size": o.size, "pdcp": pdcp_summary(records, "dc")}
        if bed.start_wall and r.request_wall:
            result.t0_ms = (r.request_wall - bed.start_wall) * 1e3
        return result

    def run_title(self, scenario: Scenario, options: Any, result: RepResult) -> str:
        return (f"{result.stack} {result.cc}, {options.size / 1e6:g} MB, batch {scenario.batch}, "
                f"split {':'.join(f'{x:g}' for x in scenario.split)}")

    def describe(self, rep: RepResult) -> str:
        g = rep.metrics.get("goodput_mbps")
        return f"{g:.2f} Mbit/s" if g is not None else f"failed: {rep.error}"

    def headline(self, summary: Summary) -> str:
        g = summary.metrics["goodput_mbps"].mean
        return f"goodput: {g:.2f} Mbit/s" if g is not None else "goodput: no successful run"

    def json_output(self, summary: Summary) -> dict[str, Any]:
        return {"goodput_mbps": summary.metrics["goodput_mbps"].model_dump(), "stack": summary.stack, "cc": summary.cc,
                "scenario": summary.scenario, "host_config": summary.host_config, "failed": summary.failed,
                "seeds": summary.seeds}


EXPERIMENT = Throughput()
