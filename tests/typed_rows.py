"""Hand-written store rows typed as the report types a store's (``campaign/typed_runs.py``),
for tests of the figures and tables that read runs."""

from __future__ import annotations

from typing import Any

from dclab.analysis.stored_run import AnyRun
from dclab.campaign.typed_runs import typed_runs


def runs(rows: list[dict[str, Any]], experiment: str = "throughput") -> list[AnyRun]:
    """``rows`` typed (an experiment and a default scenario where a row gives none); every
    row must validate."""
    out = typed_runs([{"experiment": experiment, "scenario": {}, **r} for r in rows])
    assert not out.unreadable, out.unreadable
    return out.runs
