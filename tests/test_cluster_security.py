"""A campaign's Dask cluster against whoever can reach it: a worker and a coordinator refuse
a plain tcp:// scheduler unless told --insecure (Dask runs the pickled code the scheduler
sends, on a worker as root); the lab's certificates (`dclab cluster certs`) give mutual
TLS; a local cluster listens on 127.0.0.1 with TLS of its own; and the coordinator stores
a worker's result only under the run it planned, unpacking its archive into that run's
directory and nowhere else.

No testbed here: the commands' testbed parts are replaced, and the clusters run a trivial
function or a stand-in for a run (a few seconds in all)."""

from __future__ import annotations

import errno
import io
import os
import socket
import stat
import subprocess
import sys
import tarfile
import threading
import time
from dataclasses import replace
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from cryptography import x509
from test_cluster import Recorder, fake_perform, record, tiny

from dclab.campaign import cluster, tls
from dclab.campaign import plan as cp
from dclab.campaign.store import Store, campaign_dir
from dclab.cli import campaign as cli_campaign
from dclab.cli import worker as cli_worker
from dclab.cli.cluster import cluster as cluster_cmd

# --- the lab's certificates --------------------------------------------------------------


def test_lab_certs_are_made_once_keys_0600_from_the_start_and_no_ca_key(tmp_path, monkeypatch):
    def no_chmod(*_a, **_k):
        raise AssertionError("a key is created 0600, never written and then narrowed")

    monkeypatch.setattr(os, "chmod", no_chmod)
    monkeypatch.setattr(Path, "chmod", no_chmod)
    lab = tmp_path / "lab"
    old = os.umask(0)  # the modes come from os.open's, not from the umask
    try:
        written = tls.make_lab_certs(lab)
    finally:
        os.umask(old)
    assert sorted(written) == sorted(tls.lab_files(lab)) == sorted(p for p in lab.rglob("*") if p.is_file())
    ca = x509.load_pem_x509_certificate((lab / "ca.pem").read_bytes())
    for role in tls.ROLES:
        d = lab / role
        assert stat.S_IMODE(d.stat().st_mode) == 0o700
        assert stat.S_IMODE((d / "key.pem").stat().st_mode) == 0o600
        assert stat.S_IMODE((d / "cert.pem").stat().st_mode) == 0o644
        assert (d / "ca.pem").read_bytes() == (lab / "ca.pem").read_bytes()
        x509.load_pem_x509_certificate((d / "cert.pem").read_bytes()).verify_directly_issued_by(ca)
        assert tls.role_files(d) == (d / "ca.pem", d / "cert.pem", d / "key.pem")
    assert not any(b"PRIVATE KEY" in p.read_bytes() for p in lab.rglob("*.pem") if p.name != "key.pem"), \
        "the CA's key is not kept"
    before = {p: p.read_bytes() for p in written}
    with pytest.raises(tls.TLSError, match="exists: dclab never overwrites"):
        tls.make_lab_certs(lab)
    assert {p: p.read_bytes() for p in written} == before
    other = tmp_path / "other"
    (other / "worker").mkdir(parents=True)
    (other / "worker" / "key.pem").write_text("mine")
    with pytest.raises(tls.TLSError, match="key.pem exists"):
        tls.make_lab_certs(other)
    assert sorted(p.name for p in other.rglob("*")) == ["key.pem", "worker"], "nothing written when one file exists"


