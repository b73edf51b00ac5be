"""Figures, the HTML report and the result commands, on synthetic stores (no root)."""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
import statistics
import subprocess
from pathlib import Path

import matplotlib.image as mpimg
import numpy as np
import pytest
from click.testing import CliRunner
from figure_checks import check, empty, figure, panel, spans
from html_tables import Tables
from PIL import Image
from typed_rows import runs

from dclab.analysis import figures
from dclab.analysis.figure_info import AxesInfo, FigureInfo
from dclab.campaign.report import build_report, html_table, markdown_table, sweep_label
from dclab.campaign.store import RunRecord, Store
from dclab.cli.results import plot, report, results
from dclab.experiments.base import Table

FLOWS = ["dc", "sc1", "sc2"]
V1_SCHEMA = (Path(__file__).parent / "data" / "store_v1_schema.sql").read_text()

BATCHES = [2.0, 100.0, 500.0]
SPLITS = [("30:70", 30.0), ("50:50", 50.0), ("70:30", 70.0)]
FAIR_STACK = "dc=aioquic,sc1=tcp,sc2=tcp"


def write_stats(run_dir: Path, t0_ms: float, seconds: float, interval_ms: float, bearers: list[str], seed: int) -> None:
    """A synthetic dcemu-stats.jsonl: interval records from t0 - 0.5 s, then a summary."""
    rnd = random.Random(seed)
    run_dir.mkdir(parents=True, exist_ok=True)
    lines = []
    t = t0_ms - 500.0
    while t <= t0_ms + seconds * 1e3:
        legs = [{"name": f"leg{i}", "downlink": {"out_mbps": rnd.uniform(12, 20), "queue_packets": rnd.randint(0, 100)}}
                for i in (1, 2)]
        bs = [{"name": b, "delivered_mbps": rnd.uniform(5, 15) * (1.5 if b == "dc" else 1.0)} for b in bearers]
        lines.append(json.dumps({"type": "interval", "t_ms": t, "legs": legs, "bearers": bs}))
        t += interval_ms
    lines.append(json.dumps({"type": "summary", "t_ms": t, "legs": [], "bearers": []}))
    (run_dir / "dcemu-stats.jsonl").write_text("\n".join(lines) + "\n")
    (run_dir / "result.json").write_text(json.dumps({"ok": True}))


def env(host: str, machine: str) -> dict:
    rmem = {"quic-default": "212992", "quic-large": "33554432", "tcp": "-"}[host]
    return {"kernel": "6.1.0-test", "python": "3.11.2", "git_commit": "abc123", "dclab": "0.1.0",
            "stacks": {"aioquic": "1.2.0"}, "host_settings": {"net.core.rmem_default": rmem}, "machine": machine}


def flow(name: str, **kw) -> dict:
    return {"name": name, "stack": "aioquic", "cc": "reno", "bearer": name, "port": 4433, **kw}


