"""Completion-time statistics, improvements and figures on hand-made downloads and logs."""

import math

import numpy as np
import pytest
from figure_checks import check, empty, figure, panel, series, spans

from dclab.analysis.completion import (
    completion_cdfs,
    completion_table,
    completion_vs_first_nfe,
    gain_against,
    gain_table,
    improvement,
    size_label,
)
from dclab.analysis.cwnd import cwnd_over_time, cwnd_series, pick_group
from dclab.analysis.downloads import MquicDownload
from dclab.analysis.metrics import distribution, quantile


def dl(mode, size, t, ok=True, nfe=None):
    return MquicDownload(mode=mode, size=size, ok=ok, completion_s=t if ok else None, first_nfe_packets=nfe)


# ---------------------------------------------------------------------------------------
# Statistics

def test_distribution_of_1_to_100():
    d = distribution([float(v) for v in range(1, 101)])
    assert d.n == 100
    assert d.median == pytest.approx(50.5)
    assert d.p95 == pytest.approx(95.05)
    assert d.mean == pytest.approx(50.5)
    assert d.cov == pytest.approx(np.std(range(1, 101), ddof=1) / 50.5)  # sample std


def test_distribution_matches_numpy_and_skips_none():
    vals = [3.0, 1.0, None, 10.0, 7.5, float("nan"), 2.0]
    clean = [3.0, 1.0, 10.0, 7.5, 2.0]
    d = distribution(vals)
    assert d.n == 5
    assert d.median == pytest.approx(np.percentile(clean, 50))
    assert d.p95 == pytest.approx(np.percentile(clean, 95))
    assert quantile(sorted(clean), 0.25) == pytest.approx(np.percentile(clean, 25))


def test_distribution_degenerate():
    assert distribution([]).model_dump() == {"n": 0, "median": None, "p95": None, "mean": None, "cov": None}
    one = distribution([4.0, None])
    assert one.n == 1 and one.median == 4.0 and one.p95 == 4.0 and one.cov is None
    assert distribution([2.0, 4.0]).cov == pytest.approx(math.sqrt(2) / 3)


def test_size_label():
    assert size_label(100_000) == "100 KB"
    assert size_label(1_000_000) == "1 MB"
    assert size_label(1_500_000) == "1.5 MB"
    assert size_label(500) == "500 B"


# ---------------------------------------------------------------------------------------
# Tables

def _downloads():
    out = []
    for t in (1.0, 2.0, 3.0):  # baseline 1c at 100 KB: median 2.0, p95 2.9
        out.append(dl("1c", 100_000, t))
    for t in (0.5, 1.0, 1.5):  # mquic at 100 KB: median 1.0, p95 1.45
        out.append(dl("mquic", 100_000, t, nfe=int(t * 20)))
    out.append(dl("mquic", 100_000, None, ok=False))
    for t in (4.0, 6.0):  # 3c at 100 KB: slower than 1c
        out.append(dl("3c", 100_000, t))
    for t in (10.0, 20.0):  # 1 MB: only mquic and 3c, no 1c
        out.append(dl("mquic", 1_000_000, t))
        out.append(dl("3c", 1_000_000, t * 2))
    return out


def test_improvement_sign_and_value():
    assert improvement(2.0, 1.0) == pytest.approx(50.0)  # mode faster: positive
    assert improvement(2.0, 3.0) == pytest.approx(-50.0)  # mode slower: negative
    assert improvement(None, 1.0) is None and improvement(2.0, None) is None and improvement(0.0, 1.0) is None


def test_completion_table_rows_and_improvements():
    rows = completion_table(_downloads(), ["mquic", "3c"], ["1c", "3c"])
    assert [(r.size, r.mode) for r in rows] == [(100_000, "mquic"), (100_000, "3c"), (1_000_000, "mquic"),
                                                      (1_000_000, "3c")]
    mq = rows[0]
    assert mq.n == 3 and mq.failed == 1
    assert mq.median == pytest.approx(1.0) and mq.p95 == pytest.approx(1.45)
    assert mq.cov == pytest.approx(0.5)  # sample std 0.5 / mean 1.0
    assert set(mq.improvement) == {"1c", "3c"}
    assert mq.improvement["1c"].median == pytest.approx(50.0)
    assert mq.improvement["1c"].p95 == pytest.approx((2.9 - 1.45) / 2.9 * 100)
    assert mq.improvement["3c"].median == pytest.approx((5.0 - 1.0) / 5.0 * 100)
    three = rows[1]
    assert set(three.improvement) == {"1c"}  # not against itself
    assert three.improvement["1c"].median == pytest.approx(-150.0)  # 3c slower than 1c
    # No 1c downloads at 1 MB: improvements over it are None, over 3c they exist.
    big = rows[2]
    assert big.improvement["1c"].model_dump() == {"median": None, "p95": None}
    assert big.improvement["3c"].median == pytest.approx(50.0)


