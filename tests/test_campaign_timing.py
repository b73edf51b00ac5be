"""The planner held to the time campaigns took: the kept totals of measured campaigns
(tests/data/campaign_times.json, scripts/keep_campaign_time.py) against the planner's
model as it is now, and the comparison itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_dclab

from dclab.campaign import plan as cp
from dclab.campaign import timing
from dclab.experiments import get_experiment
from dclab.experiments.responsiveness import SHORT_ROUNDS, standing_wait_s
from dclab.paths import CAMPAIGNS
from dclab.scenario import build

KEPT = json.loads((Path(__file__).parent / "data" / "campaign_times.json").read_text())


@pytest.mark.parametrize("name", sorted(KEPT))
def test_the_plan_is_within_its_tolerance_of_the_measured_campaign(name):
    kept = KEPT[name]
    runs = cp.plan(cp.load(name))
    # a campaign whose runs changed since it was measured must be measured again
    assert len(runs) == kept["runs"], f"{name}: {len(runs)} runs planned, {kept['runs']} measured; run it and keep its time"
    estimate = sum(r.estimate_s for r in runs)
    assert timing.within(estimate, kept["measured_s"]), (name, estimate, kept["measured_s"])


def test_every_kept_campaign_is_shipped():
    assert set(KEPT) <= {p.stem for p in CAMPAIGNS.glob("*.toml")}


def test_timings_group_what_was_measured_and_leave_out_the_rest():
    runs = cp.plan(cp.load("aqm-smoke"))
    elapsed = {r.key: 10.0 for r in runs[:3]}  # the fourth never ran
    ts = timing.timings(runs, elapsed)
    assert [t.group for t in ts] == [r.group for r in runs[:3]]
    assert all(t.runs == 1 and t.measured_s == 10.0 for t in ts)
    all_ = timing.total(ts)
    assert all_.runs == 3 and all_.measured_s == 30.0
    assert all_.estimate_s == pytest.approx(sum(r.estimate_s for r in runs[:3]))
    assert all_.ratio == pytest.approx(all_.estimate_s / 30.0)


def test_within_is_a_quarter_or_a_minute():
    assert timing.within(1250, 1000) and not timing.within(1251, 1000)
    assert timing.within(750, 1000) and not timing.within(749, 1000)
    assert timing.within(99, 40) and not timing.within(101, 40)  # a short campaign: a minute


def test_the_responsiveness_estimate_follows_the_queue_the_bulk_flow_keeps():
    exp = get_experiment("responsiveness")
    options = exp.options_model()
    tail = build(bw=[20, 20], queue_packets=1000)
    codel = build(bw=[20, 20], queue_packets=1000, aqm="codel")
    one_leg = build(bw=[20, 20], queue_packets=1000, aqm="codel,tail-drop")
    assert standing_wait_s(tail, 0) == pytest.approx(1000 * 1500 * 8 / 20e6)
    assert standing_wait_s(codel, 1) == pytest.approx(0.010)
    # each of the short downloads waits SHORT_ROUNDS times the longer queue
    extra = options.count * SHORT_ROUNDS * (standing_wait_s(tail, 0) - standing_wait_s(codel, 0))
    assert cp.estimate(exp, tail, options) - cp.estimate(exp, codel, options) == pytest.approx(extra)
    # one managed leg holds the split flow's window: planned as both managed
    assert cp.estimate(exp, one_leg, options) == pytest.approx(cp.estimate(exp, codel, options))
    cell = build(link="lte:good", aqm="tail-drop")
    assert standing_wait_s(cell, 0) == pytest.approx(512_000 * 8 / 64.1e6)


def test_plan_measured_needs_a_store(tmp_path, monkeypatch):
    monkeypatch.setenv("DCLAB_RESULTS", str(tmp_path))
    r = run_dclab("campaign", "plan", "aqm-smoke", "--measured")
    assert r.returncode == 1 and "no stored run says how long it took" in r.stderr
