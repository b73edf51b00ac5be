"""The download experiment (dclab/experiments/download.py): options refused before anything
starts (a resume mode the stack lacks through Stack.check), the download order, per-size
statistics and figures from synthetic records, the campaign, and a short real run (root)."""

from __future__ import annotations

import dataclasses
import json
import statistics

import pytest
from click.testing import CliRunner
from figure_checks import check, empty, figure, spans
from measured import check_bound
from typed_rows import runs

from dclab.analysis import timings
from dclab.analysis.downloads import TimedDownload
from dclab.campaign import plan as cp
from dclab.cli import app
from dclab.endpoints import get_stack
from dclab.experiments import get_experiment
from dclab.experiments.download import labelled_downloads, order, timing_table, workload
from dclab.experiments.reps import preflight
from dclab.scenario import Scenario

DL = get_experiment("download")


def _refused(args: list[str], tmp_path) -> str:
    r = CliRunner().invoke(app, ["run", "download", *args, "--out", str(tmp_path / "never")])
    assert r.exit_code == 2, r.output
    assert not (tmp_path / "never").exists()
    return " ".join(r.output.split())


@pytest.mark.parametrize(("args", "message"), [
    (["--sizes", "64kB,,1MB"], "--sizes: expected sizes separated by ','"),
    (["--sizes", "10"], "--sizes: 1 to 10 sizes, each at least 1KB"),
    (["--sizes", "64kB,64000"], "--sizes: each size once"),
    (["--sizes", ",".join(f"{k}kB" for k in range(1, 12))], "1 to 10 sizes"),
    (["--sizes", "64 apples"], "--sizes: expected a size like"),
    (["--count", "0"], "--count"),
    (["--count", "1001"], "less than or equal to 1000"),
    (["--timeout", "0.5"], "--timeout"),
    (["--resume", "1rtt"], "--resume"),
    (["--stack", "quiche"], "--stack"),
    (["--cc", "vegas"], "--cc: aioquic offers"),
])
def test_bad_options_are_refused_before_anything_starts(args, message, tmp_path):
    assert message in _refused(args, tmp_path)


@pytest.mark.parametrize(("lacks", "resume", "message"), [
    ({"resumption": False, "zero_rtt": False}, "ticket", "--resume ticket: tcp cannot run this workload: session resumption (not offered)"),
    ({"resumption": True, "zero_rtt": False}, "0rtt", "--resume 0rtt: tcp cannot run this workload: 0-RTT (not offered)"),
])
def test_a_resume_mode_the_stack_lacks_is_refused(lacks, resume, message, tmp_path, monkeypatch):
    # Whatever tcp offers today: the refusal comes from its declared capabilities (Stack.check).
    cls = type(get_stack("tcp"))
    monkeypatch.setattr(cls, "capabilities", dataclasses.replace(cls.capabilities, **lacks))
    assert message in _refused(["--stack", "tcp", "--resume", resume], tmp_path)
    assert preflight(DL, Scenario(), DL.options(stack="tcp")).flows[0].stack == "tcp", "resume off needs nothing"


def test_each_resume_mode_is_its_workload():
    off, ticket, zero = workload(64_000, "off"), workload(64_000, "ticket"), workload(64_000, "0rtt")
    assert (off.resumption, off.zero_rtt) == (False, False) and off.objects == (64_000,) and off.connections == 1
    assert (ticket.resumption, ticket.zero_rtt) == (True, False)
    assert (zero.resumption, zero.zero_rtt) == (True, True) and not zero.preconnect
    o = DL.options(resume="0rtt", sizes="64kB,2MB")
    plan = preflight(DL, Scenario(), o)  # dcemu itself accepts the scenario
    (f,) = plan.flows
    assert f.workload == workload(2_000_000, "0rtt") and f.stack == "aioquic" and f.cc == "reno"
    assert [(b.name, b.mode, b.legs) for b in plan.bearers] == [("sc", "sc", (1,))]
    assert DL.scenario(Scenario(), o).stats_interval_ms == 1000
    assert DL.options().size_list() == (64_000, 256_000, 512_000, 1_000_000, 2_000_000), "the study's five files"


def test_every_round_has_every_size_and_no_size_always_follows_another():
    sizes = (1, 2, 3, 4, 5)
    seq = order(sizes, 10, seed=7, rep=1)
    assert [k for k, _ in seq] == [k for k in range(1, 11) for _ in sizes]
    for k in range(1, 11):
        assert sorted(s for r, s in seq if r == k) == list(sizes)
    followers: dict[int, set[int]] = {}
    for (_, a), (_, b) in zip(seq, seq[1:], strict=False):
        followers.setdefault(a, set()).add(b)
    assert all(len(v) > 1 for v in followers.values()), followers
    assert order(sizes, 10, 7, 1) == seq, "the same seed and repetition give the same order"
    assert order(sizes, 10, 7, 2) != seq, "another repetition, another order"


