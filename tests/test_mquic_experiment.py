"""The mquic experiment (dclab/experiments/mquic.py): the paper's network as scenarios,
options refused before anything starts, the workloads of each mode, the campaigns, and
real runs through dcemu (root)."""

from __future__ import annotations

import json
import math
import statistics

import pytest
from click.testing import CliRunner
from figure_checks import panel
from measured import check_bound
from typed_rows import runs

from dclab.analysis.downloads import MquicDownload
from dclab.analysis.nfes import nfe_evidence
from dclab.campaign import plan as cp
from dclab.cli import app
from dclab.endpoints import get_stack
from dclab.endpoints.base import TransferResult
from dclab.experiments import get_experiment
from dclab.experiments import mquic_network as net
from dclab.experiments.mquic import _series_label, evidence_table, improvement_table, rep_gain, workload
from dclab.experiments.mquic_downloads import download_record
from dclab.experiments.reps import preflight
from dclab.scenario import Scenario

MQ = get_experiment("mquic")


def test_presets_are_the_papers_network():
    d = net.scenario_changes("domestic-low-loss", 65.9, 1.0)
    assert d["bw"] == [65.9] and d["split"] == [100.0] and d["reordering"] is False
    assert d["delay"] == [pytest.approx((21.2 + 25) / 2)] and d["uplink_delay"] == pytest.approx(23.1)
    # RTT std 3.46 ms from two independent directions
    std = d["delay_cov"] * d["delay"][0]
    assert math.sqrt(2) * std == pytest.approx(3.46, rel=1e-4)
    assert d["loss"] == [pytest.approx(100 * (1 - (1 - 0.0009) * (1 - 0.0005)))] and d["uplink_loss"] == 0.05
    assert d["jitter_reorders"] is False and d["queue_packets"] == 1000
    i = net.scenario_changes("international-high-loss", 35.4, 0.5, dc=True)
    assert i["bw"] == [8.85, 8.85] and i["split"] == [50.0, 50.0] and i["reordering"] is True
    assert i["delay"] == [pytest.approx(85.6)] * 2 and i["uplink_loss"] == 1.0
    assert net.scaled_sizes((500_000, 6_000_000), 0.25) == (125_000, 1_500_000)


def test_a_repetition_runs_the_preset_scaled():
    o = MQ.options(preset="domestic-high-loss", scale=0.5)
    s = MQ.scenario(Scenario(), o)
    assert s.legs == 1 and s.bw == [pytest.approx(32.95)] and s.loss[0] == pytest.approx(1.0891, abs=1e-4)
    assert s.stats_interval_ms == 1000 and not s.jitter_reorders
    none = MQ.scenario(Scenario(), MQ.options(preset="none"))
    assert none.bw == Scenario().bw, "preset none keeps the scenario options"
    plan = preflight(MQ, Scenario(), o)  # dcemu itself accepts the scenario
    assert plan.flows[0].cc == "mquic-reno" and plan.flows[0].stack == "aioquic-mquic"


@pytest.mark.parametrize(("mode", "conns", "sync"), [("1c", 1, "off"), ("3c", 3, "off"), ("mquic", 3, "full"),
                                                      ("mquic-cwnd", 3, "cwnd")])
def test_each_mode_is_its_workload(mode, conns, sync):
    o = MQ.options(iw=30, params="paper")
    w = workload(mode, 1_000_001, "g", o)
    assert w.connections == conns and w.preconnect and sum(w.objects) == 1_000_001
    assert w.ranged == (conns > 1)
    assert {c["mquic_sync"] for c in w.cc_options} == {sync}
    assert {(c["mquic_group"], c["mquic_iw"], c["mquic_params"], c["mquic_n"]) for c in w.cc_options} == {("g", "30", "paper", str(conns))}
    assert {(c["mquic_exit"], c["mquic_merge"]) for c in w.cc_options} == {("aioquic", "0")}
    h = workload(mode, 1000, "g", MQ.options(ss_exit="hystart", merge_rtt=True))
    assert {(c["mquic_exit"], c["mquic_merge"]) for c in h.cc_options} == {("hystart", "1")}
    assert get_stack("aioquic-mquic").check("mquic-reno", w) == "mquic-reno"


