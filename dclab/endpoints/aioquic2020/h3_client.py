# mypy: ignore-errors
# (written for aioquic 0.8's API and run by .venv-aioquic2020's Python; mypy sees the
# aioquic 1.x of the main environment, whose API differs)
"""An HTTP/3 client workload on aioquic 0.8 (QUIC draft 27), timed, printed as one JSON line.

    .venv-aioquic2020/bin/python dclab/endpoints/aioquic2020/h3_client.py \\
        --host 198.18.0.1 --port 4433 (--size N | --workload JSON-or-FILE) --ca cert.pem \\
        [--cc reno] [--qlog-dir DIR] [--keylog FILE] [--timeout S]

Self-contained (stdlib and aioquic 0.8 only), like ``h3_server.py`` beside it. The subset
of ``dclab/endpoints/aioquic/h3_client.py`` that aioquic 0.8 is run with: a workload
(``Workload.to_dict``) of one or more connections, opened at once, each on its own
connected UDP socket in one event loop, fetching its objects (``GET /<size>``, body counted
and discarded) all at once on a stream each (``streams: parallel``) or one after the other
(``sequential``). Resumption, 0-RTT, byte ranges, pre-established connections and
``cc_options`` are refused (exit 2), as the adapter's capabilities say.

The JSON line has the keys of the newer client's (``AioquicStack._result`` reads it):
``ok``, ``bytes``, ``request_wall`` (``time.time()`` when the connection attempts start),
``ready_mono`` (``time.monotonic()`` then), ``objects`` and ``connections`` (times in seconds
after the request), ``error``, ``workload_error``, ``warmup`` (null); and beside them
``quic_version`` (each connection's QUIC version on the wire, e.g. ``0xff00001b`` for draft
27, null before its handshake) and ``alpn`` (each connection's, e.g. ``h3-27``). An object
is ok only with status 200 and exactly its size in body bytes. A global timeout ends the
workload with ``ok: false``; a watchdog thread ends the process even if the loop does not.
Exit status: 0 ok, 1 failed, 2 bad arguments.

The UDP sockets keep the kernel's default receive buffer (``net.core.rmem_default``, which
the testbed's ``udp_buffer`` sets), as the newer client's do.
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
import warnings
from pathlib import Path

from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic import events as qe
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.connection import QuicConnection

# aioquic 0.8 on Python 3.11 and cryptography 50 works, with deprecation warnings on every
# handshake (naive certificate dates, ssl.match_hostname): not ours to fix, and noise in logs.
warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", message=".*naïve datetime.*")

FLOW_WINDOW = 64 * 1024 * 1024  # as h3_server.FLOW_WINDOW (one setting for both ends)
CLOSE_WAIT_S = 3.0  # at most this long to close the connections after the workload
CCS = ("reno",)
MAX_CONNECTIONS, MAX_OBJECTS = 64, 10_000  # as dclab/endpoints/base.py
UNSUPPORTED = ("resumption", "zero_rtt", "ranged", "preconnect")  # Workload fields this client refuses when set
KEYS = ("objects", "connections", "assignment", "streams", "cc_options", *UNSUPPORTED)


class Workload:
    """The part of ``dclab.endpoints.base.Workload`` this client runs (it cannot import dclab)."""

    def __init__(self, d: dict) -> None:
        if not isinstance(d, dict):
            raise ValueError(f"must be a JSON object (got {type(d).__name__})")
        unknown = sorted(set(d) - set(KEYS))
        if unknown:
            raise ValueError(f"unknown keys {', '.join(unknown)}")
        self.objects = list(d.get("objects", []))
        self.connections = d.get("connections", 1)
        self.assignment = d.get("assignment")
        self.streams = d.get("streams", "parallel")
        self.refused = [k for k in UNSUPPORTED if d.get(k)] + (["cc_options"] if d.get("cc_options") else [])

    @classmethod
    def single(cls, size: int) -> Workload:
        return cls({"objects": [size]})

    def connection_of(self, i: int) -> int:
        return self.assignment[i] if self.assignment is not None else i % self.connections

    def errors(self) -> list[str]:
        errs = [f"{k}: not offered by aioquic-2020" for k in self.refused]
        if not isinstance(self.connections, int) or isinstance(self.connections, bool) or not 1 <= self.connections <= MAX_CONNECTIONS:
            return [*errs, f"connections: must be 1 to {MAX_CONNECTIONS} (got {self.connections!r})"]
        if not 1 <= len(self.objects) <= MAX_OBJECTS:
            errs.append(f"objects: must be 1 to {MAX_OBJECTS} (got {len(self.objects)})")
        if any(not isinstance(s, int) or isinstance(s, bool) or s < 0 for s in self.objects):
            errs.append("objects: sizes must be whole numbers of bytes >= 0")
        if self.assignment is not None and (
            len(self.assignment) != len(self.objects)
            or any(not isinstance(c, int) or not 0 <= c < self.connections for c in self.assignment)
        ):
            errs.append(f"assignment: one connection (0 to {self.connections - 1}) per object")
        elif self.objects:
            idle = sorted(set(range(self.connections)) - {self.connection_of(i) for i in range(len(self.objects))})
            if idle:
                errs.append(f"connections: every connection needs an object (none on {', '.join(map(str, idle[:5]))})")
        if self.streams not in ("parallel", "sequential"):
            errs.append(f"streams: must be parallel or sequential (got {self.streams!r})")
        return errs


class Obj:
    """One object's progress; times are monotonic seconds after ``Run.t0``."""

    __slots__ = ("bytes", "connection", "done", "error", "first_byte_s", "index", "last_byte_s", "request_s", "size",
                 "status")  # fmt: skip

    def __init__(self, index: int, size: int, connection: int) -> None:
        self.index, self.size, self.connection = index, size, connection
        self.bytes = 0
        self.status: bytes | None = None
        self.request_s: float | None = None
        self.first_byte_s: float | None = None
        self.last_byte_s: float | None = None
        self.error: str | None = None
        self.done = False

    def to_dict(self) -> dict:
        ok = self.error is None and self.done and self.status == b"200" and self.bytes == self.size
        error = self.error
        if not ok and error is None:
            if self.status not in (None, b"200"):
                error = f"HTTP status {self.status.decode(errors='replace')} (wanted 200)"
            elif not self.done and self.request_s is None:
                error = "never requested"
            else:
                error = f"got {self.bytes} of {self.size} bytes"
        return {"index": self.index, "size": self.size, "connection": self.connection, "bytes": self.bytes, "ok": ok,
                "request_s": self.request_s, "first_byte_s": self.first_byte_s, "last_byte_s": self.last_byte_s,
                "error": None if ok else error}  # fmt: skip


