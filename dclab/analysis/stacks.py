"""A campaign's stacks side by side: every stack's headline metric at every point the
campaign measured (experiment, sweep, value), as one table and one figure. The stack of a
run is its first flow's (the DC flow's): a fairness run of ``dc=quinn,sc1=tcp,sc2=tcp`` is
quinn's against TCP; a simulated run on a stand-in model is its own row, "ngtcp2 (aioquic
model)" (``stand_in.py``). Generic over experiments: the caller says which metric is each
experiment's headline (the report takes it from the registry)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..scenario import Scenario
from .figures import Run, _save, empty_figure, plt
from .grid import NoValue, mean_std_text, pivot
from .metrics import mean_std


@dataclass(frozen=True)
class Headline:
    """An experiment's headline metric: its name in the stored metrics, a label and unit."""

    metric: str
    label: str
    unit: str = ""
    digits: int = 2


@dataclass(frozen=True)
class Point:
    experiment: str
    sweep: str
    value: str
    value_num: float | None
    default: bool  # the scenario is the reference testbed's (every field at its default)

    def label(self) -> str:
        where = "default scenario" if self.default else f"{self.sweep} {self.value}"
        if self.default and self.sweep not in ("", "none"):
            where += f" ({self.sweep} {self.value})"
        return f"{self.experiment}: {where}"


def stack_of(r: Run) -> str:
    """The run's stack as shown: the DC flow's, i.e. the first of ``flow=stack,...`` labels."""
    label = r.stack_shown or "?"
    return label.split(",")[0].split("=")[-1]


def labels(rows: Sequence[Run]) -> dict[str, str]:
    """Each run's row in the comparison: its stack, with its congestion controller and host
    configuration added where the same stack ran with more than one in one experiment
    (never pooled). Across experiments they may differ (a fairness run against TCP has the
    QUIC and TCP host settings) and stay one row."""
    ccs: dict[tuple[str, str], set[str]] = {}
    hosts: dict[tuple[str, str], set[str]] = {}
    for r in rows:
        key = (stack_of(r), r.experiment)
        ccs.setdefault(key, set()).add(r.cc)
        hosts.setdefault(key, set()).add(r.host_config)
    split_cc = {st for (st, _), v in ccs.items() if len(v) > 1}
    split_host = {st for (st, _), v in hosts.items() if len(v) > 1}
    out = {}
    for r in rows:
        st = stack_of(r)
        parts = [st] + ([r.cc] if st in split_cc else []) + ([r.host_config] if st in split_host else [])
        out[r.run_key] = " ".join(parts)
    return out


def opponents(rows: Sequence[Run]) -> str:
    """What the first flow competed with, when runs mix stacks (``sc1=tcp,sc2=tcp``)."""
    rest = {",".join(r.stack_shown.split(",")[1:]) for r in rows if "," in r.stack_shown}
    return "; ".join(sorted(rest - {""}))


def _is_default(scenario: Scenario) -> bool:
    mine = scenario.model_dump(mode="json")
    return all(mine.get(k) == v for k, v in Scenario().model_dump(mode="json").items() if k != "seed")


def points(rows: Sequence[Run], headlines: dict[str, Headline]) -> list[Point]:
    """The points measured, default scenario first, then by experiment, sweep and value."""
    seen: dict[tuple[str, str, str], Point] = {}
    for r in rows:
        if r.experiment not in headlines:
            continue
        key = (r.experiment, r.sweep, r.value)
        if key not in seen:
            seen[key] = Point(*key, r.value_num, _is_default(r.scenario))
    order = list(headlines)
    return sorted(seen.values(), key=lambda p: (order.index(p.experiment), not p.default, p.sweep,
                                                 p.value_num if p.value_num is not None else math.inf, p.value))


def stacks(rows: Sequence[Run]) -> list[str]:
    """The comparison's rows (``labels``), sorted."""
    return sorted(set(labels(rows).values()))


def cell(rows: Sequence[Run], stack: str, p: Point, h: Headline,
         names: dict[str, str] | None = None) -> tuple[float | None, float | None, int, int]:
    """(mean, std, successful runs, runs) of the headline metric of row ``stack`` at ``p``
    (``names``: ``labels(rows)``, when the caller has it)."""
    names = names if names is not None else labels(rows)
    at = [r for r in rows if names[r.run_key] == stack and r.experiment == p.experiment
          and r.sweep == p.sweep and r.value == p.value]  # fmt: skip
    vals = [v for r in at if r.ok and (v := r.metric(h.metric)) is not None]
    ms = mean_std(vals)
    return ms.mean, ms.std, len(vals), len(at)


def comparison_table(rows: Sequence[Run], headlines: dict[str, Headline]) -> tuple[list[str], list[list[str]], list[bool]]:
    """Header, rows (one per stack, one column per point, ``mean ± std (n)``) and per row
    whether none of its runs succeeded at any point."""
    pts = points(rows, headlines)
    header = ["stack"] + [f"{p.label()}, {headlines[p.experiment].label}"
                          + (f" ({headlines[p.experiment].unit})" if headlines[p.experiment].unit else "") for p in pts]
    names = labels(rows)

    def text(st: str, p: Point) -> str | NoValue | None:
        h = headlines[p.experiment]
        m, s, n, total = cell(rows, st, p, h, names)
        if total == 0:
            return None
        return NoValue(f"failed (0/{total})") if m is None else mean_std_text(m, s or 0, h.digits, n, total)

    return header, *pivot(stacks(rows), pts, text)


def comparison_figure(rows: Sequence[Run], headlines: dict[str, Headline], path: Path, title: str) -> Path:
    """One panel per experiment: grouped bars, a group per point and a bar per stack, the
    standard deviation as an error bar."""
    pts = points(rows, headlines)
    names = stacks(rows)
    exps = list(dict.fromkeys(p.experiment for p in pts))
    if not pts or not names:
        return empty_figure(path, title, "no runs to compare")
    widths = [max(2, len([p for p in pts if p.experiment == e])) for e in exps]
    fig, axes = plt.subplots(1, len(exps), figsize=(min(16, 2.2 + 1.3 * sum(widths)), 4.2), squeeze=False,
                             gridspec_kw={"width_ratios": widths})
    bar = 0.8 / len(names)
    row_of = labels(rows)
    for ax, e in zip(axes[0], exps, strict=True):
        h = headlines[e]
        mine = [p for p in pts if p.experiment == e]
        for i, st in enumerate(names):
            cells = [cell(rows, st, p, h, row_of) for p in mine]
            xs = [j + (i - (len(names) - 1) / 2) * bar for j in range(len(mine))]
            ax.bar(xs, [c[0] or 0.0 for c in cells], bar, yerr=[c[1] or 0.0 for c in cells], capsize=2, label=st)
        ax.set_xticks(range(len(mine)))
        ax.set_xticklabels([p.label().split(": ", 1)[1].replace(" (", "\n(") for p in mine], fontsize=7)
        vs = opponents([r for r in rows if r.experiment == e])
        ax.set_title(e + (f" (against {vs})" if vs else ""), fontsize=9)
        ax.set_ylabel(f"{h.label}" + (f" ({h.unit})" if h.unit else ""))
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].legend(fontsize=7, ncol=min(3, len(names)))
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return _save(fig, path)
