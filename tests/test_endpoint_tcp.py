"""Kernel TCP (Hypercorn HTTP/2 + TLS 1.3, curl --http2) over a plain veth pair: every cc
(checked with ss on the live connection), refused and timed-out downloads, workloads
(connections, parallel and sequential streams), and the ASGI app itself."""

from __future__ import annotations

import asyncio
import re
import subprocess
import threading
import time

import pytest
from conftest import SERVER, ServerPool

from dclab.endpoints.base import (
    ClientSpec,
    ServerSpec,
    StackError,
    TransferResult,
    Workload,
)
from dclab.endpoints.tcp import adapter, h2_app
from dclab.endpoints.tcp.adapter import TcpStack

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


def fetch(ns, tmp_path, certs, workload: Workload, cc: str = "cubic", timeout_s: float = 20.0, port: int = PORT
          ) -> TransferResult:  # fmt: skip
    spec = ClientSpec(
        address=SERVER, port=port, workload=workload, cc=cc, workdir=tmp_path / "cli", certs=certs, timeout_s=timeout_s
    )
    return STACK.run(spec, ["ip", "netns", "exec", ns.client])


def download(ns, tmp_path, certs, size: int, cc: str = "cubic", timeout_s: float = 20.0, port: int = PORT):
    return fetch(ns, tmp_path, certs, Workload.single(size), cc, timeout_s, port)


def check_ok(r, size: int) -> None:
    assert r.ok, r.error
    assert r.bytes == size
    assert r.extra["http_codes"] == [200] and r.extra["http_versions"] == ["2"]
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
                check=False,
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
    # Only its congestion control is looked at: under load it may not finish in time.
    assert result["r"].bytes > 0, result["r"].error
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
    with pytest.raises(StackError, match="vegas"):
        STACK.server_sysctls("vegas")
    with pytest.raises(StackError, match="vegas"):
        STACK.server_command(server_spec(tmp_path, certs, cc="vegas"))
    assert STACK.server_sysctls("bbr") == {CC_KEY: "bbr", "net.ipv4.tcp_fastopen": "3"}
    spec = ClientSpec(SERVER, PORT, Workload.single(1000), "vegas", tmp_path, certs, 5.0)
    r = STACK.run(spec, ["false"])  # refused before any command runs
    assert not r.ok and "vegas" in r.error


def sizes(n: int, base: int = 200_000) -> tuple[int, ...]:
    """n different odd sizes, so that a body counted on the wrong object shows."""
    return tuple(base + 7919 * i for i in range(n))


def check_objects(r: TransferResult, wl: Workload) -> None:
    assert r.ok, r.error
    assert r.bytes == wl.total_bytes and len(r.objects) == len(wl.objects)
    for o in r.objects:
        assert o.ok and o.bytes == o.size == wl.objects[o.index] and o.connection == wl.connection_of(o.index)
        assert 0 < o.request_s <= o.first_byte_s <= o.last_byte_s
    for c in r.connections:
        mine = [o for o in r.objects if o.connection == c.index]
        assert c.handshake_s is not None and 0 < c.handshake_s <= min(o.request_s for o in mine)
        assert c.bytes == sum(o.size for o in mine)
        assert c.resumed is False and c.early_data is False  # full handshakes (a Certificate), no TFO
    assert r.extra["stamped_requests"] == len(wl.objects)  # every request timed by curl's own stamp
    assert r.extra["stamped_handshakes"] == wl.connections  # every handshake's end by its trace line


@needs_stack
def test_three_connections_six_objects_each_in_parallel(veth_pair, servers, certs, tmp_path):
    servers(server_spec(tmp_path, certs))
    wl = Workload(objects=sizes(18), connections=3)
    r = fetch(veth_pair, tmp_path, certs, wl)
    check_objects(r, wl)
    # three TCP connections (one local port each, curl opened no other)
    assert len(set(r.extra["local_ports"])) == 3 and all(isinstance(p, int) for p in r.extra["local_ports"])
    # All six requested at once, in curl's own order of events (not two clocks' order: on a
    # zero-delay veth with a core busy, an object's last byte was timed 0.8 ms before the
    # connection's last request, testing.md's failure table).
    assert r.extra["streams_at_once"] == [6, 6, 6]


