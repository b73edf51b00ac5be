"""`dclab cell trace`: an LTE level's channel as a mahimahi trace (wraps `dcemu cell-trace`);
`dclab cell cut-trace`: a measured CSV trace cut into one trace per level (``trace_levels.py``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Literal

import click
from rich.console import Console
from rich.table import Table

from .. import lte, trace_levels
from ..files import FileRefused, output_file
from ..paths import DCEMU


@click.group()
def cell() -> None:
    """The LTE cell of --link lte:LEVEL."""


@cell.command("trace")
@click.option("--link", required=True, metavar="lte:LEVEL", help="The level (as `--link` of a run).")
@click.option("--seconds", type=float, default=60.0, show_default=True, help="Trace length (above 0, at most 86400).")
@click.option("--seed", type=click.IntRange(0, 2**63 - 1), default=1, show_default=True, help="Fading seed.")
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help='Trace file ("-": standard output).')
def cell_trace(link: str, seconds: float, seed: int, out: Path) -> None:
    """Write the capacity one device at LEVEL gets with the whole 20 MHz cell as a mahimahi
    trace: one line per 1500-byte delivery opportunity, in ms (usable as --trace, or by
    mahimahi). The channel is the cell's (Rayleigh, 5 Hz Doppler), without scheduler or
    competitors."""
    try:
        level = lte.parse_link(link).level
    except ValueError as e:
        raise click.BadParameter(str(e).removeprefix("--link: "), param_hint="--link") from None
    if not DCEMU.exists():
        raise click.ClickException(f"dcemu is not built ({DCEMU}); run `make build`")
    args = [str(DCEMU), "cell-trace", "--sinr-db", str(lte.sinr_db(lte.LEVELS[level])),
            "--bandwidth-mhz", str(lte.BANDWIDTH_MHZ), "--doppler", str(lte.DOPPLER_HZ), "--seconds", str(seconds),
            "--seed", str(seed), "--format", "mahimahi", "--out"]
    if str(out) == "-":  # straight to our standard output: a long trace is larger than memory
        sys.stdout.flush()
        p = subprocess.run([*args, "-"], stderr=subprocess.PIPE, text=True)
    else:
        try:  # dcemu writes beside --out; moved in only over a regular file or nothing
            with output_file(out, "--out") as tmp:
                p = subprocess.run([*args, str(tmp)], capture_output=True, text=True)
                if p.returncode != 0:
                    raise click.UsageError(p.stderr.strip().removeprefix("dcemu: error: "))
        except FileRefused as e:
            raise click.BadParameter(str(e).removeprefix("--out: "), param_hint="--out") from None
    if p.returncode != 0:
        raise click.UsageError(p.stderr.strip().removeprefix("dcemu: error: "))


@cell.command("cut-trace")
@click.argument("files", nargs=-1, required=True,
                type=click.Path(exists=True, dir_okay=False, readable=True, path_type=Path))
@click.option("--by", type=click.Choice(["cqi", "rsrp"]), required=True, help="The column that decides a row's level.")
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Directory for the traces (made if missing).")
@click.option("--levels", default=",".join(lte.LEVELS), show_default=True,
              help="Levels to write, separated by ',' (names or 250m, 750m, 1500m, 2500m).")
@click.option("--force", is_flag=True, help="Overwrite traces that exist.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON list (an object per FILE) instead of tables.")
def cell_cut_trace(files: tuple[Path, ...], by: Literal["cqi", "rsrp"], out: Path, levels: str, force: bool,
                   as_json: bool) -> None:
    """Cut UCC-style CSV traces (DL_bitrate, CQI, RSRP per second) into one trace per level:
    OUT/<stem>-<level>.csv, usable as --trace. A row's level comes from its CQI (bounds at
    the midpoints of the CQIs our cell model gives the levels' mean SINRs: good 12-15,
    medium 6-11, poor 2-5, edge 0-1) or its RSRP (bands >= -80, -90, -100, below -100 dBm).
    Rows with a missing or invalid value are skipped; a level with fewer than 10 rows gets
    no file. Thresholds: dclab/trace_levels.py."""
    try:
        results = trace_levels.cut(list(files), by, trace_levels.parse_levels(levels), out, force)
    except trace_levels.CutError as e:
        raise click.BadParameter(e.message, param_hint=e.option) from None
    except FileExistsError as e:
        raise click.UsageError(str(e)) from None
    if as_json:
        click.echo(json.dumps([r.model_dump() for r in results]))
        return
    console = Console()
    for r in results:
        t = Table(title=f"{r.input} by {trace_levels.COLUMN[r.by]}", show_header=True)
        for c in ("level", "threshold", "rows", "DL Mbit/s mean", "median"):
            t.add_column(c)
        for lv in r.levels:
            t.add_row(lv.level, lv.threshold, str(lv.rows), _num(lv.mean_mbps), _num(lv.median_mbps))
        console.print(t)
        skipped = ", ".join(f"{n} for {col}" for col, n in r.skipped.items() if n) or "none"
        click.echo(f"{r.rows} rows: {sum(lv.rows for lv in r.levels)} in the levels above, {r.other_levels} in "
                   f"levels not asked for, skipped (missing or invalid): {skipped}")
        for lv in r.levels:
            click.echo(f"{lv.level}: wrote {lv.file} ({lv.rows} s)" if lv.file else f"{lv.level}: {lv.note}")


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"
