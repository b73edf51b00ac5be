"""noq's own, over a plain veth pair (what holds for quic-go and quinn too is in
test_endpoint_binaries.py): every cc, qlog and key log files, a refused cc, and multipath:
a second client address on its own rate-limited leg, both paths carrying the download
(proved by the client's per-path counters, the kernel's per-leg queues and the qlog), a
backup path carrying none of it."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import time
from pathlib import Path

import pytest
from conftest import CLIENT, SERVER
from endpoint_binaries import MB, PORT, check_ok, stack_tests

from dclab.endpoints.base import KEYLOG_FILE, Certs, ClientSpec, StackError, Workload
from dclab.endpoints.noq.adapter import BINARY, NoqStack
from dclab.testbed.netns import sh

STACK = NoqStack()
pytestmark, bench = stack_tests(STACK)

EXTRA = "198.18.0.3"  # the client's second address, on a leg of its own
LEG_MBIT = 100


def test_version_ccs_and_capabilities(tmp_path):
    assert STACK.version().startswith("noq 1.4.0 (noq-proto 1.4.0, noq-udp 1.4.0, rustls 0.23")
    assert STACK.ccs == ("cubic", "reno", "bbr") and STACK.default_cc == "cubic"
    assert STACK.capabilities.multipath and STACK.capabilities.ranges and STACK.capabilities.preconnect
    spec = ClientSpec(SERVER, PORT, Workload.single(1), "cubic", tmp_path, Certs(tmp_path / "c", tmp_path / "k"), 5.0)
    assert "--paths" not in STACK.client_command(spec, tmp_path / "wl.json")
    cmd = STACK.client_command(dataclasses.replace(spec, paths=(CLIENT, EXTRA)), tmp_path / "wl.json")
    assert cmd[-2:] == ["--paths", f"{CLIENT},{EXTRA}"]


@pytest.mark.parametrize("cc", STACK.ccs)
def test_download_5mb_every_cc(bench, tmp_path, cc):
    proc = bench.serve(cc)
    # The running server really carries the cc (ip netns exec execs the binary in place).
    argv = Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")
    assert argv[0] == str(BINARY).encode() and argv[1] == b"server" and argv[argv.index(b"--cc") + 1] == cc.encode()
    r = bench.fetch(Workload.single(5 * MB), cc=cc)
    check_ok(r, 5 * MB)
    print(f"noq {cc}: 5 MB at {r.goodput_mbps:.0f} Mbit/s")
    stack = r.extra["stack"]
    assert stack["library"] == "noq 1.4.0" and stack["cc"] == cc and stack["application"].startswith("HTTP/0.9")
    (sock,) = stack["sockets"]
    assert sock["rcvbuf"] == sock["rcvbuf_before"] and stack["noq_changed_rcvbuf"] is False
    # Without paths: plain single-path QUIC, one path from the kernel's address.
    assert stack["multipath"]["enabled"] is False and stack["multipath"]["paths"] == []
    (conn,) = stack["connections"]
    (path,) = conn["paths"]
    assert conn["multipath"] is False and path["id"] == 0 and path["state"] == "open"
    assert path["local"].startswith(f"{CLIENT}:") and path["remote"] == f"{SERVER}:{PORT}"
    # One snapshot (the program reads again until nothing arrived while it read), so the
    # one path's counters are the connection's.
    assert conn["consistent"] is True
    assert path["udp_rx_bytes"] == conn["udp_rx_bytes"] > 5 * MB and 1200 <= path["current_mtu"] <= 1452
    assert r.extra["startup_s"] is not None and 0 < r.extra["startup_s"] < 5 and r.extra["cpu_s"] > 0


def qlog_records(path: Path) -> list[dict]:
    """The records of a JSON-SEQ qlog file, its header first."""
    records = [json.loads(x) for x in path.read_text().split("\x1e") if x.strip()]
    assert records[0]["serialization_format"] == "JSON-SEQ"
    return records


def events(path: Path) -> set[str]:
    return {rec.get("name") for rec in qlog_records(path)[1:]}


def test_qlog_and_keylog_written(bench, tmp_path):
    proc = bench.serve(qlog=True, keylog=True)
    r = bench.fetch(Workload(objects=(300_000, 200_000), connections=2), qlog=True, keylog=True)
    assert r.ok, r.error
    cli = sorted((tmp_path / "cli" / "qlog-client").iterdir())
    assert [p.name for p in cli] == ["client-conn0.sqlog", "client-conn1.sqlog"]
    for p in cli:
        assert {"quic:packet_received", "quic:packet_sent", "quic:recovery_metrics_updated"} <= events(p)
    for end in ("cli", "srv"):
        lines = (tmp_path / end / KEYLOG_FILE).read_text().splitlines()
        labels = [line.split()[0] for line in lines]
        assert {"CLIENT_HANDSHAKE_TRAFFIC_SECRET", "SERVER_HANDSHAKE_TRAFFIC_SECRET", "CLIENT_TRAFFIC_SECRET_0",
                "SERVER_TRAFFIC_SECRET_0"} <= set(labels)  # fmt: skip
        assert labels.count("CLIENT_TRAFFIC_SECRET_0") == 2  # two connections
        assert all(len(line.split()) == 3 and len(line.split()[1]) == 64 for line in lines)
    # The server writes one per connection, named by the original destination connection
    # id, complete once it stopped.
    proc.terminate()
    assert proc.wait(timeout=5) == 0
    srv = list((tmp_path / "srv" / "qlog-server").iterdir())
    assert len(srv) == 2 and all(p.suffix == ".sqlog" for p in srv)
    for p in srv:
        assert {"quic:packet_received", "quic:packet_sent"} <= events(p)


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
    for cc, extra, word in (("vegas", [], "vegas"), ("cubic", ["--paths", f"{CLIENT},{CLIENT}"], "given twice"),
                            ("cubic", ["--paths", f"{CLIENT},{EXTRA}", "--max-paths", "1"], "--max-paths"),
                            ("cubic", ["--path-status", "standby"], "available or backup")):  # fmt: skip
        p = subprocess.run([*bench.client_cmd(wfile, cc=cc), *extra], capture_output=True, text=True, timeout=10)
        d = json.loads(p.stdout)
        assert p.returncode == 2 and not d["ok"] and word in d["workload_error"], extra


def two_legs(ns) -> None:
    """EXTRA on the client's device, routed back from the server, and each client address
    behind a leg of its own towards the client: LEG_MBIT with a short queue (tbf, which
    splits GSO batches into packets), as dcemu's legs, so that a leg overflowing drops
    rather than holding the server's socket (which a long queue would, and noq's scheduler
    keeps filling path 0 while its window allows)."""
    srv, cli = f"dclab-{ns.tag}a", f"dclab-{ns.tag}b"
    sh("ip", "-n", ns.client, "addr", "add", f"{EXTRA}/32", "dev", cli)
    sh("ip", "-n", ns.server, "route", "add", f"{EXTRA}/32", "dev", srv)
    tc = ["ip", "netns", "exec", ns.server, "tc"]
    sh(*tc, "qdisc", "add", "dev", srv, "root", "handle", "1:", "htb", "default", "1", "r2q", "1000")
    for leg, addr in ((1, None), (2, CLIENT), (3, EXTRA)):
        sh(*tc, "class", "add", "dev", srv, "parent", "1:", "classid", f"1:{leg}", "htb", "rate", "10gbit")
        if addr is not None:
            sh(*tc, "qdisc", "add", "dev", srv, "parent", f"1:{leg}", "handle", f"{leg}0:", "tbf",
               "rate", f"{LEG_MBIT}mbit", "burst", "15k", "limit", "40k")  # fmt: skip
            sh(*tc, "filter", "add", "dev", srv, "parent", "1:", "protocol", "ip", "prio", "1", "u32",
               "match", "ip", "dst", f"{addr}/32", "flowid", f"1:{leg}")  # fmt: skip


def leg_bytes(ns) -> dict[str, int]:
    """What the kernel sent towards each client address (each leg's tbf)."""
    srv = f"dclab-{ns.tag}a"
    out = sh("ip", "netns", "exec", ns.server, "tc", "-j", "-s", "qdisc", "show", "dev", srv).stdout
    by_handle = {q["handle"]: q["bytes"] for q in json.loads(out)}
    return {CLIENT: by_handle["20:"], EXTRA: by_handle["30:"]}


def test_multipath_download_crosses_both_legs(bench, tmp_path):
    two_legs(bench.ns)
    bench.serve()
    size = 10 * MB
    r = bench.fetch(Workload.single(size), paths=(CLIENT, EXTRA), qlog=True)
    check_ok(r, size)
    stack = r.extra["stack"]
    assert stack["multipath"] == {"paths": [CLIENT, EXTRA], "enabled": True, "max_paths": 8,
                                  "path_status": "available", "path_idle_timeout_s": None,
                                  "path_keep_alive_s": None}  # fmt: skip
    (conn,) = stack["connections"]
    assert conn["multipath"] is True
    p0, p1 = conn["paths"]
    port = stack["sockets"][0]["bound"].rsplit(":", 1)[1]
    assert (p0["id"], p0["local"], p0["local_ip"]) == (0, f"{CLIENT}:{port}", CLIENT)
    assert (p1["id"], p1["local"], p1["local_ip"]) == (1, f"{EXTRA}:{port}", EXTRA)
    for p in (p0, p1):
        assert p["remote"] == f"{SERVER}:{PORT}" and p["state"] == "open" and p["error"] is None
        assert p["status"] == "available" and p["rtt_ms"] > 0 and p["cwnd"] > 0
    assert 0 < p1["established_s"] < 1.0
    rx = [p0["udp_rx_bytes"], p1["udp_rx_bytes"]]
    print(f"noq multipath, 10 MB over two {LEG_MBIT} Mbit/s legs: {r.goodput_mbps:.0f} Mbit/s, "
          f"path 0 {rx[0]} bytes, path 1 {rx[1]} bytes received; kernel {leg_bytes(bench.ns)}")
    assert conn["consistent"] is True and sum(rx) == conn["udp_rx_bytes"]
    # Each path a real share of the download: noq's scheduler fills path 0 while its window
    # allows, the rest goes to path 1 once path 0's leg drops and its window shrinks.
    assert all(b > 0.25 * size for b in rx), rx
    assert r.goodput_mbps > 1.2 * LEG_MBIT  # more than one leg carries
    # The kernel saw it too: each leg's queue passed a share (datagrams with IP and UDP headers).
    legs = leg_bytes(bench.ns)
    assert all(legs[a] > 0.25 * size for a in (CLIENT, EXTRA)), legs
    # And the client's qlog: 1-RTT packets received on both path ids.
    recs = qlog_records(tmp_path / "cli" / "qlog-client" / "client-conn0.sqlog")
    got = {rec["data"]["header"].get("path_id") for rec in recs[1:] if rec.get("name") == "quic:packet_received"}
    assert {0, 1} <= got
    # The server's line for the connection, once closed: both paths sent.
    log = tmp_path / "server-0.log"
    deadline = time.monotonic() + 5
    while "closed" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "path 0 sent" in log.read_text() and "path 1 sent" in log.read_text()


def test_multipath_backup_path_carries_no_download(bench, tmp_path):
    """A path opened as backup (the client's --path-status, which the server takes over)
    carries data only while no available path is left: here nothing but what the server
    sent before it took the status over. noq schedules by each end's own status only, and
    the server learns the client's from an event, handled by a task of its own: until then
    the new path is available to it. In 50 runs (30 with a core busy) path 1 received
    6.8-51.6 kB of the 5 MB; a path that stayed available gets about half, as it did once
    in a busy round when the server subscribed to its path events only after the handshake
    (now from the start: 16 runs, 8 of them with a core busy, 6.8-21.9 kB)."""
    two_legs(bench.ns)
    bench.serve()
    wfile = tmp_path / "wl.json"
    wfile.write_text(json.dumps(Workload.single(5 * MB).to_dict()))
    cmd = [*bench.client_cmd(wfile, timeout_s=20), "--paths", f"{CLIENT},{EXTRA}", "--path-status", "backup"]
    p = subprocess.run(["ip", "netns", "exec", bench.ns.client, *cmd], capture_output=True, text=True, timeout=30)
    d = json.loads(p.stdout)
    assert p.returncode == 0 and d["ok"], d["error"]
    p0, p1 = d["stack"]["connections"][0]["paths"]
    print(f"noq backup path: path 1 received {p1['udp_rx_bytes']} bytes, path 0 {p0['udp_rx_bytes']}")
    assert (p0["status"], p1["status"], p1["state"]) == ("available", "backup", "open")
    assert p0["udp_rx_bytes"] > 5 * MB and p1["udp_rx_bytes"] < 0.02 * 5 * MB, (p0, p1)
