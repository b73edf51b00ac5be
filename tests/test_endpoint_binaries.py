"""Our compiled stacks (quic-go, quinn, noq) over a plain veth pair, what holds for all:
several connections with parallel streams, sequential streams and assignment, byte ranges
and pre-established connections, workloads they refuse, downloads that time out, and
(slow) the goodput of 100 MB downloads with every controller, which docs/explanation/stacks-go-rust.md quotes.
What is each library's own is in test_endpoint_quicgo.py, test_endpoint_quinn.py and
test_endpoint_noq.py."""

from __future__ import annotations

import json
import statistics
import subprocess
import time

import pytest
from conftest import SERVER
from endpoint_binaries import MB, PORT, Bench, check_ok, sizes

from dclab.endpoints.base import ClientSpec, Workload
from dclab.endpoints.noq.adapter import NoqStack
from dclab.endpoints.quicgo.adapter import QuicGoStack
from dclab.endpoints.quinn.adapter import QuinnStack
from dclab.testbed import netns

# Per stack: how long after a handshake (or a body) its client may take to send the next
# request (quic-go's goroutines are scheduled later than tokio's tasks on a loaded machine).
STACKS = {"quic-go": (QuicGoStack(), 0.25), "quinn": (QuinnStack(), 0.05), "noq": (NoqStack(), 0.05)}
# How each refuses a path beyond the server's limit: HTTP/3's 404, noq's reset stream.
NOT_FOUND = {"quic-go": "HTTP status 404", "quinn": "HTTP status 404",
             "noq": "the server refused the request (1: not GET /<n> [bytes=A-B])"}

pytestmark = pytest.mark.root


@pytest.fixture(params=list(STACKS))
def bench(request, veth_pair, tmp_path, certs):
    stack, _ = STACKS[request.param]
    if stack.missing():
        pytest.skip("; ".join(stack.missing()))
    b = Bench(stack, veth_pair, tmp_path, certs)
    yield b
    b.close()


def slack(b: Bench) -> float:
    return STACKS[b.stack.name][1]


def sockets(r) -> int:
    """How many UDP sockets the client reports (each library's own key)."""
    stack = r.extra["stack"]
    return len(stack["so_rcvbuf"] if "so_rcvbuf" in stack else stack["sockets"])


def test_three_connections_parallel_streams(bench):
    bench.serve()
    # two objects of the same size on one connection: their bodies must not mix
    wl = Workload(objects=(*sizes(17), 200_000), connections=3)
    r = bench.fetch(wl)
    assert r.ok, r.error
    assert r.bytes == wl.total_bytes
    for o in r.objects:
        assert o.ok and o.bytes == o.size == wl.objects[o.index] and o.connection == o.index % 3
        assert 0 < o.request_s <= o.first_byte_s <= o.last_byte_s
    for c in r.connections:
        mine = [o for o in r.objects if o.connection == c.index]
        assert len(mine) == 6 and c.bytes == sum(o.size for o in mine)
        assert 0 < c.handshake_s <= min(o.request_s for o in mine) < c.handshake_s + slack(bench)
        assert max(o.request_s for o in mine) < min(o.last_byte_s for o in mine)  # parallel streams
    assert sockets(r) == 3  # a socket each


def test_sequential_streams_and_assignment(bench):
    bench.serve()
    wl = Workload(objects=sizes(6), connections=2, assignment=(0, 0, 0, 1, 1, 1), streams="sequential")
    r = bench.fetch(wl)
    assert r.ok, r.error
    for c in range(2):
        mine = [o for o in r.objects if o.connection == c]
        assert [o.index for o in mine] == [3 * c, 3 * c + 1, 3 * c + 2]
        for prev, nxt in zip(mine, mine[1:]):
            assert prev.last_byte_s <= nxt.request_s  # the next request after the previous body
            assert nxt.request_s - prev.last_byte_s < slack(bench)


def test_ranged_and_preconnect(bench):
    bench.serve()
    wl = Workload.ranges(3 * MB + 2, 4, preconnect=True)
    r = bench.fetch(wl)
    assert r.ok, r.error
    assert r.bytes == 3 * MB + 2 and [o.bytes for o in r.objects] == list(wl.objects)
    for o in r.objects:
        assert 0 <= o.request_s < slack(bench) and o.first_byte_s > 0  # every request after every handshake
    for c in r.connections:
        assert 0 < c.handshake_s < 1.0  # a handshake's duration, before the request
    # Without preconnect the handshakes are in the times: after the request.
    r2 = bench.fetch(Workload.ranges(MB, 2))
    assert r2.ok, r2.error
    assert all(c.handshake_s <= min(o.request_s for o in r2.objects if o.connection == c.index) for c in r2.connections)


