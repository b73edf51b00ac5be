"""quinn (our dclab-quinn binary) over a plain veth pair: every cc, a 5 MB download,
several connections, parallel and sequential streams, byte ranges, pre-established
connections, the server's answers to bad paths, qlog and key log files, a fixed datagram
size, a refused cc and refused workloads, downloads that time out, and the server's stop."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import SERVER, ServerPool

from dclab.endpoints.base import KEYLOG_FILE, ClientSpec, ServerSpec, StackError, TransferResult, Workload
from dclab.endpoints.quinn.adapter import BINARY, QuinnStack

STACK = QuinnStack()
PORT = 4433
MB = 1_000_000

pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(bool(STACK.missing()), reason="; ".join(STACK.missing()) or "ok"),
]


@pytest.fixture
def servers(veth_pair, tmp_path):
    """Starts dclab-quinn servers in ns.server; stops every started server afterwards."""
    pool = ServerPool(veth_pair.server, "udp", tmp_path)
    yield lambda spec, cmd=None: pool.start(cmd or STACK.server_command(spec), spec.port)
    pool.close()


def server_spec(tmp_path: Path, certs, cc: str = "cubic", qlog: bool = False, keylog: bool = False,
                quic_datagram: int | None = None) -> ServerSpec:  # fmt: skip
    return ServerSpec(port=PORT, cc=cc, workdir=tmp_path / "srv", certs=certs, address=SERVER, qlog=qlog, keylog=keylog,
                      quic_datagram=quic_datagram)  # fmt: skip


def fetch(ns, tmp_path, certs, workload: Workload, cc: str = "cubic", timeout_s: float = 20.0, port: int = PORT,
          qlog: bool = False, keylog: bool = False, quic_datagram: int | None = None) -> TransferResult:  # fmt: skip
    spec = ClientSpec(
        address=SERVER, port=port, workload=workload, cc=cc, workdir=tmp_path / "cli", certs=certs, timeout_s=timeout_s,
        qlog=qlog, keylog=keylog, quic_datagram=quic_datagram,
    )  # fmt: skip
    return STACK.run(spec, ["ip", "netns", "exec", ns.client])


def client_cmd(certs, wfile: Path, cc: str = "cubic", timeout_s: float = 10.0) -> list[str]:
    """The client binary run directly (not through the adapter's checks)."""
    return [*STACK.program("client"), "--host", SERVER, "--port", str(PORT), "--workload", str(wfile), "--cc", cc,
            "--ca", str(certs.cert), "--timeout", str(timeout_s)]  # fmt: skip


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
    assert STACK.version().startswith("quinn 0.11.12 (quinn-proto 0.11.19, h3 0.0.8, h3-quinn 0.0.10, rustls 0.23")
    assert STACK.ccs == ("cubic", "reno", "bbr") and STACK.default_cc == "cubic"


@pytest.mark.parametrize("cc", STACK.ccs)
def test_download_5mb_every_cc(veth_pair, servers, certs, tmp_path, cc):
    proc = servers(server_spec(tmp_path, certs, cc))
    # The running server really carries the cc (ip netns exec execs the binary in place).
    argv = Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")
    assert argv[0] == str(BINARY).encode() and argv[1] == b"server" and argv[argv.index(b"--cc") + 1] == cc.encode()
    r = fetch(veth_pair, tmp_path, certs, Workload.single(5 * MB), cc=cc)
    check_ok(r, 5 * MB)
    print(f"quinn {cc}: 5 MB at {r.goodput_mbps:.0f} Mbit/s")
    c = r.connections[0]
    assert c.resumed is False and c.early_data is None
    stack = r.extra["stack"]
    assert stack["library"] == "quinn 0.11.12" and stack["cc"] == cc
    # quinn leaves the receive buffer as the kernel made it (net.core.rmem_default, doubled).
    (sock,) = stack["sockets"]
    assert sock["rcvbuf"] == sock["rcvbuf_before"] and stack["quinn_changed_rcvbuf"] is False
    assert isinstance(stack["gso"], bool) and stack["datagram"]["mtu_discovery"] is True
    (conn,) = stack["connections"]
    assert 1200 <= conn["current_mtu"] <= 1452 and conn["sent_packets"] > 0  # discovered on the veth's 1500
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
        assert 0 < c.handshake_s <= min(o.request_s for o in mine) < c.handshake_s + 0.05
        assert max(o.request_s for o in mine) < min(o.last_byte_s for o in mine)  # parallel streams
    assert len(r.extra["stack"]["sockets"]) == 3  # a socket each


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
            assert nxt.request_s - prev.last_byte_s < 0.05


def test_ranged_and_preconnect(veth_pair, servers, certs, tmp_path):
    servers(server_spec(tmp_path, certs))
    wl = Workload.ranges(3 * MB + 2, 4, preconnect=True)
    r = fetch(veth_pair, tmp_path, certs, wl)
    assert r.ok, r.error
    assert r.bytes == 3 * MB + 2 and [o.bytes for o in r.objects] == list(wl.objects)
    for o in r.objects:
        assert 0 <= o.request_s < 0.05 and o.first_byte_s > 0  # every request after every handshake
    for c in r.connections:
        assert 0 < c.handshake_s < 1.0  # a handshake's duration, before the request
    # Without preconnect the handshakes are in the times: after the request.
    r2 = fetch(veth_pair, tmp_path, certs, Workload.ranges(MB, 2))
    assert r2.ok, r2.error
    assert all(c.handshake_s <= min(o.request_s for o in r2.objects if o.connection == c.index) for c in r2.connections)


def test_server_answers_bad_paths_and_empty_bodies(veth_pair, servers, certs, tmp_path):
    """What the Workload cannot ask but the server must answer: a path beyond its limit."""
    servers(server_spec(tmp_path, certs))
    wfile = tmp_path / "wl.json"

    def run(objects: list[int]) -> dict:
        wfile.write_text(json.dumps({"objects": objects}))
        p = subprocess.run(["ip", "netns", "exec", veth_pair.client, *client_cmd(certs, wfile)],
                           capture_output=True, text=True, timeout=30)  # fmt: skip
        return {"rc": p.returncode, **json.loads(p.stdout.strip().splitlines()[-1])}

    d = run([10**12 + 1])  # beyond the server's limit: 404
    assert d["rc"] == 1 and not d["ok"] and "HTTP status 404" in d["objects"][0]["error"]
    d = run([0, 1])
    assert d["rc"] == 0 and d["ok"] and [o["bytes"] for o in d["objects"]] == [0, 1]


def qlog_events(path: Path) -> set[str]:
    """The event names of a JSON-SEQ qlog file (its header record first)."""
    records = [json.loads(x) for x in path.read_text().split("\x1e") if x.strip()]
    assert records[0]["qlog_format"] == "JSON-SEQ"
    return {rec.get("name") for rec in records[1:]}


def test_qlog_and_keylog_written(veth_pair, servers, certs, tmp_path):
    proc = servers(server_spec(tmp_path, certs, qlog=True, keylog=True))
    r = fetch(veth_pair, tmp_path, certs, Workload(objects=(300_000, 200_000), connections=2), qlog=True, keylog=True)
    assert r.ok, r.error
    cli = sorted((tmp_path / "cli" / "qlog-client").iterdir())
    assert [p.name for p in cli] == ["client-conn0.sqlog", "client-conn1.sqlog"]
    for p in cli:
        assert {"transport:packet_received", "transport:packet_sent", "recovery:metrics_updated"} <= qlog_events(p)
    for end in ("cli", "srv"):
        lines = (tmp_path / end / KEYLOG_FILE).read_text().splitlines()
        labels = [line.split()[0] for line in lines]
        assert {"CLIENT_HANDSHAKE_TRAFFIC_SECRET", "SERVER_HANDSHAKE_TRAFFIC_SECRET", "CLIENT_TRAFFIC_SECRET_0",
                "SERVER_TRAFFIC_SECRET_0"} <= set(labels)  # fmt: skip
        assert labels.count("CLIENT_TRAFFIC_SECRET_0") == 2  # two connections
        assert all(len(line.split()) == 3 and len(line.split()[1]) == 64 for line in lines)
    # The server writes one per connection too, named by the original destination
    # connection id, complete once it stopped.
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=5) == 0
    srv = list((tmp_path / "srv" / "qlog-server").iterdir())
    assert len(srv) == 2 and all(p.suffix == ".sqlog" for p in srv)
    for p in srv:
        assert {"transport:packet_received", "transport:packet_sent"} <= qlog_events(p)