def make_store(root: Path, v1: bool = False) -> Store:
    """A throughput sweep (batch: 2 host configs x 3 values x 3 reps, one failed run) and a
    fairness sweep (split: 2 host configs x 3 values x 2 reps), with run directories. With
    ``v1`` the same runs are written as dclab wrote stores before the per-flow table, and
    the store is then opened (migrated)."""
    records: list[RunRecord] = []
    rnd = random.Random(1)
    common = dict(machine="m1", started_at="2024-05-01T10:00:00", finished_at="2024-05-01T10:00:30", campaign="t")
    for host in ("quic-default", "quic-large"):
        for v in BATCHES:
            for rep in (1, 2, 3):
                key = f"tp-{host}-{v:g}-{rep}"
                run_dir = root / "runs" / key
                ok = not (host == "quic-large" and v == 500.0 and rep == 3)
                if ok:
                    write_stats(run_dir, 2000.0, 3.5, 10.0, ["dc"], seed=hash(key) & 0xFFFF)
                g = round(rnd.uniform(20, 38), 3) if ok else None
                records.append(RunRecord(
                    run_key=key, experiment="throughput", sweep="batch", param="batch", value=f"{v:g}", value_num=v,
                    stack="aioquic", cc="reno", host_config=host, rep=rep, ok=ok, error=None if ok else "timeout <&>",
                    scenario={"bw": [20.0, 20.0], "trace": None, "batch": v}, metrics={"t0_ms": 2000.0, "goodput_mbps": g},
                    flows=[flow("dc", goodput_mbps=g)], options={"size": 5_000_000},
                    environment=env(host, "m1"), run_dir=str(run_dir), **common))
    for host in ("quic-large", "tcp"):
        for text, v in SPLITS:
            for rep in (1, 2):
                key = f"fa-{host}-{v:g}-{rep}"
                run_dir = root / "runs" / key
                write_stats(run_dir, 1000.0, 8.0, 50.0, ["dc", "sc1", "sc2"], seed=hash(key) & 0xFFFF)
                dc, sc1, sc2 = (round(rnd.uniform(5, 20), 3) for _ in range(3))
                jfi = (dc + sc1 + sc2) ** 2 / (3 * (dc * dc + sc1 * sc1 + sc2 * sc2))
                records.append(RunRecord(
                    run_key=key, experiment="fairness", sweep="split", param="split", value=text, value_num=v,
                    stack=FAIR_STACK, cc="reno", host_config=host, rep=rep, ok=True,
                    flows=[flow("dc", mean_mbps=dc), flow("sc1", mean_mbps=sc1), flow("sc2", mean_mbps=sc2)],
                    scenario={"bw": [20.0, 20.0], "trace": None},
                    metrics={"t0_ms": 1000.0, "window_s": 8.0, "jfi": jfi}, options={"duration": 8.0},
                    environment=env(host, "m2"), run_dir=f"runs/{key}",  # relative to the store
                    **(common | {"machine": "m2"})))
    path = root / "store.sqlite"
    if not v1:
        store = Store(path)
        for r in records:
            store.add(r)
        return store
    db = sqlite3.connect(path)
    db.executescript(V1_SCHEMA)
    for r in records:
        d = r.__dict__
        fl = {f["name"]: f.get("mean_mbps") for f in r.flows}
        db.execute(
            "INSERT INTO runs VALUES (" + ",".join("?" * 27) + ")",
            (d["run_key"], d["campaign"], d["experiment"], d["sweep"], d["param"], d["value"], d["value_num"], d["stack"],
             d["cc"], d["host_config"], d["rep"], r.options.get("size"), r.options.get("duration"), int(d["ok"]),
             d["error"], r.metrics.get("goodput_mbps"), r.metrics.get("jfi"), fl.get("dc"), fl.get("sc1"),
             fl.get("sc2"), json.dumps(d["scenario"]), json.dumps(d["metrics"]), json.dumps(d["environment"]),
             d["run_dir"], d["machine"], d["started_at"], d["finished_at"]))
    db.commit()
    db.close()
    return Store(path)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Store:
    return make_store(tmp_path_factory.mktemp("campaign"))


@pytest.fixture(scope="module")
def built(store, tmp_path_factory) -> Path:
    return build_report(store, tmp_path_factory.mktemp("report") / "report", "synthetic <campaign>")


def assert_png(path: Path, min_bytes: int = 10_000) -> np.ndarray:
    assert path.is_file(), path
    assert path.stat().st_size > min_bytes, (path, path.stat().st_size)
    with Image.open(path) as im:
        im.verify()
    img = mpimg.imread(path)
    assert img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 100
    assert len(np.unique(img.reshape(-1, img.shape[2])[:, :3], axis=0)) > 10  # not blank
    return img


FAIR_LABELS = ["DC (both legs)", "SC leg 1", "SC leg 2"]  # the fairness experiment's names of FLOWS


