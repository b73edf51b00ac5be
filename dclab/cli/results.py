"""The `dclab plot`, `dclab figure`, `dclab report` and `dclab results` commands: figures,
what a figure shows, the HTML report and store maintenance (merging shards, CSV and
Parquet export)."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import click

from ..analysis.stored_run import AnyRun
from ..campaign import typed_runs
from ..campaign.merge import merge_stores
from ..campaign.store import Store, StoreError, campaign_dir, open_existing
from ..errors import InputError
from ..files import FileRefused, check_output, check_output_dir, clip, output_file, printable

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def open_store(campaign: str | None, store_path: Path | None) -> Store:
    """The store of a campaign (or the one given), which must exist and hold runs."""
    if store_path is None:
        if not campaign:
            raise click.UsageError("give a CAMPAIGN or --store PATH")
        try:
            store_path = campaign_dir(campaign) / "store.sqlite"
        except FileRefused as e:
            raise click.BadParameter(str(e), param_hint="CAMPAIGN") from None
    if not store_path.exists():
        hint = "" if campaign is None else f" (has campaign {campaign!r} run yet? or give --store PATH)"
        raise click.ClickException(f"no result store at {store_path}{hint}")
    try:
        store = open_existing(store_path)  # read-only: refuses a FIFO, a newer or damaged store in one line
        n = len(store.keys())
    except StoreError as e:
        raise click.ClickException(str(e)) from None
    except sqlite3.DatabaseError as e:
        raise click.ClickException(f"cannot read {store_path}: {e}") from None
    if n == 0:
        raise click.ClickException(f"the result store {store_path} holds no runs")
    return store


def read_rows(store: Store, where: str, params: tuple[object, ...]) -> list[dict]:
    """The store's rows; a run damaged inside (its JSON broken) is a one-line error."""
    try:
        return store.rows(where, params)
    except StoreError as e:
        raise click.ClickException(str(e)) from None


def read_runs(store: Store, where: str, params: tuple[object, ...]) -> list[AnyRun]:
    """The store's runs typed (``campaign/typed_runs.py``); those that no longer validate
    are named on stderr, each with why, and left out."""
    typed = typed_runs.typed_runs(read_rows(store, where, params))
    for key, why in typed.unreadable[:20]:
        click.echo(f"left out run {clip(key, 12)}: {why}", err=True)
    if len(typed.unreadable) > 20:
        click.echo(f"... and {len(typed.unreadable) - 20} more runs left out", err=True)
    return typed.runs


def default_out(campaign: str | None, store: Store, sub: str) -> Path:
    return (campaign_dir(campaign) if campaign else store.path.parent) / sub


store_option = click.option("--store", "store_path", type=click.Path(dir_okay=False, path_type=Path),
                            help="Result store (SQLite) to read [default: the campaign's store.sqlite].")


@click.command(context_settings=CONTEXT)
@click.argument("campaign", required=False)
@store_option
@click.option("--experiment", metavar="NAME", help="Only this experiment's sweeps.")
@click.option("--sweep", help="Only this sweep (e.g. batch, split, bw-ratio, loss-dup).")
@click.option("--run", "run_key", help="Instead of sweeps: the time-series figure of one run (run key or a unique prefix).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Directory for the PNG files [default: the campaign's plots/ directory].")
def plot(campaign: str | None, store_path: Path | None, experiment: str | None, sweep: str | None,
         run_key: str | None, out: Path | None) -> None:
    """Draw the figures of CAMPAIGN's result store.

    Per (experiment, sweep), the figure its experiment draws for a sweep (e.g. goodput
    against the swept parameter, or each flow's throughput with Jain's index). With --run,
    the time series of one run instead, as its experiment draws it (e.g. per-leg link
    utilization, or per-flow throughput over time). Prints the files written."""
    from ..campaign.report import experiment_of, run_caption, run_figure, slug, sweep_figure, sweep_groups

    if run_key is not None and not run_key.strip():
        raise click.BadParameter("give a run key or a unique prefix of one (got an empty one)", param_hint="--run")
    store = open_store(campaign, store_path)
    out = out or default_out(campaign, store, "plots")
    try:
        check_output_dir(out, "--out")
        out.mkdir(parents=True, exist_ok=True)
    except (FileRefused, OSError) as e:
        raise click.ClickException(f"--out: cannot use {out}: {e}" if isinstance(e, OSError) else str(e)) from None
    base = store.path.resolve().parent
    if run_key is not None:
        rows = read_rows(store, "substr(run_key, 1, ?) = ?", (len(run_key), run_key))
        if not rows:
            raise click.ClickException(f"no run with key {clip(run_key)} in {store.path}")
        if len(rows) > 1 and not any(r["run_key"] == run_key for r in rows):
            raise click.ClickException(f"{run_key!r} matches {len(rows)} runs; give more of the key")
        row = next((r for r in rows if r["run_key"] == run_key), rows[0])
        typed = typed_runs.typed_runs([row])
        if typed.unreadable:
            raise click.ClickException(f"run {clip(row['run_key'], 12)} cannot be drawn: {typed.unreadable[0][1]}")
        r = typed.runs[0]
        exp = experiment_of(r)
        kind = exp.run_figure_kind if exp else "run"
        try:
            path = run_figure(r, base, out / f"run-{slug(r.run_key[:12])}-{kind}.png", run_caption(r))
        except FileRefused as e:
            raise click.ClickException(str(e)) from None
        click.echo(str(path))
        return
    where, params = ["1"], []
    if experiment:
        where.append("experiment = ?")
        params.append(experiment)
    if sweep is not None:
        where.append("sweep = ?")
        params.append(sweep)
    runs = read_runs(store, " AND ".join(where), tuple(params))
    if not runs:
        what = ", ".join(f"{k} {v!r}" for k, v in (("experiment", experiment), ("sweep", sweep)) if v is not None)
        raise click.ClickException(f"no runs with {what} in {store.path}")
    for exp_name, sw, rs in sweep_groups(runs):
        name = f"{slug(exp_name)}-{slug(sw or 'runs')}"  # strings from the store: never a path
        try:
            click.echo(str(sweep_figure(exp_name, rs, out / f"{name}.png", f"{exp_name}: {sw or 'runs without a sweep'}")))
        except FileRefused as e:
            raise click.ClickException(str(e)) from None


