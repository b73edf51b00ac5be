"""The kernel's simult_flows.sh as a yardstick (dclab/analysis/simult_flows.py,
dclab/experiments/simult_flows.py): its cases, its pass rule with its integer arithmetic,
the legs each case builds, the options refused, the report's table, and (slow, root) the
campaign's MPTCP cases run through dcemu."""

from __future__ import annotations

import os

import pytest
from conftest import run_dclab
from pydantic import ValidationError
from typed_rows import runs

from dclab.analysis.simult_flows import CASES, SIZE, judge, max_time_ms
from dclab.experiments.simult_flows import EXPERIMENT, QUEUE_PACKETS
from dclab.scenario import ScenarioError, build

OPT = EXPERIMENT.options


def test_the_selftests_cases_and_limit():
    assert SIZE == 16 * 1024 * 1024
    assert [(c.rates, c.delays) for c in CASES.values()] == [((10, 10), (0, 0)), ((10, 10), (1, 25)), ((15, 5), (0, 0)),
                                                              ((15, 5), (1, 25)), ((15, 5), (25, 1))]
    # 16 MiB at 20 Mbit/s is 6.711 s; with 10 % for headers 7.456 (floored to the ms), + 400 + 50.
    assert max_time_ms(SIZE, (10, 10)) == 7906 == max_time_ms(SIZE, (15, 5))
    assert max_time_ms(SIZE, (30, 10)) == 3728 + 450
    v = judge(CASES["balanced"], 7.906)
    assert v.passed and v.ratio == pytest.approx(1.0)
    assert not judge(CASES["balanced"], 7.907).passed and not judge(CASES["balanced"], None).passed
    assert judge(CASES["balanced"], None).ratio is None


def test_a_case_fixes_the_legs_and_pdcp_splits_in_their_rate_ratio():
    base = build(loss=[0.1, 0.0], t_reordering=50)
    s = EXPERIMENT.scenario(base, OPT(aggregation="pdcp", case="opposed-delay"))
    assert (s.bw, s.delay, s.uplink_delay, s.delay_cov) == ([15.0, 5.0], [50.0, 2.0], 0.0, 0.0)
    assert s.queue_packets == QUEUE_PACKETS and s.split == [15.0, 5.0]
    assert s.loss == [0.1, 0.0] and s.t_reordering == 50  # what the case does not set stays as given
    # what it sets is refused, not silently replaced
    with pytest.raises(ScenarioError, match=r"the case sets bw, queue_packets .*drop --bw, --queue"):
        EXPERIMENT.scenario(build(bw=[30.0, 10.0], queue_packets=50), OPT())
    m = EXPERIMENT.scenario(base, OPT(case="balanced-delay"))  # mptcp, the default
    assert m.delay == [2.0, 50.0] and m.split == base.split  # no PDCP: the split is not its business
    plan = EXPERIMENT.plan(m, OPT(case="balanced-delay"))
    assert [b.mode for b in plan.bearers] == ["paths"] and plan.flows[0].workload.objects == (SIZE,)


@pytest.mark.parametrize("values, field", [({"case": "sideways"}, "case"), ({"shorts": 2}, "shorts"),
                                            ({"aggregation": "pdcp-dup"}, "aggregation"),
                                            ({"setting": "fairness"}, "setting")])
def test_what_the_selftest_has_no_case_for_is_refused(values, field):
    with pytest.raises(ValidationError) as e:
        OPT(**values)
    assert e.value.errors()[0]["loc"][0] == field


def test_the_report_table_counts_passes_per_case_and_aggregation():
    def row(case, agg, t, passed):
        return {"options": {"case": case, "aggregation": agg, "size": SIZE}, "stack": "mptcp", "cc": "cubic",
                "metrics": {"completion_s": t, "passed": passed}, "ok": 1}

    rows = runs([row("unbalanced", "mptcp", 7.0, 1.0), row("balanced", "mptcp", 7.5, 1.0),
                 row("balanced", "mptcp", 8.5, 0.0), row("unbalanced", "mptcp", 7.2, 1.0)], EXPERIMENT.name)
    ((caption, t),) = EXPERIMENT.sweep_tables(rows)
    assert "rule" in caption and t.columns == ["case", "series", "passed", "completion (s)", "limit (s)"]
    assert t.rows == [["balanced", "mptcp (mptcp cubic)", "1 of 2", "8.000 ± 0.707", "7.906"],
                      ["unbalanced", "mptcp (mptcp cubic)", "2 of 2", "7.100 ± 0.141", "7.906"]]
    assert t.failed == [False, False]  # every row has a completed run


@pytest.mark.slow
@pytest.mark.root
def test_mptcp_meets_the_selftests_rule_where_the_kernel_expects_it(tmp_path):
    """The kernel's own CI passes all five cases on netem; here, one run each, they must
    pass too: a failure is the testbed's (or a regression of the kernel's). 25 of 25 runs
    passed (`dclab campaign run simult-flows`), the closest 7.525 +- 0.123 s (opposed-delay)
    against 7.906."""
    env = {**os.environ, "DCLAB_RESULTS": str(tmp_path)}
    for case in CASES:
        out = run_dclab("run", "simult-flows", "--case", case, "--reps", "1", "--out", str(tmp_path / case), env=env)
        assert f"mptcp, {case}: passed 1 of 1" in out.stdout, out.stdout + out.stderr