def test_fixed_datagram_size(veth_pair, servers, certs, tmp_path):
    spec = server_spec(tmp_path, certs, quic_datagram=1252)
    assert STACK.server_command(spec)[-2:] == ["--max-datagram-size", "1252"]
    servers(spec)
    r = fetch(veth_pair, tmp_path, certs, Workload.single(MB), quic_datagram=1252)
    check_ok(r, MB)
    stack = r.extra["stack"]
    assert stack["datagram"] == {"max_datagram_size": 1252, "mtu_discovery": False, "initial": 1252}
    assert stack["connections"][0]["current_mtu"] == 1252
    assert STACK.datagram_error(1100, 1472) is not None and STACK.datagram_error(None, 1200) is None
    assert STACK.datagram_error(1300, 1252) is not None


def test_refused_cc(veth_pair, certs, tmp_path):
    r = fetch(veth_pair, tmp_path, certs, Workload.single(1000), cc="vegas", timeout_s=2.0)
    assert not r.ok and "vegas" in r.error and "cubic" in r.error
    with pytest.raises(StackError, match="vegas"):
        STACK.server_command(server_spec(tmp_path, certs, cc="vegas"))
    # The binaries themselves refuse it with exit 2, the server before binding.
    cmd = STACK.server_command(server_spec(tmp_path, certs))
    cmd[cmd.index("--cc") + 1] = "vegas"
    p = subprocess.run(["ip", "netns", "exec", veth_pair.server, *cmd], capture_output=True, text=True, timeout=10)
    assert p.returncode == 2 and "vegas" in p.stderr and "cubic" in p.stderr
    wfile = tmp_path / "wl.json"
    wfile.write_text(json.dumps(Workload.single(1).to_dict()))
    p = subprocess.run(client_cmd(certs, wfile, cc="vegas"), capture_output=True, text=True, timeout=10)
    d = json.loads(p.stdout)
    assert p.returncode == 2 and not d["ok"] and "vegas" in d["workload_error"]


