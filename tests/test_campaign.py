"""Sweep expansion, campaign files and planning, sharding (pure, no root)."""

from __future__ import annotations

import hashlib

import pytest

from dclab.campaign import plan as cp
from dclab.campaign.plan import CampaignFileError
from dclab.campaign.runner import calibration, pending
from dclab.campaign.store import RunRecord, Store
from dclab.campaign.sweeps import SWEEPS, expand, frange, parse_param
from dclab.errors import OptionError
from dclab.scenario import Scenario, ScenarioError

# The run keys dclab planned before experiments became plug-ins (measured with the
# previous release's `campaign.plan`): stores written then must resume, not restart.
# Runs without a trace only: those keys held the trace's absolute path, so they differed
# in every checkout (now the path from the repository's root).
OLD_KEYS = {
    "smoke": (32, "f847f7c64f6418114a5ee06d25eafa35031f487f80f8a356f2561bcd9f7c8bef"),
    "paper": (15610, "b0baf9260b4e76be6bd6f3cd9c24d1b205e0250ebdca85d5a22025ed5527a8a0"),
}


def test_ranges_are_inclusive_and_clean():
    assert frange(1, 5, 0.5) == [1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5]
    assert frange(0, 0.2, 0.01)[-1] == 0.2 and len(frange(0, 0.2, 0.01)) == 21
    with pytest.raises(OptionError):
        frange(5, 1, 1)


def test_reference_sweeps_match_the_study():
    assert SWEEPS["batch"].defaults == [2, 10, 50, 100, 150, 200, 250, 300, 350, 400, 450, 500]
    assert SWEEPS["split"].defaults == [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100]
    assert SWEEPS["size"].defaults == [10, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]
    assert len(SWEEPS["loss-dup"].defaults) == 26 and SWEEPS["loss-dup"].defaults[-1] == 5


def test_parse_param_forms():
    assert parse_param("batch=2,10,50") == ("batch", [2, 10, 50])
    assert parse_param("bw-ratio=1:2:0.5") == ("bw-ratio", [1, 1.5, 2])
    assert parse_param("loss")[1] == SWEEPS["loss"].defaults
    with pytest.raises(OptionError, match="unknown parameter 'nope'"):
        parse_param("nope=1")
    with pytest.raises(OptionError, match="expected a list"):
        parse_param("batch=a,b")


def test_expansion_applies_the_factor_only():
    base = Scenario()
    pts = {p.value: p for p in expand("bw-ratio-matched", [1, 5], base)}
    assert pts[5].scenario.bw == [33.33, 6.67] and pts[5].scenario.split == [83.33, 16.67]
    assert pts[1].scenario.bw == [20, 20] and pts[1].scenario.batch == 100
    d = expand("delay-ratio-high", [4], base)[0].scenario
    assert d.delay == [160, 40] and d.bw == [20, 20]
    ld = expand("loss-dup", [1.2], base)[0].scenario
    assert ld.loss == [1.2, 1.2] and ld.duplicate
    assert expand("size", [200], base)[0].options == {"size": 200_000_000}
    assert expand("batch", [10], base)[0].options == {}
    with pytest.raises(ScenarioError, match="sweep batch=0"):
        expand("batch", [0], base)


def test_paper_campaign_is_the_whole_matrix():
    c = cp.load("paper")
    runs = cp.plan(c)
    keys = [r.key for r in runs]
    assert len(keys) == len(set(keys))
    configs = {(r.config.stack, r.config.cc, r.config.udp_buffer) for r in runs}
    assert configs == {("aioquic", "reno", "default"), ("aioquic", "reno", "large"), ("tcp", "cubic", "default"),
                       ("ngtcp2", "reno", "default"), ("ngtcp2", "reno", "large"), ("ngtcp2", "cubic", "default"),
                       ("ngtcp2", "cubic", "large")}
    sweeps = {(r.experiment, r.sweep) for r in runs}
    # Not the paper's: those of the mquic and LTE studies (streams: the LTE study's experiment 4) and of the
    # fidelity campaign (docs/fidelity.md), EN-DC's (docs/endc.md) and the AQM campaign's (queue).
    not_the_papers = ("none", "conns", "iw", "radio", "distance", "distance-mean", "streams", "t-reordering",
                      "pdcp-processing", "nr-distance", "lte-distance", "nr-distance-matched",
                      "lte-distance-matched", "x2-delay", "report-period", "target-delay", "fallback-ms", "queue")
    for name in [n for n in SWEEPS if n not in not_the_papers]:
        assert ("throughput", name) in sweeps
        assert ("fairness", name) in sweeps or name == "size"
    assert {r.rep for r in runs} == set(range(1, 11))
    traced = [r for r in runs if r.scenario.trace]
    assert traced and {r.sweep for r in traced} == {"batch", "split", "delay-ratio-low", "delay-ratio-high", "loss", "loss-dup"}
    # Fairness runs dominate: 180 s each plus setup.
    assert sum(r.estimate_s for r in runs) > 80 * 3600