def links_figure(path: Path) -> FigureInfo:
    """A synthetic throughput run's leg-usage figure (dclab/analysis/run_figure.py): the whole
    3.5 s after the request (write_stats: 12 to 20 Mbit/s every 10 ms) a line per leg, each
    leg's 20 Mbit/s dashed; an event strip that says it has none; the first 3 s at every
    record. Its title is the figure's suptitle."""
    info = figure(path, ["whole transfer (3.5 s, 10 ms intervals)", "", "the first 3 s (10 ms intervals)"])
    whole, strip, first = info.axes
    check(strip, texts=["no drops, expiries or sender losses recorded"], lines=0, scatters=0)
    for ax, end in ((whole, 3.5), (first, 3.01)):
        check(ax, ylabel="leg throughput\n(Mbit/s)", lines=2, hlines=[20.0, 20.0])
        for s in ax.series:
            assert s.label in ("leg1", "leg2") and s.x == pytest.approx((-0.01, end)) and 12 <= s.y[0] <= s.y[1] <= 20, s
    return info


def flows_figure(path: Path, labels: list[str]) -> AxesInfo:
    """A synthetic fairness run's flows over its 8 s window (write_stats: every 50 ms, the DC
    flow at 7.5 to 22.5 Mbit/s, the SC flows at 5 to 15)."""
    ax = panel(path, xlabel="time since start (s)", ylabel="flow throughput (Mbit/s)", legend=labels, lines=3)
    for s, top in zip(ax.series, (22.5, 15, 15), strict=True):
        assert s.n == 161 and s.x == (0.0, 8.0) and top / 3 <= s.y[0] <= s.y[1] <= top, s
    return ax


def mean_of(rows: list[dict], read, **where) -> list[float]:
    """Per swept value (ascending), the mean of ``read(row)`` over the successful rows with
    the fields ``where`` gives."""
    mine = [r for r in rows if r["ok"] and all(r[k] == v for k, v in where.items())]
    return [statistics.mean(read(r) for r in mine if r["value_num"] == v) for v in sorted({r["value_num"] for r in mine})]


def flow_mbps(name: str):
    return lambda r: next(f["mean_mbps"] for f in r["flows"] if f["name"] == name)


def parse(index: Path) -> Tables:
    p = Tables()
    p.feed(index.read_text())
    return p


# ---------------------------------------------------------------------------------------
# Figures

def test_throughput_figure(store, tmp_path):
    rows = store.rows("experiment = 'throughput'")
    path = figures.metric_vs_param(runs(rows), "goodput_mbps", "goodput (Mbit/s)", tmp_path / "tp.png", xlabel="batch")
    assert path == tmp_path / "tp.png"
    assert_png(path)
    ax = panel(path, title="goodput_mbps: batch", xlabel="batch", ylabel="goodput (Mbit/s)", lines=2,
               legend=["quic-default", "quic-large"])
    for s in ax.series:  # the means over the repetitions at each batch size (a failed run left out)
        assert s.n == 3 and s.y == spans(mean_of(rows, lambda r: r["metrics"]["goodput_mbps"], host_config=s.label))
    assert sweep_label(runs(rows)) == "DC batch size (packets)"
    assert sweep_label(runs([{"ok": 1, "sweep": "", "param": "loss-dup"}])).startswith("random loss per")
    assert sweep_label(runs([{"ok": 1, "sweep": "x", "param": "my_param"}])) == "my_param"
    assert set(figures.series_of(runs(rows)).values()) == {"quic-default", "quic-large"}


def test_fairness_figure_writes_jfi_above_groups(store, tmp_path):
    rows = store.rows("experiment = 'fairness'")
    path = figures.flow_bars(runs(rows), FLOWS, tmp_path / "fa.png", "fairness", annotate="jfi")
    assert_png(path)
    info = figure(path, ["quic-large", "tcp"], "fairness")  # a panel per series
    assert [ax.legend for ax in info.axes] == [FLOWS, []] and info.axes[1].xlabel == "value"
    for ax in info.axes:
        check(ax, bars=3, lines=0, xticks=[text for text, _ in SPLITS], ylabel="throughput (Mbit/s)")
        for s in ax.series:  # each flow's mean per split
            assert s.n == 3 and s.y == spans(mean_of(rows, flow_mbps(s.label), host_config=ax.title))
        jfis = mean_of(rows, lambda r: r["metrics"]["jfi"], host_config=ax.title)
        assert ax.texts == [f"JFI {j:.2f}" for j in jfis], "above each group, in the splits' order"


