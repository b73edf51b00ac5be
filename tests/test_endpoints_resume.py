"""Session resumption, 0-RTT and client start-up (``extra["startup_s"]``) of the stacks
over a plain veth pair: ngtcp2 (gnutls' handshake log as evidence), kernel TCP (curl's
trace and the namespace's TCP Fast Open counters) and aioquic's start-up; plus the
parsing of that evidence."""

from __future__ import annotations

import subprocess

import pytest
from conftest import SERVER, ServerPool

from dclab.endpoints.base import ClientSpec, ServerSpec, StackError, TransferResult, Workload
from dclab.endpoints.ngtcp2.adapter import Handshake, Ngtcp2Stack

NGTCP2 = Ngtcp2Stack()
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


def ngtcp2_fetch(ns, tmp_path, certs, wl: Workload, timeout_s: float = 20.0) -> TransferResult:
    spec = ClientSpec(address=SERVER, port=PORT, workload=wl, cc="cubic", workdir=tmp_path / "cli", certs=certs,
                      timeout_s=timeout_s)  # fmt: skip
    return NGTCP2.run(spec, ["ip", "netns", "exec", ns.client])


def check_startup(r: TransferResult) -> None:
    s = r.extra["startup_s"]
    assert s is not None and 0.0005 < s < 2.0, s  # a process start takes at least half a ms
    assert all(x is not None and 0.0005 < x < 2.0 for x in r.extra["startup_s_connections"])


@pytest.mark.root
@ngtcp2_ok
def test_ngtcp2_zero_rtt(veth_pair, ngtcp2_server, certs, tmp_path):
    wl = Workload(objects=(64 * KB, 100 * KB), connections=2, resumption=True, zero_rtt=True)
    r = ngtcp2_fetch(veth_pair, tmp_path, certs, wl)
    assert r.ok, r.error
    assert r.extra["warmup"]["ticket"] and r.extra["warmup"]["transport_params"]
    for c in r.connections:
        assert c.resumed is True and c.early_data is True
    for o in r.objects:  # the request went out before the handshake completed: 0-RTT
        assert 0 <= o.request_s < r.connections[o.connection].handshake_s <= o.first_byte_s
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
    assert 0 < c.handshake_s <= o.request_s <= o.first_byte_s  # the request waited for the handshake
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