@pytest.mark.parametrize("name", sorted(OLD_KEYS))
def test_run_keys_are_those_of_earlier_stores(name):
    keys = [r.key for r in cp.plan(cp.load(name)) if not r.scenario.trace]
    n, digest = OLD_KEYS[name]
    assert len(keys) == n
    assert hashlib.sha256("\n".join(keys).encode()).hexdigest() == digest


def test_trace_runs_have_the_same_key_in_every_checkout(monkeypatch, tmp_path):
    from dclab.campaign import plan as plan_module

    c = cp.load("paper")
    traced = [r for r in cp.plan(c) if r.scenario.trace][:5]
    assert traced
    elsewhere = tmp_path / "other-checkout"
    elsewhere.mkdir()
    (elsewhere / "data").symlink_to(plan_module.ROOT / "data")
    monkeypatch.setattr(plan_module, "ROOT", elsewhere)
    moved = [r for r in cp.plan(c) if r.scenario.trace][:5]
    assert [str(r.scenario.trace) for r in moved] != [str(r.scenario.trace) for r in traced]
    assert [r.key for r in moved] == [r.key for r in traced]


def test_options_beyond_the_first_keys_change_the_key():
    c = cp.load("smoke")
    base = [r for r in cp.plan(c) if r.experiment == "throughput"][0]
    c.experiment_options["throughput"] = {**c.experiment_options["throughput"], "timeout": 77}
    other = [r for r in cp.plan(c) if r.experiment == "throughput"][0]
    assert other.key != base.key and other.options.timeout == 77


def test_how_dcemu_runs_enters_the_key_only_when_asked():
    c = cp.load("smoke")
    base = [r for r in cp.plan(c) if r.experiment == "throughput"][0]
    assert base.options.emulator_args() == ()
    c.experiment_options["throughput"] = {**c.experiment_options["throughput"], "tun_offload": "none", "spin_us": 0}
    other = [r for r in cp.plan(c) if r.experiment == "throughput"][0]
    assert other.key != base.key and other.options.emulator_args() == ("--spin-us", "0", "--tun-offload", "none")


def test_campaign_options_are_validated_by_the_experiment(tmp_path):
    f = tmp_path / "x.toml"
    f.write_text('[throughput]\nsize = "12XB"\n[[group]]\nconfigs = [{stack = "tcp"}]\nsweeps = ["batch"]\n')
    with pytest.raises(CampaignFileError, match=r"\[throughput\]: size: expected a size"):
        cp.load(str(f))
    f.write_text('[fairness]\nwindow = 3\n[[group]]\nconfigs = [{stack = "tcp"}]\nsweeps = ["batch"]\n')
    with pytest.raises(CampaignFileError, match="window: Extra inputs are not permitted"):
        cp.load(str(f))


def test_shards_partition_the_plan():
    runs = cp.plan(cp.load("smoke"))
    parts = [cp.shard(runs, f"{i}/3") for i in (1, 2, 3)]
    assert sorted(r.key for p in parts for r in p) == sorted(r.key for r in runs)
    assert max(len(p) for p in parts) - min(len(p) for p in parts) <= 1
    with pytest.raises(OptionError, match="--shard"):
        cp.shard(runs, "4/3")


