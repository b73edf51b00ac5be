"""Campaigns on a Dask cluster. The coordinator plans, skips what is stored and submits each
remaining run, longest first, as a task that needs the worker resource ``testbed=1`` (a
machine holds one testbed at a time: the UDP buffer sysctls are global). A worker performs
the run in a scratch directory and sends back the record and the run directory as a
gzipped tar; the coordinator alone writes the store, the directory first and then the row
in one transaction, so a run is stored exactly once and a worker that dies leaves nothing.

Failure policy on a cluster: a worker that dies mid-run has its task rescheduled by Dask on
another worker (up to ``distributed.scheduler.allowed-failures`` deaths per task); a run
that raises (it could not start there) is tried again, ``tries`` times in all, and then
stored as failed with the error of every try. A worker on which three runs in a row raise
is retired from the cluster (its machine is probably not ready: `dclab doctor` there).
Stopping the coordinator loses the runs in flight and nothing else; start it again to
resume.
"""

from __future__ import annotations

import io
import platform
import re
import shutil
import tarfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import CancelledError
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..experiments import get_experiment
from ..experiments.runner import failed_rep
from ..paths import results_dir
from ..testbed.environment import git_commit
from .plan import Campaign, PlannedRun
from .runner import CampaignError, Outcome, Progress, incoming_of, now, perform, place, record_of, result_of
from .store import RunRecord, Store, campaign_dir

TESTBED = {"testbed": 1}  # the resource a dclab worker offers and every run needs
BAD_WORKER_ERRORS = 3  # runs in a row that could not start on one worker retire it
POLL_S = 5.0  # how often the coordinator looks at the workers while waiting
# Dask's cost per run (submit, pack, send, unpack, store). Measured here: 0.19 s per smoke
# run (one local worker against the local runner), 0.5 s to pack and unpack the 39 MB
# directory of a 100 MB throughput run; see the README's "Campaigns on many machines".
CLUSTER_OVERHEAD_S = 0.5


class RunError(RuntimeError):
    """A run that raised on a worker; says where (pickled back to the coordinator)."""

    def __init__(self, worker: str, address: str, host: str, message: str):
        super().__init__(worker, address, host, message)
        self.worker, self.address, self.host, self.message = worker, address, host, message

    def __str__(self) -> str:
        return f"on {self.worker} ({self.host}): {self.message}"


@dataclass
class TaskResult:
    """What a worker sends back: the record (``run_dir`` where it ran there) and the run
    directory as a gzipped tar."""

    record: RunRecord
    archive: bytes
    address: str  # the worker's, for the count of runs in a row that raised there


def scratch_dir(worker: str) -> Path:
    """Where a worker performs runs before sending them: results/.work/WORKER/."""
    return results_dir() / ".work" / re.sub(r"[^A-Za-z0-9_.-]+", "_", worker)


def pack(directory: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=6) as tar:
        tar.add(directory, arcname=".")
    return buf.getvalue()


