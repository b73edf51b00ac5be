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

Trust: Dask runs the pickled code the scheduler sends (on a worker, as root) and unpickles
what workers send back, so a cluster is only as closed as who can connect to it: mutual
TLS with the lab's certificates (tls.py), or an explicit ``--insecure``; a local cluster
gets throwaway certificates and listens on 127.0.0.1 only. Beyond that the coordinator
trusts a worker's result as little as it can: the run is stored under the key it planned
for that task (a record of another run is refused), and the directory's archive is
unpacked into that run's place only, holding regular files and directories, nothing
outside it, and at most ``UNPACKED_LIMIT`` bytes. A refused result counts as a try that
raised on that worker: tried again (``tries`` in all), then stored as failed with why.
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
from ..experiments.reps import failed_rep
from ..files import FileRefused, check_name, slug
from ..paths import results_dir
from ..testbed.environment import git_commit
from .plan import Campaign, PlannedRun
from .runner import CampaignError, Outcome, Progress, incoming_of, now, perform, place, record_of
from .store import RunRecord, Store, campaign_dir

TESTBED = {"testbed": 1}  # the resource a dclab worker offers and every run needs
BAD_WORKER_ERRORS = 3  # runs in a row that could not start on one worker retire it
POLL_S = 5.0  # how often the coordinator looks at the workers while waiting
# Dask's cost per run (submit, pack, send, unpack, store). Measured here: 0.19 s per smoke
# run (one local worker against the local runner), 0.5 s to pack and unpack the 39 MB
# directory of a 100 MB throughput run; see docs/explanation/cluster.md.
CLUSTER_OVERHEAD_S = 0.5
# What a worker's archive may unpack to on the coordinator (a 100 MB throughput run's
# directory is 39 MB): far above any run, far below a disk.
UNPACKED_LIMIT = 16 * 1024**3
MEMBERS_LIMIT = 100_000
TEXT_LIMIT = 4000  # characters kept of a string a worker sends (an error, a name)


class RunError(RuntimeError):
    """A run that raised on a worker; says where (pickled back to the coordinator)."""

    def __init__(self, worker: str, address: str, host: str, message: str):
        super().__init__(worker, address, host, message)
        self.worker, self.address, self.host, self.message = worker, address, host, message

    def __str__(self) -> str:
        return f"on {self.worker} ({self.host}): {self.message}"


class ResultRefused(RuntimeError):
    """A worker's result the coordinator does not store (not of the planned run, or an
    archive that would write outside the run's directory)."""


class ArchiveRefused(tarfile.TarError):
    """A run directory's archive with a member that is no regular file or directory, or
    more than the limits."""


