"""The split-layer experiment: its options and plans per aggregation, what it counts as
reordering, its completion downloads, and real runs (root): MPTCP and multipath QUIC alone
through a leg outage (both legs carry it, leg 2 again after the outage), and a small campaign (MPTCP
through an outage, PDCP against a TCP flow on each leg) and its report."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import run_dclab
from pydantic import ValidationError
from typed_rows import runs

from dclab.analysis.figures import read_stats
from dclab.campaign.store import open_existing
from dclab.dcemu.records import Bearer, Hist, Rx, Stats
from dclab.endpoints.base import TransferResult
from dclab.experiments.split_layer import AGGREGATIONS, EXPERIMENT, completion_downloads, reordered
from dclab.flowplan import PlanError
from dclab.scenario import build

OPT = EXPERIMENT.options


def test_each_aggregation_has_its_bearer_and_stack():
    s = build()
    modes = {}
    for name in AGGREGATIONS:
        if name == "mpquic" and "noq" not in __import__("dclab.endpoints", fromlist=["STACKS"]).STACKS:
            continue
        plan = EXPERIMENT.plan(EXPERIMENT.scenario(s, OPT(aggregation=name)), OPT(aggregation=name))
        (b,) = plan.bearers
        modes[name] = (b.mode, b.legs, plan.flows[0].stack, plan.flows[0].port)
    assert modes["pdcp"] == ("dc", None, "tcp", 4433) and modes["pdcp-dup"] == ("dc", None, "tcp", 4433)
    assert modes["mptcp"] == ("paths", None, "mptcp", 4433)
    assert modes["sc1"] == ("sc", (1,), "tcp", 4433) and modes["sc2"] == ("sc", (2,), "tcp", 4433)
    # Duplication is the aggregation's: a scenario's --duplicate with another is refused, not
    # overridden in silence.
    assert EXPERIMENT.scenario(s, OPT(aggregation="pdcp-dup")).duplicate
    with pytest.raises(PlanError, match="--duplicate: the aggregation decides it here, and mptcp does not"):
        EXPERIMENT.scenario(build(duplicate=True), OPT(aggregation="mptcp"))


def test_each_leg_delivers_in_order_unless_reordering_jitter_is_asked_for():
    # A path bearer has no PDCP receiver: a leg's reordering jitter would reach the transport
    # raw, which a radio bearer (in-order RLC) never does.
    for name in AGGREGATIONS:
        assert not EXPERIMENT.scenario(build(), OPT(aggregation=name)).reorders_by_jitter
    assert EXPERIMENT.scenario(build(jitter_reorders=True), OPT(aggregation="mptcp")).reorders_by_jitter
    assert EXPERIMENT.scenario(build(jitter_reorders=False), OPT(aggregation="mptcp")).jitter_reorders is False


def test_the_fairness_setting_adds_a_tcp_flow_on_each_leg_sharing_the_congestion_control():
    o = OPT(aggregation="mptcp", setting="fairness", cc="reno")
    plan = EXPERIMENT.plan(build(), o)
    assert [(b.name, b.mode, b.legs) for b in plan.bearers] == [("agg", "paths", None), ("tcp1", "sc", (1,)),
                                                                 ("tcp2", "sc", (2,))]
    # Every flow asks for more than the legs carry in the window: at least 1 GB.
    assert {f.workload.objects for f in plan.flows} == {(1_000_000_000,)}
    fast = EXPERIMENT.plan(build(bw=[500.0, 500.0]), OPT(setting="fairness", duration=60))
    assert fast.flows[0].workload.objects == (15_000_000_000,)  # twice 1 Gbit/s for 60 s
    assert [(f.name, f.stack, f.cc, f.port) for f in plan.flows] == [("agg", "mptcp", "reno", 4433),
                                                                     ("tcp1", "tcp", "reno", 8000),
                                                                     ("tcp2", "tcp", "reno", 9000)]
    q = EXPERIMENT.plan(build(), OPT(aggregation="pdcp", stack="aioquic", cc="reno", setting="fairness"))
    assert [f.cc for f in q.flows] == ["reno", "cubic", "cubic"]  # TCP keeps its default beside QUIC
    # MPTCP's scheduler is set in both namespaces, for MPTCP only.
    assert plan.netns_sysctls == (("net.mptcp.scheduler", "default"),) and q.netns_sysctls == ()


@pytest.mark.parametrize("values, message", [
    ({"aggregation": "mptcp", "stack": "quic-go"}, "stack: mptcp runs mptcp; --stack is for pdcp, pdcp-dup, sc1 and sc2"),
    ({"aggregation": "lte"}, "aggregation"),
    ({"shorts": 101}, "shorts"),
    ({"setting": "crowd"}, "setting"),
    ({"aggregation": "mptcp", "mptcp_scheduler": "nope"}, r"mptcp_scheduler: this kernel offers .*default.* \(got 'nope'\)"),
])
def test_bad_options_are_refused_naming_the_field(values, message):
    with pytest.raises(ValidationError, match=message):
        OPT(**values)


def test_a_three_leg_scenario_is_refused():
    with pytest.raises(ValueError, match="split-layer needs two legs"):
        EXPERIMENT.plan(build(bw=[10.0, 10.0, 10.0], split=[1.0, 1.0, 1.0], delay=[5.0] * 3, loss=[0.0] * 3), OPT())


def test_reordering_is_what_each_layer_saw():
    # PDCP: deliveries that waited in the buffer (all but those of the zero-wait bucket).
    wait = Hist(count=100, buckets=[(0.0, 70), (512.0, 20), (2048.0, 10)])
    summary = Stats(type="summary", t_ms=1.0, bearers=[Bearer(name="agg", rx=Rx(wait=wait))])
    assert reordered(summary, AGGREGATIONS["pdcp"], None) == 30
    assert reordered(Stats(type="summary", t_ms=1.0, bearers=[Bearer(name="agg")]), AGGREGATIONS["pdcp"], None) is None
    # MPTCP: the data-level out-of-order queue that grew; absent from those that grew is 0.
    t = TransferResult(ok=True, bytes=1, extra={"mptcp": {"counters": {"OFOQueue": 812, "MPJoinSynAckRx": 1}}})
    assert reordered(None, AGGREGATIONS["mptcp"], t) == 812
    t.extra["mptcp"]["counters"] = {"MPJoinSynAckRx": 1}
    assert reordered(None, AGGREGATIONS["mptcp"], t) == 0
    assert reordered(None, AGGREGATIONS["mptcp"], TransferResult(ok=True, bytes=1)) is None


def test_completion_downloads_are_each_runs_long_and_short_downloads_by_series():
    def row(key: str, agg: str, ok: bool = True) -> dict:
        return {"run_key": key, "ok": ok, "stack": "tcp", "cc": "cubic", "host_config": "tcp", "value": "1",
                "options": {"aggregation": agg}, "scenario": {},
                "metrics": {"size": 5_000_000, "short": 200_000, "completion_s": 1.5,
                            "short_completion_all_s": [0.2, None, 0.3]}}
    got = completion_downloads(runs([row("a", "pdcp"), row("b", "mptcp"), row("c", "mptcp", ok=False)], "split-layer"))
    assert [(d.mode, d.size, d.completion_s) for d in got] == [
        ("tcp aggregation=pdcp", 5_000_000, 1.5), ("tcp aggregation=pdcp", 200_000, 0.2),
        ("tcp aggregation=pdcp", 200_000, 0.3), ("tcp aggregation=mptcp", 5_000_000, 1.5),
        ("tcp aggregation=mptcp", 200_000, 0.2), ("tcp aggregation=mptcp", 200_000, 0.3)]


def test_the_tables_put_the_aggregations_side_by_side_per_value():
    """The first table of each part is what a reader compares: one row per swept value, one
    column per aggregation, mean ± std and the runs behind it; a failed run counts in no
    cell, and a value with no successful run is marked."""
    def row(key: str, agg: str, value: float, g: float | None, stack: str = "tcp") -> dict:
        return {"run_key": key, "ok": g is not None, "stack": stack, "cc": "cubic", "host_config": stack,
                "sweep": "loss", "param": "loss", "value": f"{value:g}", "value_num": value,
                "options": {"aggregation": agg}, "scenario": {}, "metrics": {} if g is None else {"goodput_mbps": g}}
    rows = runs([row("a", "pdcp", 0, 30.0), row("b", "pdcp", 0, 32.0), row("c", "mptcp", 0, 36.0, "mptcp"),
                 row("d", "mptcp", 0, None, "mptcp"), row("e", "pdcp", 0.2, 9.5), row("f", "mptcp", 0.2, None, "mptcp"),
                 row("g", "pdcp", 0.5, None)], "split-layer")
    (caption, t), (caption2, full) = EXPERIMENT.sweep_tables(rows)
    assert caption == "alone: goodput (Mbit/s) by aggregation, mean ± std (n runs)" and caption2 == "alone"
    assert t.columns == ["value", "mptcp (mptcp cubic)", "pdcp (tcp cubic)"]
    assert t.rows == [["0", "36.00 ± 0.00 (1)", "31.00 ± 1.41 (2)"], ["0.2", "-", "9.50 ± 0.00 (1)"], ["0.5", "-", "-"]]
    assert t.failed == [False, False, True]
    assert full.columns[:3] == ["value", "series", "goodput (Mbit/s)"]


def _rep(out: Path) -> dict:
    return json.loads((out / "rep-01" / "result.json").read_text())


@pytest.mark.root
@pytest.mark.parametrize("aggregation", ["mptcp", "mpquic"])
def test_a_multipath_flow_alone_survives_an_outage_of_leg_2_on_both_legs(tmp_path, aggregation):
    out = tmp_path / "run"
    p = run_dclab("run", "split-layer", "--aggregation", aggregation, "--size", "20MB", "--shorts", "2",
                  "--outage", "2:2:1.5", "--reps", "1", "--out", str(out), timeout=300)
    assert p.returncode == 0, p.stderr
    rep = _rep(out)
    assert rep["ok"], rep["error"]
    d, m = rep["details"], rep["metrics"]
    paths = d["paths"]
    assert set(paths) == {"agg-leg1", "agg-leg2"} and all(v["delivered_bytes"] > 2_000_000 for v in paths.values())
    assert paths["agg-leg1"]["pdus_leg1"] > 0 and paths["agg-leg2"]["pdus_leg2"] > 0 and len(paths["agg-leg2"]) == 3
    assert len(d["short_completion_all_s"]) == 2 and m["short_completion_s"] > 0
    assert d["outage"] == {"leg": 2, "at_s": 2.0, "duration_s": 1.5}
    if aggregation == "mptcp":  # reordering across subflows reaches MPTCP's receiver
        assert m["reordered"] > 0 and d["transport"]["mptcp"]["counters"]["MPJoinSynAckRx"] == 1
        assert rep["environment"]["host_settings"]["net.mptcp.scheduler (namespaces)"] == "default"
    else:  # noq counts what each path received, and reports no reordering
        (paths,) = d["transport"]["paths"]
        assert [p["id"] for p in paths] == [0, 1] and all(p["udp_rx_bytes"] > 2_000_000 for p in paths)
        assert m["reordered"] is None
    # Leg 2 carried nothing while down and carried the flow again after it came back.
    stats = [r for r in read_stats(out / "rep-01") if r.type == "interval"]
    def leg2_bytes(lo_ms: float, hi_ms: float) -> int:  # out of leg 2 (cumulative counters) between the two
        at = [next(leg.downlink.bytes_out for leg in r.legs if leg.name == "leg2")
              for t in (lo_ms, hi_ms) for r in [min(stats, key=lambda r: abs(r.t_ms - t))]]  # fmt: skip
        return at[1] - at[0]
    assert leg2_bytes(2300, 3400) == 0
    # Back after it: MPTCP within a few hundred ms, noq after its probe timeout backs off (over a second).
    assert leg2_bytes(3800, max(r.t_ms for r in stats)) > 1_000_000
    assert (out / "rep-01" / "legs.png").is_file()


CAMPAIGN = """
description = "split-layer in brief"
reps = 1