def test_series_names_stack_and_cc_when_they_differ(store):
    rows = store.rows("experiment = 'throughput'")
    rows[0] = rows[0] | {"stack": "ngtcp2", "cc": "cubic"}
    labels = set(figures.series_of(runs(rows)).values())
    assert "ngtcp2 cubic quic-default" in labels and "aioquic reno quic-large" in labels


def test_time_series_figures(store, tmp_path):
    [fa] = store.rows("run_key = 'fa-tcp-50-1'")
    run_dir = store.path.parent / fa["run_dir"]
    assert_png(figures.flows_over_time(run_dir, 1000.0, tmp_path / "flows.png", window_s=8.0))
    ax = flows_figure(tmp_path / "flows.png", FLOWS)  # no labels given: the bearers' names
    check(ax, title="per-flow throughput: fa-tcp-50-1", x=(0.0, 8.0))
    [tp] = store.rows("run_key = 'tp-quic-default-2-1'")
    assert_png(figures.link_usage(Path(tp["run_dir"]), 2000.0, [20.0, 20.0], tmp_path / "links.png"))
    assert links_figure(tmp_path / "links.png").suptitle == "link utilization: tp-quic-default-2-1"


def test_figures_without_data_say_so(tmp_path):
    failed = {"run_key": "x", "experiment": "throughput", "sweep": "loss", "param": "loss", "value": "0.1",
              "value_num": 0.1, "stack": "aioquic", "cc": "reno", "host_config": "tcp", "rep": 1, "ok": 0,
              "metrics": {"goodput_mbps": None}, "flows": []}
    for path, title, message in (
            (figures.metric_vs_param([], "goodput_mbps", "goodput", tmp_path / "a.png"), "goodput_mbps", "no successful runs"),
            (figures.metric_vs_param(runs([failed]), "goodput_mbps", "goodput", tmp_path / "b.png"), "goodput_mbps: loss",
             "no successful runs"),
            (figures.flow_bars(runs([failed | {"experiment": "fairness"}]), FLOWS, tmp_path / "c.png", annotate="jfi"),
             "flows: loss", "no successful runs"),
            (figures.flows_over_time(tmp_path / "missing", 0.0, tmp_path / "d.png"), "per-flow throughput: missing",
             "no dcemu statistics for this run"),
            (figures.link_usage(tmp_path / "missing", 0.0, [20.0, 20.0], tmp_path / "e.png"), "link utilization: missing",
             "no dcemu statistics for this run")):
        assert_png(path, min_bytes=3_000)
        empty(path, message, title)


# ---------------------------------------------------------------------------------------
# Report

def test_report_has_every_figure_type_and_the_files_exist(built):
    html = built.read_text()
    p = parse(built)
    assert "synthetic &lt;campaign&gt;" in html and "<script" not in html
    assert "throughput-batch.png" in p.imgs and "fairness-split.png" in p.imgs
    assert any(s.startswith("links-throughput-batch-") for s in p.imgs)
    assert any(s.startswith("flows-fairness-split-") for s in p.imgs)
    for cls in ("fig-sweep fig-throughput", "fig-sweep fig-fairness", "fig-links", "fig-flows"):
        assert f'class="{cls}"' in html
    # 2 sweep figures, 2 runs (first, last value) per sweep, the stacks compared (two stacks ran)
    assert len(p.imgs) == 7 and "stacks-compared.png" in p.imgs
    assert '<h2 id="stacks">Stacks compared</h2>' in html and '<a href="#stacks">' in html
    for src in p.imgs:
        assert not Path(src).is_absolute() and "/" not in src
        assert_png(built.parent / src)
    rep = built.parent
    panel(rep / "throughput-batch.png", title="throughput: batch", xlabel="DC batch size (packets)",
          legend=["quic-default", "quic-large"], lines=2)
    fairness = figure(rep / "fairness-split.png", ["quic-large", "tcp"], "fairness: split")
    assert [(ax.legend, ax.bars, len(ax.texts)) for ax in fairness.axes] == [(FAIR_LABELS, 3, 3), ([], 3, 3)]
    links = [src for src in p.imgs if src.startswith("links-")]
    flows = [src for src in p.imgs if src.startswith("flows-")]
    assert len(links) == len(flows) == 2, "the first and last value's run"
    for src in links:
        links_figure(rep / src)
    for src in flows:
        flows_figure(rep / src, FAIR_LABELS)
    stacks = figure(rep / "stacks-compared.png", ["throughput", "fairness (against sc1=tcp,sc2=tcp)"])
    assert stacks.axes[0].legend == ["aioquic quic-default", "aioquic quic-large", "aioquic tcp"]
    assert [ax.bars for ax in stacks.axes] == [3, 3] and stacks.axes[1].ylabel == "Jain's fairness index"


