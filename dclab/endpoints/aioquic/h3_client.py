"""One HTTP/3 download with aioquic, timed, printed as one JSON line.

    python -m dclab.endpoints.aioquic.h3_client --host 198.18.0.1 --port 4433 --size N \\
        --cc reno|cubic --ca cert.pem [--qlog-dir DIR] [--timeout S]

GETs ``/<N>``, counts the body bytes and discards them, and prints::

    {"ok": ..., "bytes": ..., "request_wall": ..., "handshake_s": ...,
     "first_byte_s": ..., "last_byte_s": ..., "error": ...}

``request_wall`` is ``time.time()`` when the connection attempt starts (the request); the
``*_s`` times are seconds after it (monotonic clock), null when not reached. ``ok`` is true
only when exactly N body bytes arrived. A global timeout (default 600 s) ends the
download with ``ok: false``; a watchdog thread guarantees the process ends even if the
event loop does not. Exit status: 0 ok, 1 failed, 2 bad arguments.

The UDP socket keeps the kernel's default receive buffer (``net.core.rmem_default``): no
SO_RCVBUF here, the testbed varies that sysctl. The receive path does no per-event work
beyond counting, since aioquic is CPU bound on the receiver.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import sys
import threading
import time
from pathlib import Path

from aioquic.asyncio import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic import events as qe
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.connection import QuicConnection

from .h3_server import DEFAULT_DATAGRAM, FLOW_WINDOW  # one setting for both ends
CLOSE_WAIT_S = 3.0  # at most this long to close the connection after the download


class Result:
    """What the download saw; times are monotonic seconds after t0 (reset when the
    connection attempt starts)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.request_wall = time.time()
        self.t0 = time.monotonic()
        self.bytes = 0
        self.handshake_s: float | None = None
        self.first_byte_s: float | None = None
        self.last_byte_s: float | None = None
        self.status: bytes | None = None
        self.error: str | None = None
        self._printed = False
        self._lock = threading.Lock()

    def to_dict(self) -> dict:
        ok = self.error is None and self.status == b"200" and self.bytes == self.size
        error = self.error
        if not ok and error is None:
            if self.status not in (None, b"200"):
                error = f"HTTP status {self.status.decode(errors='replace')}"
            else:
                error = f"got {self.bytes} of {self.size} bytes"
        return {
            "ok": ok,
            "bytes": self.bytes,
            "request_wall": self.request_wall,
            "handshake_s": self.handshake_s,
            "first_byte_s": self.first_byte_s,
            "last_byte_s": self.last_byte_s,
            "error": None if ok else error,
        }

    def emit(self) -> bool:
        """Prints the JSON line once (from the loop or from the watchdog); returns ok."""
        with self._lock:
            d = self.to_dict()
            if not self._printed:
                self._printed = True
                sys.stdout.write(json.dumps(d) + "\n")
                sys.stdout.flush()
            return d["ok"]


class H3ClientProtocol(QuicConnectionProtocol):
    """One connection, one GET; counts body bytes as they arrive."""

    def __init__(self, quic: QuicConnection, *, result: Result, authority: bytes, path: bytes) -> None:
        super().__init__(quic)
        self._h3 = H3Connection(quic)
        self._r = result
        self._authority = authority
        self._path = path
        self._stream_id: int | None = None
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.refused = False  # an ICMP port unreachable came back

    def error_received(self, exc: Exception) -> None:
        # aioquic keeps retrying the handshake (the server may just be slow to start);
        # remember it so that a timeout can say why.
        if isinstance(exc, ConnectionRefusedError):
            self.refused = True

    def _finish(self, error: str | None = None) -> None:
        if error and self._r.error is None:
            self._r.error = error
        if not self.done.done():
            self.done.set_result(None)

    def quic_event_received(self, event: qe.QuicEvent) -> None:
        r = self._r
        if isinstance(event, qe.StreamDataReceived):
            for ev in self._h3.handle_event(event):
                if isinstance(ev, DataReceived):
                    n = len(ev.data)
                    if n:
                        if r.first_byte_s is None:
                            r.first_byte_s = time.monotonic() - r.t0
                        r.bytes += n
                        if r.bytes >= r.size:
                            r.last_byte_s = time.monotonic() - r.t0
                    if ev.stream_ended:
                        self._end_of_body()
                elif isinstance(ev, HeadersReceived):
                    if ev.stream_id == self._stream_id and r.status is None:
                        r.status = dict(ev.headers).get(b":status")
                    if ev.stream_ended:
                        self._end_of_body()
            return
        if isinstance(event, qe.HandshakeCompleted):
            r.handshake_s = time.monotonic() - r.t0
            self._send_request()
        elif isinstance(event, qe.ConnectionTerminated):
            self._finish(f"connection closed: {event.reason_phrase or 'no reason'} (code {event.error_code})")
        elif isinstance(event, qe.StreamReset) and event.stream_id == self._stream_id:
            self._finish(f"stream reset by server (code {event.error_code})")
        self._h3.handle_event(event)

    def _send_request(self) -> None:
        sid = self._quic.get_next_available_stream_id()
        self._stream_id = sid
        self._h3.send_headers(
            sid,
            [
                (b":method", b"GET"),
                (b":scheme", b"https"),
                (b":authority", self._authority),
                (b":path", self._path),
                (b"user-agent", b"dclab-aioquic"),
            ],
            end_stream=True,
        )
        self.transmit()

    def _end_of_body(self) -> None:
        r = self._r
        if r.last_byte_s is None and r.bytes:
            r.last_byte_s = time.monotonic() - r.t0
        self._finish()


