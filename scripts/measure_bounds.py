"""Runs the tests that check measured bounds (tests/measured.py) several times and keeps
what they measured: every value goes to tests/data/measured.jsonl (with --write), and a
table gives per bound the runs' spread and the bound that spread allows. Needs root and a
quiet machine (no other experiment, build or test running).

    .venv/bin/python scripts/measure_bounds.py [--rounds 5] [--write] [PYTEST ARGS...]

PYTEST ARGS select the tests (default: every test function that calls ``check_bound``); with
--write the kept runs of the bounds measured now replace their earlier ones, the others
stay. A suggested lower bound is the lower of 95 % of the lowest run and 81 % of the
median, an upper one the higher of 105 % of the highest and 119 % of the median
(tests/measured.py says why); when that would let a 20 % regression of the median pass,
the table says "spread too wide" and the metric needs longer runs, not a looser bound.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "measured.jsonl"


def bound_tests() -> list[str]:
    """Every test function that checks a bound (calls ``check_bound``), as pytest node ids."""
    ids = []
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        if "from measured import" not in path.read_text():
            continue
        functions = [n for n in ast.parse(path.read_text()).body if isinstance(n, ast.FunctionDef)]
        calls = {f.name: {n.func.id for n in ast.walk(f) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
                 for f in functions}
        checking = {"check_bound"}  # and every function of the module that calls one of these
        while grown := {name for name, called in calls.items() if called & checking} - checking:
            checking |= grown
        ids += [f"{path.relative_to(ROOT)}::{f.name}" for f in functions if f.name.startswith("test_") and f.name in checking]
    return ids


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5, help="times each test runs (default 5)")
    ap.add_argument("--write", action="store_true", help="replace the measured bounds' kept runs")
    ap.add_argument("pytest_args", nargs="*", help="tests to run (default: every test that checks a bound)")
    args = ap.parse_args()
    if not 1 <= args.rounds <= 50:
        ap.error("--rounds: must be between 1 and 50")
    log = Path(tempfile.mkstemp(prefix="measured-", suffix=".jsonl")[1])
    env = dict(os.environ, DCLAB_MEASURE_LOG=str(log))
    targets = args.pytest_args or bound_tests()
    for i in range(1, args.rounds + 1):
        print(f"round {i} of {args.rounds}: pytest {' '.join(targets)}", file=sys.stderr, flush=True)
        # A failing check still logged its value first: keep going, the table shows it.
        subprocess.run([sys.executable, "-m", "pytest", "-q", "--no-header", "-p", "no:cacheprovider", *targets],
                       cwd=ROOT, env=env, stdout=sys.stderr)
    new = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    by: dict[str, list[float]] = {}
    for rec in new:
        by.setdefault(rec["bound"], []).append(float(rec["value"]))
    print(f"{'bound':48s} {'n':>3s} {'min':>10s} {'median':>10s} {'max':>10s}  suggested")
    for name, vs in sorted(by.items()):
        med = statistics.median(vs)
        lo, hi = min(0.95 * min(vs), 0.81 * med), max(1.05 * max(vs), 1.19 * med)
        note = []
        note.append(f"lo {lo:.4g}" + (" (spread too wide)" if lo < 0.8 * med else ""))
        note.append(f"hi {hi:.4g}" + (" (spread too wide)" if hi > 1.2 * med else ""))
        print(f"{name:48s} {len(vs):3d} {min(vs):10.4g} {med:10.4g} {max(vs):10.4g}  {'; '.join(note)}")
    if args.write:
        old = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()] if DATA.exists() else []
        kept = [r for r in old if r["bound"] not in by] + new
        DATA.write_text("".join(json.dumps(r) + "\n" for r in kept))
        print(f"wrote {len(new)} runs of {len(by)} bounds to {DATA.relative_to(ROOT)} ({len(kept)} in all)")
    log.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
