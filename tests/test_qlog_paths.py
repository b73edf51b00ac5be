"""Per-path counts of a multipath QUIC sender's qlog (dclab/analysis/qlog_paths.py), on a
JSON-SEQ file as noq 1.4 writes it."""

from __future__ import annotations

import json

from dclab.analysis.qlog_paths import path_sends

RS = "\x1e"


def _stream(path, offset, length):
    return {"name": "quic:packet_sent", "data": {"header": {"packet_type": "1RTT", "path_id": path},
                                                  "frames": [{"frame_type": "stream", "stream_id": 0, "offset": offset,
                                                              "raw": {"length": length}}]}}


def test_bytes_sent_again_losses_by_trigger_and_where_acks_arrive(tmp_path):
    events = [
        _stream(0, 0, 1000), _stream(1, 1000, 1000), _stream(0, 2000, 500),
        {"name": "quic:packet_lost", "data": {"header": {"packet_number": 1}, "trigger": "reordering_threshold"}},
        {"name": "quic:packet_lost", "data": {"trigger": "time_threshold"}},
        _stream(0, 1000, 1000),  # path 1's bytes again, on path 0
        _stream(1, 2400, 400),  # 100 bytes again, 300 new
        {"name": "quic:packet_received", "data": {"header": {"path_id": 0}, "frames": [
            {"frame_type": "path_ack", "path_id": 1}, {"frame_type": "path_ack", "path_id": 0}]}},
        {"name": "quic:packet_received", "data": {"header": {"path_id": 1}, "frames": [{"frame_type": "ack"}]}},
        {"name": "quic:timer_updated", "data": {}},
    ]
    head = {"file_schema": "urn:ietf:params:qlog:file:sequential", "trace": {"vantage_point": {"type": "server"}}}
    f = tmp_path / "s.sqlog"
    f.write_text("".join(RS + json.dumps(r) + "\n" for r in [head, *events]))
    p = path_sends(f)
    assert p.packets == {0: 3, 1: 2} and p.stream_bytes == {0: 2500, 1: 1400}
    assert p.resent_bytes == {0: 1000, 1: 100} and p.resent_share == 1100 / 3900
    assert p.losses == {"reordering_threshold": 1, "time_threshold": 1}
    assert p.acks == {(0, 1): 1, (0, 0): 1, (1, 1): 1}
