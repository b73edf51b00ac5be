"""The rooms stay in their levels (docs/architecture.md) and the experiment registry finds
experiments by itself."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def check(tree: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "check_levels.py"), str(tree)],
                          capture_output=True, text=True)


def test_no_python_module_imports_upwards():
    p = check(ROOT / "dclab")
    assert p.returncode == 0, p.stdout


def test_the_check_sees_an_upward_import_and_click_outside_the_cli(tmp_path):
    shutil.copytree(ROOT / "dclab", tmp_path / "dclab", ignore=shutil.ignore_patterns("__pycache__"))
    with open(tmp_path / "dclab" / "flowplan.py", "a") as f:
        f.write("\n\ndef _late():\n    from .cli import app  # noqa\n")
    with open(tmp_path / "dclab" / "testbed" / "netns.py", "a") as f:
        f.write("\nimport click  # noqa\n")
    p = check(tmp_path / "dclab")
    assert p.returncode == 1
    assert "dclab.flowplan (level 3) imports dclab.cli (level 9): upwards" in p.stdout
    assert "netns.py" in p.stdout and "imports click" in p.stdout


def test_registry_finds_the_shipped_experiments():
    from dclab.experiments import default_experiment, experiments

    assert {"throughput", "fairness"} <= set(experiments())
    assert default_experiment().name == "throughput"


def _doc_levels(section: str) -> dict[str, int]:
    """Room -> level from one of docs/architecture.md's level tables (the rows under the
    heading that starts with ``section``); entry points (main.rs, bin/) left out."""
    import re

    text = (ROOT / "docs" / "architecture.md").read_text()
    part = text.split(f"### {section}", 1)[1].split("\n#", 1)[0]
    out: dict[str, int] = {}
    for line in part.splitlines():
        m = re.match(r"\|\s*(\d+)\s*\|([^|]*)\|", line)
        if not m:
            continue
        for name in re.findall(r"`([^`]+)`", m.group(2)):
            room = name.removesuffix("/").removesuffix(".rs").removesuffix(".py")
            if room not in ("main", "bin"):
                out[room] = int(m.group(1))
    return out


def _emu_levels() -> dict[str, int]:
    import re

    script = (ROOT / "emu" / "check-levels.sh").read_text()
    table = re.search(r"declare -A level=\(([^)]*)\)", script)
    assert table, "emu/check-levels.sh keeps its levels in one `declare -A level=(...)`"
    return {k: int(v) for k, v in re.findall(r"\[(\w+)\]=(\d+)", table.group(1))}


def _python_levels() -> dict[str, int]:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from check_levels import LEVELS
    finally:
        sys.path.pop(0)
    return {k: v for k, v in LEVELS.items() if k not in ("__init__", "__main__")}


def test_the_documents_name_every_room_at_the_level_the_checkers_enforce():
    """docs/architecture.md's tables and the two checkers agree room by room, and the
    layout in CONTRIBUTING.md names every room, so neither document can drift from the code."""
    assert _doc_levels("dcemu") == _emu_levels()
    assert _doc_levels("dclab") == _python_levels()
    contributing = (ROOT / "CONTRIBUTING.md").read_text()
    layout = contributing.split("emu/                   Rust crate", 1)[1].split("```", 1)[0]
    for room in _emu_levels():
        assert f"src/{room}/" in layout or f"{room}.rs" in layout, f"CONTRIBUTING.md's layout lacks emu/src/{room}"
    for room in _python_levels():
        assert f" {room}/" in layout or f" {room}.py" in layout, f"CONTRIBUTING.md's layout lacks dclab/{room}"
    # and every room on disk has a level (a new one would go unchecked)
    on_disk = {p.stem for p in (ROOT / "dclab").iterdir() if p.suffix == ".py" or (p / "__init__.py").is_file()}
    assert on_disk - {"__init__", "__main__"} == set(_python_levels())


def test_input_errors_are_one_family_and_only_the_cli_exits():
    """Every kind of refused input is an InputError (dclab/errors.py), which the CLI turns
    into one usage line; nothing below the CLI raises SystemExit (a library call that ends
    the process would take a campaign down with it)."""
    import ast

    from dclab.campaign.plan import CampaignFileError
    from dclab.endpoints.base import StackError
    from dclab.errors import InputError, OptionError, TraceError
    from dclab.files import FileRefused
    from dclab.flowplan import PlanError
    from dclab.scenario import ScenarioError
    from dclab.trace_levels import CutError

    for cls in (ScenarioError, CampaignFileError, OptionError, TraceError, CutError, FileRefused, PlanError, StackError):
        assert issubclass(cls, InputError), cls
    exits = []
    for path in (ROOT / "dclab").rglob("*.py"):
        if path.relative_to(ROOT / "dclab").parts[0] in ("cli", "__main__.py"):
            continue
        tree = ast.parse(path.read_text())
        # a program's own `if __name__ == "__main__": sys.exit(main())` (a separate process) is its to end
        tree.body = [n for n in tree.body if not (isinstance(n, ast.If) and "__main__" in ast.unparse(n.test))]
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id == "SystemExit" or (
                    isinstance(node, ast.Attribute) and node.attr == "exit" and getattr(node.value, "id", "") == "sys"):
                exits.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert exits == []


def _named_in_architecture() -> set[str]:
    """What docs/architecture.md names in backticks (its code blocks left out)."""
    import re

    text = re.sub(r"```.*?```", "", (ROOT / "docs" / "architecture.md").read_text(), flags=re.S)
    return set(re.findall(r"`([^`\n]+)`", text))


def test_the_architecture_page_names_only_files_that_exist_and_every_module():
    """Every file or folder docs/architecture.md names exists (by its path, or as the end of
    one), and every module and room at the top of dclab/ and emu/src/ is named there."""
    import re

    named = _named_in_architecture()
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    paths = {t for t in named if re.fullmatch(r"[a-z0-9_./-]+(\.py|\.rs|\.sh|\.md|/)", t)}
    assert len(paths) > 50, sorted(paths)
    missing = [t for t in sorted(paths) if not any(f.startswith(t) or f"/{t}" in f"/{f}" for f in files)]
    assert not missing, f"docs/architecture.md names what the repository does not have: {missing}"

    def tops(root: str, ext: str) -> set[str]:
        depth = root.count("/")
        return {f.split("/")[depth] + ("/" if f.count("/") > depth else "")
                for f in files if f.startswith(root) and f.endswith(ext)}
    unnamed = sorted(((tops("dclab/", ".py") - {"__init__.py", "__main__.py"})
                      | (tops("emu/src/", ".rs") - {"lib.rs"})) - named)
    assert not unnamed, f"docs/architecture.md does not name: {unnamed}"


# Issue 49's counts, kept from growing back: a record with a shape is a model; a JSON or
# TOML object at an edge (a file, a program's report, the store's export, --json) is a
# `JsonObject` (dclab/files.py). What is left of `dict[str, Any]` is keyword arguments on
# their way into a model (click's, a scenario's changes), the testbeds' `state`, the ASGI
# messages of the TCP endpoint's HTTP/2 app, aioquic's own signature that the BBR
# controller overrides (it imports nothing of dclab), and `RepResult.details` and
# `Summary.extra` (an experiment's own records before they are dumped).
ANY_DICTS = 22
# Run fields read by string from a record: what is left reads a program's report
# (`extra`), an experiment's own metric by its name (`RepResult.metrics`, `Summary.metrics`),
# and a field's `json_schema_extra` (not a run's).
KEY_READS = 10
RUN_FIELDS = ("metrics|options|scenario|flows|run_path|run_dir|run_key|value|value_num|param|sweep|series|ok|stack|cc|"
              "host_config|environment|rep|seed|campaign|experiment|error|mean_mbps|goodput_mbps|completion_s")


def test_records_stay_typed():
    import re

    def lines(paths: list[Path], pattern: str) -> list[str]:
        rx = re.compile(pattern)
        return [f"{p.relative_to(ROOT)}:{i}: {line.strip()}" for p in paths for i, line in
                enumerate(p.read_text().splitlines(), 1) if rx.search(line)]

    dclab = sorted((ROOT / "dclab").rglob("*.py"))
    anys = [x for x in lines(dclab, r"dict\[str, Any\]") if not x.startswith("dclab/files.py")]
    assert len(anys) <= ANY_DICTS, "a record with a shape is a model; a JSON edge a JsonObject:\n" + "\n".join(anys)
    readers = [p for p in dclab if p.parent.name in ("analysis", "experiments") or p.name in ("report.py", "fidelity.py")
               and p.parent.name == "campaign"]
    reads = lines(readers, rf'(\.get\(|[A-Za-z0-9_)\]]\[)"({RUN_FIELDS})"')
    assert len(reads) <= KEY_READS, "read a run's field as an attribute:\n" + "\n".join(reads)
