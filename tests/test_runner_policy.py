"""The campaign runner's failure policy (dclab/campaign/runner.py): a run that raises is not
stored and is counted, and the campaign goes on; three in a row stop it; the CLI's last line
says how many could not start. No run is performed: ``execute`` is replaced."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from dclab.campaign import plan as cp
from dclab.campaign import runner
from dclab.cli.campaign import done_line


class Recorder:
    def __init__(self) -> None:
        self.finished: list[tuple[str, bool | None, str | None]] = []

    def start(self, run: cp.PlannedRun, i: int, n: int) -> None:
        pass

    def done(self, run: cp.PlannedRun, ok: bool | None, why: str | None) -> None:
        self.finished.append((run.key, ok, why))

    def waiting(self) -> None:
        pass


def run_with_failures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, raising: set[int], n: int = 6):
    monkeypatch.setenv("DCLAB_RESULTS", str(tmp_path))
    c = cp.load("smoke")
    todo = cp.plan(c)[:n]
    stored: list[str] = []

    def execute(c, run, store, on_wait=None, session=None):
        i = todo.index(run)
        if i in raising:
            raise RuntimeError(f"run {i} broke")
        stored.append(run.key)
        return SimpleNamespace(ok=i % 2 == 0, error=None if i % 2 == 0 else "slow")

    monkeypatch.setattr(runner, "execute", execute)
    progress = Recorder()
    return todo, stored, progress, lambda: runner.run_campaign(c, None, todo, progress)  # type: ignore[arg-type]


def test_a_run_that_raises_is_counted_and_not_stored_and_the_campaign_goes_on(tmp_path, monkeypatch):
    todo, stored, progress, go = run_with_failures(tmp_path, monkeypatch, raising={1, 3, 4})
    out = go()
    assert stored == [todo[i].key for i in (0, 2, 5)]
    assert (out.stored_ok, out.stored_failed, out.errors, out.failures) == (2, 1, 3, 4)
    assert [(ok, why) for _, ok, why in progress.finished] == [
        (True, None), (None, "run 1 broke"), (True, None), (None, "run 3 broke"), (None, "run 4 broke"), (False, "slow")]
    line = done_line(out.stored_ok, out.stored_failed, out.errors, Path("/r/store.sqlite"))
    assert line == ("done: 2 runs stored ok, 1 failed, 3 could not start (not stored: run the campaign again to "
                    "retry); store /r/store.sqlite")
    assert done_line(4, 0, 0, Path("s")) == "done: 4 runs stored ok, 0 failed; store s"


def test_three_runs_in_a_row_that_raise_stop_the_campaign(tmp_path, monkeypatch):
    todo, stored, progress, go = run_with_failures(tmp_path, monkeypatch, raising={1, 2, 3})
    with pytest.raises(runner.CampaignError, match="3 runs in a row could not start"):
        go()
    assert stored == [todo[0].key] and len(progress.finished) == 4, "nothing after the third"
