"""Repetitions of one experiment into a run directory: each repetition in its own
`rep-NN/`, the summary rewritten after each, so an interrupted run keeps what finished."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Callable

from ..rundir import write_atomic, write_json
from ..scenario import Scenario, to_toml


def run_reps(s: Scenario, options: dict, reps: int, out: Path, rep_fn: Callable[[Path], dict],
             summarize: Callable[[list[dict]], dict], plot_name: str,
             on_rep: Callable[[int, dict], None] | None = None) -> dict:
    """Runs ``rep_fn(rep_dir)`` ``reps`` times; writes scenario.toml, options.json,
    environment.json and the first repetition's plot at the top, results.json after each."""
    write_atomic(out / "scenario.toml", to_toml(s))
    write_json(out / "options.json", options)
    runs: list[dict] = []
    summary: dict = {}
    for rep in range(1, reps + 1):
        rep_dir = out / f"rep-{rep:02d}"
        rec = {"rep": rep, **rep_fn(rep_dir)}
        if rep == 1:
            write_json(out / "environment.json", rec["environment"])
            if (rep_dir / plot_name).exists():
                shutil.copy(rep_dir / plot_name, out / plot_name)
        runs.append(rec)
        summary = summarize(runs)
        write_json(out / "results.json", summary)
        if on_rep:
            on_rep(rep, rec)
    return summary
