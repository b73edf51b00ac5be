"""The simulation against emulation: every run of a campaign that the simulation can model
gets a twin on the `sim` backend (the same experiment, configuration, scenario, options and
seed; its own run key), both are stored in the campaign's store, and each point (a run's
configuration over its repetitions) is compared: the simulated mean against the emulated
mean, as an error in percent (goodput) or a difference (JFI), against a bound.

The bounds are the issue's (issue 10): goodput within 10 %, JFI within 0.05. A point passes
when its error is within the bound; the summary counts points per experiment.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..experiments import get_experiment
from .plan import OVERHEAD_S, PlannedRun, run_key

BOUNDS = {"goodput_mbps": ("relative", 0.10), "jfi": ("absolute", 0.05)}
# What a simulated run takes, from its emulated twin's estimate (its virtual seconds plus the
# set-up): measured over shard 1/20 of the paper campaign on two processes (README, "dcemu
# sim"): 0.37 s per throughput run (emulated estimate 54 s), 0.68 s per fairness run (186 s).
SIM_RUN_S = 0.15
SIM_S_PER_S = 0.0035


def sim_twin(run: PlannedRun) -> PlannedRun | None:
    """The run on the simulation backend (None: its experiment only runs on real stacks)."""
    exp = get_experiment(run.experiment)
    if not exp.simulates or getattr(run.options, "backend", None) != "emu":
        return None
    options = run.options.model_copy(update={"backend": "sim"})
    key = run_key(run.experiment, run.config, run.sweep, run.value, run.rep, run.scenario,
                  options.model_dump(mode="json"))
    return PlannedRun(key, run.experiment, run.config, run.sweep, run.value, run.rep, run.scenario, options,
                      SIM_RUN_S + SIM_S_PER_S * max(0.0, run.estimate_s - OVERHEAD_S))


def point_of(run: PlannedRun) -> tuple[str, ...]:
    """What the twins of a point share: everything but the repetition and the backend."""
    return (run.experiment, run.config.label, run.sweep, f"{run.value:g}")


@dataclass
class Point:
    experiment: str
    config: str
    sweep: str
    value: str
    metric: str
    emu: list[float] = field(default_factory=list)
    sim: list[float] = field(default_factory=list)

    @property
    def emu_mean(self) -> float | None:
        return statistics.fmean(self.emu) if self.emu else None

    @property
    def sim_mean(self) -> float | None:
        return statistics.fmean(self.sim) if self.sim else None

    @property
    def error(self) -> float | None:
        """Relative error (goodput) or difference (JFI) of sim against emu."""
        e, s = self.emu_mean, self.sim_mean
        if e is None or s is None:
            return None
        kind, _ = BOUNDS.get(self.metric, ("relative", 0.10))
        return (s - e) / e if kind == "relative" and e else s - e

    @property
    def bound(self) -> float:
        return BOUNDS.get(self.metric, ("relative", 0.10))[1]

    @property
    def passed(self) -> bool | None:
        err = self.error
        return None if err is None else abs(err) <= self.bound

    def as_dict(self) -> dict[str, Any]:
        return {"experiment": self.experiment, "config": self.config, "sweep": self.sweep, "value": self.value,
                "metric": self.metric, "emu": self.emu, "sim": self.sim, "emu_mean": self.emu_mean,
                "sim_mean": self.sim_mean, "error": self.error, "bound": self.bound, "passed": self.passed}


def compare(pairs: list[tuple[PlannedRun, PlannedRun]], rows: dict[str, dict[str, Any]]) -> list[Point]:
    """Points from (emulated run, simulated twin) pairs and the store's rows by run key; a
    run missing or failed in the store adds nothing to its side."""
    points: dict[tuple[str, ...], Point] = {}
    for emu, sim in pairs:
        metric = get_experiment(emu.experiment).metrics[0].name
        p = points.setdefault(point_of(emu), Point(emu.experiment, emu.config.label, emu.sweep, f"{emu.value:g}",
                                                   metric))
        for run, side in ((emu, p.emu), (sim, p.sim)):
            row = rows.get(run.key)
            value = (row or {}).get("metrics", {}).get(metric) if row and row.get("ok") else None
            if value is not None:
                side.append(float(value))
    return list(points.values())


def summary(points: list[Point]) -> dict[str, dict[str, int]]:
    """Per experiment: points compared, passed, and without both sides."""
    return _count(points, lambda p: p.experiment)


def by_config(points: list[Point]) -> dict[str, dict[str, int]]:
    """The same per experiment and configuration ("throughput: tcp cubic"), since a bound
    is met per stack and buffer."""
    return _count(points, lambda p: f"{p.experiment}: {p.config}")


def _count(points: list[Point], key: Callable[[Point], str]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for p in points:
        d = out.setdefault(key(p), {"points": 0, "passed": 0, "incomplete": 0})
        d["points"] += 1
        if p.passed is None:
            d["incomplete"] += 1
        elif p.passed:
            d["passed"] += 1
    return out