def test_report_tables_hold_the_means(store, built):
    p = parse(built)
    tp = {(r[0], r[1]): r[2:] for r in p.tables["data throughput"][1:]}
    rows = store.rows()
    for host in ("quic-default", "quic-large"):
        for v in BATCHES:
            g = [r["metrics"]["goodput_mbps"] for r in rows if r["experiment"] == "throughput" and r["host_config"] == host
                 and r["value_num"] == v and r["ok"]]
            mean, std, n, failed = tp[(f"{v:g}", host)]
            assert mean == f"{statistics.fmean(g):.2f}" and std == f"{statistics.stdev(g):.2f}"
            assert int(n) == len(g) and int(failed) == 3 - len(g)
    assert tp[("500", "quic-large")][2:] == ["2", "1"]
    fa = {(r[0], r[1]): r[2:] for r in p.tables["data fairness"][1:]}
    for host in ("quic-large", "tcp"):
        for text, v in SPLITS:
            rs = [r for r in rows if r["experiment"] == "fairness" and r["host_config"] == host and r["value_num"] == v]
            cells = fa[(text, host)]
            for i, name in enumerate(FLOWS):
                assert cells[2 * i] == f"{statistics.fmean(f['mean_mbps'] for r in rs for f in r['flows'] if f['name'] == name):.2f}"
            assert cells[6] == f"{statistics.fmean(r['metrics']['jfi'] for r in rs):.3f}"
            assert cells[7] == "-", "runs stored without the links' JFI"
            assert cells[8] == "2"


def test_tables_md_holds_the_pages_tables(built):
    """tables.md quotes every data table of the page cell for cell, under its sweep's
    heading, so the docs can cite a campaign without typing a number in."""
    p = parse(built)
    md = (built.parent / "tables.md").read_text()
    tables = [[[c.strip() for c in line.strip().strip("|").split(" | ")] for line in block.splitlines()
               if line.startswith("|") and not line.startswith("|---")]
              for block in md.split("\n\n") if block.startswith("| ")]
    html_tables = [p.tables["data throughput"], p.tables["data fairness"]]  # the experiments' tables
    assert html_tables and len(tables) == len(html_tables)
    for t in html_tables:
        assert t in tables, t[0]
    for heading in ("throughput: batch", "fairness: split"):
        assert f"\n## {heading}\n" in md
    assert "mean ± std over the runs" in md.splitlines()[2]


def test_markdown_cells_cannot_break_a_row():
    t = Table(["value", "series", "a|b"], [["1", "x|y\nz", "2"], ["2", "q", "-"]], [False, True])
    lines = markdown_table(t).splitlines()
    assert lines[0] == "| value | series | a\\|b |" and lines[1] == "|---|---|--:|"
    assert lines[2] == "| 1 | x\\|y\\nz | 2 |"
    assert lines[3] == "| 2 (no successful run) | q | - |"


def test_a_tables_naming_columns_are_set_as_text():
    """A table names its rows with as many leading columns as it says: a value-by-aggregation
    table has one, and its value columns are set right in both the page and tables.md."""
    t = Table(["value", "mptcp", "pdcp"], [["1", "2.00 ± 0.10 (5)", "-"]], [False], text_columns=1)
    assert markdown_table(t).splitlines()[1] == "|---|--:|--:|"
    html = html_table(t, "x")
    assert html.count('class="text"') == 2 and "<th>mptcp</th>" in html and "<td>2.00 ± 0.10 (5)</td>" in html