@pytest.mark.parametrize(("args", "message"), [
    (["--modes", "1c,4c"], "--modes"),
    (["--modes", "1c,1c"], "distinct"),
    (["--sizes", "500KB,,2MB"], "--sizes"),
    (["--sizes", "10"], "at least 1KB"),
    (["--conns", "1"], "--conns"),
    (["--iw", "0"], "--iw"),
    (["--scale", "0"], "--scale"),
    (["--scale", "2"], "--scale"),
    (["--preset", "mars"], "--preset"),
    (["--cc", "vegas"], "--cc"),
    (["--ss-exit", "hybla"], "--ss-exit"),
    (["--loss", "2,2"], "--loss: --preset domestic-low-loss sets the links"),
    (["--preset", "domestic-high-loss", "--bw", "30"], "--bw: --preset domestic-high-loss sets the links"),
])
def test_bad_options_are_refused_before_anything_starts(args, message, tmp_path):
    r = CliRunner().invoke(app, ["run", "mquic", *args, "--out", str(tmp_path / "never")])
    assert r.exit_code == 2, r.output
    assert message in " ".join(r.output.split()), r.output
    assert not (tmp_path / "never").exists()


def test_improvement_is_measured_against_each_baseline():
    ds = []
    for i in range(10):
        ds += [MquicDownload(mode="1c", size=1000, ok=True, completion_s=2.0 + i * 0.1),
               MquicDownload(mode="3c", size=1000, ok=True, completion_s=1.5 + i * 0.1),
               MquicDownload(mode="mquic", size=1000, ok=True, completion_s=1.0 + i * 0.05)]
    from dclab.analysis.completion import completion_table

    rows = completion_table(ds, ["1c", "3c", "mquic"], ["1c", "3c"])
    mq = next(r for r in rows if r.mode == "mquic")
    assert mq.improvement["1c"].median == pytest.approx((2.45 - 1.225) / 2.45 * 100)
    t = improvement_table(rows)
    assert t.columns[:3] == ["size", "mode", "median (s)"] and len(t.rows) == 3
    assert rep_gain(ds[:3]) == pytest.approx(50.0)


def test_a_download_record_takes_the_first_nfe_from_the_log():
    def r():
        return TransferResult(ok=True, bytes=1000, last_byte_s=1.5, extra={"served": 7})

    lines = [{"event": "nfe", "action": "sync", "group": "g"}, {"event": "round", "action": "mean", "group": "g"},
             {"event": "nfe", "action": "merged", "group": "g"},
             {"event": "done", "group": "g", "nfes": 4, "nfes_within_rtt": 2, "delay_exits": 3,
              "first_nfe": {"packets": 40, "group_packets": 120, "cwnd_before": 48000, "group_cwnd": 90000,
                            "kind": "delay"}}]  # fmt: skip
    lines.insert(0, {"event": "nfe", "action": "stop", "group": "g", "group_packets": 300})
    lines[-1]["group_packets"] = 1200
    d = download_record("mquic", 1000, 4000, r(), lines)
    assert (d.nfes, d.first_nfe_packets, d.first_nfe_cwnd, d.syncs) == (4, 120, 48000, 3)  # merged: no sync
    assert (d.stop_packets, d.group_packets, d.group, d.served) == (300, 1200, "g", 7)
    assert (d.nfes_within_rtt, d.delay_exits, d.first_nfe_group_cwnd, d.first_nfe_kind) == (2, 3, 90000, "delay")
    assert download_record("1c", 1000, 4000, r(), []).nfes is None


def test_the_campaigns_plan():
    smoke = cp.plan(cp.load("mquic-smoke"))
    assert {r.experiment for r in smoke} == {"mquic"}
    assert {r.sweep for r in smoke} == {"none", "conns", "iw"}
    assert {r.options.preset for r in smoke} == {"domestic-high-loss"}
    assert sum(r.estimate_s for r in smoke) < 600, "a few minutes"
    full = cp.plan(cp.load("mquic"))
    assert {r.options.preset for r in full} == set(net.PRESETS)
    assert {r.options.cc for r in full} == {"reno", "cubic", "bbr"}
    assert any(r.options.dc for r in full) and any("mquic-cwnd" in r.options.modes for r in full)
    assert {r.value for r in full if r.sweep == "conns"} == {2, 3, 4, 5, 6}


