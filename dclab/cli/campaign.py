"""`dclab sweep` and `dclab campaign`: many runs, resumable, into a result store."""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from ..campaign import plan as cp
from ..campaign import timing
from ..campaign.cluster import CLUSTER_OVERHEAD_S
from ..campaign.dispatch import Where, runner_for
from ..campaign.locks import Busy, campaign_lock
from ..campaign.runner import CampaignError, Outcome, calibration
from ..campaign.store import Store, StoreError, campaign_dir, open_existing, remove_store
from ..campaign.sweeps import SWEEPS, parse_param
from ..errors import InputError
from ..experiments import default_experiment, experiments
from ..files import FileRefused, JsonObject, check_name, clip
from ..paths import CAMPAIGNS
from .options import err, parse_size, root_or_exit, scenario_from, scenario_options, stand_in_from, stand_in_option

MAX_RUNS = cp.MAX_RUNS
max_runs_option = click.option(
    "--max-runs", type=click.IntRange(min=1), default=MAX_RUNS, show_default=True, metavar="N",
    help="Refuse to plan a campaign of more runs than this (counted before planning: lists multiply).")


def store_at(path: Path, readonly: bool = False) -> Store:
    """The store at ``path`` (made if missing, unless ``readonly``); a store dclab cannot
    use (not a store, written by a newer dclab, damaged) is a one-line error."""
    try:
        return open_existing(path) if readonly else Store(path)
    except StoreError as e:
        raise click.ClickException(str(e)) from None


hours = timing.hours_text


def print_plan(c: cp.Campaign, runs: list[cp.PlannedRun], todo: list[cp.PlannedRun], store: Store | None,
               full: bool, workers: int | None = None) -> None:
    cal = calibration(store) if store else {}
    t = Table(title=f"campaign {c.name}: {c.description}", show_header=True)
    for col in ("experiment", "config", "sweep", "values", "reps", "runs", "to do", "estimate"):
        t.add_column(col)
    groups: dict[tuple, list[cp.PlannedRun]] = {}
    for r in runs:
        groups.setdefault((r.experiment, r.config_label, r.sweep), []).append(r)
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
    if workers:
        span = cp.makespan([r.estimate_s * cal.get(r.experiment, 1.0) for r in todo], workers, CLUSTER_OVERHEAD_S)
        longest = max((r.estimate_s * cal.get(r.experiment, 1.0) for r in todo), default=0.0)
        click.echo(f"on {workers} workers: about {hours(span)} (longest run first, each to the first free worker; "
                   f"{CLUSTER_OVERHEAD_S:g} s of Dask per run; the longest run alone takes {hours(longest)})")


class BarProgress:
    """The runner's progress as a rich bar weighted by estimated time, a line per failure.
    Where standard error is no terminal (a log file, nohup, a batch job) rich draws no bar,
    so each finished run prints one plain line instead: its number, label, outcome and
    the time left, estimated from the time taken so far."""

    def __init__(self, c: cp.Campaign, store: Store, todo: list[cp.PlannedRun], waiting: str = "waiting for another dclab run ..."):
        self.cal = calibration(store)
        self.waiting_text = waiting
        self.workers = ""  # on a cluster: how many workers, shown before the last finished run
        self.todo = todo
        total = sum(r.estimate_s * self.cal.get(r.experiment, 1.0) for r in todo)
        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[n]}"),
                            TimeElapsedColumn(), TimeRemainingColumn(), console=err)
        self.task = self.bar.add_task(f"campaign {c.name}", total=total, n=f"0/{len(todo)}")
        self.current: cp.PlannedRun | None = None
        self.finished = 0  # runs finished (in parallel, not the plan's order)
        self.plain = not err.is_terminal
        self.started = time.monotonic()

    def start(self, run: cp.PlannedRun, i: int, n: int) -> None:
        self.current = run
        self.bar.update(self.task, description=f"{self.workers}{run.label}")

    def done(self, run: cp.PlannedRun, ok: bool | None, why: str | None) -> None:
        if ok is None:
            self.bar.console.print(f"[red]error[/] {escape(run.label)}: {escape(why or '')}")  # text, not markup
        elif not ok:
            self.bar.console.print(f"[yellow]failed[/] {escape(run.label)}: {escape(why or 'no result')}")
        self.finished += 1
        self.bar.update(self.task, advance=run.estimate_s * self.cal.get(run.experiment, 1.0),
                        n=f"{self.finished}/{len(self.todo)}")
        if self.plain:
            outcome = "error" if ok is None else "ok" if ok else "failed"
            self.bar.console.print(self.line(run, outcome), soft_wrap=True)  # one line, however long

    def line(self, run: cp.PlannedRun, outcome: str) -> str:
        """``[12/240] LABEL: ok; 4.2 min so far, about 38.0 min left``: the time left scales
        the time so far by the estimated share still to do."""
        spent = time.monotonic() - self.started
        task = self.bar.tasks[self.task]  # its estimated seconds: in total, and of the runs done
        left = spent * (task.total - task.completed) / task.completed if task.total and task.completed else None
        rest = f", about {hours(left)} left" if left is not None else ""
        return f"[{self.finished}/{len(self.todo)}] {escape(run.label)}: {outcome}; {hours(spent)} so far{rest}"

    def waiting(self) -> None:
        self.bar.console.print(self.waiting_text)

    def on_workers(self, workers: dict[str, str]) -> None:
        self.workers = f"[{len(workers)} worker{'s' if len(workers) != 1 else ''}] "
        names = ", ".join(sorted(workers.values())) or "none yet"
        self.bar.console.print(f"workers with a testbed: {names}")
        self.bar.update(self.task, description=f"{self.workers}campaign")


