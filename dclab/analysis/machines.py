"""Where runs ran, and machines whose results differ from the others' on the same configuration.

Takes stored runs (``stored_run.py``); knows nothing of the store.

A *configuration* is what makes runs comparable: runs equal in everything but repetition,
seed and machine (``configuration``). For a configuration that ran on at least two machines,
each machine m is compared with the runs of all other machines ("others") on one metric,
over successful runs that have it:

- comparable when m has at least 2 such runs and the others at least 2 (``MIN_RUNS``);
- flagged when ``|mean_m - mean_others| > max(3 * pooled_std, 3 * others_std,
  0.05 * |mean_others|)``, where ``pooled_std`` is the pooled sample standard deviation
  within machines (each machine of the configuration with 2 or more runs around its own
  mean: the run-to-run noise), ``others_std`` the sample standard deviation of the others'
  runs (so a machine is not flagged when the others disagree among themselves as much), and
  5 % a floor below which a difference does not matter.

With exactly two machines both are flagged, since nothing tells which of them is off; with
three or more the odd one out is.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .stored_run import StoredRun

Run = StoredRun[Any]

MIN_RUNS = 2  # successful runs needed on the machine and on the others
SPREAD = 3.0  # a difference beyond SPREAD standard deviations is flagged ...
FLOOR = 0.05  # ... if it is also beyond this fraction of the others' mean
HEADLINE = ("goodput_mbps", "jfi")  # preferred default metrics, in this order
BOOKKEEPING = {"t0_ms", "window_s", "elapsed_s", "estimate_s"}  # metrics no default picks


@dataclass(frozen=True)
class MachineRuns:
    machine: str
    runs: int
    failed: int
    kernels: tuple[str, ...]  # distinct values, "?" for runs that did not record it
    cpu_models: tuple[str, ...]


@dataclass(frozen=True)
class Comparison:
    """One machine against the other machines on one configuration."""

    machine: str
    configuration: str  # a label (``configuration_labels``)
    experiment: str
    metric: str
    n: int
    mean: float
    std: float
    others: tuple[str, ...]  # the other machines
    others_n: int
    others_mean: float
    others_std: float
    pooled_std: float  # within machines, over the whole configuration
    threshold: float  # the difference beyond which it is flagged
    difference_pct: float | None  # (mean - others_mean) / |others_mean| * 100; None if others_mean is 0
    flagged: bool


@dataclass(frozen=True)
class MachineSummary:
    machine: str
    comparable: int  # configurations of this machine that could be compared
    flagged: int


def _machine(r: Run) -> str:
    return r.machine or "?"


def _env(r: Run, key: str) -> str:
    v = r.environment.get(key)
    return str(v) if v not in (None, "") else "?"


def runs_per_machine(rows: Sequence[Run]) -> list[MachineRuns]:
    """Per machine (sorted by name): runs, failed runs, and the kernels and CPU models its
    runs recorded ("?" for runs from before a key was recorded)."""
    by: dict[str, list[Run]] = {}
    for r in rows:
        by.setdefault(_machine(r), []).append(r)
    return [MachineRuns(machine=m, runs=len(rs), failed=sum(1 for r in rs if not r.ok),
                        kernels=tuple(sorted({_env(r, "kernel") for r in rs})),
                        cpu_models=tuple(sorted({_env(r, "cpu_model") for r in rs})))
            for m, rs in sorted(by.items())]


def _without_seed(d: dict[str, object]) -> str:
    return json.dumps({k: v for k, v in d.items() if k != "seed"}, sort_keys=True, default=str)


def configuration(r: Run) -> tuple[str, ...]:
    """What runs share when they differ only in repetition, seed and machine: experiment,
    sweep, value, stack, cc, host configuration, scenario and options (both without ``seed``)."""
    return (r.experiment, r.sweep, r.value, r.stack, r.cc, r.host_config, _without_seed(r.scenario_json()),
            _without_seed(r.options_json()))


def configuration_labels(rows: Sequence[Run]) -> dict[tuple[str, ...], str]:
    """A readable label per configuration: 'experiment sweep=value, stack cc, host_config',
    followed by the option and scenario fields in which configurations sharing that much
    differ (``name=value``)."""
    bases: dict[tuple[str, ...], str] = {}
    parts: dict[tuple[str, ...], dict[str, object]] = {}
    for r in rows:
        key = configuration(r)
        if key in bases:
            continue
        what = f"{r.sweep}={r.value}" if r.sweep else r.value
        bases[key] = " ".join(x for x in [r.experiment or "?", what] if x) + \
            f", {r.stack_shown or '-'} {r.cc or '-'}, {r.host_config or '-'}"
        parts[key] = {**{f"scenario.{k}": v for k, v in r.scenario_json().items() if k != "seed"},
                      **{k: v for k, v in r.options_json().items() if k != "seed"}}
    out = {}
    for key, base in bases.items():
        same = [k for k, b in bases.items() if b == base]
        names = sorted({n for k in same for n in parts[k]})
        differing = [n for n in names if len({json.dumps(parts[k].get(n), sort_keys=True, default=str) for k in same}) > 1]
        out[key] = " ".join([base] + [f"{n}={_short(parts[key].get(n))}" for n in differing])
    return out


def _short(v: object) -> str:
    return v if isinstance(v, str) else json.dumps(v, default=str)


def _value(r: Run, metric: str) -> float | None:
    return r.metric(metric) if r.ok else None


def headline_metric(rows: Sequence[Run]) -> str | None:
    """The default metric of some runs (of one experiment): the first of HEADLINE any of
    them recorded, else the first other numeric metric, else None."""
    present: dict[str, None] = {}
    for r in rows:
        for k in r.metrics:
            if k not in BOOKKEEPING and _value(r, k) is not None:
                present.setdefault(k)
    return next((m for m in HEADLINE if m in present), next(iter(present), None))


def _metric_of(experiment: str, rows: Sequence[Run], metric: str | Mapping[str, str] | None) -> str | None:
    if isinstance(metric, str):
        return metric
    if metric is not None and experiment in metric:
        return metric[experiment]
    return headline_metric(rows)


def compare_machines(rows: Sequence[Run], metric: str | Mapping[str, str] | None = None) -> list[Comparison]:
    """Every comparable (machine, configuration), flagged or not (see the module's
    docstring for the rule). ``metric``: one metric for all runs, or one per experiment
    (experiments not named, and ``None``, take ``headline_metric`` of their runs)."""
    labels = configuration_labels(rows)
    by_exp: dict[str, list[Run]] = {}
    for r in rows:
        by_exp.setdefault(r.experiment, []).append(r)
    metrics = {e: _metric_of(e, rs, metric) for e, rs in by_exp.items()}
    configs: dict[tuple[str, ...], dict[str, list[float]]] = {}
    for r in rows:
        m = metrics[r.experiment]
        v = _value(r, m) if m else None
        if v is not None:
            configs.setdefault(configuration(r), {}).setdefault(_machine(r), []).append(v)
    out = []
    for key, per in configs.items():
        if len(per) < 2:
            continue
        noisy = [vs for vs in per.values() if len(vs) >= 2]
        dof = sum(len(vs) - 1 for vs in noisy)
        pooled = math.sqrt(sum((len(vs) - 1) * statistics.variance(vs) for vs in noisy) / dof) if dof else 0.0
        for machine, vs in sorted(per.items()):
            others = [v for m, ovs in per.items() if m != machine for v in ovs]
            if len(vs) < MIN_RUNS or len(others) < MIN_RUNS:
                continue
            mean, others_mean, others_std = statistics.fmean(vs), statistics.fmean(others), statistics.stdev(others)
            threshold = max(SPREAD * pooled, SPREAD * others_std, FLOOR * abs(others_mean))
            out.append(Comparison(
                machine=machine, configuration=labels[key], experiment=key[0], metric=metrics[key[0]] or "",
                n=len(vs), mean=mean, std=statistics.stdev(vs), others=tuple(sorted(m for m in per if m != machine)),
                others_n=len(others), others_mean=others_mean, others_std=others_std, pooled_std=pooled,
                threshold=threshold, difference_pct=(mean - others_mean) / abs(others_mean) * 100 if others_mean else None,
                flagged=abs(mean - others_mean) > threshold))
    return sorted(out, key=lambda c: (c.machine, c.configuration))


def machine_outliers(rows: Sequence[Run], metric: str | Mapping[str, str] | None = None) -> list[Comparison]:
    """The flagged comparisons: machines whose mean differs from the other machines' beyond
    the spread, per configuration."""
    return [c for c in compare_machines(rows, metric) if c.flagged]


def machine_summary(comparisons: list[Comparison]) -> list[MachineSummary]:
    """Per machine that had any comparable configuration: how many, and how many flagged."""
    by: dict[str, list[Comparison]] = {}
    for c in comparisons:
        by.setdefault(c.machine, []).append(c)
    return [MachineSummary(machine=m, comparable=len(cs), flagged=sum(1 for c in cs if c.flagged)) for m, cs in sorted(by.items())]


__all__ = ["MachineRuns", "Comparison", "MachineSummary", "runs_per_machine", "configuration", "configuration_labels",
           "headline_metric", "compare_machines", "machine_outliers", "machine_summary"]