@pytest.mark.root
def test_a_real_run_at_high_loss(tmp_path):
    """Two repetitions at domestic high loss, small files: every download completes,
    modes rotate, the groups report NFEs (six downloads of about 80 packets at 1.09 % loss
    down and 1 % up: about five expected, none at all less likely than 1 %), the table and
    the cwnd figure show them."""
    out = tmp_path / "run"
    r = CliRunner().invoke(app, ["run", "mquic", "--preset", "domestic-high-loss", "--sizes", "400KB", "--reps", "2",
                                 "--json", "--out", str(out)])
    assert r.exit_code == 0, r.output
    res = json.loads(r.output.strip().splitlines()[-1])
    assert res["failed"] == 0 and res["downloads"] == 6 and res["failed_downloads"] == 0
    table = {row["mode"]: row for row in res["table"]}
    assert set(table) == {"1c", "3c", "mquic"} and all(row["n"] == 2 for row in table.values())
    reps = [json.loads((out / f"rep-0{i}" / "result.json").read_text()) for i in (1, 2)]
    assert reps[0]["details"]["order"] == ["1c", "3c", "mquic"] and reps[1]["details"]["order"] == ["3c", "mquic", "1c"]
    assert reps[0]["environment"]["testbed"] == reps[1]["environment"]["testbed"]
    # one long-lived client served all six downloads, in order (no process per download)
    assert [d["served"] for rep in reps for d in rep["details"]["downloads"]] == [1, 2, 3, 4, 5, 6]
    for rep in reps:
        for d in rep["details"]["downloads"]:
            assert d["ok"] and sum(c["bytes"] for c in d["conns"]) == d["size"] == 100_000
            assert d["nfes"] is not None, "every download's group reported"
    assert sum(d["nfes"] for rep in reps for d in rep["details"]["downloads"]) >= 1, "losses are met as NFEs"
    from dclab.analysis.cwnd import MSS, SYNC_ACTIONS, cwnd_series, pick_group
    from dclab.experiments.mquic_downloads import LOG

    lines = [json.loads(x) for x in (out / "rep-01" / LOG).read_text().splitlines() if x.strip()]
    group = pick_group(lines)
    ax = panel(out / "rep-01" / "cwnd.png", ylabel=f"cwnd (packets of {MSS} B)")
    assert ax.title.endswith(f": cwnd per connection (group {group})"), ax.title
    conns = cwnd_series(lines, group)  # a step line per connection of the group's mode, its cwnd as logged
    assert len(conns) == (1 if "-1c-" in group else reps[0]["details"]["conns"])
    assert [(s.label, s.y[1]) for s in ax.series[:len(conns)]] == [
        (f"conn {c}", pytest.approx(max(v for _, v in pts) / MSS)) for c, pts in conns.items()]
    syncs = [d for d in lines if str(d.get("group")) == group and d.get("event") in ("nfe", "round", "rate")
             and d.get("action") in SYNC_ACTIONS]
    assert len(ax.vlines) == len(syncs), "a line per synchronization of the group"


@pytest.mark.root
def test_the_scaling_check_measures_goodput_against_the_scaled_rate(tmp_path):
    r = CliRunner().invoke(app, ["run", "mquic-cell", "--seconds", "3", "--scale", "0.1", "--json",
                                 "--out", str(tmp_path / "cell")])
    assert r.exit_code == 0, r.output
    res = json.loads(r.output.strip().splitlines()[-1])
    ratio = res["metrics"]["rate_ratio"]["mean"]
    # 6.59 Mbit/s: aioquic fills it, and goodput cannot exceed the link's rate
    assert 0.8 < ratio <= 1.0, ratio
    rep = json.loads((tmp_path / "cell" / "rep-01" / "result.json").read_text())
    assert rep["details"]["rate_mbps"] == pytest.approx(6.59)
    assert rep["details"]["cpu_bound"] is (ratio < 0.9), "the mark follows the 90 % bar"
    scenario = (tmp_path / "cell" / "rep-01" / "scenario.toml").read_text()
    assert "bernoulli" not in scenario, "the check runs at zero loss"


def test_pdcp_stalls_are_counted_from_dcemu_records(tmp_path):
    from types import SimpleNamespace

    from dclab.experiments.mquic_downloads import pdcp_counters, pdcp_stalls

    def rec(t_ms, starts, expiries):
        return json.dumps({"type": "interval", "t_ms": t_ms, "bearers": [
            {"name": "dc", "rx": {"timer_starts": starts, "timer_expiries": expiries, "discarded_late": 0}}]}) + "\n"

    stats = tmp_path / "dcemu-stats.jsonl"
    stats.write_text(rec(100, 2, 0) + rec(200, 5, 1))
    bed = SimpleNamespace(workdir=tmp_path, state={}, start_wall=1000.0)
    before = pdcp_counters(bed)
    assert before["timer_starts"] == 5
    with open(stats, "a") as f:
        f.write(rec(300, 9, 1) + rec(400, 12, 3) + '{"type": "interval", "t_ms": 5')  # a line still being written
    after = pdcp_counters(bed, after=1000.35)  # waits for the record ending at or after 350 ms
    assert pdcp_stalls(before, after).model_dump() == {"timer_starts": 7, "timer_expiries": 2, "discarded_late": 0}
    assert bed.state["stats_t_ms"] == 400


