"""The server's flight around address validation, from a qlog trace
(dclab/analysis/qlog_flight.py), on hand-made traces."""

from __future__ import annotations

import json

import pytest

from dclab.analysis.qlog_flight import is_server, packets, read_traces, server_flight


def ev(t: float, sent: bool, ptype: str, length: int, stream: int = 0, sid: int = 0) -> dict:
    frames = [{"frame_type": "stream", "stream_id": sid, "length": stream, "offset": 0}] if stream else []
    frames.append({"frame_type": "ack"})
    return {"time": t, "name": "transport:packet_" + ("sent" if sent else "received"),
            "data": {"header": {"packet_type": ptype}, "raw": {"length": length}, "frames": frames}}


def trace(events: list[dict]) -> dict:
    return {"vantage_point": {"type": "server"}, "events": [{"name": "recovery:metrics_updated", "time": 0, "data": {}},
                                                            *events]}  # fmt: skip


ZERO_RTT = trace([
    ev(1000.0, False, "initial", 1250),
    ev(1000.1, False, "0RTT", 80),
    ev(1000.5, True, "initial", 120),
    ev(1000.5, True, "handshake", 90),
    ev(1000.6, True, "1RTT", 1200, stream=1100),
    ev(1000.7, True, "1RTT", 1200, stream=1100),
    ev(1000.8, True, "1RTT", 1200, stream=1100, sid=3),  # a control stream: not the response
    ev(1030.0, False, "handshake", 60),  # the client's Finished: validated
    ev(1030.2, True, "1RTT", 1200, stream=1100),
    ev(1060.0, True, "1RTT", 1200, stream=500),
])  # fmt: skip


def test_the_flight_before_validation_and_the_pause_at_it():
    f = server_flight(ZERO_RTT)
    assert f.validated_ms == pytest.approx(30.0)
    assert (f.received_before, f.budget, f.sent_before) == (1330, 3990, 3810)
    assert f.response_before == 2200 and f.zero_rtt_packets == 1
    assert f.last_send_before_ms == pytest.approx(0.8) and f.first_send_after_ms == pytest.approx(30.2)
    assert f.paused_ms == pytest.approx(29.4)
    assert (f.first_response_ms, f.last_response_ms, f.response_bytes) == (pytest.approx(0.6), pytest.approx(60.0), 3800)


def test_the_limit_counts_datagrams_with_their_padding():
    gram = lambda t, sent, n: {"time": t, "name": "transport:datagrams_" + ("sent" if sent else "received"),  # noqa: E731
                               "data": {"count": 1, "raw": [{"length": n + 8, "payload_length": n}]}}  # fmt: skip
    events = [gram(999.9, False, 1252), ev(1000.0, False, "initial", 637), gram(1000.0, False, 90),
              ev(1000.1, False, "0RTT", 85), gram(1000.5, True, 3756), ev(1000.5, True, "1RTT", 1200, stream=1100),
              # the datagram carrying the Handshake packet is logged before it: not counted
              gram(1029.9, False, 160), ev(1030.0, False, "handshake", 105), gram(1030.2, True, 1252)]  # fmt: skip
    f = server_flight(trace(events))
    assert (f.received_before, f.budget, f.sent_before) == (1342, 4026, 3756)


def test_a_trace_never_validated_and_reading_files(tmp_path):
    t = trace([ev(5.0, False, "initial", 1200), ev(5.5, True, "initial", 300)])
    f = server_flight(t)
    assert f.validated_ms is None and f.sent_before == 300 and f.paused_ms is None and f.first_send_after_ms is None
    assert [p.packet_type for p in packets(t)] == ["initial", "initial"]
    path = tmp_path / "x.qlog"
    path.write_text(json.dumps({"qlog_format": "JSON", "traces": [ZERO_RTT]}))
    (back,) = read_traces(path)
    assert is_server(back) and server_flight(back) == server_flight(ZERO_RTT)
    path.write_text("{}")
    with pytest.raises(ValueError, match="no traces"):
        read_traces(path)
    # JSON-SEQ (ngtcp2, quinn, noq): a header record with the trace, then its events
    head = {"qlog_format": "JSON-SEQ", "trace": {"vantage_point": {"type": "client"}}}
    seq = [head, ev(0.0, True, "0RTT", 496, stream=47), ev(3.0, False, "1RTT", 1200)]
    path.write_text("".join("\x1e" + json.dumps(r) + "\n" for r in seq))
    (back,) = read_traces(path)
    assert not is_server(back) and [(p.packet_type, p.sent, p.stream_bytes) for p in packets(back)] == [
        ("0RTT", True, 47), ("1RTT", False, 0)]
    path.write_text("\x1e" + json.dumps({"qlog_format": "JSON-SEQ"}) + "\n")
    with pytest.raises(ValueError, match="no trace"):
        read_traces(path)
    with pytest.raises(ValueError, match="no packet"):
        server_flight(trace([]))
