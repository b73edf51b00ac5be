"""The result store: one SQLite row per finished run with generic columns (what ran, where,
its outcome), the run's options, metrics and environment as JSON, and a per-flow table,
queryable with ordinary tools (`sqlite3`, pandas).

A run is written in one transaction after it has finished, so a store never holds a
half-finished run; the raw per-run data stays in the run's directory (`run_dir`). Stores
from several machines (campaign shards) merge by run key (`merge.py`: one merge into a
destination at a time, a new destination built beside it and moved in whole).

Opening a store to write (`Store(path)`) creates it if there is nothing at `path`. A store
written before the per-flow table existed (schema 1: one column per metric and per
fairness flow) is migrated then, in one transaction, after a copy of it is kept as
`store.sqlite.v1.bak`; a failed migration leaves the file as it was. Opening to read
(`open_existing`, `Store(path, readonly=True)`) uses a read-only SQLite connection and
never writes to the store: a schema-1 store is read through a migrated copy in memory, the
file left as it is (the empty -wal and -shm files SQLite makes beside a WAL store for a
reader are removed after, when no other connection uses them: `_tidy`). Either way, anything that is not a regular file holding a dclab store (a
directory, a FIFO, a device, a text file, another program's database), a store written by
a newer dclab (schema above VERSION) and, for reading and merging, a store whose pages are
damaged (SQLite's quick_check) is refused with a StoreError saying so in one line, and
left untouched.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import re
import sqlite3
import stat
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..files import JsonObject, check_name, clip, kind_of, output_file
from ..paths import results_dir

VERSION = 2  # PRAGMA user_version of the stores this dclab writes; it reads 1 and 2

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_key      TEXT PRIMARY KEY,  -- stable hash of everything that defines the run
    campaign     TEXT NOT NULL,     -- campaign name, or '' for single runs and sweeps
    experiment   TEXT NOT NULL,     -- a registered experiment's name
    sweep        TEXT NOT NULL,     -- the sweep this run belongs to ('' if none)
    param        TEXT NOT NULL,     -- swept parameter ('' if none)
    value        TEXT NOT NULL,     -- its value as written ('' if none)
    value_num    REAL,              -- its value as a number, for plotting
    stack        TEXT NOT NULL,     -- 'aioquic', or per flow 'dc=aioquic,sc1=tcp,sc2=tcp'
    cc           TEXT NOT NULL,
    host_config  TEXT NOT NULL,     -- 'quic-default', 'quic-large', 'tcp', 'quic-default+tcp'
    rep          INTEGER NOT NULL,
    seed         INTEGER,           -- the repetition's seed (NULL in stores from before seeds)
    ok           INTEGER NOT NULL,
    error        TEXT,
    scenario     TEXT NOT NULL,     -- JSON of the scenario model
    options      TEXT NOT NULL,     -- JSON of the experiment's options
    metrics      TEXT NOT NULL,     -- JSON of every metric of the run
    environment  TEXT NOT NULL,     -- JSON: kernel, host settings, versions, commit
    run_dir      TEXT NOT NULL,     -- raw data of the run
    machine      TEXT NOT NULL,
    started_at   TEXT NOT NULL,
    finished_at  TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_sweep ON runs (campaign, experiment, sweep, param);
CREATE TABLE IF NOT EXISTS flows (
    run_key      TEXT NOT NULL REFERENCES runs (run_key),
    flow         TEXT NOT NULL,     -- the flow's name in its experiment's plan
    stack        TEXT NOT NULL,
    cc           TEXT NOT NULL,
    bearer       TEXT NOT NULL,
    port         INTEGER,
    mean_mbps    REAL,              -- at the bearer, over the measured window
    goodput_mbps REAL,              -- from the client: bytes / (last byte - request)
    bytes        INTEGER,
    completion_s REAL,
    ok           INTEGER,
    PRIMARY KEY (run_key, flow)
);
"""

