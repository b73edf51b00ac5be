"""One process runs a campaign's runs at a time (dclab/campaign/locks.py): a second `campaign
run` of the same campaign is refused at once, naming the first one's pid, and runs nothing
(two would empty each other's run directories); the lock goes with its holder; what another
process stored after this one planned is not run again. No root: simulated runs."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import run_dclab

from dclab.campaign import plan as cp
from dclab.campaign.locks import CAMPAIGN_LOCK, Busy, campaign_lock, held
from dclab.campaign.store import Store, StoreError
from dclab.cli.campaign import store_at


def test_a_held_lock_refuses_a_second_holder_with_its_pid_and_is_gone_after(tmp_path):
    lock = tmp_path / "x.lock"
    with held(lock, wait=False):
        assert lock.read_text() == f"{os.getpid()}\n"
        with pytest.raises(Busy) as e:
            with held(lock, wait=False):
                pass
        assert e.value.holder == str(os.getpid())
    assert not lock.exists()
    with held(lock, wait=False):  # free again
        pass


def test_a_lock_path_that_is_no_regular_file_is_refused_and_not_written_through(tmp_path):
    target = tmp_path / "elsewhere"
    target.write_text("keep")
    (tmp_path / "x.lock").symlink_to(target)
    with pytest.raises(StoreError, match="cannot lock"):
        with held(tmp_path / "x.lock", wait=False):
            pass
    assert target.read_text() == "keep"
    os.mkfifo(tmp_path / "f.lock")
    with pytest.raises(StoreError, match="a FIFO|not a lock file"):
        with held(tmp_path / "f.lock", wait=False):
            pass


def test_a_second_campaign_run_is_refused_while_one_runs_and_runs_nothing(tmp_path):
    env = {**os.environ, "DCLAB_RESULTS": str(tmp_path)}
    directory = tmp_path / "smoke"
    directory.mkdir()
    store_at(directory / "store.sqlite")
    with campaign_lock(directory):  # as a running `campaign run smoke` holds it
        r = run_dclab("campaign", "run", "smoke", "--backend", "sim", env=env, timeout=120)
        assert r.returncode == 1, r.stderr
        said = " ".join(r.stderr.split())
        assert f"campaign smoke is being run by another dclab (pid {os.getpid()})" in said, said
        assert Store(directory / "store.sqlite").keys() == set()
        assert not (directory / "runs").exists() or not any((directory / "runs").iterdir())
    r = run_dclab("campaign", "run", "smoke", "--backend", "sim", env=env, timeout=300)
    assert r.returncode == 0 and "16 runs stored ok, 0 failed" in r.stdout, r.stdout + r.stderr
    assert not (directory / CAMPAIGN_LOCK).exists(), "released when the run ended"


def test_the_lock_goes_with_a_killed_holder(tmp_path):
    lock = tmp_path / "campaign.lock"
    holder = subprocess.Popen(["python3", "-c", (
        "import fcntl, os, sys, time\n"
        f"fd = os.open({str(lock)!r}, os.O_RDWR | os.O_CREAT)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "print('held', flush=True)\n"
        "time.sleep(60)\n")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(Busy):
            with held(lock, wait=False):
                pass
    finally:
        holder.kill()
        holder.wait(10)
    with held(lock, wait=False):  # a SIGKILLed holder's flock is gone with it
        pass


def test_what_another_process_stored_after_planning_is_not_run_again(tmp_path, monkeypatch):
    from dclab.cli import campaign as cli

    monkeypatch.setenv("DCLAB_RESULTS", str(tmp_path))
    c = cp.load("smoke")
    todo = cp.plan(c)[:4]
    store = store_at(Path(tmp_path) / "smoke" / "store.sqlite")
    ran: list[list[str]] = []

    class Runner:
        many_in_flight = False

        def run(self, c, store, todo, progress):
            ran.append([r.key for r in todo])
            return cli.Outcome()

    monkeypatch.setattr(cli, "runner_for", lambda where, say=None, on_workers=None: Runner())
    monkeypatch.setattr(Store, "keys", lambda self: {todo[1].key, todo[2].key})  # stored meanwhile
    cli.run_all(c, store, todo)
    assert ran == [[todo[0].key, todo[3].key]]


def test_a_campaign_that_cannot_start_leaves_no_empty_store(tmp_path, monkeypatch):
    """No simulated twin: refused before a store is made. A runner that fails before it
    stores anything (a cluster refusing the certificate): the store this call made goes."""
    from click.testing import CliRunner

    from dclab.cli import app
    from dclab.cli import campaign as cli

    monkeypatch.setenv("DCLAB_RESULTS", str(tmp_path / "results"))
    multipath = tmp_path / "mp.toml"
    multipath.write_text('description = "multipath only"\nreps = 1\n[[group]]\nname = "mp"\n'
                         'experiments = ["split-layer"]\nconfigs = [{ stack = "mptcp", cc = "cubic" }]\nsweeps = ["none"]\n'
                         'options = { split-layer = { aggregation = "mptcp" } }\n')
    r = CliRunner().invoke(app, ["campaign", "run", str(multipath), "--backend", "sim"])
    assert r.exit_code == 1 and "no run to do with --backend sim (nothing was written)" in r.output, r.output
    assert not (tmp_path / "results" / "mp" / "store.sqlite").exists()

    def refused(*_a, **_k):
        raise cli.click.ClickException("cannot reach the Dask scheduler tls://h:8786: certificate refused")

    monkeypatch.setattr(cli, "run_all", refused)
    r = CliRunner().invoke(app, ["campaign", "run", "smoke", "--backend", "sim", "--group", "smoke*"])
    assert r.exit_code == 1 and "certificate refused" in r.output, r.output
    assert not (tmp_path / "results" / "smoke" / "store.sqlite").exists()