def test_completion_table_mode_without_downloads():
    rows = completion_table([dl("1c", 1000, 1.0)], ["mquic"], ["1c"])
    assert [r.model_dump() for r in rows] == [{"size": 1000, "mode": "mquic", "n": 0, "failed": 0, "median": None, "p95": None, "mean": None,
                     "cov": None, "improvement": {"1c": {"median": None, "p95": None}}}]


def test_gain_table():
    def at(mq_t):
        return [dl("1c", 1000, 2.0), dl("1c", 1000, 2.0), dl("mquic", 1000, mq_t), dl("mquic", 1000, mq_t)]

    rows = gain_table([(2, at(1.0)), (3, at(1.5)), (4, [dl("mquic", 1000, 1.0)])], "mquic", ["1c", "mquic"])
    assert [(r.x, r.baseline) for r in rows] == [(2, "1c"), (3, "1c"), (4, "1c")]
    assert rows[0].median == pytest.approx(50.0) and rows[0].p95 == pytest.approx(50.0)
    assert rows[1].median == pytest.approx(25.0)
    assert rows[0].n == 2 and rows[0].n_baseline == 2
    assert rows[2].median is None and rows[2].n_baseline == 0


# ---------------------------------------------------------------------------------------
# Figures

def test_figures_are_written(tmp_path):
    d = _downloads()
    cdf = figure(completion_cdfs(d, ["1c", "3c", "mquic"], "1c", tmp_path / "cdf.png", "completion"),
                 ["100 KB (1c median 2000 ms)", "1 MB"], "completion")
    # 100 KB over the 1c median (2 s); no 1c at 1 MB: seconds
    small = check(cdf.axes[0], xlabel="completion time / 1c median", ylabel="CDF of downloads",
                  legend=["1c (n=3)", "3c (n=2)", "mquic (n=3)"], lines=3, vlines=[1.0], y=(0.0, 1.0))
    assert [(s.x, s.y) for s in small.series] == [(spans([0.5, 1.5]), (0, 1)), (spans([2.0, 3.0]), (0, 1)),
                                                   (spans([0.25, 0.75]), (0, 1))]
    assert [s.n for s in small.series] == [4, 3, 4], "each download a step, from 0"
    big = check(cdf.axes[1], xlabel="completion time (s), no 1c median", legend=["3c (n=2)", "mquic (n=2)"], lines=2,
                vlines=[])
    assert [s.x for s in big.series] == [spans([20, 40]), spans([10, 20])]

    nfe = panel(completion_vs_first_nfe(d, ["1c", "3c", "mquic"], tmp_path / "nfe.png", "vs NFE", baseline="1c"),
                title="vs NFE", xlabel="packets sent before the first NFE", ylabel="completion time (s)",
                legend=["1c, 100 KB", "3c, 100 KB", "3c, 1 MB", "mquic, 100 KB", "mquic, 1 MB"], scatters=5, lines=0,
                texts=["no NFE"], vlines=[(30 + 34.5) / 2], x=(10.0, 34.5), y=(0.5, 40.0))
    assert series(nfe, "mquic, 100 KB").x == spans([10, 20, 30]) and series(nfe, "mquic, 100 KB").y == spans([0.5, 1.5])
    assert series(nfe, "1c, 100 KB").x == (34.5, 34.5), "no NFE: the column at the right edge (30 x 1.15)"
    alone = panel(completion_vs_first_nfe(d, ["mquic"], tmp_path / "nfe_abs.png", "vs NFE"), legend=["mquic, 100 KB", "mquic, 1 MB"],
                  scatters=2, ylabel="completion time (s)")
    assert [s.y for s in alone.series] == [spans([0.5, 1.5]), spans([10, 20])]

    points = [(n, [x for x in d if x.mode != "mquic"] + [dl("mquic", 100_000, 0.4 * n)]) for n in (2, 3, 4)]
    gain = figure(gain_against(points, "mquic", ["1c", "3c"], tmp_path / "gain.png", "gain", "connections"),
                  ["median completion time", "p95 completion time"], "gain")
    check(gain.axes[0], ylabel="improvement of mquic (%)", legend=["100 KB vs 1c", "100 KB vs 3c"], hlines=[0.0])
    for ax, (base_1c, base_3c) in zip(gain.axes, ((2.0, 5.0), (2.9, 5.9))):  # 1c and 3c: median, p95
        check(ax, xlabel="connections", lines=2, xticks=["2", "3", "4"], x=(2, 4))
        assert [s.label for s in ax.series] == ["100 KB vs 1c", "100 KB vs 3c"], "no 1 MB line: no mquic at 1 MB"
        for s, base in zip(ax.series, (base_1c, base_3c)):
            assert s.y == spans([(base - 0.4 * n) / base * 100 for n in (2, 3, 4)])


