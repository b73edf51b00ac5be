"""How far the planner's model is from the time a campaign's runs took.

The planner estimates each run (``plan.estimate``: setup plus what the experiment says it
measures); the runner stores beside each run's metrics the seconds it took (``elapsed_s``).
Compared here per experiment, campaign group and sweep, with the model as it is now (not
the estimate stored with the run, which was the model of its day), so a change to an
experiment's ``estimate_s`` shows against every campaign ever measured. The kept totals of
measured campaigns are in ``tests/data/campaign_times.json`` (``scripts/keep_campaign_time.py``)
and ``tests/test_campaign_timing.py`` holds each of those campaigns' plan ``within`` them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .plan import PlannedRun
from .store import Store

# How far a campaign's estimate may be from its measured time: a quarter of it, or a minute
# for a campaign of a few minutes, whose runs are mostly each run's fixed cost
# (docs/explanation/campaigns.md).
TOLERANCE = 0.25
SLACK_S = 60.0


@dataclass(frozen=True)
class Timing:
    """Runs of one experiment, group and sweep: the model's estimate and what they took."""

    experiment: str
    group: str
    sweep: str
    runs: int
    estimate_s: float
    measured_s: float

    @property
    def ratio(self) -> float:
        """Estimate over measured: above 1 the planner overestimates."""
        return self.estimate_s / self.measured_s if self.measured_s > 0 else float("inf")


def measured(store: Store) -> dict[str, float]:
    """Run key -> the seconds the run took, for every stored run that says (failed ones too:
    they took their time)."""
    out: dict[str, float] = {}
    for r in store.rows():
        elapsed = r["metrics"].get("elapsed_s")
        if isinstance(elapsed, int | float) and elapsed > 0:
            out[r["run_key"]] = float(elapsed)
    return out


def timings(runs: list[PlannedRun], elapsed: Mapping[str, float]) -> list[Timing]:
    """Per (experiment, group, sweep), in the plan's order, the planned runs that ``elapsed``
    (run key -> seconds it took) has; runs it lacks are left out of both sides."""
    groups: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
    for r in runs:
        if r.key in elapsed:
            groups.setdefault((r.experiment, r.group, r.sweep), []).append((r.estimate_s, elapsed[r.key]))
    return [Timing(exp, group, sweep, len(v), sum(e for e, _ in v), sum(m for _, m in v))
            for (exp, group, sweep), v in groups.items()]


def total(ts: list[Timing]) -> Timing:
    """Every group's runs together."""
    return Timing("all", "", "", sum(t.runs for t in ts), sum(t.estimate_s for t in ts), sum(t.measured_s for t in ts))


def hours_text(s: float) -> str:
    return f"{s / 3600:.1f} h" if s >= 3600 else f"{s / 60:.1f} min"


def within(estimate_s: float, measured_s: float) -> bool:
    """The estimate is within TOLERANCE of the measured time, or within SLACK_S of it."""
    return abs(estimate_s - measured_s) <= max(TOLERANCE * measured_s, SLACK_S)
