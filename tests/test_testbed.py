"""The testbed leaves nothing behind: namespaces, TUN devices, processes and sysctls are
back as they were after success, an error, a crashed client, SIGINT and SIGTERM."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import dclab_process, run_dclab, wait_for

from dclab.endpoints.base import Workload
from dclab.flowplan import Flow, single_bearer_plan
from dclab.paths import state_dir
from dclab.scenario import Scenario
from dclab.testbed import Testbed
from dclab.testbed.hostconfig import HOST_CONFIGS, read_sysctl

pytestmark = pytest.mark.root

WATCHED = ("net.core.rmem_default", "net.core.rmem_max", "net.ipv4.tcp_allowed_congestion_control")


def host_state() -> dict:
    return {k: read_sysctl(k) for k in WATCHED}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie of ours counts as gone.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def assert_clean(tag: str, pids: list[int], before: dict) -> None:
    assert tag not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"dcemu-{tag}" not in subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert [p for p in pids if alive(p)] == [], "processes left running"
    assert host_state() == before, "sysctls not restored"
    assert not (state_dir() / f"run-{tag}.json").exists(), "journal left behind"


def tcp_plan(size: int, stack: str = "tcp"):
    return single_bearer_plan(Scenario(), [Flow("dc", stack, "dc", Workload.single(size), "cubic" if stack == "tcp" else None)])


def test_success_leaves_nothing(tmp_path):
    before = host_state()
    plan = tcp_plan(1_000_000)
    with Testbed(Scenario(), plan, HOST_CONFIGS["tcp"], tmp_path) as tb:
        assert read_sysctl("net.core.rmem_max") == "33554432"
        assert read_sysctl("net.ipv4.tcp_rmem", tb.ns.client) == "4096 131072 6291456"
        assert "cubic" in read_sysctl("net.ipv4.tcp_allowed_congestion_control")
        tb.start_servers()
        r = tb.run_clients(60)["dc"]
        assert r.ok and r.bytes == 1_000_000, r.error
        tag, pids = tb.ns.tag, [p for p, _ in tb.journal.data["pids"]]
        assert len(pids) == 3  # dcemu, the server and the client's socket-drop sampler (testbed/udp_drops.py)
    assert_clean(tag, pids, before)
    stats = (tmp_path / "dcemu-stats.jsonl").read_text().splitlines()
    assert '"type":"summary"' in stats[-1], "dcemu wrote its summary"


def test_mss_is_clamped_to_1280(tmp_path):
    with Testbed(Scenario(), tcp_plan(1), HOST_CONFIGS["tcp"], tmp_path) as tb:
        tb.start_servers()
        port = tb.plan.flows[0].port
        big = subprocess.Popen(["ip", "netns", "exec", tb.ns.client, "curl", "-sk", "--http2", "-o", "/dev/null",
                                f"https://198.18.0.1:{port}/20000000"])
        try:
            mss = ""
            for _ in range(100):
                mss = subprocess.run(["ip", "netns", "exec", tb.ns.server, "ss", "-tin", "state", "established"],
                                     capture_output=True, text=True).stdout
                if "mss:" in mss:
                    break
                time.sleep(0.05)
            # ss shows the sending MSS: 1280 less TCP options (12 bytes of timestamps).
            m = re.search(r"\bmss:(\d+)", mss)
            assert m and 1260 <= int(m.group(1)) <= 1280, mss
        finally:
            big.kill()
            big.wait()


def test_error_inside_the_run_leaves_nothing(tmp_path):
    before = host_state()
    with pytest.raises(RuntimeError, match="boom"):
        with Testbed(Scenario(), tcp_plan(1, "aioquic"), HOST_CONFIGS["quic-large"], tmp_path) as tb:
            assert read_sysctl("net.core.rmem_default") == "33554432"
            tag, pids = tb.ns.tag, [p for p, _ in tb.journal.data["pids"]]
            raise RuntimeError("boom")
    assert_clean(tag, pids, before)


def test_crashed_client_leaves_nothing(tmp_path):
    """The client is killed mid-transfer (its time limit runs out): the download reports
    failure, and the testbed still cleans up."""
    before = host_state()
    with Testbed(Scenario(), tcp_plan(500_000_000), HOST_CONFIGS["tcp"], tmp_path) as tb:
        tb.start_servers()
        r = tb.run_clients(timeout_s=1.5)["dc"]
        assert not r.ok and r.error
        tag, pids = tb.ns.tag, [p for p, _ in tb.journal.data["pids"]]
    assert_clean(tag, pids, before)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_cli_run_cleans_up_and_keeps_its_record(tmp_path, sig):
    before = host_state()
    out = tmp_path / "run"
    with dclab_process("run", "throughput", "--stack", "tcp", "--size", "500MB", "--out", str(out),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as p:
        ready = out / "rep-01" / "dcemu.ready"
        wait_for(ready.exists, 30, "run start", p)
        pid_dcemu = int(ready.read_text().split()[0])
        journals = list(state_dir().glob("run-*.json"))
        assert journals
        time.sleep(1.0)
        p.send_signal(sig)
        _, stderr = p.communicate(timeout=30)
    assert p.returncode == 130, stderr
    assert "interrupted" in stderr
    assert not alive(pid_dcemu)
    assert host_state() == before
    assert not [j for j in journals if j.exists()]
    assert subprocess.run(["pgrep", "-f", str(out)], capture_output=True).returncode == 1
    assert (out / "options.json").exists() and (out / "rep-01" / "environment.json").exists()
    assert not list(out.rglob("*.pem")), "the run's private key went with it"
    assert '"type":"summary"' in (out / "rep-01" / "dcemu-stats.jsonl").read_text().splitlines()[-1]


def test_clean_undoes_a_killed_run(tmp_path):
    """SIGKILL gives the run no chance to clean up; `dclab clean` must, from its journal."""
    before = host_state()
    out = tmp_path / "run"
    with dclab_process("run", "throughput", "--stack", "aioquic", "--udp-buffer", "large", "--size", "500MB",
                       "--out", str(out)) as p:
        ready = out / "rep-01" / "dcemu.ready"
        wait_for(lambda: ready.exists() and (out / "rep-01" / "environment.json").exists(), 30, "run start", p)
        pid_dcemu = int(ready.read_text().split()[0])
        tag = (out / "rep-01" / "scenario.toml").read_text().split("server_netns = \"dclab-", 1)[1][:6]
        p.kill()  # SIGKILL to dclab alone: it can clean up nothing
        p.wait()
        # What the run started dies with it (parent-death signal) ...
        wait_for(lambda: not alive(pid_dcemu), 10, "dcemu to die with dclab")
        # ... but its host settings, namespaces and key are left for `dclab clean` (or the next run).
        assert read_sysctl("net.core.rmem_default") == "33554432", "the killed run left its state"
        assert list(out.rglob("*.pem"))
        r = run_dclab("clean", timeout=60)
    assert r.returncode == 0, r.stderr
    assert "restored net.core.rmem_default" in r.stdout and "removed namespace" in r.stdout
    assert "removed private keys" in r.stdout and not list(out.rglob("*.pem"))
    assert host_state() == before
    assert tag not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert subprocess.run(["pgrep", "-f", f"h3_server.*{out}"], capture_output=True).returncode == 1


def test_a_run_with_sigint_ignored_at_start_still_stops_on_sigint(tmp_path):
    """As when the suite or dclab is started in the background (SIGINT inherited ignored):
    SIGINT still interrupts a run, which cleans up."""
    before = host_state()
    out = tmp_path / "run"

    def ignore_sigint() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    p = subprocess.Popen([sys.executable, "-m", "dclab.cli", "run", "throughput", "--stack", "tcp", "--size", "500MB",
                          "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=ignore_sigint, start_new_session=True)
    try:
        wait_for((out / "rep-01" / "dcemu.ready").exists, 30, "run start", p)
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        _, stderr = p.communicate(timeout=30)
        assert p.returncode == 130, stderr
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            run_dclab("clean", timeout=60)
    assert host_state() == before
