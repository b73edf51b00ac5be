"""Result stores under hostile or unlucky conditions: special files at an export's output,
read-only use that must not write, a store from a newer dclab, a migration that fails
half-way, damaged pages, two merges racing into one new destination, input that is not a
store at all, and --where conditions. Synthetic stores only (no root, no testbed)."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import random
import sqlite3
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_store import rec, v1_store

from dclab.campaign.frames import flows_frame, runs_frame
from dclab.campaign.merge import merge_stores
from dclab.campaign.store import NotAStore, Store, StoreDamaged, StoreError, StoreTooNew, open_existing
from dclab.cli.results import open_store, plot, report, results

pytestmark = pytest.mark.usefixtures("no_hang")  # conftest.py: a test blocked on a FIFO fails after 60 s


def make(path: Path, n: int = 3, prefix: str = "k", **kw) -> Path:
    s = Store(path)
    for i in range(n):
        s.add(rec(f"{prefix}{i}", rep=i + 1, **kw))
    return path


def sql(path: Path, *statements: str) -> list:
    """Runs `statements` on a connection that is closed after (a connection left open keeps
    SQLite's -wal and -shm files beside the store); the last one's rows."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        rows = [db.execute(st).fetchall() for st in statements][-1]
        db.commit()
    return rows


def snapshot(path: Path) -> tuple[bytes, int]:
    return path.read_bytes(), os.stat(path).st_mtime_ns


def listing(d: Path) -> dict[str, str]:
    """Every entry of `d` with its kind and, for a regular file, its content's hash."""
    out = {}
    for p in sorted(d.iterdir()):
        st = os.lstat(p)
        out[p.name] = (f"file {hash(p.read_bytes())}" if stat.S_ISREG(st.st_mode) else
                       f"link {os.readlink(p)}" if stat.S_ISLNK(st.st_mode) else stat.filemode(st.st_mode)[0])
    return out


def invoke(cmd, *args: str):
    return CliRunner().invoke(cmd, list(args))


def one_line_error(r, *phrases: str) -> str:
    """The command failed with exit 1 and a one-line 'Error: ...' holding every phrase, no traceback."""
    assert r.exit_code == 1, r.output
    assert isinstance(r.exception, SystemExit), f"a traceback: {r.exception!r}"
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), r.output
    for phrase in phrases:
        assert phrase in lines[0], lines[0]
    return lines[0]


# ---------------------------------------------------------------------------------------
# 1. Outputs of `results export`

def test_export_refuses_a_fifo_a_symlink_or_a_directory_at_an_output_and_leaves_it(tmp_path):
    store = make(tmp_path / "store.sqlite")
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    target = tmp_path / "precious.txt"
    target.write_text("not an export\n")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    folder = tmp_path / "folder.csv"
    folder.mkdir()
    before = listing(tmp_path)
    for out, kind in ((fifo, "is a FIFO"), (link, "is a symlink")):
        for opt in ("--csv", "--parquet", "--flows-parquet"):
            # with a good output beside it: nothing at all is written
            other = "--csv" if opt != "--csv" else "--parquet"
            r = invoke(results, "export", str(store), opt, str(out), other, str(tmp_path / "good.out"))
            one_line_error(r, f"cannot export: {opt}: {out} {kind}; dclab writes only over a regular file or nothing")
            assert listing(tmp_path) == before
    r = invoke(results, "export", str(store), "--csv", str(folder))  # click's own check
    assert r.exit_code == 2 and f"'{folder}' is a directory" in r.output and listing(tmp_path) == before
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and os.readlink(link) == str(target)
    assert target.read_text() == "not an export\n" and list(folder.iterdir()) == []