[split-layer]
size = "5MB"
shorts = 2
duration = 4

[[group]]
name = "outage-mptcp"
experiments = ["split-layer"]
configs = [{ stack = "mptcp", cc = "cubic" }]
sweeps = ["none"]
scenario = { outage = "2:1.2:0.5" }
options = { split-layer = { aggregation = "mptcp" } }

[[group]]
name = "fairness-pdcp"
experiments = ["split-layer"]
configs = [{ stack = "tcp", cc = "cubic" }]
sweeps = ["none"]
options = { split-layer = { aggregation = "pdcp", setting = "fairness" } }
"""


@pytest.mark.root
def test_a_campaign_stores_both_settings_and_its_report_draws_every_figure(tmp_path):
    env = {**os.environ, "DCLAB_RESULTS": str(tmp_path / "results")}
    f = tmp_path / "sl-brief.toml"
    f.write_text(CAMPAIGN)
    p = run_dclab("campaign", "run", str(f), env=env, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    rows = {r["options"]["setting"] if "setting" in r["options"] else "alone": r
            for r in open_existing(tmp_path / "results" / "sl-brief" / "store.sqlite").rows()}
    fair, alone = rows["fairness"], rows["alone"]
    assert fair["ok"] and alone["ok"], (fair["error"], alone["error"])
    m, flows = fair["metrics"], {x["name"]: x for x in fair["flows"]}
    assert set(flows) == {"agg", "tcp1", "tcp2"} and all(x["mean_mbps"] > 1 for x in flows.values())
    # Three flows on 2 x 20 Mbit/s: the window's total is most of the capacity.
    assert 0.7 * 40 < sum(x["mean_mbps"] for x in flows.values()) <= 40
    assert 1 / 3 < m["jfi"] <= 1 and 0.5 < m["jfi_leg1"] <= 1 and 0.5 < m["jfi_leg2"] <= 1, m
    assert m["reordered"] > 0, m  # the batches cross legs whose queues differ: PDCP reorders
    # PDCP's flow is one TCP over both legs: on each it takes less than the leg's TCP flow
    # (0.29 to 0.6 of it seen in 4 s windows, 0.60 over 30 s).
    assert 0.1 < m["share_leg1"] < 1 and 0.1 < m["share_leg2"] < 1, m
    assert alone["metrics"]["goodput_mbps"] > 5 and set(alone["metrics"]["paths"]) == {"agg-leg1", "agg-leg2"}, alone
    p = run_dclab("report", "sl-brief", env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    report = tmp_path / "results" / "sl-brief" / "report"
    html = (report / "index.html").read_text()
    for fig in ("split-layer-none-goodput_mbps.png", "split-layer-none-cdf.png", "split-layer-none-fairness.png",
                "split-layer-none-outage-mptcp.png"):
        assert (report / fig).stat().st_size > 10_000 and fig in html
    assert "leg 2 down 0.5 s" in html and "mptcp (mptcp cubic)" in html
