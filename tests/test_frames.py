"""A result store as pandas DataFrames (dclab.campaign.frames), its Parquet export
(`dclab results export`), and the pandas example of docs/how-to/pandas.md, on hand-made stores (no root)."""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from figure_checks import PNG, check, spans

from dclab.analysis.figure_info import describe
from dclab.campaign.frames import flows_frame, runs_frame
from dclab.campaign.store import NotAStore, RunRecord, Store
from dclab.cli.results import results

PANDAS_PAGE = Path(__file__).resolve().parent.parent / "docs" / "how-to" / "pandas.md"
BATCHES = [2.0, 100.0, 500.0]
HOSTS = ["quic-default", "tcp"]


def goodput(batch: float, host: str, rep: int) -> float:
    return 10.0 + batch / 100 + (5.0 if host == "tcp" else 0.0) + rep * 0.25


def rec(key: str, **kw) -> RunRecord:
    base = dict(
        run_key=key, experiment="throughput", stack="aioquic", cc="reno", host_config="quic-default", rep=1, ok=True,
        scenario={"bw": [20.0, 20.0], "t_reordering": 200.0, "trace": None, "link": "lte:250m"},
        metrics={"goodput_mbps": 30.0, "t0_ms": 612.5, "pdcp": {"rx": {"timer_expiries": 4, "delivered": 82262}},
                 "reordered": True, "downloads": [{"size": 1, "ok": True}], "note": "x"},
        environment={"kernel": "6.1.0", "host_settings": {"net.core.rmem_default": "212992"}},
        run_dir=f"/tmp/runs/{key}", machine="m1", started_at="2026-11-23T23:06:16",
        finished_at="2026-11-23T23:06:42", campaign="smoke", sweep="batch", param="batch", value="100",
        value_num=100.0, seed=1, options={"size": 100_000_000, "udp_buffer": "large"},
        flows=[{"name": "dc", "stack": "aioquic", "cc": "reno", "bearer": "dc", "port": 4433, "goodput_mbps": 30.0,
                "bytes": 100_000_000, "completion_s": 22.1, "ok": 1}],
    )
    base.update(kw)
    return RunRecord(**base)


def fair_flows(batch: float, rep: int) -> list[dict]:
    return [{"name": f, "stack": "tcp", "cc": "cubic", "bearer": f, "port": 5000 + i,
             "mean_mbps": fair_mbps(batch, f, rep), "ok": 1} for i, f in enumerate(("dc", "sc1", "sc2"))]


def fair_mbps(batch: float, flow: str, rep: int) -> float:
    return {"dc": 14.0, "sc1": 10.0, "sc2": 9.0}[flow] + batch / 1000 + rep


def make_store(path: Path) -> Store:
    """Throughput: 3 batch sizes x 2 host configurations x 2 repetitions, and one failed run;
    fairness: 2 batch sizes x 2 repetitions, 3 flows each."""
    s = Store(path)
    for b in BATCHES:
        for h in HOSTS:
            for rep in (1, 2):
                g = goodput(b, h, rep)
                s.add(rec(f"t-{b:g}-{h}-{rep}", host_config=h, rep=rep, seed=rep, value=f"{b:g}", value_num=b,
                          stack="tcp" if h == "tcp" else "aioquic",
                          metrics={"goodput_mbps": g, "t0_ms": 600.0 + rep,
                                   "pdcp": {"rx": {"timer_expiries": rep, "delivered": 1000 * rep}},
                                   "reordered": rep == 2, "downloads": [{"size": 1, "ok": True}], "note": h},
                          flows=[{"name": "dc", "stack": "tcp" if h == "tcp" else "aioquic", "cc": "reno",
                                  "bearer": "dc", "port": 4433, "goodput_mbps": g, "bytes": 10**8, "ok": 1}]))
    s.add(rec("t-fail", rep=3, seed=None, ok=False, error="timeout", metrics={}, flows=[]))
    for b in (10.0, 500.0):
        for rep in (1, 2):
            s.add(rec(f"f-{b:g}-{rep}", experiment="fairness", stack="dc=tcp,sc1=tcp,sc2=tcp", cc="cubic",
                      host_config="tcp", rep=rep, value=f"{b:g}", value_num=b, metrics={"jfi": 0.9 + rep / 100},
                      options={"duration": 60.0}, flows=fair_flows(b, rep)))
    return s