COLUMNS = [
    "run_key", "campaign", "experiment", "sweep", "param", "value", "value_num", "stack", "cc", "host_config", "rep",
    "seed", "ok", "error", "scenario", "options", "metrics", "environment", "run_dir", "machine", "started_at",
    "finished_at",
]
FLOW_COLUMNS = ["run_key", "flow", "stack", "cc", "bearer", "port", "mean_mbps", "goodput_mbps", "bytes", "completion_s", "ok"]
JSON_COLUMNS = {"scenario", "options", "metrics", "environment"}
V1_OPTION_COLUMNS = {"size": "size", "duration_s": "duration"}  # schema 1 column -> option name
STORE_COLUMNS = {"run_key", "experiment", "scenario", "metrics"}  # what makes a table of runs a dclab store's


def _statements(script: str) -> list[str]:
    """The SQL statements of `script`, one by one: executescript would commit the
    transaction they belong in."""
    out, cur = [], ""
    for line in script.splitlines(keepends=True):
        cur += line
        if sqlite3.complete_statement(cur):
            out.append(cur.strip())
            cur = ""
    return out


SCHEMA_STATEMENTS = _statements(SCHEMA)


def _select(where: str) -> str:
    """The runs ``where`` picks. The condition only chooses run keys: whatever it adds (a
    UNION of made-up rows) cannot put a row the store does not hold into the result, so a
    run read back is always the store's own, and a broken one means a damaged store."""
    return (f"SELECT * FROM runs WHERE run_key IN (SELECT run_key FROM runs WHERE {where}) "
            "ORDER BY experiment, sweep, value_num, rep")


class StoreError(ValueError):
    """A store dclab will not open, read or change, with the reason in one line."""


class NotAStore(StoreError):
    """Nothing at the path, or something that is not a dclab result store."""


class StoreTooNew(StoreError):
    """A store written by a newer dclab (a schema this one does not know)."""


class StoreDamaged(StoreError):
    """A store whose SQLite pages are damaged."""


def _uri(path: Path, mode: str) -> str:
    """A SQLite URI for `path` (any characters) opened with `mode` (ro, rw, rwc)."""
    return f"file:{urllib.parse.quote(os.path.abspath(path), safe='/')}?mode={mode}"


def _one_line(text: str, limit: int = 160) -> str:
    """`text` (an SQLite message, possibly several lines) on one line, cut to about `limit`."""
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[:limit].rstrip() + " ..."


def _damaged(path: Path, detail: object) -> StoreDamaged:
    return StoreDamaged(f"{path} is damaged: {_one_line(str(detail))}; dclab neither reads nor merges it "
                        f"(restore a copy, or salvage its runs with sqlite3's .recover)")


def _translate(path: Path, e: sqlite3.DatabaseError) -> StoreError | None:
    """The StoreError a SQLite error means for the store at `path` (damage, not a database),
    or None for an error of the query itself (syntax, a missing column, a lock)."""
    name = getattr(e, "sqlite_errorname", "") or ""
    if name.startswith("SQLITE_CORRUPT"):
        return _damaged(path, e)
    if name.startswith("SQLITE_NOTADB"):
        return NotAStore(f"{path} is not a dclab result store: {e}")
    if name.startswith(("SQLITE_IOERR", "SQLITE_CANTOPEN", "SQLITE_READONLY")):
        return StoreError(f"cannot read {path}: {e}")
    return None


