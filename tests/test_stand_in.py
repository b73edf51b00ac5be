"""Stand-in models on the simulation backend (dclab/dcemu/sim_models.py): a stack or
controller without a model of its own is refused unless a model is named for it, and a run
on a stand-in has its own key, records the stand-in, and shows it wherever its stack is
shown. No root: every run here is simulated."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import run_dclab
from typed_rows import runs

from dclab.analysis import figures, stacks
from dclab.analysis.stand_in import stack_label
from dclab.campaign import plan as cp
from dclab.campaign import twins as v
from dclab.campaign.plan import CampaignFileError
from dclab.dcemu.sim_models import COVERAGE
from dclab.endpoints import STACKS, get_stack
from dclab.experiments import get_experiment
from dclab.scenario import Scenario, build

MODELLED = "the simulation models aioquic reno, cubic, bbr; aioquic-2020 reno; tcp reno, cubic"
WIDE = {**os.environ, "COLUMNS": "200"}  # rich tables unwrapped


def one_line(text: str) -> str:
    return " ".join(text.split())


def test_the_table_has_one_row_for_every_stack_and_controller():
    pairs = [(r.stack, r.cc) for r in COVERAGE]
    assert sorted(pairs) == sorted((s, cc) for s in STACKS for cc in get_stack(s).ccs)
    assert len(set(pairs)) == len(pairs)
    assert {(r.stack, r.cc): r.model.name for r in COVERAGE if r.model} == {
        ("aioquic", "reno"): "aioquic", ("aioquic", "cubic"): "aioquic", ("aioquic", "bbr"): "aioquic",
        ("aioquic-2020", "reno"): "aioquic-2020", ("tcp", "reno"): "tcp", ("tcp", "cubic"): "tcp"}


@pytest.mark.parametrize("args, why", [
    (["--stack", "ngtcp2"], f"ngtcp2 cubic has no model of its own ({MODELLED}). To run it on another model anyway, "
                            f'name that model: --stand-in ngtcp2=aioquic (its results are labelled "ngtcp2 (aioquic model)")'),
    (["--stack", "quic-go"], f"quic-go reno has no model of its own ({MODELLED}). To run it on another model anyway, "
                             f'name that model: --stand-in quic-go=aioquic (its results are labelled "quic-go (aioquic model)")'),
    (["--stack", "tcp", "--cc", "bbr"], f"tcp bbr has no model of its own ({MODELLED}). To run it on another model "
                                        f"anyway, name that model: --stand-in tcp:bbr=dclab-bbr (its results are "
                                        f'labelled "tcp (dclab-bbr model)")'),
    (["--stack", "ngtcp2", "--cc", "bbr2"], f"ngtcp2 bbr2 has no model of its own ({MODELLED}), and no model has bbr2 "
                                            f"to stand in for it: run it with --backend emu"),
])
def test_what_has_no_model_is_refused_before_anything_starts(tmp_path, args, why):
    r = run_dclab("run", "throughput", "--backend", "sim", *args, "--out", str(tmp_path / "x"), timeout=60)
    assert r.returncode == 2, r.stderr
    assert f"Error: backend sim: {why}" in one_line(r.stderr)
    assert not (tmp_path / "x").exists()


def test_a_stand_in_is_refused_on_the_emulator_where_no_flow_needs_it_and_across_transports(tmp_path):
    out = ["--out", str(tmp_path / "x")]
    r = run_dclab("run", "throughput", "--stack", "ngtcp2", "--stand-in", "ngtcp2=aioquic", *out, timeout=60)
    assert r.returncode == 2
    assert "Invalid value for --stand-in: only with --backend sim" in one_line(r.stderr)
    r = run_dclab("run", "throughput", "--backend", "sim", "--stand-in", "ngtcp2=aioquic", *out, timeout=60)
    assert r.returncode == 2
    assert ("--stand-in ngtcp2=aioquic: no flow of this run is ngtcp2 without a model of its own (its flows: "
            "aioquic reno)") in one_line(r.stderr)
    r = run_dclab("run", "throughput", "--backend", "sim", "--stack", "ngtcp2", "--stand-in", "ngtcp2=tcp", *out, timeout=60)
    assert r.returncode == 2
    assert "Invalid value for --stand-in: ngtcp2=tcp: the tcp model is of TCP, ngtcp2 is a QUIC stack" in one_line(r.stderr)
    assert not (tmp_path / "x").exists()
    env = {**os.environ, "DCLAB_RESULTS": str(tmp_path)}
    r = run_dclab("campaign", "run", "smoke", "--stand-in", "ngtcp2=aioquic", env=env, timeout=60)
    assert r.returncode == 2 and "--stand-in is for --backend sim" in r.stderr
    assert not (tmp_path / "smoke").exists()


def test_a_run_on_a_stand_in_is_labelled_and_records_it(tmp_path):
    out = tmp_path / "run"
    r = run_dclab("run", "throughput", "--backend", "sim", "--stack", "ngtcp2", "--stand-in", "ngtcp2=aioquic",
                  "--size", "2MB", "--out", str(out), env=WIDE, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "throughput (simulated): ngtcp2 (aioquic model) cubic, x 1, bw [20.0, 20.0] Mbit/s" in one_line(r.stderr)
    [row] = [[c.strip() for c in line.split("│")[1:-1]] for line in r.stdout.splitlines() if "│" in line]  # the body
    assert row[:3] == ["ngtcp2 (aioquic model)", "cubic", "quic-default"]
    rep = json.loads((out / "rep-01" / "result.json").read_text())
    assert rep["stack"] == "ngtcp2"
    assert rep["environment"]["stand_in"] == {"ngtcp2": "aioquic"}
    assert rep["environment"]["models"] == {"ngtcp2": "aioquic (stand-in)"}
    assert json.loads((out / "options.json").read_text())["stand_in"] == {"ngtcp2": "aioquic"}
    workload = (out / "rep-01" / "workload.toml").read_text()
    assert 'quic = "aioquic-1.7"' in workload
    assert "app_packet_us = 0.0" in workload, "ngtcp2's own host (not measured), not aioquic's 161 µs client"

    r = run_dclab("run", "throughput", "--backend", "sim", "--stack", "ngtcp2", "--stand-in", "ngtcp2=aioquic",
                  "--size", "2MB", "--json", "--out", str(tmp_path / "json"), timeout=120)
    got = json.loads(r.stdout)
    assert (got["stack"], got["stand_in"], got["stack_label"]) == ("ngtcp2", {"ngtcp2": "aioquic"}, "ngtcp2 (aioquic model)")

    exp = get_experiment("throughput")
    options = exp.options(stack="ngtcp2", backend="sim", stand_in="ngtcp2=aioquic", size="2MB")
    from dclab.experiments.base import RepResult

    result = RepResult(experiment="throughput", seed=1, ok=True, stack="ngtcp2", cc="cubic", host_config="quic-default")
    assert exp.run_title(build(), options, result) == "ngtcp2 (aioquic model) cubic, 2 MB, batch 100, split 50:50"
    emu = exp.options(stack="ngtcp2", size="2MB")
    assert exp.run_title(build(), emu, result) == "ngtcp2 cubic, 2 MB, batch 100, split 50:50"


def test_a_twin_on_a_stand_in_has_a_key_of_its_own(monkeypatch):
    monkeypatch.setattr(cp, "SIM_MODEL", 6)  # the keys below are of stores written with models version 6
    runs = cp.plan(cp.load("smoke"))
    ng = next(r for r in runs if r.config.stack == "ngtcp2" and r.experiment == "throughput")
    tcp = next(r for r in runs if r.config.stack == "tcp" and r.experiment == "throughput")
    assert v.sim_twin(ng) is None, "no model, no stand-in: no twin"
    twin = v.sim_twin(ng, {"ngtcp2": "aioquic"})
    assert twin is not None and twin.options.stand_in == {"ngtcp2": "aioquic"}
    # What stores hold from before stand-ins were recorded: ngtcp2 silently on aioquic's model.
    silent = cp.run_key(ng.experiment, ng.config, ng.sweep, ng.value, ng.rep, ng.scenario,
                        ng.options.model_copy(update={"backend": "sim"}).model_dump(mode="json"))
    assert silent == "bc7040e0c99212a8"
    assert twin.key not in {ng.key, silent}
    assert twin.label == "smoke: throughput ngtcp2 (aioquic model) cubic large-buffer batch=10 rep 1"
    # Naming a stand-in leaves the runs that do not need it as they were.
    assert v.sim_twin(tcp, {"ngtcp2": "aioquic"}).key == v.sim_twin(tcp).key == "eaee721de1a2cbb0"  # type: ignore[union-attr]


def test_a_groups_stand_in_reaches_only_the_runs_that_need_it(tmp_path):
    f = tmp_path / "g.toml"
    group = ('[[group]]\nexperiments = ["throughput"]\nconfigs = [{ stack = "aioquic" }, { stack = "ngtcp2" }]\n'
             'sweeps = [{ name = "batch", values = [10] }]\n')
    f.write_text('reps = 1\n' + group + 'options = { throughput = { backend = "sim", stand_in = "ngtcp2=aioquic" } }\n')
    with_stand_in = {r.config.stack: r for r in cp.plan(cp.load(str(f)))}
    f.write_text('reps = 1\n' + group + 'options = { throughput = { backend = "sim" } }\n')
    plain = {r.config.stack: r for r in cp.plan(cp.load(str(f)))}
    assert with_stand_in["aioquic"].options.stand_in == {} and with_stand_in["aioquic"].key == plain["aioquic"].key
    assert with_stand_in["ngtcp2"].options.stand_in == {"ngtcp2": "aioquic"}
    assert with_stand_in["ngtcp2"].key != plain["ngtcp2"].key
    f.write_text('reps = 1\n' + group + 'options = { throughput = { stand_in = "ngtcp2=aioquic" } }\n')
    with pytest.raises(CampaignFileError, match=r"group\[0\]\.options\.throughput: stand_in: only with --backend sim"):
        cp.load(str(f))


def test_twins_leave_out_what_has_no_model_and_say_why():
    smoke = cp.plan(cp.load("smoke"))
    t = v.twins(smoke)
    assert len(t.pairs) == 16
    assert t.left_out() == ["backend sim: 16 of the 32 runs have no model of their own (ngtcp2 cubic: name a stand-in "
                            "with --stand-in ngtcp2=aioquic); left out"]
    t = v.twins(smoke, {"ngtcp2": "aioquic", "quinn": "aioquic"})
    assert len(t.pairs) == 32 and t.left_out() == ["--stand-in quinn=aioquic: no run here needs it"]
    assert v.twins(cp.plan(cp.load("stacks"))).left_out() == [
        "backend sim: 72 of the 141 runs have no model of their own (ngtcp2 cubic, quic-go reno, quinn cubic: name a "
        "stand-in with --stand-in ngtcp2=aioquic,quic-go=aioquic,quinn=aioquic); left out"]
    assert v.twins(cp.plan(cp.load("download-smoke"))).left_out()[0].endswith("runs only run on real stacks (download); left out")
    assert v.stand_in_hint([("ngtcp2", "bbr2"), ("tcp", "bbr")]) == (
        "tcp bbr: name a stand-in with --stand-in tcp:bbr=dclab-bbr; ngtcp2 bbr2: no model has bbr2")


def test_validate_leaves_out_what_has_no_model_and_labels_a_stand_in(tmp_path):
    env = {**os.environ, "DCLAB_RESULTS": str(tmp_path)}
    r = run_dclab("validate", "smoke", "--sim-only", "--reps", "1", "--json", env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert ("backend sim: 8 of the 16 runs have no model of their own (ngtcp2 cubic: name a stand-in with --stand-in "
            "ngtcp2=aioquic); left out") in one_line(r.stderr)
    assert set(json.loads(r.stdout)["by_config"]) == {"throughput: tcp cubic", "fairness: tcp cubic"}
    r = run_dclab("validate", "smoke", "--sim-only", "--reps", "1", "--json", "--stand-in", "ngtcp2=aioquic", env=env,
                  timeout=300)
    assert r.returncode == 0, r.stderr
    assert "have no model of their own" not in r.stderr
    assert set(json.loads(r.stdout)["by_config"]) == {
        "throughput: tcp cubic", "fairness: tcp cubic", "throughput: ngtcp2 cubic large-buffer (sim: aioquic model)",
        "fairness: ngtcp2 cubic large-buffer (sim: aioquic model)"}


# ---------------------------------------------------------------------------------------
# The label in tables and figures, from store rows

DEFAULT = Scenario().model_dump(mode="json")


def row(key: str, stack: str, value: float, goodput: float, stand_in: dict | None, backend: str = "sim",
        cc: str = "cubic", host: str = "quic-large") -> dict:
    options = {"backend": backend, "size": 5_000_000}
    if stand_in is not None:
        options["stand_in"] = stand_in
    return {"run_key": key, "experiment": "throughput", "sweep": "batch", "param": "batch", "value": f"{value:g}",
            "value_num": value, "stack": stack, "cc": cc, "host_config": host, "rep": 1, "ok": True,
            "metrics": {"goodput_mbps": goodput}, "options": options, "scenario": {**DEFAULT, "batch": value},
            "flows": [{"name": "dc", "stack": stack, "cc": cc, "goodput_mbps": goodput}], "environment": {}}


ROWS = [row("t1", "tcp", 10, 30.0, {}, host="tcp"), row("t2", "tcp", 100, 31.0, {}, host="tcp"),
        row("n1", "ngtcp2", 10, 20.0, {"ngtcp2": "aioquic"}), row("n2", "ngtcp2", 100, 22.0, {"ngtcp2": "aioquic"})]


def legend_of(draw, monkeypatch) -> list[str]:
    """The legend texts of the figure ``draw()`` makes (read before it is saved)."""
    texts: list[str] = []
    save = figures._save

    def capture(fig, path):
        texts.extend(t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts())
        texts.extend(ax.get_title() for ax in fig.axes)
        return save(fig, path)

    monkeypatch.setattr(figures, "_save", capture)
    monkeypatch.setattr(stacks, "_save", capture)
    draw()
    return texts


def test_the_label_is_in_the_sweep_table_and_the_figures_legend(tmp_path, monkeypatch):
    exp = get_experiment("throughput")
    typed = runs(ROWS)
    t = exp.sweep_table(typed)
    assert sorted({line[1] for line in t.rows}) == ["ngtcp2 (aioquic model) cubic quic-large (simulated)", "tcp cubic tcp (simulated)"]
    legend = legend_of(lambda: exp.sweep_figure(typed, tmp_path / "s.png", "throughput: batch", "batch"), monkeypatch)
    assert sorted(legend[:2]) == ["ngtcp2 (aioquic model) cubic quic-large (simulated)", "tcp cubic tcp (simulated)"]
    # Alone in a sweep, a stand-in still names its stack (a plain sweep shows only the host configuration).
    assert set(figures.series_of(typed[2:]).values()) == {"ngtcp2 (aioquic model) cubic quic-large (simulated)"}
    assert set(figures.series_of(typed[:2]).values()) == {"tcp (simulated)"}
    emulated = runs([row("e", "ngtcp2", 10, 21.0, None, backend="emu")])
    assert set(figures.series_of(emulated).values()) == {"quic-large"}
    fair = [{**r, "experiment": "fairness", "stack": "dc=ngtcp2,sc1=tcp,sc2=tcp", "metrics": {"jfi": 0.9},
             "flows": [{"name": f, "mean_mbps": 10.0} for f in ("dc", "sc1", "sc2")]} for r in ROWS[2:]]
    fair = runs([{**r, "options": {k: v for k, v in r["options"].items() if k != "size"}} for r in fair])
    titles = legend_of(lambda: get_experiment("fairness").sweep_figure(fair, tmp_path / "f.png", "f", "batch"), monkeypatch)
    assert "dc=ngtcp2 (aioquic model),sc1=tcp,sc2=tcp cubic quic-large (simulated)" in titles


def test_the_label_is_in_the_stacks_comparison(tmp_path, monkeypatch):
    heads = {"throughput": stacks.Headline("goodput_mbps", "goodput", "Mbit/s")}
    header, lines, _ = stacks.comparison_table(runs(ROWS), heads)
    assert [line[0] for line in lines] == ["ngtcp2 (aioquic model)", "tcp"]
    legend = legend_of(lambda: stacks.comparison_figure(runs(ROWS), heads, tmp_path / "c.png", "stacks"), monkeypatch)
    assert legend[:2] == ["ngtcp2 (aioquic model)", "tcp"]


def test_runs_stored_before_stand_ins_were_recorded_are_labelled_as_what_they_were():
    legacy = row("old", "ngtcp2", 10, 20.0, None)  # a simulated ngtcp2 run with no stand_in recorded
    bbr = row("bbr", "tcp", 10, 20.0, None, cc="bbr", host="tcp")
    emu = row("emu", "ngtcp2", 10, 20.0, None, backend="emu")
    old, old_bbr, real = runs([legacy, bbr, emu])
    assert old.options.stand_in == old.stand_in == {"ngtcp2": "aioquic"} and old.stack_shown == "ngtcp2 (aioquic model)"
    assert old_bbr.stand_in == {"tcp:bbr": "dclab-bbr"} and old_bbr.stack_shown == "tcp (dclab-bbr model)"
    assert real.stand_in == {} and real.stack_shown == "ngtcp2"
    assert stack_label("dc=ngtcp2,sc1=tcp,sc2=tcp", {"tcp:bbr": "dclab-bbr"}) == (
        "dc=ngtcp2,sc1=tcp (dclab-bbr model),sc2=tcp (dclab-bbr model)")


def test_the_report_shows_a_stand_in_in_its_tables(tmp_path):
    from html_tables import Tables

    from dclab.campaign.report import build_report
    from dclab.campaign.store import RunRecord, Store

    store = Store(tmp_path / "store.sqlite")
    for r in ROWS:
        store.add(RunRecord(**{k: r[k] for k in ("run_key", "experiment", "sweep", "param", "value", "value_num", "stack",
                                                 "cc", "host_config", "rep", "ok", "scenario", "metrics", "environment",
                                                 "options")},
                            flows=r["flows"], run_dir="", machine="m", started_at="t0", finished_at="t1"))
    index = build_report(store, tmp_path / "report", "stand-ins")
    p = Tables()
    p.feed(Path(index).read_text())
    assert {line[1] for line in p.tables["data throughput"][1:]} == {"ngtcp2 (aioquic model) cubic quic-large (simulated)",
                                                                     "tcp cubic tcp (simulated)"}
    assert [line[0] for line in p.tables["data stacks"][1:]] == ["ngtcp2 (aioquic model)", "tcp"]