def test_dc_runs_count_stalls_and_record_them_finely():
    s = MQ.scenario(Scenario(), MQ.options(dc=True))
    assert s.legs == 2 and s.reordering and s.stats_interval_ms == 100
    assert MQ.scenario(Scenario(), MQ.options()).stats_interval_ms == 1000


@pytest.mark.root
@pytest.mark.slow
def test_direction_dc_downloads_meet_pdcp_stalls(tmp_path):
    """Over DC with reordering on and jittered legs, downloads meet reordering stalls."""
    r = CliRunner().invoke(app, ["run", "mquic", "--dc", "--sizes", "2400KB", "--reps", "2", "--json",
                                 "--out", str(tmp_path / "run")])
    assert r.exit_code == 0, r.output
    ds = [d for i in (1, 2) for d in json.loads((tmp_path / "run" / f"rep-{i:02d}" / "downloads.json").read_text())]
    assert all("pdcp_stalls" in d for d in ds)
    check_bound("mquic.dc_timer_starts_per_download", statistics.median(d["pdcp_stalls"]["timer_starts"] for d in ds))


def test_nfe_evidence_is_the_median_per_mode_and_variants_are_series_of_their_own():
    ds = [MquicDownload(mode="mquic", size=10, ok=True, completion_s=1.0, nfes=n, delay_exits=n - 1,
                        nfes_within_rtt=n - 2, syncs=1, first_nfe_kind=kind, first_nfe_group_cwnd=1000 * n)
          for n, kind in ((4, "delay"), (10, "delay"), (14, "loss"))]
    ds.append(MquicDownload(mode="mquic", size=10, ok=False))  # no log: not counted
    ds.append(MquicDownload(mode="1c", size=10, ok=True, completion_s=1.0, nfes=1, first_nfe_kind="loss"))
    rows = nfe_evidence(ds, ["1c", "mquic"])
    mq = rows[1]
    assert (mq.mode, mq.n, mq.nfes, mq.delay_exits, mq.nfes_within_rtt) == ("mquic", 3, 10, 9, 8)
    assert mq.first_delay_pct == pytest.approx(200 / 3) and mq.first_nfe_group_cwnd == 10000
    assert (rows[0].n, rows[0].first_delay_pct, rows[0].delay_exits) == (1, 0.0, None)
    assert mq.synchronized_pct is None and rows[0].synchronized_pct is None  # no counts; 1c never synchronizes
    from dclab.analysis.nfes import synchronized_pct

    def sync(mode, stop):
        return synchronized_pct(MquicDownload(mode=mode, size=1, stop_packets=stop, group_packets=1000))

    assert sync("mquic", 250) == 25.0
    assert sync("mquic", None) == 100.0  # never stopped
    assert sync("3c", None) is None
    t = evidence_table(ds, ["1c", "mquic"])
    assert t.rows[1][:4] == ["10 B", "mquic", "3", "10.0"] and t.failed == [False, False]
    base = {"preset": "domestic-low-loss", "cc": "reno"}
    def label(row: dict) -> str:
        return _series_label(runs([{"ok": 1, **row}], "mquic")[0])

    assert label({"options": base, "sweep": "none"}) == "domestic-low-loss, reno"
    variant = label({"options": {**base, "ss_exit": "hystart", "merge_rtt": True, "iw": 10, "scale": 0.5}, "sweep": "none"})
    assert variant == "domestic-low-loss, reno, ss_exit=hystart, merge_rtt=true, scale=0.5"
    assert label({"options": {**base, "iw": 30}, "sweep": "iw", "value": "30"}) == "domestic-low-loss, reno, iw=30"


def test_the_fidelity_campaign_changes_one_thing_per_group():
    c = cp.load("mquic-fidelity")
    runs = cp.plan(c, reps=1)
    assert len(runs) == len(c.groups) == 16
    assert {r.options.preset for r in runs} == {"domestic-low-loss", "domestic-high-loss"}
    assert {r.options.cc for r in runs} == {"reno"} and {r.options.sizes for r in runs} == {"6000KB"}
    defaults = MQ.options()
    changed = {}
    for g in c.groups:
        (r,) = cp.plan(cp.select_groups(c, [g["name"]]), reps=1)
        changed[g["name"]] = {k for k in ("params", "ss_exit", "merge_rtt", "iw", "scale")
                              if getattr(r.options, k) != getattr(defaults, k)}  # fmt: skip
    assert changed["low-aioquic"] == changed["high-aioquic"] == set()
    singles = {g.split("-", 1)[1]: c for g, c in changed.items() if g.startswith("low-")}
    assert all(len(c) == 1 for name, c in singles.items() if not name.startswith(("aioquic", "chromium")))
    assert singles["chromium"] == {"params", "ss_exit", "iw", "scale"}
    assert singles["chromium-merge"] == singles["chromium"] | {"merge_rtt"}