def test_a_failed_export_leaves_existing_outputs_exactly_as_they_were(tmp_path):
    store = make(tmp_path / "store.sqlite")
    csv_out, pq_out = tmp_path / "runs.csv", tmp_path / "runs.parquet"
    r = invoke(results, "export", str(store), "--csv", str(csv_out), "--parquet", str(pq_out))
    assert r.exit_code == 0, r.output
    os.utime(csv_out, ns=(10**18, 10**18))
    os.utime(pq_out, ns=(10**18, 10**18))
    before = {p: snapshot(p) for p in (csv_out, pq_out)}
    names = listing(tmp_path)
    # refused before anything is written: a condition SQLite does not compile
    r = invoke(results, "export", str(store), "--csv", str(csv_out), "--parquet", str(pq_out), "--where", "nonsense =")
    one_line_error(r, "cannot export: --where 'nonsense ='")
    # failing while the files are written: abs() of the smallest integer overflows at run time
    r = invoke(results, "export", str(store), "--csv", str(csv_out), "--parquet", str(pq_out),
               "--where", "abs(-9223372036854775807 - rep) > 0")
    one_line_error(r, "cannot export:", "integer overflow")
    assert {p: snapshot(p) for p in (csv_out, pq_out)} == before, "an earlier export is left as it was"
    assert listing(tmp_path) == names, "no temporary file is left"


# ---------------------------------------------------------------------------------------
# 2. Read-only use writes nothing

def test_reading_opens_the_store_read_only_and_changes_nothing(tmp_path):
    store = make(tmp_path / "store.sqlite", n=5)
    os.utime(store, ns=(10**18, 10**18))
    before = snapshot(store)
    s = open_existing(store)
    assert s.readonly and len(s.rows()) == 5 and s.keys() == {f"k{i}" for i in range(5)}
    with s.db() as db, pytest.raises(sqlite3.OperationalError, match="readonly"):
        db.execute("DELETE FROM runs")
    with s.db() as db, pytest.raises(sqlite3.OperationalError, match="readonly"):
        db.execute("PRAGMA user_version = 7")
    with pytest.raises(StoreError, match="opened read-only"):
        s.add(rec("new"))
    assert len(open_store(None, store).keys()) == 5  # what plot and report open
    assert len(runs_frame(store)) == 5 and len(flows_frame(str(store))) == 5
    r = invoke(results, "export", str(store), "--csv", str(tmp_path / "o.csv"), "--flows-parquet", str(tmp_path / "f.pq"))
    assert r.exit_code == 0, r.output
    assert snapshot(store) == before, "the store's bytes and mtime are as they were"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.pq", "o.csv", "store.sqlite"], "no -wal or -shm left"
    assert sql(store, "PRAGMA user_version") == [(2,)]


