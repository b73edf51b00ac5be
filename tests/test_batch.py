"""A static split's batch in whole packets (dclab/batch.py), as dcemu sends it: the same
table as emu/src/pdcp/tx.rs's `shares_match_dclab_batch_py`, so the two cannot drift."""

from __future__ import annotations

import pytest

from dclab import batch
from dclab.cli import run as run_cli
from dclab.scenario import build

# batch, ratio, PDUs per leg
TABLE = [
    (10, [5, 95], [1, 9]),  # a tie of halves goes to the lower leg
    (10, [2, 98], [0, 10]),
    (20, [5, 95], [1, 19]),
    (20, [45, 55], [9, 11]),
    (100, [77.78, 22.22], [78, 22]),
    (100, [9, 1], [90, 10]),
    (2, [1, 1], [1, 1]),
    (7, [1, 1, 1], [3, 2, 2]),
    (10, [0, 3, 1], [0, 8, 2]),
]


@pytest.mark.parametrize(("size", "ratio", "sent"), TABLE)
def test_a_batch_is_divided_as_dcemu_divides_it(size, ratio, sent):
    assert batch.shares(size, ratio) == sent
    assert sum(sent) == size


def test_the_smallest_exact_batch_and_how_far_a_batch_is_off():
    assert [batch.exact_batch(r) for r in ([5, 95], [45, 55], [1, 1], [9, 1], [77.78, 22.22])] == [20, 20, 2, 10, None]
    assert batch.off_by_points(10, [5, 95]) == pytest.approx(5.0)
    assert batch.off_by_points(20, [5, 95]) == 0.0


def test_titles_say_what_a_batch_sends():
    assert build(split=[5.0, 95.0], batch=10).split_text() == "batch 10, split 5:95 (sent as 1:9)"
    assert build(split=[5.0, 95.0], batch=20).split_text() == "batch 20, split 5:95"
    assert build().split_text() == "batch 100, split 50:50"


def test_a_run_warns_when_its_batch_sends_another_split(capsys):
    run_cli._warn_inexact_split(build(split=[5.0, 95.0], batch=10))
    assert "a batch of 10 sends split 5:95 as 1:9: --batch 20 sends it exactly" in capsys.readouterr().err
    run_cli._warn_inexact_split(build(split=[77.78, 22.22], batch=100))  # 0.22 points off: said in the title only
    run_cli._warn_inexact_split(build(split=[5.0, 95.0], batch=20))
    assert capsys.readouterr().err == ""
