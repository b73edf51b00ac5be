"""`dclab run EXPERIMENT`: one command per registered experiment, its options generated
from the experiment's options model, plus the scenario options and the run options
every experiment shares (--reps, --seed, --out, --json)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table as RichTable

from .. import batch
from ..analysis.diagnosis import misread_line
from ..analysis.metrics import PdcpSummary
from ..analysis.stand_in import stack_label
from ..endpoints import get_stack
from ..errors import InputError
from ..experiments import experiments
from ..experiments.base import Experiment, Options, RepResult, RunChoices
from ..files import FileRefused
from ..scenario import MAX_SEED, Scenario
from ..testbed import NotReady
from ..testbed.rundir import new_run_dir
from .options import err, model_options, options_from, root_or_exit, run_with_progress, scenario_from, scenario_options


class ExperimentCommands(click.Group):
    """One command per registered experiment, looked up when asked (so experiments
    registered after import, e.g. by a plug-in or a test, are there too)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(experiments())

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        exp = experiments().get(name)
        return _command(exp) if exp else None


@click.group(cls=ExperimentCommands)
def run() -> None:
    """Run an experiment (one command each; `dclab run NAME --help` lists its options)."""


def _warn_inexact_split(s: Scenario) -> None:
    """A static split whose batch sends shares over a percentage point off the asked ones
    (dclab/batch.py) is run as asked, with a word on what is sent and how to send it."""
    if s.split_policy != "static" or len(s.split) < 2 or batch.off_by_points(s.batch, s.split) <= 1:
        return
    exact = batch.exact_batch(s.split)
    fix = f": --batch {exact} sends it exactly" if exact else ""
    err.print(f"[yellow]warning[/]: a batch of {s.batch} sends split {batch.text(s.split)} as "
              f"{batch.text(batch.shares(s.batch, s.split))}{fix}")


def _diagnoses(exp: Experiment, out_dir: Path, shown: Scenario, options: Options, reps: int) -> list[str]:
    """Each repetition's diagnosis line (dclab/analysis/diagnosis.py), where the stalls
    after its causes cost its transfer more than 5 % together; prefixed with the
    repetition when there are several."""
    out = []
    for rep in range(1, reps + 1):
        rep_dir = out_dir / f"rep-{rep:02d}"
        try:
            result = RepResult.model_validate_json((rep_dir / "result.json").read_bytes())
        except (OSError, ValueError):
            continue
        prefix = f"rep {rep}: " if reps > 1 else ""
        d = exp.run_diagnosis(rep_dir, result.stored(shown, options)) if result.ok else None
        if d is not None:
            out.append(prefix + d.line())
        # A misread COUNT is named whatever else the diagnosis says (or whether there is one:
        # a split's run has none, and a run it stalls to the end fails).
        pdcp = PdcpSummary.of(result.details.get("pdcp"))
        misread = pdcp.rx.get("counts_misread", 0) if pdcp else 0
        if misread and (d is None or "sn_misread" not in [c.cause for c in (d.main, *d.others)]):
            out.append(prefix + misread_line(misread))
    return out


def _command(exp: Experiment) -> click.Command:
    @click.pass_context
    def cmd(ctx: click.Context, reps: int, seed: int | None, out: Path | None, as_json: bool, on_error: str,
            **kw: Any) -> None:
        options = options_from(exp.options_model, kw)
        for name, why in exp.unused(options).items():
            if name in options.model_fields_set:
                raise click.BadParameter(f"not used: {why}", param_hint="--" + name.replace("_", "-"))
        s = scenario_from(kw)
        if seed is not None:
            s = s.model_copy(update={"seed": seed})
        if s.seed + reps - 1 > MAX_SEED:
            raise click.BadParameter(f"repetition N uses the seed + N - 1: with --reps {reps} the seed is at most "
                                     f"{MAX_SEED - reps + 1} (got {s.seed})", param_hint="--seed")
        from ..experiments.reps import preflight, run_reps

        try:
            plan = preflight(exp, s, options)
        except InputError as e:
            raise click.UsageError(str(e)) from None
        if RunChoices.of(options).backend != "sim":  # a simulation runs no stack and needs no root
            for name in plan.stacks():
                missing = get_stack(name).missing()
                if missing:
                    raise click.ClickException(f"{name} is not ready: " + "; ".join(missing) + " (see `dclab doctor`)")
            root_or_exit()
        try:
            out_dir = new_run_dir(out, exp.name)
        except FileRefused as e:
            raise click.UsageError(str(e)) from None
        shown = exp.scenario(s, options)  # as the repetitions run it (an experiment may set fields)
        stack = stack_label(plan.stack_label(), RunChoices.of(options).stand_ins)
        traces = shown.traces or ([shown.trace] if shown.trace else [])
        links = (f"link {shown.link}" if shown.link else
                 f"trace {', '.join(Path(t).name for t in traces)}" if traces else f"bw {shown.bw} Mbit/s")
        simulated = " (simulated)" if RunChoices.of(options).backend == "sim" else ""
        err.print(f"[bold]{exp.name}[/]{simulated}: {stack} {plan.cc_label()}, x {reps}, {links}, "
                  f"delay {shown.delay} ms, jitter {shown.jitter()}, loss {shown.loss} %, {plan.split_label(shown)}, "
                  f"seed {shown.seed} -> {out_dir}")
        _warn_inexact_split(shown)
        try:
            summary = run_with_progress(reps, out_dir, exp.describe,
                                        lambda on_rep, on_wait: run_reps(exp, s, options, reps, out_dir, on_rep, on_wait,
                                                                         on_error))  # fmt: skip
        except NotReady as e:
            raise click.ClickException(str(e)) from None
        if as_json:
            click.echo(json.dumps({**exp.json_output(summary), "out": str(out_dir),
                                   "diagnoses": _diagnoses(exp, out_dir, shown, options, reps)}))
        else:
            t = exp.table(summary)
            table = RichTable(show_header=True)
            for c in t.columns:
                table.add_column(c)
            for row in t.rows:
                table.add_row(*row)
            Console().print(table)
            click.echo(exp.headline(summary) + simulated)
            figure = out_dir / exp.run_figure_name
            click.echo(f"results: {out_dir}/results.json" + (f", plot: {figure}" if figure.exists() else " (no plot: no repetition got that far)"))
            for line in _diagnoses(exp, out_dir, shown, options, reps):
                click.echo(line)
        if summary.failed == reps:
            sys.exit(1)

    f: Any = cmd
    f = click.option("--on-error", type=click.Choice(["stop", "continue"]), default="stop", show_default=True,
                     help="When a part of the testbed dies (dcemu, a server) or a repetition cannot be set up: end "
                          "the run (its repetitions so far kept), or record that repetition as failed and go on.")(f)
    f = click.option("--json", "as_json", is_flag=True, help="Print one JSON object with the results on stdout.")(f)
    f = click.option("--out", type=click.Path(file_okay=False, path_type=Path),
                     help=f"Run directory [default: runs/{exp.name}-TIME].")(f)
    f = click.option("--seed", type=click.IntRange(0, MAX_SEED),
                     help="Base seed of the random stages; repetition N uses seed + N - 1 [default: the scenario's, 1].")(f)
    f = click.option("--reps", type=click.IntRange(1, 1000), default=1, show_default=True, help="Repetitions.")(f)
    f = model_options(exp.options_model)(f)
    f = scenario_options(f)
    return click.command(exp.name, help=exp.help)(f)


def register(group: click.Group) -> None:
    group.add_command(run)



