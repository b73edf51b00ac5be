"""The simulation against emulation: every run of a campaign that the simulation can model
gets a twin on the `sim` backend (the same experiment, configuration, scenario, options and
seed; its own run key), both are stored in the campaign's store, and each point (a run's
configuration over its repetitions) is compared: the simulated mean against the emulated
mean, as an error in percent (goodput) or a difference (JFI), against a bound.

The bounds: goodput within 10 %, JFI within 0.05. A point passes when its error is within
the bound. A point the model was calibrated on (``calibration.py``: the runs that set the
aioquic client's cost) is shown but not judged: the summary counts the others (hold-out)
per experiment, and the calibration points apart.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..dcemu.sim_models import refusal, suggestion, unmodelled_ccs, used
from ..endpoints import get_stack
from ..experiments import get_experiment
from ..experiments.base import RunChoices
from .calibration import CalibrationPoint, client_points
from .plan import OVERHEAD_S, PlannedRun, run_flows, run_key

BOUNDS = {"goodput_mbps": ("relative", 0.10), "jfi": ("absolute", 0.05)}
# What a simulated run takes, from its emulated twin's estimate (its virtual seconds plus the
# set-up): measured over shard 1/20 of the paper campaign on two processes (docs/explanation/sim-runs.md,
# "Speed"): 0.37 s per throughput run (emulated estimate 54 s), 0.68 s per fairness run (186 s).
SIM_RUN_S = 0.15
SIM_S_PER_S = 0.0035


def sim_twin(run: PlannedRun, stand_in: Mapping[str, str] | None = None,
             flows: list[tuple[str, str]] | None = None) -> PlannedRun | None:
    """The run on the simulation backend, its stacks without a model of their own on the
    stand-ins ``stand_in`` names for them (recorded in the twin's options, so in its key and
    label). None: its experiment only runs on real stacks, or a flow has no model and no
    stand-in (``twins`` says which). ``flows``: the run's (stack, cc), when known."""
    exp = get_experiment(run.experiment)
    if not exp.simulates or RunChoices.of(run.options).backend != "emu":
        return None
    flows = flows if flows is not None else run_flows(exp, run.scenario, run.options)
    # A plan that is refused still gets its twin: the campaign's preflight names the error.
    if any(refusal(stack, cc, stand_in or {}) for stack, cc in flows or []):
        return None
    update: dict[str, object] = {"backend": "sim"}
    if chosen := used(flows or [], stand_in or {}):  # none: the key of the stack's own model, as before
        update["stand_in"] = chosen
    options = run.options.model_copy(update=update)
    key = run_key(run.experiment, run.config, run.sweep, run.value, run.rep, run.scenario,
                  options.model_dump(mode="json"))
    return PlannedRun(key, run.experiment, run.config, run.sweep, run.value, run.rep, run.scenario, options,
                      SIM_RUN_S + SIM_S_PER_S * max(0.0, run.estimate_s - OVERHEAD_S), run.group)


@dataclass
class Twins:
    """A campaign's runs on the simulation backend: (run, twin) pairs, and what is left out
    and why: runs of experiments that only run on real stacks (by experiment), runs a
    group already puts on backend sim, and runs with a flow that has no model of its own
    and no stand-in (by stack and cc)."""

    total: int
    pairs: list[tuple[PlannedRun, PlannedRun]]
    real_only: Counter[str] = field(default_factory=Counter)
    simulated: int = 0
    unmodelled: Counter[tuple[str, str]] = field(default_factory=Counter)
    unused: list[str] = field(default_factory=list)  # stand-ins named that no run needs
    stand_in: dict[str, str] = field(default_factory=dict)  # as named

    def left_out(self) -> list[str]:
        """One line per reason runs are left out, saying what to do about it."""
        out = []
        if self.real_only:
            n = sum(self.real_only.values())
            out.append(f"backend sim: {n:,} of the {self.total:,} runs only run on real stacks "
                       f"({', '.join(self.real_only)}); left out")
        if self.simulated:
            out.append(f"backend sim: {self.simulated:,} of the {self.total:,} runs are simulated already (their "
                       f"group's options say backend sim; `dclab campaign run` runs them); left out")
        if self.unmodelled:
            n = sum(self.unmodelled.values())
            out.append(f"backend sim: {n:,} of the {self.total:,} runs have no model of their own "
                       f"({stand_in_hint(list(self.unmodelled), self.stand_in)}); left out")
        out += [f"--stand-in {s}: no run here needs it" for s in self.unused]
        return out


