"""Under CI=true a skipped test fails the run unless its marker is on the allow-list of
tests/conftest.py; outside CI a skip stays a skip."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

TESTS = '''
import pytest

def test_a_tool_is_missing():
    pytest.skip("tshark not installed")

@pytest.mark.skipif(True, reason="needs root")
def test_marked():
    pass

@pytest.mark.slow
def test_the_release_check():
    pass

@pytest.mark.xfail(reason="known")
def test_expected_to_fail():
    assert False

def test_runs():
    pass
'''


def run(tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess:
    shutil.copy(Path(__file__).with_name("conftest.py"), tmp_path / "conftest.py")
    (tmp_path / "test_x.py").write_text(TESTS)
    env = {"PATH": "/usr/bin:/bin"} | ({"CI": ci} if ci is not None else {})
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "-o", "markers=slow",
                           str(tmp_path)], capture_output=True, text=True, cwd=tmp_path, env=env)


def test_a_skip_fails_under_ci_unless_allowed(tmp_path):
    p = run(tmp_path, "true")
    assert p.returncode == 1, p.stdout
    out = p.stdout
    assert "FAILED test_x.py::test_a_tool_is_missing - skipped under CI (tshark not installed)" in out
    assert "ERROR test_x.py::test_marked - skipped under CI (needs root)" in out
    assert "SKIPPED [1] test_x.py:" in out and "slow: set DCLAB_SLOW=1" in out, "the allowed marker stays a skip"
    assert "1 failed, 1 passed, 1 skipped, 1 xfailed, 1 error" in out


def test_outside_ci_a_skip_is_a_skip(tmp_path):
    for ci in (None, "false"):
        p = run(tmp_path, ci)
        assert p.returncode == 0, p.stdout
        assert "1 passed, 3 skipped, 1 xfailed" in p.stdout
