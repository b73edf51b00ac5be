"""Where a campaign's runs go, chosen here from a :class:`Where`: one at a time on this
machine (``runner.run_campaign``), ``jobs`` at a time in processes of this machine for
runs that take no host lock (``runner.run_parallel``, simulated runs), or on a Dask
cluster (``cluster.run_on_cluster``). Each is a :class:`Runner`; the CLI only draws the
progress and says what an interruption left."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from .cluster import run_on_cluster
from .plan import Campaign, PlannedRun
from .runner import Outcome, Progress, run_campaign, run_parallel
from .store import Store

if TYPE_CHECKING:
    from distributed import Security


@dataclass(frozen=True)
class Where:
    """Where the runs go: here (the default), here ``jobs`` at a time, or on a cluster
    (``scheduler``'s workers, reached with ``security``, Dask's TLS, None only for an
    --insecure tcp:// scheduler; or ``local_workers`` Dask workers on this machine),
    where a run that cannot start is tried ``tries`` times."""

    jobs: int = 1
    scheduler: str | None = None
    local_workers: int | None = None
    tries: int = 3
    security: Security | None = None

    @property
    def cluster(self) -> bool:
        return bool(self.scheduler or self.local_workers)


class Runner(Protocol):
    """Runs ``todo`` into ``store`` under ``progress``; KeyboardInterrupt passes through
    with nothing of the interrupted runs stored."""

    # more than one run in flight at once (an interruption then stops several)
    many_in_flight: bool

    def run(self, c: Campaign, store: Store, todo: list[PlannedRun], progress: Progress) -> Outcome: ...


@dataclass(frozen=True)
class LocalRunner:
    many_in_flight = False

    def run(self, c: Campaign, store: Store, todo: list[PlannedRun], progress: Progress) -> Outcome:
        return run_campaign(c, store, todo, progress)


@dataclass(frozen=True)
class PoolRunner:
    jobs: int
    many_in_flight = True

    def run(self, c: Campaign, store: Store, todo: list[PlannedRun], progress: Progress) -> Outcome:
        return run_parallel(c, store, todo, progress, self.jobs)


@dataclass(frozen=True)
class DaskRunner:
    where: Where
    say: Callable[[str], None] = print
    on_workers: Callable[[dict[str, str]], None] | None = None
    many_in_flight = True

    def run(self, c: Campaign, store: Store, todo: list[PlannedRun], progress: Progress) -> Outcome:
        w = self.where
        return run_on_cluster(c, store, todo, progress, w.scheduler, w.local_workers, w.tries,
                              on_workers=self.on_workers, say=self.say, security=w.security)  # fmt: skip


def runner_for(where: Where, say: Callable[[str], None] = print,
               on_workers: Callable[[dict[str, str]], None] | None = None) -> Runner:  # fmt: skip
    """The runner for ``where`` (``say`` and ``on_workers``: what a cluster reports)."""
    if where.cluster:
        return DaskRunner(where, say, on_workers)
    if where.jobs > 1:
        return PoolRunner(where.jobs)
    return LocalRunner()


__all__ = ["DaskRunner", "LocalRunner", "PoolRunner", "Runner", "Where", "runner_for"]
