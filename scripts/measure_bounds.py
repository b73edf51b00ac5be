"""Runs the real-run tests several times, some rounds with one core kept busy, and reports
what they did: per test how often it failed (by an assertion, or by a value outside its
bound in tests/measured.py), and per bound its runs' spread, the margin of the worst run to
the bound in units of the runs' own noise, and the bound that spread allows. With --write
the values measured replace their bounds' kept runs in tests/data/measured.jsonl. Needs
root and a machine with nothing else running (no experiment, build or test).

    .venv/bin/python scripts/measure_bounds.py [--rounds 10] [--busy 5] [--real] [--write] [PYTEST ARGS...]

The tests run: PYTEST ARGS, else with --real every test marked root (each real run through
namespaces, dcemu or the endpoints), else every test function that checks a bound. The
busy rounds come first; in them a process spins on one core (bounded in time) for the whole
round. While measuring, ``check_bound`` logs instead of asserting, so a test with several
bounds logs them all; a value outside its current bound counts as that test's failure here.

A suggested bound lies NOISE_MARGIN of the runs' noise beyond the worst run, and no closer
than 95 % of it; the table says "spread too wide" where that lets a 20 % regression of the
median pass: the metric then needs a steadier measure (a longer run, a mean of several), or
a tolerance with its reason (tests/measured.py).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from measured import BOUNDS, DATA, NOISE_MARGIN, REGRESSION, grid_reach, margin, noise  # noqa: E402

BUSY_LIMIT_S = 4 * 3600  # the spinning process ends by itself after this, whatever happens here
SPIN = "import time\nend = time.monotonic() + {limit}\nwhile time.monotonic() < end:\n    pass\n"


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


@contextlib.contextmanager
def one_core_busy() -> Iterator[None]:
    """A process spinning on one core (the scheduler's choice) until the block ends."""
    p = subprocess.Popen([sys.executable, "-c", SPIN.format(limit=BUSY_LIMIT_S)], start_new_session=True)
    try:
        yield
    finally:
        p.kill()
        p.wait()


@dataclass
class Outcome:
    """One test's rounds: how many ran, and each failure (round, busy, why)."""

    runs: int = 0
    failures: list[tuple[int, bool, str]] = field(default_factory=list)


def node_id(case: ET.Element) -> str:
    """A junit testcase as pytest's node id (tests/test_x.py::test_y[param])."""
    return f"{case.get('classname', '').replace('.', '/')}.py::{case.get('name')}"


def read_junit(path: Path, round_no: int, busy: bool, outcomes: dict[str, Outcome]) -> None:
    for case in ET.parse(path).getroot().iter("testcase"):
        kids = {k.tag: k for k in case}
        if "skipped" in kids:
            continue
        o = outcomes.setdefault(node_id(case), Outcome())
        o.runs += 1
        bad = kids.get("failure") if "failure" in kids else kids.get("error")
        if bad is not None:
            o.failures.append((round_no, busy, (bad.get("message") or "").splitlines()[0][:160] if bad.get("message") else bad.tag))


def suggest(name: str, values: list[float]) -> tuple[float, float, bool, bool]:
    """The lo and hi the runs allow, and whether each would let a 20 % regression pass. A
    histogram quantile's reach the bucket next beyond its runs (tests/measured.py, grid_reach)."""
    sigma, med = noise(values), statistics.median(values)
    lo = min(0.95 * min(values), min(values) - NOISE_MARGIN * sigma)
    hi = max(1.05 * max(values), max(values) + NOISE_MARGIN * sigma)
    if (reach := grid_reach(name, values)) is not None:
        lo, hi = min(lo, reach[0]), max(hi, reach[1])
    return lo, hi, lo < (1 - REGRESSION) * med, hi > (1 + REGRESSION) * med


def report(records: list[dict], outcomes: dict[str, Outcome]) -> None:
    # a value outside its current bound is a failure of the test that measured it
    for rec in records:
        b = BOUNDS.get(rec["bound"])
        if b is not None and not b.holds(rec["value"]) and rec.get("test"):
            o = outcomes.setdefault(rec["test"], Outcome())
            o.failures.append((rec["round"], rec["busy"], f"{rec['bound']} = {rec['value']:.4g} outside {b}"))
    print("\ntests: runs, failures (quiet + busy), the first failure")
    for name, o in sorted(outcomes.items()):
        rounds = {(r, b) for r, b, _ in o.failures}
        quiet, busy = sum(not b for _, b in rounds), sum(b for _, b in rounds)
        first = f"  round {o.failures[0][0]}: {o.failures[0][2]}" if o.failures else ""
        print(f"  {name:90s} {o.runs:3d} {quiet + busy:3d} ({quiet} + {busy}){first}")
    by: dict[str, list[dict]] = {}
    for rec in records:
        by.setdefault(rec["bound"], []).append(rec)
    print(f"\n{'bound':52s} {'n':>3s} {'busy':>4s} {'min':>9s} {'median':>9s} {'max':>9s} {'noise':>8s}  "
          f"{'bound now':28s} {'margin':>7s}  suggested")
    for name, recs in sorted(by.items()):
        vs = [r["value"] for r in recs]
        b = BOUNDS.get(name)
        m = margin(b, vs) if b is not None and len(vs) > 1 else math.nan
        lo, hi, lo_wide, hi_wide = suggest(name, vs)
        sides = [f"lo {lo:.4g}" + (" (spread too wide)" if lo_wide else "") if b is None or b.lo is not None else "",
                 f"hi {hi:.4g}" + (" (spread too wide)" if hi_wide else "") if b is None or b.hi is not None else ""]
        print(f"{name:52s} {len(vs):3d} {sum(r['busy'] for r in recs):4d} {min(vs):9.4g} {statistics.median(vs):9.4g} "
              f"{max(vs):9.4g} {noise(vs):8.3g}  {str(b) if b else 'none':28s} {m:7.2f}  "
              + "; ".join(x for x in sides if x))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=10, help="times each test runs (default 10)")
    ap.add_argument("--busy", type=int, default=5, help="of the rounds, how many with one core kept busy (default 5)")
    ap.add_argument("--real", action="store_true", help="every real-run test (marked root), not only those with bounds")
    ap.add_argument("--write", action="store_true", help="replace the measured bounds' kept runs")
    ap.add_argument("--keep-log", type=Path, help="also append every value measured to this file (JSON lines)")
    ap.add_argument("--from-log", type=Path, action="append", metavar="LOG", help=(
        "run nothing: report (and with --write keep) the values of earlier --keep-log files (repeatable)"))
    ap.add_argument("pytest_args", nargs="*", help="tests to run (default: every test that checks a bound)")
    args = ap.parse_args()
    if not 1 <= args.rounds <= 50:
        ap.error("--rounds: must be between 1 and 50")
    if not 0 <= args.busy <= args.rounds:
        ap.error(f"--busy: must be between 0 and --rounds ({args.rounds})")
    records: list[dict] = []
    outcomes: dict[str, Outcome] = {}
    if args.from_log:
        for n, log in enumerate(args.from_log):
            records += [{**json.loads(line), "round": f"{n + 1}.{json.loads(line).get('round', 0)}"}
                        for line in log.read_text().splitlines() if line.strip()]
        return finish(args, records, outcomes)
    if os.geteuid() != 0:
        ap.error("needs root: the tests it runs build namespaces")
    work = Path(tempfile.mkdtemp(prefix="measure-bounds-"))
    targets = args.pytest_args or (["-m", "root", "tests"] if args.real else bound_tests())
    for i in range(1, args.rounds + 1):
        busy = i <= args.busy
        log, junit = work / f"round{i}.jsonl", work / f"round{i}.xml"
        log.touch()
        print(f"round {i} of {args.rounds}{' (one core busy)' if busy else ''}: pytest {' '.join(targets)}",
              file=sys.stderr, flush=True)
        env = dict(os.environ, DCLAB_MEASURE_LOG=str(log), DCLAB_MEASURE_BUSY="1" if busy else "0")
        with one_core_busy() if busy else contextlib.nullcontext():
            # A failing test still logged its values first: keep going, the tables show it.
            subprocess.run([sys.executable, "-m", "pytest", "-q", "--no-header", "-p", "no:cacheprovider",
                            f"--junitxml={junit}", *targets], cwd=ROOT, env=env, stdout=sys.stderr)
        if junit.exists():
            read_junit(junit, i, busy, outcomes)
        new = [{**json.loads(line), "round": i} for line in log.read_text().splitlines() if line.strip()]
        records += new
        if args.keep_log:
            with args.keep_log.open("a") as f:
                f.writelines(json.dumps(r) + "\n" for r in new)
    print(f"rounds' logs and junit files: {work}", file=sys.stderr)
    return finish(args, records, outcomes)


def finish(args: argparse.Namespace, records: list[dict], outcomes: dict[str, Outcome]) -> int:
    report(records, outcomes)
    if args.write:
        measured = {r["bound"] for r in records}
        old = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()] if DATA.exists() else []
        keep = [r for r in old if r["bound"] not in measured] + [{k: v for k, v in r.items() if k != "round"} for r in records]
        DATA.write_text("".join(json.dumps(r) + "\n" for r in keep))
        print(f"wrote {len(records)} runs of {len(measured)} bounds to {DATA.relative_to(ROOT)} ({len(keep)} in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
