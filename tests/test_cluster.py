"""Campaigns on Dask (dclab/campaign/cluster.py): the coordinator stores each run exactly
once; a worker killed mid-run, a run that cannot start, a coordinator killed and restarted,
and a machine that fails `dclab doctor` all end with nothing lost and nothing doubled.

The first tests use an in-process cluster and a stand-in for the testbed (fast, no root);
the last ones run real testbeds through `dclab worker` and `dclab campaign run`."""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
from conftest import dclab_process, run_dclab, wait_for

from dclab.campaign import cluster, tls
from dclab.campaign import plan as cp
from dclab.campaign.store import RunRecord, Store, campaign_dir
from dclab.experiments.base import RepResult

TINY = """description = "four short runs"
reps = 2
[throughput]
size = "2MB"
[[group]]
name = "tiny"
experiments = ["throughput"]
configs = [{ stack = "tcp", cc = "cubic" }]
sweeps = [{ name = "batch", values = [10, 100] }]
"""


def tiny(tmp_path: Path) -> tuple[cp.Campaign, list[cp.PlannedRun]]:
    f = tmp_path / "tiny.toml"
    f.write_text(TINY)
    c = cp.load(str(f))
    return c, cp.plan(c)


# --- pure parts --------------------------------------------------------------------------


def test_makespan_is_longest_first_to_the_first_free_worker():
    assert cp.makespan([10, 10, 10], 2) == 20
    assert cp.makespan([5, 4, 3, 3, 3], 2) == 10  # 5+3 | 4+3+3: longest first, not 5+3+3
    assert cp.makespan([7, 1, 1, 1], 50) == 7  # one long run bounds it whatever the workers
    assert cp.makespan([1, 1], 1, per_run_s=0.5) == 3
    assert cp.makespan([], 4) == 0


def test_plan_prints_the_time_on_n_workers():
    r = run_dclab("campaign", "plan", "smoke", "--workers", "2", timeout=120)
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("on 2 workers"))
    total = next(x for x in r.stdout.splitlines() if "runs, 0 done" in x or " to do; estimated" in x)
    assert "longest run first" in line and "min" in line and "estimated" in total


def test_pack_and_unpack_keep_a_run_directory_and_refuse_paths_out(tmp_path):
    src = tmp_path / "run"
    (src / "client").mkdir(parents=True)
    (src / "result.json").write_text('{"ok": true}')
    (src / "client" / "log").write_bytes(os.urandom(1000))
    out = tmp_path / "back"
    cluster.unpack(cluster.pack(src), out)
    assert (out / "result.json").read_text() == '{"ok": true}'
    assert (out / "client" / "log").read_bytes() == (src / "client" / "log").read_bytes()
    evil = io.BytesIO()
    with tarfile.open(fileobj=evil, mode="w:gz") as tar:
        info = tarfile.TarInfo("../escaped")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(tarfile.TarError):
        cluster.unpack(evil.getvalue(), tmp_path / "evil")
    assert not (tmp_path / "escaped").exists()


def record(run: cp.PlannedRun, run_dir: Path, ok: bool = True) -> RunRecord:
    return RunRecord(run_key=run.key, campaign="tiny", experiment=run.experiment, stack="tcp", cc="cubic",
                     host_config="tcp", rep=run.rep, ok=ok, scenario={}, metrics={"goodput_mbps": 10.0},
                     environment={}, run_dir=str(run_dir), machine="m", started_at="t0", finished_at="t1")


def test_a_result_is_stored_once_with_its_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("DCLAB_RESULTS", str(tmp_path / "results"))
    c, runs = tiny(tmp_path)
    store = Store(campaign_dir(c.name) / "store.sqlite")
    src = tmp_path / "scratch"
    src.mkdir()
    (src / "result.json").write_text("first")
    res = cluster.TaskResult(record(runs[0], src), cluster.pack(src), "tcp://a")
    final = campaign_dir(c.name) / "runs" / runs[0].key
    final.mkdir(parents=True)
    (final / "stale").write_text("a try that was never stored")
    assert cluster.store_result(c, store, runs[0], res)
    assert (final / "result.json").read_text() == "first" and not (final / "stale").exists()
    (src / "result.json").write_text("second")
    again = cluster.TaskResult(record(runs[0], src), cluster.pack(src), "tcp://b")
    assert not cluster.store_result(c, store, runs[0], again)  # a duplicate result changes nothing
    assert (final / "result.json").read_text() == "first"
    rows = store.rows()
    assert len(rows) == 1 and rows[0]["run_dir"] == str(final)
    assert not list(final.parent.glob(".*.incoming"))


