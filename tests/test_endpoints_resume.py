"""Session resumption, 0-RTT and client start-up (``extra["startup_s"]``) of the stacks
over a plain veth pair: ngtcp2 (gnutls' handshake log as evidence), kernel TCP (curl's
trace and the namespace's TCP Fast Open counters) and aioquic's start-up; plus the
parsing of that evidence."""

from __future__ import annotations

import subprocess
import time

import pytest
from conftest import SERVER, ServerPool
from measured import check_bound

from dclab.analysis.qlog_flight import packets, read_traces
from dclab.endpoints.aioquic.adapter import AioquicStack
from dclab.endpoints.base import ClientSpec, ServerSpec, StackError, TransferResult, Workload
from dclab.endpoints.ngtcp2.adapter import Ngtcp2Stack
from dclab.endpoints.ngtcp2.gnutls_log import Handshake
from dclab.endpoints.tcp.adapter import TcpStack, TlsSeen, _Reports, _tfo_counters
from dclab.testbed.hostconfig import read_sysctl, write_sysctl

NGTCP2 = Ngtcp2Stack()
TCP = TcpStack()
PORT = 4433
KB = 1000

# gnutls 3.7.9 (GNUTLS_DEBUG_LEVEL=4) lines of gtlsclient runs, trimmed: a full handshake,
# a resumption with 0-RTT, and one resumed with --disable-early-data (the server still
# answers early_data in its EncryptedExtensions, but nothing was sent in 0-RTT).
FULL = """\
gnutls[4]: EXT[0x5]: Sending extension Key Share/51 (107 bytes)
gnutls[4]: HSK[0x5]: CLIENT HELLO was queued [380 bytes]
gnutls[4]: HSK[0x5]: SERVER HELLO (2) was received. Length 90[90], frag offset 0, frag length: 90, sequence: 0
gnutls[4]: EXT[0x5]: Parsing extension 'Key Share/51' (36 bytes)
gnutls[4]: HSK[0x5]: ENCRYPTED EXTENSIONS (8) was received. Length 139[175], frag offset 0, frag length: 139, sequence: 0
gnutls[4]: EXT[0x5]: Parsing extension 'ALPN/16' (5 bytes)
gnutls[4]: HSK[0x5]: CERTIFICATE (11) was received. Length 413[413], frag offset 0, frag length: 413, sequence: 0
gnutls[4]: HSK[0x5]: FINISHED (20) was received. Length 32[32], frag offset 0, frag length: 32, sequence: 0
gnutls[4]: HSK[0x5]: FINISHED was queued [36 bytes]
"""
ZERO_RTT = """\
gnutls[4]: EXT[0x5]: Sending extension Early Data/42 (0 bytes)
gnutls[4]: EXT[0x5]: Sending extension Pre Shared Key/41 (257 bytes)
gnutls[4]: HSK[0x5]: CLIENT HELLO was queued [636 bytes]
gnutls[4]: HSK[0x5]: SERVER HELLO (2) was received. Length 92[92], frag offset 0, frag length: 92, sequence: 0
gnutls[4]: EXT[0x5]: Parsing extension 'Pre Shared Key/41' (2 bytes)
gnutls[4]: EXT[0x5]: selected PSK-resumption mode
gnutls[4]: HSK[0x5]: ENCRYPTED EXTENSIONS (8) was received. Length 139[175], frag offset 0, frag length: 139, sequence: 0
gnutls[4]: EXT[0x5]: Parsing extension 'Early Data/42' (0 bytes)
gnutls[4]: HSK[0x5]: FINISHED (20) was received. Length 32[32], frag offset 0, frag length: 32, sequence: 0
gnutls[4]: HSK[0x5]: FINISHED was queued [36 bytes]
"""


def test_handshake_evidence_full():
    h = Handshake.parse(FULL.splitlines())
    assert h.logged and h.hello_at == 1.0 and h.finished_at == 8.0
    assert h.resumed() is False and h.early_data(True) is False and h.early_data(False) is False


def test_handshake_evidence_zero_rtt():
    h = Handshake.parse(ZERO_RTT.splitlines())
    assert h.resumed() is True and h.early_data(True) is True
    # not asked for (--disable-early-data): nothing went in 0-RTT, whatever the server says
    assert h.early_data(False) is False


