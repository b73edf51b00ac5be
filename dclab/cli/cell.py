"""`dclab cell trace`: an LTE level's channel as a mahimahi trace (wraps `dcemu cell-trace`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import click

from .. import lte
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
        level = lte.level(link)
    except ValueError as e:
        raise click.BadParameter(str(e).removeprefix("--link: "), param_hint="--link") from None
    if not DCEMU.exists():
        raise click.ClickException(f"dcemu is not built ({DCEMU}); run `make build`")
    args = [str(DCEMU), "cell-trace", "--sinr-db", str(lte.sinr_db(lte.LEVELS[level])),
            "--bandwidth-mhz", str(lte.BANDWIDTH_MHZ), "--doppler", str(lte.DOPPLER_HZ), "--seconds", str(seconds),
            "--seed", str(seed), "--format", "mahimahi", "--out", str(out)]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        raise click.UsageError(p.stderr.strip().removeprefix("dcemu: error: "))
    click.echo(p.stdout, nl=False)
