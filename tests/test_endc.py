"""EN-DC campaigns (docs/endc.md): the shipped ones plan, and a brief one runs the three
split policies and a secondary node change through real TCP, with its report's figures."""

from __future__ import annotations

import os

import pytest
from conftest import run_dclab

from dclab.analysis.figures import read_stats
from dclab.analysis.split_bearer import split_series
from dclab.campaign.store import open_existing

CAMPAIGN = """
description = "EN-DC in brief"
reps = 1

[throughput]
size = "100MB"

[[group]]
name = "static"
experiments = ["throughput"]
configs = [{ stack = "tcp", cc = "cubic" }]
sweeps = [{ name = "nr-distance", values = [150] }]
scenario = { link = "endc:good,good", x2_delay = 5.0, uplink_bw = 200.0, split = [5.0, 95.0], batch = 10 }

[[group]]
name = "ddds"
experiments = ["throughput"]
configs = [{ stack = "tcp", cc = "cubic" }]
sweeps = [{ name = "nr-distance", values = [150] }]
scenario = { link = "endc:good,good", x2_delay = 5.0, uplink_bw = 200.0, split_policy = "ddds", sn_events = "change@1:100" }

[[group]]
name = "delay-aware"
experiments = ["throughput"]
configs = [{ stack = "tcp", cc = "cubic" }]
sweeps = [{ name = "nr-distance", values = [150] }]
scenario = { link = "endc:good,good", x2_delay = 5.0, uplink_bw = 200.0, split_policy = "delay-aware" }
"""


@pytest.mark.parametrize("name", ["endc", "endc-smoke"])
def test_the_shipped_endc_campaigns_plan(name):
    p = run_dclab("campaign", "plan", name, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "runs, 0 done" in p.stdout or "runs," in p.stdout


@pytest.mark.root
def test_a_brief_endc_campaign_runs_every_policy_and_draws_its_figures(tmp_path):
    env = {**os.environ, "DCLAB_RESULTS": str(tmp_path / "results")}
    f = tmp_path / "endc-brief.toml"
    f.write_text(CAMPAIGN)
    p = run_dclab("campaign", "run", str(f), env=env, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    rows = {r["scenario"]["split_policy"]: r
            for r in open_existing(tmp_path / "results" / "endc-brief" / "store.sqlite").rows()}
    assert set(rows) == {"static", "ddds", "delay-aware"}
    for policy, r in rows.items():
        assert r["ok"], (policy, r["error"])
        # The LTE master alone carries 64 Mbit/s: every policy uses the NR secondary.
        assert r["metrics"]["goodput_mbps"] > 100, (policy, r["metrics"]["goodput_mbps"])
    run_dir = tmp_path / "results" / "endc-brief" / "runs" / rows["ddds"]["run_key"]
    s = split_series(read_stats(run_dir), "dc")
    assert s.policy == "ddds" and set(s.mbps) == {"leg1", "leg2"}
    # A report every 10 ms reaches the master, the secondary asks for something, and the
    # change shows as one span of about 100 ms (10 ms records).
    assert len(s.reports["leg2"]) > 50 and max(x or 0 for x in s.desired_kb["leg2"]) > 100
    ((start, end, label),) = s.away
    assert label == "leg2 interrupted" and 0.08 < end - start < 0.13
    summary = next(r for r in reversed(read_stats(run_dir)) if r.type == "summary")
    sn = summary.legs[1].secondary
    assert sn is not None and (sn.changes, sn.interrupted_ms) == (1, 100.0)
    assert (run_dir / "link-utilization.png").stat().st_size > 10_000
    p = run_dclab("report", "endc-brief", env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    report = tmp_path / "results" / "endc-brief" / "report"
    html = (report / "index.html").read_text()
    for fig in ("throughput-nr-distance.png", "throughput-nr-distance-expiries.png"):
        assert (report / fig).stat().st_size > 10_000 and fig in html
    for policy in ("static", "ddds", "delay-aware"):
        assert f"split_policy={policy}" in html
