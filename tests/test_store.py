"""The result store: round trips, idempotent adds, merging shards, CSV export, WAL, and
the migration of stores written before the per-flow table (the failure cases are in
test_store_safety.py)."""

from __future__ import annotations

import csv
import json
import sqlite3
import threading
from pathlib import Path

from dclab.campaign.merge import merge_stores
from dclab.campaign.store import COLUMNS, RunRecord, Store, open_existing

V1_SCHEMA = (Path(__file__).parent / "data" / "store_v1_schema.sql").read_text()


def rec(key: str, **kw) -> RunRecord:
    base = dict(
        run_key=key, experiment="throughput", stack="aioquic", cc="reno", host_config="quic-default", rep=1, ok=True,
        scenario={"bw": [20.0, 20.0], "split": [50.0, 50.0], "trace": None},
        metrics={"t0_ms": 1234.5, "pdcp": {"tx_pdus": {"leg1": 10}}},
        environment={"kernel": "6.1.0", "host_settings": {"net.core.rmem_default": "212992"}},
        run_dir=f"/tmp/runs/{key}", machine="m1", started_at="2024-01-01T00:00:00", finished_at="2024-01-01T00:00:30",
        campaign="c", sweep="batch", param="batch", value="100", value_num=100.0, seed=1,
        options={"size": 100_000_000}, flows=[{"name": "dc", "stack": "aioquic", "cc": "reno", "bearer": "dc",
                                                "port": 4433, "goodput_mbps": 35.5}],
    )
    base.update(kw)
    return RunRecord(**base)


def test_round_trip_with_json_columns(tmp_path):
    s = Store(tmp_path / "s.sqlite")
    r = rec("k1", error=None)
    s.add(r)
    assert s.has("k1") and not s.has("k2")
    [row] = s.rows()
    assert row["metrics"] == r.metrics and row["scenario"] == r.scenario and row["environment"] == r.environment
    assert row["value_num"] == 100.0 and row["ok"] == 1 and row["options"] == {"size": 100_000_000} and row["seed"] == 1
    [flow] = row["flows"]
    assert (flow["name"], flow["bearer"], flow["port"], flow["goodput_mbps"], flow["mean_mbps"]) == ("dc", "dc", 4433, 35.5, None)
    assert s.rows("experiment = ?", ("fairness",)) == []


def test_same_run_key_twice_keeps_one_row(tmp_path):
    s = Store(tmp_path / "s.sqlite")
    s.add(rec("k1", metrics={"goodput_mbps": 1.0}))
    s.add(rec("k1", metrics={"goodput_mbps": 2.0}, flows=[{"name": "x", "stack": "", "cc": "", "bearer": "x"}]))
    rows = s.rows()
    assert len(rows) == 1 and rows[0]["metrics"]["goodput_mbps"] == 1.0  # the first is kept
    assert [f["name"] for f in rows[0]["flows"]] == ["dc"]  # with its flows only


def test_merge_of_overlapping_shards_is_the_union(tmp_path):
    a, b = Store(tmp_path / "a.sqlite"), Store(tmp_path / "b.sqlite")
    for k in ("k1", "k2", "k3"):
        a.add(rec(k, machine="m1"))
    for k in ("k3", "k4"):
        b.add(rec(k, machine="m2"))
    dest = Store(tmp_path / "dest.sqlite")
    assert dest.merge(a.path) == 3
    assert dest.merge(b.path) == 1  # k3 is already there
    assert dest.merge(b.path) == 0
    assert dest.keys() == {"k1", "k2", "k3", "k4"}
    assert {r["run_key"]: r["machine"] for r in dest.rows()}["k3"] == "m1"
    assert all(len(r["flows"]) == 1 for r in dest.rows())  # flows came along, once


