"""A new experiment is one module: registered, it runs from `dclab run`, plans in sweeps and
campaigns, is stored, and reports, with nothing else changed (tests/example_experiment.py)."""

from __future__ import annotations

import json

import example_experiment
import pytest
from click.testing import CliRunner
from figure_checks import panel
from measured import check_bound

from dclab.campaign import plan as cp
from dclab.campaign.report import build_report
from dclab.campaign.runner import execute
from dclab.campaign.store import Store
from dclab.cli import app
from dclab.experiments import experiments, register, unregister


@pytest.fixture
def short():
    exp = register(example_experiment.EXPERIMENT)
    yield exp
    unregister(exp.name)


def test_registered_experiment_has_a_command_and_options(short):
    assert "short" in experiments()
    r = CliRunner().invoke(app, ["run", "short", "--help"])
    assert r.exit_code == 0, r.output
    for opt in ("--objects", "--connections", "--size", "--stack", "--reps", "--seed", "--batch"):
        assert opt in r.output
    r = CliRunner().invoke(app, ["run", "short", "--objects", "0"])
    assert r.exit_code == 2 and "--objects" in r.output and "greater than or equal to 1" in r.output


def test_a_workload_the_stack_cannot_run_is_refused_before_anything_starts(short):
    r = CliRunner().invoke(app, ["run", "short", "--stack", "ngtcp2", "--objects", "3", "--sequential"])
    assert r.exit_code == 2 and "ngtcp2 cannot run this workload" in r.output and "sequential" in r.output, r.output


def test_it_plans_in_sweeps(short):
    c = cp.sweep_campaign("plug", 2, ["short"], [cp.parse_config("aioquic")], [("batch", [10, 100])],
                          {"short": {"objects": 3}})
    runs = cp.plan(c)
    assert len(runs) == 4 and {r.options.objects for r in runs} == {3}
    assert {r.experiment for r in runs} == {short.name}


@pytest.mark.root
def test_it_runs_is_stored_and_reports(short, tmp_path):
    r = CliRunner().invoke(app, ["run", "short", "--stack", "aioquic", "--objects", "4", "--connections", "2",
                                 "--size", "50KB", "--reps", "2", "--seed", "7", "--json", "--out", str(tmp_path / "run")])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output.strip().splitlines()[-1])
    m = out["metrics"]["completion_s"]
    assert out["failed"] == 0 and len(m["runs"]) == 2
    check_bound("plugin.4x50kb_2conns_s", m["mean"])  # handshake and a few slow-start rounds of a 20 ms RTT
    assert out["seeds"] == [7, 8]
    rep = json.loads((tmp_path / "run" / "rep-02" / "result.json").read_text())
    assert rep["seed"] == 8 and rep["flows"][0]["transfer"]["bytes"] == 4 * 50_000
    import tomllib

    assert tomllib.loads((tmp_path / "run" / "rep-02" / "scenario.toml").read_text())["seed"] == 8  # dcemu got it
    assert len(rep["flows"][0]["transfer"]["objects"]) == 4 and len(rep["flows"][0]["transfer"]["connections"]) == 2

    c = cp.sweep_campaign("plug", 1, ["short"], [cp.parse_config("aioquic")], [("batch", [10])], {"short": {"objects": 2}})
    store = Store(tmp_path / "plug" / "store.sqlite")
    [run] = cp.plan(c)
    rec = execute(c, run, store, runs_dir=tmp_path / "plug" / "runs")
    assert rec.ok, rec.error
    [row] = store.rows()
    assert row["experiment"] == "short" and row["flows"][0]["name"] == "client"
    check_bound("plugin.2x50kb_2conns_batch10_s", row["metrics"]["completion_s"])
    index = build_report(store, tmp_path / "report", "plug-in")
    html = index.read_text()
    assert "short: batch" in html and "completion time mean (s)" in html
    ax = panel(tmp_path / "report" / "short-batch.png", title="short: batch", xlabel="DC batch size (packets)",
               ylabel="completion time (s)", legend=[row["host_config"]], lines=1, x=(10.0, 10.0))
    assert ax.series[0].n == 1 and ax.y == pytest.approx((row["metrics"]["completion_s"],) * 2), "the one run stored"