def _regular(path: Path, what: str = "result store") -> bool:
    """True if a regular file is at `path` (a symlink to one counts), False if nothing is.
    Anything else (a directory, FIFO, device, socket) is NotAStore: only its inode is
    looked at, it is never opened, so a FIFO cannot block."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    except OSError as e:
        raise NotAStore(f"cannot read {path}: {e.strerror or e}") from None
    if not stat.S_ISREG(st.st_mode):
        raise NotAStore(f"{path} is {kind_of(st.st_mode)}, not a dclab {what} (a store is a regular SQLite file)")
    return True


def _schema(db: sqlite3.Connection, path: Path, name: str = "main", empty_ok: bool = False) -> int:
    """The schema of the store open as `name` in `db`: 1 or VERSION (0: an empty database,
    if `empty_ok`). NotAStore for another database, StoreTooNew for a newer dclab's store."""
    version = db.execute(f"PRAGMA {name}.user_version").fetchone()[0]
    cols = {r[1] for r in db.execute(f"PRAGMA {name}.table_info(runs)")}
    if not cols:
        tables = db.execute(f"SELECT COUNT(*) FROM {name}.sqlite_master").fetchone()[0]
        if empty_ok and tables == 0:
            return 0
        raise NotAStore(f"{path} is not a dclab result store (no table of runs)")
    if version > VERSION:
        raise StoreTooNew(f"{path} was written by a newer dclab (schema {version}; this dclab reads up to {VERSION}); "
                          "it is left as it is: use that dclab to read or merge it")
    if not STORE_COLUMNS <= cols:
        raise NotAStore(f"{path} is not a dclab result store (its table of runs lacks {sorted(STORE_COLUMNS - cols)})")
    return 1 if "options" not in cols else VERSION


def _quick_check(db: sqlite3.Connection, path: Path, name: str = "main") -> None:
    """StoreDamaged unless SQLite's quick_check finds every page of `name` sound."""
    problems = [r[0] for r in db.execute(f"PRAGMA {name}.quick_check(3)")]
    if problems != ["ok"]:
        lines = [x for p in problems for x in str(p).splitlines() if x.strip() and not x.startswith("*** in database")]
        raise _damaged(path, "; ".join(lines))


