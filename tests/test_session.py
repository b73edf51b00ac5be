"""Repetitions on one testbed (experiments/reps.py, Session): an experiment with
``one_testbed`` keeps its testbed across repetitions, a dead part costs one repetition
and the next one gets a fresh testbed, and nothing is left on the host afterwards."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
from typing import Any

import example_experiment
import pytest

from dclab.experiments.base import RepResult
from dclab.experiments.reps import run_reps
from dclab.scenario import Scenario, build
from dclab.testbed import Testbed

pytestmark = pytest.mark.root


class SharedShort(example_experiment.ShortDownloads):
    name = "short-shared"
    one_testbed = True
    kill_dcemu_in_rep: int | None = None

    def measure(self, bed: Testbed, scenario: Scenario, plan: Any, options: Any, result: RepResult) -> RepResult:
        if result.rep == self.kill_dcemu_in_rep:
            assert bed.emulator and bed.emulator.proc
            bed.emulator.proc.send_signal(signal.SIGKILL)
            bed.emulator.proc.wait()
        r = bed.run_clients(timeout_s=60)["client"]
        result.ok, result.error = r.ok, r.error
        result.metrics = {"completion_s": r.completion_s}
        result.details = {"dcemu_pid": bed.emulator.proc.pid if bed.emulator and bed.emulator.proc else None,
                          "rep_dir": str(bed.state["rep_dir"]), "tag": bed.ns.tag}
        (bed.state["rep_dir"] / "mine.txt").write_text("written by measure")
        return result


def _netns() -> str:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False).stdout


def test_repetitions_share_one_testbed_and_record_its_seed(tmp_path):
    exp = SharedShort()
    options = exp.options(size=20_000, objects=2)
    s = build(Scenario(), seed=5)
    (tmp_path / "run").mkdir()
    summary = run_reps(exp, s, options, 3, tmp_path / "run")
    assert summary.failed == 0
    reps = [json.loads((tmp_path / "run" / f"rep-{i:02d}" / "result.json").read_text()) for i in (1, 2, 3)]
    assert {r["environment"]["testbed"] for r in reps} == {str(tmp_path / "run" / "testbed-1")}
    assert len({r["details"]["dcemu_pid"] for r in reps}) == 1, "one dcemu served every repetition"
    assert [r["seed"] for r in reps] == [5, 5, 5], "a shared testbed has one seed"
    assert all((tmp_path / "run" / f"rep-{i:02d}" / "mine.txt").is_file() for i in (1, 2, 3))
    assert reps[0]["details"]["tag"] not in _netns(), "the session's namespaces are gone"


def test_a_dead_part_costs_one_repetition_and_the_next_gets_a_fresh_testbed(tmp_path):
    exp = SharedShort()
    exp.kill_dcemu_in_rep = 2
    options = exp.options(size=20_000, objects=1)
    (tmp_path / "run").mkdir()
    summary = run_reps(exp, build(Scenario()), options, 3, tmp_path / "run", on_error="continue")
    reps = [json.loads((tmp_path / "run" / f"rep-{i:02d}" / "result.json").read_text()) for i in (1, 2, 3)]
    assert [r["ok"] for r in reps] == [True, False, True]
    assert "dcemu was killed by signal 9" in reps[1]["error"]
    assert reps[0]["environment"]["testbed"].endswith("testbed-1")
    assert reps[2]["environment"]["testbed"].endswith("testbed-2")
    assert summary.failed == 1
    assert reps[0]["details"]["tag"] not in _netns() and reps[2]["details"]["tag"] not in _netns()
    assert reps[0]["details"]["tag"] != reps[2]["details"]["tag"]


def test_a_fresh_testbed_experiment_after_a_kept_testbed_does_not_wait_for_it(tmp_path):
    """A campaign runs a one_testbed experiment's repetitions on the session's testbed, then
    an ordinary experiment: the kept testbed (holding the host lock) is closed first,
    instead of the new testbed waiting for that lock forever."""
    from dclab.experiments.reps import Session, run_rep

    shared, fresh = SharedShort(), example_experiment.ShortDownloads()
    waits: list[int] = []
    with Session(tmp_path / "testbeds", on_wait=lambda: waits.append(1)) as session:
        a = run_rep(shared, build(Scenario()), shared.options(size=20_000, objects=1), tmp_path / "a", 1, session=session)
        assert a.ok and session.bed is not None
        done: list[RepResult] = []
        t = threading.Thread(target=lambda: done.append(run_rep(fresh, build(Scenario()), fresh.options(size=20_000),
                                                                 tmp_path / "b", 1, session=session)), daemon=True)
        t.start()
        t.join(timeout=90)
        assert done and done[0].ok, f"the second run waited ({len(waits)} waits for the host lock)"
        assert session.bed is None
    assert a.details["tag"] not in _netns()
