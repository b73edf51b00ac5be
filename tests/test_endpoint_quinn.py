"""quinn's own, over a plain veth pair (what holds for quic-go too is in
test_endpoint_binaries.py): every cc, what its client reports of the library and its
sockets, qlog and key log files, a fixed datagram size, a refused cc, the server's stop on
SIGTERM and the watchdog of a stalled client."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest
from endpoint_binaries import MB, check_ok, stack_tests

from dclab.endpoints.base import KEYLOG_FILE, StackError, Workload
from dclab.endpoints.quinn.adapter import BINARY, QuinnStack

STACK = QuinnStack()
pytestmark, bench = stack_tests(STACK)


def test_version_and_ccs():
    assert STACK.version().startswith("quinn 0.11.12 (quinn-proto 0.11.19, h3 0.0.8, h3-quinn 0.0.10, rustls 0.23")
    assert STACK.ccs == ("cubic", "reno", "bbr") and STACK.default_cc == "cubic"


@pytest.mark.parametrize("cc", STACK.ccs)
def test_download_5mb_every_cc(bench, tmp_path, cc):
    proc = bench.serve(cc)
    # The running server really carries the cc (ip netns exec execs the binary in place).
    argv = Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")
    assert argv[0] == str(BINARY).encode() and argv[1] == b"server" and argv[argv.index(b"--cc") + 1] == cc.encode()
    r = bench.fetch(Workload.single(5 * MB), cc=cc)
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


def qlog_events(path: Path) -> set[str]:
    """The event names of a JSON-SEQ qlog file (its header record first)."""
    records = [json.loads(x) for x in path.read_text().split("\x1e") if x.strip()]
    assert records[0]["qlog_format"] == "JSON-SEQ"
    return {rec.get("name") for rec in records[1:]}


def test_qlog_and_keylog_written(bench, tmp_path):
    proc = bench.serve(qlog=True, keylog=True)
    r = bench.fetch(Workload(objects=(300_000, 200_000), connections=2), qlog=True, keylog=True)
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


def test_fixed_datagram_size(bench, tmp_path):
    spec = bench.server_spec(quic_datagram=1252)
    assert STACK.server_command(spec)[-2:] == ["--max-datagram-size", "1252"]
    bench.serve_spec(spec)
    r = bench.fetch(Workload.single(MB), quic_datagram=1252)
    check_ok(r, MB)
    stack = r.extra["stack"]
    assert stack["datagram"] == {"max_datagram_size": 1252, "mtu_discovery": False, "initial": 1252}
    assert stack["connections"][0]["current_mtu"] == 1252
    assert STACK.datagram_error(1100, 1472) is not None and STACK.datagram_error(None, 1200) is None
    assert STACK.datagram_error(1300, 1252) is not None


def test_refused_cc(bench, tmp_path):
    r = bench.fetch(Workload.single(1000), cc="vegas", timeout_s=2.0)
    assert not r.ok and "vegas" in r.error and "cubic" in r.error
    with pytest.raises(StackError, match="vegas"):
        STACK.server_command(bench.server_spec(cc="vegas"))
    # The binaries themselves refuse it with exit 2, the server before binding.
    cmd = STACK.server_command(bench.server_spec())
    cmd[cmd.index("--cc") + 1] = "vegas"
    p = subprocess.run(["ip", "netns", "exec", bench.ns.server, *cmd], capture_output=True, text=True, timeout=10)
    assert p.returncode == 2 and "vegas" in p.stderr and "cubic" in p.stderr
    wfile = tmp_path / "wl.json"
    wfile.write_text(json.dumps(Workload.single(1).to_dict()))
    p = subprocess.run(bench.client_cmd(wfile, cc="vegas"), capture_output=True, text=True, timeout=10)
    d = json.loads(p.stdout)
    assert p.returncode == 2 and not d["ok"] and "vegas" in d["workload_error"]


def test_server_stops_on_sigterm(bench, tmp_path):
    proc = bench.serve()
    r = bench.fetch(Workload.single(MB))
    assert r.ok, r.error
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=5) == 0
    assert time.monotonic() - t0 < 1.0
    log = (tmp_path / "server-0.log").read_text()
    assert log.count("\n") == 1 and "quinn 0.11.12" in log and "cc cubic" in log


def test_watchdog_ends_a_stalled_client(bench, tmp_path):
    """The client's main task blocked (DCLAB_QUINN_TEST_STALL): the watchdog prints the line
    and ends the process 5 s after the timeout."""
    bench.serve()
    wfile = tmp_path / "wl.json"
    wfile.write_text(json.dumps(Workload.single(MB).to_dict()))
    t0 = time.monotonic()
    p = subprocess.run(["ip", "netns", "exec", bench.ns.client, "env", "DCLAB_QUINN_TEST_STALL=1",
                        *bench.client_cmd(wfile, timeout_s=0.5)], capture_output=True, text=True, timeout=20)  # fmt: skip
    assert 5.5 <= time.monotonic() - t0 < 8
    d = json.loads(p.stdout)
    assert p.returncode == 1 and not d["ok"] and "watchdog" in d["workload_error"]
    assert d["objects"][0]["error"] == "timeout after 0.5 s before the handshake completed"