@pytest.fixture
def store(tmp_path) -> Store:
    return make_store(tmp_path / "store.sqlite")


def test_runs_frame_has_a_row_per_run_and_flattened_columns(store):
    df = runs_frame(store)
    assert len(df) == 12 + 1 + 4
    assert len(runs_frame(store, "experiment = 'throughput'")) == 13
    t = df.set_index("run_key")
    assert t.loc["t-100-tcp-2", "metrics.goodput_mbps"] == goodput(100.0, "tcp", 2)
    assert t.loc["t-2-quic-default-1", "metrics.pdcp.rx.delivered"] == 1000
    assert t.loc["t-2-quic-default-1", "options.size"] == 100_000_000
    assert t.loc["t-2-quic-default-1", "options.udp_buffer"] == "large"
    assert t.loc["f-10-1", "options.duration"] == 60.0 and pd.isna(t.loc["f-10-1", "options.size"])
    assert t.loc["t-2-tcp-1", "scenario.bw"] == "[20.0, 20.0]"  # a list stays JSON text
    assert t.loc["t-2-tcp-1", "metrics.downloads"] == '[{"size": 1, "ok": true}]'
    assert t.loc["t-2-tcp-1", "scenario.t_reordering"] == 200.0 and pd.isna(t.loc["t-2-tcp-1", "scenario.trace"])
    assert t.loc["t-2-tcp-1", "environment.host_settings.net.core.rmem_default"] == "212992"
    assert t.loc["t-2-tcp-1", "environment.kernel"] == "6.1.0"
    fail = t.loc["t-fail"]
    assert not fail["ok"] and fail["error"] == "timeout"
    assert pd.isna(fail["metrics.goodput_mbps"]) and pd.isna(fail["seed"])
    assert t.loc["f-500-2", "metrics.jfi"] == 0.92 and pd.isna(t.loc["f-500-2", "metrics.goodput_mbps"])
    assert list(df.columns[:18]) == ["run_key", "campaign", "experiment", "sweep", "param", "value", "value_num",
                                     "stack", "cc", "host_config", "rep", "seed", "ok", "error", "machine",
                                     "started_at", "finished_at", "run_dir"]
    assert "scenario" not in df.columns and "flows" not in df.columns


def test_runs_frame_dtypes(store):
    df = runs_frame(store)
    dt = df.dtypes
    assert dt["ok"] == "bool" and dt["rep"] == "int64" and dt["value_num"] == "float64"
    assert dt["seed"] == "Int64" and df["seed"].isna().sum() == 1
    assert pd.api.types.is_datetime64_any_dtype(dt["started_at"])
    assert df.loc[0, "finished_at"] - df.loc[0, "started_at"] == pd.Timedelta(seconds=26)
    assert dt["metrics.goodput_mbps"] == "float64" and dt["metrics.t0_ms"] == "float64"
    assert dt["metrics.pdcp.rx.timer_expiries"] == "Int64"
    assert dt["metrics.reordered"] == "boolean"
    assert pd.api.types.is_string_dtype(dt["run_key"]) and pd.api.types.is_string_dtype(dt["metrics.note"])
    assert pd.api.types.is_string_dtype(dt["scenario.bw"])
    assert not (dt == "object").any(), "no column is left as Python objects"


def test_groupby_mean_of_a_metric_matches_a_hand_computation(store):
    df = runs_frame(store, "experiment = 'throughput' AND ok")
    mean = df.groupby(["value_num", "host_config"])["metrics.goodput_mbps"].mean()
    assert len(mean) == len(BATCHES) * len(HOSTS)
    for b in BATCHES:
        for h in HOSTS:
            assert mean[(b, h)] == pytest.approx(statistics.mean(goodput(b, h, rep) for rep in (1, 2)))


