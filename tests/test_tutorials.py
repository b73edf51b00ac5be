"""The tutorials' commands (docs/tutorials/*.md) against the code, so a tutorial cannot
drift from it. Every ```sh block there is marked on the line before it,
`<!-- tutorial: quick -->` (runs in about a minute) or `<!-- tutorial: slow -->`.

Always (no root): every command line starts with a known program, and every `dclab`
subcommand and option it names exists in click's own command tree.
As root (`-m root`): the quick blocks run for real in a temporary directory; the slow ones
only with DCLAB_SLOW=1. A quick block must not need what a slow one makes (a campaign's
store), so each runs on its own; a tutorial's blocks run in order in one directory. Each
figure the page names for those runs must have been drawn, and with
DCLAB_TUTORIAL_FIGURES=1 it is kept under docs/tutorials/figures, where the page shows it,
with the numbers of each run beside it (``<tutorial>/<run>.json``: the command that made
the run, its results and each repetition's metrics and details).

A number a page quotes from a run is marked by the comment in front of it,
``<!-- runs/DIR PATH -->817``, PATH a dotted path into the run's kept numbers
(``results.metrics.goodput_mbps.mean``); always (no root) every marked number must be the
kept value as rounded on the page, and the kept numbers must come from the command the
page shows now. A run done again changes the figure and the numbers together, and the
page's text has to follow."""

from __future__ import annotations

import gzip
import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import click
import pytest

from dclab.cli import app

ROOT = Path(__file__).resolve().parent.parent
TUTORIALS = sorted(p for p in (ROOT / "docs" / "tutorials").glob("*.md") if p.stem != "index")
MARKED = re.compile(r"<!-- tutorial: (quick|slow) -->\n```sh\n(.*?)```", re.S)
ANY_SH = re.compile(r"^```(sh|bash|console|shell)\s*$", re.M)

# Programs a tutorial may start a command with: the project's own, and the few tools the
# tutorials use to look at what a run left.
PROGRAMS = {"dclab", "dcemu", "make", "python", "python3", "bash", "zcat", "tail", "sqlite3", "tshark", "cargo"}
# Words in front of a program that do not change which program runs.
PREFIXES = {"sudo", "time"}


@dataclass(frozen=True)
class Block:
    tutorial: str
    index: int
    speed: str
    text: str

    def commands(self) -> list[str]:
        """Its command lines: continuations joined, comments and blank lines dropped."""
        joined = self.text.replace("\\\n", " ")
        return [line.split(" #", 1)[0].strip() for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]

    @property
    def id(self) -> str:
        return f"{self.tutorial}#{self.index}-{self.speed}"


def blocks() -> list[Block]:
    out = []
    for path in TUTORIALS:
        for i, m in enumerate(MARKED.finditer(path.read_text()), 1):
            out.append(Block(path.stem, i, m.group(1), m.group(2)))
    return out


