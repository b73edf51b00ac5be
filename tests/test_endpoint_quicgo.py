"""quic-go's own, over a plain veth pair (what holds for quinn too is in
test_endpoint_binaries.py): its one cc, what its client reports of the library and its
sockets, qlog and key log files, a refused cc and a fixed datagram size."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import SERVER
from endpoint_binaries import MB, check_ok, stack_tests

from dclab.endpoints.base import KEYLOG_FILE, StackError, Workload
from dclab.endpoints.quicgo.adapter import BINARY, QuicGoStack

STACK = QuicGoStack()
pytestmark, bench = stack_tests(STACK)


def test_version_and_ccs():
    assert STACK.version() == "quic-go v0.65.0"
    assert STACK.ccs == ("reno",) and STACK.default_cc == "reno"


@pytest.mark.parametrize("cc", STACK.ccs)
def test_download_5mb_every_cc(bench, tmp_path, cc):
    spec = bench.server_spec(cc)
    proc = bench.serve_spec(spec)
    # The running server really carries the cc (ip netns exec execs the binary in place).
    argv = Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")
    assert argv[0] == str(BINARY).encode() and argv[1] == b"server" and argv[argv.index(b"--cc") + 1] == cc.encode()
    r = bench.fetch(Workload.single(5 * MB), cc=cc)
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


def test_qlog_and_keylog_written(bench, tmp_path):
    bench.serve(qlog=True, keylog=True)
    r = bench.fetch(Workload(objects=(300_000, 200_000), connections=2), qlog=True, keylog=True)
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


def test_refused_cc(bench, tmp_path):
    r = bench.fetch(Workload.single(1000), cc="cubic", timeout_s=2.0)
    assert not r.ok and "cubic" in r.error and "reno" in r.error
    with pytest.raises(StackError, match="cubic"):
        STACK.server_command(bench.server_spec(cc="cubic"))
    # The binaries themselves refuse it with exit 2, the server before binding.
    spec = bench.server_spec()
    cmd = STACK.server_command(spec)
    cmd[cmd.index("--cc") + 1] = "cubic"
    p = subprocess.run(["ip", "netns", "exec", bench.ns.server, *cmd], capture_output=True, text=True, timeout=10)
    assert p.returncode == 2 and "cubic" in p.stderr and "reno" in p.stderr
    wl = tmp_path / "wl.json"
    wl.write_text(json.dumps(Workload.single(1).to_dict()))
    p = subprocess.run([*STACK.program("client"), "--host", SERVER, "--workload", str(wl), "--cc", "bbr", "--ca", str(bench.certs.cert)],
                       capture_output=True, text=True, timeout=10)  # fmt: skip
    d = json.loads(p.stdout)
    assert p.returncode == 2 and not d["ok"] and "bbr" in d["workload_error"]


def test_fixed_datagram_size(bench):
    spec = bench.server_spec(quic_datagram=1252)
    assert STACK.server_command(spec)[-2:] == ["--max-datagram-size", "1252"]
    bench.serve_spec(spec)
    r = bench.fetch(Workload.single(MB), quic_datagram=1252, timeout_s=10)
    check_ok(r, MB)
    assert r.extra["stack"]["max_datagram_size"] == 1252 and r.extra["stack"]["path_mtu_discovery"] is False
