"""`dclab sweep` and `dclab campaign`: many runs, resumable, into a result store."""

from __future__ import annotations

import sys
from collections import Counter

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from . import campaign as cp
from .cli_options import err, parse_size, root_or_exit, scenario_from, scenario_options
from .scenario import ScenarioError
from .store import Store, campaign_dir


def hours(s: float) -> str:
    return f"{s / 3600:.1f} h" if s >= 3600 else f"{s / 60:.1f} min"


def print_plan(c: cp.Campaign, runs: list[cp.PlannedRun], todo: list[cp.PlannedRun], store: Store | None,
               full: bool) -> None:
    cal = cp.calibration(store) if store else {}
    t = Table(title=f"campaign {c.name}: {c.description}", show_header=True)
    for col in ("experiment", "config", "sweep", "values", "reps", "runs", "to do", "estimate"):
        t.add_column(col)
    groups: dict[tuple, list[cp.PlannedRun]] = {}
    for r in runs:
        groups.setdefault((r.experiment, r.config.label, r.sweep), []).append(r)
    todo_keys = {r.key for r in todo}
    total = 0.0
    for (exp, cfg, sweep), rs in groups.items():
        left = [r for r in rs if r.key in todo_keys]
        est = sum(r.estimate_s for r in left) * cal.get(exp, 1.0)
        total += est
        values = sorted({r.value for r in rs})
        vtext = ", ".join(f"{v:g}" for v in values) if full or len(values) <= 6 else f"{values[0]:g} .. {values[-1]:g} ({len(values)})"
        t.add_row(exp, cfg, sweep, vtext, str(max(r.rep for r in rs)), str(len(rs)), str(len(left)), hours(est))
    Console().print(t)
    basis = ", ".join(f"{e} x{f:.2f}" for e, f in cal.items()) or "model only (no finished runs yet)"
    click.echo(f"{len(runs)} runs, {len(runs) - len(todo)} done, {len(todo)} to do; estimated {hours(total)} "
               f"of real time (calibration from finished runs: {basis})")


def run_campaign(c: cp.Campaign, store: Store, todo: list[cp.PlannedRun]) -> int:
    """Runs what is left with a progress bar weighted by estimated time; returns failures."""
    cal = cp.calibration(store)
    failures = 0
    consecutive_errors = 0
    total = sum(r.estimate_s * cal.get(r.experiment, 1.0) for r in todo)
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[n]}"),
                  TimeElapsedColumn(), TimeRemainingColumn(), console=err) as progress:
        task = progress.add_task(f"campaign {c.name}", total=total, n=f"0/{len(todo)}")
        for i, run in enumerate(todo, 1):
            label = f"{run.experiment} {run.config.label} {run.sweep}={run.value:g} rep {run.rep}"
            progress.update(task, description=label)
            try:
                m = cp.execute(c, run, store, on_wait=lambda: err.print("waiting for another dclab run ..."))
                consecutive_errors = 0
                if not m.get("ok"):
                    failures += 1
                    progress.console.print(f"[yellow]failed[/] {label}: {m.get('error') or 'no result'}")
            except KeyboardInterrupt:
                progress.console.print(f"[yellow]interrupted[/] during {label}: it is not stored and runs again next time")
                raise
            except Exception as e:  # noqa: BLE001 - one broken run must not end a 80-hour campaign
                failures += 1
                consecutive_errors += 1
                progress.console.print(f"[red]error[/] {label}: {e}")
                if consecutive_errors >= 3:
                    raise click.ClickException("three runs in a row could not start; stopping (see `dclab doctor`)") from None
            progress.update(task, advance=run.estimate_s * cal.get(run.experiment, 1.0), n=f"{i}/{len(todo)}")
    return failures


@click.group()
def campaign() -> None:
    """Campaigns described in campaigns/NAME.toml (see the README for the format)."""


@campaign.command("list")
def campaign_list() -> None:
    """The campaigns shipped in campaigns/."""
    for p in sorted(cp.CAMPAIGNS.glob("*.toml")):
        c = cp.load(str(p))
        click.echo(f"{c.name:10} {len(cp.plan(c)):6} runs  {c.description}")


def _load(name: str, reps: int | None, shard: str | None, create: bool = True) -> tuple[cp.Campaign, Store | None, list, list]:
    """The campaign, its store (None when planning a campaign that never ran), its runs
    and those not yet stored."""
    try:
        c = cp.load(name)
        path = campaign_dir(c.name) / "store.sqlite"
        store = Store(path) if create or path.exists() else None
        if store:
            runs, todo = cp.pending(c, store, reps, shard)
        else:
            runs = todo = cp.shard(cp.plan(c, reps), shard)
    except ScenarioError as e:
        raise click.UsageError(str(e)) from None
    return c, store, runs, todo


