"""`dclab validate`: the simulation against emulation, point by point."""

from __future__ import annotations

import json
import sys

import click
from rich.console import Console
from rich.table import Table

from ..campaign import plan as cp
from ..campaign import twins as v
from ..campaign.dispatch import Where
from ..campaign.store import campaign_dir
from ..errors import InputError
from ..files import FileRefused, write_output
from .campaign import max_runs_option, preflight_all, run_all, sim_jobs, store_at
from .options import err, root_or_exit, stand_in_from, stand_in_option


@click.command()
@click.argument("name")
@click.option("--group", "groups", multiple=True, metavar="PATTERN",
              help="Only the campaign's groups whose name matches PATTERN (shell-style); repeatable.")
@click.option("--reps", type=click.IntRange(1, 1000), help="Repetitions per point and backend [default: the campaign's].")
@click.option("--sim-only", is_flag=True, help="Run only the simulated twins; compare with the emulated runs already stored.")
@click.option("--json", "as_json", is_flag=True, help="Print the points and the summary as JSON.")
@stand_in_option
@max_runs_option
def validate(name: str, groups: tuple[str, ...], reps: int | None, sim_only: bool, as_json: bool,
             stand_in: str | None, max_runs: int) -> None:
    """Run campaign NAME on both backends and compare, point by point, the simulated mean
    with the emulated one: goodput within 10 %, JFI within 0.05. The model is judged on
    hold-out points: a point it was calibrated on (data/calibration/) is shown, marked
    "calibration", and not judged.

    Every run whose experiment and stacks the simulation models gets a twin with backend
    sim (same configuration, scenario, options and seed); a stack without a model of its
    own only with --stand-in, and its points say which model stood in. Both go into the
    campaign's store, so emulated runs already there are not repeated. Writes
    results/NAME/validation.json."""
    named = stand_in_from(stand_in)
    try:
        c = cp.select_groups(cp.load(name), groups)
        runs = cp.plan(c, reps, max_runs=max_runs)
    except InputError as e:
        raise click.UsageError(str(e)) from None
    t = v.twins(runs, named)
    pairs = t.pairs
    for line in t.left_out():
        err.print(line)
    if not pairs:
        raise click.UsageError(f"{c.name}: none of its runs can be simulated (throughput and fairness can, on emu, "
                               f"with stacks the simulation models)")
    store = store_at(campaign_dir(c.name) / "store.sqlite")
    done = store.keys()
    sims = [t for _, t in pairs if t.key not in done]
    emus = [] if sim_only else [r for r, _ in pairs if r.key not in done]
    if emus:
        root_or_exit()
    preflight_all(sims + emus)
    skipped = len(runs) - len(pairs)
    err.print(f"validate {c.name}: {len(pairs)} runs with a simulated twin ({skipped} without); to run: "
              f"{len(sims)} simulated, {len(emus)} emulated -> {store.path}")
    if sims:
        run_all(c, store, sims, Where(jobs=sim_jobs(None)))
    if emus:
        run_all(c, store, emus)
    rows = {r["run_key"]: r for r in store.rows()}
    points = v.compare(pairs, rows)
    summary, configs = v.summary(points), v.by_config(points)
    out = {"campaign": c.name, "points": [p.as_dict() for p in points], "summary": summary, "by_config": configs}
    try:
        write_output(campaign_dir(c.name) / "validation.json", json.dumps(out, indent=1), "validation.json")
    except FileRefused as e:
        raise click.ClickException(str(e)) from None
    if as_json:
        click.echo(json.dumps(out))
    else:
        print_points(points, summary, configs)
    if any(p.passed is False and p.judged for p in points):
        sys.exit(1)


def print_points(points: list[v.Point], summary: dict[str, dict[str, int]],
                 configs: dict[str, dict[str, int]]) -> None:
    t = Table(title="simulation against emulation", show_header=True)
    for col in ("experiment", "config", "point", "metric", "emu", "sim", "error", "bound", ""):
        t.add_column(col)
    def fmt(x: float | None, digits: int) -> str:
        return "-" if x is None else f"{x:.{digits}f}"

    for p in points:
        digits = 3 if p.metric == "jfi" else 2
        e = p.error
        err_text = "-" if e is None else (f"{e:+.3f}" if p.metric == "jfi" else f"{100 * e:+.1f} %")
        bound = f"{p.bound:.2f}" if p.metric == "jfi" else f"{100 * p.bound:.0f} %"
        word = {True: "ok", False: "off", None: "incomplete"}[p.passed]
        mark = (f"[{ {True: 'green', False: 'red', None: 'yellow'}[p.passed] }]{word}[/]" if p.judged
                else f"calibration ({word}, not judged)")
        t.add_row(p.experiment, p.config, f"{p.sweep}={p.value}", p.metric, f"{fmt(p.emu_mean, digits)} (n={len(p.emu)})",
                  f"{fmt(p.sim_mean, digits)} (n={len(p.sim)})", err_text, bound, mark)
    Console().print(t)
    for exp, d in summary.items():
        click.echo(f"{exp}: {counts(d)}")
        for name, dc in configs.items():
            if name.startswith(f"{exp}: "):
                click.echo(f"  {name.removeprefix(f'{exp}: ')}: {counts(dc)}")


def counts(d: dict[str, int]) -> str:
    return (f"{d['passed']} of {d['points']} hold-out points within the bound"
            + (f", {d['incomplete']} without both backends" if d["incomplete"] else "")
            + (f"; {d['calibration']} calibration points not judged" if d.get("calibration") else ""))