def test_lab_certs_go_into_an_empty_directory_and_a_full_disk_keeps_nothing(tmp_path, monkeypatch):
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    with pytest.raises(tls.TLSError, match="busy is not empty"):
        tls.make_lab_certs(busy)
    assert [p.name for p in busy.iterdir()] == ["notes.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    tls.make_lab_certs(empty)  # an empty directory is taken
    # The fifth file's write finds the disk full: nothing of the set is left, not even a
    # 0-byte file or the directories it made.
    calls = []
    real_fsync = os.fsync

    def full(fd):
        calls.append(fd)
        if len(calls) == 5:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", full)
    lab = tmp_path / "lab"
    with pytest.raises(tls.TLSError, match=r"No space left on device \(nothing was kept\)"):
        tls.make_lab_certs(lab)
    assert not lab.exists()


def test_a_role_directory_is_checked_before_it_is_used(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    tls.make_lab_certs(a)
    tls.make_lab_certs(b)
    (a / "worker" / "key.pem").chmod(0o644)
    with pytest.raises(tls.TLSError, match="readable by others.*chmod 600"):
        tls.role_files(a / "worker")
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    for f, src in (("ca.pem", a / "coordinator"), ("cert.pem", b / "coordinator"), ("key.pem", b / "coordinator")):
        fd = os.open(mixed / f, os.O_WRONLY | os.O_CREAT, 0o600)
        os.write(fd, (src / f).read_bytes())
        os.close(fd)
    with pytest.raises(tls.TLSError, match="not signed by"):
        tls.role_files(mixed)
    with pytest.raises(tls.TLSError, match="cannot read"):
        tls.role_files(a)  # the set's top, not a role's directory


def test_the_certs_command_says_how_to_start_the_cluster(tmp_path):
    lab = tmp_path / "lab"
    r = CliRunner().invoke(cluster_cmd, ["certs", str(lab)])
    assert r.exit_code == 0, r.output
    assert f"--tls-ca-file {lab}/scheduler/ca.pem --tls-cert {lab}/scheduler/cert.pem" in r.output
    assert "dask scheduler --protocol tls" in r.output and "--dashboard-address 127.0.0.1:8787" in r.output
    assert f"dclab worker --scheduler tls://HOST:8786 --tls-dir {lab}/worker" in r.output
    assert f"--scheduler tls://HOST:8786 --tls-dir {lab}/coordinator" in r.output
    r = CliRunner().invoke(cluster_cmd, ["certs", str(lab)])
    assert r.exit_code == 1 and "never overwrites" in r.output


# --- who the worker and the coordinator talk to -------------------------------------------


@pytest.fixture
def fake_worker_host(monkeypatch):
    """`dclab worker` without doctor, root or a testbed: serve() records its arguments."""
    served: list[tuple] = []
    monkeypatch.setattr(cli_worker, "checks", lambda: [])
    monkeypatch.setattr(cli_worker, "root_or_exit", lambda: None)
    monkeypatch.setattr(cli_campaign, "recover_host", lambda _say: None)
    monkeypatch.setattr(cluster, "serve", lambda *a, **k: served.append((a, k)))
    return served


def test_a_worker_refuses_a_plain_tcp_scheduler_unless_insecure(tmp_path, fake_worker_host):
    run = CliRunner().invoke
    r = run(cli_worker.worker, ["--scheduler", "tcp://127.0.0.1:1"])
    assert r.exit_code == 2, r.output
    assert "plain TCP" in r.output and "run any code on this machine as root" in r.output and "--insecure" in r.output
    assert not fake_worker_host, "it never offered its testbed"
    r = run(cli_worker.worker, ["--scheduler", "tls://127.0.0.1:1"])
    assert r.exit_code == 2 and "needs --tls-dir" in r.output and not fake_worker_host
    r = run(cli_worker.worker, ["--scheduler", "tcp://127.0.0.1:1", "--insecure", "--name", "w"])
    assert r.exit_code == 0, r.output
    assert "warning" in r.output and "anyone who can reach it" in r.output and "as root" in r.output
    assert fake_worker_host.pop()[0] == ("tcp://127.0.0.1:1", "w", 300, None)
    lab = tmp_path / "lab"
    tls.make_lab_certs(lab)
    r = run(cli_worker.worker, ["--scheduler", "tls://127.0.0.1:1", "--tls-dir", str(lab / "worker")])
    assert r.exit_code == 0, r.output
    sec = fake_worker_host.pop()[0][3]
    assert sec.require_encryption and sec.tls_worker_cert == str(lab / "worker" / "cert.pem")
    assert sec.tls_ca_file == str(lab / "worker" / "ca.pem")
    r = run(cli_worker.worker, ["--scheduler", "tcp://127.0.0.1:1", "--tls-dir", str(lab / "worker")])
    assert r.exit_code == 2 and "tls://127.0.0.1:1" in r.output and not fake_worker_host


def test_the_coordinator_refuses_a_plain_tcp_scheduler_unless_insecure(tmp_path, monkeypatch):
    def went_on(*_a, **_k):
        raise AssertionError("went on to load the campaign")

    monkeypatch.setattr(cli_campaign, "_load", went_on)
    monkeypatch.setattr(cli_campaign, "root_or_exit", lambda: None)
    r = CliRunner().invoke(cli_campaign.campaign, ["run", "smoke", "--scheduler", "tcp://127.0.0.1:1"])
    assert r.exit_code == 2, r.output
    assert "plain TCP" in r.output and "as root on its workers" in r.output and "--insecure" in r.output

    got: list[cli_campaign.Cluster] = []

    @click.command()
    @cli_campaign.cluster_options
    def cmd(scheduler, local_workers, tries):
        got.append(cli_campaign.cluster_from(scheduler, local_workers, tries))

    r = CliRunner().invoke(cmd, ["--scheduler", "tcp://127.0.0.1:1", "--insecure"])
    assert r.exit_code == 0, r.output
    assert "warning" in r.output and "anyone who can reach it can run any code as root" in r.output
    assert got.pop().security is None
    lab = tmp_path / "lab"
    tls.make_lab_certs(lab)
    r = CliRunner().invoke(cmd, ["--scheduler", "tls://h:8786", "--tls-dir", str(lab / "coordinator")])
    assert r.exit_code == 0, r.output
    sec = got.pop().security
    assert sec.require_encryption and sec.tls_client_cert == str(lab / "coordinator" / "cert.pem")
    for args, message in ((["--local-workers", "1", "--insecure"], "are for --scheduler"),
                          (["--scheduler", "tls://h:1", "--tls-dir", str(lab / "coordinator"), "--insecure"],
                           "exclude each other"),
                          (["--scheduler", "h:1"], "tls://HOST:8786")):
        r = CliRunner().invoke(cmd, args)
        assert r.exit_code == 2 and message in r.output, r.output
    assert not got


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_tls_cluster_admits_the_labs_certificates_only(tmp_path, monkeypatch):
    """`dask scheduler` as `dclab cluster certs` says, a worker through serve() with the
    worker's directory, the coordinator's client with its own: a run goes through; a plain
    client and one of another lab are turned away."""
    from distributed import Client

    monkeypatch.setenv("DCLAB_RESULTS", str(tmp_path / "results"))
    lab, other = tmp_path / "lab", tmp_path / "other"
    tls.make_lab_certs(lab)
    tls.make_lab_certs(other)
    port = free_port()
    argv = tls.scheduler_command(lab / "scheduler", "127.0.0.1", port).split()
    assert argv[:2] == ["dask", "scheduler"]
    argv = [*argv[2:-1], argv[-1]]
    argv[argv.index("--dashboard-address") + 1] = f"127.0.0.1:{free_port()}"
    sched = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", *argv],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    address = f"tls://127.0.0.1:{port}"
    worker = threading.Thread(target=cluster.serve, args=(address, "w/../1", 30, tls.security("worker", lab / "worker")),
                              daemon=True)
    try:
        coordinator = tls.security("client", lab / "coordinator")
        t0 = time.monotonic()
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert time.monotonic() - t0 < 60 and sched.poll() is None, "the scheduler did not start"
                time.sleep(0.1)
        worker.start()
        with cluster.connect(address, None, coordinator) as client:
            client.wait_for_workers(1, timeout=60)
            assert list(cluster.testbed_workers(client).values()) == ["w_.._1"]
            assert all(a.startswith("tls://") for a in cluster.testbed_workers(client))
            assert client.submit(sum, [40, 2], resources=cluster.TESTBED).result(timeout=60) == 42
            for sec in (None, tls.security("client", other / "coordinator")):
                with pytest.raises(OSError):
                    Client(f"tcp://127.0.0.1:{port}" if sec is None else address, security=sec, timeout="3s")
            client.shutdown()  # the scheduler and its workers: serve() returns
        worker.join(timeout=30)
        assert not worker.is_alive()
    finally:
        sched.terminate()
        sched.wait(timeout=30)


def test_a_local_cluster_listens_on_localhost_with_tls(tmp_path):
    from distributed import Client

    with cluster.connect(None, 1) as client:
        address = client.scheduler.address
        assert address.startswith("tls://127.0.0.1:"), address
        workers = client.scheduler_info()["workers"]
        assert workers and all(a.startswith("tls://127.0.0.1:") for a in workers)
        with pytest.raises(OSError):  # a local user without the throwaway certificate
            Client(address.replace("tls://", "tcp://"), timeout="3s")
        assert client.submit(sum, [1, 2], resources=cluster.TESTBED).result(timeout=60) == 3


# --- what a worker sends back --------------------------------------------------------------


def tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def hostile_archive() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        ok = tarfile.TarInfo("result.json")
        ok.size = 2
        tar.addfile(ok, io.BytesIO(b"{}"))
        evil = tarfile.TarInfo("../evil")
        evil.size = 4
        tar.addfile(evil, io.BytesIO(b"evil"))
        link = tarfile.TarInfo("link")
        link.type, link.linkname = tarfile.SYMTYPE, "../../.."
        tar.addfile(link)
        through = tarfile.TarInfo("link/escaped")
        through.size = 1
        tar.addfile(through, io.BytesIO(b"x"))
    return buf.getvalue()


def one_member(info: tarfile.TarInfo, data: bytes = b"") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data) if data else None)
    return buf.getvalue()