def test_hello_read_late_only_when_a_later_mark_came_first():
    h = Handshake.parse(FULL.splitlines())  # hello noted at 1.0, Finished at 8.0
    assert not h.hello_read_late([9.0], [8.5], zero_rtt=False)
    assert h.hello_read_late([9.0], [1.0], zero_rtt=False)  # a request no later than the hello
    assert h.hello_read_late([0.5], [], zero_rtt=False)  # a body byte before the hello
    assert not h.hello_read_late([None], [], zero_rtt=False)
    late_finished = Handshake(hello_at=5.0, finished_at=4.0)
    assert late_finished.hello_read_late([], [], zero_rtt=False)
    # with 0-RTT a request may come before the hello line: no sign of lateness
    z = Handshake.parse(ZERO_RTT.splitlines())
    assert z.early_data(True) and z.hello_at is not None
    assert not z.hello_read_late([z.hello_at + 5], [z.hello_at - 1], zero_rtt=True)
    assert z.hello_read_late([z.hello_at + 5], [z.hello_at - 1], zero_rtt=False)
    assert not Handshake().hello_read_late([0.0], [0.0], zero_rtt=False)  # no log: nothing to tell


def test_handshake_evidence_needs_every_part():
    lines = ZERO_RTT.splitlines()
    no_psk = [ln for ln in lines if "selected PSK" not in ln]  # the server did a full handshake
    assert Handshake.parse(no_psk).resumed() is False and Handshake.parse(no_psk).early_data(True) is False
    rejected = [ln for ln in lines if "Parsing extension 'Early Data" not in ln]  # resumed, 0-RTT rejected
    assert Handshake.parse(rejected).resumed() is True and Handshake.parse(rejected).early_data(True) is False
    no_tp = [*lines, "Could not read transport parameters from /x/conn-0.tp"]
    assert Handshake.parse(no_tp).early_data(True) is False
    # no log at all: nothing can be told
    silent = Handshake.parse(["some other output"])
    assert not silent.logged and silent.resumed() is None and silent.early_data(True) is None


ngtcp2_ok = pytest.mark.skipif(bool(NGTCP2.missing()), reason="; ".join(NGTCP2.missing()) or "ok")


@pytest.fixture
def ngtcp2_server(veth_pair, tmp_path, certs):
    pool = ServerPool(veth_pair.server, "udp", tmp_path)
    spec = ServerSpec(port=PORT, cc="cubic", workdir=tmp_path / "srv", certs=certs, address=SERVER)
    pool.start(NGTCP2.server_command(spec), PORT)
    yield spec
    pool.close()


def ngtcp2_fetch(ns, tmp_path, certs, wl: Workload, timeout_s: float = 20.0, qlog: bool = False) -> TransferResult:
    spec = ClientSpec(address=SERVER, port=PORT, workload=wl, cc="cubic", workdir=tmp_path / "cli", certs=certs,
                      timeout_s=timeout_s, qlog=qlog)  # fmt: skip
    return NGTCP2.run(spec, ["ip", "netns", "exec", ns.client])


def check_startup(r: TransferResult) -> None:
    s = r.extra["startup_s"]
    assert s is not None and 0.0005 < s < 2.0, s  # a process start takes at least half a ms
    assert all(x is not None and 0.0005 < x < 2.0 for x in r.extra["startup_s_connections"])


@pytest.mark.root
@ngtcp2_ok
def test_ngtcp2_zero_rtt(veth_pair, ngtcp2_server, certs, tmp_path):
    wl = Workload(objects=(64 * KB, 100 * KB), connections=2, resumption=True, zero_rtt=True)
    r = ngtcp2_fetch(veth_pair, tmp_path, certs, wl, qlog=True)
    assert r.ok, r.error
    assert r.extra["warmup"]["ticket"] and r.extra["warmup"]["transport_params"]
    for c in r.connections:  # gnutls' log: the PSK resumed, the server accepted early data
        assert c.resumed is True and c.early_data is True
    for o in r.objects:
        assert 0 <= o.request_s <= o.first_byte_s and r.connections[o.connection].handshake_s <= o.first_byte_s
    # The client's own qlog: each connection sent its request in 0-RTT packets. (Not from
    # when this process read the FIFO's open and the Finished: on a fast pair the
    # handshake can end before the request's open is noted.)
    qlogs = sorted((tmp_path / "cli" / "qlog-client").iterdir())
    assert len(qlogs) == len(r.connections)
    for f in qlogs:
        (trace,) = read_traces(f)
        requests = [p for p in packets(trace) if p.sent and p.stream_bytes]
        assert requests and requests[0].packet_type == "0RTT", (f.name, requests)  # resent later in 1-RTT, maybe
    check_startup(r)
    print(f"ngtcp2 0-RTT: startup {r.extra['startup_s'] * 1000:.1f} ms, warm-up {r.extra['warmup']['duration_s'] * 1000:.1f} ms, "
          f"handshake {r.handshake_s * 1000:.2f} ms, last byte {r.last_byte_s * 1000:.2f} ms")


