"""What a simulated campaign's process pool leaves when it is interrupted
(campaign/runner.py, run_parallel): no run directory that the store does not name, wherever
the interruption falls. The process-level Ctrl-C test (test_sim.py) meets these moments only
by chance; here each is made to happen."""

from __future__ import annotations

from concurrent.futures import Future

import pytest
from conftest import wait_for

from dclab.campaign import plan as cp
from dclab.campaign import runner
from dclab.campaign.plan import PlannedRun
from dclab.campaign.store import Store, campaign_dir
from dclab.campaign.twins import twins


class Quiet:
    def start(self, run: PlannedRun, i: int, n: int) -> None: ...
    def done(self, run: PlannedRun, ok: bool | None, why: str | None) -> None: ...
    def waiting(self) -> None: ...


def simulated(n: int) -> tuple[cp.Campaign, list[PlannedRun]]:
    """The smoke campaign and the first ``n`` of its simulated twins (TCP, about 0.2 s each)."""
    c = cp.load("smoke")
    return c, [sim for _, sim in twins(cp.plan(c)).pairs][:n]


def left(c: cp.Campaign) -> set[str]:
    runs = campaign_dir(c.name) / "runs"
    return {p.name for p in runs.iterdir()} if runs.exists() else set()


def test_a_ctrl_c_inside_submit_leaves_no_directory_of_the_run_it_handed_out(tmp_path, monkeypatch):
    """The interruption lands after the pool took the third run but before submit() returned
    it: the pool still runs it to its end (no cancel can stop a run already passed to a
    worker), and its directory must go with the others'."""
    monkeypatch.setenv("DCLAB_RESULTS", str(tmp_path))
    c, todo = simulated(4)
    store = Store(campaign_dir(c.name) / "store.sqlite")
    submit = runner.ProcessPoolExecutor.submit
    handed: list[Future[object]] = []

    def interrupted_submit(self, fn, /, *args, **kwargs):
        f = submit(self, fn, *args, **kwargs)
        handed.append(f)
        if len(handed) == 3:
            wait_for(lambda: f.running() or f.done(), 60, "the third run passed to a worker")
            raise KeyboardInterrupt
        return f

    monkeypatch.setattr(runner.ProcessPoolExecutor, "submit", interrupted_submit)
    with pytest.raises(KeyboardInterrupt):
        runner.run_parallel(c, store, todo, Quiet(), 2)
    assert handed[2].done() and not handed[2].cancelled()  # it ran: the moment the fix is for
    assert left(c) == set() == store.keys()


def test_a_ctrl_c_between_placing_a_run_and_storing_it_removes_the_placed_directory(tmp_path, monkeypatch):
    """``place`` moves a finished run into runs/KEY before its row is stored; interrupted
    between the two, the directory would be one the store does not name."""
    monkeypatch.setenv("DCLAB_RESULTS", str(tmp_path))
    c, todo = simulated(2)
    store = Store(campaign_dir(c.name) / "store.sqlite")

    def interrupted_add(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(store, "add", interrupted_add)
    with pytest.raises(KeyboardInterrupt):
        runner.run_parallel(c, store, todo, Quiet(), 2)
    assert left(c) == set() == store.keys()


def test_runs_that_finish_are_placed_and_stored(tmp_path, monkeypatch):
    monkeypatch.setenv("DCLAB_RESULTS", str(tmp_path))
    c, todo = simulated(3)
    store = Store(campaign_dir(c.name) / "store.sqlite")
    out = runner.run_parallel(c, store, todo, Quiet(), 2)
    assert out.stored_ok == 3 and left(c) == store.keys() == {r.key for r in todo}
