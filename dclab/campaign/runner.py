"""The one campaign runner: perform a planned run in a fresh directory, store it once it
has finished, and go through a list of runs with the failure policy. The CLI calls it
with a progress display; a cluster's worker calls `perform` and the coordinator stores
(`cluster.py`).

Failure policy: a run that fails (its result says not ok) is stored as failed and the
campaign goes on; a run that cannot even start (an exception) is not stored, so it runs
again next time; three such runs in a row stop the campaign (the machine is probably
not ready: see `dclab doctor`). An interruption (Ctrl-C, SIGTERM) stores nothing of the
run it interrupted.

Runs that take no host lock (simulated ones) can go side by side in processes of this
machine (`run_parallel`); this process stays the store's only writer.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import platform
import shutil
import signal
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from ..experiments import get_experiment
from ..experiments.base import RepResult, RunChoices
from ..experiments.reps import Session, run_rep
from ..testbed import NotReady
from .plan import Campaign, PlannedRun, plan, shard
from .store import RunRecord, Store, campaign_dir

MAX_CONSECUTIVE_ERRORS = 3
PR_SET_PDEATHSIG = 1  # prctl(2), linux/prctl.h


class CampaignError(RuntimeError):
    pass


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S")


def perform(campaign: str, run: PlannedRun, run_dir: Path, on_wait: Callable[[], None] | None = None,
            session: Session | None = None) -> tuple[RepResult, RunRecord]:
    """Runs one planned run in a fresh ``run_dir`` and returns its result and the record to
    store (whose ``run_dir`` is where it ran); stores nothing. A ``one_testbed``
    experiment's run uses the session's testbed when it can."""
    exp = get_experiment(run.experiment)
    if run_dir.exists():
        shutil.rmtree(run_dir)  # a run that was interrupted: start it again
    run_dir.mkdir(parents=True)
    started = now()
    t0 = time.monotonic()
    # A simulated run takes about a second; its figure would take as long again (`dclab plot --run` draws it).
    draw = RunChoices.of(run.options).backend != "sim"
    rec = run_rep(exp, run.scenario, run.options, run_dir, run.rep, on_wait, session, draw=draw)
    return rec, record_of(campaign, run, rec, run_dir, started, time.monotonic() - t0)


def record_of(campaign: str, run: PlannedRun, rec: RepResult, run_dir: Path | None, started: str,
              elapsed: float) -> RunRecord:
    """The store's record of a planned run's result (``run_dir`` None: it left no data)."""
    return RunRecord(
        run_key=run.key, campaign=campaign, experiment=run.experiment, sweep=run.sweep, param=run.sweep,
        value=f"{run.value:g}", value_num=run.value, stack=rec.stack, cc=rec.cc, host_config=rec.host_config,
        rep=run.rep, seed=rec.seed, ok=rec.ok, error=rec.error, scenario=run.scenario.model_dump(mode="json"),
        options=run.options.model_dump(mode="json"),
        metrics={**rec.all_metrics(), "elapsed_s": elapsed, "estimate_s": run.estimate_s},
        flows=[f.stored() for f in rec.flows],
        environment=rec.environment, run_dir=str(run_dir or ""), machine=platform.node(), started_at=started,
        finished_at=now(),
    )


def execute(c: Campaign, run: PlannedRun, store: Store, on_wait: Callable[[], None] | None = None,
            runs_dir: Path | None = None, session: Session | None = None) -> RepResult:
    """``perform`` in the campaign's run directory, then store the run."""
    rec, record = perform(c.name, run, (runs_dir or campaign_dir(c.name) / "runs") / run.key, on_wait, session)
    store.add(record)
    return rec


def calibration(store: Store) -> dict[str, float]:
    """Actual / estimated run time per experiment, from runs already stored."""
    ratios: dict[str, list[float]] = {}
    for r in store.rows():
        m = r["metrics"]
        if m.get("elapsed_s") and m.get("estimate_s"):
            ratios.setdefault(r["experiment"], []).append(m["elapsed_s"] / m["estimate_s"])
    return {e: sum(v) / len(v) for e, v in ratios.items()}


def pending(c: Campaign, store: Store, reps: int | None, shard_spec: str | None) -> tuple[list[PlannedRun], list[PlannedRun]]:
    """The campaign's runs (this shard's) and those of them not yet in the store."""
    runs = shard(plan(c, reps), shard_spec)
    done = store.keys()
    return runs, [r for r in runs if r.key not in done]


class Progress(Protocol):
    """What the runner reports; the CLI draws it."""

    def start(self, run: PlannedRun, i: int, n: int) -> None: ...
    def done(self, run: PlannedRun, ok: bool | None, why: str | None) -> None:
        """``run`` finished: stored, ``ok`` or failed (``why``: its error), or not stored
        (``ok`` None: it could not run, ``why``)."""
    def waiting(self) -> None: ...


@dataclass
class Outcome:
    stored_ok: int = 0
    stored_failed: int = 0
    errors: int = 0  # runs that could not start (not stored)

    @property
    def failures(self) -> int:
        return self.stored_failed + self.errors

    def stored(self, ok: bool) -> None:
        if ok:
            self.stored_ok += 1
        else:
            self.stored_failed += 1

    def could_not_start(self, consecutive: int, e: BaseException) -> int:
        """Counts a run that raised; the new count of such runs in a row, or CampaignError
        when there are MAX_CONSECUTIVE_ERRORS."""
        self.errors += 1
        if consecutive + 1 >= MAX_CONSECUTIVE_ERRORS:
            raise CampaignError(f"{MAX_CONSECUTIVE_ERRORS} runs in a row could not start; stopping "
                                "(see `dclab doctor`)") from e
        return consecutive + 1