@pytest.mark.root
@ngtcp2_ok
def test_ngtcp2_resumption_without_early_data(veth_pair, ngtcp2_server, certs, tmp_path):
    wl = Workload(objects=(64 * KB,), resumption=True)
    r = ngtcp2_fetch(veth_pair, tmp_path, certs, wl)
    assert r.ok, r.error
    c, o = r.connections[0], r.objects[0]
    assert c.resumed is True and c.early_data is False
    # the request waited for the handshake (which is 0 only if the ClientHello line was read late)
    assert (0 <= c.handshake_s if r.extra.get("hello_read_late") else 0 < c.handshake_s)
    assert c.handshake_s <= o.request_s <= o.first_byte_s
    check_startup(r)


@pytest.mark.root
@ngtcp2_ok
def test_ngtcp2_plain_connection_is_not_resumed(veth_pair, ngtcp2_server, certs, tmp_path):
    r = ngtcp2_fetch(veth_pair, tmp_path, certs, Workload(objects=(64 * KB,)))
    assert r.ok, r.error
    assert r.connections[0].resumed is False and r.connections[0].early_data is False
    assert "warmup" not in r.extra
    check_startup(r)


@pytest.mark.root
@ngtcp2_ok
def test_ngtcp2_failed_warmup_fails_the_workload(veth_pair, certs, tmp_path):
    """No server: the warm-up gets no ticket, and nothing is measured."""
    r = ngtcp2_fetch(veth_pair, tmp_path, certs, Workload(objects=(KB,), resumption=True), timeout_s=2.0)
    assert not r.ok and "warm-up" in r.error and r.extra["warmup"]["ticket"] is False


# curl 7.88 -v --trace-time lines of a warm-up and a resumed connection (trimmed).
CURL = """\
20:21:30.014854 *   Trying 198.18.0.1:4433...
20:21:30.019296 * TLSv1.3 (OUT), TLS handshake, Client hello (1):
20:21:30.021215 * TLSv1.3 (IN), TLS handshake, Server hello (2):
20:21:30.021597 * TLSv1.3 (IN), TLS handshake, Certificate (11):
20:21:30.022257 * TLSv1.3 (IN), TLS handshake, Finished (20):
20:21:30.026306 * TLSv1.3 (IN), TLS handshake, Newsession Ticket (4):
20:21:30.062426 *   Trying 198.18.0.1:4433...
20:21:30.063062 * SSL re-using session ID
20:21:30.071401 * TLSv1.3 (IN), TLS handshake, Server hello (2):
20:21:30.072568 * TLSv1.3 (IN), TLS handshake, Finished (20):
20:21:30.073408 > GET /64000?o=0 HTTP/2
"""


def test_curl_trace_evidence():
    r = _Reports(subprocess.Popen(["true"], stderr=subprocess.PIPE, text=True))
    base = 20 * 3600 + 21 * 60 + 30  # read 2 s after the stamps, on a clock 1000 s behind
    for line in CURL.splitlines(keepends=True):
        stamp = float(line[9:15]) / 1e6
        r.see(line, base - 1000 + stamp + 0.002)
    r.proc.wait()
    assert len(r.tryings) == 2 and len(r.tls) == 2
    assert r.tls[0].resumed() is False and not r.tls[0].offered  # warm-up: full handshake
    assert r.tls[1].resumed() is True and r.tls[1].offered
    tries = r.trying_times()
    assert tries[0] == pytest.approx(base - 1000 + 0.014854) and tries[1] == pytest.approx(base - 1000 + 0.062426)
    sent, agreed = r.request_times()
    assert agreed == 1 and sent[0] == pytest.approx(base - 1000 + 0.073408)
    # no ServerHello in the trace: nothing can be told
    assert TlsSeen().resumed() is None


def test_tcp_refuses_resumption_it_cannot_do():
    with pytest.raises(StackError, match="at most 1"):
        TCP.check("cubic", Workload(objects=(1, 2), connections=2, resumption=True))
    with pytest.raises(StackError, match="parallel streams"):
        TCP.check("cubic", Workload(objects=(1, 2), resumption=True))
    TCP.check("cubic", Workload(objects=(1, 2), streams="sequential", resumption=True, zero_rtt=True))