def preflight_all(todo: list[cp.PlannedRun]) -> None:
    """dcemu reads the scenario of one run per experiment and trace before anything starts
    (a bad trace is refused now, not hours into a campaign)."""
    from ..experiments import get_experiment
    from ..experiments.reps import preflight

    seen: set[tuple[str, str]] = set()
    for run in todo:
        key = (run.experiment, str(run.scenario.trace))
        if key in seen:
            continue
        seen.add(key)
        try:
            preflight(get_experiment(run.experiment), run.scenario, run.options)
        except (InputError, ValueError) as e:
            raise click.UsageError(f"{run.label}: {e}") from None


TLS_DIR_HELP = ("This machine's directory of a lab's certificates (ca.pem, cert.pem, key.pem; made by `dclab cluster "
                "certs DIR`: DIR/{role}) for a tls:// scheduler.")
INSECURE_HELP = ("Accept a plain tcp:// scheduler: no encryption, no authentication, so anyone who can reach the "
                 "scheduler {what}. Only on a network where everyone who can connect may be root on the workers.")
INSECURE_COORDINATOR = "can run any code as root on its workers, and on this machine through the results it sends"
INSECURE_WORKER = "(or this worker's own ports) can run any code on this machine as root"


def _keep(name: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    """An option's callback that keeps its value for cluster_from (the commands' own
    parameters stay as they are)."""
    def keep(ctx: click.Context, _param: click.Parameter, value: Any) -> Any:
        ctx.meta[f"dclab.cluster.{name}"] = value
        return value
    return keep


def cluster_options(f: Any) -> Any:
    from pathlib import Path

    f = click.option("--insecure", is_flag=True, expose_value=False, callback=_keep("insecure"),
                     help=INSECURE_HELP.format(what=INSECURE_COORDINATOR))(f)
    f = click.option("--tls-dir", type=click.Path(file_okay=False, path_type=Path), metavar="DIR", expose_value=False,
                     callback=_keep("tls_dir"), help=TLS_DIR_HELP.format(role="coordinator"))(f)
    f = click.option("--tries", type=click.IntRange(1, 10), default=3, show_default=True,
                     help="On a cluster: times a run that cannot start is tried before it is stored as failed.")(f)
    f = click.option("--local-workers", type=click.IntRange(1, 64), metavar="N",
                     help="Run on a local Dask cluster of N workers (on one machine the host lock serializes their "
                          "runs; it listens on 127.0.0.1 only, with TLS under a throwaway certificate).")(f)
    return click.option("--scheduler", metavar="tls://HOST:PORT",
                        help="Run on the workers of this Dask scheduler (`dclab worker` on each testbed machine); "
                             "tls:// with --tls-dir, or tcp:// with --insecure.")(f)


def cluster_from(scheduler: str | None, local_workers: int | None, tries: int) -> Where:
    meta = click.get_current_context().meta
    tls_dir, insecure = meta.get("dclab.cluster.tls_dir"), meta.get("dclab.cluster.insecure", False)
    if scheduler and local_workers:
        raise click.UsageError("--scheduler and --local-workers exclude each other: a cluster is either remote or local")
    if not scheduler and (tls_dir is not None or insecure):
        raise click.UsageError("--tls-dir and --insecure are for --scheduler (a local cluster gets TLS of its own)")
    security = check_scheduler(scheduler, tls_dir, insecure, "client") if scheduler else None
    return Where(scheduler=scheduler, local_workers=local_workers, tries=tries, security=security)


def check_scheduler(address: str, tls_dir: Any = None, insecure: bool = False, role: str = "client") -> Any:
    """The Dask Security to reach the scheduler at ``address`` as ``role`` ('client': the
    coordinator, or 'worker'): TLS from ``tls_dir`` for tls://; None for tcp:// only with
    ``insecure`` (which prints what it allows); else a usage error saying what to do."""
    from ..campaign.tls import TLSError, security

    scheme, sep, rest = address.partition("://")
    if not sep or not rest or scheme not in ("tls", "tcp"):
        raise click.BadParameter(f"expected an address like tls://HOST:8786 (got {clip(address)})",
                                 param_hint="--scheduler")
    if tls_dir is not None and insecure:
        raise click.UsageError("--tls-dir and --insecure exclude each other")
    what = INSECURE_WORKER if role == "worker" else INSECURE_COORDINATOR
    if scheme == "tcp":
        if tls_dir is not None:
            raise click.BadParameter(f"with --tls-dir the scheduler's address is tls://{rest} (its `dask scheduler` runs "
                                     "with --protocol tls, see `dclab cluster certs --help`)", param_hint="--scheduler")
        if not insecure:
            raise click.BadParameter(
                f"{clip(address)} is plain TCP, neither encrypted nor authenticated: anyone who can reach the scheduler "
                f"{what}. Use a TLS scheduler (tls://HOST:8786 with --tls-dir; `dclab cluster certs --help` says how), "
                "or pass --insecure to accept that.", param_hint="--scheduler")
        err.print(f"[yellow]warning[/]: --insecure: the scheduler {clip(address)} is plain TCP, neither encrypted nor "
                  f"authenticated; anyone who can reach it {what}. Use TLS instead: `dclab cluster certs --help`.",
                  markup=True, highlight=False)
        return None
    if insecure:
        raise click.BadParameter("--insecure is for a tcp:// scheduler; a tls:// one needs --tls-dir",
                                 param_hint="--insecure")
    if tls_dir is None:
        mine = "worker" if role == "worker" else "coordinator"
        raise click.UsageError(f"a tls:// scheduler needs --tls-dir DIR: this machine's ca.pem, cert.pem and key.pem "
                               f"(`dclab cluster certs DIR` makes them; use DIR/{mine})")
    try:
        return security(role, tls_dir)
    except TLSError as e:
        raise click.BadParameter(str(e).removeprefix("--tls-dir: "), param_hint="--tls-dir") from None


def sim_jobs(jobs: int | None) -> int:
    """Simulated runs at a time on this machine: as asked, else one per CPU."""
    return jobs or os.cpu_count() or 1


def run_all(c: cp.Campaign, store: Store, todo: list[cp.PlannedRun], where: Where = Where()) -> Outcome:
    """The campaign's runner for ``where`` (``campaign/dispatch.py``) under a progress bar;
    Ctrl-C exits 130 with nothing of the interrupted runs stored."""
    waiting = ("no worker offers a testbed yet: start one with `dclab worker --scheduler ADDRESS --tls-dir DIR/worker`"
               if where.cluster else "waiting for another dclab run ...")  # fmt: skip
    try:
        with campaign_lock(store.path.parent):
            # Planned before the lock: what another process stored meanwhile is not run again.
            done = store.keys()
            return _run_locked(c, store, [r for r in todo if r.key not in done], where, waiting)
    except Busy as e:
        raise click.ClickException(
            f"campaign {c.name} is being run by another dclab (pid {e.holder}): two at once would empty each "
            "other's run directories; run it again when that one ends (it then does only what is left)") from None


def _run_locked(c: cp.Campaign, store: Store, todo: list[cp.PlannedRun], where: Where, waiting: str) -> Outcome:
    progress = BarProgress(c, store, todo, waiting)
    runner = runner_for(where, say=progress.bar.console.print, on_workers=progress.on_workers)
    with progress.bar:
        try:
            return runner.run(c, store, todo, progress)
        except KeyboardInterrupt:
            if runner.many_in_flight:
                progress.bar.console.print("[yellow]interrupted[/]: the runs in flight are not stored and run again next time")
            else:
                label = progress.current.label if progress.current else "the campaign"
                progress.bar.console.print(f"[yellow]interrupted[/] during {label}: it is not stored and runs again next time")
            sys.exit(130)
        except CampaignError as e:
            raise click.ClickException(str(e)) from None
        except OSError as e:  # the scheduler cannot be reached
            if not where.cluster:
                raise
            raise click.ClickException(f"cannot reach the Dask scheduler {where.scheduler}: {e}") from None
        finally:
            if where.local_workers:
                recover_host(progress.bar.console.print)


def recover_host(say: Callable[[str], None]) -> None:
    """After a local cluster or a worker stopped: undo what its killed runs left
    (namespaces, sysctls), unless a live run holds the host."""
    from ..testbed.hostconfig import recover_unless_busy

    done = recover_unless_busy()
    if done is None:
        say("another dclab run holds the host: run `dclab clean` when it ends")
    for line in done or []:
        say(f"cleaned after a stopped worker: {line}")


@click.group()
def campaign() -> None:
    """Campaigns described in campaigns/NAME.toml (the format: docs/reference/campaign-file.md)."""


@campaign.command("list")
def campaign_list() -> None:
    """The campaigns shipped in campaigns/."""
    for p in sorted(CAMPAIGNS.glob("*.toml")):
        c = cp.load(str(p))
        click.echo(f"{c.name:10} {len(cp.plan(c)):6} runs  {c.description}")


def _load(name: str, reps: int | None, shard: str | None, create: bool = True,
          groups: tuple[str, ...] = (), max_runs: int = MAX_RUNS) -> tuple[cp.Campaign, Store | None, list, list]:
    """The campaign (only the ``groups`` matched, when given), its store (None when
    planning a campaign that never ran), its runs and those not yet stored."""
    try:
        c = cp.select_groups(cp.load(name), groups)
        runs = cp.shard(cp.plan(c, reps, max_runs=max_runs), shard)  # a campaign that does not plan makes no store
        path = campaign_dir(c.name) / "store.sqlite"
        store = store_at(path, readonly=not create) if create or path.exists() else None
        done = store.keys() if store else set()
        todo = [r for r in runs if r.key not in done]
    except InputError as e:
        raise click.UsageError(str(e)) from None
    return c, store, runs, todo


@campaign.command("plan")
@click.argument("name")
@click.option("--reps", type=click.IntRange(1, 1000), help="Repetitions per configuration [default: the campaign's].")
@click.option("--shard", help="Only this machine's part: i/n.")
@click.option("--group", "groups", multiple=True, metavar="PATTERN",
              help="Only the groups whose name matches PATTERN (shell-style, e.g. 'levels-*'); repeatable.")
@click.option("--full", is_flag=True, help="List every value of every sweep.")
@click.option("--workers", type=click.IntRange(1, 10000),
              help="Also estimate the wall time on this many worker machines (`campaign run --scheduler`).")
@click.option("--measured", is_flag=True,
              help="Instead: the planner's model (uncalibrated) against the time the stored runs took, per "
                   "experiment, group and sweep.")
@max_runs_option
def campaign_plan(name: str, reps: int | None, shard: str | None, full: bool, groups: tuple[str, ...],
                  workers: int | None, measured: bool, max_runs: int) -> None:
    """Print the runs of campaign NAME and an estimate of the real time they take."""
    c, store, runs, todo = _load(name, reps, shard, create=False, groups=groups, max_runs=max_runs)
    if measured:
        print_timings(c, runs, store)
    else:
        print_plan(c, runs, todo, store, full, workers)


def print_timings(c: cp.Campaign, runs: list[cp.PlannedRun], store: Store | None) -> None:
    ts = timing.timings(runs, timing.measured(store) if store else {})
    if not ts:
        raise click.ClickException(f"campaign {c.name}: no stored run says how long it took "
                                   f"({campaign_dir(c.name) / 'store.sqlite'}); run it first")
    t = Table(title=f"campaign {c.name}: the planner's model against the stored runs' times", show_header=True)
    for col in ("experiment", "group", "sweep", "runs", "estimate", "measured", "estimate / measured"):
        t.add_column(col)
    all_ = timing.total(ts)
    for x in [*ts, all_]:
        t.add_row(x.experiment, x.group, x.sweep, str(x.runs), hours(x.estimate_s), hours(x.measured_s), f"{x.ratio:.2f}")
    Console().print(t)
    verdict = "within" if timing.within(all_.estimate_s, all_.measured_s) else "outside"
    click.echo(f"{all_.runs} of the {len(runs)} planned runs measured: estimate {hours(all_.estimate_s)}, measured "
               f"{hours(all_.measured_s)} (each run's elapsed_s summed): {verdict} {timing.TOLERANCE:.0%} "
               f"(or {timing.SLACK_S:g} s) of it")


@campaign.command("run")
@click.argument("name")
@click.option("--reps", type=click.IntRange(1, 1000), help="Repetitions per configuration [default: the campaign's].")
@click.option("--shard", help="Run only part i of n (e.g. 2/4); merge the stores with `dclab results merge`.")
@click.option("--group", "groups", multiple=True, metavar="PATTERN",
              help="Only the groups whose name matches PATTERN (shell-style, e.g. 'levels-*'); repeatable.")
@click.option("--backend", type=click.Choice(["emu", "sim"]), default="emu", show_default=True,
              help="sim: every run the simulation models, on `dcemu sim` instead (its own run key, the same store); "
                   "the others are left out, and it says how many and why.")
@click.option("--jobs", type=click.IntRange(1, 256), metavar="N",
              help="With --backend sim: simulate N runs side by side in processes of this machine "
                   "[default: its CPUs].")
@stand_in_option
@max_runs_option
@cluster_options
def campaign_run(name: str, reps: int | None, shard: str | None, groups: tuple[str, ...], scheduler: str | None,
                 local_workers: int | None, tries: int, backend: str, jobs: int | None, stand_in: str | None,
                 max_runs: int) -> None:
    """Run campaign NAME, skipping runs already stored; stop and start again at will.

    With --scheduler or --local-workers the runs go to Dask workers (one testbed each),
    longest first, and this process stores what they send back. Simulated runs
    (--backend sim) need no root and run side by side on a machine's workers."""
    where = cluster_from(scheduler, local_workers, tries)
    if jobs is not None and backend != "sim":
        raise click.UsageError("--jobs is for --backend sim: emulated runs take the host lock one at a time "
                               "(use --local-workers or --scheduler for several machines)")
    if jobs is not None and where.cluster:
        raise click.UsageError("--jobs runs here; with --scheduler or --local-workers the workers run side by side")
    if stand_in is not None and backend != "sim":
        raise click.UsageError("--stand-in is for --backend sim: an emulated run is the real stack")
    named = stand_in_from(stand_in)
    c, existing, runs, todo = _load(name, reps, shard, create=False, groups=groups, max_runs=max_runs)
    if backend == "sim":
        from ..campaign.twins import twins

        t = twins(runs, named)
        err.print(f"backend sim: {len(t.pairs):,} of the {len(runs):,} runs have a simulated twin")
        for line in t.left_out():
            err.print(line)
        sims = [sim for _, sim in t.pairs]
        done = existing.keys() if existing else set()
        runs, todo = sims, [s for s in sims if s.key not in done]
    else:
        root_or_exit()
    if not runs:
        raise click.ClickException(f"campaign {c.name}: no run to do with --backend {backend} (nothing was written)")
    preflight_all(todo)  # before the store exists: a refused campaign creates nothing
    path = campaign_dir(c.name) / "store.sqlite"
    created = not path.exists()
    store = store_at(path)  # read-only until now: planning writes nothing
    err.print(f"campaign {c.name}: {len(runs)} runs, {len(runs) - len(todo)} already stored, {len(todo)} to do "
              f"-> {store.path}")
    if backend == "sim" and not where.cluster:
        where = replace(where, jobs=sim_jobs(jobs))
    try:
        outcome = run_all(c, store, todo, where)
    except BaseException:  # e.g. the cluster refused our certificate: no empty store is left
        if created and not store.keys():
            remove_store(path)
        raise
    counts = Counter(r["ok"] for r in store.rows("campaign = ?", (c.name,)))
    click.echo(done_line(counts.get(1, 0), counts.get(0, 0), outcome.errors, store.path))
    if outcome.failures and outcome.failures == len(todo):
        sys.exit(1)


def done_line(stored_ok: int, stored_failed: int, errors: int, store: Path) -> str:
    """The last line of `campaign run`: the store's counts, and the runs of this start that
    raised (not stored, so they run again next time: said here, not only in their progress
    lines)."""
    unstored = f", {errors} could not start (not stored: run the campaign again to retry)" if errors else ""
    return f"done: {stored_ok} runs stored ok, {stored_failed} failed{unstored}; store {store}"


@click.command()
@scenario_options
@click.option("--param", "params", multiple=True, required=True,
              help=f"NAME[=VALUES]: {', '.join(SWEEPS)}; VALUES a list 2,10,50 or a range lo:hi:step "
                   "(default: the study's values).")
@click.option("--experiment", "experiments_", multiple=True, metavar="NAME",
              help=f"A registered experiment (`dclab run --help` lists them); repeat for several [default: {default_experiment().name}].")
@click.option("--config", "configs", multiple=True, default=["aioquic:reno:default"], show_default=True,
              help="STACK[:CC[:default|large]]; repeat for several (e.g. aioquic:reno:large, tcp:cubic).")
@click.option("--reps", type=click.IntRange(1, 1000), default=3, show_default=True)
@click.option("--set", "sets", multiple=True, metavar="EXPERIMENT.OPTION=VALUE",
              help="An experiment's option for every run, e.g. throughput.size=10MB or fairness.duration=60.")
@click.option("--size", help="Shorthand for --set <each experiment with a size>.size=SIZE (default 100MB for throughput).")
@click.option("--duration", type=click.FloatRange(1, 86400), help="Shorthand for --set <each experiment with a duration>.duration=S.")
@click.option("--name", help="Store name under results/ [default: sweep-PARAM].")
@click.option("--plan", "plan_only", is_flag=True, help="Only print the runs and the time estimate.")
@max_runs_option
@cluster_options
def sweep(params: tuple[str, ...], experiments_: tuple[str, ...], configs: tuple[str, ...], reps: int,
          sets: tuple[str, ...], size: str | None, duration: float | None, name: str | None, plan_only: bool,
          max_runs: int, scheduler: str | None, local_workers: int | None, tries: int, **kw: Any) -> None:
    """One factor at a time around the scenario given by the other options; resumable
    like a campaign (its store is results/NAME/store.sqlite)."""
    where = cluster_from(scheduler, local_workers, tries)
    if name is not None:
        try:
            check_name(name, "--name")
        except FileRefused as e:
            raise click.BadParameter(str(e).removeprefix("--name: "), param_hint="--name") from None
    base = scenario_from(kw)
    chosen = list(experiments_) or [default_experiment().name]
    unknown = [e for e in chosen if e not in experiments()]
    if unknown:
        raise click.BadParameter(f"{unknown[0]!r} is not one of {', '.join(experiments())}", param_hint="--experiment")
    try:
        parsed = [parse_param(p) for p in params]
        cfgs = [cp.parse_config(x) for x in configs]
    except (InputError, ValueError) as e:
        raise click.UsageError(str(e)) from None
    options = experiment_sets(sets, chosen)
    for exp_name in chosen:
        fields = experiments()[exp_name].options_model.model_fields
        if size is not None and "size" in fields:
            options.setdefault(exp_name, {})["size"] = parse_size(size)
        if duration is not None and "duration" in fields:
            options.setdefault(exp_name, {})["duration"] = duration
    c = cp.sweep_campaign(name or "sweep-" + "-".join(p for p, _ in parsed), reps, chosen, cfgs, parsed, options)
    try:
        runs = cp.plan(c, base=base, max_runs=max_runs)
    except InputError as e:
        raise click.UsageError(str(e)) from None
    path = campaign_dir(c.name) / "store.sqlite"
    existing = store_at(path, readonly=True) if path.exists() else None  # a dry run creates no store
    done = existing.keys() if existing else set()
    todo = [r for r in runs if r.key not in done]
    print_plan(c, runs, todo, existing, full=True)
    if plan_only:
        return
    root_or_exit()
    preflight_all(todo)
    store = store_at(path)
    run_all(c, store, todo, where)
    click.echo(f"store {store.path}; figures: dclab report {c.name}")


def experiment_sets(sets: tuple[str, ...], chosen: list[str]) -> dict[str, JsonObject]:
    """--set EXPERIMENT.OPTION=VALUE into {experiment: {option: value}}."""
    out: dict[str, JsonObject] = {}
    for item in sets:
        key, eq, value = item.partition("=")
        exp, dot, opt = key.partition(".")
        if not eq or not dot or exp not in experiments():
            raise click.BadParameter(f"expected EXPERIMENT.OPTION=VALUE with EXPERIMENT one of {', '.join(experiments())} "
                                     f"(got {clip(item)})", param_hint="--set")
        opt = opt.replace("-", "_")
        if opt not in experiments()[exp].options_model.model_fields:
            known = ", ".join(experiments()[exp].options_model.model_fields)
            raise click.BadParameter(f"{exp} has no option {opt!r} (options: {known})", param_hint="--set")
        out.setdefault(exp, {})[opt] = value
    return out


def register(app: click.Group) -> None:
    app.add_command(campaign)
    app.add_command(sweep)

