"""The capacity experiment (experiments/capacity.py): a long-lived flow's window mean as a
share of the legs' capacity, with the receiver's expiries over the window and what PDCP
dropped before numbering, from dcemu's records; and one run through EN-DC's cells."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import run_dclab

from dclab.cli import app
from dclab.dcemu.records import Stats
from dclab.experiments.capacity import run_facts, window_counters


def record(t_ms: float, expiries: int, dropped: int | None, kind: str = "interval") -> Stats:
    bearer: dict[str, object] = {"name": "dc", "rx": {"timer_expiries": expiries, "wait": {"p99_us": 12_500.0}}}
    if dropped is not None:
        bearer["hold"] = {"dropped_full": dropped, "discarded_timer": 1, "wait": {"p99_us": 800.0}}
    return Stats.model_validate({"type": kind, "t_ms": t_ms, "bearers": [bearer]})


def test_the_window_counts_only_what_happened_in_it():
    # Expiries 3 before the window (slow start), 7 by its start at 5 s, 12 at its end.
    recs = [record(0, 0, 0), record(5000, 7, 40), record(20_000, 9, 90), record(35_000, 12, 150),
            record(36_000, 12, 150, "summary")]
    assert window_counters(recs, 0.0, 35.0, 5.0) == {"expiries": 5, "hold_dropped": 110}
    facts = run_facts(recs)
    assert facts["wait_p99_ms"] == pytest.approx(12.5)
    assert facts["hold"]["dropped_full"] == 150 and facts["hold"]["wait_p99_ms"] == pytest.approx(0.8)
    # Without delay-target there is no hold to count.
    plain = [record(0, 0, None), record(35_000, 4, None), record(35_000, 4, None, "summary")]
    assert window_counters(plain, 0.0, 35.0, 5.0) == {"expiries": 4}
    assert "hold" not in run_facts(plain)
    # Under flow control: the copies the master resent, over the window and every secondary.
    def flowing(t_ms: float, resent: list[int]) -> Stats:
        r = record(t_ms, 0, None).model_dump()
        r["bearers"][0]["flow"] = {"policy": "delay-target", "secondaries": [
            {"leg": f"leg{i + 2}", "resent_packets": n} for i, n in enumerate(resent)]}
        return Stats.model_validate(r)
    fell_back = [flowing(0, [3, 0]), flowing(5000, [10, 2]), flowing(35_000, [250, 2])]
    assert window_counters(fell_back, 0.0, 35.0, 5.0) == {"expiries": 0, "resent": 240}


@pytest.mark.parametrize("args, option", [
    (["--duration", "5", "--warmup", "4.5"], "--warmup"),
    (["--duration", "1"], "--duration"),
    (["--warmup", "-1"], "--warmup"),
])
def test_a_window_too_short_is_refused_before_anything_starts(args, option, tmp_path):
    r = CliRunner().invoke(app, ["run", "capacity", *args, "--out", str(tmp_path / "never")])
    assert r.exit_code == 2 and option in r.output, r.output
    assert not (tmp_path / "never").exists()


@pytest.mark.root
def test_tcp_over_endc_under_delay_target(tmp_path):
    """TCP through EN-DC's good LTE master and a poor NR secondary (400 m) under
    delay-target: both cells carry, the record says what share of their summed capacity
    the window got, and nothing is dropped after numbering."""
    r = run_dclab("run", "capacity", "--link", "endc:good,poor", "--x2-delay", "5", "--uplink-bw", "200",
                  "--split-policy", "delay-target", "--stack", "tcp", "--duration", "8", "--warmup", "3", "--json",
                  "--out", str(tmp_path / "run"), timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    rep = json.loads((tmp_path / "run" / "rep-01" / "result.json").read_text())
    assert rep["ok"], rep["error"]
    d, m = rep["details"], rep["metrics"]
    # Over the cells' summed mean capacity (dclab/lte.py, dclab/nr.py).
    assert d["capacity_mbps"] == pytest.approx(sum(leg["capacity_mbps"] for leg in d["legs"].values()))
    assert m["capacity_share"] == pytest.approx(m["window_mbps"] / d["capacity_mbps"])
    assert all(leg["mbps"] > 5 for leg in d["legs"].values()), d["legs"]
    assert m["hold_dropped"] is not None and d["hold"]["held_packets"] >= 0
