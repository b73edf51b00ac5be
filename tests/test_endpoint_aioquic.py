"""The aioquic endpoint: our HTTP/3 server and client over a veth pair between namespaces."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dclab.endpoints.aioquic_stack import AioquicStack
from dclab.endpoints.base import DownloadSpec, ServerSpec

from conftest import SERVER, start_in

PORT = 4433


def stop(proc: subprocess.Popen, grace_s: float = 5.0) -> int | None:
    """SIGTERM, then SIGKILL; returns the exit status (None if it had to be killed)."""
    if proc.poll() is not None:
        return proc.returncode
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)
        return None


def wait_ready(proc: subprocess.Popen, log: Path, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if "ready" in log.read_text().splitlines():
            return
        if proc.poll() is not None:
            raise AssertionError(f"server exited with {proc.returncode}: {log.read_text()}")
        time.sleep(0.05)
    raise AssertionError(f"server not ready within {timeout_s} s: {log.read_text()}")


@contextlib.contextmanager
def server(ns, certs, workdir: Path, cc: str = "reno", qlog: bool = False):
    spec = ServerSpec(port=PORT, cc=cc, workdir=workdir, certs=certs, address=SERVER, qlog=qlog)
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / f"server-{cc}.log"
    with open(log, "wb") as f:
        proc = start_in(ns.server, AioquicStack().server_command(spec), f)
    try:
        wait_ready(proc, log)
        yield proc, spec
    finally:
        stop(proc)


def download(ns, certs, workdir: Path, size: int, cc: str, timeout_s: float = 30.0, port: int = PORT, qlog: bool = False):
    spec = DownloadSpec(
        address=SERVER, port=port, size=size, cc=cc, workdir=workdir, certs=certs, timeout_s=timeout_s, qlog=qlog
    )
    return AioquicStack().download(spec, ["ip", "netns", "exec", ns.client])


def test_stack_description(tmp_path):
    st = AioquicStack()
    assert st.missing() == []
    assert (st.name, st.transport, st.ccs) == ("aioquic", "udp", ("reno", "cubic"))
    assert st.version()[0].isdigit()
    from dclab.endpoints.base import Certs

    certs = Certs(cert=tmp_path / "c.pem", key=tmp_path / "k.pem")
    spec = ServerSpec(port=1234, cc="cubic", workdir=tmp_path, certs=certs, address=SERVER, qlog=True)
    cmd = st.server_command(spec)
    assert cmd[:3] == [sys.executable, "-m", "dclab.endpoints.h3_server"]
    assert cmd[cmd.index("--cc") + 1] == "cubic" and cmd[cmd.index("--port") + 1] == "1234"
    assert Path(cmd[cmd.index("--qlog-dir") + 1]).parent == tmp_path
    assert "--qlog-dir" not in st.server_command(ServerSpec(1234, "reno", tmp_path, certs, SERVER))


def test_client_refuses_unknown_cc_without_network(tmp_path):
    p = subprocess.run(
        [sys.executable, "-m", "dclab.endpoints.h3_client", "--host", SERVER, "--size", "1", "--cc", "vegas",
         "--insecure", "--timeout", "5"],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert p.returncode == 2
    import json

    d = json.loads(p.stdout.strip().splitlines()[-1])
    assert d["ok"] is False and "vegas" in d["error"]


@pytest.mark.root
@pytest.mark.parametrize("cc", ["reno", "cubic"])
def test_download_5mb(veth_pair, certs, tmp_path, cc):
    size = 5_000_000
    with server(veth_pair, certs, tmp_path / "srv", cc=cc) as (proc, _):
        r = download(veth_pair, certs, tmp_path / "cli", size, cc)
        assert r.ok, r.error
        assert r.bytes == size
        assert r.request_s == 0.0 and r.request_wall and abs(r.request_wall - time.time()) < 60
        assert 0 <= r.handshake_s <= r.first_byte_s <= r.last_byte_s
        assert r.goodput_mbps > 1
        # a second connection to the same server works, and an odd size is exact
        r2 = download(veth_pair, certs, tmp_path / "cli", 12345, cc)
        assert r2.ok and r2.bytes == 12345, r2.error
        assert stop(proc) == 0  # clean exit on SIGTERM
    print(f"aioquic {cc} 5 MB: {r.goodput_mbps:.1f} Mbit/s, handshake {r.handshake_s * 1000:.1f} ms")


@pytest.mark.root
def test_concurrent_downloads(veth_pair, certs, tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    with server(veth_pair, certs, tmp_path / "srv"):
        with ThreadPoolExecutor(3) as ex:
            rs = list(ex.map(lambda i: download(veth_pair, certs, tmp_path / f"cli{i}", 1_000_000 + i, "reno"), range(3)))
    for i, r in enumerate(rs):
        assert r.ok and r.bytes == 1_000_000 + i, r.error


@pytest.mark.root
def test_server_refuses_unknown_cc(veth_pair, certs, tmp_path):
    spec = ServerSpec(port=PORT, cc="vegas", workdir=tmp_path, certs=certs, address=SERVER)
    log = tmp_path / "server.log"
    with open(log, "wb") as f:
        proc = start_in(veth_pair.server, AioquicStack().server_command(spec), f)
    try:
        rc = proc.wait(timeout=10)
    finally:
        stop(proc)
    assert rc != 0
    assert "vegas" in log.read_text()


@pytest.mark.root
def test_client_refuses_unknown_cc(veth_pair, certs, tmp_path):
    t = time.monotonic()
    r = download(veth_pair, certs, tmp_path, 1000, "vegas", timeout_s=60)
    assert not r.ok and "vegas" in r.error
    assert time.monotonic() - t < 30, "refused at start, not after the timeout"


@pytest.mark.root
def test_nothing_listening_fails_within_timeout(veth_pair, certs, tmp_path):
    t = time.monotonic()
    r = download(veth_pair, certs, tmp_path, 1000, "reno", timeout_s=3, port=4499)
    elapsed = time.monotonic() - t
    assert not r.ok and r.bytes == 0
    assert "timeout" in r.error
    assert elapsed < 3 + 5, elapsed


@pytest.mark.root
def test_timeout_during_transfer_ends_the_client(veth_pair, certs, tmp_path):
    with server(veth_pair, certs, tmp_path / "srv") as (proc, _):
        t = time.monotonic()
        r = download(veth_pair, certs, tmp_path / "cli", 10**12, "reno", timeout_s=2)
        elapsed = time.monotonic() - t
        assert not r.ok and 0 < r.bytes < 10**12 and "timeout" in r.error
        assert r.handshake_s is not None and r.first_byte_s is not None
        assert elapsed < 2 + 5, elapsed
        assert stop(proc) == 0  # the abandoned body does not keep the server busy


@pytest.mark.root
def test_qlog_on_request(veth_pair, certs, tmp_path):
    with server(veth_pair, certs, tmp_path / "srv", qlog=True) as (proc, spec):
        r = download(veth_pair, certs, tmp_path / "cli", 200_000, "reno", qlog=True)
        assert r.ok, r.error
        assert list((tmp_path / "cli" / "qlog-client").glob("*.qlog"))
        # the server writes its qlog when the connection ends (closing period) or on exit
        assert stop(proc) == 0
    assert list((spec.workdir / "qlog-server").glob("*.qlog"))


@pytest.mark.root
def test_no_qlog_by_default(veth_pair, certs, tmp_path):
    with server(veth_pair, certs, tmp_path / "srv"):
        r = download(veth_pair, certs, tmp_path / "cli", 10_000, "cubic")
        assert r.ok, r.error
    assert not list(tmp_path.rglob("*.qlog"))


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.parametrize("cc", ["reno", "cubic"])
def test_download_50mb(veth_pair, certs, tmp_path, cc):
    size = 50_000_000
    with server(veth_pair, certs, tmp_path / "srv", cc=cc):
        r = download(veth_pair, certs, tmp_path / "cli", size, cc, timeout_s=120)
    assert r.ok and r.bytes == size, r.error
    print(f"aioquic {cc} 50 MB: {r.goodput_mbps:.1f} Mbit/s")
