"""`dclab campaign sbatch`: a campaign as Slurm batch jobs (an array of shards, then their
merge), for clusters that only take batch jobs. Adds itself to the `campaign` group."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from ..campaign.slurm import write_sbatch
from ..errors import InputError
from ..paths import ROOT
from .campaign import MAX_RUNS, campaign, max_runs_option


@campaign.command("sbatch")
@click.argument("name")
@click.option("--shards", type=click.IntRange(min=1), required=True,
              help="Array tasks, one shard each (1 to the campaign's number of runs).")
@click.option("--reps", type=click.IntRange(1, 1000), help="Repetitions per configuration [default: the campaign's].")
@click.option("--group", "groups", multiple=True, metavar="PATTERN",
              help="Only the groups whose name matches PATTERN (shell-style, e.g. 'levels-*'); repeatable.")
@click.option("--partition", help="Slurm partition [default: the cluster's].")
@click.option("--time", "time_", metavar="D-HH:MM:SS",
              help="Time limit per shard [default: the largest shard's estimate x2 plus 5 min].")
@click.option("--max-parallel", type=click.IntRange(min=1), metavar="M", help="At most M shards at once (--array=1-N%M).")
@max_runs_option
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Directory for the scripts, logs and shard results [default: the campaign's slurm/].")
@click.option("--repo", type=click.Path(file_okay=False, exists=True, path_type=Path), default=ROOT,
              help="The dclab checkout the jobs run from (same path on every node) [default: this one].")
def campaign_sbatch(name: str, shards: int, reps: int | None, groups: tuple[str, ...], partition: str | None,
                    time_: str | None, max_parallel: int | None, max_runs: int, out: Path | None, repo: Path) -> None:
    """Write Slurm scripts that run campaign NAME as an array job of --shards shards.

    Each task runs `dclab doctor`, then `dclab campaign run NAME --shard i/N` into its own
    results root (OUT/shard-i); a merge job joins their stores into the campaign's store.
    `bash OUT/submit.sh` submits both. Submitting again repeats no stored run."""
    args = ["dclab", "campaign", "sbatch", name, "--shards", str(shards)]
    for flag, value in (("--reps", reps), ("--partition", partition), ("--time", time_),
                        ("--max-parallel", max_parallel), ("--max-runs", max_runs if max_runs != MAX_RUNS else None),
                        ("--out", out)):
        if value is not None:
            args += [flag, str(value)]
    for g in groups:
        args += ["--group", g]
    if repo.resolve() != ROOT:
        args += ["--repo", str(repo)]
    try:
        paths = write_sbatch(name, shards, out, reps=reps, groups=groups, partition=partition, time=time_,
                             max_parallel=max_parallel, max_runs=max_runs, repo=repo, command_line=shlex.join(args))
    except InputError as e:
        raise click.UsageError(str(e)) from None
    for p in paths:
        click.echo(str(p))
    click.echo(f"next: bash {shlex.quote(str(paths[-1]))}")
