"""One-factor sweeps around the default configuration (docs/testbed-reference.md): each
sweep maps a value to scenario changes and experiment option changes (for `size`, the
download size). A sweep applies to every experiment whose options have the fields it
changes.

`--param NAME` uses the reference values; `--param NAME=2,10,50` a list;
`--param NAME=1:5:0.5` an inclusive range lo:hi:step.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .. import lte, nr, radio
from ..errors import OptionError
from ..files import clip
from ..scenario import Scenario, ScenarioError, build


def frange(lo: float, hi: float, step: float) -> list[float]:
    """lo, lo+step, ..., hi inclusive (rounded to hide float noise)."""
    if not all(math.isfinite(x) for x in (lo, hi, step)) or step <= 0 or hi < lo:
        raise OptionError(f"a range needs lo <= hi and step > 0 (got {lo}:{hi}:{step})")
    n = int(round((hi - lo) / step))
    if n > 10_000:
        raise OptionError(f"range {lo}:{hi}:{step} has more than 10000 values")
    return [round(lo + i * step, 10) for i in range(n + 1) if lo + i * step <= hi + step * 1e-9]


def _ratio_split(total: float, r: float) -> list[float]:
    """Two legs in ratio r:1 that sum to ``total`` (5:1 of 40 is 33.33 / 6.67)."""
    return [round(total * r / (r + 1), 2), round(total / (r + 1), 2)]


def _level_mean(distance_m: float) -> float:
    """The mean capacity (Mbit/s) of the LTE level at ``distance_m`` (one of dclab/lte.py's)."""
    try:
        return lte.parse_link(f"lte:{distance_m:g}m").capacity_mbps
    except ValueError as e:
        raise ScenarioError(str(e)) from None


def _matched_endc(lte_level: str, nr_level: str) -> dict[str, object]:
    """An EN-DC level pair with the static split at its mean capacities' ratio (the study's
    best, docs/testbed-reference.md), the master's share rounded to 5 % so that a batch of
    20 sends it exactly (docs/endc.md)."""
    try:
        cells = radio.parse_link(f"endc:{lte_level},{nr_level}").capacities
    except ValueError as e:
        raise ScenarioError(str(e)) from None
    master = 5 * round(20 * cells[0] / sum(cells))
    return {"link": f"endc:{lte_level},{nr_level}", "split": [master, 100 - master]}


@dataclass(frozen=True)
class SweepDef:
    name: str
    label: str  # axis label
    defaults: Sequence[float]  # as the study wrote them (ints stay ints: run keys hash them)
    apply: Callable[[float], dict[str, object]]  # value -> changes of scenario fields and option fields

    def option_changes(self, value: float) -> dict[str, object]:
        return {k: v for k, v in self.apply(value).items() if k not in Scenario.model_fields}

    def applies_to(self, option_fields: set[str]) -> bool:
        """Whether an experiment whose sweepable option fields are ``option_fields`` can take
        this sweep (an experiment marks a field unsweepable with ``{"sweep": False}``)."""
        probe = self.defaults[0] if self.defaults else 1.0
        return set(self.option_changes(probe)) <= option_fields


SWEEPS: dict[str, SweepDef] = {
    d.name: d
    for d in [
        SweepDef("size", "file size (MB)", [10] + list(range(100, 1001, 100)), lambda v: {"size": int(v * 1e6)}),
        SweepDef("batch", "DC batch size (packets)", [2, 10] + list(range(50, 501, 50)), lambda v: {"batch": int(v)}),
        SweepDef("split", "share on leg 1 (%)", frange(0, 100, 10), lambda v: {"split": [v, 100 - v]}),
        SweepDef("bw-ratio", "bandwidth ratio leg 1 : leg 2 (sum 40 Mbit/s)", frange(1, 5, 0.5),
                 lambda v: {"bw": _ratio_split(40, v)}),
        SweepDef("bw-ratio-matched", "bandwidth ratio, split matched", frange(1, 5, 0.5),
                 lambda v: {"bw": _ratio_split(40, v), "split": _ratio_split(100, v)}),
        SweepDef("delay-ratio-low", "delay ratio leg 1 : leg 2 (sum 20 ms)", frange(1, 5, 0.5),
                 lambda v: {"delay": _ratio_split(20, v)}),
        SweepDef("delay-ratio-high", "delay ratio leg 1 : leg 2 (sum 200 ms)", frange(1, 5, 0.5),
                 lambda v: {"delay": _ratio_split(200, v)}),
        SweepDef("loss", "random loss per leg (%)", frange(0, 0.2, 0.01), lambda v: {"loss": [v, v]}),
        SweepDef("loss-dup", "random loss per leg with duplication (%)", frange(0, 5, 0.2),
                 lambda v: {"loss": [v, v], "duplicate": True}),
        # How long the PDCP receiver waits for a hole (the study's: 200 ms; docs/fidelity.md).
        SweepDef("t-reordering", "t-Reordering (ms)", [0, 20, 50, 100, 200, 500, 1000],
                 lambda v: {"t_reordering": v}),
        # The study's PDCP proxies took about 1 ms per packet at each end (docs/fidelity.md).
        SweepDef("pdcp-processing", "PDCP processing per entity (ms)", [0, 0.5, 1, 2],
                 lambda v: {"pdcp_processing": v}),
        # One point: the group's own configuration (a group must name a sweep).
        SweepDef("none", "-", [0], lambda v: {}),
        # The mquic experiment's options (docs/mquic-fidelity.md, "The experiment: dclab run mquic").
        SweepDef("conns", "connections (N)", [2, 3, 4, 5, 6], lambda v: {"conns": int(v)}),
        SweepDef("iw", "initial window (packets)", [10, 30, 60], lambda v: {"iw": int(v)}),
        SweepDef("radio", "cell rate before scaling (Mbit/s)", [35.4, 65.9, 94.1], lambda v: {"radio": v}),
        # The LTE study (dclab/lte.py): a device's distance from the eNodeB as its signal level;
        # for contrast, a wired link at that level's mean capacity.
        SweepDef("distance", "distance from the eNodeB (m)", list(lte.LEVELS.values()),
                 lambda v: {"link": f"lte:{v:g}m"}),
        SweepDef("distance-mean", "distance (m); a fixed rate at its level's mean capacity", list(lte.LEVELS.values()),
                 lambda v: {"bw": [_level_mean(v)], "split": [100.0]}),
        # EN-DC (docs/endc.md): the NR secondary's level with the LTE master good, the LTE
        # master's with the NR secondary good; the X2/Xn hop; a flow-controlled split's
        # reporting period and target queue delay.
        SweepDef("nr-distance", "NR secondary's distance (m), LTE master good", [d for d, _ in nr.LEVELS.values()],
                 lambda v: {"link": f"endc:good,{v:g}m"}),
        SweepDef("lte-distance", "LTE master's distance (m), NR secondary good", list(lte.LEVELS.values()),
                 lambda v: {"link": f"endc:{v:g}m,good"}),
        SweepDef("nr-distance-matched", "NR secondary's distance (m), LTE master good, split matched",
                 [d for d, _ in nr.LEVELS.values()], lambda v: _matched_endc("good", f"{v:g}m")),
        SweepDef("lte-distance-matched", "LTE master's distance (m), NR secondary good, split matched",
                 list(lte.LEVELS.values()), lambda v: _matched_endc(f"{v:g}m", "good")),
        SweepDef("x2-delay", "X2/Xn delay, one way (ms)", [0, 2, 5, 10, 20], lambda v: {"x2_delay": v}),
        SweepDef("report-period", "flow-control reporting period (ms)", [5, 10, 20, 50, 100],
                 lambda v: {"report_period": v}),
        SweepDef("target-delay", "flow control's target queue delay (ms)", [0, 5, 10, 20, 50],
                 lambda v: {"target_delay": v}),
        SweepDef("fallback-ms", "outage fallback: ms without service before an outage (0: off)", [0, 2, 5, 10, 20],
                 lambda v: {"fallback_ms": v}),
        # Each leg's queue limit, packets (the default 100; the AQM study's 1000, docs/explanation/aqm.md).
        SweepDef("queue", "each leg's queue limit (packets)", [100, 300, 1000], lambda v: {"queue_packets": int(v)}),
        # throughput --streams (the LTE study's experiment 4: 1 to 16 streams on one connection).
        SweepDef("streams", "concurrent streams on one connection (N)", [1, 2, 4, 8, 16], lambda v: {"streams": int(v)}),
    ]
}


@dataclass(frozen=True)
class Point:
    """One configuration of a sweep."""

    sweep: str
    value: float
    scenario: Scenario
    options: dict[str, object]  # option changes (e.g. size); empty: the experiment's own


def parse_param(spec: str) -> tuple[str, list[float]]:
    """'batch=2,10,50', 'bw-ratio=1:5:0.5' or 'loss' (reference values)."""
    name, _, values = spec.partition("=")
    name = name.strip()
    if name not in SWEEPS:
        raise OptionError(f"--param: unknown parameter {name!r}; one of {', '.join(SWEEPS)}")
    if not values.strip():
        if "=" in spec:
            raise OptionError(f"--param {name}=: give values after '=' (or only {name} for the study's values)")
        return name, list(SWEEPS[name].defaults)
    try:
        numbers = [float(x) for x in values.split(":" if ":" in values else ",")]
        if not all(math.isfinite(x) for x in numbers):
            raise ValueError
        if ":" in values:
            lo, hi, step = numbers
        else:
            return name, numbers
    except ValueError:
        raise OptionError(f"--param {name}: expected a list like 2,10,50 or a range lo:hi:step (got {clip(values)})") from None
    try:
        return name, frange(lo, hi, step)
    except ScenarioError as e:
        raise OptionError(f"--param {name}: {e}") from None


def expand(name: str, values: list[float], base: Scenario) -> list[Point]:
    """The sweep's configurations, each validated (an invalid value names the sweep)."""
    d = SWEEPS[name]
    points = []
    for v in values:
        changes = d.apply(v)
        options = d.option_changes(v)
        try:
            s = build(base, fields_as_in_file=True, **{k: x for k, x in changes.items() if k not in options})
        except ScenarioError as e:
            raise ScenarioError(f"sweep {name}={v:g}: {e}") from None
        points.append(Point(name, v, s, options))
    return points
