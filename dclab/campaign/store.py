"""The result store: one SQLite row per finished run with generic columns (what ran, where,
its outcome), the run's options, metrics and environment as JSON, and a per-flow table,
queryable with ordinary tools (`sqlite3`, pandas).

A run is written in one transaction after it has finished, so a store never holds a
half-finished run; the raw per-run data stays in the run's directory (`run_dir`). Stores
from several machines (campaign shards) merge by run key. A store written before the
per-flow table existed (schema 1: one column per metric and per fairness flow) is
migrated when opened, after a copy of it is kept as `store.sqlite.v1.bak`.
"""

from __future__ import annotations

import csv
import json
import re
import sqlite3
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..paths import results_dir

VERSION = 2

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


@dataclass
class RunRecord:
    run_key: str
    experiment: str
    stack: str
    cc: str
    host_config: str
    rep: int
    ok: bool
    scenario: dict[str, Any]
    metrics: dict[str, Any]
    environment: dict[str, Any]
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
    options: dict[str, Any] = field(default_factory=dict)
    flows: list[dict[str, Any]] = field(default_factory=list)  # FLOW_COLUMNS but run_key, by name: flow

    def row(self) -> tuple[Any, ...]:
        d = self.__dict__
        return tuple(json.dumps(d[c], default=str) if c in JSON_COLUMNS else d[c] for c in COLUMNS)

    def flow_rows(self) -> list[tuple[Any, ...]]:
        return [tuple([self.run_key] + [f.get("name") if c == "flow" else f.get(c) for c in FLOW_COLUMNS[1:]])
                for f in self.flows]


