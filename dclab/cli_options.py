"""Options and helpers shared by the `dclab` commands."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Callable

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from . import scenario as sc

err = Console(stderr=True)


def run_with_progress(reps: int, out_dir: Path, describe: Callable[[dict], str],
                      runner: Callable[[Callable, Callable], dict]) -> dict:
    """Runs ``runner(on_rep, on_wait)`` under a progress bar, a line per repetition
    (``describe(record)``); Ctrl-C/SIGTERM exit 130 after the testbed cleaned up."""
    done: list[dict] = []
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), console=err, transient=True) as progress:
        task = progress.add_task("repetitions", total=reps)

        def on_rep(rep: int, rec: dict) -> None:
            done.append(rec)
            progress.console.print(f"  rep {rep}: {describe(rec)}")
            progress.advance(task)

        try:
            return runner(on_rep, lambda: err.print("waiting for another dclab run to finish ..."))
        except KeyboardInterrupt:
            err.print(f"[yellow]interrupted[/]: cleaned up; {len(done)} finished repetition(s) kept in {out_dir}")
            sys.exit(130)
        except Exception as e:  # noqa: BLE001 - shown to the user; the testbed already cleaned up
            raise click.ClickException(f"{e} (results so far in {out_dir})") from None


def root_or_exit() -> None:
    if os.geteuid() != 0:
        raise click.ClickException("runs need root (sudo): they create namespaces and TUN devices and set sysctls")


# ---------------------------------------------------------------------------------------
# Scenario options, shared by every command that runs or shows a scenario.

def scenario_options(f):
    opts = [
        click.option("--scenario", "scenario_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                     help="Start from this scenario file (TOML with the fields of `dclab scenario show`)."),
        click.option("--batch", type=int, help="PDCP split batch size in packets [default 100]."),
        click.option("--split", help="Share per leg, e.g. 50:50 or 83:17; 100:0 is single connectivity [default 50:50]."),
        click.option("--bw", help="Downlink rate per leg in Mbit/s, e.g. 20,20 [default 20,20]."),
        click.option("--delay", help="Downlink delay per leg in ms, e.g. 10,10 [default 10,10]."),
        click.option("--delay-cov", type=float, help="Delay jitter as std/mean (normal) [default 0.1]."),
        click.option("--loss", help="Random loss per downlink leg in percent, e.g. 0.1,0.1 [default 0,0]."),
        click.option("--duplicate/--no-duplicate", default=None, help="PDCP duplication: every packet on both legs."),
        click.option("--no-reordering", is_flag=True, default=None, help="Turn PDCP reordering off (arrival order)."),
        click.option("--t-reordering", help="t-Reordering in ms, or 'inf' [default 200]."),
        click.option("--trace", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                     help="Bandwidth trace (mahimahi or CSV) on both downlinks instead of --bw."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def scenario_from(kw: dict) -> sc.Scenario:
    """The effective scenario: defaults, then --scenario, then the options given."""
    try:
        base = sc.load(kw.pop("scenario_file")) if kw.get("scenario_file") else sc.Scenario()
        kw.pop("scenario_file", None)
        changes: dict = {}
        if kw.get("batch") is not None:
            changes["batch"] = kw["batch"]
        if kw.get("split"):
            changes["split"] = sc.parse_list("--split", kw["split"], ":")
        for name in ("bw", "delay", "loss"):
            if kw.get(name):
                changes[name] = sc.parse_list(f"--{name}", kw[name])
        if kw.get("delay_cov") is not None:
            changes["delay_cov"] = kw["delay_cov"]
        if kw.get("duplicate") is not None:
            changes["duplicate"] = kw["duplicate"]
        if kw.get("no_reordering"):
            changes["reordering"] = False
        if kw.get("t_reordering") is not None:
            t = kw["t_reordering"]
            if t in ("inf", "infinity"):
                data = base.model_dump()
                data["t_reordering"] = None
                base = sc.Scenario.model_validate(data)
            else:
                changes["t_reordering"] = sc.parse_list("--t-reordering", t)[0]
        if kw.get("trace"):
            changes["trace"] = Path(kw["trace"]).resolve()
        # Per-leg lists must agree: a new --bw with a different leg count resizes defaults.
        n = len(changes.get("bw", base.bw))
        for name in ("split", "delay", "loss"):
            if name not in changes and len(getattr(base, name)) != n and getattr(base, name) == getattr(sc.Scenario(), name):
                changes[name] = [getattr(base, name)[0]] * n
        return sc.build(base, **changes)
    except sc.ScenarioError as e:
        raise click.UsageError(str(e)) from None


SIZE_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "kib": 2**10, "mib": 2**20, "gib": 2**30}


def parse_size(text: str) -> int:
    m = re.fullmatch(r"\s*([\d.]+)\s*([a-zA-Z]*)\s*", text)
    if not m or m.group(2).lower() not in SIZE_UNITS:
        raise click.BadParameter(f"expected a size like 100MB, 1GB or 5000000 (got {text!r})", param_hint="--size")
    n = int(float(m.group(1)) * SIZE_UNITS[m.group(2).lower()])
    if not 1 <= n <= 100 * 10**9:
        raise click.BadParameter(f"must be between 1 B and 100 GB (got {text!r})", param_hint="--size")
    return n
