"""quic-go (our dclab-quicgo binary) over a plain veth pair: every cc, a 5 MB download,
several connections, parallel and sequential streams, byte ranges, pre-established
connections, qlog and key log files, a refused cc and a download that times out."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from conftest import SERVER, ServerPool

from dclab.endpoints.base import KEYLOG_FILE, ClientSpec, ServerSpec, StackError, TransferResult, Workload
from dclab.endpoints.quicgo.adapter import BINARY, QuicGoStack

STACK = QuicGoStack()
PORT = 4433
MB = 1_000_000

pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(bool(STACK.missing()), reason="; ".join(STACK.missing()) or "ok"),
]


@pytest.fixture
def servers(veth_pair, tmp_path):
    """Starts dclab-quicgo servers in ns.server; stops every started server afterwards."""
    pool = ServerPool(veth_pair.server, "udp", tmp_path)
    yield lambda spec, cmd=None: pool.start(cmd or STACK.server_command(spec), spec.port)
    pool.close()


def server_spec(tmp_path: Path, certs, cc: str = "reno", qlog: bool = False, keylog: bool = False) -> ServerSpec:
    return ServerSpec(port=PORT, cc=cc, workdir=tmp_path / "srv", certs=certs, address=SERVER, qlog=qlog, keylog=keylog)


def fetch(ns, tmp_path, certs, workload: Workload, cc: str = "reno", timeout_s: float = 20.0, port: int = PORT,
          qlog: bool = False, keylog: bool = False) -> TransferResult:  # fmt: skip
    spec = ClientSpec(
        address=SERVER, port=port, workload=workload, cc=cc, workdir=tmp_path / "cli", certs=certs, timeout_s=timeout_s,
        qlog=qlog, keylog=keylog,
    )  # fmt: skip
    return STACK.run(spec, ["ip", "netns", "exec", ns.client])


def check_ok(r: TransferResult, size: int) -> None:
    assert r.ok, r.error
    assert r.bytes == size
    assert r.request_wall is not None and abs(r.request_wall - time.time()) < 60
    assert r.handshake_s is not None and r.first_byte_s is not None and r.last_byte_s is not None
    assert 0 <= r.request_s < r.handshake_s <= r.first_byte_s <= r.last_byte_s
    assert r.goodput_mbps is not None and r.goodput_mbps > 1.0


def sizes(n: int, base: int = 200_000) -> tuple[int, ...]:
    """n different odd sizes, so that a body counted on the wrong object shows."""
    return tuple(base + 7919 * i for i in range(n))


def test_version_and_ccs():
    assert STACK.version() == "quic-go v0.65.0"
    assert STACK.ccs == ("reno",) and STACK.default_cc == "reno"


@pytest.mark.parametrize("cc", STACK.ccs)
def test_download_5mb_every_cc(veth_pair, servers, certs, tmp_path, cc):
    spec = server_spec(tmp_path, certs, cc)
    proc = servers(spec)
    # The running server really carries the cc (ip netns exec execs the binary in place).
    argv = Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")
    assert argv[0] == str(BINARY).encode() and argv[1] == b"server" and argv[argv.index(b"--cc") + 1] == cc.encode()
    r = fetch(veth_pair, tmp_path, certs, Workload.single(5 * MB), cc=cc)
    check_ok(r, 5 * MB)
    print(f"quic-go {cc}: 5 MB at {r.goodput_mbps:.0f} Mbit/s")
    c = r.connections[0]
    assert c.resumed is False and c.early_data is None
    # What the client tells of its library and sockets: quic-go raised the receive buffer
    # far beyond the kernel's default (212992) whatever net.core.rmem_* say.
    stack = r.extra["stack"]
    assert stack["library"] == "quic-go" and stack["version"] == "v0.65.0" and stack["cc"] == cc
    assert len(stack["so_rcvbuf"]) == 1 and stack["so_rcvbuf"][0] >= 7 << 20
    assert stack["gso"] in ([True], [False])
    assert r.extra["startup_s"] is not None and 0 < r.extra["startup_s"] < 5
    assert r.extra["cpu_s"] > 0
    # Nothing of the body is left behind in the client's workdir.
    assert not any(p.is_file() for p in (tmp_path / "cli").rglob("*"))


def test_three_connections_parallel_streams(veth_pair, servers, certs, tmp_path):
    servers(server_spec(tmp_path, certs))
    # two objects of the same size on one connection: their bodies must not mix
    wl = Workload(objects=(*sizes(17), 200_000), connections=3)
    r = fetch(veth_pair, tmp_path, certs, wl)
    assert r.ok, r.error
    assert r.bytes == wl.total_bytes
    for o in r.objects:
        assert o.ok and o.bytes == o.size == wl.objects[o.index] and o.connection == o.index % 3
        assert 0 < o.request_s <= o.first_byte_s <= o.last_byte_s
    for c in r.connections:
        mine = [o for o in r.objects if o.connection == c.index]
        assert len(mine) == 6 and c.bytes == sum(o.size for o in mine)
        assert 0 < c.handshake_s <= min(o.request_s for o in mine) < c.handshake_s + 0.25
        assert max(o.request_s for o in mine) < min(o.last_byte_s for o in mine)  # parallel streams
    assert len(r.extra["stack"]["so_rcvbuf"]) == 3  # a socket each


def test_sequential_streams_and_assignment(veth_pair, servers, certs, tmp_path):
    servers(server_spec(tmp_path, certs))
    wl = Workload(objects=sizes(6), connections=2, assignment=(0, 0, 0, 1, 1, 1), streams="sequential")
    r = fetch(veth_pair, tmp_path, certs, wl)
    assert r.ok, r.error
    for c in range(2):
        mine = [o for o in r.objects if o.connection == c]
        assert [o.index for o in mine] == [3 * c, 3 * c + 1, 3 * c + 2]
        for prev, nxt in zip(mine, mine[1:]):
            assert prev.last_byte_s <= nxt.request_s  # the next request after the previous body
            assert nxt.request_s - prev.last_byte_s < 0.25


def test_ranged_and_preconnect(veth_pair, servers, certs, tmp_path):
    servers(server_spec(tmp_path, certs))
    wl = Workload.ranges(3 * MB + 2, 4, preconnect=True)
    r = fetch(veth_pair, tmp_path, certs, wl)
    assert r.ok, r.error
    assert r.bytes == 3 * MB + 2 and [o.bytes for o in r.objects] == list(wl.objects)
    for o in r.objects:
        assert 0 <= o.request_s < 0.25 and o.first_byte_s > 0  # every request after every handshake
    for c in r.connections:
        assert 0 < c.handshake_s < 1.0  # a handshake's duration, before the request
    # Without preconnect the handshakes are in the times: after the request.
    r2 = fetch(veth_pair, tmp_path, certs, Workload.ranges(MB, 2))
    assert r2.ok, r2.error
    assert all(c.handshake_s <= min(o.request_s for o in r2.objects if o.connection == c.index) for c in r2.connections)


def test_server_answers_ranges_and_bad_paths(veth_pair, servers, certs, tmp_path):
    """The server's answers to what the Workload cannot ask: a bad path, a bad range."""
    servers(server_spec(tmp_path, certs))
    wfile = tmp_path / "wl.json"

    def run(objects: list[int], extra_cc: str = "reno") -> dict:
        wfile.write_text(json.dumps({"objects": objects}))
        p = subprocess.run(
            ["ip", "netns", "exec", veth_pair.client, *STACK.program("client"), "--host", SERVER, "--port", str(PORT),
             "--workload", str(wfile), "--cc", extra_cc, "--ca", str(certs.cert), "--timeout", "10"],
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        return {"rc": p.returncode, **json.loads(p.stdout.strip().splitlines()[-1])}

    d = run([10**12 + 1])  # beyond the server's limit: 404
    assert d["rc"] == 1 and not d["ok"] and "HTTP status 404" in d["objects"][0]["error"]
    d = run([0, 1])
    assert d["rc"] == 0 and d["ok"] and [o["bytes"] for o in d["objects"]] == [0, 1]


def test_qlog_and_keylog_written(veth_pair, servers, certs, tmp_path):
    servers(server_spec(tmp_path, certs, qlog=True, keylog=True))
    r = fetch(veth_pair, tmp_path, certs, Workload(objects=(300_000, 200_000), connections=2), qlog=True, keylog=True)
    assert r.ok, r.error
    cli = list((tmp_path / "cli" / "qlog-client").iterdir())
    assert len(cli) == 2 and all(p.name.endswith("_client.sqlog") for p in cli)
    for p in cli:
        text = p.read_text()
        assert '"vantage_point":{"type":"client"}' in text and "transport:packet_received" in text
        assert "connection_closed" in text  # the file was finished
    # The server writes one per connection too (finished when it stops).
    assert len(list((tmp_path / "srv" / "qlog-server").iterdir())) == 2
    for end in ("cli", "srv"):
        lines = (tmp_path / end / KEYLOG_FILE).read_text().splitlines()
        labels = {line.split()[0] for line in lines}
        assert {"CLIENT_HANDSHAKE_TRAFFIC_SECRET", "SERVER_TRAFFIC_SECRET_0", "CLIENT_TRAFFIC_SECRET_0"} <= labels
        assert len(lines) == 2 * 4  # two connections, four secrets each


def test_refused_cc(veth_pair, certs, tmp_path):
    r = fetch(veth_pair, tmp_path, certs, Workload.single(1000), cc="cubic", timeout_s=2.0)
    assert not r.ok and "cubic" in r.error and "reno" in r.error
    with pytest.raises(StackError, match="cubic"):
        STACK.server_command(server_spec(tmp_path, certs, cc="cubic"))
    # The binaries themselves refuse it with exit 2, the server before binding.
    spec = server_spec(tmp_path, certs)
    cmd = STACK.server_command(spec)
    cmd[cmd.index("--cc") + 1] = "cubic"
    p = subprocess.run(["ip", "netns", "exec", veth_pair.server, *cmd], capture_output=True, text=True, timeout=10)
    assert p.returncode == 2 and "cubic" in p.stderr and "reno" in p.stderr
    wl = tmp_path / "wl.json"
    wl.write_text(json.dumps(Workload.single(1).to_dict()))
    p = subprocess.run([*STACK.program("client"), "--host", SERVER, "--workload", str(wl), "--cc", "bbr", "--ca", str(certs.cert)],
                       capture_output=True, text=True, timeout=10)  # fmt: skip
    d = json.loads(p.stdout)
    assert p.returncode == 2 and not d["ok"] and "bbr" in d["workload_error"]


def test_refuses_what_it_cannot_do(tmp_path, certs):
    for wl, word in (
        (Workload(objects=(1,), resumption=True), "resumption"),
        (Workload(objects=(1,), resumption=True, zero_rtt=True), "0-RTT"),
        (Workload(objects=(1,), cc_options=({"knob": "1"},)), "knob"),
    ):
        spec = ClientSpec(SERVER, PORT, wl, "reno", tmp_path, certs, 5.0)
        r = STACK.run(spec, ["false"])
        assert not r.ok and word in r.error and "quic-go" in r.error
    # The client refuses them too (exit 2 and a JSON line), should it be asked directly.
    f = tmp_path / "wl.json"
    f.write_text(json.dumps(Workload(objects=(1,), resumption=True).to_dict()))
    p = subprocess.run([*STACK.program("client"), "--host", SERVER, "--workload", str(f), "--ca", str(certs.cert)],
                       capture_output=True, text=True, timeout=10)  # fmt: skip
    assert p.returncode == 2 and "resumption" in json.loads(p.stdout)["workload_error"]
    assert STACK.datagram_error(1500, 1472) is not None and STACK.datagram_error(None, 1472) is None
    assert STACK.datagram_error(None, 1252) is not None  # its first datagrams are 1280 bytes


def test_timed_out_download_without_server(veth_pair, certs, tmp_path):
    """Nothing listens: the handshake never completes; a failed result within the timeout."""
    t0 = time.monotonic()
    r = fetch(veth_pair, tmp_path, certs, Workload.single(MB), timeout_s=1.5)
    assert time.monotonic() - t0 < 1.5 + 2
    assert not r.ok and r.bytes == 0
    assert "timeout after 1.5 s before the handshake completed" in r.error
    assert r.connections[0].handshake_s is None


def test_timeout_mid_transfer(veth_pair, servers, certs, tmp_path):
    servers(server_spec(tmp_path, certs))
    t0 = time.monotonic()
    r = fetch(veth_pair, tmp_path, certs, Workload.single(50_000 * MB), timeout_s=1.5)
    assert time.monotonic() - t0 < 1.5 + 2
    assert not r.ok and 0 < r.bytes < 50_000 * MB
    assert "timeout after 1.5 s" in r.error and "before the handshake" not in r.error


def test_fixed_datagram_size(veth_pair, servers, certs, tmp_path):
    spec = ServerSpec(port=PORT, cc="reno", workdir=tmp_path / "srv", certs=certs, address=SERVER, quic_datagram=1252)
    assert STACK.server_command(spec)[-2:] == ["--max-datagram-size", "1252"]
    servers(spec)
    cspec = ClientSpec(address=SERVER, port=PORT, workload=Workload.single(MB), cc="reno", workdir=tmp_path / "cli",
                       certs=certs, timeout_s=10, quic_datagram=1252)  # fmt: skip
    r = STACK.run(cspec, ["ip", "netns", "exec", veth_pair.client])
    check_ok(r, MB)
    assert r.extra["stack"]["max_datagram_size"] == 1252 and r.extra["stack"]["path_mtu_discovery"] is False
