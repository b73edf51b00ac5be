"""The result store: one SQLite row per finished run, with every parameter, the
environment and every metric, queryable with ordinary tools (`sqlite3`, pandas).

A row is written in one transaction after its run has finished, so a store never holds
a half-finished run; the raw per-run data stays in the run's directory (`run_dir`).
Stores from several machines (campaign shards) merge by run key.
"""

from __future__ import annotations

import csv
import os
import json
import sqlite3
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_key      TEXT PRIMARY KEY,  -- stable hash of everything that defines the run
    campaign     TEXT NOT NULL,     -- campaign name, or '' for single runs and sweeps
    experiment   TEXT NOT NULL,     -- 'throughput' or 'fairness'
    sweep        TEXT NOT NULL,     -- the sweep this run belongs to ('' if none)
    param        TEXT NOT NULL,     -- swept parameter ('' if none)
    value        TEXT NOT NULL,     -- its value as written ('' if none)
    value_num    REAL,              -- its value as a number, for plotting
    stack        TEXT NOT NULL,     -- 'aioquic', or per flow 'dc=aioquic,sc1=tcp,sc2=tcp'
    cc           TEXT NOT NULL,
    host_config  TEXT NOT NULL,     -- 'quic-default', 'quic-large' or 'tcp'
    rep          INTEGER NOT NULL,
    size         INTEGER,           -- bytes per download
    duration_s   REAL,              -- fairness measurement window
    ok           INTEGER NOT NULL,
    error        TEXT,
    goodput_mbps REAL,              -- throughput
    jfi          REAL,              -- fairness: Jain's index over the flows' means
    dc_mbps      REAL,
    sc1_mbps     REAL,
    sc2_mbps     REAL,
    scenario     TEXT NOT NULL,     -- JSON of the scenario model
    metrics      TEXT NOT NULL,     -- JSON of every metric of the run
    environment  TEXT NOT NULL,     -- JSON: kernel, host settings, versions, commit
    run_dir      TEXT NOT NULL,     -- raw data of the run
    machine      TEXT NOT NULL,
    started_at   TEXT NOT NULL,
    finished_at  TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_sweep ON runs (campaign, experiment, sweep, param);
"""

COLUMNS = [
    "run_key", "campaign", "experiment", "sweep", "param", "value", "value_num", "stack", "cc", "host_config", "rep",
    "size", "duration_s", "ok", "error", "goodput_mbps", "jfi", "dc_mbps", "sc1_mbps", "sc2_mbps", "scenario",
    "metrics", "environment", "run_dir", "machine", "started_at", "finished_at",
]
JSON_COLUMNS = {"scenario", "metrics", "environment"}


@dataclass
class RunRecord:
    run_key: str
    experiment: str
    stack: str
    cc: str
    host_config: str
    rep: int
    ok: bool
    scenario: dict
    metrics: dict
    environment: dict
    run_dir: str
    machine: str
    started_at: str
    finished_at: str
    campaign: str = ""
    sweep: str = ""
    param: str = ""
    value: str = ""
    value_num: float | None = None
    size: int | None = None
    duration_s: float | None = None
    error: str | None = None
    goodput_mbps: float | None = None
    jfi: float | None = None
    dc_mbps: float | None = None
    sc1_mbps: float | None = None
    sc2_mbps: float | None = None
    extra: dict = field(default_factory=dict)

    def row(self) -> tuple:
        d = self.__dict__
        return tuple(json.dumps(d[c], default=str) if c in JSON_COLUMNS else d[c] for c in COLUMNS)


class Store:
    """A SQLite file of runs."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with closing(self._connect()) as db, db:
            db.executescript(SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=60)
        db.execute("PRAGMA journal_mode=WAL")  # readers never block the writer
        return db

    def add(self, rec: RunRecord) -> None:
        """Stores a finished run (atomically; a run stored twice keeps the first)."""
        marks = ",".join("?" * len(COLUMNS))
        with closing(self._connect()) as db, db:
            db.execute(f"INSERT OR IGNORE INTO runs ({','.join(COLUMNS)}) VALUES ({marks})", rec.row())

    def has(self, run_key: str) -> bool:
        with closing(self._connect()) as db:
            return db.execute("SELECT 1 FROM runs WHERE run_key = ?", (run_key,)).fetchone() is not None

    def keys(self) -> set[str]:
        with closing(self._connect()) as db:
            return {r[0] for r in db.execute("SELECT run_key FROM runs")}

    def rows(self, where: str = "1", params: tuple = ()) -> list[dict]:
        """Runs as dicts, JSON columns decoded. ``where`` is an SQL condition."""
        with closing(self._connect()) as db:
            db.row_factory = sqlite3.Row
            out = []
            for r in db.execute(f"SELECT * FROM runs WHERE {where} ORDER BY experiment, sweep, value_num, rep", params):
                d = dict(r)
                for c in JSON_COLUMNS:
                    d[c] = json.loads(d[c])
                out.append(d)
            return out

    def merge(self, other: Path) -> int:
        """Adds the runs of another store that this one lacks; returns how many."""
        with closing(self._connect()) as db, db:
            before = db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
            db.execute("ATTACH DATABASE ? AS other", (str(other),))
            db.execute(f"INSERT OR IGNORE INTO runs ({','.join(COLUMNS)}) SELECT {','.join(COLUMNS)} FROM other.runs")
            after = db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
        return after - before

    def export_csv(self, out: Path, where: str = "1") -> int:
        """Writes the runs as CSV (JSON columns as JSON text); returns the row count."""
        with closing(self._connect()) as db, open(out, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(COLUMNS)
            n = 0
            for r in db.execute(f"SELECT {','.join(COLUMNS)} FROM runs WHERE {where} ORDER BY experiment, sweep, value_num, rep"):
                w.writerow(r)
                n += 1
        return n


ROOT = Path(__file__).resolve().parent.parent


def campaign_dir(name: str) -> Path:
    """Where a campaign keeps its store (store.sqlite), run directories (runs/) and
    report (report/): results/NAME, or $DCLAB_RESULTS/NAME."""
    return Path(os.environ.get("DCLAB_RESULTS", ROOT / "results")) / name


def campaign_store(name: str) -> Store:
    return Store(campaign_dir(name) / "store.sqlite")
