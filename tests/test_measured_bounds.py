"""Every bound of tests/measured.py against the runs kept in tests/data/measured.jsonl:
enough kept runs (some with a core kept busy), each inside the bound by at least twice
their own noise, the bound tight enough that a 20 % regression fails, and a test checks it."""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import pytest
from measured import BOUNDS, MIN_BUSY, MIN_RUNS, NOISE_MARGIN, REGRESSION, Bound, Kept, grid_bucket, grid_reach, kept, kept_runs, margin, on_grid


def bound_problems(name: str, b: Bound, runs: list) -> list[str]:
    """What is wrong with one bound given its kept runs (measured.Kept)."""
    values = [k.value for k in runs]
    problems = []
    if len(values) < MIN_RUNS or sum(k.busy for k in runs) < MIN_BUSY:
        return [f"{name}: {len(values)} kept runs, {sum(k.busy for k in runs)} of them busy; {MIN_RUNS} and "
                f"{MIN_BUSY} needed (scripts/measure_bounds.py --rounds 10 --busy 5)"]
    if b.lo is None and b.hi is None:
        problems.append(f"{name}: neither lo nor hi: a ceiling or floor alone is a bound any result meets")
    outside = [v for v in values if not b.holds(v)]
    if outside:
        problems.append(f"{name}: kept runs outside {b}: {outside}")
    elif (m := margin(b, values)) < NOISE_MARGIN:
        problems.append(f"{name}: its worst kept run lies {m:.2f} of the runs' noise inside {b}, "
                        f"{NOISE_MARGIN:g} needed: an unchanged tree would fail it")
    if (reach := grid_reach(name, values)) is not None:
        below, above = reach
        if b.lo is not None and b.lo > below:
            problems.append(f"{name}: a histogram quantile; lo {b.lo:g} refuses {below:.4g}, the value of the bucket "
                            "next below its lowest kept run")
        if b.hi is not None and b.hi < above:
            problems.append(f"{name}: a histogram quantile; hi {b.hi:g} refuses {above:.4g}, the value of the bucket "
                            "next above its highest kept run")
    median = statistics.median(values)
    t = b.tolerance
    if t > REGRESSION and not b.what:
        problems.append(f"{name}: a tolerance above {REGRESSION:.0%} needs its reason in `what`")
    if b.lo is not None and b.lo < (1 - t) * median:
        problems.append(f"{name}: lo {b.lo:g} lets a {t:.0%} regression of the median {median:.4g} pass")
    if b.hi is not None and b.hi > (1 + t) * median:
        problems.append(f"{name}: hi {b.hi:g} lets a {t:.0%} regression of the median {median:.4g} pass")
    return problems


def _problems(slow: bool) -> list[str]:
    runs = kept_runs()
    return [p for name, b in BOUNDS.items() if b.slow == slow for p in bound_problems(name, b, runs.get(name, []))]


def test_each_bound_holds_its_kept_runs_and_would_catch_a_regression():
    problems = _problems(slow=False)
    assert not problems, "\n".join(problems)


@pytest.mark.slow
def test_each_slow_bound_holds_its_kept_runs_and_would_catch_a_regression():
    """The release check's bounds (DCLAB_SLOW=1), under the same rules: their tests run only
    there, so their kept runs are measured with DCLAB_SLOW=1 scripts/measure_bounds.py."""
    problems = _problems(slow=True)
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
    b = Bound(lo=30.0, ceiling=38.4)
    assert b.holds(30.0) and b.holds(38.4) and not b.holds(29.9) and not b.holds(38.5)
    assert str(b) == ">= 30, <= 38.4 (ceiling)"
    assert Bound().tolerance == 0.2
    t = Bound(hi=0.05, floor=0.024)
    assert t.holds(0.03) and not t.holds(0.051) and not t.holds(0.02)


def test_a_bound_within_its_runs_noise_is_refused():
    from measured import Kept

    def runs(values, busy=MIN_BUSY):
        return [Kept(v, i < busy) for i, v in enumerate(values)]

    values = [30.0, 31.0, 32.0, 30.5, 31.5, 29.5, 32.5, 31.0, 30.0, 32.0]  # sd 1.0
    assert bound_problems("x", Bound(lo=27.0), runs(values)) == []  # 2.5 sd below the worst
    (p,) = bound_problems("x", Bound(lo=28.0), runs(values))  # 1.5 sd: too close
    assert "1.50 of the runs' noise" in p and "2 needed" in p
    (p,) = bound_problems("x", Bound(lo=24.0), runs(values))  # far, but lets 20 % pass
    assert "lets a 20% regression" in p
    assert "outside" in bound_problems("x", Bound(lo=30.0), runs(values))[0]
    assert "kept runs" in bound_problems("x", Bound(lo=27.0), runs(values, busy=2))[0]  # too few busy
    assert "kept runs" in bound_problems("x", Bound(lo=27.0), runs(values[:9]))[0]
    same = [35.75] * 10  # the simulation: one value for a seed, no noise
    assert bound_problems("x", Bound(lo=34.0), runs(same)) == []
    assert "outside" in bound_problems("x", Bound(lo=36.0), runs(same))[0]
    assert margin(Bound(hi=40.0), same) == float("inf") and margin(Bound(lo=35.75), same) == float("-inf")


def test_the_grid_is_dcemus_histogram():
    """tests/measured.py's mirror of emu/src/base/histogram.rs, against values dcemu reported
    (tests/data/measured.jsonl): 8 buckets per octave, each reported by its middle."""
    assert grid_bucket(5) == (5, 6)
    assert grid_bucket(16) == (16, 18) and grid_bucket(31) == (30, 32) and grid_bucket(32) == (32, 36)
    for ms in (385.875967, 419.430399, 24.117247, 26.214399, 28.311551, 192.937983):
        assert on_grid(ms, 1e6)
    assert not on_grid(414.857131, 1e6) and not on_grid(278.0, 1e6)  # capped at the largest; a probe's RTT


def test_a_histogram_quantiles_bound_admits_the_next_bucket():
    runs = [385.875967] * 6 + [419.430399] * 6
    reach = grid_reach("x.sojourn_p99_ms", runs)
    assert reach is not None and round(reach[0], 3) == 352.322 and round(reach[1], 3) == 452.985
    assert grid_reach("x.rtt_p50_ms", [278.0, 281.5, 288.0]) is None  # not bucket middles
    assert grid_reach("x.mbps", runs) is None  # not a time
    kept = [Kept(v, busy=True) for v in runs]
    assert any("next above" in p for p in bound_problems("x.sojourn_p99_ms", Bound(lo=340, hi=452), kept))
    assert not any("histogram" in p for p in bound_problems("x.sojourn_p99_ms", Bound(lo=340, hi=455), kept))