def test_export_csv(tmp_path):
    s = Store(tmp_path / "s.sqlite")
    for i in range(5):
        s.add(rec(f"k{i}", rep=i + 1, experiment="fairness" if i % 2 else "throughput"))
    out = tmp_path / "runs.csv"
    assert s.export_csv(out) == 5
    with open(out, newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == COLUMNS + ["flows"] and len(rows) == 6
    assert json.loads(rows[1][-1])[0]["name"] == "dc"
    assert s.export_csv(out, "experiment = 'fairness'") == 2
    with open(out, newline="") as f:
        assert len(list(csv.DictReader(f))) == 2


def test_reader_sees_consistent_snapshots_while_a_writer_adds(tmp_path):
    s = Store(tmp_path / "s.sqlite")
    s.add(rec("k0"))
    assert sqlite3.connect(s.path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    n = 60
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            w = Store(s.path)
            for i in range(1, n):
                w.add(rec(f"k{i}", rep=i))
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    # A long-lived reader connection inside one read transaction sees one snapshot ...
    reader = sqlite3.connect(s.path, timeout=60)
    reader.execute("BEGIN")
    before = reader.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    t = threading.Thread(target=writer)
    t.start()
    seen = []
    while t.is_alive():
        # ... and fresh reads never see a half-written row: every row decodes fully.
        rows = Store(s.path).rows()
        assert all(r["metrics"]["t0_ms"] == 1234.5 for r in rows)
        seen.append(len(rows))
    t.join()
    assert not errors
    assert reader.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == before == 1
    reader.execute("COMMIT")
    assert reader.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == n
    reader.close()
    assert seen == sorted(seen)  # counts only grow
    assert len(Store(s.path).rows()) == n


def v1_store(path: Path) -> None:
    """A store as dclab wrote it before the per-flow table: one fairness and one throughput run."""
    db = sqlite3.connect(path)
    db.executescript(V1_SCHEMA)
    cols = ("run_key, campaign, experiment, sweep, param, value, value_num, stack, cc, host_config, rep, size, "
            "duration_s, ok, error, goodput_mbps, jfi, dc_mbps, sc1_mbps, sc2_mbps, scenario, metrics, environment, "
            "run_dir, machine, started_at, finished_at")
    rows = [
        ("f1", "c", "fairness", "batch", "batch", "10", 10.0, "tcp", "cubic", "tcp", 1, 10**9, 60.0, 1, None, None,
         0.98, 14.2, 10.8, 10.9, "{}", json.dumps({"jfi": 0.98, "t0_ms": 5.0, "window_s": 60.0}), "{}", "/r/f1", "m",
         "a", "b"),
        ("t1", "c", "throughput", "batch", "batch", "10", 10.0, "tcp", "cubic", "tcp", 1, 5 * 10**6, None, 1, None,
         33.3, None, None, None, None, "{}", json.dumps({"goodput_mbps": 33.3, "t0_ms": 2.0}), "{}", "/r/t1", "m", "a",
         "b"),
    ]
    db.executemany(f"INSERT INTO runs ({cols}) VALUES ({','.join('?' * 27)})", rows)
    db.commit()
    db.close()


def test_a_store_from_before_the_flow_table_is_migrated(tmp_path):
    path = tmp_path / "store.sqlite"
    v1_store(path)
    s = Store(path)
    assert (tmp_path / "store.sqlite.v1.bak").is_file(), "the old file is kept"
    rows = {r["run_key"]: r for r in s.rows()}
    f, t = rows["f1"], rows["t1"]
    assert {x["name"]: x["mean_mbps"] for x in f["flows"]} == {"dc": 14.2, "sc1": 10.8, "sc2": 10.9}
    assert f["options"] == {"size": 10**9, "duration": 60.0} and f["metrics"]["jfi"] == 0.98
    assert t["flows"] == [] and t["options"] == {"size": 5 * 10**6} and t["metrics"]["goodput_mbps"] == 33.3
    assert s.keys() == {"f1", "t1"}  # run keys survive: a campaign resumes against it
    assert Store(path).keys() == {"f1", "t1"}  # opening again changes nothing
    cols = {r[1] for r in sqlite3.connect(path).execute("PRAGMA table_info(runs)")}
    assert "dc_mbps" not in cols and "options" in cols


def test_merging_an_old_shard_converts_its_runs_and_leaves_it(tmp_path):
    old = tmp_path / "old.sqlite"
    v1_store(old)
    before = old.read_bytes()
    dest = Store(tmp_path / "dest.sqlite")
    assert dest.merge(old) == 2
    assert {x["name"] for x in {r["run_key"]: r for r in dest.rows()}["f1"]["flows"]} == {"dc", "sc1", "sc2"}
    assert old.read_bytes() == before and not (tmp_path / "old.sqlite.v1.bak").exists(), "the shard is only read"


def test_any_file_name(tmp_path):
    """Stores are opened by SQLite URI: ?, # and % in a name are part of the name."""
    path = tmp_path / "we?ird #1 %20.sqlite"
    Store(path).add(rec("k1"))
    assert open_existing(path).keys() == {"k1"}
    counts, total = merge_stores(tmp_path / "a?b#c%.sqlite", [path])
    assert counts == [(path, 1)] and total == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a?b#c%.sqlite", "we?ird #1 %20.sqlite"]