def test_figures_for_degenerate_input(tmp_path):
    failed = [dl("1c", 1000, None, ok=False), dl("mquic", 1000, None, ok=False)]
    empty(completion_cdfs(failed, ["1c", "mquic"], "1c", tmp_path / "a.png", "none ok"), "no successful downloads", "none ok")
    empty(completion_vs_first_nfe(failed, ["1c", "mquic"], tmp_path / "b.png", "none ok", baseline="1c"),
          "no successful downloads", "none ok")
    empty(gain_against([(2, failed)], "mquic", ["1c"], tmp_path / "c.png", "none ok", "n"),
          "no improvement to show (missing downloads)", "none ok")
    one = [dl("mquic", 1000, 1.0), dl("mquic", 1000, 2.0)]  # one mode only, baseline absent
    panel(completion_cdfs(one, ["mquic"], "1c", tmp_path / "d.png", "one mode"), title="1 KB", legend=["mquic (n=2)"],
          xlabel="completion time (s), no 1c median", lines=1, vlines=[], x=(1.0, 2.0))
    panel(completion_vs_first_nfe(one, ["mquic"], tmp_path / "e.png", "one mode, no NFE", baseline="1c"),
          legend=["mquic"], ylabel="completion time (s)", scatters=1, texts=["no NFE"], x=(1.0, 1.0), y=(1.0, 2.0))
    empty(completion_cdfs([], [], None, tmp_path / "f.png", "empty"), "no successful downloads", "empty")
    empty(cwnd_over_time([], tmp_path / "g.png", "empty log"), "no data", "empty log")


# ---------------------------------------------------------------------------------------
# Congestion windows

def _log():
    return [
        {"time": 100.0, "group": "g1", "event": "join", "conn": 0, "n": 2, "cwnd": 12000, "iw": 12000},
        {"time": 100.1, "group": "g1", "event": "nfe", "conn": 0, "action": "none", "i": 1, "kind": "loss",
         "before": {"0": 24000}, "after": {"0": 12000}},
        {"time": 50.0, "group": "g2", "event": "join", "conn": 0, "n": 2, "cwnd": 12000, "iw": 12000},
        {"time": 50.0, "group": "g2", "event": "join", "conn": 1, "n": 2, "cwnd": 12000, "iw": 12000},
        {"time": 50.2, "group": "g2", "event": "cwnd", "conn": 1, "cwnd": 36000, "ssthresh": None, "in_slow_start": True},
        {"time": 50.3, "group": "g2", "event": "nfe", "conn": 1, "action": "sync", "i": 1, "kind": "loss", "gamma": 0.5,
         "before": {"0": 24000, "1": 48000}, "after": {"0": 18000, "1": 18000}},
        {"time": 50.5, "group": "g2", "event": "round", "conn": 0, "action": "mean", "before": {"0": 20000, "1": 30000},
         "after": {"0": 25000, "1": 25000}, "spread": 1.5},
        {"time": 50.6, "group": "g2", "event": "done", "nfes": 1, "first_nfe": 1},
        {"time": 70.0, "group": "g3", "event": "round", "conn": 0, "action": "mean", "before": {"0": 1}, "after": {"0": 1}},
    ]


def test_cwnd_plot_picks_the_first_synchronized_group(tmp_path):
    lines = _log()
    assert pick_group(lines) == "g2"  # g1 only reacted alone; g2 synchronized first
    assert pick_group(lines, "g1") == "g1"
    assert pick_group([d for d in lines if d["group"] == "g1"]) == "g1"  # none synchronized: the first
    assert pick_group([]) is None
    s = cwnd_series(lines, "g2")
    assert list(s) == ["0", "1"]
    assert s["1"] == [(0.0, 12000.0), pytest.approx((0.2, 36000.0)), pytest.approx((0.3, 48000.0)),
                      pytest.approx((0.3, 18000.0)), pytest.approx((0.5, 30000.0)), pytest.approx((0.5, 25000.0))]
    assert s["0"][0] == (0.0, 12000.0) and s["0"][-1] == pytest.approx((0.5, 25000.0))
    ax = panel(cwnd_over_time(lines, tmp_path / "cwnd.png", "cwnd"), title="cwnd (group g2)",
               xlabel="time since the group's first line (s)", ylabel="cwnd (packets of 1200 B)",
               legend=["conn 0", "conn 1", "NFE", "nfe sync", "round mean", "sum"], vlines=[0.3, 0.5])
    assert [s.y for s in ax.labelled()[:2]] == [spans(v / 1200 for _, v in s["0"]), spans(v / 1200 for _, v in s["1"])]
    assert series(ax, "NFE").y == (40.0, 40.0), "on conn 1, at its cwnd before the reaction (48000 B)"
    assert ax.lines == 6 and ax.x == pytest.approx((0.0, 0.6)), "conns, the NFE, each conn held to the group's last line, the sum"
    assert series(ax, "sum").y[0] == pytest.approx(20.0), "the group's window: 2 x 12000 B at the start"
    panel(cwnd_over_time(lines, tmp_path / "cwnd_g1.png", "cwnd", group="g1"), title="cwnd (group g1)",
          legend=["conn 0", "NFE"], lines=2, vlines=[], y=(10.0, 20.0))
    empty(cwnd_over_time(lines, tmp_path / "cwnd_none.png", "cwnd", group="absent"), "no data for group absent", "cwnd")
