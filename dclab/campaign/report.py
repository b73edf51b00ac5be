"""The HTML report of a store: one self-contained page (inline CSS, no JavaScript,
relative image links) with, per (experiment, sweep), its figure and the table behind it,
time series of a few runs, the environment the runs ran in, and a count of the runs.
"""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from ..analysis import figures, machines, stacks
from ..analysis.stored_run import AnyRun
from ..experiments import AnyExperiment, experiments
from ..experiments.base import Table
from ..files import JsonObject, check_output_dir, printable, write_output
from . import fidelity, typed_runs
from .store import Store, open_existing
from .sweeps import SWEEPS

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto;
       max-width: 1100px; padding: 0 1em; color: #222; background: #fff; line-height: 1.4; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.3em; border-bottom: 1px solid #ccc; padding-bottom: 0.2em; margin-top: 2em; }
h3 { font-size: 1.1em; margin-top: 1.6em; }
.meta { color: #555; font-size: 0.9em; }
nav ul { columns: 2; font-size: 0.9em; }
figure { margin: 1em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #ddd; }
figcaption { font-size: 0.85em; color: #555; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: right; }
th { background: #f2f2f2; }
td.text, th.text { text-align: left; }
tr.failed td { color: #a00; }
.summary td { text-align: left; }
code { font-size: 0.9em; }
td code { font-size: 1.1em; }
"""

def slug(text: object) -> str:
    """A file-name and anchor friendly form of ``text`` (any string a store holds: never a
    path, never empty, at most 60 characters)."""
    s = re.sub(r"[^A-Za-z0-9.]+", "-", str(text)).strip("-.").lower()[:60].strip("-.")
    return s or "none"


def _e(x: object) -> str:
    """Text from a store, for the page: control and format characters (NUL, U+202E) as
    escapes, cut to 2000 characters, HTML-escaped."""
    return html.escape(printable("" if x is None else str(x), 2000), quote=True)


# The fields of a stored run the report shows as labels (headings, captions, axes): from
# a store made elsewhere they may hold anything, and a 100,000-character value drawn as an
# axis label took over a minute to lay out.
LABEL_FIELDS = ("value", "param", "sweep", "host_config")
LABEL_LIMIT = 120


def _labels_shown(r: AnyRun) -> AnyRun:
    """``r`` with its label fields' text printable and at most LABEL_LIMIT characters."""
    return r.model_copy(update={k: printable(getattr(r, k), LABEL_LIMIT) for k in LABEL_FIELDS})


def _num(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def resolve_run_dir(run_dir: str, base: Path) -> Path | None:
    """Where a run's raw data is on this machine: as stored, relative to the store's
    directory, or (for shards merged from elsewhere) the part from ``runs/`` on under it."""
    if not run_dir:
        return None
    p = Path(run_dir)
    candidates = [p] if p.is_absolute() else [base / p, p]
    parts = p.parts
    if "runs" in parts:
        candidates.append(base.joinpath(*parts[parts.index("runs"):]))
    for c in candidates:
        if c.is_dir():
            return c
    return None


def sweep_groups(runs: Sequence[AnyRun]) -> list[tuple[str, str, list[AnyRun]]]:
    """Runs by (experiment, sweep), experiments in the registry's order."""
    order = {name: i for i, name in enumerate(experiments())}
    keys = sorted({(r.experiment, r.sweep) for r in runs}, key=lambda k: (order.get(k[0], 9), k))
    return [(e, s, [r for r in runs if r.experiment == e and r.sweep == s]) for e, s in keys]


def _chosen_runs(rows: Sequence[AnyRun]) -> list[AnyRun]:
    """The runs whose time series the report shows: of the first series, the first
    successful repetition at the first and at the last value of the sweep."""
    labels = figures.series_of(rows)
    ok = [r for r in rows if r.ok]
    if not ok:
        return []
    first_series = sorted({labels[r.run_key] for r in ok})[0]
    ok = [r for r in ok if labels[r.run_key] == first_series]
    values = figures.values_of(ok)
    chosen = []
    for v in dict.fromkeys([values[0], values[-1]]):
        at = sorted((r for r in ok if (r.value_num, r.value) == v), key=lambda r: r.rep)
        if at:
            chosen.append(at[0])
    return chosen


def run_caption(r: AnyRun, series: str | None = None) -> str:
    what = f"{r.param or r.sweep or 'value'} = {r.value or '-'}"
    return f"{r.experiment} {r.sweep}, {what}, {series or r.host_config}, rep {r.rep} (run {r.run_key[:12]})"


def experiment_of(r: AnyRun) -> AnyExperiment | None:
    return experiments().get(r.experiment)


def sweep_label(rows: Sequence[AnyRun]) -> str:
    """The x-axis label of a sweep: its definition's label, else the parameter's name."""
    for name in [rows[0].sweep, rows[0].param] if rows else []:
        if name in SWEEPS:
            return SWEEPS[name].label
    return (rows[0].param or rows[0].sweep or "value") if rows else "value"


def run_figure(r: AnyRun, base: Path, path: Path, title: str | None = None) -> Path:
    """The time-series figure of one stored run, drawn by its experiment exactly as at run
    time. Says so in the figure when the run's raw data is not on this machine."""
    title = title or run_caption(r)
    d = resolve_run_dir(r.run_dir, base)
    exp = experiment_of(r)
    if d is None:
        return figures.empty_figure(path, title, "raw data of this run not found")
    if exp is None:
        return figures.empty_figure(path, title, f"experiment {r.experiment!r} is not installed here")
    return exp.run_figure(d, r, path, title)


def sweep_figure(experiment: str, rows: Sequence[AnyRun], path: Path, title: str | None = None) -> Path:
    """The figure of one sweep, as its experiment draws it."""
    exp = experiments().get(experiment)
    title = title or f"{experiment}: {rows[0].sweep if rows else ''}"
    if exp is None:
        return figures.empty_figure(path, title, f"experiment {experiment!r} is not installed here")
    return exp.sweep_figure(rows, path, title, sweep_label(rows))


def html_table(t: Table, cls: str) -> str:
    """An experiment's table, its naming columns (``Table.text_columns``) as text."""
    k = t.text_columns
    head = "".join(f'<th class="text">{_e(c)}</th>' if i < k else f"<th>{_e(c)}</th>" for i, c in enumerate(t.columns))
    out = [f'<table class="data {_e(cls)}"><tr>{head}</tr>']
    for row, failed in zip(t.rows, t.failed, strict=True):
        cells = "".join(f'<td class="text">{_e(c)}</td>' if i < k else f"<td>{_e(c)}</td>" for i, c in enumerate(row))
        tr = '<tr class="failed">' if failed else "<tr>"
        out.append(f"{tr}{cells}</tr>")
    out.append("</table>\n")
    return "".join(out)


def _md_cell(text: str) -> str:
    """A table cell's text for Markdown: a pipe would end the cell (a line break is escaped)."""
    return printable(text).replace("|", "\\|")


def markdown_table(t: Table) -> str:
    """An experiment's table as GitHub-flavoured Markdown, rows with no successful run
    marked, so a page of the docs can quote a campaign's figures as measured."""
    out = ["| " + " | ".join(_md_cell(c) for c in t.columns) + " |",
           "|" + "|".join("---" if i < t.text_columns else "--:" for i in range(len(t.columns))) + "|"]
    for row, failed in zip(t.rows, t.failed, strict=True):
        cells = [_md_cell(c) for c in row]
        if failed and cells:
            cells[0] += " (no successful run)"
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def _flatten(d: JsonObject, prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(_flatten(v, key + " / "))
        else:
            out[key] = v if isinstance(v, str) else json.dumps(v)
    return out


def _img(name: str, alt: str, cls: str, caption: str) -> str:
    return (f'<figure class="{_e(cls)}"><img src="{_e(name)}" alt="{_e(alt)}">'
            f"<figcaption>{_e(caption)}</figcaption></figure>\n")


def _environment(rows: Sequence[AnyRun]) -> str:
    counts: dict[str, Counter[str]] = {}
    for r in rows:
        for k, v in _flatten(r.environment).items():
            counts.setdefault(k, Counter())[v] += 1
    if not counts:
        return "<p>No environment recorded.</p>\n"
    t = ['<table class="environment"><tr><th class="text">field</th><th class="text">value</th><th>runs</th></tr>']
    for k in sorted(counts):
        for v, n in sorted(counts[k].items(), key=lambda kv: (-kv[1], kv[0])):
            t.append(f'<tr><td class="text">{_e(k)}</td><td class="text"><code>{_e(v)}</code></td><td>{n}</td></tr>')
    t.append("</table>\n")
    return "".join(t)


def _runs_summary(rows: Sequence[AnyRun], unreadable: Sequence[tuple[str, str]] = ()) -> str:
    ok = sum(1 for r in rows if r.ok)
    started = min((r.started_at for r in rows), default="")
    finished = max((r.finished_at for r in rows), default="")
    out = ['<table class="summary">',
           f"<tr><th class=\"text\">runs</th><td>{len(rows)}</td></tr>",
           f"<tr><th class=\"text\">successful</th><td>{ok}</td></tr>",
           f"<tr><th class=\"text\">failed</th><td>{len(rows) - ok}</td></tr>",
           f"<tr><th class=\"text\">first start</th><td>{_e(started)}</td></tr>",
           f"<tr><th class=\"text\">last finish</th><td>{_e(finished)}</td></tr>",
           "</table>\n",
           _machines(rows), _unreadable(unreadable)]
    failed = [r for r in rows if not r.ok]
    if failed:
        out.append(f"<h3>Failed runs ({len(failed)})</h3>\n"
                   '<table class="failures"><tr><th class="text">experiment</th><th class="text">sweep</th>'
                   '<th class="text">value</th><th class="text">stack</th><th class="text">host config</th><th>rep</th>'
                   '<th class="text">machine</th><th class="text">error</th></tr>')
        for r in failed[:200]:
            out.append(f'<tr><td class="text">{_e(r.experiment)}</td><td class="text">{_e(r.sweep)}</td>'
                       f'<td class="text">{_e(r.value)}</td><td class="text">{_e(r.stack_shown)} {_e(r.cc)}</td>'
                       f'<td class="text">{_e(r.host_config)}</td><td>{_e(r.rep)}</td>'
                       f'<td class="text">{_e(r.machine)}</td><td class="text">{_e(r.error or "")}</td></tr>')
        out.append("</table>\n")
        if len(failed) > 200:
            out.append(f"<p>... and {len(failed) - 200} more (query the store for all).</p>\n")
    return "".join(out)


def _unreadable(unreadable: Sequence[tuple[str, str]]) -> str:
    """The runs left out because they no longer validate (``typed_runs.py``), each with why."""
    if not unreadable:
        return ""
    out = [f"<h3>Runs left out ({len(unreadable)})</h3>\n<p>Their scenario or options no longer validate, so they "
           'cannot be drawn as what they were:</p>\n<table class="unreadable"><tr><th class="text">run</th>'
           '<th class="text">why</th></tr>']
    out += [f'<tr><td class="text">{_e(k[:12])}</td><td class="text">{_e(why)}</td></tr>' for k, why in unreadable[:200]]
    out.append("</table>\n")
    if len(unreadable) > 200:
        out.append(f"<p>... and {len(unreadable) - 200} more.</p>\n")
    return "".join(out)


def _machines(rows: Sequence[AnyRun]) -> str:
    """The machine table (runs, failures, kernel, CPU, configurations whose results differ)
    and the list of machines whose results differ from the other machines' (rule in
    analysis/machines.py), on each experiment's primary metric."""
    primary = {name: exp.metrics[0].name for name, exp in experiments().items() if exp.metrics}
    compared = machines.compare_machines(rows, primary)
    summary = {ms.machine: ms for ms in machines.machine_summary(compared)}
    out = ['<h3>Machines</h3>\n<table class="machines"><tr><th class="text">machine</th><th>runs</th><th>failed</th>'
           '<th class="text">kernel</th><th class="text">CPU</th><th>configurations differing</th></tr>']
    for m in machines.runs_per_machine(rows):
        ms = summary.get(m.machine)
        differ = f"{ms.flagged} of {ms.comparable}" if ms else "-"
        out.append(f'<tr><td class="text">{_e(m.machine)}</td><td>{m.runs}</td><td>{m.failed}</td>'
                   f'<td class="text">{_e(", ".join(m.kernels))}</td><td class="text">{_e(", ".join(m.cpu_models))}</td>'
                   f"<td>{differ}</td></tr>")
    out.append("</table>\n")
    out.append('<h3 id="machines-differ">Machines whose results differ</h3>\n'
               '<p class="meta">Per configuration (runs equal but for repetition, seed and machine) that ran on two or '
               "more machines, each machine's mean of its experiment's primary metric against the other machines' "
               f"successful runs, with at least {machines.MIN_RUNS} runs on each side; flagged when the difference exceeds "
               f"{machines.SPREAD:g} times the larger of the pooled within-machine standard deviation and the other "
               f"machines' standard deviation, and {machines.FLOOR * 100:g} % of the other machines' mean. With two "
               "machines both are flagged.</p>\n")
    flagged = [c for c in compared if c.flagged]
    if not compared:
        out.append("<p>No configuration ran on two machines with enough successful runs on each: nothing to compare.</p>\n")
    elif not flagged:
        out.append(f"<p>No machine differs: {len(compared)} comparisons, all within the spread.</p>\n")
    else:
        out.append('<table class="machine-outliers"><tr><th class="text">machine</th><th class="text">configuration</th>'
                   '<th class="text">metric</th><th>n</th><th>mean</th><th class="text">other machines</th><th>n</th>'
                   "<th>mean</th><th>std</th><th>difference %</th><th>threshold</th></tr>")
        for c in flagged:
            out.append(f'<tr><td class="text">{_e(c.machine)}</td><td class="text">{_e(c.configuration)}</td>'
                       f'<td class="text">{_e(c.metric)}</td><td>{c.n}</td><td>{_num(c.mean, 3)}</td>'
                       f'<td class="text">{_e(", ".join(c.others))}</td><td>{c.others_n}</td><td>{_num(c.others_mean, 3)}</td>'
                       f"<td>{_num(c.others_std, 3)}</td><td>{_num(c.difference_pct, 1)}</td><td>{_num(c.threshold, 3)}</td></tr>")
        out.append("</table>\n")
    return "".join(out)


def _fidelity(rows: Sequence[AnyRun], reference: Path, points: list[fidelity.Point]) -> str:
    """The fidelity section: dclab beside the reference file's published values."""
    compared = fidelity.compare(rows, points)
    matched = sum(1 for c in compared if c.n)
    return ('<h2 id="fidelity">Fidelity</h2>\n'
            f'<p class="meta">dclab beside the published values of <code>{_e(reference)}</code> (given by the user; '
            f"dclab ships none): {len(compared)} points, {matched} with successful runs. dclab's mean and sample "
            "standard deviation over the successful runs at each point, and the ratio of dclab's mean to the "
            "published value.</p>\n" + html_table(fidelity.fidelity_table(compared), "fidelity"))


def _stacks_compared(rows: Sequence[AnyRun], out_dir: Path) -> str:
    """Every stack's headline metric at every point, when the runs have more than one stack
    (analysis/stacks.py): one figure and one table."""
    heads = {name: stacks.Headline(e.metrics[0].name, e.metrics[0].label, e.metrics[0].unit, e.metrics[0].digits)
             for name, e in experiments().items() if e.metrics}  # fmt: skip
    if len(stacks.stacks([r for r in rows if r.experiment in heads])) < 2:
        return ""
    fig = stacks.comparison_figure(rows, heads, out_dir / "stacks-compared.png", "every stack at every point")
    table = Table(*stacks.comparison_table(rows, heads), text_columns=1)
    return ('<h2 id="stacks">Stacks compared</h2>\n'
            '<p class="meta">Each stack\'s headline metric (mean ± standard deviation, successful runs / runs) '
            "at every point of the campaign; a run's stack is its first (DC) flow's.</p>\n"
            + _img(fig.name, "stacks compared", "fig-sweep", "every stack at every point") + html_table(table, "stacks"))


def build_report(store: Store | Path, out_dir: Path, title: str, reference: Path | None = None) -> Path:
    """Writes ``out_dir/index.html``, its PNG figures and ``tables.md`` (the page's tables
    in Markdown, for a page of the docs to quote); returns the page's path. With a
    ``reference`` file (``fidelity.py``) the page gets a fidelity section; a bad file is
    refused (ScenarioError) before anything is written."""
    points = fidelity.load_reference(reference) if reference is not None else None
    store = store if isinstance(store, Store) else open_existing(Path(store))
    base = store.path.resolve().parent
    out_dir = check_output_dir(out_dir, "--out")
    out_dir.mkdir(parents=True, exist_ok=True)
    typed = typed_runs.runs(store)
    rows = [_labels_shown(r) for r in typed.runs]  # every table and figure below shows a stand-in's model
    groups = sweep_groups(rows)
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    ok = sum(1 for r in rows if r.ok)

    body: list[str] = []
    tables_md = [f"# {printable(title)}\n\nStore `{store.path}`: {len(rows)} runs, {ok} successful, "
                 f"{len(rows) - ok} failed; generated {now}. Each cell is the mean ± std over the runs "
                 f"counted in `n`.\n"]
    toc: list[str] = []
    series_body: list[str] = []
    for experiment, sweep, rs in groups:
        name = f"{slug(experiment)}-{slug(sweep or 'runs')}"  # strings from the store: never a path
        heading = f"{experiment}: {sweep or 'runs without a sweep'}"
        toc.append(f'<li><a href="#{_e(name)}">{_e(heading)}</a></li>')
        params = sorted({r.param for r in rs} - {""})
        nok = sum(1 for r in rs if r.ok)
        body.append(f'<h2 id="{_e(name)}">{_e(heading)}</h2>\n'
                    f'<p class="meta">parameter: {_e(", ".join(params) or "-")}; {len(rs)} runs, '
                    f"{len(rs) - nok} failed</p>\n")
        tables_md.append(f"\n## {printable(heading)}\n\nParameter: {printable(', '.join(params) or '-')}; "
                         f"{len(rs)} runs, {len(rs) - nok} failed.\n")
        exp = experiments().get(experiment)
        if exp is None:
            fig = figures.empty_figure(out_dir / f"{name}.png", heading, f"experiment {experiment!r} is not installed here")
            body.append(_img(fig.name, heading, f"fig-sweep fig-{experiment}", heading))
            body.append(f"<p>Experiment {_e(experiment)} is not installed here: no table.</p>\n")
            tables_md.append(f"\nExperiment {printable(experiment)} is not installed here: no table.\n")
            continue
        located = [r.model_copy(update={"run_path": resolve_run_dir(r.run_dir, base)}) for r in rs]
        for fig, caption in exp.sweep_figures(located, out_dir, name, heading, sweep_label(rs)):
            body.append(_img(fig.name, heading, f"fig-sweep fig-{experiment}", caption))
        for caption, table in exp.sweep_tables(rs):
            if caption:
                body.append(f'<p class="meta">{_e(caption)}</p>\n')
                tables_md.append(f"\n{printable(caption[:1].upper() + caption[1:])}:\n")
            body.append(html_table(table, experiment))
            tables_md.append("\n" + markdown_table(table))

        labels = figures.series_of(rs)
        for r in _chosen_runs(rs):
            kind = exp.run_figure_kind
            fname = f"{kind}-{name}-{slug(r.value or 'none')}-{slug(labels[r.run_key])}-rep{slug(r.rep)}.png"
            cap = run_caption(r, labels[r.run_key])
            run_figure(r, base, out_dir / fname, cap)
            series_body.append(_img(fname, cap, f"fig-{kind}", f"{kind}: {cap}"))

    compared = _stacks_compared(rows, out_dir) if rows else ""
    parts = [
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n",
        f"<title>{_e(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n",
        f"<h1>{_e(title)}</h1>\n",
        f'<p class="meta">store <code>{_e(store.path)}</code>; {len(rows)} runs, {ok} successful, '
        f"{len(rows) - ok} failed; generated {_e(now)}</p>\n",
    ]
    if not rows:
        parts.append("<p>The store holds no runs" + (" that this dclab can read" if typed.unreadable else "") + ".</p>\n")
        parts.append(_unreadable(typed.unreadable))
    else:
        parts.append('<nav><h2>Contents</h2>\n<ul>' + "".join(toc)
                     + ('<li><a href="#stacks">stacks compared</a></li>' if compared else "")
                     + ('<li><a href="#fidelity">fidelity</a></li>' if reference is not None else "")
                     + '<li><a href="#time-series">time series of selected runs</a></li>'
                       '<li><a href="#environment">environment</a></li><li><a href="#runs">runs and machines</a></li>'
                       "</ul></nav>\n")
        parts += body
        parts.append(compared)
        if reference is not None and points is not None:
            parts.append(_fidelity(rows, reference, points))
        parts.append('<h2 id="time-series">Time series of selected runs</h2>\n'
                     '<p class="meta">Per sweep, the first successful repetition at its first and last value '
                     "(first series), as its experiment draws a single run.</p>\n")
        parts += series_body or ["<p>No successful runs.</p>\n"]
        parts.append('<h2 id="environment">Environment</h2>\n'
                     '<p class="meta">Distinct values over all runs, with how many runs recorded each.</p>\n')
        parts.append(_environment(rows))
        parts.append('<h2 id="runs">Runs and machines</h2>\n')
        parts.append(_runs_summary(rows, typed.unreadable))
    parts.append("</body>\n</html>\n")
    write_output(out_dir / "tables.md", "".join(tables_md), "report")
    return write_output(out_dir / "index.html", "".join(parts), "report")