tcp_ok = pytest.mark.skipif(bool(TCP.missing()), reason="; ".join(TCP.missing()) or "ok")


@pytest.fixture
def tcp_server(veth_pair, tmp_path, certs):
    """Hypercorn in ns.server with the stack's server sysctls (TFO 3); ``tfo`` overrides
    net.ipv4.tcp_fastopen there."""
    pool = ServerPool(veth_pair.server, "tcp", tmp_path)
    spec = ServerSpec(port=PORT, cc="reno", workdir=tmp_path / "srv", certs=certs, address=SERVER)

    def start(tfo: str | None = None) -> ServerSpec:
        for key, value in TCP.server_sysctls(spec.cc).items():
            write_sysctl(key, value, veth_pair.server)
        if tfo is not None:
            write_sysctl("net.ipv4.tcp_fastopen", tfo, veth_pair.server)
        pool.start(TCP.server_command(spec), PORT)
        return spec

    yield start
    pool.close()


def tcp_fetch(ns, tmp_path, certs, wl: Workload, timeout_s: float = 20.0) -> TransferResult:
    spec = ClientSpec(address=SERVER, port=PORT, workload=wl, cc="reno", workdir=tmp_path / "cli", certs=certs,
                      timeout_s=timeout_s)  # fmt: skip
    return TCP.run(spec, ["ip", "netns", "exec", ns.client])


def passive(ns) -> dict[str, int]:
    """The server namespace's TFO counters (cookie requests, data in SYN accepted)."""
    p = subprocess.run(["ip", "netns", "exec", ns, "cat", "/proc/net/netstat"], capture_output=True, text=True, check=True)
    head, values = [ln.split() for ln in p.stdout.splitlines() if ln.startswith("TcpExt:")][:2]
    d = dict(zip(head, values, strict=True))
    return {k: int(d[k]) for k in ("TCPFastOpenPassive", "TCPFastOpenCookieReqd")}


@pytest.mark.root
@tcp_ok
def test_tcp_fast_open_and_resumption(veth_pair, tcp_server, certs, tmp_path):
    """zero_rtt on TCP: the warm-up asks for the TFO cookie, the measured connection sends
    its ClientHello in the SYN and resumes the TLS session."""
    tcp_server()
    assert read_sysctl("net.ipv4.tcp_fastopen", veth_pair.server) == "3"
    before = passive(veth_pair.server)
    r = tcp_fetch(veth_pair, tmp_path, certs, Workload(objects=(64 * KB,), resumption=True, zero_rtt=True))
    assert r.ok, r.error
    after = passive(veth_pair.server)
    assert after["TCPFastOpenCookieReqd"] - before["TCPFastOpenCookieReqd"] == 1  # the warm-up's SYN
    assert after["TCPFastOpenPassive"] - before["TCPFastOpenPassive"] == 1  # the measured SYN carried data
    assert r.extra["tfo_active"] == 1
    c, o = r.connections[0], r.objects[0]
    assert c.resumed is True and c.early_data is True
    assert 0 < c.handshake_s <= o.request_s <= o.first_byte_s <= o.last_byte_s
    check_startup(r)
    assert r.extra["startup_s_connections"][0] == pytest.approx(r.extra["startup_s"])
    print(f"tcp TFO: startup {r.extra['startup_s'] * 1000:.1f} ms, handshake {c.handshake_s * 1000:.2f} ms")


@pytest.mark.root
@tcp_ok
def test_tcp_resumption_without_fast_open(veth_pair, tcp_server, certs, tmp_path):
    tcp_server()
    r = tcp_fetch(veth_pair, tmp_path, certs, Workload(objects=(64 * KB, 1000), streams="sequential", resumption=True))
    assert r.ok, r.error
    assert r.connections[0].resumed is True and r.connections[0].early_data is False
    assert r.extra["tfo_active"] == 0
    check_startup(r)


@pytest.mark.root
@tcp_ok
def test_tcp_fast_open_refused_by_server(veth_pair, tcp_server, certs, tmp_path):
    """A server namespace without the server bit gives no cookie: the SYN carries no
    data, which the evidence says, while the transfer and the resumption still work."""
    tcp_server(tfo="1")
    r = tcp_fetch(veth_pair, tmp_path, certs, Workload(objects=(64 * KB,), resumption=True, zero_rtt=True))
    assert r.ok, r.error
    assert r.connections[0].resumed is True and r.connections[0].early_data is False
    assert passive(veth_pair.server)["TCPFastOpenPassive"] == 0


