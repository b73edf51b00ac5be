"""Kernel TCP (Hypercorn HTTP/2 + TLS 1.3, curl --http2) over a plain veth pair: every cc
(checked with ss on the live connection), refused and timed-out downloads, and the ASGI
app itself."""

from __future__ import annotations

import asyncio
import re
import subprocess
import threading
import time

import pytest
from conftest import SERVER, ServerPool
from dclab.endpoints.tcp_stack import TcpStack

from dclab.endpoints import h2_app
from dclab.endpoints.base import DownloadSpec, ServerSpec

STACK = TcpStack()
PORT = 8443
MB = 1_000_000
ALLOWED = "net.ipv4.tcp_allowed_congestion_control"
CC_KEY = "net.ipv4.tcp_congestion_control"

_MISSING = STACK.missing()


def needs_stack(f):
    """Root (namespaces, sysctls) and curl + hypercorn."""
    return pytest.mark.root(pytest.mark.skipif(bool(_MISSING), reason="; ".join(_MISSING) or "ok")(f))


def sysctl_get(key: str, ns: str | None = None) -> str:
    pre = ["ip", "netns", "exec", ns] if ns else []
    return subprocess.run([*pre, "sysctl", "-n", key], capture_output=True, text=True, check=True, timeout=5).stdout.strip()


def sysctl_set(key: str, value: str, ns: str | None = None) -> None:
    pre = ["ip", "netns", "exec", ns] if ns else []
    subprocess.run([*pre, "sysctl", "-q", "-w", f"{key}={value}"], capture_output=True, text=True, check=True, timeout=5)


@pytest.fixture
def cubic_allowed():
    """Adds cubic to the root namespace's allowed list; always restores the original."""
    original = sysctl_get(ALLOWED)
    try:
        if "cubic" not in original.split():
            sysctl_set(ALLOWED, f"{original} cubic")
        yield
    finally:
        sysctl_set(ALLOWED, original)
        assert sysctl_get(ALLOWED) == original


@pytest.fixture
def servers(veth_pair, cubic_allowed, tmp_path):
    """Applies server_sysctls in ns.server and starts Hypercorn there; stops every started
    server afterwards."""
    pool = ServerPool(veth_pair.server, "tcp", tmp_path)

    def start(spec: ServerSpec) -> subprocess.Popen:
        for key, value in STACK.server_sysctls(spec.cc).items():
            sysctl_set(key, value, veth_pair.server)
            assert sysctl_get(key, veth_pair.server) == value
        return pool.start(STACK.server_command(spec), spec.port)

    yield start
    pool.close()


def server_spec(tmp_path, certs, cc: str = "cubic") -> ServerSpec:
    return ServerSpec(port=PORT, cc=cc, workdir=tmp_path / "srv", certs=certs, address=SERVER)


def download(ns, tmp_path, certs, size: int, cc: str = "cubic", timeout_s: float = 20.0, port: int = PORT):
    spec = DownloadSpec(
        address=SERVER, port=port, size=size, cc=cc, workdir=tmp_path / "cli", certs=certs, timeout_s=timeout_s
    )
    return STACK.download(spec, ["ip", "netns", "exec", ns.client])


def check_ok(r, size: int) -> None:
    assert r.ok, r.error
    assert r.bytes == size
    assert r.extra["http_code"] == 200 and r.extra["http_version"] == "2"
    assert r.request_wall is not None and abs(r.request_wall - time.time()) < 60
    assert 0 <= r.request_s < r.handshake_s <= r.first_byte_s <= r.last_byte_s
    assert r.goodput_mbps is not None and r.goodput_mbps > 1.0


def server_cc_seen(ns, tmp_path, certs, cc: str) -> str:
    """Runs a longer download in the background and returns the ss -ti line of the
    server's side of the connection once ss shows one."""
    result = {}
    t = threading.Thread(target=lambda: result.setdefault("r", download(ns, tmp_path, certs, 400 * MB, cc=cc)))
    t.start()
    seen = ""
    try:
        deadline = time.monotonic() + 15
        while t.is_alive() and time.monotonic() < deadline:
            out = subprocess.run(
                ["ip", "netns", "exec", ns.server, "ss", "-H", "-tin", "state", "established", f"sport = :{PORT}"],
                capture_output=True,
                text=True,
                timeout=5,
            ).stdout
            if "rtt:" in out:
                seen = out
                break
            time.sleep(0.01)
    finally:
        t.join(timeout=25)
    assert not t.is_alive()
    assert result["r"].ok, result["r"].error
    return seen


@needs_stack
@pytest.mark.parametrize("cc", STACK.ccs)
def test_download_5mb_every_cc(veth_pair, servers, certs, tmp_path, cc):
    servers(server_spec(tmp_path, certs, cc))
    assert sysctl_get(CC_KEY, veth_pair.server) == cc
    r = download(veth_pair, tmp_path, certs, 5 * MB, cc=cc)
    check_ok(r, 5 * MB)
    print(f"tcp {cc}: 5 MB at {r.goodput_mbps:.0f} Mbit/s")
    seen = server_cc_seen(veth_pair, tmp_path, certs, cc)
    assert re.search(rf"(^|\s){cc}(\s|$)", seen), f"ss -ti does not show {cc}: {seen!r}"


@needs_stack
def test_refused_returns_quickly(veth_pair, certs, tmp_path):
    t0 = time.monotonic()
    r = download(veth_pair, tmp_path, certs, 1 * MB, timeout_s=2.0, port=PORT + 1)
    assert time.monotonic() - t0 < 2.0 + 5
    assert not r.ok and r.bytes == 0 and r.error


@needs_stack
def test_timeout_returns_quickly(veth_pair, servers, certs, tmp_path):
    servers(server_spec(tmp_path, certs))
    t0 = time.monotonic()
    r = download(veth_pair, tmp_path, certs, 50_000 * MB, timeout_s=1.5)
    assert time.monotonic() - t0 < 1.5 + 5
    assert not r.ok and 0 < r.bytes < 50_000 * MB


def test_unknown_cc_is_refused(tmp_path, certs):
    with pytest.raises(ValueError):
        STACK.server_sysctls("vegas")
    with pytest.raises(ValueError):
        STACK.server_command(server_spec(tmp_path, certs, cc="vegas"))
    assert STACK.server_sysctls("bbr") == {CC_KEY: "bbr"}


# The ASGI app itself (no namespaces needed).


def run_app(path: str, method: str = "GET") -> tuple[int, list[bytes]]:
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": method, "path": path, "headers": []}
    asyncio.run(h2_app.app(scope, receive, send))
    assert sent[0]["type"] == "http.response.start"
    assert sent[-1]["more_body"] is False
    return sent[0]["status"], [m["body"] for m in sent[1:]]


@pytest.mark.parametrize("n", [0, 1, h2_app.CHUNK - 1, h2_app.CHUNK, h2_app.CHUNK + 1, 5 * MB])
def test_app_sends_exactly_n_bytes(n):
    status, chunks = run_app(f"/{n}")
    assert status == 200
    assert sum(len(c) for c in chunks) == n
    assert all(len(c) <= h2_app.CHUNK for c in chunks)


@pytest.mark.parametrize("path", ["/", "/foo", "/12x", "/-5", "/1/2"])
def test_app_404(path):
    status, _ = run_app(path)
    assert status == 404