def _d(mode, size, total, hs, fb, ok=True, resumed=None, early=None, startup=None):
    return TimedDownload(mode=mode, size=size, ok=ok, completion_s=total if ok else None, handshake_s=hs,
                         first_byte_s=fb, resumed=resumed, early_data=early, startup_s=startup)


def test_per_size_statistics_of_synthetic_records():
    ds = [_d("0rtt", 1000, 0.1 * (i + 1), 0.02, 0.03 + 0.001 * i, resumed=True, early=i % 4 != 0, startup=0.5)
          for i in range(20)]
    ds += [_d("0rtt", 1000, None, None, None, ok=False), _d("0rtt", 5000, 1.0, None, 0.05, resumed=False)]
    rows = timings.timing_table(ds, ["0rtt"])
    assert [(r.size, r.n, r.failed) for r in rows] == [(1000, 20, 1), (5000, 1, 0)]
    small = rows[0]
    # 0.1 .. 2.0 s: median 1.05, p95 at rank 18.05 of 0..19 (linear): 1.9 + 0.05 * 0.1
    assert small.completion_s.median == pytest.approx(1.05)
    assert small.completion_s.p95 == pytest.approx(1.905)
    assert small.handshake_s.median == pytest.approx(0.02)
    assert small.first_byte_s.median == pytest.approx(0.0395)
    assert small.transfer_s.median == pytest.approx(1.05 - 0.0395, abs=0.001)
    assert small.startup_s.median == pytest.approx(0.5)
    assert small.resumed == 1.0 and small.early_data == pytest.approx(15 / 20)
    large = rows[1]
    assert large.resumed == 0.0 and large.early_data is None, "the stack could not tell"
    assert large.handshake_s.n == 0 and large.startup_s.median is None
    # an unknown handshake counts as 0: the phases still add up to the download time
    assert timings.phases(ds[-1]) == pytest.approx((0.0, 0.05, 0.95))
    # 0.5-RTT data before the handshake's end: no negative part
    assert timings.phases(_d("x", 1, 0.2, 0.06, 0.05)) == pytest.approx((0.05, 0.0, 0.15))
    assert timings.phases(ds[20]) is None
    t = timing_table(rows, series=False)
    assert t.columns[:3] == ["size", "time med (s)", "p95"] and t.columns[-1] == "start-up med"
    assert t.rows[0][:3] == ["1 KB", "1.050", "1.905"] and t.rows[0][-3:] == ["100 %", "75 %", "0.500"]
    assert t.failed == [False, False]


def _row(key, stack, resume, downloads, ok=True):
    return {"run_key": key, "experiment": "download", "stack": stack, "cc": "cubic", "host_config": "default",
            "sweep": "none", "value": "0", "value_num": 0.0, "ok": ok, "rep": 1, "options": {"resume": resume},
            "metrics": {"downloads": [d.model_dump(mode="json") for d in downloads]}}  # as the store keeps them


def test_sweep_series_tables_and_figures(tmp_path):
    fast = [_d("0rtt", s, 0.1 * s / 1000, 0.02, 0.021, resumed=True, early=True) for s in (64_000, 256_000)] * 3
    slow = [_d("off", s, 0.2 * s / 1000, 0.05, 0.08, resumed=False, early=False) for s in (64_000, 256_000)] * 3
    raw = [_row("a", "aioquic", "0rtt", fast), _row("b", "aioquic", "off", slow)]
    rows = runs(raw)
    ds, series = labelled_downloads(rows)
    assert series == ["resume off", "resume 0rtt"] and len(ds) == 12
    t = DL.sweep_table(rows)
    assert t.columns[0] == "series" and [r[:2] for r in t.rows] == [
        ["resume off", "64 KB"], ["resume 0rtt", "64 KB"], ["resume off", "256 KB"], ["resume 0rtt", "256 KB"]]
    assert t.rows[1][2] == "6.400" and t.rows[1][-1] == "100 %"
    rows = runs([*raw, _row("c", "tcp", "off", slow)])
    assert labelled_downloads(rows)[1] == ["aioquic cubic, resume off", "aioquic cubic, resume 0rtt",
                                           "tcp cubic, resume off"]
    ((path, caption),) = DL.sweep_figures(rows, tmp_path, "download-none", "download: none", "-")
    assert "p95" in caption
    times, phases = figure(path, ["", ""], "download: none").axes
    labels = ["aioquic cubic, resume off", "aioquic cubic, resume 0rtt", "tcp cubic, resume off"]
    check(times, legend=labels, lines=3, xlabel="file size", xticks=["64 KB", "256 KB"], y=(6.4, 51.2))
    assert [s.y for s in times.series] == [(12.8, 51.2), (6.4, 25.6), (12.8, 51.2)], "medians: 0.2 s (off), 0.1 s per kB"
    check(phases, legend=["handshake", "first byte - handshake", "transfer", *labels], bars=3 * 2 * 3,
          ylabel="median of each phase (s)", xticks=["64 KB", "256 KB"])
    tops = [s.y[1] for s in phases.series]  # per series, size, then its phases stacked
    assert tops[0::3] == pytest.approx([0.05, 0.05, 0.02, 0.02, 0.05, 0.05]), "handshakes"
    assert tops[2::3] == pytest.approx([12.8, 51.2, 6.4, 25.6, 12.8, 51.2]), "each stack tops at its download time"
    empty(DL.sweep_figures(runs([_row("d", "aioquic", "off", [], ok=False)]), tmp_path, "empty", "t", "-")[0][0],
          "no successful downloads", "t")