def test_a_store_from_before_the_change_reports_the_same(built, tmp_path):
    """A schema-1 store (as campaigns wrote before experiments became plug-ins) is migrated
    when opened and gives the same tables and figures."""
    old = make_store(tmp_path / "old", v1=True)
    assert (tmp_path / "old" / "store.sqlite.v1.bak").is_file()
    index = build_report(old, tmp_path / "old-report", "synthetic <campaign>")
    new, was = parse(built), parse(index)
    assert was.imgs == new.imgs
    for cls in ("data throughput", "data fairness", "environment", "summary"):
        assert was.tables[cls] == new.tables[cls], cls


def test_report_environment_and_run_counts(built):
    p = parse(built)
    env_rows = p.tables["environment"][1:]
    assert ["kernel", "6.1.0-test", "30"] in env_rows
    rmem = {r[1]: r[2] for r in env_rows if r[0] == "host_settings / net.core.rmem_default"}
    assert rmem == {"212992": "9", "33554432": "15", "-": "6"}
    summary = {r[0]: r[1] for r in p.tables["summary"]}
    assert summary["runs"] == "30" and summary["successful"] == "29" and summary["failed"] == "1"
    # runs, failed, kernel, CPU ("?": not recorded), configurations differing ("-": none ran on two machines)
    assert {r[0]: r[1:] for r in p.tables["machines"][1:]} == {"m1": ["18", "1", "6.1.0-test", "?", "-"],
                                                               "m2": ["12", "0", "6.1.0-test", "?", "-"]}
    [failure] = p.tables["failures"][1:]
    assert failure[-1] == "timeout <&>"  # escaped in the page, text again once parsed
    assert "timeout &lt;&amp;&gt;" in built.read_text()


def test_report_of_an_empty_store(tmp_path):
    index = build_report(Store(tmp_path / "empty.sqlite"), tmp_path / "r", "empty")
    assert "holds no runs" in index.read_text()


# ---------------------------------------------------------------------------------------
# Commands

