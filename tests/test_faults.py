"""Fault injection: a killed dclab, a dead dcemu or server, a namespace deleted under a run,
`dclab clean` during a live run. Each must leave the host as it was, say what happened,
and never let a new run start beside the remains of an old one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from conftest import dclab_process, run_dclab, wait_for

from dclab.endpoints.base import Workload
from dclab.flowplan import Flow, single_bearer_plan
from dclab.scenario import Scenario
from dclab.testbed import PartDied, Testbed
from dclab.testbed.hostconfig import HOST_CONFIGS, alive, read_sysctl

pytestmark = pytest.mark.root

WATCHED = ("net.core.rmem_default", "net.core.rmem_max", "net.ipv4.tcp_allowed_congestion_control")


def host_state() -> dict:
    return {k: read_sysctl(k) for k in WATCHED}


def leftovers() -> str:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


def run_namespaces(out: Path) -> list[str]:
    """The namespaces a run's first repetition used (from dcemu's scenario file)."""
    text = (out / "rep-01" / "scenario.toml").read_text()
    return [line.split('"')[1] for line in text.splitlines() if line.startswith(("server_netns", "client_netns"))]


def dcemu_pid(rep_dir: Path) -> int:
    return int((rep_dir / "dcemu.ready").read_text().split()[0])


def test_killed_dclab_then_a_queued_run_starts_on_a_clean_host(tmp_path):
    """dclab SIGKILLed mid-run while a second run waits for the host: the first run's
    processes die with it, the second undoes its journal before starting, records the
    host's own settings, and the host's originals survive both."""
    before = host_state()
    a_out, b_out = tmp_path / "a", tmp_path / "b"
    b_err = tmp_path / "b.err"
    with dclab_process("run", "throughput", "--stack", "aioquic", "--udp-buffer", "large", "--size", "500MB",
                       "--out", str(a_out)) as a:
        wait_for(lambda: (a_out / "rep-01" / "environment.json").exists(), 30, "run A", a)
        a_dcemu = dcemu_pid(a_out / "rep-01")
        assert read_sysctl("net.core.rmem_default") == "33554432"
        with open(b_err, "w") as err, dclab_process("run", "throughput", "--stack", "tcp", "--size", "2MB", "--json",
                                                  "--out", str(b_out), stderr=err, stdout=subprocess.PIPE,
                                                  text=True) as b:
            wait_for(lambda: "waiting for another dclab run" in b_err.read_text(), 30, "run B to queue", b)
            assert not (b_out / "rep-01" / "dcemu.ready").exists(), "B started beside A"
            a.kill()  # SIGKILL: A cleans up nothing itself
            a.wait()
            t0 = time.monotonic()
            wait_for(lambda: not alive(a_dcemu, None), 10, "A's dcemu to die with A")
            print(f"A's dcemu gone {time.monotonic() - t0:.2f} s after A was killed")
            out, _ = b.communicate(timeout=120)
        assert b.returncode == 0, b_err.read_text()
    assert json.loads(out.strip().splitlines()[-1])["failed"] == 0
    env = json.loads((b_out / "rep-01" / "environment.json").read_text())
    # B saw the host's own value, not A's 32 MiB: A's journal was undone before B started.
    assert env["host_settings"]["net.core.rmem_default"] == before["net.core.rmem_default"]
    assert any("removed namespace" in x for x in env.get("recovered_before_run", [])), env.get("recovered_before_run")
    assert host_state() == before
    assert not set(run_namespaces(a_out)) & set(leftovers().split()), "A's namespaces are gone"
    assert not list(a_out.rglob("key.pem")), "A's private key was removed"


def tcp_bed(tmp_path: Path, size: int = 400_000_000) -> Testbed:
    s = Scenario()
    plan = single_bearer_plan(s, [Flow("dc", "tcp", "dc", Workload.single(size), "cubic")])
    return Testbed(s, plan, HOST_CONFIGS["tcp"], tmp_path)


def kill_later(pid_of, delay_s: float = 1.0) -> dict:
    """Kills the process ``pid_of()`` names after ``delay_s``; returns when it did."""
    when: dict = {}

    def go() -> None:
        time.sleep(delay_s)
        pid = pid_of()
        when["t"] = time.monotonic()
        os.kill(pid, signal.SIGKILL)

    threading.Thread(target=go, daemon=True).start()
    return when


@pytest.mark.parametrize("part", ["dcemu", "server"])
def test_a_dead_part_ends_the_repetition_at_once_naming_it(tmp_path, part):
    before = host_state()
    with pytest.raises(PartDied) as e:
        with tcp_bed(tmp_path) as tb:
            tag = tb.ns.tag
            tb.start_servers()
            when = kill_later(lambda: tb.emulator.proc.pid if part == "dcemu" else tb.servers[0].pid)
            try:
                tb.run_clients(timeout_s=120)
            finally:
                noticed = time.monotonic() - when["t"]
    print(f"{part} killed: noticed after {noticed:.2f} s")
    assert noticed < 5, "noticed long before any idle timeout"  # the watch checks every 0.1 s
    msg = str(e.value)
    assert ("dcemu" if part == "dcemu" else "tcp server of flow dc") in msg and "killed by signal 9" in msg
    assert host_state() == before and tag not in leftovers()


def test_a_namespace_deleted_under_a_run(tmp_path):
    before = host_state()
    with pytest.raises(PartDied) as e:
        with tcp_bed(tmp_path) as tb:
            tb.start_servers()
            ns, tag = tb.ns.client, tb.ns.tag

            def delete() -> None:
                time.sleep(1.0)
                subprocess.run(["ip", "netns", "del", ns], check=True)

            threading.Thread(target=delete, daemon=True).start()
            t0 = time.monotonic()
            try:
                tb.run_clients(timeout_s=120)
            finally:
                print(f"namespace deleted: run ended {time.monotonic() - t0 - 1.0:.2f} s later")
    assert f"network namespace {ns} was deleted under the run" in str(e.value)
    assert host_state() == before and tag not in leftovers()


def test_clean_never_touches_a_live_run(tmp_path):
    before = host_state()
    out = tmp_path / "run"
    with dclab_process("run", "throughput", "--stack", "tcp", "--size", "500MB", "--out", str(out),
                       stderr=subprocess.PIPE, text=True) as p:
        wait_for(lambda: (out / "rep-01" / "environment.json").exists(), 90, "run start", p)
        pid = dcemu_pid(out / "rep-01")
        r = run_dclab("clean", "--no-wait", timeout=60)
        assert r.returncode == 1 and "holds the host" in r.stderr and "nothing cleaned" in r.stderr
        assert alive(pid, None) and p.poll() is None, "the live run was left alone"
        assert read_sysctl("net.ipv4.tcp_rmem", json.loads((out / "rep-01" / "environment.json").read_text())
                           and _client_ns(out)) == "4096 131072 6291456"
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
        assert p.returncode == 130, err
    assert host_state() == before


def _client_ns(out: Path) -> str:
    scenario = (out / "rep-01" / "scenario.toml").read_text()
    return next(line.split('"')[1] for line in scenario.splitlines() if line.startswith("client_netns"))


def test_on_error_continue_records_the_dead_part_and_goes_on(tmp_path):
    before = host_state()
    out = tmp_path / "run"
    with dclab_process("run", "throughput", "--stack", "tcp", "--size", "300MB", "--reps", "2", "--on-error", "continue",
                       "--out", str(out), stderr=subprocess.PIPE, text=True) as p:
        wait_for(lambda: (out / "rep-01" / "environment.json").exists(), 30, "rep 1", p)
        os.kill(dcemu_pid(out / "rep-01"), signal.SIGKILL)
        wait_for(lambda: (out / "rep-02" / "dcemu.ready").exists(), 30, "rep 2", p)
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=60)
    rec = json.loads((out / "rep-01" / "result.json").read_text())
    assert rec["ok"] is False and "PartDied" in rec["error"] and "dcemu was killed by signal 9" in rec["error"]
    assert host_state() == before


def test_on_error_stop_ends_the_run_naming_the_part(tmp_path):
    out = tmp_path / "run"
    with dclab_process("run", "throughput", "--stack", "tcp", "--size", "300MB", "--reps", "2", "--out", str(out),
                       stderr=subprocess.PIPE, text=True) as p:
        wait_for(lambda: (out / "rep-01" / "environment.json").exists(), 30, "rep 1", p)
        os.kill(dcemu_pid(out / "rep-01"), signal.SIGKILL)
        _, err = p.communicate(timeout=60)
    assert p.returncode == 1 and "dcemu was killed by signal 9" in err
    assert not (out / "rep-02").exists()


def test_clean_and_new_runs_leave_namespaces_of_live_processes_alone(veth_pair, tmp_path):
    """Namespaces a live process made (a test fixture here, or `make bench`) are not a dead
    run's remains: neither `dclab clean` nor a run's own recovery removes them."""
    r = run_dclab("clean", timeout=60)
    assert r.returncode == 0, r.stderr
    r = run_dclab("run", "throughput", "--stack", "tcp", "--size", "1MB", "--out", str(tmp_path / "run"), timeout=120)
    assert r.returncode == 0, r.stderr
    names = leftovers()
    assert veth_pair.server in names and veth_pair.client in names