@pytest.mark.root
@tcp_ok
def test_tcp_plain_connection(veth_pair, tcp_server, certs, tmp_path):
    tcp_server()
    r = tcp_fetch(veth_pair, tmp_path, certs, Workload(objects=(64 * KB,)))
    assert r.ok, r.error
    assert r.connections[0].resumed is False and r.connections[0].early_data is False
    assert _tfo_counters(["ip", "netns", "exec", veth_pair.client]) is not None
    check_startup(r)


AIOQUIC = AioquicStack()


@pytest.mark.root
@pytest.mark.skipif(bool(AIOQUIC.missing()), reason="; ".join(AIOQUIC.missing()) or "ok")
@pytest.mark.parametrize("resume", [False, True])
def test_aioquic_startup(veth_pair, tmp_path, certs, resume):
    """The Python client's start-up (interpreter and imports) is measured and is in no
    network time: the request is taken inside the client."""
    pool = ServerPool(veth_pair.server, "udp", tmp_path)
    spec = ServerSpec(port=PORT, cc="reno", workdir=tmp_path / "srv", certs=certs, address=SERVER)
    try:
        pool.start(AIOQUIC.server_command(spec), PORT)
        wl = Workload(objects=(64 * KB,), resumption=resume, zero_rtt=resume)
        cspec = ClientSpec(address=SERVER, port=PORT, workload=wl, cc="reno", workdir=tmp_path / "cli", certs=certs,
                           timeout_s=20.0)  # fmt: skip
        t = time.monotonic()
        r = AIOQUIC.run(cspec, ["ip", "netns", "exec", veth_pair.client])
        took = time.monotonic() - t
    finally:
        pool.close()
    assert r.ok, r.error
    s = r.extra["startup_s"]
    assert s is not None and 0.05 < s < took - r.last_byte_s, s  # an interpreter and aioquic's imports: tens of ms at least
    assert r.extra["startup_s_connections"] == [s]
    if resume:
        assert r.connections[0].resumed is True and r.connections[0].early_data is True
        # the warm-up came after the start-up and before the request
        assert s + r.extra["warmup"]["duration_s"] < took - r.last_byte_s
    print(f"aioquic (resume={resume}): startup {s * 1000:.0f} ms, the whole run {took * 1000:.0f} ms")


@pytest.mark.root
@pytest.mark.parametrize("stack_name", ["aioquic", "ngtcp2", "tcp"])
def test_zero_rtt_through_dcemu(tmp_path, stack_name):
    """Through the testbed (its server sysctls) and dcemu's default scenario, whose legs
    add real delay (without jitter: the round trip 0-RTT saves is then the configured
    20 ms, not a sample of it): 0-RTT is used, and the first byte comes sooner after the
    request than with a full handshake."""
    from dclab.endpoints import get_stack
    from dclab.flowplan import Flow, single_bearer_plan
    from dclab.scenario import Scenario
    from dclab.testbed import Testbed
    from dclab.testbed.hostconfig import host_config_for

    stack = get_stack(stack_name)
    scenario = Scenario(delay_cov=0.0)
    plan = single_bearer_plan(scenario, [Flow("dl", stack_name, "dc", Workload(objects=(64 * KB,)), stack.default_cc)])
    with Testbed(scenario, plan, host_config_for(stack.transport, "default"), tmp_path) as tb:
        tb.start_servers()
        zero_wl = Workload(objects=(64 * KB,), resumption=True, zero_rtt=True)
        # Three of each, alternating, the saving taken between the medians: a busy machine
        # delays one download's first byte now and then.
        plains, zeros = [], []
        for _ in range(3):
            plains.append(tb.run_clients(timeout_s=30)["dl"])
            zeros.append(tb.run_clients(timeout_s=30, workloads={"dl": zero_wl})["dl"])
        settings = dict(tb.settings)
        tb.finish()
    for plain, zero in zip(plains, zeros, strict=True):
        assert plain.ok and zero.ok, (plain.error, zero.error)
        assert plain.connections[0].resumed is False and plain.connections[0].early_data is False
        assert zero.connections[0].resumed is True and zero.connections[0].early_data is True
    plain, zero = (sorted(rs, key=lambda r: r.first_byte_s)[1] for rs in (plains, zeros))  # the medians
    # About one round trip (20 ms) each: QUIC's handshake; TCP's SYN, by Fast Open (curl's TLS
    # resumption sends no early data)
    check_bound(f"resume.{stack_name}.zero_rtt_first_byte_saving_ms", (plain.first_byte_s - zero.first_byte_s) * 1000)
    for r in (plain, zero):
        assert r.extra["startup_s"] is not None and r.extra["startup_s"] > 0
    if stack_name == "tcp":
        assert settings["net.ipv4.tcp_fastopen (server namespace)"] == "3"
    print(f"{stack_name}: first byte {plain.first_byte_s * 1000:.1f} ms plain, {zero.first_byte_s * 1000:.1f} ms with 0-RTT; "
          f"last byte {plain.last_byte_s * 1000:.1f} / {zero.last_byte_s * 1000:.1f} ms; "
          f"startup {plain.extra['startup_s'] * 1000:.0f} / {zero.extra['startup_s'] * 1000:.0f} ms")


