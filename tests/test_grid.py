"""The shared pivot of repeated measurements (dclab/analysis/grid.py)."""

from dclab.analysis.grid import NoValue, mean_std_text, pivot


def test_a_cell_says_mean_spread_and_runs():
    assert mean_std_text(12.345, 0.5) == "12.35 ± 0.50"
    assert mean_std_text(12.345, None, 1, 3) == "12.3 ± - (3)"
    assert mean_std_text(0.9, 0.01, 3, 4, 5) == "0.900 ± 0.010 (4/5)"


def test_a_pivot_labels_its_rows_and_marks_those_without_a_value():
    values = {("a", 1): "x", ("a", 2): None, ("b", 1): None, ("b", 2): None}
    lines, empty = pivot(["a", "b"], [1, 2], lambda r, c: values[(r, c)], label=str.upper)
    assert lines == [["A", "x", "-"], ["B", "-", "-"]]
    assert empty == [False, True]


def test_a_cell_whose_runs_gave_no_value_shows_why_and_counts_as_empty():
    values = {("a", 1): NoValue("failed (0/2)"), ("a", 2): None, ("b", 1): "x", ("b", 2): NoValue("failed (0/1)")}
    lines, empty = pivot(["a", "b"], [1, 2], lambda r, c: values[(r, c)])
    assert lines == [["a", "failed (0/2)", "-"], ["b", "x", "failed (0/1)"]]
    assert empty == [True, False]