class Store:
    """A SQLite file of runs."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with closing(self._connect()) as db:
            if _is_v1(db):
                db.close()
                migrate_v1(self.path)
        with closing(self._connect()) as db, db:
            db.executescript(SCHEMA)
            db.execute(f"PRAGMA user_version = {VERSION}")

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=60)
        db.execute("PRAGMA journal_mode=WAL")  # readers never block the writer
        return db

    def add(self, rec: RunRecord) -> None:
        """Stores a finished run and its flows (atomically; a run stored twice keeps the first)."""
        marks = ",".join("?" * len(COLUMNS))
        fmarks = ",".join("?" * len(FLOW_COLUMNS))
        with closing(self._connect()) as db, db:
            cur = db.execute(f"INSERT OR IGNORE INTO runs ({','.join(COLUMNS)}) VALUES ({marks})", rec.row())
            if cur.rowcount:
                db.executemany(f"INSERT OR IGNORE INTO flows ({','.join(FLOW_COLUMNS)}) VALUES ({fmarks})",
                               rec.flow_rows())

    def has(self, run_key: str) -> bool:
        with closing(self._connect()) as db:
            return db.execute("SELECT 1 FROM runs WHERE run_key = ?", (run_key,)).fetchone() is not None

    def keys(self) -> set[str]:
        with closing(self._connect()) as db:
            return {r[0] for r in db.execute("SELECT run_key FROM runs")}

    def rows(self, where: str = "1", params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        """Runs as dicts, JSON columns decoded, each with its ``flows`` (a list of dicts with
        ``name``). ``where`` is an SQL condition on the runs table."""
        with closing(self._connect()) as db:
            db.row_factory = sqlite3.Row
            out = []
            for r in db.execute(f"SELECT * FROM runs WHERE {where} ORDER BY experiment, sweep, value_num, rep", params):
                d = dict(r)
                for c in JSON_COLUMNS:
                    d[c] = json.loads(d[c])
                d["flows"] = []
                out.append(d)
            by_key = {d["run_key"]: d for d in out}
            for f in db.execute("SELECT * FROM flows ORDER BY rowid"):
                owner = by_key.get(f["run_key"])
                if owner is not None:
                    fd = dict(f)
                    fd["name"] = fd.pop("flow")
                    del fd["run_key"]
                    owner["flows"].append(fd)
            return out

    def merge(self, other: Path) -> int:
        """Adds the runs (and their flows) of another store that this one lacks; returns how
        many. A schema-1 store is migrated first (its copy kept beside it)."""
        open_existing(other)  # refuses what is not a store; migrates an old one
        with closing(self._connect()) as db, db:
            before = db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
            db.execute("ATTACH DATABASE ? AS other", (str(other),))
            db.execute(f"INSERT OR IGNORE INTO flows ({','.join(FLOW_COLUMNS)}) SELECT {','.join(FLOW_COLUMNS)} "
                       "FROM other.flows WHERE run_key NOT IN (SELECT run_key FROM runs)")
            db.execute(f"INSERT OR IGNORE INTO runs ({','.join(COLUMNS)}) SELECT {','.join(COLUMNS)} FROM other.runs")
            after = db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
        return after - before

    def export_csv(self, out: Path, where: str = "1") -> int:
        """Writes the runs as CSV (JSON columns as JSON text, flows as a JSON list); returns
        the row count."""
        n = 0
        with open(out, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(COLUMNS + ["flows"])
            for r in self.rows(where):
                w.writerow([json.dumps(r[c]) if c in JSON_COLUMNS else r[c] for c in COLUMNS] + [json.dumps(r["flows"])])
                n += 1
        return n


class NotAStore(ValueError):
    pass


def check_store(path: Path) -> None:
    """Raises NotAStore unless ``path`` is a dclab result store (any schema), reading it
    only: nothing is written to a file that is not one."""
    path = Path(path)
    if not path.is_file():
        raise NotAStore(f"no result store at {path}")
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            cols = {r[1] for r in db.execute("PRAGMA table_info(runs)")}
    except sqlite3.DatabaseError as e:
        raise NotAStore(f"{path} is not a dclab result store: {e}") from None
    if not {"run_key", "experiment", "scenario", "metrics"} <= cols:
        raise NotAStore(f"{path} is not a dclab result store (no table of runs)")


def open_existing(path: Path) -> Store:
    """An existing store (migrated if it is from before the flow table); NotAStore for
    anything else, which is left untouched."""
    check_store(path)
    return Store(path)


def _is_v1(db: sqlite3.Connection) -> bool:
    cols = {r[1] for r in db.execute("PRAGMA table_info(runs)")}
    return bool(cols) and "options" not in cols


def migrate_v1(path: Path) -> None:
    """Schema 1 (a column per metric and per fairness flow, `<flow>_mbps`) to schema 2, in
    one transaction, after copying the file to ``<name>.v1.bak``."""
    backup = path.with_name(path.name + ".v1.bak")
    if not backup.exists():
        with closing(sqlite3.connect(path)) as src, closing(sqlite3.connect(backup)) as dst:
            src.backup(dst)
    with closing(sqlite3.connect(path, timeout=60)) as db, db:
        old = [r[1] for r in db.execute("PRAGMA table_info(runs)")]
        db.execute("ALTER TABLE runs RENAME TO runs_v1")
        db.execute("DROP INDEX IF EXISTS runs_by_sweep")
        db.executescript(SCHEMA)
        flow_cols = [c for c in old if re.fullmatch(r"[a-z0-9]+_mbps", c) and c != "goodput_mbps"]
        db.row_factory = sqlite3.Row
        for r in db.execute("SELECT * FROM runs_v1").fetchall():
            d = dict(r)
            options = {name: d[col] for col, name in V1_OPTION_COLUMNS.items() if d.get(col) is not None}
            rec = RunRecord(
                run_key=d["run_key"], campaign=d["campaign"], experiment=d["experiment"], sweep=d["sweep"],
                param=d["param"], value=d["value"], value_num=d["value_num"], stack=d["stack"], cc=d["cc"],
                host_config=d["host_config"], rep=d["rep"], ok=bool(d["ok"]), error=d["error"],
                scenario=json.loads(d["scenario"]), options=options, metrics=json.loads(d["metrics"]),
                environment=json.loads(d["environment"]), run_dir=d["run_dir"], machine=d["machine"],
                started_at=d["started_at"], finished_at=d["finished_at"],
                flows=[{"name": c[:-5], "stack": "", "cc": d["cc"], "bearer": c[:-5], "mean_mbps": d[c]}
                       for c in flow_cols if d[c] is not None],
            )
            db.execute(f"INSERT INTO runs ({','.join(COLUMNS)}) VALUES ({','.join('?' * len(COLUMNS))})", rec.row())
            db.executemany(f"INSERT INTO flows ({','.join(FLOW_COLUMNS)}) VALUES ({','.join('?' * len(FLOW_COLUMNS))})",
                           rec.flow_rows())
        db.execute("DROP TABLE runs_v1")
        db.execute(f"PRAGMA user_version = {VERSION}")


def campaign_dir(name: str) -> Path:
    """Where a campaign keeps its store (store.sqlite), run directories (runs/) and
    report (report/): results/NAME, or $DCLAB_RESULTS/NAME."""
    return results_dir() / name


def campaign_store(name: str) -> Store:
    return Store(campaign_dir(name) / "store.sqlite")


__all__ = ["Store", "RunRecord", "COLUMNS", "FLOW_COLUMNS", "campaign_dir", "campaign_store", "migrate_v1"]