def test_the_campaigns_plan():
    runs = cp.plan(cp.load("download"))
    assert {r.experiment for r in runs} == {"download"}
    assert {(r.config.stack, r.options.resume) for r in runs} == {
        (stack, mode) for stack in ("aioquic", "ngtcp2", "tcp") for mode in ("off", "ticket", "0rtt")}
    assert {str(r.scenario.link) for r in runs} == {"lte:250m"} and not any(r.scenario.jitter_reorders for r in runs)
    assert len({r.key for r in runs}) == len(runs) == 45
    smoke = cp.plan(cp.load("download-smoke"))
    assert {(r.config.stack, r.options.resume) for r in smoke} == {
        (stack, mode) for stack in ("aioquic", "tcp") for mode in ("off", "ticket", "0rtt")}
    assert sum(r.estimate_s for r in smoke) < 300, "a few minutes"


@pytest.mark.root
def test_a_short_real_run_with_0rtt(tmp_path):
    """aioquic, two small sizes, two of each, resume 0rtt over the 250 m cell: every download
    resumed with early data accepted; handshake <= first byte <= last byte."""
    out = tmp_path / "run"
    r = CliRunner().invoke(app, ["run", "download", "--sizes", "64kB,128kB", "--count", "2", "--resume", "0rtt",
                                 "--link", "lte:250m", "--delay", "12", "--json",
                                 "--out", str(out)])
    assert r.exit_code == 0, r.output
    res = json.loads(r.output.strip().splitlines()[-1])
    assert res["failed"] == 0 and res["downloads"] == 4 and res["failed_downloads"] == 0
    assert [(row["size"], row["n"], row["resumed"], row["early_data"]) for row in res["table"]] == [
        (64_000, 2, 1.0, 1.0), (128_000, 2, 1.0, 1.0)]
    downloads = json.loads((out / "rep-01" / "downloads.json").read_text())
    assert sorted(d["size"] for d in downloads) == [64_000, 64_000, 128_000, 128_000]
    for d in downloads:
        assert d["ok"] and d["bytes"] == d["size"] and d["resumed"] and d["early_data"]
        assert 0 < d["handshake_s"] <= d["first_byte_s"] <= d["completion_s"], d
        check_bound(f"download.zero_rtt_{d['size'] // 1000}kb_s", d["completion_s"])
    # 0-RTT: the first byte comes one RTT (24 ms of core network and the cell) after the request
    check_bound("download.zero_rtt_first_byte_median_s", statistics.median(d["first_byte_s"] for d in downloads))
    rep = json.loads((out / "rep-01" / "result.json").read_text())
    assert rep["details"]["warmup"]["ok"], "the fresh testbed's first download, not measured"
    assert rep["details"]["jitter"] == "order-preserving, cov 0.1", "a cell's default keeps packet order"
    assert rep["metrics"]["download_s"] == pytest.approx(res["table"][1]["completion_s"]["median"])
    info = figure(out / "downloads.png", ["", ""])
    assert info.suptitle.startswith("download aioquic") and "resume 0rtt, lte:250m" in info.suptitle
    times, phases = info.axes
    medians = [row["completion_s"]["median"] for row in res["table"]]
    check(times, legend=["0rtt"], lines=1, xticks=["64 KB", "128 KB"], x=(64_000, 128_000), y=spans(medians))
    assert times.series[0].n == 2, "a median per size"
    check(phases, legend=["handshake", "first byte - handshake", "transfer"], bars=2 * 3)
    # two downloads per size: the medians of the phases add up to the median download time
    assert [s.y[1] for s in phases.series[2::3]] == pytest.approx(medians)