# --- the coordinator on an in-process cluster, with a stand-in for the testbed -----------


class Recorder:
    def __init__(self) -> None:
        self.finished: list[tuple[str, bool | None, str | None]] = []
        self.waits = 0

    def start(self, run, i, n) -> None:
        pass

    def done(self, run, ok, why) -> None:
        self.finished.append((run.key, ok, why if ok is None else None))

    def waiting(self) -> None:
        self.waits += 1


def fake_perform(fail: dict[str, int]):
    """perform() without a testbed: writes one file; raises for the first fail[key] tries
    of a run (fail[key] < 0: every try)."""
    tries: dict[str, int] = {}

    def perform(campaign, run, run_dir, on_wait=None, session=None):
        n = tries[run.key] = tries.get(run.key, 0) + 1
        left = fail.get(run.key, 0)
        if left < 0 or n <= left:
            raise RuntimeError(f"no testbed here (try {n})")
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "result.json").write_text(json.dumps({"key": run.key}))
        rec = RepResult(experiment=run.experiment, rep=run.rep, seed=run.rep, ok=True, stack="tcp", cc="cubic",
                        host_config="tcp")
        return rec, record(run, run_dir)

    return perform, tries


@pytest.fixture
def local_client():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, resources=cluster.TESTBED,
                      dashboard_address=None) as lc, Client(lc) as client:
        yield client


def test_coordinator_retries_a_run_that_cannot_start_then_stores_it_failed(tmp_path, monkeypatch, local_client):
    monkeypatch.setenv("DCLAB_RESULTS", str(tmp_path / "results"))
    c, runs = tiny(tmp_path)
    perform, tries = fake_perform({runs[0].key: 1, runs[1].key: -1})
    monkeypatch.setattr(cluster, "perform", perform)
    store = Store(campaign_dir(c.name) / "store.sqlite")
    progress = Recorder()
    out = cluster.Coordinator(c, store, local_client, progress, tries=3, say=lambda _m: None).run(runs)
    assert (out.stored_ok, out.stored_failed) == (3, 1)
    assert tries[runs[0].key] == 2 and tries[runs[1].key] == 3 and tries[runs[2].key] == 1
    rows = {r["run_key"]: r for r in store.rows()}
    assert len(rows) == 4
    assert rows[runs[0].key]["ok"] and Path(rows[runs[0].key]["run_dir"], "result.json").exists()
    failed = rows[runs[1].key]
    assert not failed["ok"] and failed["run_dir"] == ""
    assert failed["error"].count("no testbed here") == 3 and "try 3:" in failed["error"]
    assert failed["stack"] == "tcp" and failed["host_config"] == "tcp"  # what the run would have been
    assert failed["environment"]["worker"] in {"0", "1"} and failed["machine"] == socket.gethostname()
    assert not list((tmp_path / "results" / ".work").glob("*/*")), "scratch directories are removed"


def test_coordinator_submits_the_longest_runs_first(tmp_path, monkeypatch):
    _, runs = tiny(tmp_path)
    mixed = [cp.PlannedRun(**{**r.__dict__, "estimate_s": e}) for r, e in zip(runs, (5, 50, 1, 20), strict=True)]
    assert [r.estimate_s for r in cluster.longest_first(mixed)] == [50, 20, 5, 1]