def printable(text: object, limit: int = TEXT_LIMIT) -> str:
    """A string from another machine, fit for a terminal and the store: control
    characters (escape sequences) become '?', cut to ``limit`` characters."""
    s = re.sub(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", "?", str(text))
    return s if len(s) <= limit else f"{s[:limit]}... ({len(s)} characters)"


@dataclass
class TaskResult:
    """What a worker sends back: the record (``run_dir`` where it ran there) and the run
    directory as a gzipped tar."""

    record: RunRecord
    archive: bytes
    address: str  # the worker's, for the count of runs in a row that raised there


def scratch_dir(worker: str) -> Path:
    """Where a worker performs runs before sending them: results/.work/WORKER/ (the name
    as a file name: never a path, never '..')."""
    return results_dir() / ".work" / slug(worker)


def _files_only(member: tarfile.TarInfo) -> tarfile.TarInfo | None:
    return member if member.isreg() or member.isdir() else None


def pack(directory: Path) -> bytes:
    """The run directory as a gzipped tar of its regular files and directories (a FIFO or
    symlink a run left is not sent: the coordinator would refuse the archive)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=6) as tar:
        tar.add(directory, arcname=".", filter=_files_only)
    return buf.getvalue()


def unpack(archive: bytes, directory: Path, limit: int = UNPACKED_LIMIT) -> None:
    """Unpacks a worker's archive into ``directory`` and nowhere else: tarfile's 'data'
    filter (nothing out of ``directory``, no ownership or set-id bits) and, stricter, no
    absolute name or '..' at all, only regular files and directories (no link, device or
    FIFO of any kind), at most ``limit`` bytes in ``MEMBERS_LIMIT`` members. Raises
    tarfile.TarError (ArchiveRefused or one of tarfile's FilterErrors), having perhaps
    unpacked part of it."""
    total = count = 0

    def check(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
        nonlocal total, count
        if member.name.startswith("/") or ".." in member.name.split("/"):  # 'data' would strip or refuse them
            raise ArchiveRefused(f"{printable(member.name, 200)!r} is an absolute path or has '..': a run directory's "
                                 "archive names its members from the directory down")
        if not (member.isreg() or member.isdir()):
            raise ArchiveRefused(f"{printable(member.name, 200)!r} is a link, device or FIFO: a run directory sends "
                                 "only regular files and directories")
        total += member.size
        count += 1
        if total > limit or count > MEMBERS_LIMIT:
            raise ArchiveRefused(f"the archive unpacks to more than {limit} bytes or {MEMBERS_LIMIT} files")
        return tarfile.data_filter(member, dest)

    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        tar.extractall(directory, filter=check)


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
    try:
        scratch = scratch_dir(name) / check_name(run.key, "run key")  # it names a directory removed here
    except FileRefused as e:
        raise RunError(name, w.address, platform.node(), str(e)) from None
    try:
        _, record = perform(campaign, run, scratch)
        record.environment["worker"] = name
        return TaskResult(record, pack(scratch), w.address)
    except Exception as e:  # noqa: BLE001 - every cause goes back to the coordinator's policy
        raise RunError(name, w.address, platform.node(), f"{type(e).__name__}: {e}") from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def check_result(c: Campaign, run: PlannedRun, res: object) -> TaskResult:
    """``res`` if it is a result of the planned ``run``: a TaskResult whose record is of
    that run (key, campaign, experiment, repetition) with an archive; else ResultRefused.
    The key a worker sends is compared, never used."""
    if not isinstance(res, TaskResult) or not isinstance(res.record, RunRecord) or not isinstance(res.archive, bytes):
        raise ResultRefused(f"not a run's result: {printable(type(res).__name__, 200)}")
    rec = res.record
    for field, planned in (("run_key", run.key), ("campaign", c.name), ("experiment", run.experiment),
                           ("rep", run.rep)):
        got = getattr(rec, field, None)
        if got != planned:
            raise ResultRefused(f"its record's {field} is {printable(repr(got), 200)}, the planned run's "
                                f"{planned!r}: not stored")
    error = None if rec.error is None else printable(rec.error)  # shown on the coordinator's terminal
    return replace(res, record=replace(rec, error=error, machine=printable(rec.machine, 200)))


def store_result(c: Campaign, store: Store, run: PlannedRun, res: TaskResult) -> bool:
    """Stores a worker's result of the planned ``run``: its directory under
    results/NAME/runs/KEY (KEY the planned run's; unpacked beside it, then renamed), then
    its row; False when the store has it already. ResultRefused (nothing stored, nothing
    left) for a result of another run or an archive unpack() refuses."""
    res = check_result(c, run, res)
    key = check_name(run.key, "run key")
    if store.has(key):
        return False
    final = campaign_dir(c.name) / "runs" / key
    incoming = incoming_of(final)
    shutil.rmtree(incoming, ignore_errors=True)
    incoming.mkdir(parents=True)
    try:
        unpack(res.archive, incoming)
    except (tarfile.TarError, OSError, EOFError) as e:  # EOFError: a cut gzip stream
        shutil.rmtree(incoming, ignore_errors=True)
        raise ResultRefused(f"its archive was refused: {printable(e, 400)}") from None
    place(incoming, final)
    store.add(replace(res.record, run_dir=str(final)))
    return True


def failed_record(c: Campaign, run: PlannedRun, errors: list[str], last: BaseException | None = None) -> RunRecord:
    """The record of a run that raised on every try: failed, with each try's error, filed
    under the machine of the last try (when it said where it was)."""
    message = "; ".join(f"try {i}: {e}" for i, e in enumerate(errors, 1))
    # a worker runs each repetition on a fresh testbed (perform without a session)
    rec = failed_rep(get_experiment(run.experiment), run.scenario, run.options, run.rep, message, shared=False)
    record = record_of(c.name, run, rec, None, now(), 0.0)
    record.environment = {"tries": errors}
    if isinstance(last, RunError):  # the worker's words: cleaned
        record.machine = printable(last.host, 200)
        record.environment["worker"] = slug(str(last.worker), 200)
    return record


def longest_first(todo: list[PlannedRun]) -> list[PlannedRun]:
    return sorted(todo, key=lambda r: -r.estimate_s)


@contextmanager
def connect(scheduler: str | None, local_workers: int | None, security: Any = None) -> Iterator[Any]:
    """A Dask client: of the scheduler at ``scheduler`` (with ``security``, Dask's Security:
    the coordinator's TLS; None only for an --insecure tcp:// scheduler), or of a local
    cluster of ``local_workers`` worker processes with one testbed each, on 127.0.0.1
    only and with TLS under a throwaway certificate (a local user who can reach the port
    cannot submit code to workers that run as root)."""
    import logging

    from distributed import Client, LocalCluster

    from .tls import local_security

    if scheduler:
        with Client(scheduler, timeout="30s", security=security) as client:
            yield client
        return
    sec = local_security()
    with LocalCluster(n_workers=local_workers or 1, threads_per_worker=1, processes=True, resources=TESTBED,
                      host="127.0.0.1", protocol="tls://", security=sec, dashboard_address=None,
                      silence_logs=logging.ERROR) as cluster, Client(cluster, security=sec) as client:
        yield client


def testbed_workers(client: Any) -> dict[str, str]:
    """Address -> name of the workers that offer a testbed (names as file names: they are
    shown on this terminal and stored)."""
    workers = client.scheduler_info(n_workers=-1)["workers"]
    return {a: slug(str(w.get("name", a)), 200) for a, w in workers.items()
            if w.get("resources", {}).get("testbed", 0) >= 1}


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
        f: Future[TaskResult] = self.client.submit(run_task, self.c.name, run, self.commit, key=key, pure=False, resources=TESTBED,
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
        exc: BaseException
        if f.status == "finished":
            raw = f.result()
            try:
                res = check_result(self.c, run, raw)
                store_result(self.c, self.store, run, res)
            except ResultRefused as e:
                exc = self._refused(f, e, getattr(getattr(raw, "record", None), "machine", ""))
            else:
                self.in_a_row.pop(res.address, None)
                self.progress.start(run, i, n)
                self.out.stored(res.record.ok)
                self.progress.done(run, res.record.ok, res.record.error)
                return None
        else:
            try:
                exc = f.exception()
            except CancelledError:  # the scheduler lost it (restarted): another try
                exc = RuntimeError("the scheduler cancelled the task")
        errors = [*errors, printable(exc)]
        if isinstance(exc, RunError):
            self._count_error(exc)
        if attempt < self.tries:
            return self.submit(run, attempt + 1, errors)
        self.store.add(failed_record(self.c, run, errors, exc))
        self.out.stored_failed += 1
        self.progress.start(run, i, n)
        self.progress.done(run, None, f"stored as failed after {attempt} tries: {errors[-1]}")
        return None

    def _refused(self, f: Any, e: ResultRefused, host: object) -> RunError:
        """A refused result as a try that raised on the worker that holds it, by the
        scheduler's word (not the result's, which is what was refused)."""
        try:
            address = next(iter(self.client.who_has([f]).get(f.key, ())), "")
        except Exception:  # noqa: BLE001 - the count of errors in a row is best effort
            address = ""
        name = self.workers.get(address) or address or "a worker"
        return RunError(name, address, printable(host, 200), f"its result was refused: {e}")

    def _count_error(self, e: RunError) -> None:
        if not e.address:
            return
        k = self.in_a_row[e.address] = self.in_a_row.get(e.address, 0) + 1
        if k >= BAD_WORKER_ERRORS:
            self.in_a_row.pop(e.address)
            self.client.retire_workers(workers=[e.address], close_workers=True)
            self.say(f"worker {slug(str(e.worker), 200)} retired: {BAD_WORKER_ERRORS} runs in a row could not start "
                     "there or sent a result that was refused (run `dclab doctor` on its machine)")


def run_on_cluster(c: Campaign, store: Store, todo: list[PlannedRun], progress: Progress, scheduler: str | None,
                   local_workers: int | None, tries: int = 3,
                   on_workers: Callable[[dict[str, str]], None] | None = None,
                   say: Callable[[str], None] = print, security: Any = None) -> Outcome:
    """Runs ``todo`` on a Dask cluster (``scheduler``'s, with ``security``, or a local one)
    into ``store``."""
    if not todo:
        return Outcome()
    with connect(scheduler, local_workers, security) as client:
        coord = Coordinator(c, store, client, progress, tries, local=scheduler is None, on_workers=on_workers, say=say)
        coord.workers = testbed_workers(client)
        coord.on_workers(coord.workers)
        return coord.run(todo)


def serve(scheduler: str, name: str, death_timeout: float = 300.0, security: Any = None) -> None:
    """Runs a Dask worker offering one testbed to ``scheduler`` until the scheduler has been
    gone for ``death_timeout`` seconds or the process is interrupted; ``security`` (Dask's
    Security, the worker's TLS) for its connections and the nanny's and worker's own
    listening ports, None only for an --insecure tcp:// scheduler. A nanny restarts the
    worker process if it dies; what a killed run left is undone by the next run here."""
    import asyncio

    from distributed import Nanny
    from distributed.comm import get_address_host, unparse_host_port
    from distributed.utils import get_ip

    shutil.rmtree(scratch_dir(name), ignore_errors=True)  # runs a killed worker never sent
    try:  # the worker listens where the nanny does, on the address toward the scheduler, not on every interface
        host: str | None = unparse_host_port(get_ip(get_address_host(scheduler)))
    except (OSError, ValueError):
        host = None

    async def main() -> None:
        async with Nanny(scheduler, nthreads=1, resources=TESTBED, name=name, death_timeout=death_timeout, host=host,
                         dashboard=False, dashboard_address="127.0.0.1:0", security=security) as nanny:
            await nanny.finished()

    asyncio.run(main())
