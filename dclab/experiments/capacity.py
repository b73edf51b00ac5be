"""The capacity experiment: one long-lived flow through the DC bearer, measured against
what the legs can carry. The client asks for more than the window can carry (``--size``)
and is stopped at its end; the flow's mean throughput over [--warmup, --duration] seconds
from the client's start comes from dcemu's delivered bytes and is divided by the legs'
summed mean capacity (cells: their levels' mean capacity for one device from ``dcemu
cell-capacity``, dclab/lte.py and dclab/nr.py; wired legs: their rates). Per leg, its rate
out over the window against its own capacity. Over the window, the PDCP receiver's
t-Reordering expiries and, under ``delay-target``, the packets PDCP dropped before
numbering them; over the run, the receiver's p99 reordering wait (docs/endc.md).

With ``--udp-mbps`` the flow is UDP offered at that rate from server to client (iperf3,
``endpoints/iperf3/``) instead of the stack's download: the share of the capacity UDP
gets, which the flow-control testbeds report beside TCP's; the client's report (datagrams
lost, jitter) is kept with the flow."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field, model_validator

from ..analysis.figures import capacities_of
from ..analysis.metrics import window_deltas
from ..analysis.stand_in import stack_label
from ..dcemu.records import Stats
from ..endpoints.base import Workload
from ..endpoints.iperf3.adapter import MAX_RATE_MBPS
from ..flowplan import Flow, FlowPlan, single_bearer_plan
from ..scenario import Scenario, build
from ..testbed import Bed
from .base import Experiment, FlowResult, Metric, RepResult, Size, StackOptions, Summary, _fmt
from .window import run_window

DC_PORT = 4433
BEARER = "dc"
UDP_LOAD = "iperf3-udp"  # the stack variant that offers UDP at a rate (endpoints/__init__.py)
STATS_INTERVAL_MS = 100.0  # long runs: records every 100 ms are enough for a 30 s window


class CapacityOptions(StackOptions):
    # The window, not the size, ends a run: sweeping the size would measure nothing new.
    size: Size = Field(10_000_000_000, description="Bytes the client asks for: more than the window carries.",
                       json_schema_extra={"show": "10GB", "sweep": False})
    duration: float = Field(35.0, ge=2, le=86400, description="Seconds from the client's start to the end of the window.")
    warmup: float = Field(5.0, ge=0, le=86400, description="Seconds from the client's start left out of the window "
                          "(slow start).")
    udp_mbps: float | None = Field(None, ge=1, le=MAX_RATE_MBPS, description=(
        f"Offer UDP at this rate in Mbit/s (iperf3, server to client; 1-{MAX_RATE_MBPS:g}) instead of the stack's "
        "download: the share of the capacity UDP gets [default: the stack's download]."),
        json_schema_extra={"show": "none"})

    @model_validator(mode="after")
    def _window(self) -> "CapacityOptions":
        if self.duration - self.warmup < 1:
            raise ValueError(f"warmup: must end at least 1 s before --duration ({self.duration:g} s) "
                             f"(got {self.warmup:g})")
        return self


def window_counters(records: Sequence[Stats], t0_ms: float, duration: float, warmup: float) -> dict[str, int]:
    """Over the window: the DC bearer's t-Reordering expiries, under delay-target the
    packets PDCP dropped unnumbered (hold full, discard timer), and under flow control the
    packets the master sent again on its own leg (outage fallback, ``--fallback-ms``)."""
    def read(r: Stats) -> dict[str, int]:
        b = r.bearer(BEARER)
        out = {"expiries": b.rx.timer_expiries if b is not None and b.rx is not None else 0}
        if b is not None and b.hold is not None:
            out["hold_dropped"] = b.hold.dropped_full + b.hold.discarded_timer
        if b is not None and b.flow is not None:
            f = b.flow
            out["resent"] = f.master_fallback.resent_packets + sum(s.resent_packets for s in f.secondaries)
        return out
    return window_deltas(records, t0_ms, duration, warmup, read)[1]


def run_facts(records: Sequence[Stats]) -> dict[str, Any]:
    """From the summary record: the receiver's p99 reordering wait over the run (ms), and
    the hold's counters under delay-target."""
    summary = next((r for r in reversed(records) if r.type == "summary"), None)
    b = summary.bearer(BEARER) if summary is not None else None
    if b is None:
        return {}
    out: dict[str, Any] = {"wait_p99_ms": b.rx.wait.p99_us / 1e3 if b.rx is not None else None}
    if b.hold is not None:
        out["hold"] = b.hold.model_dump(exclude={"wait"}) | {"wait_p99_ms": b.hold.wait.p99_us / 1e3}
    return out