async def download(args: argparse.Namespace, result: Result) -> None:
    loop = asyncio.get_running_loop()
    deadline = result.t0 + args.timeout

    config = QuicConfiguration(
        is_client=True,
        alpn_protocols=H3_ALPN,
        congestion_control_algorithm=args.cc,
        max_data=FLOW_WINDOW,
        max_stream_data=FLOW_WINDOW,
        max_datagram_size=args.max_datagram_size,
        idle_timeout=min(60.0, max(args.timeout, 1.0)),
        server_name=args.host,
    )
    if args.insecure:
        import ssl

        config.verify_mode = ssl.CERT_NONE
    else:
        config.load_verify_locations(cafile=args.ca)
    if args.qlog_dir:
        from aioquic.quic.logger import QuicFileLogger

        Path(args.qlog_dir).mkdir(parents=True, exist_ok=True)
        config.quic_logger = QuicFileLogger(str(args.qlog_dir))

    infos = await asyncio.wait_for(
        loop.getaddrinfo(args.host, args.port, type=socket.SOCK_DGRAM), max(0.1, deadline - time.monotonic())
    )
    family, _, _, _, addr = infos[0]
    addr = addr[:2] if family == socket.AF_INET else addr
    authority = (f"[{args.host}]" if ":" in args.host else args.host) + f":{args.port}"

    connection = QuicConnection(configuration=config)
    # A connected socket (so that ICMP errors are reported), default buffer sizes.
    transport, protocol = await loop.create_datagram_endpoint(
        lambda: H3ClientProtocol(
            connection, result=result, authority=authority.encode(), path=f"/{args.size}".encode()
        ),
        family=family,
        remote_addr=addr[:2],
    )
    if family == socket.AF_INET6:
        addr = transport.get_extra_info("peername")
    try:
        # The request starts with the connection attempt.
        result.request_wall, result.t0 = time.time(), time.monotonic()
        protocol.connect(addr)
        done, _ = await asyncio.wait({protocol.done}, timeout=max(0.0, deadline - time.monotonic()))
        if not done:
            why = f"timeout after {args.timeout:g} s"
            if result.handshake_s is None:
                why += " before the handshake completed"
                if protocol.refused:
                    why += " (ICMP port unreachable: nothing listens there?)"
            result.error = result.error or why
        # Measurement done: print now, then close (the close only frees state and
        # finishes the qlog).
        result.emit()
        protocol.close()
        left = min(CLOSE_WAIT_S, deadline + CLOSE_WAIT_S - time.monotonic())
        if left > 0:
            try:
                await asyncio.wait_for(protocol.wait_closed(), left)
            except asyncio.TimeoutError:
                pass
    finally:
        transport.close()


def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description="One timed HTTP/3 download (aioquic)")
    ap.add_argument("--host", required=True)
    ap.add_argument("--port", type=int, default=4433)
    ap.add_argument("--size", type=int, required=True, help="bytes to GET (path /<size>)")
    ap.add_argument("--cc", default="reno", help="aioquic congestion control: reno, cubic")
    ap.add_argument("--ca", help="certificate to trust (the server's self-signed one)")
    ap.add_argument("--insecure", action="store_true", help="skip certificate verification")
    ap.add_argument("--qlog-dir", help="write the connection's qlog here (costs CPU)")
    ap.add_argument("--timeout", type=float, default=600.0, help="give up after this many seconds")
    ap.add_argument("--max-datagram-size", type=int, default=DEFAULT_DATAGRAM)
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    result = Result(args.size)

    def bad(msg: str) -> int:
        result.error = msg
        result.emit()
        print(f"h3_client: {msg}", file=sys.stderr, flush=True)
        return 2

    from .h3_server import cc_error

    err = cc_error(args.cc)
    if err:
        return bad(err)
    if args.size < 0:
        return bad("--size must be >= 0")
    if not args.insecure and (not args.ca or not Path(args.ca).is_file()):
        return bad(f"--ca: no such file: {args.ca}")

    # Whatever happens in the loop, end a little after the deadline.
    def watchdog() -> None:
        if result.error is None:
            result.error = f"timeout after {args.timeout:g} s (watchdog)"
        result.emit()
        os._exit(1)

    dog = threading.Timer(args.timeout + CLOSE_WAIT_S + 2.0, watchdog)
    dog.daemon = True
    dog.start()
    try:
        asyncio.run(download(args, result))
    except Exception as e:  # noqa: BLE001 - any failure becomes ok=false
        if result.error is None:
            result.error = f"{type(e).__name__}: {e}"
    ok = result.emit()
    dog.cancel()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