def test_flows_frame_joins_each_flow_with_its_run(store):
    fl = flows_frame(store)
    assert len(fl) == 12 + 4 * 3  # the failed run has no flows
    fair = flows_frame(store, "experiment = 'fairness'")
    assert len(fair) == 12 and set(fair["flow"]) == {"dc", "sc1", "sc2"}
    row = fair[(fair["run_key"] == "f-500-2") & (fair["flow"] == "sc1")].iloc[0]
    assert (row["sweep"], row["value"], row["value_num"], row["host_config"], row["rep"]) == ("batch", "500", 500.0,
                                                                                               "tcp", 2)
    assert row["ok_run"] and row["ok"] and row["port"] == 5001 and row["mean_mbps"] == fair_mbps(500.0, "sc1", 2)
    mean = fair.groupby(["value_num", "flow"])["mean_mbps"].mean()
    assert mean[(10.0, "dc")] == pytest.approx((fair_mbps(10.0, "dc", 1) + fair_mbps(10.0, "dc", 2)) / 2)
    dt = fl.dtypes
    assert dt["ok_run"] == "bool" and dt["ok"] == "boolean" and dt["port"] == "Int64" and dt["bytes"] == "Int64"
    assert dt["mean_mbps"] == "float64" and dt["value_num"] == "float64" and dt["rep"] == "int64"
    assert fl["mean_mbps"].isna().sum() == 12 and fl["goodput_mbps"].isna().sum() == 12
    assert list(fl.columns) == ["run_key", "campaign", "experiment", "sweep", "param", "value", "value_num",
                                "host_config", "rep", "ok_run", "flow", "stack", "cc", "bearer", "port", "mean_mbps",
                                "goodput_mbps", "bytes", "completion_s", "ok"]


def test_a_metric_of_mixed_types_is_kept_as_json_text(tmp_path):
    s = Store(tmp_path / "s.sqlite")
    s.add(rec("a", metrics={"x": 1.5, "n": 1}))
    s.add(rec("b", metrics={"x": "n/a", "n": 2.5}))
    df = runs_frame(s).set_index("run_key")
    assert list(df["metrics.x"]) == ["1.5", '"n/a"'] and list(df["metrics.n"]) == [1.0, 2.5]
    df.to_parquet(tmp_path / "x.parquet")  # one type per column: pyarrow takes it


def test_every_source_form_gives_the_same_frame(tmp_path, monkeypatch):
    monkeypatch.setenv("DCLAB_RESULTS", str(tmp_path / "results"))
    s = make_store(tmp_path / "results" / "smoke" / "store.sqlite")
    ref = runs_frame(s)
    for src in ("smoke", str(s.path), s.path):
        pd.testing.assert_frame_equal(runs_frame(src), ref)
    pd.testing.assert_frame_equal(flows_frame("smoke"), flows_frame(s.path))


def test_no_match_and_an_empty_store_give_empty_frames(store, tmp_path):
    assert runs_frame(store, "experiment = 'nope'").empty and flows_frame(store, "0").empty
    empty = Store(tmp_path / "empty.sqlite")
    df = runs_frame(empty)
    assert df.empty and "run_key" in df.columns and df.dtypes["ok"] == "bool"


def test_reading_never_creates_a_store(tmp_path, monkeypatch):
    monkeypatch.setenv("DCLAB_RESULTS", str(tmp_path / "results"))
    with pytest.raises(NotAStore, match="no result store for campaign 'nope'"):
        runs_frame("nope")
    with pytest.raises(NotAStore, match="no result store"):
        flows_frame(tmp_path / "missing.sqlite")
    with pytest.raises(NotAStore):
        runs_frame(str(tmp_path / "sub" / "missing.sqlite"))
    junk = tmp_path / "junk.sqlite"
    junk.write_text("not sqlite")
    with pytest.raises(NotAStore, match="not a dclab result store"):
        runs_frame(junk)
    assert junk.read_text() == "not sqlite"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["junk.sqlite"]  # no results/, no store, no sub/


def export(*args: str):
    return CliRunner().invoke(results, ["export", *args])


def test_export_parquet_round_trip(store, tmp_path):
    runs_out, flows_out, csv_out = tmp_path / "runs.parquet", tmp_path / "flows.parquet", tmp_path / "runs.csv"
    r = export(str(store.path), "--parquet", str(runs_out), "--flows-parquet", str(flows_out), "--csv", str(csv_out))
    assert r.exit_code == 0, r.output
    assert f"17 run(s) written to {csv_out}" in r.output and f"24 flow(s) of 16 run(s) written to {flows_out}" in r.output
    back = pd.read_parquet(runs_out)
    pd.testing.assert_frame_equal(back, runs_frame(store))
    assert back.set_index("run_key").loc["t-100-tcp-2", "metrics.goodput_mbps"] == goodput(100.0, "tcp", 2)
    assert back.dtypes["ok"] == "bool" and back.dtypes["seed"] == "Int64"
    pd.testing.assert_frame_equal(pd.read_parquet(flows_out), flows_frame(store))
    assert len(pd.read_csv(csv_out)) == 17
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("store.sqlite")) == [
        "flows.parquet", "runs.csv", "runs.parquet"]  # no temporary file left


