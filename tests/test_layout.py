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
    with open(tmp_path / "dclab" / "flows.py", "a") as f:
        f.write("\n\ndef _late():\n    from .cli import app  # noqa\n")
    with open(tmp_path / "dclab" / "testbed" / "netns.py", "a") as f:
        f.write("\nimport click  # noqa\n")
    p = check(tmp_path / "dclab")
    assert p.returncode == 1
    assert "dclab.flows (level 3) imports dclab.cli (level 8): upwards" in p.stdout
    assert "netns.py" in p.stdout and "imports click" in p.stdout


def test_registry_finds_the_shipped_experiments():
    from dclab.experiments import default_experiment, experiments

    assert {"throughput", "fairness"} <= set(experiments())
    assert default_experiment().name == "throughput"