def test_pending_skips_stored_runs(tmp_path):
    c = cp.load("smoke")
    store = Store(tmp_path / "s.sqlite")
    runs, todo = pending(c, store, None, None)
    assert len(todo) == len(runs)
    r0 = runs[0]
    store.add(RunRecord(run_key=r0.key, experiment=r0.experiment, stack="tcp", cc="cubic", host_config="tcp", rep=1,
                        ok=True, scenario={}, metrics={"elapsed_s": 20.0, "estimate_s": 10.0}, environment={},
                        run_dir="x", machine="m", started_at="t", finished_at="t"))
    _, todo = pending(c, store, None, None)
    assert len(todo) == len(runs) - 1 and r0.key not in {r.key for r in todo}
    assert calibration(store) == {r0.experiment: 2.0}


def test_bad_campaign_files_are_named(tmp_path):
    f = tmp_path / "x.toml"
    f.write_text('[[group]]\nconfigs = [{stack = "tcp"}]\nsweeps = ["nope"]\n')
    with pytest.raises(CampaignFileError, match="unknown sweep 'nope'"):
        cp.load(str(f))
    with pytest.raises(CampaignFileError, match="no campaign 'missing'"):
        cp.load("missing")


def test_sweep_plan_and_errors(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from dclab.cli import app

    monkeypatch.setenv("DCLAB_RESULTS", str(tmp_path))
    r = CliRunner().invoke(app, ["sweep", "--param", "bw-ratio=1:2:0.5", "--config", "tcp:cubic", "--reps", "2", "--plan"])
    assert r.exit_code == 0, r.output
    assert "6 runs, 0 done, 6 to do" in " ".join(r.output.split())
    r = CliRunner().invoke(app, ["sweep", "--param", "batch=0", "--plan"])
    assert r.exit_code == 2 and "sweep batch=0: batch: must be at least 1" in r.output
    r = CliRunner().invoke(app, ["sweep", "--param", "batch=10", "--config", "tcp:vegas", "--plan"])
    assert r.exit_code == 2 and "tcp offers cubic, reno, bbr (got 'vegas')" in r.output


def test_sweep_sets_experiment_options(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from dclab.cli import app

    monkeypatch.setenv("DCLAB_RESULTS", str(tmp_path))
    r = CliRunner().invoke(app, ["sweep", "--param", "size=1,2", "--experiment", "throughput", "--experiment", "fairness",
                                 "--set", "fairness.duration=30", "--config", "tcp", "--reps", "1", "--plan"])
    assert r.exit_code == 0, r.output
    # size applies to throughput only (fairness marks its size unsweepable)
    assert "2 runs, 0 done, 2 to do" in " ".join(r.output.split())
    r = CliRunner().invoke(app, ["sweep", "--param", "batch=10", "--set", "fairness.window=3", "--plan"])
    assert r.exit_code == 2 and "fairness has no option 'window'" in r.output


def test_dry_runs_and_refused_campaigns_create_no_store(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from dclab.cli import app

    monkeypatch.setenv("DCLAB_RESULTS", str(tmp_path / "results"))
    r = CliRunner().invoke(app, ["sweep", "--param", "batch=10,20", "--config", "tcp", "--plan", "--name", "dry"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(app, ["campaign", "plan", "smoke"])
    assert r.exit_code == 0, r.output
    f = tmp_path / "bad.toml"
    f.write_text('[[group]]\nconfigs = [{stack = "tcp"}]\nsweeps = [{ name = "batch", values = [0] }]\n')
    r = CliRunner().invoke(app, ["campaign", "run", str(f)])
    assert r.exit_code == 2 and "sweep batch=0" in r.output, r.output
    assert not (tmp_path / "results").exists() or not list((tmp_path / "results").rglob("store.sqlite"))


def test_distance_sweeps_give_the_lte_levels_and_their_mean_rates():
    from dclab import lte
    from dclab.campaign.sweeps import expand
    from dclab.scenario import ScenarioError, build

    cell = build(link="lte:good", delay=[12.0], loss=[0.5])
    assert [str(p.scenario.link) for p in expand("distance", [250, 2500], cell)] == ["lte:250m", "lte:2500m"]
    wired = build(bw=[20.0], split=[100.0], delay=[12.0], loss=[0.5])
    assert [p.scenario.bw for p in expand("distance-mean", [750, 1500], wired)] == [
        [lte.CAPACITY_MBPS["medium"]], [lte.CAPACITY_MBPS["poor"]]]
    with pytest.raises(ScenarioError, match=r"sweep distance=300: link: LTE level one of .* \(got .300m.\)"):
        expand("distance", [300], cell)
    with pytest.raises(ScenarioError, match=r"--link: LTE level one of .* \(got .300m.\)"):
        expand("distance-mean", [300], wired)


def test_group_patterns_pick_part_of_a_campaign(tmp_path):
    from click.testing import CliRunner

    from dclab.cli import app

    c = cp.load("lte-study")
    levels = cp.select_groups(c, ("levels-*",))
    assert [g["name"] for g in levels.groups] == ["levels-aioquic-reno", "levels-aioquic-cubic", "levels-ngtcp2-reno",
                                                  "levels-ngtcp2-cubic"]
    assert {r.sweep for r in cp.plan(levels)} == {"distance"}
    both = cp.select_groups(c, ("levels-aioquic-reno", "mix-ngtcp2-cubic2"))
    assert len(both.groups) == 2 and cp.select_groups(c, ()) is c
    with pytest.raises(OptionError, match="--group: no group of lte-study matches 'level' \\(groups: levels-aioquic-reno"):
        cp.select_groups(c, ("level",))
    r = CliRunner().invoke(app, ["campaign", "plan", "lte-study", "--group", "mix-*-cubic5"])
    assert r.exit_code == 0, r.output
    assert "10 runs" in " ".join(r.output.split()), r.output  # two mixes of 1 QUIC + 5 TCP, 5 repetitions each


def test_the_fidelity_campaign_separates_the_causes():
    runs = cp.plan(cp.load("fidelity"))
    loss = [r for r in runs if r.experiment == "throughput"]
    assert {(r.scenario.reordering, r.scenario.t_reordering, r.scenario.loss_at, r.scenario.pdcp_processing)
            for r in loss if r.sweep == "loss"} == {(True, 200.0, "after-rate", 0.0), (False, 200.0, "after-rate", 0.0),
                                                    (True, 200.0, "before-rate", 0.0), (True, 200.0, "after-rate", 1.0)}
    assert {r.value for r in loss if r.sweep == "loss"} == {0.0, 0.05, 0.1, 0.2}
    assert {r.options.size for r in loss} == {100_000_000}
    # t-Reordering swept at 0.2 % loss; never infinite (a lost COUNT would hold the bearer for good).
    waits = [r for r in loss if r.sweep == "t-reordering"]
    assert {r.scenario.t_reordering for r in waits} == {0.0, 20.0, 100.0, 500.0}
    assert {tuple(r.scenario.loss) for r in waits} == {(0.2, 0.2)}
    era = {(r.config.stack, r.config.udp_buffer) for r in loss if r.scenario.t_reordering == 200.0}
    assert era == {("aioquic", "large"), ("aioquic-2020", "large"), ("tcp", "default")}
    dup = [r for r in runs if r.experiment == "fairness"]
    assert all(r.scenario.duplicate for r in dup) and {r.value for r in dup} == {0.0, 1.0, 2.0, 5.0}
    assert {r.config.stack for r in dup} == {"aioquic", "aioquic-2020", "tcp"}
    assert len({r.scenario.seed for r in loss}) == 1 and {r.rep for r in loss} == set(range(1, 11))
    # Reordering on and off x 3 stacks x 4 losses, t-Reordering x 3 x 4, loss placement and processing x 2 stacks
    # x 2 losses, 3 x 4 fairness points.
    assert len(runs) == (3 * 3 * 4 + 2 * 2 * 2 + 3 * 4) * 10 and len({r.key for r in runs}) == len(runs)


def test_inf_t_reordering_in_a_campaign_group_means_none():
    from dclab.scenario import build

    assert build(t_reordering="inf").t_reordering is None and build(t_reordering="infinity").t_reordering is None