class Capacity(Experiment[CapacityOptions]):
    name = "capacity"
    help = ("One long-lived flow through the DC bearer (--size more than the window carries, stopped at its end): "
            "its mean throughput over [--warmup, --duration] as a share of the legs' summed mean capacity, each "
            "leg's share of its own, t-Reordering expiries over the window and the p99 reordering wait.")
    options_model = CapacityOptions
    metrics = (
        Metric("capacity_share", "share of the legs' capacity", digits=3),
        Metric("window_mbps", "throughput over the window", "Mbit/s"),
        Metric("expiries", "t-Reordering expiries in the window", digits=1),
        Metric("wait_p99_ms", "p99 reordering wait", "ms"),
        Metric("hold_dropped", "packets dropped unnumbered in the window", digits=0),
        Metric("resent", "packets resent on the master's leg in the window (outage fallback)", digits=0),
    )
    run_figure_name = "link-utilization.png"
    run_figure_kind = "links"

    def scenario(self, scenario: Scenario, options: CapacityOptions) -> Scenario:
        return build(scenario, stats_interval_ms=max(scenario.stats_interval_ms, STATS_INTERVAL_MS))

    def unused(self, options: CapacityOptions) -> dict[str, str]:
        if options.udp_mbps is None:
            return {}
        why = "--udp-mbps offers UDP from iperf3, whatever the stack"
        return {"stack": why, "cc": why}

    def plan(self, scenario: Scenario, options: CapacityOptions) -> FlowPlan:
        o = options
        if o.udp_mbps is not None:
            load = Workload(objects=(o.size,), cc_options=({"rate_mbps": f"{o.udp_mbps:g}"},))
            return single_bearer_plan(scenario, [Flow(BEARER, UDP_LOAD, BEARER, load, "cbr", DC_PORT)])
        return single_bearer_plan(scenario, [Flow(BEARER, o.stack, BEARER, Workload.single(o.size), o.cc, DC_PORT)])

    def estimate_s(self, scenario: Scenario, options: CapacityOptions, capacity_mbps: float) -> float:
        return 2.0 + float(options.duration)

    def longest_s(self, scenario: Scenario, plan: FlowPlan, options: CapacityOptions) -> float | None:
        return float(options.duration)

    def measure(self, bed: Bed, scenario: Scenario, plan: FlowPlan, options: CapacityOptions,
                result: RepResult) -> RepResult:
        o = options
        w = run_window(bed, o.duration, o.warmup)
        records, t0_ms = w.records, w.t0_ms
        mean = w.means.get(BEARER)
        transfer = w.transfers.get(BEARER)
        caps = capacities_of(scenario)
        known = [c for c in caps if c is not None]
        capacity = sum(known) if known and len(known) == len(caps) else None
        legs = w.legs
        counters = window_counters(records, t0_ms, o.duration, o.warmup) if records else {}
        facts = run_facts(records)
        result.ok = mean is not None
        result.error = None if result.ok else "no dcemu statistics for the window"
        result.flows = [FlowResult.of(plan, BEARER, transfer, mean)]
        result.metrics = {
            "capacity_share": mean / capacity if mean is not None and capacity else None,
            "window_mbps": mean,
            "expiries": float(counters["expiries"]) if "expiries" in counters else None,
            "wait_p99_ms": facts.get("wait_p99_ms"),
            "hold_dropped": float(counters["hold_dropped"]) if "hold_dropped" in counters else None,
            "resent": float(counters["resent"]) if "resent" in counters else None,
        }
        leg_names = [leg.name for leg in records[-1].legs] if records else []
        result.details = {
            "window_s": o.duration, "warmup_s": o.warmup, "size": o.size, "capacity_mbps": capacity,
            "legs": {name: {"mbps": legs.get(name), "capacity_mbps": cap,
                            "share": legs[name] / cap if cap and legs.get(name) is not None else None}
                     for name, cap in zip(leg_names, caps, strict=False)},
            "hold": facts.get("hold"),
        }  # fmt: skip
        result.t0_ms = t0_ms
        return result

    def run_title(self, scenario: Scenario, options: CapacityOptions, result: RepResult) -> str:
        return (f"{stack_label(result.stack, options.stand_in)} {result.cc}, window {options.warmup:g}-"
                f"{options.duration:g} s, {scenario.split_text()}")

    def describe(self, rep: RepResult) -> str:
        if not rep.ok:
            return f"failed: {rep.error}"
        m = rep.metrics
        return (f"{_fmt(m.get('window_mbps'))} Mbit/s, {_fmt(m.get('capacity_share'), 3)} of the capacity, "
                f"{_fmt(m.get('expiries'), 0)} expiries, p99 wait {_fmt(m.get('wait_p99_ms'))} ms")

    def headline(self, summary: Summary) -> str:
        s = summary.metrics["capacity_share"]
        if s.mean is None:
            return "capacity share: no successful run"
        w = summary.metrics["window_mbps"]
        return (f"capacity share: {s.mean:.3f} (std {_fmt(s.std, 3)}); throughput over the window: "
                f"{_fmt(w.mean)} Mbit/s (std {_fmt(w.std)})")


EXPERIMENT = Capacity()
