"""The result store: round trips, idempotent adds, merging shards, CSV export, WAL."""

from __future__ import annotations

import csv
import sqlite3
import threading

from dclab.store import COLUMNS, RunRecord, Store


def rec(key: str, **kw) -> RunRecord:
    base = dict(
        run_key=key, experiment="throughput", stack="aioquic", cc="reno", host_config="quic-default", rep=1, ok=True,
        scenario={"bw": [20.0, 20.0], "split": [50.0, 50.0], "trace": None},
        metrics={"t0_ms": 1234.5, "pdcp": {"tx_pdus": {"leg1": 10}}},
        environment={"kernel": "6.1.0", "host_settings": {"net.core.rmem_default": "212992"}},
        run_dir=f"/tmp/runs/{key}", machine="m1", started_at="2024-01-01T00:00:00", finished_at="2024-01-01T00:00:30",
        campaign="c", sweep="batch", param="batch", value="100", value_num=100.0, goodput_mbps=35.5,
    )
    base.update(kw)
    return RunRecord(**base)


def test_round_trip_with_json_columns(tmp_path):
    s = Store(tmp_path / "s.sqlite")
    r = rec("k1", error=None, size=100_000_000)
    s.add(r)
    assert s.has("k1") and not s.has("k2")
    [row] = s.rows()
    assert row["metrics"] == r.metrics and row["scenario"] == r.scenario and row["environment"] == r.environment
    assert row["goodput_mbps"] == 35.5 and row["value_num"] == 100.0 and row["ok"] == 1 and row["size"] == 100_000_000
    assert s.rows("experiment = ?", ("fairness",)) == []


def test_same_run_key_twice_keeps_one_row(tmp_path):
    s = Store(tmp_path / "s.sqlite")
    s.add(rec("k1", goodput_mbps=1.0))
    s.add(rec("k1", goodput_mbps=2.0))
    rows = s.rows()
    assert len(rows) == 1 and rows[0]["goodput_mbps"] == 1.0  # the first is kept


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


def test_export_csv(tmp_path):
    s = Store(tmp_path / "s.sqlite")
    for i in range(5):
        s.add(rec(f"k{i}", rep=i + 1, experiment="fairness" if i % 2 else "throughput"))
    out = tmp_path / "runs.csv"
    assert s.export_csv(out) == 5
    with open(out, newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == COLUMNS and len(rows) == 6
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
