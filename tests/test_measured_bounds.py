"""Every bound of tests/measured.py against the runs kept in tests/data/measured.jsonl:
each kept value lies inside it, it is tight enough that a 20 % regression fails, and a
test checks it."""

from __future__ import annotations

import re
import statistics
from pathlib import Path

from measured import BOUNDS, REGRESSION, kept

MIN_RUNS = 3  # kept runs a bound is derived from, at least


def test_each_bound_holds_its_kept_runs_and_would_catch_a_regression():
    runs = kept()
    problems = []
    for name, b in BOUNDS.items():
        values = runs.get(name, [])
        if len(values) < MIN_RUNS:
            problems.append(f"{name}: {len(values)} kept runs, {MIN_RUNS} needed (scripts/measure_bounds.py)")
            continue
        if b.lo is None and b.hi is None:
            problems.append(f"{name}: neither lo nor hi: a ceiling or floor alone is a bound any result meets")
        outside = [v for v in values if not b.holds(v)]
        if outside:
            problems.append(f"{name}: kept runs outside {b}: {outside}")
        median = statistics.median(values)
        t = b.tolerance
        if t > REGRESSION and not b.what:
            problems.append(f"{name}: a tolerance above {REGRESSION:.0%} needs its reason in `what`")
        if b.lo is not None and b.lo < (1 - t) * median:
            problems.append(f"{name}: lo {b.lo:g} lets a {t:.0%} regression of the median {median:.4g} pass")
        if b.hi is not None and b.hi > (1 + t) * median:
            problems.append(f"{name}: hi {b.hi:g} lets a {t:.0%} regression of the median {median:.4g} pass")
    assert not problems, "\n".join(problems)


def test_each_bound_is_checked_by_a_test_and_each_kept_run_has_a_bound():
    here = Path(__file__).parent
    sources = "\n".join(p.read_text() for p in here.glob("test_*.py") if p.name != Path(__file__).name)

    # An f-string names a family of bounds (f"stacks.{stack}.{cc}.2mb_mbps"); one that ends in
    # a placeholder (f"directions.{V.name}.{name}") needs the bound's last part quoted too.
    families = []
    for m in re.finditer(r"""\bf(?:"([^"\n]*\{[^"\n]*)"|'([^'\n]*\{[^'\n]*)')""", sources):
        text = m.group(1) or m.group(2)
        parts = re.split(r"(\{[^}]*\})", text)
        pattern = "".join("[^\"']+" if p.startswith("{") else re.escape(p) for p in parts)
        families.append((re.compile(pattern), text.endswith("}")))

    def checked(name: str) -> bool:
        if re.search(rf"""["']{re.escape(name)}["']""", sources):
            return True
        last_quoted = bool(re.search(rf"""["']{re.escape(name.rsplit(".", 1)[-1])}["']""", sources))
        return any(p.fullmatch(name) and (not open_end or last_quoted) for p, open_end in families)

    unused = [n for n in BOUNDS if not checked(n)]
    assert not unused, f"bounds no test checks: {unused}"
    orphans = sorted(set(kept()) - set(BOUNDS))
    assert not orphans, f"kept runs of bounds that no longer exist (remove them from tests/data/measured.jsonl): {orphans}"


def test_a_bound_refuses_what_lies_outside_it():
    from measured import Bound

    b = Bound(lo=30.0, ceiling=38.4)
    assert b.holds(30.0) and b.holds(38.4) and not b.holds(29.9) and not b.holds(38.5)
    assert str(b) == ">= 30, <= 38.4 (ceiling)"
    assert Bound().tolerance == 0.2
    t = Bound(hi=0.05, floor=0.024)
    assert t.holds(0.03) and not t.holds(0.051) and not t.holds(0.02)