def test_export_where_applies_to_every_output(store, tmp_path):
    runs_out, flows_out = tmp_path / "runs.parquet", tmp_path / "flows.parquet"
    r = export(str(store.path), "--parquet", str(runs_out), "--flows-parquet", str(flows_out),
               "--where", "experiment = 'fairness'")
    assert r.exit_code == 0, r.output
    assert set(pd.read_parquet(runs_out)["experiment"]) == {"fairness"} and len(pd.read_parquet(runs_out)) == 4
    assert len(pd.read_parquet(flows_out)) == 12


def test_export_needs_an_output(store):
    r = export(str(store.path))
    assert r.exit_code == 2 and "give at least one output: --csv OUT, --parquet OUT or --flows-parquet OUT" in r.output
    r = export(str(store.path), "--parquet", "x.parquet", "--flows-parquet", "./x.parquet")
    assert r.exit_code == 2 and "--parquet and --flows-parquet name the same file" in r.output
    r = export(str(store.path), "--parquet", str(store.path))
    assert r.exit_code == 2 and "is the store" in r.output
    assert len(runs_frame(store)) == 17  # the store survived


def test_a_failed_export_leaves_earlier_files_as_they_were(store, tmp_path):
    old = tmp_path / "old.parquet"
    old.write_bytes(b"an earlier export")
    (tmp_path / "new.csv").write_text("an earlier export")
    r = export(str(store.path), "--csv", str(tmp_path / "new.csv"), "--parquet", str(old), "--where", "nonsense =")
    assert r.exit_code == 1 and "cannot export:" in r.output and "syntax error" in r.output
    assert old.read_bytes() == b"an earlier export" and (tmp_path / "new.csv").read_text() == "an earlier export"
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("store.sqlite")) == ["new.csv", "old.parquet"]


def test_export_refuses_what_is_not_a_store(tmp_path):
    r = export(str(tmp_path / "missing.sqlite"), "--parquet", str(tmp_path / "o.parquet"))
    assert r.exit_code == 2 and "does not exist" in r.output
    junk = tmp_path / "junk.sqlite"
    junk.write_text("not sqlite")
    r = export(str(junk), "--parquet", str(tmp_path / "o.parquet"))
    assert r.exit_code == 1 and "not a dclab result store" in r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["junk.sqlite"] and junk.read_text() == "not sqlite"


def pandas_example() -> str:
    text = PANDAS_PAGE.read_text()
    m = re.search(r"<!-- test_frames: pandas example -->\n```python\n(.*?)```", text, re.S)
    assert m, "docs/how-to/pandas.md lost its pandas example (marker <!-- test_frames: pandas example -->)"
    return m.group(1)


def test_the_pandas_page_example_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DCLAB_RESULTS", str(tmp_path / "results"))
    make_store(tmp_path / "results" / "smoke" / "store.sqlite")
    monkeypatch.chdir(tmp_path)
    ns: dict = {}
    exec(compile(pandas_example(), str(PANDAS_PAGE), "exec"), ns)
    mean = ns["mean"]
    assert list(mean.columns) == HOSTS and list(mean.index) == BATCHES
    assert mean.loc[500.0, "tcp"] == pytest.approx((goodput(500.0, "tcp", 1) + goodput(500.0, "tcp", 2)) / 2)
    assert (tmp_path / "goodput.png").read_bytes()[:8] == PNG  # the user's own savefig: no description in it
    ax = check(describe(ns["plt"].gcf()).axes[0], title="smoke: goodput by batch size", xlabel="batch (packets)",
               ylabel="goodput (Mbit/s)", legend=HOSTS, lines=len(HOSTS), x=(min(BATCHES), max(BATCHES)))
    assert [s.y for s in ax.series] == [spans(mean[h]) for h in HOSTS], "a line per host configuration, its means"
    out = capsys.readouterr().out
    assert "sc1" in out and "500.0" in out
    ns["plt"].close("all")