def stand_in_hint(pairs: list[tuple[str, str]], stand_in: Mapping[str, str] | None = None) -> str:
    """'ngtcp2 reno, ngtcp2 cubic: name a stand-in with --stand-in ngtcp2=aioquic; ngtcp2
    bbr2: no model has bbr2' for these unmodelled (stack, cc)."""
    by_stack: dict[str, list[str]] = {}
    for stack, cc in pairs:
        by_stack.setdefault(stack, []).append(cc)
    named: list[str] = []  # what a stand-in would run
    args: list[str] = []  # the stand-ins to name for it
    without: list[str] = []  # what no model can stand in for
    for stack, ccs in by_stack.items():
        models = {cc: m for cc in ccs if (m := suggestion(stack, cc)) is not None}
        without += [f"{stack} {cc}: no model has {cc}" for cc in ccs if cc not in models]
        named += [f"{stack} {cc}" for cc in models]
        names = {m.name for m in models.values()}
        whole = len(unmodelled_ccs(stack)) == len(get_stack(stack).ccs) and stack not in (stand_in or {})
        if whole and len(names) == 1:
            args.append(f"{stack}={names.pop()}")
        else:
            args += [f"{stack}:{cc}={m.name}" for cc, m in models.items()]
    parts = [f"{', '.join(named)}: name a stand-in with --stand-in {','.join(args)}"] if named else []
    return "; ".join(parts + without)


def twins(runs: list[PlannedRun], stand_in: Mapping[str, str] | None = None) -> Twins:
    """Every run's simulated twin where it has one, and what is left out (``Twins``)."""
    out = Twins(total=len(runs), pairs=[], stand_in=dict(stand_in or {}))
    needed: set[str] = set()
    for r in runs:
        exp = get_experiment(r.experiment)
        if not exp.simulates:
            out.real_only[r.experiment] += 1
            continue
        if getattr(r.options, "backend", None) != "emu":
            out.simulated += 1
            continue
        flows = run_flows(exp, r.scenario, r.options)
        needed |= set(used(flows or [], stand_in or {}))
        twin = sim_twin(r, stand_in, flows)
        if twin is not None:
            out.pairs.append((r, twin))
            continue
        for stack, cc in dict.fromkeys(flows or []):
            if refusal(stack, cc, stand_in or {}):
                out.unmodelled[(stack, cc)] += 1
                break
    out.unused = [f"{s}={m}" for s, m in (stand_in or {}).items() if s not in needed]
    return out


def stand_in_note(run: PlannedRun) -> str:
    """' (sim: aioquic model)' for a twin on a stand-in, to follow its point's configuration."""
    stand_in = RunChoices.of(run.options).stand_ins
    models = sorted(set(stand_in.values()))
    return f" (sim: {', '.join(f'{m} model' for m in models)})" if models else ""


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
    calibration: str | None = None  # the calibration point it is, if the model was fitted to it

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

    @property
    def judged(self) -> bool:
        """Hold-out: the model was not calibrated on it."""
        return self.calibration is None

    def as_dict(self) -> dict[str, Any]:
        return {"experiment": self.experiment, "config": self.config, "sweep": self.sweep, "value": self.value,
                "metric": self.metric, "emu": self.emu, "sim": self.sim, "emu_mean": self.emu_mean,
                "sim_mean": self.sim_mean, "error": self.error, "bound": self.bound, "passed": self.passed,
                "role": "hold-out" if self.judged else "calibration", "calibration": self.calibration}


def calibration_of(run: PlannedRun, points: list[CalibrationPoint]) -> str | None:
    """The name of the calibration point ``run`` is, if any."""
    cfg = run.config
    return next((p.name for p in points if p.matches(run.experiment, cfg.stack, cfg.cc, cfg.udp_buffer, run.scenario)),
                None)


def compare(pairs: list[tuple[PlannedRun, PlannedRun]], rows: dict[str, dict[str, Any]],
            calibrated: list[CalibrationPoint] | None = None) -> list[Point]:
    """Points from (emulated run, simulated twin) pairs and the store's rows by run key; a
    run missing or failed in the store adds nothing to its side. ``calibrated``: the points
    the models were calibrated on (default: the kept calibration's)."""
    calibrated = client_points() if calibrated is None else calibrated
    points: dict[tuple[str, ...], Point] = {}
    for emu, sim in pairs:
        metric = get_experiment(emu.experiment).metrics[0].name
        p = points.setdefault(point_of(emu), Point(emu.experiment, emu.config.label + stand_in_note(sim), emu.sweep,
                                                   f"{emu.value:g}", metric, calibration=calibration_of(emu, calibrated)))
        for run, side in ((emu, p.emu), (sim, p.sim)):
            row = rows.get(run.key)
            value = (row or {}).get("metrics", {}).get(metric) if row and row.get("ok") else None
            if value is not None:
                side.append(float(value))
    return list(points.values())


def summary(points: list[Point]) -> dict[str, dict[str, int]]:
    """Per experiment: hold-out points compared, passed, and without both sides; and the
    calibration points, not judged."""
    return _count(points, lambda p: p.experiment)


def by_config(points: list[Point]) -> dict[str, dict[str, int]]:
    """The same per experiment and configuration ("throughput: tcp cubic"), since a bound
    is met per stack and buffer."""
    return _count(points, lambda p: f"{p.experiment}: {p.config}")


def _count(points: list[Point], key: Callable[[Point], str]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for p in points:
        d = out.setdefault(key(p), {"points": 0, "passed": 0, "incomplete": 0, "calibration": 0})
        if not p.judged:
            d["calibration"] += 1
            continue
        d["points"] += 1
        if p.passed is None:
            d["incomplete"] += 1
        elif p.passed:
            d["passed"] += 1
    return out
