"""`dclab doctor`'s free-space check (dclab/testbed/doctor.py): where the results go, the
nearest existing directory of a path not made yet, failing below its minimum with what to do."""

from __future__ import annotations

import shutil

from dclab.testbed import doctor


def test_free_space_is_read_where_the_results_go_and_fails_below_the_minimum(tmp_path, monkeypatch):
    free = shutil.disk_usage(tmp_path).free
    c = doctor.disk_space(tmp_path / "not" / "made")  # read at tmp_path, the nearest that exists
    assert c.name == f"free space ({tmp_path / 'not' / 'made'}: {free / (1 << 30):.1f} GiB)"
    assert c.ok == (free >= doctor.MIN_FREE) and not c.optional
    monkeypatch.setattr(doctor, "MIN_FREE", free + (1 << 40))
    c = doctor.disk_space(tmp_path)
    assert not c.ok and c.fix.startswith("free at least ") and "DCLAB_RESULTS" in c.fix
    assert c in doctor.failed([c])


def test_every_check_includes_the_results_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("DCLAB_RESULTS", str(tmp_path / "r"))
    assert any(c.name.startswith(f"free space ({tmp_path / 'r'}:") for c in doctor.checks())
