"""What a QUIC server sent before and after it validated the client's address, read from
its aioquic qlog (``--qlog`` keeps the qlogs of a run; docs/explanation/workloads.md's "0-RTT and the
anti-amplification limit" uses this).

Until a server has validated the client's address (aioquic: when it receives a Handshake
packet from it, RFC 9000 section 8.1) it may send at most three times the bytes it
received (RFC 9000 section 8). With 0-RTT the server has the request before the
handshake ends, so how much of the response it may send at once is set by that budget,
not by its congestion window. ``server_flight`` measures, in one connection's server
trace: the bytes received and sent before validation, the response bytes among them, and
the pause between the last packet sent before validation and the first after it.

A trace is one element of a qlog file's ``traces`` (aioquic writes one file per
connection, named by its original destination connection ID); times are aioquic's, Unix
time in milliseconds, so a client's and a server's trace on one host share one clock.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..files import JsonObject

AMPLIFICATION = 3  # RFC 9000 section 8: at most three times the bytes received


@dataclass(frozen=True)
class Packet:
    """One packet a trace logged: sent or received, its type ("initial", "handshake",
    "0RTT", "1RTT"), its length and the STREAM bytes it carried on request streams
    (client-initiated bidirectional: id % 4 == 0)."""

    time_ms: float
    sent: bool
    packet_type: str
    length: int
    stream_bytes: int


@dataclass(frozen=True)
class ServerFlight:
    """The server's side of one connection around the validation of the client's address
    (times in ms after the server received the client's first packet; None: never)."""

    validated_ms: float | None  # the first Handshake packet received from the client
    received_before: int  # UDP payload bytes received before validation
    sent_before: int  # UDP payload bytes sent before validation
    response_before: int  # of them, response bytes on request streams
    zero_rtt_packets: int  # 0-RTT packets received
    last_send_before_ms: float | None  # the last packet sent before validation
    first_send_after_ms: float | None  # the first packet sent once validated
    first_response_ms: float | None  # the first packet carrying response bytes
    last_response_ms: float | None  # the last packet carrying response bytes
    response_bytes: int  # response bytes sent, retransmissions included

    @property
    def budget(self) -> int:
        """What the anti-amplification limit allowed before validation."""
        return AMPLIFICATION * self.received_before

    @property
    def paused_ms(self) -> float | None:
        """The pause at validation: from the last packet sent before it to the first after."""
        if self.last_send_before_ms is None or self.first_send_after_ms is None:
            return None
        return self.first_send_after_ms - self.last_send_before_ms


RECORD_SEPARATOR = "\x1e"  # RFC 7464: each JSON-SEQ record starts with it


def read_traces(path: Path) -> list[JsonObject]:
    """The traces of one qlog file: aioquic's JSON qlog (a document of ``traces``), or a
    JSON-SEQ qlog (ngtcp2, quinn, noq: a header record holding the ``trace``, then one
    record per event), returned as one trace with its ``events``."""
    text = Path(path).read_text()
    if text.startswith(RECORD_SEPARATOR):
        records = [json.loads(r) for r in text.split(RECORD_SEPARATOR) if r.strip()]
        head = records[0] if records and isinstance(records[0], dict) else {}
        if not isinstance(head.get("trace"), dict):
            raise ValueError(f"{path}: not a JSON-SEQ qlog (no trace in its first record)")
        return [{**head["trace"], "events": [e for e in records[1:] if isinstance(e, dict)]}]
    doc = json.loads(text)
    traces = doc.get("traces") if isinstance(doc, dict) else None
    if not isinstance(traces, list):
        raise ValueError(f"{path}: not a JSON qlog (no traces)")
    return [t for t in traces if isinstance(t, dict)]


def packets(trace: JsonObject) -> list[Packet]:
    """The packets a trace logged, in its order."""
    out = []
    for e in trace.get("events") or []:
        name = e.get("name")
        if name not in ("transport:packet_sent", "transport:packet_received"):
            continue
        data = e.get("data") or {}
        stream = sum(int(f.get("length") or 0) for f in data.get("frames") or []
                     if f.get("frame_type") == "stream" and int(f.get("stream_id", 1)) % 4 == 0)  # fmt: skip
        out.append(Packet(float(e["time"]), name.endswith("sent"), str((data.get("header") or {}).get("packet_type")),
                          int((data.get("raw") or {}).get("length") or 0), stream))  # fmt: skip
    return out


def datagrams(trace: JsonObject) -> list[tuple[float, bool, int]]:
    """(time, sent, UDP payload bytes) of every datagram a trace logged: what the
    anti-amplification limit counts (padding outside the packets included)."""
    out = []
    for e in trace.get("events") or []:
        name = e.get("name")
        if name in ("transport:datagrams_sent", "transport:datagrams_received"):
            size = sum(int(r.get("payload_length") or 0) for r in (e.get("data") or {}).get("raw") or [])
            out.append((float(e["time"]), name.endswith("sent"), size))
    return out


def is_server(trace: JsonObject) -> bool:
    return (trace.get("vantage_point") or {}).get("type") == "server"


def server_flight(trace: JsonObject) -> ServerFlight:
    """The server's flight around validation in one server trace."""
    ps = packets(trace)
    received = [p for p in ps if not p.sent]
    if not received:
        raise ValueError("the trace received no packet")
    t0 = received[0].time_ms
    validated = next((p.time_ms for p in received if p.packet_type == "handshake"), None)

    def before(p: Packet) -> bool:
        return validated is None or p.time_ms < validated

    sent = [p for p in ps if p.sent]
    sent_before = [p for p in sent if before(p)]
    after = [p for p in sent if not before(p)]
    response = [p for p in sent if p.stream_bytes]

    def rel(t: float | None) -> float | None:
        return None if t is None else t - t0

    grams = datagrams(trace)
    # the datagram that brought the Handshake packet (logged before its packets) validated
    carrier = max((t for t, s, _ in grams if not s and validated is not None and t <= validated), default=validated)

    def bytes_before(sent: bool) -> int:
        if grams:  # the datagrams' payloads, as the limit counts them
            return sum(n for t, s, n in grams if s == sent and (carrier is None or t < carrier))
        return sum(p.length for p in ps if p.sent == sent and before(p))  # a trace without datagram events

    return ServerFlight(
        validated_ms=rel(validated),
        received_before=bytes_before(False),
        sent_before=bytes_before(True),
        response_before=sum(p.stream_bytes for p in sent_before),
        zero_rtt_packets=sum(1 for p in received if p.packet_type == "0RTT"),
        last_send_before_ms=rel(sent_before[-1].time_ms) if sent_before and validated is not None else None,
        first_send_after_ms=rel(after[0].time_ms) if after else None,
        first_response_ms=rel(response[0].time_ms) if response else None,
        last_response_ms=rel(response[-1].time_ms) if response else None,
        response_bytes=sum(p.stream_bytes for p in response),
    )