def test_a_schema1_store_is_read_without_migrating_it(tmp_path):
    path = tmp_path / "old.sqlite"
    v1_store(path)
    before = snapshot(path)
    rows = {r["run_key"]: r for r in open_existing(path).rows()}
    assert {f["name"]: f["mean_mbps"] for f in rows["f1"]["flows"]} == {"dc": 14.2, "sc1": 10.8, "sc2": 10.9}
    assert rows["t1"]["options"] == {"size": 5 * 10**6}
    with open_existing(path).db() as db, pytest.raises(sqlite3.OperationalError, match="readonly"):
        db.execute("DELETE FROM runs")  # the converted copy in memory is read-only too
    r = invoke(results, "export", str(path), "--csv", str(tmp_path / "old.csv"))
    assert r.exit_code == 0 and r.output.strip() == f"2 run(s) written to {tmp_path / 'old.csv'}", r.output
    assert snapshot(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.csv", "old.sqlite"], "no .v1.bak: nothing migrated"


# ---------------------------------------------------------------------------------------
# 3. A store from a newer dclab

def test_a_store_from_a_newer_dclab_is_refused_and_left_as_it_is(tmp_path):
    store = make(tmp_path / "new.sqlite")
    sql(store, "PRAGMA user_version = 3")
    os.utime(store, ns=(10**18, 10**18))
    before, names = snapshot(store), listing(tmp_path)
    message = f"{store} was written by a newer dclab (schema 3; this dclab reads up to 2)"
    for opening in (open_existing, Store, runs_frame):
        with pytest.raises(StoreTooNew) as e:
            opening(store)
        assert message in str(e.value)
    one_line_error(invoke(results, "export", str(store), "--csv", str(tmp_path / "o.csv")), message)
    for cmd in (report, plot):
        one_line_error(invoke(cmd, "--store", str(store), "--out", str(tmp_path / "out")), message)
    one_line_error(invoke(results, "merge", str(tmp_path / "dest.sqlite"), str(store)), "cannot merge: " + message)
    good = make(tmp_path / "good.sqlite", prefix="g")
    names["good.sqlite"] = listing(tmp_path)["good.sqlite"]
    one_line_error(invoke(results, "merge", str(store), str(good)), f"cannot merge into {store}: " + message)
    assert snapshot(store) == before and listing(tmp_path) == names


# ---------------------------------------------------------------------------------------
# 4. The schema-1 migration is one transaction

def test_a_migration_that_fails_on_one_row_leaves_the_store_as_it_was(tmp_path):
    path = tmp_path / "store.sqlite"
    v1_store(path)
    sql(path,  # a third run, after the good ones, whose metrics are not JSON
        "INSERT INTO runs (run_key, campaign, experiment, sweep, param, value, stack, cc, host_config, rep, "
        "ok, scenario, metrics, environment, run_dir, machine, started_at, finished_at) VALUES "
        "('zbad', 'c', 'throughput', '', '', '', 'tcp', 'cubic', 'tcp', 1, 1, '{}', '{trunc', '{}', "
        "'/r', 'm', 'a', 'b')")
    before, names = snapshot(path), listing(tmp_path)
    for _ in range(2):  # and again: nothing half-done the first time
        with pytest.raises(StoreError, match=r"run 'zbad' does not convert from schema 1 \(JSONDecodeError.*"
                                             r"the store is left as it was, on schema 1"):
            Store(path)
        assert snapshot(path) == before and listing(tmp_path) == names, "byte for byte, and no .v1.bak left"
    with pytest.raises(StoreError, match="run 'zbad' does not convert"):
        open_existing(path)
    assert sql(path, "SELECT name FROM sqlite_master WHERE type = 'table'") == [("runs",)]
    assert "dc_mbps" in {r[1] for r in sql(path, "PRAGMA table_info(runs)")}
    assert sql(path, "SELECT COUNT(*) FROM runs") == [(3,)]
    dest = tmp_path / "dest.sqlite"
    one_line_error(invoke(results, "merge", str(dest), str(path)), "run 'zbad' does not convert")
    assert not dest.exists() and snapshot(path) == before


def test_a_migration_never_writes_its_copy_through_a_symlink(tmp_path):
    path = tmp_path / "store.sqlite"
    v1_store(path)
    precious = tmp_path / "precious"
    precious.write_text("mine")
    (tmp_path / "store.sqlite.v1.bak").symlink_to(precious)
    assert Store(path).keys() == {"f1", "t1"}
    assert precious.read_text() == "mine"
    copy = tmp_path / "store.sqlite.v1.2.bak"  # the copy went beside it, under a free name
    assert "dc_mbps" in {r[1] for r in sql(copy, "PRAGMA table_info(runs)")}


# ---------------------------------------------------------------------------------------
# 5. Damaged pages

def damaged(path: Path) -> Path:
    """A store of 400 runs with 6 pages in the middle overwritten with garbage."""
    make(path, n=400, metrics={"t0_ms": 1.0, "blob": "x" * 300})
    size = path.stat().st_size
    [(page,)] = sql(path, "PRAGMA page_size")
    assert not (path.parent / (path.name + "-wal")).exists() and size > 60 * page
    with open(path, "r+b") as f:
        f.seek((size // page // 2) * page)
        f.write(random.Random(7).randbytes(6 * page))
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        try:  # SQLite finds the damage: quick_check says so, or cannot even finish
            assert db.execute("PRAGMA quick_check").fetchall() != [("ok",)], "the garbage landed where SQLite looks"
        except sqlite3.DatabaseError as e:
            assert "malformed" in str(e)
    return path


def test_a_damaged_store_is_reported_in_one_line_and_never_merged(tmp_path):
    bad = damaged(tmp_path / "bad.sqlite")
    good = make(tmp_path / "good.sqlite", prefix="g")
    before, names = snapshot(bad), listing(tmp_path)
    damage = f"{bad} is damaged: "
    for cmd in (report, plot):
        one_line_error(invoke(cmd, "--store", str(bad), "--out", str(tmp_path / "out")), damage)
    one_line_error(invoke(results, "export", str(bad), "--csv", str(tmp_path / "o.csv")), "cannot export: " + damage)
    one_line_error(invoke(results, "merge", str(tmp_path / "new.sqlite"), str(good), str(bad)), "cannot merge: " + damage)
    one_line_error(invoke(results, "merge", str(bad), str(good)), f"cannot merge into {bad}: " + damage)
    with pytest.raises(StoreDamaged, match="is damaged"):
        runs_frame(bad)
    with pytest.raises(StoreDamaged, match="is damaged"):
        Store(tmp_path / "other.sqlite").merge(bad)
    (tmp_path / "other.sqlite").unlink()
    assert snapshot(bad) == before and listing(tmp_path) == names


def test_a_run_whose_json_is_broken_is_reported_as_damage(tmp_path):
    store = make(tmp_path / "store.sqlite")
    sql(store, "UPDATE runs SET metrics = '{half' WHERE run_key = 'k1'")
    one_line_error(invoke(results, "export", str(store), "--csv", str(tmp_path / "o.csv")),
                   f"cannot export: {store} is damaged: the metrics of run 'k1' is not JSON")
    assert not (tmp_path / "o.csv").exists()


# ---------------------------------------------------------------------------------------
# 6. Merges into one destination, at once

def _merge_in_child(dest: str, src: str, start, out) -> None:
    start.wait()
    r = CliRunner().invoke(results, ["merge", dest, src])
    out.send((r.exit_code, r.output, repr(r.exception)))


def test_two_merges_into_one_new_destination_give_the_union(tmp_path):
    a = make(tmp_path / "a.sqlite", n=150, prefix="a")
    b = make(tmp_path / "b.sqlite", n=150, prefix="b")
    Store(b).add(rec("a0", machine="other"))  # one run both have
    ctx = multiprocessing.get_context("fork")
    for i in range(4):
        dest = tmp_path / f"merged{i}" / "all.sqlite"
        start = ctx.Barrier(2)
        pipes = [ctx.Pipe(duplex=False) for _ in range(2)]
        procs = [ctx.Process(target=_merge_in_child, args=(str(dest), str(src), start, w))
                 for src, (_, w) in zip((a, b), pipes)]
        for p in procs:
            p.start()
        results_ = [rd.recv() for rd, _ in pipes]
        for p in procs:
            p.join(30)
            assert p.exitcode == 0
        assert [code for code, _, _ in results_] == [0, 0], results_
        assert Store(dest).keys() == {f"a{j}" for j in range(150)} | {f"b{j}" for j in range(150)}
        assert sql(dest, "PRAGMA integrity_check") == [("ok",)]
        assert sorted(p.name for p in dest.parent.iterdir()) == ["all.sqlite"], "no lock or temporary file left"


def test_a_merge_waits_for_the_lock_and_a_new_destination_appears_whole(tmp_path):
    from dclab.campaign.merge import merge_lock

    src = make(tmp_path / "src.sqlite")
    dest = tmp_path / "dest.sqlite"
    waited = []
    with merge_lock(dest):  # another merge is running
        ctx = multiprocessing.get_context("fork")
        rd, w = ctx.Pipe(duplex=False)
        p = ctx.Process(target=lambda: w.send(merge_stores(dest, [src], on_wait=lambda: w.send("waiting"))[1]))
        p.start()
        waited.append(rd.recv())
        assert not dest.exists()
    assert rd.recv() == 3 and waited == ["waiting"]
    p.join(30)
    assert Store(dest).keys() == {"k0", "k1", "k2"} and not (tmp_path / "dest.sqlite.lock").exists()


# ---------------------------------------------------------------------------------------
# 7. Input that is not a store

def test_what_is_not_a_store_is_refused_in_one_line_without_blocking_or_writing(tmp_path):
    text = tmp_path / "notes.sqlite"
    text.write_text("these are my notes, not a database\n" * 50)
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    fifo = tmp_path / "pipe.sqlite"
    os.mkfifo(fifo)
    good = make(tmp_path / "good.sqlite")
    names = listing(tmp_path)
    for bad, why in ((text, f"{text} is not a dclab result store: file is not a database"),
                     (empty, f"{empty} is not a dclab result store (no table of runs)"),
                     (fifo, f"{fifo} is a FIFO, not a dclab result store")):
        one_line_error(invoke(results, "export", str(bad), "--csv", str(tmp_path / "o.csv")), "cannot export: " + why)
        for cmd in (report, plot):
            one_line_error(invoke(cmd, "--store", str(bad), "--out", str(tmp_path / "out")), why)
        one_line_error(invoke(results, "merge", str(tmp_path / "new.sqlite"), str(good), str(bad)), "cannot merge: " + why)
        one_line_error(invoke(results, "merge", str(bad), str(good)), f"cannot merge into {bad}: " + why)
        for opening in (open_existing, runs_frame):
            with pytest.raises(NotAStore):
                opening(bad)
        assert listing(tmp_path) == names
    for bad in (text, fifo):  # opening to write refuses them too (an empty file becomes a store)
        with pytest.raises(NotAStore):
            Store(bad)
    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE notes (x TEXT)")
    before = snapshot(foreign)
    with pytest.raises(NotAStore, match="no table of runs"):
        Store(foreign)  # another program's database is not made a store
    assert snapshot(foreign) == before and stat.S_ISFIFO(os.lstat(fifo).st_mode)


# ---------------------------------------------------------------------------------------
# 8. --where

@pytest.mark.parametrize("where", ["1; DROP TABLE runs", "1; DELETE FROM runs", "1) UNION SELECT 1; DELETE FROM flows --"])
def test_where_cannot_change_the_store(tmp_path, where):
    store = make(tmp_path / "store.sqlite")
    before = snapshot(store)
    one_line_error(invoke(results, "export", str(store), "--csv", str(tmp_path / "o.csv"), "--where", where),
                   "cannot export: --where")
    with pytest.raises(sqlite3.Error):
        open_existing(store).rows(where)
    assert snapshot(store) == before and len(open_existing(store).rows()) == 3
    assert not (tmp_path / "o.csv").exists()


def test_the_api_keeps_writing_and_merging(tmp_path):
    """The writing side as before: create, add, merge (schema-1 sources converted, left alone)."""
    old = tmp_path / "old.sqlite"
    v1_store(old)
    before = snapshot(old)
    dest = Store(tmp_path / "d.sqlite")
    dest.add(rec("k0"))
    assert dest.merge(old) == 2 and dest.merge(old) == 0
    assert snapshot(old) == before, "a merge only reads its sources"
    counts, total = merge_stores(tmp_path / "e.sqlite", [dest.path, old])
    assert [n for _, n in counts] == [3, 0] and total == 3 and not (tmp_path / "e.sqlite.lock").exists()


def test_a_failed_merge_names_the_destination_given_not_its_temporary(tmp_path, monkeypatch):
    a = make(tmp_path / "a.sqlite", n=3, prefix="a")
    dest = tmp_path / "out" / "all.sqlite"

    def failing(self, other):
        raise StoreError(f"cannot merge {other} into {self.path}: disk I/O error")

    monkeypatch.setattr(Store, "merge", failing)
    with pytest.raises(StoreError) as e:
        merge_stores(dest, [a])
    assert f"into {dest}: disk I/O error" in str(e.value) and ".tmp" not in str(e.value), str(e.value)
    assert not dest.exists() and sorted(p.name for p in dest.parent.iterdir()) == []


def test_a_where_that_adds_rows_of_its_own_reads_only_the_stores(tmp_path):
    """A UNION of made-up rows (which a healthy store was then called damaged for) only
    chooses run keys: the store's own runs come back, whole."""
    store = make(tmp_path / "store.sqlite")
    keys = {r["run_key"] for r in open_existing(store).rows()}
    made_up = "0 UNION SELECT 'not json' UNION SELECT run_key FROM runs"
    assert {r["run_key"] for r in open_existing(store).rows(made_up)} == keys
    assert open_existing(store).rows("0 UNION SELECT 'k-none'") == []