def test_report_command(store, tmp_path):
    out = tmp_path / "rep"
    r = CliRunner().invoke(report, ["camp", "--store", str(store.path), "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert r.output.strip() == str(out / "index.html")
    assert (out / "index.html").is_file()
    panel(out / "throughput-batch.png", title="throughput: batch", legend=["quic-default", "quic-large"], lines=2)


def test_report_command_defaults_to_the_campaign_dir(store, tmp_path, monkeypatch):
    import dclab.cli.results as rc

    camp = tmp_path / "results" / "camp"
    camp.mkdir(parents=True)
    shutil.copy(store.path, camp / "store.sqlite")
    monkeypatch.setattr(rc, "campaign_dir", lambda name: tmp_path / "results" / name)
    r = CliRunner().invoke(report, ["camp"])
    assert r.exit_code == 0, r.output
    assert r.output.strip() == str(camp / "report" / "index.html")
    assert "dclab campaign camp" in (camp / "report" / "index.html").read_text()


def test_missing_or_empty_store_is_a_clear_error(tmp_path, monkeypatch):
    import dclab.cli.results as rc

    monkeypatch.setattr(rc, "campaign_dir", lambda name: tmp_path / "results" / name)
    for cmd in (report, plot):
        r = CliRunner().invoke(cmd, ["nope"])
        assert r.exit_code != 0
        assert f"no result store at {tmp_path / 'results' / 'nope' / 'store.sqlite'}" in r.output
        assert not (tmp_path / "results" / "nope" / "store.sqlite").exists()  # not created by asking
    Store(tmp_path / "empty.sqlite")
    r = CliRunner().invoke(report, ["--store", str(tmp_path / "empty.sqlite")])
    assert r.exit_code != 0 and "holds no runs" in r.output
    (tmp_path / "junk.sqlite").write_text("not a database " * 100)
    r = CliRunner().invoke(report, ["--store", str(tmp_path / "junk.sqlite")])
    assert r.exit_code != 0 and "not a dclab result store" in r.output
    r = CliRunner().invoke(report, [])
    assert r.exit_code == 2 and "give a CAMPAIGN or --store" in r.output


def test_plot_command(store, tmp_path):
    out = tmp_path / "plots"
    r = CliRunner().invoke(plot, ["camp", "--store", str(store.path), "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert r.output.split() == [str(out / "throughput-batch.png"), str(out / "fairness-split.png")]
    r = CliRunner().invoke(plot, ["camp", "--store", str(store.path), "--out", str(out), "--experiment", "fairness"])
    assert r.exit_code == 0 and r.output.split() == [str(out / "fairness-split.png")]
    r = CliRunner().invoke(plot, ["camp", "--store", str(store.path), "--out", str(out), "--sweep", "nope"])
    assert r.exit_code == 1 and "no runs with sweep 'nope'" in r.output
    r = CliRunner().invoke(plot, ["camp", "--store", str(store.path), "--out", str(out), "--run", "fa-tcp-30-1"])
    assert r.exit_code == 0, r.output
    [written] = r.output.split()
    assert written.endswith("-flows.png")
    assert_png(Path(written))
    assert flows_figure(Path(written), FAIR_LABELS).title.endswith("(run fa-tcp-30-1)")
    r = CliRunner().invoke(plot, ["camp", "--store", str(store.path), "--out", str(out), "--run", "tp-quic-large-2-3"])
    assert r.exit_code == 0 and r.output.strip().endswith("-links.png")
    assert_png(Path(r.output.strip()))
    assert links_figure(Path(r.output.strip())).suptitle.endswith("(run tp-quic-larg)")
    r = CliRunner().invoke(plot, ["camp", "--store", str(store.path), "--run", "tp-quic-large-2"])
    assert r.exit_code == 1 and "matches 3 runs" in r.output


def test_results_merge_and_export(store, tmp_path):
    a, b = Store(tmp_path / "a.sqlite"), Store(tmp_path / "b.sqlite")
    rows = store.rows()
    assert a.merge(store.path) == 30
    with sqlite3.connect(a.path) as db:  # shard a: everything but fairness
        db.execute("DELETE FROM runs WHERE experiment = 'fairness'")
    b.merge(store.path)
    with sqlite3.connect(b.path) as db:  # shard b: fairness and 3 throughput runs a has too
        db.execute("DELETE FROM runs WHERE experiment = 'throughput' AND NOT (value = '2' AND host_config = 'quic-large')")
    dest = tmp_path / "merged" / "all.sqlite"
    r = CliRunner().invoke(results, ["merge", str(dest), str(a.path), str(b.path)])
    assert r.exit_code == 0, r.output
    assert r.output.splitlines() == [f"{a.path}: 18 run(s) added", f"{b.path}: 12 run(s) added", f"{dest}: 30 run(s)"]
    assert Store(dest).keys() == {x["run_key"] for x in rows}
    r = CliRunner().invoke(results, ["merge", str(dest), str(tmp_path / "missing.sqlite")])
    assert r.exit_code == 2 and "does not exist" in r.output

    out = tmp_path / "fair.csv"
    r = CliRunner().invoke(results, ["export", str(dest), "--csv", str(out), "--where", "experiment = 'fairness'"])
    assert r.exit_code == 0, r.output
    assert r.output.strip() == f"12 run(s) written to {out}"
    lines = out.read_text().splitlines()
    assert lines[0].startswith("run_key,campaign,experiment,") and len(lines) == 13
    before = out.read_bytes()
    r = CliRunner().invoke(results, ["export", str(dest), "--csv", str(out), "--where", "no_such_column = 1"])
    assert r.exit_code == 1 and "cannot export: --where 'no_such_column = 1': no such column" in r.output
    assert out.read_bytes() == before  # a failed export leaves the earlier file as it was


def test_commands_explain_themselves():
    for cmd, args in ((plot, []), (report, []), (results, []), (results, ["merge"]), (results, ["export"])):
        r = CliRunner().invoke(cmd, [*args, "--help"])
        assert r.exit_code == 0 and "Usage:" in r.output and len(r.output) > 200


# ---------------------------------------------------------------------------------------
# The page in a real browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_page_renders_in_headless_chromium(built, tmp_path):
    flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'profile'}"]
    url = built.resolve().as_uri()
    shot = tmp_path / "shot.png"
    subprocess.run([*flags, f"--screenshot={shot}", "--window-size=1200,2000", url], capture_output=True, timeout=120)
    dom = subprocess.run([*flags, "--dump-dom", url], capture_output=True, text=True, timeout=120).stdout
    p = Tables()
    p.feed(dom)
    assert p.imgs == parse(built).imgs and len(p.imgs) == 7  # every image is in the rendered DOM
    assert "Time series of selected runs" in dom and "Environment" in dom
    for src in p.imgs:
        assert (built.parent / src).is_file()
    img = assert_png(shot, min_bytes=20_000)
    assert img.shape[:2] == (2000, 1200)
    # The first figure is drawn on the page: matplotlib's default blue is in the screenshot.
    rgb = (img[:, :, :3] * 255).astype(int)
    blue = np.all(np.abs(rgb - np.array([31, 119, 180])) <= 12, axis=2)
    assert blue.sum() > 200, "no figure pixels in the screenshot: images did not load"


# ---------------------------------------------------------------------------------------
# Read-only commands stay read-only

def foreign_db(path: Path) -> bytes:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE notes (x TEXT)")
    db.execute("INSERT INTO notes VALUES ('mine')")
    db.commit()
    db.close()
    return path.read_bytes()


def test_commands_refuse_a_database_that_is_not_a_store_and_write_nothing(tmp_path, store):
    before = foreign_db(tmp_path / "other.sqlite")
    for args in (["--store", str(tmp_path / "other.sqlite"), "--out", str(tmp_path / "rep")],):
        for cmd in (report, plot):
            r = CliRunner().invoke(cmd, args)
            assert r.exit_code == 1 and "is not a dclab result store" in r.output, r.output
    r = CliRunner().invoke(results, ["export", str(tmp_path / "other.sqlite"), "--csv", str(tmp_path / "x.csv")])
    assert r.exit_code == 1 and "is not a dclab result store" in r.output and not (tmp_path / "x.csv").exists()
    r = CliRunner().invoke(results, ["merge", str(tmp_path / "dest.sqlite"), str(store.path), str(tmp_path / "other.sqlite")])
    assert r.exit_code == 1 and "cannot merge" in r.output
    assert not (tmp_path / "dest.sqlite").exists(), "a refused merge makes no destination"
    r = CliRunner().invoke(results, ["merge", str(tmp_path / "other.sqlite"), str(store.path)])
    assert r.exit_code == 1 and "cannot merge into" in r.output
    assert (tmp_path / "other.sqlite").read_bytes() == before, "the foreign database is untouched"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.sqlite"], "nothing else was written"


def test_series_tell_apart_what_campaign_groups_set():
    from dclab.analysis.figures import series_of

    def row(key, value, streams, link):
        return {"run_key": key, "value": value, "value_num": float(value), "stack": "aioquic", "cc": "reno",
                "host_config": "quic-default", "options": {"streams": streams, "size": 10}, "ok": 1,
                "scenario": {"link": link, "delay": [12.0]}}

    # Two groups sweeping streams, one per level: the level sets the series apart, the sweep does not.
    rows = runs([row("a", "1", 1, "lte:250m"), row("b", "4", 4, "lte:250m"), row("c", "1", 1, "lte:1500m")])
    assert series_of(rows) == {"a": "quic-default link=lte:250m", "b": "quic-default link=lte:250m",
                               "c": "quic-default link=lte:1500m"}
    assert set(series_of(rows[:2]).values()) == {"quic-default"}, "one group: as before"


def test_text_values_sort_in_natural_order():
    from dclab.analysis.figures import values_of

    rows = runs([{"value": v, "value_num": None, "ok": 1} for v in ("1500 a:reno=1", "250 b", "250 a", "2500 a", "x")])
    assert [t for _, t in values_of(rows)] == ["250 a", "250 b", "1500 a:reno=1", "2500 a", "x"]
    numbers = runs([{"value": "2", "value_num": 2.0, "ok": 1}, {"value": "10", "value_num": 10.0, "ok": 1}])
    assert [t for _, t in values_of(numbers)] == ["2", "10"]