def test_a_worker_where_every_run_fails_is_retired(tmp_path, monkeypatch, local_client):
    monkeypatch.setenv("DCLAB_RESULTS", str(tmp_path / "results"))
    c, runs = tiny(tmp_path)
    perform, _ = fake_perform({r.key: -1 for r in runs})
    monkeypatch.setattr(cluster, "perform", perform)
    said: list[str] = []
    store = Store(campaign_dir(c.name) / "store.sqlite")
    coord = cluster.Coordinator(c, store, local_client, Recorder(), tries=3, say=said.append)
    coord.workers = cluster.testbed_workers(local_client)
    with pytest.raises(cluster.CampaignError, match="no worker left"):
        coord.local = True
        coord.run(runs)
    assert any("retired" in m and "dclab doctor" in m for m in said)


# --- real testbeds -----------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rows_of(results: Path, name: str) -> list[tuple]:
    db = results / name / "store.sqlite"
    if not db.exists():
        return []
    with sqlite3.connect(db) as con:
        if not con.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'runs'").fetchone():
            return []  # the store's file is created before its schema: polled in between, no runs yet
        return con.execute("SELECT run_key, ok, json_extract(environment, '$.worker'), run_dir FROM runs").fetchall()


def dclab_namespaces() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith("dclab")]