def words(command: str) -> list[str]:
    """The words of one pipeline stage, without environment assignments and prefixes."""
    ws = shlex.split(command)
    while ws and (re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", ws[0]) or ws[0] in PREFIXES):
        ws.pop(0)
    return ws


def stages(command: str) -> list[str]:
    return [s for s in re.split(r"\s*(?:\||&&|;)\s*", command) if s]


def resolve(argv: list[str]) -> tuple[click.Command, list[str], str]:
    """The click command `dclab ARGV...` names, the words after it, and its full name."""
    cmd: click.Command = app
    name = "dclab"
    rest = list(argv)
    while isinstance(cmd, click.Group) and rest and not rest[0].startswith("-"):
        with click.Context(cmd, info_name=name) as ctx:
            sub = cmd.get_command(ctx, rest[0])
        assert sub is not None, f"`{name} {rest[0]}` is no dclab command"
        name += " " + rest.pop(0)
        cmd = sub
    return cmd, rest, name


def option_names(cmd: click.Command) -> set[str]:
    names = {"--help", "-h"}
    for p in cmd.params:
        if isinstance(p, click.Option):
            names.update(p.opts)
            names.update(p.secondary_opts)
    return names


def check_dclab(argv: list[str]) -> None:
    cmd, rest, name = resolve(argv)
    assert not isinstance(cmd, click.Group) or rest and rest[0] in ("--help", "-h"), f"`{name}` needs a subcommand"
    known = option_names(cmd)
    for word in rest:
        if word == "--":  # what follows is another program's (dclab shell -- CMD)
            break
        if word.startswith("-") and len(word) > 1 and not re.fullmatch(r"-\d.*", word):
            opt = word.split("=", 1)[0]
            assert opt in known, f"`{name}` has no option {opt} (it has {', '.join(sorted(known))})"


def test_every_tutorial_block_is_marked():
    """A ```sh block without a marker would escape both checks below."""
    for path in TUTORIALS:
        text = path.read_text()
        for m in ANY_SH.finditer(text):
            before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
            assert re.fullmatch(r"<!-- tutorial: (quick|slow) -->", before), (
                f"{path.relative_to(ROOT)}: a ```{m.group(1)} block without <!-- tutorial: quick|slow --> on the line before")
    assert len(TUTORIALS) >= 6 and len(blocks()) >= 20


@pytest.mark.parametrize("block", blocks(), ids=lambda b: b.id)
def test_commands_name_what_exists(block: Block):
    for command in block.commands():
        for stage in stages(command):
            ws = words(stage)
            assert ws, f"{block.id}: empty command in {command!r}"
            program = Path(ws[0]).name
            assert program in PROGRAMS, f"{block.id}: {program!r} is not a known program ({', '.join(sorted(PROGRAMS))})"
            if program == "dclab":
                check_dclab(ws[1:])


def test_the_check_catches_drift():
    """The checks above fail on a subcommand or option that does not exist."""
    check_dclab(["run", "throughput", "--size", "20MB", "--out", "x"])
    with pytest.raises(AssertionError, match="no dclab command"):
        check_dclab(["run", "no-such-experiment"])
    with pytest.raises(AssertionError, match="has no option --no-such-option"):
        check_dclab(["campaign", "plan", "smoke", "--no-such-option"])


# -- running them (root) -----------------------------------------------------------------------


def with_out(argv: list[str], tmp: Path, n: int) -> list[str]:
    """A dclab command that takes --out but was given none writes into the temporary directory."""
    try:
        cmd, _, _ = resolve(argv)
    except AssertionError:
        return argv
    if "--out" in option_names(cmd) and not any(w == "--out" or w.startswith("--out=") for w in argv):
        sep = argv.index("--") if "--" in argv else len(argv)
        return argv[:sep] + ["--out", str(tmp / f"out-{n}")] + argv[sep:]
    return argv


# A bound on each command, so that a hung run fails the test instead of CI's whole budget;
# the slow blocks' longest (a campaign) stays well inside it.
COMMAND_TIMEOUT_S = 3600


def run_block(block: Block, tmp: Path) -> None:
    env = dict(os.environ, DCLAB_RESULTS=str(tmp / "results"))
    # The environment running the tests provides dclab and python; dcemu is the checkout's.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), str(ROOT / "emu" / "target" / "release"), env["PATH"]])
    for link in ("data", "campaigns", "scripts"):  # relative paths in the tutorials
        if not (tmp / link).exists():
            (tmp / link).symlink_to(ROOT / link)
    for n, command in enumerate(block.commands()):
        ws = words(command) if not any(op in command for op in ("|", "&&", ";")) else None
        if ws and Path(ws[0]).name == "make":
            argv = ["make", "-C", str(ROOT), *ws[1:]]
            p = subprocess.run(argv, cwd=tmp, env=env, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
        elif ws and Path(ws[0]).name == "dclab":
            assignments = {k: v for k, v in (w.split("=", 1) for w in shlex.split(command)[: shlex.split(command).index(ws[0])] if "=" in w)}
            argv = with_out(ws[1:], tmp, n)
            p = subprocess.run([sys.executable, "-m", "dclab.cli", *argv], cwd=tmp, env={**env, **assignments},
                               capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
        else:
            p = subprocess.run(["bash", "-c", command], cwd=tmp, env=env, capture_output=True, text=True,
                               timeout=COMMAND_TIMEOUT_S)
        assert p.returncode == 0, f"{block.id}: `{command}` exited {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}"


FIGURE = re.compile(r"`(runs/[^`\s]+\.png)`")
# Where DCLAB_TUTORIAL_FIGURES=1 keeps the figures the runs drew, for the pages to show.
FIGURES = ROOT / "docs" / "tutorials" / "figures"


def out_dirs_of(command: str) -> list[str]:
    """The run directories a command names (``--out DIR``)."""
    ws = shlex.split(command)
    return [ws[i + 1] for i, w in enumerate(ws[:-1]) if w == "--out"]


def out_dirs(chosen: list[Block]) -> list[str]:
    """The run directories the blocks name."""
    return [d for block in chosen for command in block.commands() for d in out_dirs_of(command)]


def named_figures(tutorial: str, dirs: list[str]) -> list[str]:
    """The figures the tutorial's text names (`runs/.../x.png`) inside those directories;
    `rep-NN` stands for any repetition."""
    text = (ROOT / "docs" / "tutorials" / f"{tutorial}.md").read_text()
    return sorted({f for f in FIGURE.findall(text) if any(f.startswith(d.rstrip("/") + "/") for d in dirs)})


def kept_name(tutorial: str, figure: str) -> str:
    """The file a figure is kept as under FIGURES: runs/tput/link-utilization.png of the DC
    study is dc-study/tput-link-utilization.png."""
    return f"{tutorial}/{figure.removeprefix('runs/').replace('/rep-NN/', '-').replace('/', '-')}"


# -- the numbers a page quotes ---------------------------------------------------------------

QUOTE = re.compile(r"<!-- (runs/[^\s]+) ([\w.]+) -->(-?\d[\d,]*(?:\.\d+)?)")


def numbers_path(tutorial: str, run_dir: str) -> Path:
    """Where a run's numbers are kept: runs/endc-up of the EN-DC page is endc/endc-up.json."""
    return FIGURES / tutorial / f"{run_dir.removeprefix('runs/').rstrip('/').replace('/', '-')}.json"


def run_numbers(run: Path, command: str) -> dict:
    """What a page may quote of a finished run: its results, and each repetition's metrics,
    details and (simulated) the simulation's own summary."""
    results = json.loads((run / "results.json").read_text())
    reps = []
    for rep in sorted(run.glob("rep-*/result.json")):
        r = json.loads(rep.read_text())
        kept = {"metrics": r.get("metrics"), "details": r.get("details")}
        stats = rep.parent / "dcemu-stats.jsonl.gz"
        if stats.is_file():
            with gzip.open(stats, "rt") as f:
                last = json.loads(f.read().rstrip("\n").rsplit("\n", 1)[-1])
            if last.get("type") == "sim":
                kept["sim"] = {k: v for k, v in last.items() if k != "flows"}
        reps.append(kept)
    return {"command": command, "results": {k: results.get(k) for k in ("metrics", "flows", "reps", "failed")},
            "reps": reps}


def at(numbers: object, path: str) -> object:
    for part in path.split("."):
        numbers = numbers[int(part)] if isinstance(numbers, list) else numbers[part]  # type: ignore[index]
    return numbers


def quote_errors(page: str, kept: dict[str, dict]) -> list[str]:
    """Each marked number of ``page`` that is not its run's kept value as rounded there;
    ``kept`` maps a run directory to its numbers."""
    errors = []
    for run, path, shown in QUOTE.findall(page):
        if run not in kept:
            errors.append(f"{run} {path}: no numbers kept for {run}")
            continue
        try:
            value = float(at(kept[run], path))  # type: ignore[arg-type]
        except (KeyError, IndexError, TypeError, ValueError):
            errors.append(f"{run} {path}: not in the numbers kept for {run}")
            continue
        digits = len(shown.partition(".")[2])
        if round(value, digits) != float(shown.replace(",", "")):
            errors.append(f"{run} {path}: the page says {shown}, the run gave {value:.{digits}f}")
    return errors


def test_every_number_a_page_quotes_is_its_runs():
    """Marked numbers are the kept runs' values, and the kept runs are the commands the page
    shows now (a command changed on the page makes its numbers stale)."""
    quoted = 0
    for path in TUTORIALS:
        tutorial, page = path.stem, path.read_text()
        commands = {d: c for b in blocks() if b.tutorial == tutorial for c in b.commands() for d in out_dirs_of(c)}
        kept = {}
        for run, _ in {(r, p) for r, p, _ in QUOTE.findall(page)}:
            f = numbers_path(tutorial, run)
            if f.is_file():
                kept[run] = json.loads(f.read_text())
                assert kept[run]["command"] == commands.get(run), (
                    f"{f.relative_to(ROOT)} is of `{kept[run]['command']}`; the page runs `{commands.get(run)}`")
        errors = quote_errors(page, kept)
        assert not errors, f"{path.relative_to(ROOT)}: " + "; ".join(errors)
        quoted += len(QUOTE.findall(page))
    assert quoted >= 8, f"only {quoted} marked numbers: a mark was lost"  # the pages marked so far
    for f in FIGURES.rglob("*.json"):  # kept numbers no page quotes are stale
        tutorial = f.parent.name
        page = (ROOT / "docs" / "tutorials" / f"{tutorial}.md").read_text()
        assert any(numbers_path(tutorial, r) == f for r, _, _ in QUOTE.findall(page)), (
            f"{f.relative_to(ROOT)} is quoted by no page")


def test_the_quote_check_catches_drift():
    kept = {"runs/x": {"results": {"metrics": {"goodput_mbps": {"mean": 816.6}}}, "reps": [{"metrics": {"n": 3}}]}}
    page = "gave <!-- runs/x results.metrics.goodput_mbps.mean -->817 Mbit/s, <!-- runs/x reps.0.metrics.n -->3"
    assert quote_errors(page, kept) == []
    assert quote_errors(page.replace("-->817", "-->816.6"), kept) == []
    assert quote_errors(page.replace("-->817", "-->818"), kept) == [
        "runs/x results.metrics.goodput_mbps.mean: the page says 818, the run gave 817"]
    assert quote_errors(page.replace("-->817", "-->816.5"), kept) == [
        "runs/x results.metrics.goodput_mbps.mean: the page says 816.5, the run gave 816.6"]
    assert quote_errors(page.replace("runs/x reps", "runs/y reps"), kept) == ["runs/y reps.0.metrics.n: no numbers kept for runs/y"]
    assert quote_errors(page.replace("metrics.n", "metrics.m"), kept) == ["runs/x reps.0.metrics.m: not in the numbers kept for runs/x"]


def test_every_figure_a_page_shows_was_kept():
    """A tutorial shows the figures its runs draw, kept under docs/tutorials/figures by
    DCLAB_TUTORIAL_FIGURES=1 (below): every one it shows is there, and every kept one is shown."""
    shown = set()
    for path in TUTORIALS:
        for ref in re.findall(r"!\[[^\]]*\]\((figures/[^)]+)\)", path.read_text()):
            assert (path.parent / ref).is_file(), f"{path.relative_to(ROOT)} shows {ref}, which is missing"
            shown.add((path.parent / ref).resolve())
    kept = {p.resolve() for p in FIGURES.rglob("*.png")}
    assert kept <= shown, f"kept but shown on no page: {sorted(str(p) for p in kept - shown)}"
    assert len(shown) >= 5


@pytest.mark.root
@pytest.mark.parametrize("tutorial", [p.stem for p in TUTORIALS])
def test_tutorial_runs(tutorial: str, tmp_path: Path):
    slow = os.environ.get("DCLAB_SLOW") == "1"
    chosen = [b for b in blocks() if b.tutorial == tutorial and (slow or b.speed == "quick")]
    if not chosen:
        pytest.skip(f"{tutorial}: every block is slow (DCLAB_SLOW=1 runs them)")
    for block in chosen:
        run_block(block, tmp_path)
    # Each figure the text names for these runs was drawn (rep-NN: any repetition).
    for figure in named_figures(tutorial, out_dirs(chosen)):
        drawn = sorted(tmp_path.glob(figure.replace("rep-NN", "rep-*")))
        assert drawn, f"{tutorial}: the page names {figure}, which its commands did not draw"
        if os.environ.get("DCLAB_TUTORIAL_FIGURES") == "1":  # a maintainer refreshing the pages' figures
            kept = FIGURES / kept_name(tutorial, figure)
            kept.parent.mkdir(parents=True, exist_ok=True)
            kept.write_bytes(drawn[0].read_bytes())
    if os.environ.get("DCLAB_TUTORIAL_FIGURES") == "1":  # and the numbers of every run beside them
        for block in chosen:
            for command in block.commands():
                for d in out_dirs_of(command):
                    if (tmp_path / d / "results.json").is_file():
                        f = numbers_path(tutorial, d)
                        f.parent.mkdir(parents=True, exist_ok=True)
                        f.write_text(json.dumps(run_numbers(tmp_path / d, command), indent=1) + "\n")