@click.command(context_settings=CONTEXT)
@click.argument("pngs", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print each description as one line of JSON.")
def figure(pngs: tuple[Path, ...], as_json: bool) -> None:
    """Say what each figure dclab drew shows (panels, axes, legend, series and their
    extents) and the command that drew it, from the description its PNG carries."""
    import dataclasses
    import json

    from ..analysis.figure_info import figure_info

    for path in pngs:
        try:
            info = figure_info(path)
        except (ValueError, OSError) as e:
            raise click.ClickException(str(e)) from None
        if as_json:
            click.echo(json.dumps({"path": str(path), **dataclasses.asdict(info)}))
            continue
        # Its texts come from the file, which anyone may have made: shown, never obeyed.
        p = printable
        click.echo(f"{p(str(path))}: drawn by `{p(info.command)}` (dclab {p(info.version)})"
                   + (f": {p(info.suptitle)}" if info.suptitle else ""))
        for i, ax in enumerate(info.axes, 1):
            click.echo(f"  panel {i}: {p(ax.title) or '(no title)'}")
            for name, label, ext in (("x", ax.xlabel, ax.x), ("y", ax.ylabel, ax.y)):
                click.echo(f"    {name}: {p(label) or '-'}" + (f", data {ext[0]:g} to {ext[1]:g}" if ext else ""))
            click.echo(f"    {ax.lines} lines, {ax.bars} groups of bars, {ax.scatters} scatters"
                       + (f"; legend: {p(' | '.join(ax.legend))}" if ax.legend else ""))
            for t in ax.texts:
                click.echo(f"    text: {p(' '.join(t.split()))}")


@click.command(context_settings=CONTEXT)
@click.argument("campaign", required=False)
@store_option
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Report directory [default: the campaign's report/ directory].")
@click.option("--title", help="Page title [default: 'dclab campaign CAMPAIGN'].")
@click.option("--reference", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="TOML file of published values ([[point]] experiment, sweep, value, [series], [metric], published, "
                   "[source]): adds a fidelity section, dclab beside them with the ratio.")
def report(campaign: str | None, store_path: Path | None, out: Path | None, title: str | None,
           reference: Path | None) -> None:
    """Build the HTML report of CAMPAIGN: index.html, its PNG figures and tables.md.

    Per (experiment, sweep) the experiment's figure and the table behind it (mean, std, n
    of its metrics), time series of the first and last value of each sweep, the environment
    the runs recorded (kernel, host settings, versions, commit) and the runs per machine;
    with --reference, a fidelity section. The page is plain HTML with relative image links:
    copy the directory anywhere. tables.md holds the same tables in Markdown, for a page of
    documentation to quote."""
    from ..campaign.report import build_report

    store = open_store(campaign, store_path)
    out = out or default_out(campaign, store, "report")
    title = title or (f"dclab campaign {campaign}" if campaign else f"dclab results {store.path.name}")
    try:
        index = build_report(store, out, title, reference)
    except (FileRefused, StoreError) as e:
        raise click.ClickException(str(e)) from None
    except InputError as e:
        raise click.UsageError(str(e)) from None
    except OSError as e:
        raise click.ClickException(f"cannot write the report into {out}: {e.strerror or e}") from None
    click.echo(str(index))


@click.group(context_settings=CONTEXT)
def results() -> None:
    """Maintain result stores: merge campaign shards, export CSV and Parquet."""


@results.command("merge")
@click.argument("dest", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("srcs", metavar="SRC...", nargs=-1, required=True,
                type=click.Path(exists=True, dir_okay=False, path_type=Path))
def results_merge(dest: Path, srcs: tuple[Path, ...]) -> None:
    """Merge the stores SRC... (e.g. shards from several machines) into DEST, creating it.

    Runs are matched by run key: a run DEST already has is kept as it is. Prints how many
    runs each SRC added. Every SRC and an existing DEST are checked first (a dclab store this
    dclab reads, with sound pages) and only read: a refused merge writes nothing. Merges
    into one DEST wait for each other (a lock on DEST.lock); a new DEST is built beside it
    and moved in whole, so a failed merge leaves none."""
    try:
        counts, total = merge_stores(dest, srcs, on_wait=lambda: click.echo(
            f"waiting for another merge into {dest} to finish ...", err=True))
    except StoreError as e:  # every refusal and failure, in one line
        raise click.ClickException(str(e)) from None
    except sqlite3.DatabaseError as e:
        raise click.ClickException(f"cannot merge into {dest}: {e}") from None
    for src, n in counts:
        click.echo(f"{src}: {n} run(s) added")
    click.echo(f"{dest}: {total} run(s)")


@results.command("export")
@click.argument("store_path", metavar="STORE", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--csv", "csv_out", type=click.Path(dir_okay=False, path_type=Path),
              help="CSV file of the runs (JSON columns as JSON text, flows as a JSON list).")
@click.option("--parquet", "parquet_out", type=click.Path(dir_okay=False, path_type=Path),
              help="Parquet file of the runs: generic columns, metrics.NAME, options.NAME, scenario.FIELD, "
                   "environment.KEY (as dclab.campaign.frames.runs_frame).")
@click.option("--flows-parquet", "flows_out", type=click.Path(dir_okay=False, path_type=Path),
              help="Parquet file of the flows, one row per flow with its run's sweep, value, host_config, rep "
                   "(as dclab.campaign.frames.flows_frame).")
@click.option("--where", default="1", show_default=True,
              help="SQL condition on the runs table, e.g. \"experiment = 'fairness' AND ok\"; applies to every output.")
def results_export(store_path: Path, csv_out: Path | None, parquet_out: Path | None, flows_out: Path | None,
                   where: str) -> None:
    """Export the runs of STORE as CSV and/or Parquet (at least one of --csv, --parquet,
    --flows-parquet).

    STORE is only read (a read-only connection: --where cannot change it). An output path
    must hold a regular file or nothing (a symlink, directory, FIFO or device is refused
    before anything is written). Every file is written beside its destination and moved in
    once all are written; a failed export removes only its own temporary files, so a file
    that was at an output path stays as it was."""
    outs = {name: p for name, p in (("--csv", csv_out), ("--parquet", parquet_out), ("--flows-parquet", flows_out))
            if p is not None}
    if not outs:
        raise click.UsageError("give at least one output: --csv OUT, --parquet OUT or --flows-parquet OUT")
    if len({p.resolve() for p in outs.values()}) < len(outs):
        raise click.UsageError(f"{' and '.join(outs)} name the same file")
    if any(p.resolve() == store_path.resolve() for p in outs.values()):
        raise click.UsageError(f"an output is the store {store_path} itself")
    try:
        for name, p in outs.items():
            check_output(p, name)  # every output before anything is written
        store = open_existing(store_path)
    except (FileRefused, StoreError) as e:
        raise click.ClickException(f"cannot export: {e}") from None
    try:
        store.check_where(where)
    except sqlite3.DatabaseError as e:  # before any file: a condition SQLite refuses
        raise click.ClickException(f"cannot export: --where {clip(where)}: {e}") from None
    done = []
    try:
        from ..campaign.frames import flows_frame, runs_frame

        with contextlib.ExitStack() as stack:  # each temporary is moved in as the stack closes without error
            tmps = {name: stack.enter_context(output_file(p, name)) for name, p in outs.items()}
            if "--csv" in tmps:
                n = store.write_csv(tmps["--csv"], where)
                done.append(f"{n} run(s) written to {outs['--csv']}")
            if "--parquet" in tmps:
                runs = runs_frame(store, where)
                runs.to_parquet(tmps["--parquet"], index=False)
                done.append(f"{len(runs)} run(s), {runs.shape[1]} columns written to {outs['--parquet']}")
            if "--flows-parquet" in tmps:
                flows = flows_frame(store, where)
                flows.to_parquet(tmps["--flows-parquet"], index=False)
                done.append(f"{len(flows)} flow(s) of {flows['run_key'].nunique()} run(s) written to "
                            f"{outs['--flows-parquet']}")
    except sqlite3.OperationalError as e:  # e.g. integer overflow: an error evaluating the condition
        raise click.ClickException(f"cannot export: --where {clip(where)}: {e}" if where != "1"
                                   else f"cannot export: {e}") from None
    except (sqlite3.DatabaseError, ValueError, OSError) as e:  # StoreError, FileRefused, pyarrow's: ValueErrors
        raise click.ClickException(f"cannot export: {e}") from None
    for line in done:
        click.echo(line)