def test_a_hostile_result_writes_nothing_outside_its_planned_run(tmp_path, monkeypatch):
    monkeypatch.setenv("DCLAB_RESULTS", str(tmp_path / "results"))
    c, runs = tiny(tmp_path)
    run = runs[0]
    store = Store(campaign_dir(c.name) / "store.sqlite")
    src = tmp_path / "scratch"
    src.mkdir()
    (src / "result.json").write_text("{}")
    before = tree(tmp_path)
    runs_dir = campaign_dir(c.name) / "runs"
    final = runs_dir / run.key

    hostile_key = cluster.TaskResult(replace(record(run, src), run_key="../../x"), cluster.pack(src), "tcp://a")
    with pytest.raises(cluster.ResultRefused, match="run_key is '../../x'"):
        cluster.store_result(c, store, run, hostile_key)
    other_run = cluster.TaskResult(record(runs[1], src), cluster.pack(src), "tcp://a")
    with pytest.raises(cluster.ResultRefused, match="run_key"):
        cluster.store_result(c, store, run, other_run)
    with pytest.raises(cluster.ResultRefused, match="not a run's result"):
        cluster.store_result(c, store, run, "a string")  # type: ignore[arg-type]
    members = [hostile_archive()]
    for kind, target in ((tarfile.SYMTYPE, "result.json"), (tarfile.LNKTYPE, "/etc/passwd"),
                         (tarfile.CHRTYPE, ""), (tarfile.FIFOTYPE, "")):
        info = tarfile.TarInfo("inside")
        info.type, info.linkname = kind, target
        members.append(one_member(info))
    absolute = tarfile.TarInfo(str(tmp_path / "absolute"))
    members.append(one_member(absolute, b"abs"))
    for archive in members:
        res = cluster.TaskResult(record(run, src), archive, "tcp://a")
        with pytest.raises(cluster.ResultRefused, match="archive was refused"):
            cluster.store_result(c, store, run, res)
    after = tree(tmp_path)
    assert after - before <= {"results/tiny/store.sqlite", "results/tiny/runs"}, after - before
    assert not list(runs_dir.iterdir()), "no run directory, no .incoming left"
    assert not store.rows()
    assert not (tmp_path / "absolute").exists() and not (tmp_path / "results" / "evil").exists()

    assert cluster.store_result(c, store, run, cluster.TaskResult(record(run, src), cluster.pack(src), "tcp://a"))
    assert (final / "result.json").read_text() == "{}" and store.rows()[0]["run_dir"] == str(final)