def test_server_answers_bad_paths_and_empty_bodies(bench, tmp_path):
    """What the Workload cannot ask but the server must answer: a path beyond its limit."""
    bench.serve()
    wfile = tmp_path / "wl.json"

    def run(objects: list[int]) -> dict:
        wfile.write_text(json.dumps({"objects": objects}))
        p = subprocess.run(["ip", "netns", "exec", bench.ns.client, *bench.client_cmd(wfile)],
                           capture_output=True, text=True, timeout=30)  # fmt: skip
        return {"rc": p.returncode, **json.loads(p.stdout.strip().splitlines()[-1])}

    d = run([10**12 + 1])  # beyond the server's limit: 404
    assert d["rc"] == 1 and not d["ok"] and NOT_FOUND[bench.stack.name] in d["objects"][0]["error"]
    d = run([0, 1])
    assert d["rc"] == 0 and d["ok"] and [o["bytes"] for o in d["objects"]] == [0, 1]


def test_refuses_what_it_cannot_do(bench, tmp_path):
    name = bench.stack.name
    for wl, word in (
        (Workload(objects=(1,), resumption=True), "resumption"),
        (Workload(objects=(1,), resumption=True, zero_rtt=True), "0-RTT"),
        (Workload(objects=(1,), cc_options=({"knob": "1"},)), "knob"),
    ):
        spec = ClientSpec(SERVER, PORT, wl, bench.stack.default_cc, tmp_path, bench.certs, 5.0)
        r = bench.stack.run(spec, ["false"])
        assert not r.ok and word in r.error and name in r.error
    # The client refuses them too (exit 2 and a JSON line), should it be asked directly.
    wfile = tmp_path / "wl.json"
    for wl, word in ((Workload(objects=(1,), resumption=True), "resumption"),
                     (Workload(objects=(1,), cc_options=({"knob": "1"},)), "cc_options")):  # fmt: skip
        wfile.write_text(json.dumps(wl.to_dict()))
        p = subprocess.run(bench.client_cmd(wfile), capture_output=True, text=True, timeout=10)
        assert p.returncode == 2 and word in json.loads(p.stdout)["workload_error"]
    # Bad arguments: still a JSON line.
    p = subprocess.run([*bench.stack.program("client"), "--host", SERVER], capture_output=True, text=True, timeout=10)
    assert p.returncode == 2 and not json.loads(p.stdout)["ok"]
    assert bench.stack.datagram_error(1100, 1472) is not None and bench.stack.datagram_error(None, 1472) is None


def test_timed_out_download_without_server(bench):
    """Nothing listens: the handshake never completes; a failed result within the timeout."""
    t0 = time.monotonic()
    r = bench.fetch(Workload.single(MB), timeout_s=1.5)
    assert time.monotonic() - t0 < 1.5 + 2
    assert not r.ok and r.bytes == 0 and r.extra["returncode"] == 1
    assert "timeout after 1.5 s before the handshake completed" in r.error
    assert r.connections[0].handshake_s is None


def test_timeout_mid_transfer(bench):
    bench.serve()
    t0 = time.monotonic()
    r = bench.fetch(Workload.single(50_000 * MB), timeout_s=1.5)
    assert time.monotonic() - t0 < 1.5 + 2
    assert not r.ok and 0 < r.bytes < 50_000 * MB
    assert "timeout after 1.5 s" in r.error and "before the handshake" not in r.error


@pytest.mark.slow
def test_download_100mb_every_cc(bench):
    """The figures of docs/explanation/stacks-go-rust.md for the plain veth pair (no dcemu): three 100 MB downloads with
    each congestion control the stack offers, one server per controller; `-s` prints each
    controller's median and every run in Gbit/s."""
    for cc in bench.stack.ccs:
        server = bench.serve(cc)
        runs = []
        for _ in range(3):
            r = bench.fetch(Workload.single(100 * MB), cc=cc, timeout_s=60)
            check_ok(r, 100 * MB)
            runs.append(r.goodput_mbps / 1e3)
        print(f"{bench.stack.name} {cc}, 100 MB over veth: {statistics.median(runs):.2f} Gbit/s "
              f"(runs {', '.join(f'{g:.2f}' for g in runs)})")
        netns.stop_process(server)  # the next controller's server takes the port