@pytest.mark.root
def test_zero_rtt_response_waits_for_the_clients_address_to_be_validated(tmp_path):
    """The LTE study's 0-RTT download (lte:good, 12 ms core delay): aioquic's server
    answers the 0-RTT request at once but only within three times what the client's first
    flight brought (RFC 9000 section 8); the rest waits for the client's Handshake packet.
    The aioquic-token variant (the address counted as validated, as a NEW_TOKEN would)
    sends past that limit (docs/explanation/workloads.md, "0-RTT and the anti-amplification limit")."""
    from dclab.analysis.qlog_flight import is_server, read_traces, server_flight
    from dclab.flowplan import Flow, single_bearer_plan
    from dclab.scenario import Scenario, build
    from dclab.testbed import Testbed
    from dclab.testbed.hostconfig import host_config_for

    scenario = build(Scenario(), link="lte:good", delay=[12.0], delay_cov=0.0, uplink_delay=12.0)
    flights = {}
    for stack in ("aioquic", "aioquic-token"):
        plan = single_bearer_plan(scenario, [Flow("dl", stack, "dc", Workload(objects=(64 * KB,)), "reno")])
        with Testbed(scenario, plan, host_config_for("udp", "default"), tmp_path / stack) as tb:
            tb.start_servers(qlog=True)
            r = tb.run_clients(30, qlog=True, workloads={"dl": Workload(objects=(64 * KB,), resumption=True,
                                                                          zero_rtt=True)})["dl"]  # fmt: skip
            tb.finish()  # the server writes its qlogs as its connections close
        assert r.ok and r.connections[0].early_data is True, r.error
        traces = [t for f in (tmp_path / stack / "server" / "qlog-server").glob("*.qlog") for t in read_traces(f)]
        flights[stack] = max((server_flight(t) for t in traces if is_server(t)), key=lambda f: f.response_bytes)
    plain, token = flights["aioquic"], flights["aioquic-token"]
    for f in (plain, token):
        assert f.zero_rtt_packets >= 1 and f.validated_ms is not None and f.response_bytes >= 64 * KB
    # some answer goes out at once, and what stops it is the limit: within one datagram of it
    assert 0 < plain.response_before and plain.budget - 1500 < plain.sent_before <= plain.budget
    assert token.sent_before > token.budget and token.response_before > plain.response_before  # no limit
    print(f"0-RTT, response bytes sent before validation: {plain.response_before} (limit {plain.budget} bytes "
          f"in all), with the address validated {token.response_before}; pause at validation "
          f"{plain.paused_ms} ms / {token.paused_ms} ms")


@pytest.mark.root
@tcp_ok
def test_tcp_failed_warmup_fails_the_workload(veth_pair, certs, tmp_path):
    """No server: the warm-up fails, and so does the workload, naming it."""
    r = tcp_fetch(veth_pair, tmp_path, certs, Workload(objects=(KB,), resumption=True), timeout_s=3.0)
    assert not r.ok and "warm-up of connection 0 failed" in r.error


@pytest.mark.root
@pytest.mark.slow
@ngtcp2_ok
def test_ngtcp2_zero_rtt_on_64_connections(veth_pair, ngtcp2_server, certs, tmp_path):
    """The declared maximum of connections, every one resuming from the same warm-up's
    ticket with 0-RTT (the server's anti-replay does not refuse a ticket used again)."""
    wl = Workload(objects=(10 * KB,) * 64, connections=64, resumption=True, zero_rtt=True)
    r = ngtcp2_fetch(veth_pair, tmp_path, certs, wl, timeout_s=60)
    assert r.ok, r.error
    assert all(c.resumed is True and c.early_data is True for c in r.connections)
    check_startup(r)
