"""The aioquic endpoint: our HTTP/3 server and client over a veth pair between namespaces,
for one download and for workloads (connections, parallel and sequential streams,
resumption, 0-RTT)."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import SERVER, start_in, wait_for

from dclab.endpoints.aioquic.adapter import AioquicStack
from dclab.endpoints.base import (
    ClientSpec,
    ServerSpec,
    StackError,
    TransferResult,
    Workload,
)

PORT = 4433


def _ended(pid: int) -> bool:
    """Whether our child ``pid`` has ended, every thread of it (so its pipes are closed),
    left for its owner to reap (WNOWAIT). Not psutil's "zombie": a process whose main
    thread has exited shows as one while its other threads still run."""
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


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


def fetch(ns, certs, workdir: Path, workload: Workload, cc: str = "reno", timeout_s: float = 30.0, port: int = PORT,
          qlog: bool = False) -> TransferResult:  # fmt: skip
    spec = ClientSpec(
        address=SERVER, port=port, workload=workload, cc=cc, workdir=workdir, certs=certs, timeout_s=timeout_s, qlog=qlog
    )
    return AioquicStack().run(spec, ["ip", "netns", "exec", ns.client])


def download(ns, certs, workdir: Path, size: int, cc: str, timeout_s: float = 30.0, port: int = PORT, qlog: bool = False):
    return fetch(ns, certs, workdir, Workload.single(size), cc, timeout_s, port, qlog)


def test_stack_description(tmp_path):
    st = AioquicStack()
    assert st.missing() == []
    assert (st.name, st.transport, st.ccs) == ("aioquic", "udp", ("reno", "cubic", "bbr"))
    caps = st.capabilities
    assert (caps.max_connections, caps.max_objects, caps.resumption, caps.zero_rtt) == (64, 10_000, True, True)
    assert set(caps.streams) == {"parallel", "sequential"} and caps.cc_options == ()
    assert caps.serve  # one client process for many workloads (Stack.session)
    assert st.version()[0].isdigit()
    from dclab.endpoints.base import Certs

    certs = Certs(cert=tmp_path / "c.pem", key=tmp_path / "k.pem")
    spec = ServerSpec(port=1234, cc="cubic", workdir=tmp_path, certs=certs, address=SERVER, qlog=True)
    cmd = st.server_command(spec)
    assert cmd[:3] == [sys.executable, "-m", "dclab.endpoints.aioquic.h3_server"]
    assert cmd[cmd.index("--cc") + 1] == "cubic" and cmd[cmd.index("--port") + 1] == "1234"
    assert Path(cmd[cmd.index("--qlog-dir") + 1]).parent == tmp_path
    assert "--qlog-dir" not in st.server_command(ServerSpec(1234, "reno", tmp_path, certs, SERVER))


def test_client_refuses_unknown_cc_without_network(tmp_path):
    p = subprocess.run(
        [sys.executable, "-m", "dclab.endpoints.aioquic.h3_client", "--host", SERVER, "--size", "1", "--cc", "vegas",
         "--insecure", "--timeout", "5"],
        check=False, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert p.returncode == 2
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


def test_serve_answers_each_line_and_refuses_a_bad_one_without_network(tmp_path):
    # a bad line is answered and the next still read; a bad cc refuses before any line
    p = subprocess.run(
        [sys.executable, "-m", "dclab.endpoints.aioquic.h3_client", "--host", SERVER, "--serve", "--insecure",
         "--timeout", "5"],
        input='not json\n\n{"objects": [0], "connections": 2}\n', check=False, capture_output=True, text=True,
        timeout=30,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    lines = [json.loads(x) for x in p.stdout.splitlines()]
    assert [(d["ok"], d["served"]) for d in lines] == [(False, 1), (False, 2)]  # the blank line is no workload
    assert "not a workload" in lines[0]["workload_error"] and "connection" in lines[1]["workload_error"]
    p = subprocess.run(
        [sys.executable, "-m", "dclab.endpoints.aioquic.h3_client", "--host", SERVER, "--serve", "--cc", "vegas",
         "--insecure"], input="{}\n", check=False, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert p.returncode == 2 and "vegas" in json.loads(p.stdout.splitlines()[-1])["error"]


@pytest.mark.root
def test_one_client_process_serves_many_workloads(veth_pair, certs, tmp_path):
    spec = ClientSpec(address=SERVER, port=PORT, workload=Workload.single(1), cc="reno", workdir=tmp_path / "cli",
                      certs=certs, timeout_s=20)  # fmt: skip
    # the testbed's wrapper (the client dies with the thread that started it), and each
    # workload from a thread that ends after it, as Testbed.run_clients calls a session
    session = AioquicStack().session(spec, veth_pair.exec(veth_pair.client))
    assert session is not None

    def in_thread(w: Workload):
        out = []
        t = threading.Thread(target=lambda: out.append(session.run(w)))
        t.start()
        t.join()
        return out[0]
    try:
        with server(veth_pair, certs, tmp_path / "srv"):
            rs = [in_thread(w) for w in (Workload.single(300_000), Workload.ranges(500_001, 3, preconnect=True),
                                         Workload.single(12345))]  # fmt: skip
            for r in rs:
                assert r.ok and r.bytes in (300_000, 500_001, 12345), r.error
            assert [r.extra["served"] for r in rs] == [1, 2, 3] and session.started == 1
            assert rs[0].extra["startup_s"] > 0 and rs[1].extra["startup_s"] is None  # one process start
            assert len(rs[1].connections) == 3 and all(c.handshake_s for c in rs[1].connections)
            # a client that dies is replaced at the next workload, which still succeeds
            # Waited on until it can be reaped, not until pgrep misses it: a dying process's
            # command line is gone (its memory released) while its threads and pipes live
            # on, and a workload written then goes to it and fails (seen with a core busy).
            found = subprocess.run(["pgrep", "-f", "h3_client --host"], capture_output=True, text=True)
            pids = [int(p) for p in found.stdout.split()]
            assert len(pids) == 1, found
            os.kill(pids[0], signal.SIGTERM)
            wait_for(lambda: _ended(pids[0]), 10, "the killed client's end")
            r = in_thread(Workload.single(1000))
            assert r.ok and r.extra["served"] == 1 and session.started == 2, r.error
    finally:
        session.close()
    assert session._proc is None
    assert subprocess.run(["ip", "netns", "pids", veth_pair.client], capture_output=True, text=True).stdout == ""


@pytest.mark.root
def test_concurrent_downloads(veth_pair, certs, tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    with server(veth_pair, certs, tmp_path / "srv"), ThreadPoolExecutor(3) as ex:
        rs = list(ex.map(lambda i: download(veth_pair, certs, tmp_path / f"cli{i}", 1_000_000 + i, "reno"), range(3)))
    for i, r in enumerate(rs):
        assert r.ok and r.bytes == 1_000_000 + i, r.error


@pytest.mark.root
def test_server_refuses_unknown_cc(veth_pair, certs, tmp_path):
    spec = ServerSpec(port=PORT, cc="vegas", workdir=tmp_path, certs=certs, address=SERVER)
    with pytest.raises(StackError, match="vegas"):
        AioquicStack().server_command(spec)
    # the server itself refuses it too, when started by hand
    cmd = AioquicStack().server_command(ServerSpec(PORT, "reno", tmp_path, certs, SERVER))
    cmd[cmd.index("--cc") + 1] = "vegas"
    log = tmp_path / "server.log"
    with open(log, "wb") as f:
        proc = start_in(veth_pair.server, cmd, f)
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


# Workloads: several connections and objects, streams, resumption, 0-RTT.


def qlog_traces(qdir: Path) -> list[list[dict]]:
    """The events of each qlog file in ``qdir`` (aioquic writes one file per connection)."""
    traces = []
    for f in sorted(qdir.glob("*.qlog")):
        traces.append(json.loads(f.read_text())["traces"][0]["events"])
    return traces


def stream_frames(events: list[dict], name: str, packet_type: str | None = None) -> list[dict]:
    """STREAM frames of the packets ``name`` (packet_sent or packet_received) on
    client-initiated bidirectional streams (the requests and their responses)."""
    out = []
    for ev in events:
        if not ev.get("name", "").endswith(name):
            continue
        data = ev.get("data", {})
        if packet_type is not None and data.get("header", {}).get("packet_type") != packet_type:
            continue
        out += [f for f in data.get("frames", []) if f.get("frame_type") == "stream" and f["stream_id"] % 4 == 0]
    return out


def sizes(n: int, base: int = 150_000) -> tuple[int, ...]:
    """n different odd sizes, so that a body counted on the wrong object shows."""
    return tuple(base + 7919 * i for i in range(n))


@pytest.mark.root
def test_three_connections_six_objects_each_in_parallel(veth_pair, certs, tmp_path):
    wl = Workload(objects=sizes(18), connections=3)
    with server(veth_pair, certs, tmp_path / "srv"):
        r = fetch(veth_pair, certs, tmp_path / "cli", wl, qlog=True)
    assert r.ok, r.error
    assert r.bytes == wl.total_bytes and len(r.objects) == 18 and len(r.connections) == 3
    for o in r.objects:
        assert o.ok and o.error is None
        assert o.bytes == o.size == wl.objects[o.index]
        assert o.connection == o.index % 3
        assert 0 <= o.request_s <= o.first_byte_s <= o.last_byte_s
    for c in r.connections:
        mine = [o for o in r.objects if o.connection == c.index]
        assert len(mine) == 6
        assert c.handshake_s is not None and 0 < c.handshake_s <= min(o.request_s for o in mine)
        assert c.bytes == sum(o.size for o in mine)
        assert c.resumed is False and c.early_data is False
        # parallel: every request of the connection went out before any of its bodies ended
        assert max(o.request_s for o in mine) < min(o.last_byte_s for o in mine)
    assert r.handshake_s == r.connections[0].handshake_s
    assert r.first_byte_s == min(o.first_byte_s for o in r.objects)
    assert r.last_byte_s == max(o.last_byte_s for o in r.objects)
    # Three real connections, each carrying its six objects (from the client's qlogs, not
    # from its bookkeeping): six request streams each, with at least its bodies' bytes.
    traces = qlog_traces(tmp_path / "cli" / "qlog-client")
    assert len(traces) == 3
    carried = []
    for events in traces:
        got = stream_frames(events, "packet_received")
        assert len({f["stream_id"] for f in got}) == 6
        carried.append(sum(f["length"] for f in got))
    expected = sorted(c.bytes for c in r.connections)
    for have, want in zip(sorted(carried), expected):
        assert want <= have < want + 6 * 200  # the bodies plus HTTP/3 framing


@pytest.mark.root
def test_sequential_streams(veth_pair, certs, tmp_path):
    wl = Workload(objects=sizes(8, 300_000), connections=2, streams="sequential")
    with server(veth_pair, certs, tmp_path / "srv"):
        r = fetch(veth_pair, certs, tmp_path / "cli", wl)
    assert r.ok, r.error
    for c in range(2):
        mine = [o for o in r.objects if o.connection == c]
        assert [o.index for o in mine] == [c, c + 2, c + 4, c + 6]
        assert all(o.ok and o.bytes == o.size for o in mine)
        for prev, nxt in itertools.pairwise(mine):
            assert nxt.request_s >= prev.last_byte_s, (prev, nxt)
            assert nxt.first_byte_s > prev.last_byte_s


@pytest.mark.root
def test_resumption(veth_pair, certs, tmp_path):
    wl = Workload(objects=sizes(4), connections=2, resumption=True)
    with server(veth_pair, certs, tmp_path / "srv"):
        r = fetch(veth_pair, certs, tmp_path / "cli", wl)
    assert r.ok, r.error
    assert r.extra["warmup"]["ticket"] is True
    assert [c.resumed for c in r.connections] == [True, True]
    assert [c.early_data for c in r.connections] == [False, False]  # resumption alone offers no 0-RTT
    assert all(o.ok and o.bytes == o.size for o in r.objects)


@pytest.mark.root
def test_zero_rtt(veth_pair, certs, tmp_path):
    wl = Workload(objects=sizes(4), connections=2, resumption=True, zero_rtt=True)
    with server(veth_pair, certs, tmp_path / "srv"):
        r = fetch(veth_pair, certs, tmp_path / "cli", wl, qlog=True)
    assert r.ok, r.error
    assert [c.resumed for c in r.connections] == [True, True]
    assert [c.early_data for c in r.connections] == [True, True]
    for o in r.objects:
        assert o.ok and o.bytes == o.size
        assert o.request_s < r.connections[o.connection].handshake_s  # requested before the handshake ended
    # The requests really travelled in 0-RTT packets: in each measured connection's qlog
    # (not in the warm-up's), two request streams in 0-RTT packets, ended there.
    zero_rtt = [stream_frames(ev, "packet_sent", "0RTT") for ev in qlog_traces(tmp_path / "cli" / "qlog-client")]
    zero_rtt = [frames for frames in zero_rtt if frames]
    assert len(zero_rtt) == 2
    for frames in zero_rtt:
        assert len({f["stream_id"] for f in frames if f["fin"]}) == 2


@pytest.mark.root
def test_failed_object_fails_the_whole_and_is_named(veth_pair, certs, tmp_path):
    wl = Workload(objects=(10_000, 10**12, 20_000), connections=1)
    with server(veth_pair, certs, tmp_path / "srv"):
        r = fetch(veth_pair, certs, tmp_path / "cli", wl, timeout_s=3)
    assert not r.ok
    assert [o.ok for o in r.objects] == [True, False, True]
    assert r.objects[0].bytes == 10_000 and r.objects[2].bytes == 20_000
    assert 0 < r.objects[1].bytes < 10**12 and "timeout" in r.objects[1].error
    assert "object 1" in r.error and "timeout" in r.error
    assert r.bytes == sum(o.bytes for o in r.objects)
    assert r.goodput_mbps is None and r.completion_s is None


def test_client_workload_argument(tmp_path):
    """--workload takes JSON inline or from a file; a bad one is refused (exit 2) by name."""
    bad = json.dumps({"objects": [1, 2], "connections": 3})
    wfile = tmp_path / "w.json"
    wfile.write_text(json.dumps({"objects": [1], "streams": "interleaved"}))
    for arg, word in ((bad, "connections"), (str(wfile), "streams"), ('{"objekts": [1]}', "objekts")):
        p = subprocess.run(
            [sys.executable, "-m", "dclab.endpoints.aioquic.h3_client", "--host", SERVER, "--workload", arg,
             "--insecure", "--timeout", "5"],
            check=False, capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        assert p.returncode == 2, p.stderr
        d = json.loads(p.stdout.strip().splitlines()[-1])
        assert d["ok"] is False and word in d["error"]


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.parametrize("streams", ["parallel", "sequential"])
def test_declared_maximum(veth_pair, certs, tmp_path, streams):
    """What the capabilities declare really runs: 64 connections, 10,000 objects."""
    caps = AioquicStack().capabilities
    wl = Workload(objects=(100,) * caps.max_objects, connections=caps.max_connections, streams=streams)
    with server(veth_pair, certs, tmp_path / "srv"):
        r = fetch(veth_pair, certs, tmp_path / "cli", wl, timeout_s=60)
    assert r.ok, r.error
    assert r.bytes == wl.total_bytes and all(c.bytes == 100 * len(wl.objects_of(c.index)) for c in r.connections)


# Byte ranges (Workload.ranged) and pre-established connections (Workload.preconnect).


def test_client_checks_status_and_content_range():
    """Without network: a ranged object is ok only with 206, its bytes and a matching
    content-range (when there is one)."""
    from dclab.endpoints.aioquic.h3_client import Obj

    def obj(status: bytes, got: int = 5, content_range: bytes | None = b"bytes 10-14/30") -> Obj:
        o = Obj(1, 5, 1, path_size=30, byte_range=(10, 14))
        o.status, o.bytes, o.done, o.content_range = status, got, True, content_range
        return o

    assert obj(b"206").range_header() == b"bytes=10-14"
    assert obj(b"206").result().ok and obj(b"206", content_range=None).result().ok
    r = obj(b"200").result()
    assert not r.ok and r.error == "HTTP status 200 (wanted 206)"
    r = obj(b"206", content_range=b"bytes 0-4/30").result()
    assert not r.ok and "content-range 'bytes 0-4/30'" in r.error and "bytes 10-14/30" in r.error
    r = obj(b"206", got=4).result()
    assert not r.ok and r.error == "got 4 of 5 bytes"
    plain = Obj(0, 5, 0)
    plain.status, plain.bytes, plain.done = b"200", 5, True
    assert plain.range_header() is None and plain.result().ok


# A bare HTTP/3 client for the server tests: each request's headers and body (hex).
RAW_CLIENT = r"""
import asyncio, json, sys
from aioquic.asyncio.client import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration


class P(QuicConnectionProtocol):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.h3, self.got, self.waiting = H3Connection(self._quic), {}, {}

    def quic_event_received(self, event):
        for ev in self.h3.handle_event(event):
            if not isinstance(ev, (HeadersReceived, DataReceived)):
                continue
            r = self.got.setdefault(ev.stream_id, {"headers": {}, "body": b""})
            if isinstance(ev, HeadersReceived):
                r["headers"].update({k.decode(): v.decode() for k, v in ev.headers})
            else:
                r["body"] += ev.data
            if ev.stream_ended:
                self.waiting.pop(ev.stream_id).set_result(r)

    async def get(self, path, headers):
        sid = self._quic.get_next_available_stream_id()
        self.waiting[sid] = fut = asyncio.get_running_loop().create_future()
        hs = [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", b"dclab"), (b":path", path.encode())]
        self.h3.send_headers(sid, hs + [(k.encode(), v.encode()) for k, v in headers], end_stream=True)
        self.transmit()
        return await asyncio.wait_for(fut, 10)


async def main(host, port, ca, requests):
    config = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, server_name=host)
    config.load_verify_locations(cafile=ca)
    async with connect(host, port, configuration=config, create_protocol=P) as p:
        out = []
        for path, headers in requests:
            r = await p.get(path, headers)
            out.append({"headers": r["headers"], "body": r["body"].hex()})
    print(json.dumps(out))


asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4])))
"""


def raw_get(ns, certs, tmp_path: Path, requests: list[tuple[str, list[tuple[str, str]]]]) -> list[dict]:
    script = tmp_path / "raw_client.py"
    script.write_text(RAW_CLIENT)
    p = subprocess.run(
        ["ip", "netns", "exec", ns.client, sys.executable, str(script), SERVER, str(PORT), str(certs.cert),
         json.dumps(requests)],
        check=False, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def body_bytes(first: int, last: int) -> bytes:
    """Bytes first..last of a generated body (byte k is k % 256)."""
    return bytes(k % 256 for k in range(first, last + 1))


@pytest.mark.root
def test_server_ranges(veth_pair, certs, tmp_path):
    ok = [
        ("bytes=1000-1999", 5000, 1000, 1999),
        ("bytes=4990-", 5000, 4990, 4999),
        ("bytes=-7", 5000, 4993, 4999),
        ("bytes=4000-9999", 5000, 4000, 4999),  # a last position beyond the body is cut
        ("bytes=100001-250000", 300_000, 100_001, 250_000),  # several DATA frames, unaligned start
        ("bytes=0-0", 1, 0, 0),
    ]
    bad = [("bytes=5000-5001", 5000), ("bytes=9-3", 5000), ("bytes=0-1,5-6", 5000), ("items=0-1", 5000),
           ("bytes=x-1", 5000), ("bytes=0-0", 0)]  # fmt: skip
    requests = [(f"/{n}", [("range", v)]) for v, n, *_ in ok] + [(f"/{n}", [("range", v)]) for v, n in bad]
    requests.append(("/5000", []))
    with server(veth_pair, certs, tmp_path / "srv"):
        got = raw_get(veth_pair, certs, tmp_path, requests)
    assert len(got) == len(requests)
    for (value, n, first, last), r in zip(ok, got[: len(ok)], strict=True):
        h, body = r["headers"], bytes.fromhex(r["body"])
        assert h[":status"] == "206", (value, h)
        assert h["content-range"] == f"bytes {first}-{last}/{n}", value
        assert int(h["content-length"]) == last - first + 1 == len(body), value
        assert body == body_bytes(first, last), value
    for (value, n), r in zip(bad, got[len(ok) : -1], strict=True):
        h = r["headers"]
        assert h[":status"] == "416", (value, h)
        assert h["content-range"] == f"bytes */{n}", value
        assert bytes.fromhex(r["body"]).startswith(b"range: "), value
    # no range header: unchanged, the whole body with 200
    h, body = got[-1]["headers"], bytes.fromhex(got[-1]["body"])
    assert h[":status"] == "200" and "content-range" not in h and body == body_bytes(0, 4999)


@pytest.mark.root
def test_ranged_download(veth_pair, certs, tmp_path):
    size = 3_000_001
    wl = Workload.ranges(size, 3)
    with server(veth_pair, certs, tmp_path / "srv"):
        r = fetch(veth_pair, certs, tmp_path / "cli", wl)
    assert r.ok, r.error
    assert r.bytes == size == sum(o.bytes for o in r.objects)
    assert [o.size for o in r.objects] == [1_000_001, 1_000_000, 1_000_000]
    for o in r.objects:
        assert o.ok and o.error is None and o.bytes == o.size and o.connection == o.index
        assert 0 <= o.request_s <= o.first_byte_s <= o.last_byte_s
    assert [c.bytes for c in r.connections] == [o.size for o in r.objects]


@pytest.mark.root
def test_ranged_download_sequential_on_one_connection(veth_pair, certs, tmp_path):
    wl = Workload(objects=(70_001, 1, 65_536, 200_000), streams="sequential", ranged=True)
    with server(veth_pair, certs, tmp_path / "srv"):
        r = fetch(veth_pair, certs, tmp_path / "cli", wl)
    assert r.ok, r.error
    assert [o.bytes for o in r.objects] == list(wl.objects) and r.bytes == wl.total_bytes


def finished_and_first_request(events: list[dict]) -> tuple[float | None, float | None]:
    """Wall-clock times (ms, aioquic's qlog) in a client qlog of the client's Finished (the
    first Handshake packet it sends with a CRYPTO frame: its handshake completed) and of
    the first packet it sends with a request stream's frame."""
    finished = request = None
    for ev in events:
        if not ev.get("name", "").endswith("packet_sent"):
            continue
        data = ev.get("data", {})
        frames = data.get("frames", [])
        if finished is None and data.get("header", {}).get("packet_type") == "handshake" and any(
            f.get("frame_type") == "crypto" for f in frames
        ):
            finished = ev["time"]
        if request is None and any(f.get("frame_type") == "stream" and f["stream_id"] % 4 == 0 for f in frames):
            request = ev["time"]
    return finished, request


@pytest.mark.root
def test_preconnect(veth_pair, certs, tmp_path):
    wl = Workload.ranges(3_000_001, 3, preconnect=True)
    t = time.time()
    with server(veth_pair, certs, tmp_path / "srv"):
        r = fetch(veth_pair, certs, tmp_path / "cli", wl, qlog=True)
    assert r.ok, r.error
    assert r.bytes == 3_000_001
    assert t < r.request_wall < time.time()
    for c in r.connections:
        assert c.handshake_s is not None and c.handshake_s > 0  # a duration, before the request
    assert r.handshake_s == r.connections[0].handshake_s
    for o in r.objects:
        assert o.ok and o.request_s == 0.0  # all requests at the measured start
        assert 0 < o.first_byte_s <= o.last_byte_s
    assert r.completion_s == max(o.last_byte_s for o in r.objects)
    # From the client's qlogs: every handshake completed before request_wall, and no
    # request went out before it.
    traces = qlog_traces(tmp_path / "cli" / "qlog-client")
    assert len(traces) == 3
    times = [finished_and_first_request(events) for events in traces]
    assert all(f is not None and q is not None for f, q in times), times
    assert max(f for f, _ in times) <= r.request_wall * 1000 <= min(q for _, q in times), (r.request_wall, times)


@pytest.mark.root
def test_preconnect_without_a_handshake_fails_every_object(veth_pair, certs, tmp_path):
    wl = Workload(objects=(1000, 2000), connections=2, preconnect=True)
    t = time.monotonic()
    r = fetch(veth_pair, certs, tmp_path, wl, timeout_s=3, port=4499)  # nothing listens there
    assert time.monotonic() - t < 3 + 5
    assert not r.ok and r.bytes == 0
    for o in r.objects:
        assert not o.ok and o.request_s is None
        assert o.error.startswith("preconnect: timeout after 3 s before the handshake completed"), o.error
    assert all(c.handshake_s is None for c in r.connections)


@pytest.mark.root
def test_preconnect_failed_handshake_is_named(veth_pair, certs, tmp_path):
    """A client that does not trust the server's certificate: the handshake fails (TLS
    alert) on both connections and their objects fail saying so, well before the timeout;
    a client that trusts it runs the same workload."""
    from dclab.testbed.certs import make_certs

    other = make_certs(tmp_path / "other-certs", SERVER)  # a certificate the server does not have
    wl = Workload(objects=(1000, 2000), connections=2, preconnect=True)
    with server(veth_pair, certs, tmp_path / "srv"):
        t = time.monotonic()
        r = fetch(veth_pair, other, tmp_path / "cli", wl, timeout_s=20)
        assert time.monotonic() - t < 15, "failed at the handshake, not at the timeout"
        good = fetch(veth_pair, certs, tmp_path / "cli2", wl)
    assert not r.ok and r.bytes == 0
    for o in r.objects:
        assert o.error.startswith("preconnect: the handshake failed: connection closed"), o.error
    assert good.ok, good.error