def test_the_archive_limit(tmp_path):
    src = tmp_path / "run"
    src.mkdir()
    (src / "big").write_bytes(b"0" * 10_000)
    with pytest.raises(cluster.ArchiveRefused, match="more than 5000 bytes"):
        cluster.unpack(cluster.pack(src), tmp_path / "out", limit=5000)


def test_pack_sends_only_files_and_directories(tmp_path):
    src = tmp_path / "run"
    (src / "d").mkdir(parents=True)
    (src / "d" / "f").write_text("f")
    os.mkfifo(src / "fifo")
    (src / "link").symlink_to("/etc/passwd")
    out = tmp_path / "out"
    cluster.unpack(cluster.pack(src), out)
    assert tree(out) == {"d", "d/f"}


def test_the_coordinator_stores_a_hostile_result_as_failed(tmp_path, monkeypatch):
    """Workers whose results name another run, or carry an archive out of the run's
    directory: each try is refused (and counted against the worker), the run stored failed
    with why, nothing written outside the planned directory."""
    from distributed import Client, LocalCluster

    monkeypatch.setenv("DCLAB_RESULTS", str(tmp_path / "results"))
    c, runs = tiny(tmp_path)
    perform, _ = fake_perform({})

    def hostile_perform(campaign, run, run_dir, on_wait=None, session=None):
        rec, rr = perform(campaign, run, run_dir)
        if run.key == runs[0].key:
            rr.run_key = "../../x"
        return rec, rr

    real_pack = cluster.pack
    monkeypatch.setattr(cluster, "perform", hostile_perform)
    monkeypatch.setattr(cluster, "pack", lambda d: hostile_archive() if d.name == runs[1].key else real_pack(d))
    monkeypatch.setattr(cluster, "BAD_WORKER_ERRORS", 100)  # the one worker stays
    store = Store(campaign_dir(c.name) / "store.sqlite")
    before = tree(tmp_path)
    counted: list[cluster.RunError] = []
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, resources=cluster.TESTBED,
                      dashboard_address=None) as lc, Client(lc) as client:
        coord = cluster.Coordinator(c, store, client, Recorder(), tries=2, say=lambda _m: None)
        coord.workers = cluster.testbed_workers(client)
        count = coord._count_error
        monkeypatch.setattr(coord, "_count_error", lambda e: (counted.append(e), count(e)))
        out = coord.run(runs[:3])
        # refused results count against the worker that sent them, by the scheduler's word
        assert len(counted) == 4 and {e.address for e in counted} == set(coord.workers)
    assert (out.stored_ok, out.stored_failed) == (1, 2)
    rows = {r["run_key"]: r for r in store.rows()}
    assert set(rows) == {r.key for r in runs[:3]}
    assert not rows[runs[0].key]["ok"] and "run_key is '../../x'" in rows[runs[0].key]["error"]
    assert rows[runs[0].key]["error"].count("its result was refused") == 2
    assert not rows[runs[1].key]["ok"] and "archive was refused" in rows[runs[1].key]["error"]
    runs_dir = campaign_dir(c.name) / "runs"
    assert sorted(p.name for p in runs_dir.iterdir()) == [runs[2].key]
    new = {p for p in tree(tmp_path) - before if not p.startswith("results/.work")}
    assert new == {"results/tiny/runs", f"results/tiny/runs/{runs[2].key}",
                   f"results/tiny/runs/{runs[2].key}/result.json"}, new