def unpack(archive: bytes, directory: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        tar.extractall(directory, filter="data")  # 'data' refuses absolute paths and links out


def run_task(campaign: str, run: PlannedRun, commit: str = "") -> TaskResult:
    """A Dask task: performs one run on this worker and returns it; raises RunError when
    it cannot start, or when this checkout is not at the coordinator's ``commit`` (one
    campaign's runs come from one version of dclab). Its scratch directory is removed
    either way."""
    from distributed import get_worker

    w = get_worker()
    name = str(w.name)
    here = git_commit()
    if commit and here != commit:
        raise RunError(name, w.address, platform.node(),
                       f"dclab here is at commit {here[:12] or '(not a git checkout)'}, the coordinator's at "
                       f"{commit[:12]}: check out the same commit on every machine")
    scratch = scratch_dir(name) / run.key
    try:
        _, record = perform(campaign, run, scratch)
        record.environment["worker"] = name
        return TaskResult(record, pack(scratch), w.address)
    except Exception as e:  # noqa: BLE001 - every cause goes back to the coordinator's policy
        raise RunError(name, w.address, platform.node(), f"{type(e).__name__}: {e}") from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def store_result(c: Campaign, store: Store, res: TaskResult) -> bool:
    """Stores a worker's run: its directory under results/NAME/runs/KEY (unpacked beside
    it, then renamed), then its row; False when the store has it already."""
    key = res.record.run_key
    if store.has(key):
        return False
    final = campaign_dir(c.name) / "runs" / key
    incoming = incoming_of(final)
    shutil.rmtree(incoming, ignore_errors=True)
    incoming.mkdir(parents=True)
    unpack(res.archive, incoming)
    place(incoming, final)
    store.add(replace(res.record, run_dir=str(final)))
    return True


def failed_record(c: Campaign, run: PlannedRun, errors: list[str], last: BaseException | None = None) -> RunRecord:
    """The record of a run that raised on every try: failed, with each try's error, filed
    under the machine of the last try (when it said where it was)."""
    message = "; ".join(f"try {i}: {e}" for i, e in enumerate(errors, 1))
    rec = failed_rep(get_experiment(run.experiment), run.scenario, run.options, run.rep, message)
    record = record_of(c.name, run, rec, None, now(), 0.0)
    record.environment = {"tries": errors}
    if isinstance(last, RunError):
        record.machine = last.host
        record.environment["worker"] = last.worker
    return record


def longest_first(todo: list[PlannedRun]) -> list[PlannedRun]:
    return sorted(todo, key=lambda r: -r.estimate_s)


@contextmanager
def connect(scheduler: str | None, local_workers: int | None) -> Iterator[Any]:
    """A Dask client: of the scheduler at ``scheduler``, or of a local cluster of
    ``local_workers`` worker processes with one testbed each."""
    import logging

    from distributed import Client, LocalCluster

    if scheduler:
        with Client(scheduler, timeout="30s") as client:
            yield client
        return
    with LocalCluster(n_workers=local_workers or 1, threads_per_worker=1, processes=True, resources=TESTBED,
                      dashboard_address=None, silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        yield client


def testbed_workers(client: Any) -> dict[str, str]:
    """Address -> name of the workers that offer a testbed."""
    workers = client.scheduler_info(n_workers=-1)["workers"]
    return {a: str(w.get("name", a)) for a, w in workers.items() if w.get("resources", {}).get("testbed", 0) >= 1}


class Coordinator:
    """Submits a campaign's runs to a cluster and stores what comes back (see the module's
    docstring for the policy)."""

    def __init__(self, c: Campaign, store: Store, client: Any, progress: Progress, tries: int = 3,
                 local: bool = False, on_workers: Callable[[dict[str, str]], None] | None = None,
                 say: Callable[[str], None] = print):
        self.c, self.store, self.client, self.progress = c, store, client, progress
        self.tries = tries
        self.local = local  # the coordinator owns the cluster: no worker left is an error
        self.on_workers = on_workers or (lambda _w: None)
        self.say = say
        self.out = Outcome()
        self.meta: dict[Any, tuple[PlannedRun, int, list[str]]] = {}
        self.in_a_row: dict[str, int] = {}  # per worker address: runs in a row that raised
        self.workers: dict[str, str] = {}
        self.commit = git_commit()
        self.warned = 0.0  # when the coordinator last said it has no worker

    def submit(self, run: PlannedRun, attempt: int, errors: list[str]) -> Any:
        from distributed import Future

        key = f"dclab-{self.c.name}-{run.key}-try{attempt}"
        f: Future = self.client.submit(run_task, self.c.name, run, self.commit, key=key, pure=False, resources=TESTBED,
                                       priority=round(run.estimate_s))
        self.meta[f] = (run, attempt, errors)
        return f

    def run(self, todo: list[PlannedRun]) -> Outcome:
        from distributed import wait

        pending = {self.submit(r, 1, []) for r in longest_first(todo)}
        n, i = len(todo), 0
        waited_since = self.warned = time.monotonic()
        while pending:
            try:
                done, pending = wait(pending, timeout=POLL_S, return_when="FIRST_COMPLETED")
            except TimeoutError:
                self._watch_workers(waited_since)
                continue
            waited_since = time.monotonic()
            for f in done:
                run, attempt, errors = self.meta.pop(f)
                retry = self._finish(f, run, attempt, errors, i + 1, n)
                f.release()
                if retry is not None:
                    pending.add(retry)
                else:
                    i += 1
        return self.out

    def _watch_workers(self, waited_since: float) -> None:
        workers = testbed_workers(self.client)
        if workers != self.workers:
            self.workers = workers
            self.on_workers(workers)
        if not workers:
            if self.local:
                raise CampaignError("no worker left in the local cluster (see the errors above and `dclab doctor`)")
            if time.monotonic() - max(waited_since, self.warned) > 60:  # say so once a minute
                self.warned = time.monotonic()
                self.progress.waiting()

    def _finish(self, f: Any, run: PlannedRun, attempt: int, errors: list[str], i: int, n: int) -> Any:
        """Stores a finished task, or tries it again; returns the new future of a retry."""
        if f.status == "finished":
            res: TaskResult = f.result()
            self.in_a_row.pop(res.address, None)
            store_result(self.c, self.store, res)
            self.progress.start(run, i, n)
            self.out.stored(res.record.ok)
            self.progress.done(run, result_of(res.record), None)
            return None
        try:
            exc = f.exception()
        except CancelledError:  # the scheduler lost it (restarted): another try
            exc = RuntimeError("the scheduler cancelled the task")
        errors = [*errors, str(exc)]
        if isinstance(exc, RunError):
            self._count_error(exc)
        if attempt < self.tries:
            return self.submit(run, attempt + 1, errors)
        self.store.add(failed_record(self.c, run, errors, exc))
        self.out.stored_failed += 1
        self.progress.start(run, i, n)
        self.progress.done(run, None, RuntimeError(f"stored as failed after {attempt} tries: {errors[-1]}"))
        return None

    def _count_error(self, e: RunError) -> None:
        k = self.in_a_row[e.address] = self.in_a_row.get(e.address, 0) + 1
        if k >= BAD_WORKER_ERRORS:
            self.in_a_row.pop(e.address)
            self.client.retire_workers(workers=[e.address], close_workers=True)
            self.say(f"worker {e.worker} retired: {BAD_WORKER_ERRORS} runs in a row could not start there "
                     "(run `dclab doctor` on its machine)")


def run_on_cluster(c: Campaign, store: Store, todo: list[PlannedRun], progress: Progress, scheduler: str | None,
                   local_workers: int | None, tries: int = 3,
                   on_workers: Callable[[dict[str, str]], None] | None = None,
                   say: Callable[[str], None] = print) -> Outcome:
    """Runs ``todo`` on a Dask cluster (``scheduler``'s, or a local one) into ``store``."""
    if not todo:
        return Outcome()
    with connect(scheduler, local_workers) as client:
        coord = Coordinator(c, store, client, progress, tries, local=scheduler is None, on_workers=on_workers, say=say)
        coord.workers = testbed_workers(client)
        coord.on_workers(coord.workers)
        return coord.run(todo)


def serve(scheduler: str, name: str, death_timeout: float = 300.0) -> None:
    """Runs a Dask worker offering one testbed to ``scheduler`` until the scheduler has been
    gone for ``death_timeout`` seconds or the process is interrupted. A nanny restarts the
    worker process if it dies; what a killed run left is undone by the next run here."""
    import asyncio

    from distributed import Nanny

    shutil.rmtree(scratch_dir(name), ignore_errors=True)  # runs a killed worker never sent

    async def main() -> None:
        async with Nanny(scheduler, nthreads=1, resources=TESTBED, name=name, death_timeout=death_timeout,
                         dashboard=False) as nanny:
            await nanny.finished()

    asyncio.run(main())