def test_the_summed_window_and_each_modes_median_download(tmp_path):
    from figure_checks import series

    from dclab.analysis.cwnd import aggregate
    from dclab.experiments.mquic import median_windows

    assert aggregate({"0": [(0.0, 4000), (1.0, 8000)], "1": [(0.5, 4000), (1.0, 2000)]}) == [
        (0.0, 4000), (0.5, 8000), (1.0, 10000)]  # fmt: skip

    def lines(group, cwnds):  # a join, then cwnd samples of two connections
        out = [{"time": 10.0, "group": group, "event": "join", "conn": c, "cwnd": 4800} for c in (0, 1)]
        out += [{"time": 10.0 + k * 0.1, "group": group, "event": "cwnd", "conn": k % 2, "cwnd": w}
                for k, w in enumerate(cwnds, start=1)]
        out.append({"time": 10.25, "group": group, "event": "nfe", "conn": 0, "action": "merged",
                    "before": {"0": 12000, "1": 4800}, "after": {"0": 12000, "1": 4800}})
        return out

    rows = []
    for rep, (mq, one) in enumerate([(1.0, 0.8), (2.0, 0.9), (3.0, 1.0)], start=1):
        run = tmp_path / f"rep-{rep}"
        run.mkdir()
        g_mq, g_1c = f"t-d{rep}-r{rep}-mquic-1000", f"t-d{rep}-r{rep}-1c-1000"
        (run / "mquic.jsonl").write_text("".join(json.dumps(x) + "\n" for x in
                                                 lines(g_mq, [12000 * rep, 24000]) + lines(g_1c, [6000, 6000])))
        ds = [{"mode": "mquic", "size": 1000, "ok": True, "completion_s": mq, "group": g_mq},
              {"mode": "1c", "size": 1000, "ok": True, "completion_s": one}]  # no group: found by its suffix
        rows.append(runs([{"ok": 1, "metrics": {"downloads": ds}}], "mquic")[0].model_copy(update={"run_path": run}))
    ax = panel(median_windows(rows, ["1c", "mquic"], tmp_path / "w.png", "t"), ylabel="summed cwnd (packets of 1200 B)")
    assert ax.legend[:2] == ["1c (0.900 s)", "mquic (2.000 s)"]  # the median of each mode
    assert series(ax, "mquic (2.000 s)", "line").y == pytest.approx((8.0, 40.0))  # 24000 + 24000 at the end
    from figure_checks import empty

    empty(median_windows(runs([{"ok": 1, "metrics": {"downloads": []}}], "mquic"), ["1c"], tmp_path / "e.png", "t"),
          "no successful download")


def test_the_papers_tables_per_location_and_controller():
    from dclab.experiments.mquic import paper_tables

    def row(cc, preset, mq, extra=None):
        ds = []
        for size, paper in ((125_000, 500_000), (1_500_000, 6_000_000)):
            for k in range(5):
                ds += [{"mode": "1c", "size": size, "paper_size": paper, "ok": True, "completion_s": 2.0 + k * 0.01},
                       {"mode": "3c", "size": size, "paper_size": paper, "ok": True, "completion_s": 1.0 + k * 0.01},
                       {"mode": "mquic", "size": size, "paper_size": paper, "ok": True, "completion_s": mq + k * 0.01}]
        return {"options": {"preset": preset, "cc": cc, **(extra or {})}, "sweep": "none", "metrics": {"downloads": ds},
                "ok": 1}

    rows = runs([row("reno", "domestic-high-loss", 1.5), row("bbr", "domestic-high-loss", 0.5),
                 row("reno", "international-low-loss", 1.0), row("reno", "domestic-high-loss", 1.0, {"merge_rtt": True})],
                "mquic")
    ((caption, t),) = paper_tables(rows)  # one location with two controllers; a lone controller gets none
    assert caption.startswith("domestic-high-loss: mquic's improvement")
    assert t.columns[:5] == ["size (paper's)", "reno vs 1c median", "reno vs 1c p95", "reno vs 3c median", "reno vs 3c p95"]
    assert t.columns[5] == "bbr vs 1c median" and len(t.columns) == 9
    assert [r[0] for r in t.rows] == ["500 KB", "6 MB"]  # the paper's sizes
    assert (t.rows[1][1], t.rows[1][3], t.rows[1][5]) == ("24.8", "-49.0", "74.3")  # (2.02 - 1.52) / 2.02 ...