def test_a_run_key_or_a_worker_name_never_makes_a_path(tmp_path, monkeypatch):
    from distributed import Client, LocalCluster

    monkeypatch.setenv("DCLAB_RESULTS", str(tmp_path / "results"))
    work = tmp_path / "results" / ".work"
    for name in ("..", ".", "a/../../b", "/etc", ""):
        assert cluster.scratch_dir(name).parent == work, name
    c, runs = tiny(tmp_path)
    perform, tries = fake_perform({})
    monkeypatch.setattr(cluster, "perform", perform)
    victim = tmp_path / "results" / "victim"
    victim.mkdir(parents=True)
    (victim / "keep").write_text("mine")
    bad = cp.PlannedRun(**{**runs[0].__dict__, "key": "../../victim"})
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, resources=cluster.TESTBED,
                      dashboard_address=None) as lc, Client(lc) as client:
        f = client.submit(cluster.run_task, c.name, bad, "", resources=cluster.TESTBED, pure=False)
        with pytest.raises(cluster.RunError, match="run key"):
            f.result(timeout=60)
    assert (victim / "keep").read_text() == "mine" and not tries


def test_strings_from_a_worker_are_printable(tmp_path):
    s = cluster.printable("ok \x1b]52;c;ZXZpbA==\x07 \x1b[2J\x9b done\n" + "x" * 10_000)
    assert "\x1b" not in s and "\x07" not in s and "\x9b" not in s and "\n" in s
    assert len(s) < 4100 and s.startswith("ok ?]52")
    c, runs = tiny(tmp_path)
    e = cluster.RunError("\x1b[31mw", "tcp://a", "\x1b]0;title\x07host", "boom")
    rec = cluster.failed_record(c, runs[0], ["x"], e)
    assert "\x1b" not in rec.machine and "\x1b" not in rec.environment["worker"]
