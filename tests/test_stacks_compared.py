"""The report's stack comparison (analysis/stacks.py): a row per stack (split by cc or host
configuration only when one stack ran with several), a column per point with the default
scenario first, the DC flow's stack for mixed runs, and the figure."""

from __future__ import annotations

from figure_checks import check, empty, figure
from typed_rows import runs

from dclab.analysis import stacks
from dclab.scenario import Scenario

HEADS = {"throughput": stacks.Headline("goodput_mbps", "goodput", "Mbit/s"),
         "fairness": stacks.Headline("jfi", "JFI", digits=3)}  # fmt: skip
DEFAULT = Scenario().model_dump(mode="json")


def row(key, experiment, stack, value, metric, ok=True, cc="reno", sweep="batch", scenario=None, host="quic-default"):
    name = HEADS[experiment].metric
    [run] = runs([{"run_key": key, "experiment": experiment, "stack": stack, "cc": cc, "host_config": host, "sweep": sweep,
                   "value": str(value), "value_num": float(value), "ok": ok, "metrics": {name: metric} if ok else {},
                   "scenario": scenario or {**DEFAULT, "batch": value}}])  # fmt: skip
    return run


ROWS = [
    row("a1", "throughput", "quinn", 100, 30.0), row("a2", "throughput", "quinn", 100, 34.0),
    row("a3", "throughput", "quinn", 500, 20.0),
    row("b1", "throughput", "quic-go", 100, 25.0), row("b2", "throughput", "quic-go", 500, 0.0, ok=False),
    row("c1", "fairness", "dc=quinn,sc1=tcp,sc2=tcp", 0, 0.8, sweep="none", scenario={**DEFAULT, "bw": [5.0, 5.0]}),
]


def test_a_row_per_stack_and_a_column_per_point_default_first():
    assert stacks.stack_of(ROWS[-1]) == "quinn"
    assert stacks.opponents(ROWS) == "sc1=tcp,sc2=tcp"
    header, lines, failed = stacks.comparison_table(ROWS, HEADS)
    assert failed == [False, False]
    assert header == ["stack", "throughput: default scenario (batch 100), goodput (Mbit/s)",
                      "throughput: batch 500, goodput (Mbit/s)", "fairness: none 0, JFI"]  # fmt: skip
    assert lines == [["quic-go", "25.00 ± 0.00 (1/1)", "failed (0/1)", "-"],
                     ["quinn", "32.00 ± 2.83 (2/2)", "20.00 ± 0.00 (1/1)", "0.800 ± 0.000 (1/1)"]]  # fmt: skip


def test_a_stack_whose_every_run_failed_is_flagged_failed():
    rows = [*ROWS[:3], row("b3", "throughput", "quic-go", 100, 0.0, ok=False), *ROWS[4:]]
    _, lines, failed = stacks.comparison_table(rows, HEADS)
    assert lines[0] == ["quic-go", "failed (0/1)", "failed (0/1)", "-"]
    assert failed == [True, False]


def test_one_stack_with_two_controllers_is_two_rows_never_pooled():
    rows = [row("x1", "throughput", "tcp", 100, 30.0, cc="cubic"), row("x2", "throughput", "tcp", 100, 10.0, cc="reno"),
            row("y1", "throughput", "quinn", 100, 20.0, cc="cubic")]  # fmt: skip
    assert stacks.stacks(rows) == ["quinn", "tcp cubic", "tcp reno"]
    _, lines, _ = stacks.comparison_table(rows, HEADS)
    assert [line[1] for line in lines] == ["20.00 ± 0.00 (1/1)", "30.00 ± 0.00 (1/1)", "10.00 ± 0.00 (1/1)"]


def test_host_settings_that_differ_between_experiments_keep_one_row():
    rows = [row("t", "throughput", "quinn", 100, 30.0, host="quic-default"),
            row("f", "fairness", "dc=quinn,sc1=tcp,sc2=tcp", 1, 0.9, sweep="none", host="quic-default+tcp"),
            row("l", "throughput", "aioquic", 100, 20.0, host="quic-large"),
            row("d", "throughput", "aioquic", 100, 30.0, host="quic-default")]  # fmt: skip
    assert stacks.stacks(rows) == ["aioquic quic-default", "aioquic quic-large", "quinn"]


def test_the_figure_is_drawn(tmp_path):
    path = stacks.comparison_figure(ROWS, HEADS, tmp_path / "s.png", "stacks")
    tp, fair = figure(path, ["throughput", "fairness (against sc1=tcp,sc2=tcp)"], "stacks").axes
    check(tp, ylabel="goodput (Mbit/s)", legend=["quic-go", "quinn"], bars=2, lines=0,
          xticks=["default scenario\n(batch 100)", "batch 500"])
    # a bar per point; quinn's means 32 (batch 100) and 20, quic-go's 25 and its failed point at 0
    assert [(s.label, s.n, s.y) for s in tp.series] == [("quic-go", 2, (0.0, 25.0)), ("quinn", 2, (20.0, 32.0))]
    check(fair, ylabel="JFI", bars=2, xticks=["none 0"], legend=[])
    assert [(s.label, s.y) for s in fair.series] == [("quic-go", (0.0, 0.0)), ("quinn", (0.8, 0.8))]
    empty(stacks.comparison_figure([], HEADS, tmp_path / "e.png", "none"), "no runs to compare", "none")