@pytest.mark.root
@pytest.mark.parametrize("reps", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_two_workers_finish_the_smoke_campaign_when_one_is_killed_mid_run(tmp_path, reps):
    """A scheduler, two `dclab worker`s and a coordinator, over TLS with a lab's certificates
    as `dclab cluster certs` makes them and says to start the scheduler: w1 is SIGKILLed
    (with its whole process group, as a machine dies) during a run; w2 does the rest and
    that run again. Every run of the campaign is stored once, ok, with its directory: four
    TCP runs of 10 MB (long enough to be killed in), and with DCLAB_SLOW=1 the whole smoke
    campaign."""
    results = tmp_path / "results"
    if reps == 1:
        name = "cluster"
        campaign = tmp_path / "cluster.toml"
        campaign.write_text(TINY.replace('size = "2MB"', 'size = "10MB"'))
    else:
        name, campaign = "smoke", "smoke"
    env = {**os.environ, "DCLAB_RESULTS": str(results)}
    port = free_port()
    addr = f"tls://127.0.0.1:{port}"
    lab = tmp_path / "lab"
    tls.make_lab_certs(lab)
    argv = tls.scheduler_command(lab / "scheduler", "127.0.0.1", port).split()[2:]  # after `dask scheduler`
    argv[argv.index("--dashboard-address") + 1] = f"127.0.0.1:{free_port()}"
    sched = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", *argv],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    worker_tls, coord_tls = ("--tls-dir", str(lab / "worker")), ("--tls-dir", str(lab / "coordinator"))
    try:
        with dclab_process("worker", "--scheduler", addr, *worker_tls, "--name", "w1", env=env) as w1, \
             dclab_process("worker", "--scheduler", addr, *worker_tls, "--name", "w2", env=env) as w2, \
             dclab_process("campaign", "run", str(campaign), "--scheduler", addr, *coord_tls, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as coord:
            scratch = results / ".work" / "w1"
            wait_for(lambda: any(scratch.glob("*/dcemu.ready")), 120, "a run on w1", coord)
            killed = next(scratch.glob("*/dcemu.ready")).parent.name
            os.killpg(w1.pid, signal.SIGKILL)
            w1.wait()
            out, _ = coord.communicate(timeout=600 * reps)
            assert coord.returncode == 0, out
            assert w2.poll() is None
    finally:
        os.killpg(sched.pid, signal.SIGTERM)
        sched.wait(timeout=30)
    rows = rows_of(results, name)
    keys = [r[0] for r in rows]
    n = len(cp.plan(cp.load(str(campaign))))
    assert len(keys) == n == len(set(keys)) == (4 if reps == 1 else 32)
    assert all(ok for _, ok, _, _ in rows), out
    by_key = {k: (worker, run_dir) for k, _, worker, run_dir in rows}
    assert by_key[killed][0] == "w2", "the killed run was done again by the worker left"
    assert all(Path(d, "result.json").exists() for _, d in by_key.values())
    assert sorted(p.name for p in (results / name / "runs").iterdir()) == sorted(keys), "no partial directories"
    assert f"{n} runs stored ok, 0 failed" in out
    assert not dclab_namespaces(), "what w1's killed run left was undone"


@pytest.mark.root
def test_a_killed_coordinator_resumes_without_repeating(tmp_path):
    """The coordinator and its local cluster of two workers SIGKILLed after the first run
    is stored: the next start runs only the rest, and the first run is not repeated."""
    results = tmp_path / "results"
    env = {**os.environ, "DCLAB_RESULTS": str(results)}
    f = tmp_path / "tiny.toml"
    f.write_text(TINY)
    with dclab_process("campaign", "run", str(f), "--local-workers", "2", env=env) as coord:
        wait_for(lambda: len(rows_of(results, "tiny")) >= 1, 120, "a stored run", coord)
        os.killpg(coord.pid, signal.SIGKILL)
        coord.wait()
    first = {k: d for k, _, _, d in rows_of(results, "tiny")}
    assert 1 <= len(first) < 4
    stamp = {k: Path(d, "result.json").stat().st_mtime_ns for k, d in first.items()}
    r = run_dclab("campaign", "run", str(f), "--local-workers", "1", env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert f"{len(first)} already stored, {4 - len(first)} to do" in r.stderr.replace("\n", " ")
    rows = rows_of(results, "tiny")
    assert len(rows) == 4 == len({k for k, *_ in rows}) and all(ok for _, ok, *_ in rows)
    assert all(Path(first[k], "result.json").stat().st_mtime_ns == t for k, t in stamp.items()), "nothing repeated"
    assert not dclab_namespaces()


@pytest.mark.root
def test_a_machine_that_fails_doctor_is_refused_as_a_worker(tmp_path):
    env = {**os.environ, "PATH": str(tmp_path)}  # no `ip`, `iptables` or `sysctl`: doctor fails
    t0 = time.monotonic()
    r = run_dclab("worker", "--scheduler", "tcp://127.0.0.1:9", "--insecure", env=env, timeout=120)
    assert r.returncode == 1
    assert "refused" in r.stderr and "ip (iproute2)" in r.stderr + r.stdout
    assert "one testbed for" not in r.stderr, "it never offered its testbed"
    assert time.monotonic() - t0 < 60


def test_cluster_options_are_checked_before_anything_starts(tmp_path):
    r = run_dclab("campaign", "run", "smoke", "--scheduler", "tcp://127.0.0.1:9", "--local-workers", "2", timeout=60)
    assert r.returncode == 2 and "exclude each other" in r.stderr
    r = run_dclab("campaign", "run", "smoke", "--scheduler", "127.0.0.1", timeout=60)
    assert r.returncode == 2 and "tls://HOST:8786" in r.stderr
    r = run_dclab("campaign", "run", "smoke", "--local-workers", "0", timeout=60)
    assert r.returncode == 2 and "--local-workers" in r.stderr
    r = run_dclab("worker", "--scheduler", "nowhere", timeout=60)
    assert r.returncode == 2 and "--scheduler" in r.stderr


def test_a_worker_at_another_commit_refuses_the_run(tmp_path, monkeypatch, local_client):
    """Runs of one campaign come from one version of dclab: a worker whose checkout is at
    another commit raises (and is retried elsewhere, then retired) instead of running."""
    monkeypatch.setenv("DCLAB_RESULTS", str(tmp_path / "results"))
    c, runs = tiny(tmp_path)
    perform, tries = fake_perform({})
    monkeypatch.setattr(cluster, "perform", perform)
    monkeypatch.setattr(cluster, "git_commit", lambda: "b" * 40)
    store = Store(campaign_dir(c.name) / "store.sqlite")
    coord = cluster.Coordinator(c, store, local_client, Recorder(), tries=1, say=lambda _m: None)
    coord.commit = "a" * 40
    out = coord.run(runs[:2])
    assert out.stored_failed == 2 and not tries, "nothing ran"
    assert all("commit bbbbbbbbbbbb" in r["error"] and "aaaaaaaaaaaa" in r["error"] for r in store.rows())
    coord.commit = "b" * 40
    fresh = Store(tmp_path / "other.sqlite")
    coord.store = fresh
    assert coord.run(runs[2:]).stored_ok == 2