def _read_only(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(_uri(path, "ro"), uri=True, timeout=60, isolation_level=None, check_same_thread=False)


def _sidecars(path: Path) -> bool:
    """Whether SQLite's -wal or -shm file of `path` is there."""
    return any(os.path.lexists(f"{path}{suffix}") for suffix in ("-wal", "-shm"))


def remove_store(path: Path) -> None:
    """Removes the store at ``path`` with SQLite's files beside it: for a store this
    process made and stored nothing in (a campaign that could not start)."""
    for p in (path, *(Path(f"{path}{suffix}") for suffix in ("-wal", "-shm", "-journal"))):
        with contextlib.suppress(FileNotFoundError):
            p.unlink()


def _tidy(path: Path) -> None:
    """Removes the empty -wal and -shm files a read-only connection to a WAL store made (it
    cannot remove them itself), the way SQLite removes them: a read-write connection that
    only reads is closed; if it is the last one (SQLite takes the exclusive lock to know),
    SQLite deletes them, else they stay for the last one. Nothing is written to the store:
    only called when this process made them, the WAL holds no frame and the file is
    writable; any failure leaves them."""
    wal = Path(f"{path}-wal")
    try:
        if wal.stat().st_size != 0 or not os.access(path, os.W_OK):
            return
        with contextlib.closing(sqlite3.connect(_uri(path, "rw"), uri=True, timeout=0)) as db:
            db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    except (OSError, sqlite3.Error):
        pass


@contextlib.contextmanager
def _reading(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to `path`, closed after; SQLite's side files it made are
    removed (_tidy)."""
    had = _sidecars(path)
    db = _read_only(path)
    try:
        yield db
    finally:
        db.close()
        if not had and _sidecars(path):
            _tidy(path)


def inspect_store(path: Path, integrity: bool = True) -> int:
    """The schema (1 or VERSION) of the dclab store at `path`, read through a read-only
    connection (nothing is written to the file): NotAStore if there is none or something
    else, StoreTooNew if a newer dclab wrote it, StoreDamaged if `integrity` and its pages
    are damaged."""
    path = Path(path)
    if not _regular(path):
        raise NotAStore(f"no result store at {path}")
    try:
        with _reading(path) as db:
            schema = _schema(db, path)
            if integrity:
                _quick_check(db, path)
            return schema
    except sqlite3.DatabaseError as e:
        raise (_translate(path, e) or NotAStore(f"{path} is not a dclab result store: {e}")) from None


@dataclass
class RunRecord:
    run_key: str
    experiment: str
    stack: str
    cc: str
    host_config: str
    rep: int
    ok: bool
    scenario: JsonObject
    metrics: JsonObject
    environment: JsonObject
    run_dir: str
    machine: str
    started_at: str
    finished_at: str
    campaign: str = ""
    sweep: str = ""
    param: str = ""
    value: str = ""
    value_num: float | None = None
    seed: int | None = None
    error: str | None = None
    options: JsonObject = field(default_factory=dict)
    flows: list[JsonObject] = field(default_factory=list)  # FLOW_COLUMNS but run_key, by name: flow

    def row(self) -> tuple[Any, ...]:
        d = self.__dict__
        return tuple(json.dumps(d[c], default=str) if c in JSON_COLUMNS else d[c] for c in COLUMNS)

    def flow_rows(self) -> list[tuple[Any, ...]]:
        return [tuple([self.run_key] + [f.get("name") if c == "flow" else f.get(c) for c in FLOW_COLUMNS[1:]])
                for f in self.flows]


def _insert(db: sqlite3.Connection, rec: RunRecord) -> bool:
    """Adds `rec` and its flows unless its run key is there; True if it was added."""
    cur = db.execute(f"INSERT OR IGNORE INTO main.runs ({','.join(COLUMNS)}) VALUES ({','.join('?' * len(COLUMNS))})",
                     rec.row())
    if not cur.rowcount:
        return False
    db.executemany(f"INSERT OR IGNORE INTO main.flows ({','.join(FLOW_COLUMNS)}) "
                   f"VALUES ({','.join('?' * len(FLOW_COLUMNS))})", rec.flow_rows())
    return True


@contextlib.contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE ... COMMIT on `db` (opened with isolation_level=None); ROLLBACK on
    any failure, so the file is as it was."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


class Store:
    """A SQLite file of runs: `Store(path)` to write (created if missing, migrated if of
    schema 1), `Store(path, readonly=True)` (or `open_existing`) to read only."""

    def __init__(self, path: Path, readonly: bool = False):
        self.path = Path(path)
        self.readonly = readonly
        self._memory: sqlite3.Connection | None = None  # a schema-1 store read only: its migrated copy
        if readonly:
            self._open_to_read()
        else:
            self._open_to_write()

    def _open_to_read(self) -> None:
        if inspect_store(self.path) == 1:
            mem = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            try:
                with _reading(self.path) as src:
                    src.backup(mem)
                with _transaction(mem):
                    _migrate_tables(mem, self.path)
            except sqlite3.DatabaseError as e:
                mem.close()
                raise (_translate(self.path, e) or StoreError(f"cannot read {self.path}: {e}")) from None
            except BaseException:
                mem.close()
                raise
            mem.execute("PRAGMA query_only = 1")
            self._memory = mem

    def _open_to_write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        schema, fresh = 0, True
        if _regular(self.path) and self.path.stat().st_size > 0:
            try:
                with _reading(self.path) as db:
                    schema = _schema(db, self.path, empty_ok=True)
                    fresh = schema == 0 or db.execute("PRAGMA user_version").fetchone()[0] != VERSION or not \
                        db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'flows'").fetchone()
            except sqlite3.DatabaseError as e:
                raise (_translate(self.path, e) or NotAStore(f"{self.path} is not a dclab result store: {e}")) from None
        elif os.path.lexists(self.path) and not self.path.exists():
            raise NotAStore(f"{self.path} is a symlink to nothing; dclab does not create a store through it")
        if schema == 1:
            migrate_v1(self.path)
        if fresh:
            with contextlib.closing(self._connect(create=True)) as db, _transaction(db):
                for stmt in SCHEMA_STATEMENTS:
                    db.execute(stmt)
                db.execute(f"PRAGMA user_version = {VERSION}")

    def _connect(self, create: bool = False) -> sqlite3.Connection:
        db = sqlite3.connect(_uri(self.path, "rwc" if create else "rw"), uri=True, timeout=60, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")  # readers never block the writer
        return db

    @contextlib.contextmanager
    def db(self) -> Iterator[sqlite3.Connection]:
        """A connection to query the store with (`SELECT ...`); read-only if the store was
        opened read-only. A damaged page met on the way is StoreDamaged."""
        try:
            if self._memory is not None:
                yield self._memory
            elif self.readonly:
                with _reading(self.path) as db:
                    yield db
            else:
                with contextlib.closing(self._connect()) as db:
                    yield db
        except sqlite3.DatabaseError as e:
            err = _translate(self.path, e)
            if err is None:
                raise
            raise err from None

    def _writable(self, what: str) -> None:
        if self.readonly:
            raise StoreError(f"cannot {what} {self.path}: it was opened read-only")

    def add(self, rec: RunRecord) -> None:
        """Stores a finished run and its flows (atomically; a run stored twice keeps the first)."""
        self._writable("add a run to")
        with contextlib.closing(self._connect()) as db, _transaction(db):
            _insert(db, rec)

    def has(self, run_key: str) -> bool:
        with self.db() as db:
            return db.execute("SELECT 1 FROM runs WHERE run_key = ?", (run_key,)).fetchone() is not None

    def keys(self) -> set[str]:
        with self.db() as db:
            return {r[0] for r in db.execute("SELECT run_key FROM runs")}

    def check_where(self, where: str, params: tuple[Any, ...] = ()) -> None:
        """The sqlite3 error ``rows(where)`` would raise for a condition SQLite cannot
        compile (syntax, a missing column, more than one statement), found without reading
        a run (EXPLAIN)."""
        with self.db() as db:
            db.execute(f"EXPLAIN {_select(where)}", params).fetchall()

    def check(self) -> None:
        """StoreDamaged unless SQLite's quick_check finds every page sound."""
        with self.db() as db:
            _quick_check(db, self.path)

    def rows(self, where: str = "1", params: tuple[Any, ...] = ()) -> list[JsonObject]:
        """Runs as dicts, JSON columns decoded, each with its ``flows`` (a list of dicts with
        ``name``). ``where`` is an SQL condition on the runs table; on a store opened
        read-only it runs on a read-only connection, so no condition can change the store."""
        with self.db() as db, contextlib.closing(db.cursor()) as cur:  # closed: a failed one keeps its connection
            cur.row_factory = sqlite3.Row
            out = []
            for r in cur.execute(_select(where), params):
                d = dict(r)
                for c in JSON_COLUMNS:
                    try:
                        d[c] = json.loads(d[c])
                    except (TypeError, ValueError):
                        raise _damaged(self.path, f"the {c} of run {clip(d.get('run_key'))} is not JSON") from None
                d["flows"] = []
                out.append(d)
            by_key = {d["run_key"]: d for d in out}
            for f in cur.execute("SELECT * FROM flows ORDER BY rowid"):
                owner = by_key.get(f["run_key"])
                if owner is not None:
                    fd = dict(f)
                    fd["name"] = fd.pop("flow")
                    del fd["run_key"]
                    owner["flows"].append(fd)
            return out

    def merge(self, other: Path) -> int:
        """Adds the runs (and their flows) of another store that this one lacks, in one
        transaction; returns how many. The other store is read only (checked first: a
        store, not from a newer dclab, not damaged); one of schema 1 is converted as its
        runs are copied, and left as it is."""
        self._writable("merge into")
        other = Path(other)
        schema = inspect_store(other)
        had = _sidecars(other)
        with contextlib.closing(self._connect()) as db:
            try:
                db.execute("ATTACH DATABASE ? AS other", (_uri(other, "ro"),))
                with _transaction(db):
                    before = db.execute("SELECT COUNT(*) FROM main.runs").fetchone()[0]
                    _schema(db, other, "other")  # the same file still
                    if schema == 1:
                        for rec in _v1_records(db, other, "other.runs"):
                            _insert(db, rec)
                    else:
                        db.execute(f"INSERT OR IGNORE INTO main.flows ({','.join(FLOW_COLUMNS)}) "
                                   f"SELECT {','.join(FLOW_COLUMNS)} FROM other.flows "
                                   "WHERE run_key NOT IN (SELECT run_key FROM main.runs)")
                        db.execute(f"INSERT OR IGNORE INTO main.runs ({','.join(COLUMNS)}) "
                                   f"SELECT {','.join(COLUMNS)} FROM other.runs")
                    after = db.execute("SELECT COUNT(*) FROM main.runs").fetchone()[0]
            except sqlite3.DatabaseError as e:
                raise (_translate(other, e) or StoreError(f"cannot merge {other} into {self.path}: {e}")) from None
            finally:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("DETACH DATABASE other")
                if not had and _sidecars(other):
                    _tidy(other)
        return int(after - before)

    def write_csv(self, out: Path, where: str = "1") -> int:
        """Writes the runs as CSV to the file `out` as it is (see export_csv); returns the
        row count."""
        n = 0
        with open(out, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(COLUMNS + ["flows"])
            for r in self.rows(where):
                w.writerow([json.dumps(r[c]) if c in JSON_COLUMNS else r[c] for c in COLUMNS] + [json.dumps(r["flows"])])
                n += 1
        return n

    def export_csv(self, out: Path, where: str = "1") -> int:
        """Writes the runs as CSV (JSON columns as JSON text, flows as a JSON list) beside
        `out` and moves it in (only over a regular file or nothing: files.output_file);
        returns the row count."""
        with output_file(out, "CSV export") as tmp:
            n = self.write_csv(tmp, where)
        return n


def check_store(path: Path) -> None:
    """Raises a StoreError unless ``path`` is a dclab result store of a schema this dclab
    reads, with sound pages (inspect_store), reading it only: nothing is written."""
    inspect_store(path)


def open_existing(path: Path) -> Store:
    """An existing store, opened read-only (a schema-1 store is read through a migrated
    copy in memory); a StoreError (NotAStore, StoreTooNew, StoreDamaged) for anything else,
    which is left untouched."""
    return Store(path, readonly=True)


def _v1_records(db: sqlite3.Connection, path: Path, table: str) -> Iterator[RunRecord]:
    """The runs of the schema-1 `table` (`main.runs_v1`, `other.runs`) as records; a row
    that does not convert is a StoreError naming its run."""
    name, _, tname = table.rpartition(".")
    old = [r[1] for r in db.execute(f"PRAGMA {name or 'main'}.table_info({tname})")]
    flow_cols = [c for c in old if re.fullmatch(r"[a-z0-9]+_mbps", c) and c != "goodput_mbps"]
    with contextlib.closing(db.cursor()) as cur:
        cur.row_factory = sqlite3.Row
        rows = cur.execute(f"SELECT * FROM {table}").fetchall()
    for r in rows:
        d = dict(r)
        try:
            options = {name: d[col] for col, name in V1_OPTION_COLUMNS.items() if d.get(col) is not None}
            yield RunRecord(
                run_key=d["run_key"], campaign=d["campaign"], experiment=d["experiment"], sweep=d["sweep"],
                param=d["param"], value=d["value"], value_num=d["value_num"], stack=d["stack"], cc=d["cc"],
                host_config=d["host_config"], rep=d["rep"], ok=bool(d["ok"]), error=d["error"],
                scenario=json.loads(d["scenario"]), options=options, metrics=json.loads(d["metrics"]),
                environment=json.loads(d["environment"]), run_dir=d["run_dir"], machine=d["machine"],
                started_at=d["started_at"], finished_at=d["finished_at"],
                flows=[{"name": c[:-5], "stack": "", "cc": d["cc"], "bearer": c[:-5], "mean_mbps": d[c]}
                       for c in flow_cols if d[c] is not None],
            )
        except (KeyError, TypeError, ValueError) as e:
            raise StoreError(f"{path}: run {clip(d.get('run_key'))} does not convert from schema 1 "
                             f"({type(e).__name__}: {_one_line(str(e))})") from None


def _migrate_tables(db: sqlite3.Connection, path: Path) -> None:
    """Schema 1 to VERSION inside the caller's transaction on `db`."""
    db.execute("ALTER TABLE runs RENAME TO runs_v1")
    db.execute("DROP INDEX IF EXISTS runs_by_sweep")
    for stmt in SCHEMA_STATEMENTS:
        db.execute(stmt)
    for rec in _v1_records(db, path, "main.runs_v1"):
        try:
            db.execute(f"INSERT INTO runs ({','.join(COLUMNS)}) VALUES ({','.join('?' * len(COLUMNS))})", rec.row())
            db.executemany(f"INSERT INTO flows ({','.join(FLOW_COLUMNS)}) VALUES ({','.join('?' * len(FLOW_COLUMNS))})",
                           rec.flow_rows())
        except sqlite3.IntegrityError as e:
            raise StoreError(f"{path}: run {clip(rec.run_key)} does not convert from schema 1 ({e})") from None
    db.execute("DROP TABLE runs_v1")
    db.execute(f"PRAGMA user_version = {VERSION}")


def migrate_v1(path: Path) -> None:
    """Schema 1 (a column per metric and per fairness flow, `<flow>_mbps`) to schema 2, in
    one transaction (BEGIN IMMEDIATE: a second process migrating the same store waits, then
    finds nothing to do), after copying the file to ``<name>.v1.bak`` (``<name>.v1.N.bak``
    if that exists). On any failure the transaction is rolled back, the store is as it
    was and the copy made for it is removed; the error is a StoreError."""
    path = Path(path)
    with contextlib.closing(sqlite3.connect(_uri(path, "rw"), uri=True, timeout=60, isolation_level=None)) as db:
        backup: Path | None = None
        try:
            with _transaction(db):
                if _schema(db, path) != 1:
                    return  # migrated meanwhile
                backup = _keep_v1_copy(path)
                _migrate_tables(db, path)
        except BaseException as e:
            if backup is not None:
                backup.unlink(missing_ok=True)
            if isinstance(e, sqlite3.DatabaseError):
                raise (_translate(path, e) or StoreError(f"cannot migrate {path} from schema 1: {e}")) from None
            if isinstance(e, StoreError):
                raise StoreError(f"{e}; the store is left as it was, on schema 1") from None
            raise


def _keep_v1_copy(path: Path) -> Path:
    """A copy of the store at `path` beside it, made through a read-only connection."""
    backup = path.with_name(path.name + ".v1.bak")
    n = 1
    while os.path.lexists(backup):
        n += 1
        backup = path.with_name(f"{path.name}.v1.{n}.bak")
    with output_file(backup, "schema-1 copy") as tmp:
        with _reading(path) as src, contextlib.closing(sqlite3.connect(tmp)) as dst:
            src.backup(dst)
    return backup


def campaign_dir(name: str) -> Path:
    """Where a campaign keeps its store (store.sqlite), run directories (runs/) and
    report (report/): results/NAME, or $DCLAB_RESULTS/NAME. FileRefused (a ValueError)
    for a name that is not one (files.NAME_RE): it would lead out of the results root."""
    return results_dir() / check_name(name, "campaign name")


def campaign_store(name: str) -> Store:
    return Store(campaign_dir(name) / "store.sqlite")


__all__ = ["Store", "RunRecord", "COLUMNS", "FLOW_COLUMNS", "VERSION", "StoreError", "NotAStore", "StoreTooNew",
           "StoreDamaged", "campaign_dir", "campaign_store", "check_store", "inspect_store",
           "migrate_v1", "open_existing"]