@campaign.command("plan")
@click.argument("name")
@click.option("--reps", type=click.IntRange(1, 1000), help="Repetitions per configuration [default: the campaign's].")
@click.option("--shard", help="Only this machine's part: i/n.")
@click.option("--full", is_flag=True, help="List every value of every sweep.")
def campaign_plan(name: str, reps: int | None, shard: str | None, full: bool) -> None:
    """Print the runs of campaign NAME and an estimate of the real time they take."""
    c, store, runs, todo = _load(name, reps, shard, create=False)
    print_plan(c, runs, todo, store, full)


@campaign.command("run")
@click.argument("name")
@click.option("--reps", type=click.IntRange(1, 1000), help="Repetitions per configuration [default: the campaign's].")
@click.option("--shard", help="Run only part i of n (e.g. 2/4); merge the stores with `dclab results merge`.")
def campaign_run(name: str, reps: int | None, shard: str | None) -> None:
    """Run campaign NAME, skipping runs already stored; stop and start again at will."""
    root_or_exit()
    c, store, runs, todo = _load(name, reps, shard)
    err.print(f"campaign {c.name}: {len(runs)} runs, {len(runs) - len(todo)} already stored, {len(todo)} to do "
              f"-> {store.path}")
    try:
        failures = run_campaign(c, store, todo)
    except KeyboardInterrupt:
        sys.exit(130)
    counts = Counter(r["ok"] for r in store.rows("campaign = ?", (c.name,)))
    click.echo(f"done: {counts.get(1, 0)} runs stored ok, {counts.get(0, 0)} failed; store {store.path}")
    if failures and failures == len(todo):
        sys.exit(1)


@click.command()
@scenario_options
@click.option("--param", "params", multiple=True, required=True,
              help="NAME[=VALUES]: batch, split, bw-ratio, bw-ratio-matched, delay-ratio-low, delay-ratio-high, loss, "
                   "loss-dup, size; VALUES a list 2,10,50 or a range lo:hi:step (default: the study's values).")
@click.option("--experiment", "experiments", multiple=True, type=click.Choice(["throughput", "fairness"]),
              default=["throughput"], show_default=True, help="Repeat for several.")
@click.option("--config", "configs", multiple=True, default=["aioquic:reno:default"], show_default=True,
              help="STACK[:CC[:default|large]]; repeat for several (e.g. aioquic:reno:large, tcp:cubic).")
@click.option("--reps", type=click.IntRange(1, 1000), default=3, show_default=True)
@click.option("--size", default="100MB", show_default=True, help="Throughput download size.")
@click.option("--duration", type=click.FloatRange(1, 86400), default=180, show_default=True, help="Fairness window, s.")
@click.option("--name", help="Store name under results/ [default: sweep-PARAM].")
@click.option("--plan", "plan_only", is_flag=True, help="Only print the runs and the time estimate.")
def sweep(params: tuple[str, ...], experiments: tuple[str, ...], configs: tuple[str, ...], reps: int, size: str,
          duration: float, name: str | None, plan_only: bool, **kw) -> None:
    """One factor at a time around the scenario given by the other options; resumable
    like a campaign (its store is results/NAME/store.sqlite)."""
    from .sweep import parse_param

    base = scenario_from(kw)
    try:
        parsed = [parse_param(p) for p in params]
        cfgs = [cp.parse_config(x) for x in configs]
    except (ScenarioError, ValueError) as e:
        raise click.UsageError(str(e)) from None
    c = cp.Campaign(name=name or "sweep-" + "-".join(p for p, _ in parsed), reps=reps,
                    throughput_size=parse_size(size), fairness_duration_s=duration)
    c.groups = [{"experiments": list(experiments), "configs": [cfg.__dict__ for cfg in cfgs],
                 "sweeps": [{"name": p, "values": v} for p, v in parsed]}]
    store = Store(campaign_dir(c.name) / "store.sqlite")
    try:
        runs = cp.plan(c, base=base)
    except ScenarioError as e:
        raise click.UsageError(str(e)) from None
    done = store.keys()
    todo = [r for r in runs if r.key not in done]
    print_plan(c, runs, todo, store, full=True)
    if plan_only:
        return
    root_or_exit()
    try:
        run_campaign(c, store, todo)
    except KeyboardInterrupt:
        sys.exit(130)
    click.echo(f"store {store.path}; figures: dclab report {c.name}")


def register(app: click.Group) -> None:
    app.add_command(campaign)
    app.add_command(sweep)