def test_refuses_what_it_cannot_do(tmp_path, certs):
    for wl, word in (
        (Workload(objects=(1,), resumption=True), "resumption"),
        (Workload(objects=(1,), resumption=True, zero_rtt=True), "0-RTT"),
        (Workload(objects=(1,), cc_options=({"knob": "1"},)), "knob"),
    ):
        spec = ClientSpec(SERVER, PORT, wl, "cubic", tmp_path, certs, 5.0)
        r = STACK.run(spec, ["false"])
        assert not r.ok and word in r.error and "quinn" in r.error
    # The client refuses them too (exit 2 and a JSON line), should it be asked directly.
    wfile = tmp_path / "wl.json"
    for wl, word in ((Workload(objects=(1,), resumption=True), "resumption"),
                     (Workload(objects=(1,), cc_options=({"knob": "1"},)), "knob")):  # fmt: skip
        wfile.write_text(json.dumps(wl.to_dict()))
        p = subprocess.run(client_cmd(certs, wfile), capture_output=True, text=True, timeout=10)
        assert p.returncode == 2 and word in json.loads(p.stdout)["workload_error"]
    # Bad arguments: still a JSON line.
    p = subprocess.run([*STACK.program("client"), "--host", SERVER], capture_output=True, text=True, timeout=10)
    assert p.returncode == 2 and "arguments" in json.loads(p.stdout)["workload_error"]


def test_timed_out_download_without_server(veth_pair, certs, tmp_path):
    """Nothing listens: the handshake never completes; a failed result within the timeout."""
    t0 = time.monotonic()
    r = fetch(veth_pair, tmp_path, certs, Workload.single(MB), timeout_s=1.5)
    assert time.monotonic() - t0 < 1.5 + 2
    assert not r.ok and r.bytes == 0 and r.extra["returncode"] == 1
    assert "timeout after 1.5 s before the handshake completed" in r.error
    assert r.connections[0].handshake_s is None


def test_timeout_mid_transfer(veth_pair, servers, certs, tmp_path):
    servers(server_spec(tmp_path, certs))
    t0 = time.monotonic()
    r = fetch(veth_pair, tmp_path, certs, Workload.single(50_000 * MB), timeout_s=1.5)
    assert time.monotonic() - t0 < 1.5 + 2
    assert not r.ok and 0 < r.bytes < 50_000 * MB
    assert "timeout after 1.5 s" in r.error and "before the handshake" not in r.error


def test_server_stops_on_sigterm(veth_pair, servers, certs, tmp_path):
    proc = servers(server_spec(tmp_path, certs))
    r = fetch(veth_pair, tmp_path, certs, Workload.single(MB))
    assert r.ok, r.error
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=5) == 0
    assert time.monotonic() - t0 < 1.0
    log = (tmp_path / "server-0.log").read_text()
    assert log.count("\n") == 1 and "quinn 0.11.12" in log and "cc cubic" in log


def test_watchdog_ends_a_stalled_client(veth_pair, servers, certs, tmp_path):
    """The client's main task blocked (DCLAB_QUINN_TEST_STALL): the watchdog prints the line
    and ends the process 5 s after the timeout."""
    servers(server_spec(tmp_path, certs))
    wfile = tmp_path / "wl.json"
    wfile.write_text(json.dumps(Workload.single(MB).to_dict()))
    t0 = time.monotonic()
    p = subprocess.run(["ip", "netns", "exec", veth_pair.client, "env", "DCLAB_QUINN_TEST_STALL=1",
                        *client_cmd(certs, wfile, timeout_s=0.5)], capture_output=True, text=True, timeout=20)  # fmt: skip
    assert 5.5 <= time.monotonic() - t0 < 8
    d = json.loads(p.stdout)
    assert p.returncode == 1 and not d["ok"] and "watchdog" in d["workload_error"]
    assert d["objects"][0]["error"] == "timeout after 0.5 s before the handshake completed"