def run_campaign(c: Campaign, store: Store, todo: list[PlannedRun], progress: Progress) -> Outcome:
    """Runs ``todo`` in order with the failure policy above; KeyboardInterrupt passes
    through (the interrupted run is not stored)."""
    out = Outcome()
    consecutive = 0
    with Session(campaign_dir(c.name) / "testbeds", progress.waiting) as session:
        for i, run in enumerate(todo, 1):
            consecutive = _one(c, store, run, i, len(todo), progress, out, consecutive, session)
    return out


def _one(c: Campaign, store: Store, run: PlannedRun, i: int, n: int, progress: Progress, out: Outcome,
         consecutive: int, session: Session) -> int:
    """One run of ``run_campaign``; returns the count of runs in a row that could not start."""
    progress.start(run, i, n)
    try:
        rec = execute(c, run, store, on_wait=progress.waiting, session=session)
    except KeyboardInterrupt:
        raise
    except NotReady as e:  # no run can start on this machine
        raise CampaignError(str(e)) from None
    except Exception as e:  # noqa: BLE001 - one broken run must not end an 80-hour campaign
        progress.done(run, None, str(e))
        return out.could_not_start(consecutive, e)
    out.stored(rec.ok)
    progress.done(run, rec.ok, rec.error)
    return 0


def incoming_of(final: Path) -> Path:
    """Where a run's directory is made before it is moved to ``final`` (runs/.KEY.incoming)."""
    return final.with_name(f".{final.name}.incoming")


def place(src: Path, final: Path) -> None:
    """Moves a finished run's directory to its final place (a stale one there, from a try
    that was never stored, is replaced)."""
    if final.exists():
        shutil.rmtree(final)
    os.replace(src, final)


def _perform_apart(campaign: str, run: PlannedRun, run_dir: Path) -> RunRecord:
    """``perform`` in a pool's process; the record goes back to the one that stores."""
    return perform(campaign, run, run_dir)[1]


def run_parallel(c: Campaign, store: Store, todo: list[PlannedRun], progress: Progress, jobs: int) -> Outcome:
    """``run_campaign`` for runs that take no host lock, ``jobs`` at a time in processes of
    this machine. Each performs in runs/.KEY.incoming; this process renames it into place
    and stores the row, with the same failure policy. KeyboardInterrupt passes through
    (the runs in flight are not stored)."""
    runs_dir = campaign_dir(c.name) / "runs"
    out = Outcome()
    consecutive = 0
    pending = iter(enumerate(todo, 1))
    flying: dict[Future[RunRecord], tuple[int, PlannedRun]] = {}
    # submitted and not yet moved into place: in flight, or being stored when a Ctrl-C came
    unplaced: set[str] = set()
    try:
        # spawn: a fresh interpreter per process, not a fork of one holding the progress bar's thread
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"), initializer=die_with,
                                 initargs=(os.getpid(),)) as pool:
            try:
                while True:
                    while len(flying) < 2 * jobs and (item := next(pending, None)) is not None:
                        i, run = item
                        # Counted before it is submitted: a Ctrl-C inside submit() can come after
                        # the pool took the run, which then runs to its end in a worker.
                        unplaced.add(run.key)
                        flying[pool.submit(_perform_apart, c.name, run, incoming_of(runs_dir / run.key))] = (i, run)
                    if not flying:
                        return out
                    finished, _ = wait(flying, return_when=FIRST_COMPLETED)
                    for f in finished:
                        i, run = flying.pop(f)
                        consecutive = _store_apart(store, f, run, i, len(todo), runs_dir, progress, out, consecutive)
                        unplaced.discard(run.key)
            except BaseException:
                # Waits for the runs in flight and drops those not yet handed out; only then are
                # their directories left alone. A Ctrl-C reaches the pool's processes too, but one
                # whose run it ended may still take a run the pool had already passed it and run
                # that to its end (a fresh clone's CI once found one left in runs/.KEY.incoming).
                pool.shutdown(wait=True, cancel_futures=True)
                raise
    finally:
        # The pool's processes have ended: what the runs in flight left is not a result,
        # nor is a finished run's that the interruption caught before it was moved into place,
        # or after that but before its row was stored (``place`` comes first, so that a row
        # never names a directory that is not there).
        for key in unplaced:
            shutil.rmtree(incoming_of(runs_dir / key), ignore_errors=True)
        if placed := [k for k in unplaced if (runs_dir / k).exists()]:
            stored = store.keys()
            for key in placed:
                if key not in stored:
                    shutil.rmtree(runs_dir / key, ignore_errors=True)


def die_with(parent: int) -> None:
    """A pool process's first act: SIGTERM when the process that made it dies, even by
    SIGKILL (the kernel's parent-death signal), so that no pool process outlives a killed
    campaign (nor starts another run), and its ``dcemu sim`` (started with one too) ends
    with it; the pool's resource tracker then ends when they do. A parent already gone
    before the signal was armed ends it at once."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")
    if os.getppid() != parent:
        os._exit(1)


def _store_apart(store: Store, f: Future[RunRecord], run: PlannedRun, i: int, n: int, runs_dir: Path,
                 progress: Progress, out: Outcome, consecutive: int) -> int:
    """Stores one run of ``run_parallel``; returns the count of runs in a row that could not start."""
    progress.start(run, i, n)
    final = runs_dir / run.key
    e = f.exception()
    if e is not None:
        shutil.rmtree(incoming_of(final), ignore_errors=True)
        progress.done(run, None, str(e))
        return out.could_not_start(consecutive, e)
    record = f.result()
    place(incoming_of(final), final)
    store.add(replace(record, run_dir=str(final)))
    out.stored(record.ok)
    progress.done(run, record.ok, record.error)
    return 0


