"""The mQUIC study's scaling check (docs/mquic-fidelity.md, "The study's network and the
scaling"): one plain aioquic connection downloads over the preset's cell, scaled as the
mquic experiment scales it, at zero loss, for about ``seconds`` at the cell's rate. Its
goodput against the scaled rate says whether aioquic can fill the cell on this machine:
below ``CPU_BOUND_RATIO`` the cell is marked CPU-bound, and the mquic experiment's
completion times at that scale would measure the CPU rather than the protocol."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, StrictBool

from ..endpoints.base import Workload
from ..flowplan import Bearer, Flow, FlowPlan
from ..scenario import Scenario, build
from ..testbed import Bed, stats_ms
from . import mquic_network as net
from .base import Experiment, FlowResult, Metric, Options, RepResult, Summary, _fmt

CPU_BOUND_RATIO = 0.9  # the bar: 1c at zero loss reaches 90 % of the scaled rate


class CellOptions(Options):
    cc: Literal["reno", "cubic", "bbr"] = Field("reno", description="Congestion control of the one connection.")
    preset: net.PresetName = Field("domestic-low-loss", description="The paper's location (its RTT; loss is set to 0).")
    radio: float = Field(net.RADIO_MBPS, gt=0, le=10_000, description="The cell's rate before scaling, Mbit/s.")
    scale: float = Field(0.25, gt=0, le=1, description="Factor on the cell's rate, as in `dclab run mquic`.")
    dc: StrictBool = Field(False, description="Over two DC legs, as `dclab run mquic --dc`.")
    seconds: float = Field(8.0, ge=1, le=600, description="Download length at the scaled rate, in seconds.")


def cell_rate(o: CellOptions) -> float:
    return round(o.radio * o.scale, 4)


class MquicCell(Experiment[CellOptions]):
    name = "mquic-cell"
    help = ("The mquic study's scaling check: one aioquic connection over the preset's cell scaled by --scale, at "
            f"zero loss; goodput against the scaled rate, and CPU-bound when below {CPU_BOUND_RATIO:.0%}.")
    options_model = CellOptions
    metrics = (Metric("rate_ratio", "goodput / scaled cell rate", "", 3), Metric("goodput_mbps", "goodput", "Mbit/s"))

    def scenario(self, scenario: Scenario, options: CellOptions) -> Scenario:
        o = options
        changes = net.scenario_changes(o.preset, o.radio, o.scale, o.dc)
        changes["loss"] = [0.0] * len(changes["loss"])
        changes["uplink_loss"] = 0.0
        return build(scenario, **changes)

    def plan(self, scenario: Scenario, options: CellOptions) -> FlowPlan:
        o = options
        return FlowPlan.build([Bearer("dc")], [Flow("dc", "aioquic", "dc", Workload.single(self.size(o)), o.cc, 4433)],
                              scenario)

    @staticmethod
    def size(o: CellOptions) -> int:
        return int(cell_rate(o) * 1e6 / 8 * o.seconds)

    def estimate_s(self, scenario: Scenario, options: CellOptions, capacity_mbps: float) -> float:
        return float(options.seconds) * 1.1 + 1

    def measure(self, bed: Bed, scenario: Scenario, plan: FlowPlan, options: CellOptions, result: RepResult) -> RepResult:
        o = options
        r = bed.run_clients(self.timeout_s(plan, cell_rate(o)))["dc"]
        bed.finish()
        g = r.goodput_mbps
        ratio = g / cell_rate(o) if g is not None else None
        result.ok, result.error = r.ok, r.error
        result.metrics = {"rate_ratio": ratio, "goodput_mbps": g}
        result.flows = [FlowResult.of(plan, "dc", r)]
        result.details = {"rate_mbps": cell_rate(o), "cpu_bound": ratio is not None and ratio < CPU_BOUND_RATIO}
        result.t0_ms = stats_ms(bed, r.request_wall)
        return result

    def describe(self, rep: RepResult) -> str:
        if not rep.ok:
            return f"failed: {rep.error}"
        g, ratio = rep.metrics.get("goodput_mbps"), rep.metrics.get("rate_ratio")
        return f"{_fmt(g)} Mbit/s of {rep.details.get('rate_mbps')} ({_fmt(ratio, 3)})"

    def headline(self, summary: Summary) -> str:
        m = summary.metrics["rate_ratio"].mean
        if m is None:
            return "scaling check: no successful run"
        rate = cell_rate(CellOptions.model_validate(summary.options))
        verdict = "CPU-bound: use a smaller --scale" if m < CPU_BOUND_RATIO else "aioquic fills the cell"
        return f"scaling check: goodput {m:.1%} of the scaled rate {rate:g} Mbit/s: {verdict}"


EXPERIMENT = MquicCell()