@needs_stack
def test_sequential_streams(veth_pair, servers, certs, tmp_path):
    servers(server_spec(tmp_path, certs))
    wl = Workload(objects=sizes(6, 1_000_000), connections=2, streams="sequential")
    r = fetch(veth_pair, tmp_path, certs, wl)
    check_objects(r, wl)
    assert len(set(r.extra["local_ports"])) == 2
    assert r.extra["streams_at_once"] == [1, 1]  # each request after the previous report
    for c in range(2):
        mine = [o for o in r.objects if o.connection == c]
        assert [o.index for o in sorted(mine, key=lambda o: o.request_s)] == [o.index for o in mine]  # in order


def test_trace_gives_streams_at_once_and_the_handshakes_end():
    r = adapter._Reports(None)  # type: ignore[arg-type]  # fed by see(), never started
    lines = [
        "08:00:00.000000 *   Trying 198.18.0.1:8443...\n",
        "08:00:00.000050 * SSL connection using TLSv1.3 / TLS_AES_256_GCM_SHA384\n",
        "08:00:00.000001 > GET /0?warmup HTTP/2\n",  # the warm-up is not an object
        '{"url_effective":"https://198.18.0.1:8443/0?warmup"}\n',
        "08:00:00.000100 > GET /10?o=0 HTTP/2\n",
        "08:00:00.000200 > GET /10?o=1 HTTP/2\n",
        '{"url_effective":"https://198.18.0.1:8443/10?o=0"}\n',
        "08:00:00.000300 > GET /10?o=2 HTTP/2\n",
        "08:00:00.000400 > GET /10?o=3 HTTP/2\n",
        '{"url_effective":"https://198.18.0.1:8443/10?o=1"}\n',
    ]
    for i, line in enumerate(lines):
        r.see(line, 100.001 + i * 1e-4)  # read a millisecond after curl stamped it
    assert r.most_in_flight == 3 and r.in_flight == 2 and sorted(r.requests) == [0, 1, 2, 3]
    # the handshake's end on curl's clock, as the requests'
    assert r.trying_times()[0] == pytest.approx(100.0)
    assert r.handshake_time(0) == pytest.approx(100.00005) and r.handshake_time(1) is None


@needs_stack
def test_more_streams_than_curl_multiplexes_is_caught(veth_pair, servers, certs, tmp_path, monkeypatch):
    """Beyond 100 streams at once curl opens more connections; the run says so and fails
    rather than measuring another workload. Within the cap, 150 objects share one connection."""
    servers(server_spec(tmp_path, certs))
    wl = Workload(objects=(1000,) * 150)
    r = fetch(veth_pair, tmp_path, certs, wl)
    assert r.ok, r.error
    assert isinstance(r.extra["local_ports"][0], int)
    monkeypatch.setattr(adapter, "PARALLEL_MAX", 150)
    r = fetch(veth_pair, tmp_path, certs, wl)
    assert not r.ok and "TCP connections" in r.error and "not one" in r.error
    assert all(o.ok for o in r.objects)  # every object arrived; the connections were wrong


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


@needs_stack
@pytest.mark.slow
def test_declared_maximum(veth_pair, servers, certs, tmp_path):
    """What the capabilities declare really runs: 64 connections (curl processes), 10,000 objects."""
    servers(server_spec(tmp_path, certs))
    caps = STACK.capabilities
    wl = Workload(objects=(100,) * caps.max_objects, connections=caps.max_connections)
    r = fetch(veth_pair, tmp_path, certs, wl, timeout_s=60)
    assert r.ok, r.error
    assert r.bytes == wl.total_bytes and len(set(r.extra["local_ports"])) == caps.max_connections
