"""ss's view of TCP and MPTCP sockets as typed samples (dclab/endpoints/tcp/sockets.py),
read from what `ss -tinmMH` printed in a real MPTCP download with two subflows (kept in
tests/data/ss/: the server's and the client's namespace, one moment)."""

from __future__ import annotations

from pathlib import Path

from dclab.endpoints.tcp.sockets import address, parse_ss

DATA = Path(__file__).with_name("data") / "ss"


def test_the_senders_subflows_and_connection():
    socks = parse_ss((DATA / "mptcp-server.txt").read_text(), 1500.0, "server")
    assert [(s.kind, s.subflow, s.remote) for s in socks] == [
        ("tcp", True, "198.18.0.2:40574"), ("tcp", True, "198.18.0.3:36816"), ("mptcp", False, "198.18.0.2:40574")]
    first, second, conn = socks
    assert (first.t_ms, first.side, first.state, first.local) == (1500.0, "server", "ESTAB", "198.18.0.1:8080")
    assert (first.send_q, first.cwnd, first.ssthresh, first.mss) == (827044, 20, 142, 1448)
    assert (first.rtt_ms, first.rttvar_ms, first.minrtt, first.rto) == (19.006, 1.813, 0.033, 220.0)
    assert (first.bytes_sent, first.bytes_acked, first.unacked, first.notsent) == (3505302, 3477146, 20, 798888)
    assert (first.wmem, first.sndbuf, first.rmem, first.rcvbuf) == (29820, 1133568, 0, 131072)
    assert first.pacing_rate_bps == 10335872 and first.delivery_rate_bps == 10898536 and first.snd_wnd == 1239040
    # ss omits what is zero: no retransmission, never limited by the window or the buffer
    assert (first.retrans, first.bytes_retrans, first.rwnd_limited_ms, first.sndbuf_limited_ms) == (0, 0, 0, 0)
    assert first.busy_ms == 1968
    assert second.sndbuf_limited_ms == 648 and second.cwnd == 22
    assert (conn.kind, conn.subflows, conn.sndbuf, conn.wmem) == ("mptcp", 1, 1656064, 0)
    assert conn.write_seq - conn.snd_una == 0x76549f186d683cfd - 0x76549f186d52804d  # sent, not yet acknowledged
    assert conn.cwnd is None and conn.retrans is None  # a connection has no TCP state of its own


def test_the_receivers_subflows_and_connection_level_buffer():
    socks = parse_ss((DATA / "mptcp-client.txt").read_text(), 0.0, "client")
    extra, first, conn = socks
    assert address(extra.local) == "198.18.0.3" and extra.bytes_received == 1161248 and extra.rcv_rtt == 15.406
    assert first.bytes_received == 3477146 and first.rcv_space == 174432 and first.rcv_ooopack == 0
    # the connection-level receive queue (what the application has not read) against its limit
    assert (conn.recv_q, conn.rmem, conn.rcvbuf) == (414412, 414412, 1780434)


def test_plain_tcp_without_netid_and_a_bound_device():
    text = ("ESTAB 0      0      198.18.0.3%dcemu-ab12c:54278 198.18.0.1:4433\n"
            "\t cubic wscale:10,10 rto:204 rtt:0.016/0.008 bytes_acked:1 bytes_retrans:2896 retrans:0/2 "
            "rwnd_limited:12ms(1.5%) bytes_received:4784 rcv_ooopack:12 rcv_rtt:41.5\n"
            "LISTEN 0 4096 198.18.0.1:4433 0.0.0.0:*\n")
    s, listen = parse_ss(text)
    assert (s.kind, s.subflow, s.local, s.retrans, s.bytes_retrans) == ("tcp", False, "198.18.0.3:54278", 2, 2896)
    assert (s.rwnd_limited_ms, s.sndbuf_limited_ms, s.rcv_ooopack) == (12, 0, 12)
    assert listen.state == "LISTEN" and listen.cwnd is None and listen.retrans is None
    assert parse_ss("") == [] and parse_ss("garbage\n\tcwnd:3\n") == []


def test_a_runs_senders_and_receive_buffer_from_its_samples(tmp_path):
    import json
    from dataclasses import asdict, replace

    from dclab.analysis.socket_series import FILE, read_samples, receive_buffer, senders

    server = parse_ss((DATA / "mptcp-server.txt").read_text(), 100.0, "server")
    client = parse_ss((DATA / "mptcp-client.txt").read_text(), 100.0, "client")
    # a second moment: the first subflow sent more and retransmitted, its window grew
    later = [replace(s, t_ms=200.0, cwnd=40, bytes_acked=5_000_000, retrans=3, rwnd_limited_ms=80)
             if s.kind == "tcp" and s.remote.endswith(":40574") else replace(s, t_ms=200.0) for s in server]
    full = [replace(s, t_ms=200.0, rmem=1_700_000) if s.kind == "mptcp" else replace(s, t_ms=200.0) for s in client]
    lines = [json.dumps(asdict(s)) for s in [*server, *client, *later, *full]]
    (tmp_path / FILE).write_text("\n".join(lines) + "\n{\"torn")
    samples = read_samples(tmp_path)
    assert len(samples) == 2 * (len(server) + len(client))
    first, second = senders(samples)
    assert (first.client_address, first.subflow, first.samples) == ("198.18.0.2", True, 2)
    assert (first.bytes_acked, first.cwnd_max, first.cwnd_median, first.retrans) == (5_000_000, 40, 30.0, 3)
    assert (first.rwnd_limited_ms, first.busy_ms, first.rtt_max_ms) == (80, 1968, 19.006)
    assert second.client_address == "198.18.0.3" and second.sndbuf_limited_ms == 648
    buf = receive_buffer(samples)
    assert buf is not None and (buf.samples, buf.rcvbuf_max, buf.rmem_max, buf.full_share) == (2, 1780434, 1_700_000, 0.5)
    assert receive_buffer(samples, side="server") is not None and read_samples(tmp_path / "none") == []