class Conn:
    """One connection's result (``base.ConnectionResult``'s keys) and its wire version."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.handshake_s: float | None = None
        self.resumed: bool | None = None
        self.early_data: bool | None = None
        self.version: int | None = None
        self.alpn: str | None = None

    def to_dict(self) -> dict:
        return {"index": self.index, "handshake_s": self.handshake_s, "resumed": self.resumed, "early_data": self.early_data}


class Run:
    """The whole workload: what it saw so far, and printing it once."""

    def __init__(self, workload: Workload) -> None:
        self.workload = workload
        self.request_wall = time.time()
        self.t0 = time.monotonic()
        self.objects = [Obj(i, s, workload.connection_of(i)) for i, s in enumerate(workload.objects)]
        self.connections = [Conn(c) for c in range(workload.connections)]
        self.ready_mono: float | None = None
        self.error: str | None = None
        self._printed = False
        self._lock = threading.Lock()

    def now(self) -> float:
        return time.monotonic() - self.t0

    def to_dict(self) -> dict:
        objects = [o.to_dict() for o in self.objects]
        ok = self.error is None and bool(objects) and all(o["ok"] for o in objects)
        failed = [o for o in objects if not o["ok"]]
        error = self.error or (f"object {failed[0]['index']}: {failed[0]['error']}" if failed else None)
        return {
            "ok": ok, "bytes": sum(o["bytes"] for o in objects), "request_wall": self.request_wall, "error": error,
            "objects": objects, "connections": [c.to_dict() for c in self.connections], "warmup": None,
            "ready_mono": self.ready_mono, "workload_error": self.error,
            "quic_version": [None if c.version is None else f"0x{c.version:08x}" for c in self.connections],
            "alpn": [c.alpn for c in self.connections],
        }  # fmt: skip

    def emit(self) -> bool:
        """Prints the JSON line once (from the loop or from the watchdog); returns ok."""
        with self._lock:
            d = self.to_dict()
            if not self._printed:
                self._printed = True
                sys.stdout.write(json.dumps(d) + "\n")
                sys.stdout.flush()
            return bool(d["ok"])


class H3ClientProtocol(QuicConnectionProtocol):
    """One connection: requests its objects and counts their bodies."""

    def __init__(self, quic: QuicConnection, *, run: Run, conn: Conn, objects: list[Obj], authority: bytes,
                 sequential: bool) -> None:  # fmt: skip
        super().__init__(quic)
        self._h3 = H3Connection(quic)
        self._run = run
        self._conn = conn
        self._authority = authority
        self._sequential = sequential
        self._pending = list(objects)  # not requested yet, in order
        self._open: dict[int, Obj] = {}  # stream id -> object whose response is under way
        self._left = len(objects)
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.refused = False  # an ICMP port unreachable came back

    def error_received(self, exc: Exception) -> None:
        # aioquic retries the handshake; remember why, so that a timeout can say it.
        if isinstance(exc, ConnectionRefusedError):
            self.refused = True

    def _request(self, one: bool) -> None:
        now = self._run.now()
        while self._pending:
            o = self._pending.pop(0)
            sid = self._quic.get_next_available_stream_id()
            self._open[sid] = o
            o.request_s = now
            self._h3.send_headers(
                sid,
                [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", self._authority),
                 (b":path", f"/{o.size}".encode()), (b"user-agent", b"dclab-aioquic-2020")],
                end_stream=True,
            )  # fmt: skip
            if one:
                break
        self.transmit()

    def fail_open(self, error: str) -> None:
        """Ends every unfinished object of this connection with ``error``."""
        for o in [*self._open.values(), *self._pending]:
            if not o.done and o.error is None:
                o.error = error
        self._open.clear()
        self._pending.clear()
        if not self.done.done():
            self.done.set_result(None)

    def _end(self, sid: int, o: Obj) -> None:
        now = self._run.now()
        if o.bytes:
            if o.last_byte_s is None:
                o.last_byte_s = now
        elif o.first_byte_s is None:  # an empty body: its first and last byte are its end
            o.first_byte_s = o.last_byte_s = now
        o.done = True
        del self._open[sid]
        self._left -= 1
        if self._left == 0:
            if not self.done.done():
                self.done.set_result(None)
        elif self._sequential and self._pending:
            self._request(True)

    def quic_event_received(self, event) -> None:
        if isinstance(event, qe.StreamDataReceived):
            for ev in self._h3.handle_event(event):
                if not isinstance(ev, (DataReceived, HeadersReceived)):
                    continue
                o = self._open.get(ev.stream_id)
                if o is None:
                    continue
                if isinstance(ev, DataReceived):
                    n = len(ev.data)
                    if n:
                        now = self._run.now()
                        if o.first_byte_s is None:
                            o.first_byte_s = now
                        o.bytes += n
                        if o.bytes >= o.size:
                            o.last_byte_s = now
                elif o.status is None:
                    o.status = dict(ev.headers).get(b":status")
                if ev.stream_ended:
                    self._end(ev.stream_id, o)
            return
        if isinstance(event, qe.HandshakeCompleted):
            c = self._conn
            c.handshake_s = self._run.now()
            c.resumed = event.session_resumed
            c.early_data = event.early_data_accepted
            c.version = int(self._quic._version)  # no public accessor in aioquic 0.8
            c.alpn = event.alpn_protocol
            if self._pending:
                self._request(self._sequential)
        elif isinstance(event, qe.ConnectionTerminated):
            self.fail_open(f"connection closed: {event.reason_phrase or 'no reason'} (code {event.error_code})")
        elif isinstance(event, qe.StreamReset):
            o = self._open.get(event.stream_id)
            if o is not None:
                o.error = f"stream reset by server (code {event.error_code})"
                self._end(event.stream_id, o)
        self._h3.handle_event(event)


def make_config(args: argparse.Namespace) -> QuicConfiguration:
    config = QuicConfiguration(
        is_client=True,
        alpn_protocols=H3_ALPN,
        max_data=FLOW_WINDOW,
        max_stream_data=FLOW_WINDOW,
        idle_timeout=min(60.0, max(args.timeout, 1.0)),
        server_name=args.server_name or cert_dns_name(args.ca) or args.host,
    )
    if args.insecure:
        import ssl

        config.verify_mode = ssl.CERT_NONE
    else:
        config.load_verify_locations(cafile=args.ca)
    if args.keylog:
        # Line-buffered: the secrets are on disk even if the process is killed.
        config.secrets_log_file = open(args.keylog, "a", buffering=1)  # noqa: SIM115 - lives as long as the process
    if args.qlog_dir:
        config.quic_logger = args.quic_logger
    return config


def cert_dns_name(path: str | None) -> str | None:
    """The first DNS name of the certificate at ``path`` (None without one): aioquic 0.8
    matches the server name against DNS names only, never IP addresses."""
    if not path:
        return None
    from cryptography import x509
    from cryptography.hazmat.backends import default_backend

    try:  # the cryptography of 2020 needs the backend argument
        cert = x509.load_pem_x509_certificate(Path(path).read_bytes(), default_backend())
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(x509.DNSName)
    except (OSError, ValueError, x509.ExtensionNotFound):
        return None
    return names[0] if names else None


def timeout_reason(args: argparse.Namespace, handshake_done: bool, refused: bool) -> str:
    why = f"timeout after {args.timeout:g} s"
    if not handshake_done:
        why += " before the handshake completed"
        if refused:
            why += " (ICMP port unreachable: nothing listens there?)"
    return why


async def workload(args: argparse.Namespace, run: Run) -> None:
    loop = asyncio.get_running_loop()
    wl = run.workload
    deadline = run.t0 + args.timeout
    infos = await asyncio.wait_for(
        loop.getaddrinfo(args.host, args.port, type=socket.SOCK_DGRAM), max(0.1, deadline - time.monotonic())
    )
    family, _, _, _, sockaddr = infos[0]
    authority = ((f"[{args.host}]" if ":" in args.host else args.host) + f":{args.port}").encode()

    transports: list[asyncio.BaseTransport] = []
    measured: list[H3ClientProtocol] = []
    try:
        for c in range(wl.connections):
            quic = QuicConnection(configuration=make_config(args))
            mine = [o for o in run.objects if o.connection == c]
            transport, protocol = await loop.create_datagram_endpoint(
                lambda quic=quic, mine=mine, c=c: H3ClientProtocol(
                    quic, run=run, conn=run.connections[c], objects=mine, authority=authority,
                    sequential=wl.streams == "sequential",
                ),
                family=family, remote_addr=sockaddr[:2],
            )  # fmt: skip
            transports.append(transport)
            measured.append(protocol)
        # 0.8's transmit sends to the address given to connect(): the connected peer's own.
        peer = transports[-1].get_extra_info("peername")

        # The workload's request: the connection attempts start now.
        run.request_wall, run.t0 = time.time(), time.monotonic()
        run.ready_mono = run.t0
        for p in measured:
            p.connect(peer)
        _, pending = await asyncio.wait({p.done for p in measured}, timeout=max(0.0, deadline - time.monotonic()))
        if pending:
            for p, conn in zip(measured, run.connections, strict=True):
                p.fail_open(timeout_reason(args, conn.handshake_s is not None, p.refused))
        run.emit()  # measurement done: print now, then close
        for p in measured:
            p.close()
        left = min(CLOSE_WAIT_S, deadline + CLOSE_WAIT_S - time.monotonic())
        if left > 0:
            await asyncio.wait([asyncio.ensure_future(p.wait_closed()) for p in measured], timeout=left)
    finally:
        for t in transports:
            t.close()


def load_workload(text: str) -> Workload:
    raw = text if text.lstrip().startswith("{") else Path(text).read_text()
    return Workload(json.loads(raw))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="A timed HTTP/3 client workload (aioquic 0.8, QUIC draft 27)")
    ap.add_argument("--host", required=True)
    ap.add_argument("--port", type=int, default=4433)
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--size", type=int, help="one object of this many bytes on one connection (GET /<size>)")
    what.add_argument("--workload", help="a workload as a JSON object, or the path of a JSON file")
    ap.add_argument("--cc", default="reno", help="congestion control: reno (NewReno, aioquic 0.8's only one)")
    ap.add_argument("--ca", help="certificate to trust (the server's self-signed one)")
    ap.add_argument("--server-name", help="the name to verify (default: --ca's first DNS name, else --host)")
    ap.add_argument("--insecure", action="store_true", help="skip certificate verification")
    ap.add_argument("--qlog-dir", help="write the connections' qlog to client.qlog here at the end (costs CPU)")
    ap.add_argument("--keylog", help="append the TLS secrets to this file (NSS key log format, for Wireshark)")
    ap.add_argument("--timeout", type=float, default=600.0, help="give up after this many seconds")
    args = ap.parse_args(argv)

    def bad(msg: str, run: Run | None = None) -> int:
        run = run or Run(Workload.single(max(args.size or 0, 0)))
        run.error = msg
        run.emit()
        print(f"h3_client: {msg}", file=sys.stderr, flush=True)
        return 2

    try:
        wl = Workload.single(args.size) if args.workload is None else load_workload(args.workload)
    except (OSError, ValueError, TypeError) as e:
        return bad(f"--workload: {e}")
    errs = wl.errors()
    if errs:
        return bad("workload: " + "; ".join(errs))
    run = Run(wl)
    if args.cc not in CCS:
        return bad(f"--cc: aioquic 0.8 offers {', '.join(CCS)} (got {args.cc!r})", run)
    if not args.insecure and (not args.ca or not Path(args.ca).is_file()):
        return bad(f"--ca: no such file: {args.ca}", run)
    args.quic_logger = None
    if args.qlog_dir:
        from aioquic.quic.logger import QuicLogger

        args.quic_logger = QuicLogger()

    # Whatever happens in the loop, end a little after the deadline.
    def watchdog() -> None:
        if run.error is None:
            run.error = f"timeout after {args.timeout:g} s (watchdog)"
        run.emit()
        os._exit(1)

    dog = threading.Timer(args.timeout + CLOSE_WAIT_S + 2.0, watchdog)
    dog.daemon = True
    dog.start()
    try:
        asyncio.run(workload(args, run))
    except Exception as e:  # noqa: BLE001 - any failure becomes ok=false
        if run.error is None:
            run.error = f"{type(e).__name__}: {e}"
    ok = run.emit()
    dog.cancel()
    if args.quic_logger is not None:
        try:
            Path(args.qlog_dir).mkdir(parents=True, exist_ok=True)
            (Path(args.qlog_dir) / "client.qlog").write_text(json.dumps(args.quic_logger.to_dict()))
        except OSError as e:
            print(f"h3_client: cannot write the qlog: {e}", file=sys.stderr, flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
