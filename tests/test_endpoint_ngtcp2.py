"""ngtcp2 (gtlsserver/gtlsclient) over a plain veth pair: every cc, byte counts past the
default 20M dyn length, short bodies, qlog, refused and timed-out downloads, and workloads
(several connections, parallel streams)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from conftest import SERVER, ServerPool
from endpoint_binaries import check_ok

from dclab.endpoints.base import (
    ClientSpec,
    ServerSpec,
    StackError,
    TransferResult,
    Workload,
)
from dclab.endpoints.ngtcp2.adapter import Ngtcp2Stack

STACK = Ngtcp2Stack()
PORT = 4433
MB = 1_000_000

pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(bool(STACK.missing()), reason="; ".join(STACK.missing()) or "ok"),
]


@pytest.fixture
def servers(veth_pair, tmp_path):
    """Starts gtlsserver in ns.server; stops every started server afterwards."""
    pool = ServerPool(veth_pair.server, "udp", tmp_path)
    yield lambda spec, cmd=None: pool.start(cmd or STACK.server_command(spec), spec.port)
    pool.close()


def server_spec(tmp_path: Path, certs, cc: str = "cubic", qlog: bool = False) -> ServerSpec:
    return ServerSpec(port=PORT, cc=cc, workdir=tmp_path / "srv", certs=certs, address=SERVER, qlog=qlog)


def fetch(ns, tmp_path, certs, workload: Workload, cc: str = "cubic", timeout_s: float = 20.0, port: int = PORT,
          qlog: bool = False) -> TransferResult:  # fmt: skip
    spec = ClientSpec(
        address=SERVER, port=port, workload=workload, cc=cc, workdir=tmp_path / "cli", certs=certs, timeout_s=timeout_s,
        qlog=qlog,
    )  # fmt: skip
    return STACK.run(spec, ["ip", "netns", "exec", ns.client])


def download(ns, tmp_path, certs, size: int, cc: str = "cubic", timeout_s: float = 20.0, port: int = PORT, qlog=False):
    return fetch(ns, tmp_path, certs, Workload.single(size), cc, timeout_s, port, qlog)


def test_ccs_are_what_this_build_accepts():
    out = "".join(
        subprocess.run([prog, "--help"], check=False, capture_output=True, text=True).stdout
        for prog in ("gtlsserver", "gtlsclient")
    )
    for cc in STACK.ccs:
        assert cc in out
    assert STACK.ccs[0] == "cubic"
    assert STACK.version().startswith("ngtcp2 0.12")


@pytest.mark.parametrize("cc", STACK.ccs)
def test_download_5mb_every_cc(veth_pair, servers, certs, tmp_path, cc):
    spec = server_spec(tmp_path, certs, cc)
    cmd = STACK.server_command(spec)
    assert f"--cc={cc}" in cmd
    proc = servers(spec, cmd)
    # The running server really carries the cc (ip netns exec execs gtlsserver in place).
    argv = Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")
    assert argv[0].endswith(b"gtlsserver") and f"--cc={cc}".encode() in argv
    r = download(veth_pair, tmp_path, certs, 5 * MB, cc=cc)
    check_ok(r, 5 * MB)
    print(f"ngtcp2 {cc}: 5 MB at {r.goodput_mbps:.0f} Mbit/s")
    # Nothing of the body is left behind in the client's workdir.
    assert not any(p.is_file() for p in (tmp_path / "cli").rglob("*"))


def test_larger_than_default_dyn_length(veth_pair, servers, certs, tmp_path):
    servers(server_spec(tmp_path, certs))
    r = download(veth_pair, tmp_path, certs, 30 * MB)
    check_ok(r, 30 * MB)


def test_short_body_is_not_ok(veth_pair, servers, certs, tmp_path):
    """A server left at the default --max-dyn-length (20M) answers a short body with exit 0."""
    spec = server_spec(tmp_path, certs)
    cmd = [a for a in STACK.server_command(spec) if not a.startswith("--max-dyn-length")]
    servers(spec, cmd)
    r = download(veth_pair, tmp_path, certs, 30 * MB)
    assert not r.ok and r.bytes != 30 * MB and "bytes" in r.error


def test_qlog_on_request(veth_pair, servers, certs, tmp_path):
    spec = server_spec(tmp_path, certs, qlog=True)
    assert any(a.startswith("--qlog-dir=") for a in STACK.server_command(spec))
    servers(spec)
    r = download(veth_pair, tmp_path, certs, 1 * MB, qlog=True)
    check_ok(r, 1 * MB)
    assert list((tmp_path / "cli" / "qlog-client").iterdir())
    assert list((tmp_path / "srv" / "qlog-server").iterdir())


def test_refused_returns_quickly(veth_pair, certs, tmp_path):
    t0 = time.monotonic()
    r = download(veth_pair, tmp_path, certs, 1 * MB, timeout_s=2.0, port=PORT + 1)
    assert time.monotonic() - t0 < 2.0 + 5
    assert not r.ok and r.bytes == 0 and r.error


def test_timeout_returns_quickly(veth_pair, servers, certs, tmp_path):
    servers(server_spec(tmp_path, certs))
    t0 = time.monotonic()
    r = download(veth_pair, tmp_path, certs, 50_000 * MB, timeout_s=1.5)
    assert time.monotonic() - t0 < 1.5 + 5
    assert not r.ok and 0 < r.bytes < 50_000 * MB
    assert "timed out" in r.error


def test_unknown_cc_does_not_raise(veth_pair, certs, tmp_path):
    r = download(veth_pair, tmp_path, certs, 1000, cc="vegas", timeout_s=2.0)
    assert not r.ok and "vegas" in r.error
    with pytest.raises(StackError, match="vegas"):
        STACK.server_command(server_spec(tmp_path, certs, cc="vegas"))


def sizes(n: int, base: int = 200_000) -> tuple[int, ...]:
    """n different odd sizes, so that a body counted on the wrong object shows."""
    return tuple(base + 7919 * i for i in range(n))


def test_three_connections_six_objects_each(veth_pair, servers, certs, tmp_path):
    servers(server_spec(tmp_path, certs))
    # two objects of the same size on one connection: their bodies must not mix
    wl = Workload(objects=(*sizes(17), 200_000), connections=3)
    r = fetch(veth_pair, tmp_path, certs, wl, qlog=True)
    assert r.ok, r.error
    assert r.bytes == wl.total_bytes
    # Time 0 is the first client's earliest ready mark (adapter.py): when the line of its
    # ClientHello is read late under load, that is its first FIFO open, so 0 itself; the
    # adapter then names the connection in hello_read_late.
    late = set(r.extra.get("hello_read_late", []))
    for o in r.objects:
        assert o.ok and o.bytes == o.size == wl.objects[o.index] and o.connection == o.index % 3
        assert (0 <= o.request_s if o.connection in late else 0 < o.request_s)
        assert o.request_s <= o.first_byte_s <= o.last_byte_s
    for c in r.connections:
        mine = [o for o in r.objects if o.connection == c.index]
        assert len(mine) == 6 and c.bytes == sum(o.size for o in mine)
        # handshake_s: the client's Finished in gnutls' log; the requests follow it
        assert (0 <= c.handshake_s if c.index in late else 0 < c.handshake_s)
        assert c.handshake_s <= min(o.request_s for o in mine) < c.handshake_s + 0.05
        assert max(o.request_s for o in mine) < min(o.last_byte_s for o in mine)  # parallel streams
        assert c.resumed is False and c.early_data is False  # full handshakes, from gnutls' log
    assert len(list((tmp_path / "cli" / "qlog-client").iterdir())) == 3  # three QUIC connections


def test_refuses_what_it_cannot_do(tmp_path, certs):
    for wl, word in (
        (Workload(objects=(1, 2), streams="sequential"), "sequential"),
        (Workload(objects=(1,) * 101), "101 objects"),
    ):
        spec = ClientSpec(SERVER, PORT, wl, "cubic", tmp_path, certs, 5.0)
        r = STACK.run(spec, ["false"])
        assert not r.ok and word in r.error and "ngtcp2" in r.error


@pytest.mark.slow
def test_declared_maximum(veth_pair, servers, certs, tmp_path):
    """What the capabilities declare really runs: 100 objects over 64 connections."""
    servers(server_spec(tmp_path, certs))
    caps = STACK.capabilities
    wl = Workload(objects=sizes(caps.max_objects, 1000), connections=caps.max_connections)
    r = fetch(veth_pair, tmp_path, certs, wl, timeout_s=60)
    assert r.ok, r.error
    assert r.bytes == wl.total_bytes
