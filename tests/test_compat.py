"""What a refactoring must not change: every campaign plans the run keys it planned before
(so an old campaign resumes instead of starting over), and a store written by an older
dclab opens, is recognised as done, and its runs read into the report's tables.

The fixtures were written by the code before the typed seams (commit 8f9c869):
``tests/data/run_keys.json`` by ``python tests/test_compat.py --keys`` run on that tree,
``tests/data/store_mquic_8f9c869.sql`` by ``python tests/test_compat.py --store STORE``
from the ``tables-*`` runs of its mquic campaign. Rewrite them only for a change that is
meant to change run keys or the store (and say so: every old result is then rerun).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import sys
from pathlib import Path

import pytest

from dclab.campaign import plan as cp
from dclab.campaign import typed_runs
from dclab.campaign.store import Store
from dclab.experiments import get_experiment
from dclab.paths import CAMPAIGNS

DATA = Path(__file__).parent / "data"
KEYS = DATA / "run_keys.json"
OLD_STORE = DATA / "store_mquic_8f9c869.sql"
# The runs kept in the old store: the paper-tables group at domestic low loss, both
# controllers, two repetitions each.
KEPT = "experiment = 'mquic' AND rep <= 2 AND json_extract(metrics, '$.preset') = 'domestic-low-loss'"


def planned_keys() -> dict[str, dict[str, object]]:
    """Per campaign file, the number of runs it plans at its own repetitions, and a digest
    of their keys in plan order."""
    out: dict[str, dict[str, object]] = {}
    for path in sorted(CAMPAIGNS.glob("*.toml")):
        runs = cp.plan(cp.load(path.stem), max_runs=10**9)
        keys = [r.key for r in runs]
        out[path.stem] = {"runs": len(keys), "sha256": hashlib.sha256("\n".join(keys).encode()).hexdigest(),
                          "first": keys[0]}
    return out


def test_every_campaign_plans_the_keys_it_planned_before():
    before = json.loads(KEYS.read_text())
    now = planned_keys()
    assert set(now) == set(before), "a campaign file was added or removed: add its keys (see the module's docstring)"
    changed = {name: (before[name]["runs"], now[name]["runs"]) for name in now if now[name] != before[name]}
    assert not changed, f"run keys changed (runs before, now): {changed}; stored runs would be repeated"


@pytest.fixture
def old_store(tmp_path: Path) -> Path:
    path = tmp_path / "store.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(OLD_STORE.read_text())
    return path


def test_an_old_store_opens_and_its_campaign_resumes_where_it_stopped(old_store):
    store = Store(old_store)
    stored = store.keys()
    assert len(stored) == 4
    c = cp.select_groups(cp.load("mquic"), ["tables-domestic-low-loss"])
    runs = cp.plan(c, reps=2)
    todo = [r for r in runs if r.key not in stored]
    # Both controllers' two repetitions are done; nothing else of the group is.
    assert stored <= {r.key for r in runs}
    assert len(todo) == len(runs) - 4


def test_an_old_stores_runs_read_into_the_papers_tables(old_store):
    typed = typed_runs.runs(Store(old_store))
    assert len(typed.runs) == 4 and all(r.ok for r in typed.runs) and not typed.unreadable
    (title, table), *rest = get_experiment("mquic").sweep_tables(typed.runs)
    assert "Tables 6-9" in title and len(rest) == 4, [t for t, _ in rest]
    # The same improvements (%) the code that wrote the store computed from it.
    assert table.rows == [
        ["500 KB", "10.3", "10.5", "-24.0", "-23.9", "5.4", "5.9", "-31.5", "-31.2"],
        ["2.4 MB", "18.5", "30.8", "-27.4", "-40.6", "-0.7", "-2.2", "-21.2", "-25.9"],
        ["6 MB", "31.7", "52.1", "-37.6", "-34.0", "3.9", "9.1", "-13.1", "-14.6"],
    ]


def _dump_store(src: Path, dst: Path) -> None:
    """The kept runs of ``src`` (and their flows) as SQL."""
    out = sqlite3.connect(":memory:")
    with sqlite3.connect(f"file:{src}?mode=ro", uri=True) as db:
        for (sql,) in db.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL"):
            out.execute(sql)
        out.execute(f"PRAGMA user_version = {db.execute('PRAGMA user_version').fetchone()[0]}")
        keys = [k for (k,) in db.execute(f"SELECT run_key FROM runs WHERE {KEPT} ORDER BY run_key")]
        for table in ("runs", "flows"):
            cols = [c[1] for c in db.execute(f"PRAGMA table_info({table})")]
            marks = ",".join("?" * len(cols))
            for k in keys:
                for row in db.execute(f"SELECT * FROM {table} WHERE run_key = ?", (k,)):
                    out.execute(f"INSERT INTO {table} VALUES ({marks})", row)
    version = out.execute("PRAGMA user_version").fetchone()[0]
    dst.write_text("\n".join(out.iterdump()) + f"\nPRAGMA user_version = {version};\n")


if __name__ == "__main__":
    if sys.argv[1:] == ["--keys"]:
        KEYS.write_text(json.dumps(planned_keys(), indent=1, sort_keys=True) + "\n")
    elif len(sys.argv) == 3 and sys.argv[1] == "--store":
        _dump_store(Path(sys.argv[2]), OLD_STORE)
    else:
        sys.exit("usage: python tests/test_compat.py --keys | --store STORE")
