"""An HTTP/3 client workload with aioquic, timed, printed as one JSON line.

    python -m dclab.endpoints.aioquic.h3_client --host 198.18.0.1 --port 4433 \\
        (--size N | --workload JSON-or-FILE | --serve) --cc reno|cubic|bbr --ca cert.pem \\
        [--qlog-dir DIR] [--keylog FILE] [--timeout S]

``--serve`` keeps the process for many workloads (an experiment that fetches hundreds
of files on one testbed would otherwise start an interpreter per file): each line of
standard input is one workload as a JSON object, run on new connections as ``--workload``
runs it, and answered by its JSON line on standard output, in order, until end of input.
``--timeout`` applies to each workload; a bad line is answered by a failed result (exit
status 2 is kept for bad arguments); if a workload's event loop hangs past its timeout,
the watchdog prints its failure and ends the process. ``served`` in each line counts the
workloads this process has run, that one included.

``--size N`` is one object on one connection (``GET /<N>``). ``--workload`` takes a
workload (``dclab.endpoints.base.Workload.to_dict``: objects, connections, assignment,
streams, resumption, zero_rtt, cc_options, ranged, preconnect) as a JSON object or as the
path of a file holding one. All connections are opened at once, each on its own UDP
socket, in one process and one event loop; each fetches its objects (``GET /<size>``,
body counted and discarded), all at once on a stream each (``streams: parallel``) or each
after the previous body ended (``sequential``). With ``ranged`` the objects are byte
ranges of one body: object i is ``GET /<total>`` with ``range: bytes=A-B``
(``Workload.byte_ranges``). With ``resumption`` a warm-up connection (not measured,
fetches nothing) first obtains a session ticket that every measured connection then
resumes; with ``zero_rtt`` the requests also go out as 0-RTT early data right after the
ClientHello. With ``preconnect`` no request goes out before every handshake ended: then
the first requests of every connection are queued, that moment becomes the workload's
request, and they are sent; a connection whose handshake failed or did not end before
the timeout fails its objects (``preconnect: ...``). ``ready_mono`` is ``time.monotonic()``
(one clock for every process of the host) when the process was ready to send its first
packet: the warm-up's with resumption, else the measured connections' (the request): the
caller's spawn time to it is the process's start-up (interpreter, imports, reading the
workload), which no ``*_s`` time includes. Prints::

    {"ok": ..., "bytes": ..., "request_wall": ..., "handshake_s": ..., "first_byte_s": ...,
     "last_byte_s": ..., "error": ..., "objects": [...], "connections": [...],
     "warmup": {...} | null, "ready_mono": ..., "workload_error": ... | null}

with ``objects``/``connections`` as ``base.ObjectResult``/``base.ConnectionResult`` and the
totals as ``base.TransferResult.from_parts``. ``request_wall`` is ``time.time()`` when the
measured connection attempts start (after any warm-up; with ``preconnect``, when the
handshakes ended and the requests go out); the ``*_s`` times are seconds after it
(monotonic clock), null when not reached; with ``preconnect`` a connection's
``handshake_s`` is instead its handshake's duration. An object is ok only with status 200
(``ranged``: 206, and a ``content-range`` if any naming exactly its range) and exactly its
size in body bytes; the whole only when every object is. An object's ``request_s`` is
when its request is handed to aioquic (with ``preconnect`` the first requests are queued
just before the request moment and sent right after it: 0): beyond the server's stream
limit (128 open at once) it waits there for credit. A global timeout
(default 600 s, warm-up included) ends the workload with ``ok: false``; a watchdog thread
guarantees the process ends even if the event loop does not. Exit status: 0 ok,
1 failed, 2 bad arguments.

mQUIC (docs/mquic-implementation.md, "The server"): a connection whose ``cc_options`` entry names an
``mquic_group`` sends ``dclab-mquic: group=..; conn=..; n=..; sync=..; params=..`` with
each of its requests (``mquic.from_options``). The engine lives in the server, so with
``--cc mquic-reno|mquic-cubic`` the client itself runs the wrapped ``reno``/``cubic``.

The UDP sockets keep the kernel's default receive buffer (``net.core.rmem_default``): no
SO_RCVBUF here, the testbed varies that sysctl. The receive path does no per-event work
beyond counting, since aioquic is CPU bound on the receiver.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import functools
import json
import os
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic import events as qe
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.connection import QuicConnection
from aioquic.tls import SessionTicket

from ...files import JsonObject
from ..base import ConnectionResult, ObjectResult, TransferResult, Workload
from . import (
    bbr,  # noqa: F401 - registers "bbr" with aioquic
    rx_trace,
)
from .h3_server import DEFAULT_DATAGRAM, FLOW_WINDOW  # one setting for both ends
from .mquic import HEADER as MQUIC_HEADER
from .mquic import from_options


def client_cc(cc: str) -> str:
    """The controller the client runs: an mQUIC name's wrapped controller (the engine is
    the server's), else ``cc``."""
    return cc.removeprefix("mquic-") if cc in ("mquic-reno", "mquic-cubic", "mquic-bbr") else cc

CLOSE_WAIT_S = 3.0  # at most this long to close the connections after the workload
ACK_FLUSH_S = 0.005  # before the close, for the last delayed ACK (aioquic's delay: 1 ms)


class Obj:
    """One object's progress; times are monotonic seconds after ``Run.t0``."""

    __slots__ = ("bytes", "connection", "content_range", "done", "error", "first_byte_s", "index", "last_byte_s",
                 "path_size", "range", "request_s", "size", "status")  # fmt: skip

    def __init__(self, index: int, size: int, connection: int, path_size: int | None = None,
                 byte_range: tuple[int, int] | None = None) -> None:  # fmt: skip
        self.index, self.size, self.connection = index, size, connection
        self.path_size = size if path_size is None else path_size  # GET /<path_size>
        self.range = byte_range  # (first, last) inclusive: sent as a range header
        self.bytes = 0
        self.status: bytes | None = None
        self.content_range: bytes | None = None
        self.request_s: float | None = None
        self.first_byte_s: float | None = None
        self.last_byte_s: float | None = None
        self.error: str | None = None
        self.done = False

    def range_header(self) -> bytes | None:
        return None if self.range is None else f"bytes={self.range[0]}-{self.range[1]}".encode()

    def result(self) -> ObjectResult:
        want = b"200" if self.range is None else b"206"
        wrong_range = None
        if self.range is not None and self.content_range is not None:
            expected = f"bytes {self.range[0]}-{self.range[1]}/{self.path_size}".encode()
            if self.content_range.strip() != expected:
                wrong_range = f"content-range {self.content_range.decode(errors='replace')!r}, asked {expected.decode()!r}"
        ok = self.error is None and self.done and self.status == want and self.bytes == self.size and wrong_range is None
        error = self.error
        if not ok and error is None:
            if self.status not in (None, want):
                error = f"HTTP status {self.status.decode(errors='replace')} (wanted {want.decode()})"
            elif wrong_range is not None:
                error = wrong_range
            elif not self.done and self.request_s is None:
                error = "never requested"
            else:
                error = f"got {self.bytes} of {self.size} bytes"
        return ObjectResult(
            index=self.index, size=self.size, connection=self.connection, bytes=self.bytes, ok=ok,
            request_s=self.request_s, first_byte_s=self.first_byte_s, last_byte_s=self.last_byte_s,
            error=None if ok else error,
        )  # fmt: skip



RX_TRACE = rx_trace.from_environment()  # calibration only (rx_trace.py)


def process_cpu() -> float:
    """CPU seconds this process has used, user and system."""
    t = os.times()
    return t.user + t.system

class Run:
    """The whole workload: what it saw so far, and printing it once."""

    def __init__(self, workload: Workload) -> None:
        self.workload = workload
        self.request_wall = time.time()
        self.t0 = time.monotonic()
        self.objects = [Obj(i, s, workload.connection_of(i), workload.path_size(i), r)
                        for (i, s), r in zip(enumerate(workload.objects), workload.byte_ranges(), strict=True)]  # fmt: skip
        self.connections = [ConnectionResult(index=c) for c in range(workload.connections)]
        self.warmup: JsonObject | None = None
        # time.monotonic() when the process was ready to send its first packet (the
        # warm-up's with resumption): the adapter's start-up measure ends here.
        self.ready_mono: float | None = None
        # The process's CPU seconds (user + system) at that moment: `cpu_s` in the result is
        # what the connections cost after it (the simulation's per-packet cost is measured so).
        self.ready_cpu: float | None = None
        self.error: str | None = None
        self.served: int | None = None  # --serve: the workloads this process ran, this one included
        self._printed = False
        self._lock = threading.Lock()

    def now(self) -> float:
        return time.monotonic() - self.t0

    def to_dict(self) -> JsonObject:
        r = TransferResult.from_parts(
            [o.result() for o in self.objects], self.connections, request_wall=self.request_wall, error=self.error
        )
        d = r.to_dict()
        d.pop("goodput_mbps", None)
        d.pop("extra", None)
        d["warmup"] = self.warmup
        d["ready_mono"] = self.ready_mono
        d["cpu_s"] = process_cpu() - self.ready_cpu if self.ready_cpu is not None else None
        d["workload_error"] = self.error  # not tied to one object (e.g. the warm-up failed)
        if self.served is not None:
            d["served"] = self.served
        return d

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
    """One measured connection: requests its objects and counts their bodies."""

    def __init__(self, quic: QuicConnection, *, run: Run, conn: ConnectionResult, objects: list[Obj],
                 authority: bytes, sequential: bool, mquic: bytes | None = None,
                 preconnect: bool = False) -> None:  # fmt: skip
        super().__init__(quic)
        self._extra_headers = [(MQUIC_HEADER, mquic)] if mquic else []
        self._h3 = H3Connection(quic)
        self._run = run
        self._conn = conn
        self._authority = authority
        self._sequential = sequential
        self._pending = list(objects)  # not requested yet, in order
        self._open: dict[int, Obj] = {}  # stream id -> object whose response is under way
        self._left = len(objects)
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        # preconnect: the requests wait for the workload's request (``preconnected`` calls
        # ``queue_requests``); ``handshake`` tells whether the handshake completed (False:
        # the connection ended first).
        self._preconnect = preconnect
        self.handshake: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._connect_t: float | None = None
        self.refused = False  # an ICMP port unreachable came back

    def datagram_received(self, data: bytes | str, addr: Any) -> None:
        if RX_TRACE is not None and self._transport is not None:
            RX_TRACE.note(self._transport.get_extra_info("socket").fileno())
        super().datagram_received(data, addr)

    def error_received(self, exc: Exception) -> None:
        # aioquic keeps retrying the handshake (the server may just be slow to start);
        # remember it so that a timeout can say why.
        if isinstance(exc, ConnectionRefusedError):
            self.refused = True

    def connect(self, addr: Any, transmit: bool = True) -> None:
        self._connect_t = time.monotonic()  # preconnect: the handshake's duration starts here
        super().connect(addr, transmit=transmit)

    def start_requests(self) -> None:
        """Parallel: requests every object now; sequential: the first one."""
        if self._pending and not (self._sequential and self._open):
            self._request(self._sequential)

    def queue_requests(self) -> list[Obj]:
        """preconnect: queues the first requests (as ``start_requests``) without sending
        them; the caller sets their ``request_s`` and transmits. Returns them."""
        if not self._pending or (self._sequential and self._open):
            return []
        return self._request(self._sequential, send=False)

    def _request(self, one: bool, send: bool = True) -> list[Obj]:
        now = self._run.now()
        out = []
        while self._pending:
            o = self._pending.pop(0)
            sid = self._quic.get_next_available_stream_id()
            self._open[sid] = o
            o.request_s = now
            rng = o.range_header()
            self._h3.send_headers(
                sid,
                [
                    (b":method", b"GET"),
                    (b":scheme", b"https"),
                    (b":authority", self._authority),
                    (b":path", f"/{o.path_size}".encode()),
                    (b"user-agent", b"dclab-aioquic"),
                    *([(b"range", rng)] if rng is not None else []),
                    *self._extra_headers,
                ],
                end_stream=True,
            )
            out.append(o)
            if one:
                break
        if send:
            self.transmit()
        return out

    def fail_open(self, error: str) -> None:
        """Ends every unfinished object of this connection with ``error``."""
        for o in [*self._open.values(), *self._pending]:
            if not o.done and o.error is None:
                o.error = error
        self._open.clear()
        self._pending.clear()
        if not self.done.done():
            self.done.set_result(None)
        if not self.handshake.done():
            self.handshake.set_result(False)

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

    def quic_event_received(self, event: qe.QuicEvent) -> None:
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
                    headers = dict(ev.headers)
                    o.status = headers.get(b":status")
                    o.content_range = headers.get(b"content-range")
                if ev.stream_ended:
                    self._end(ev.stream_id, o)
            return
        if isinstance(event, qe.HandshakeCompleted):
            c = self._conn
            if self._preconnect and self._connect_t is not None:
                c.handshake_s = time.monotonic() - self._connect_t  # a duration: the request comes later
            else:
                c.handshake_s = self._run.now()
            c.resumed = event.session_resumed
            c.early_data = event.early_data_accepted
            if not self.handshake.done():
                self.handshake.set_result(True)
            if not self._preconnect:
                self.start_requests()
        elif isinstance(event, qe.ConnectionTerminated):
            why = f"connection closed: {event.reason_phrase or 'no reason'} (code {event.error_code})"
            if self._preconnect and not self.handshake.done():
                why = f"preconnect: the handshake failed: {why}"
            self.fail_open(why)
        elif isinstance(event, qe.StreamReset):
            o = self._open.get(event.stream_id)
            if o is not None:
                o.error = f"stream reset by server (code {event.error_code})"
                self._end(event.stream_id, o)
        self._h3.handle_event(event)


class WarmUpProtocol(QuicConnectionProtocol):
    """The unmeasured connection that obtains a session ticket."""

    refused = False

    def error_received(self, exc: Exception) -> None:
        if isinstance(exc, ConnectionRefusedError):
            self.refused = True


def make_config(args: argparse.Namespace, ticket: SessionTicket | None = None) -> QuicConfiguration:
    config = QuicConfiguration(
        is_client=True,
        alpn_protocols=H3_ALPN,
        congestion_control_algorithm=args.cc,
        max_data=FLOW_WINDOW,
        max_stream_data=FLOW_WINDOW,
        max_datagram_size=args.max_datagram_size,
        idle_timeout=min(60.0, max(args.timeout, 1.0)),
        server_name=args.host,
        session_ticket=ticket,
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
        from aioquic.quic.logger import QuicFileLogger

        Path(args.qlog_dir).mkdir(parents=True, exist_ok=True)
        config.quic_logger = QuicFileLogger(str(args.qlog_dir))
    return config


def timeout_reason(args: argparse.Namespace, handshake_done: bool, refused: bool) -> str:
    why = f"timeout after {args.timeout:g} s"
    if not handshake_done:
        why += " before the handshake completed"
        if refused:
            why += " (ICMP port unreachable: nothing listens there?)"
    return why


async def warm_up(
    args: argparse.Namespace, run: Run, family: int, addr: tuple[Any, ...], deadline: float
) -> tuple[SessionTicket | None, list[asyncio.BaseTransport], list[QuicConnectionProtocol]]:
    """Connects once, waits for the server's session ticket, starts closing; the
    connection's transport and protocol are returned to be closed with the others."""
    loop = asyncio.get_running_loop()
    got: asyncio.Future[SessionTicket] = loop.create_future()
    t0 = time.monotonic()

    def on_ticket(ticket: SessionTicket) -> None:
        if not got.done():
            got.set_result(ticket)

    quic = QuicConnection(configuration=make_config(args), session_ticket_handler=on_ticket)
    transport, protocol = await loop.create_datagram_endpoint(
        functools.partial(WarmUpProtocol, quic), family=family, remote_addr=addr[:2]
    )
    if family == socket.AF_INET6:
        addr = transport.get_extra_info("peername")
    run.ready_mono, run.ready_cpu = time.monotonic(), process_cpu()
    protocol.connect(addr)
    done, _ = await asyncio.wait({got}, timeout=max(0.0, deadline - time.monotonic()))
    info: JsonObject = {"duration_s": time.monotonic() - t0, "ticket": bool(done)}
    ticket = got.result() if done else None
    if ticket is None:
        handshake_done = quic._handshake_complete  # no public accessor in the pinned aioquic
        run.error = "resumption: the warm-up connection got no session ticket: " + timeout_reason(
            args, handshake_done, protocol.refused
        )
    else:
        info["max_early_data"] = ticket.max_early_data_size is not None
    run.warmup = info
    protocol.close()  # its closing overlaps the measured connections; it sends nothing more
    return ticket, [transport], [protocol]


async def preconnected(args: argparse.Namespace, run: Run, measured: list[H3ClientProtocol], deadline: float) -> None:
    """preconnect: waits until every handshake ended (completed, failed, or the deadline),
    fails the objects of the connections without one, then queues the first requests
    of the others, takes that moment as the workload's request (their ``request_s`` is
    0) and sends them all."""
    _, pending = await asyncio.wait({p.handshake for p in measured}, timeout=max(0.0, deadline - time.monotonic()))
    for p in measured:
        if p.handshake in pending:
            p.fail_open("preconnect: " + timeout_reason(args, False, p.refused))
    ready = [p for p in measured if p.handshake.done() and p.handshake.result()]
    queued = [o for p in ready for o in p.queue_requests()]
    run.request_wall, run.t0 = time.time(), time.monotonic()
    for o in queued:
        o.request_s = 0.0
    for p in ready:
        p.transmit()


async def workload(args: argparse.Namespace, run: Run) -> None:
    loop = asyncio.get_running_loop()
    wl = run.workload
    deadline = run.t0 + args.timeout

    infos = await asyncio.wait_for(
        loop.getaddrinfo(args.host, args.port, type=socket.SOCK_DGRAM), max(0.1, deadline - time.monotonic())
    )
    family, _, _, _, sockaddr = infos[0]
    addr: tuple[Any, ...] = sockaddr[:2] if family == socket.AF_INET else sockaddr
    authority = ((f"[{args.host}]" if ":" in args.host else args.host) + f":{args.port}").encode()

    transports: list[asyncio.BaseTransport] = []
    protocols: list[QuicConnectionProtocol] = []
    try:
        ticket = None
        if wl.resumption:
            ticket, transports, protocols = await warm_up(args, run, family, addr, deadline)
            if ticket is None:
                return
            if not wl.zero_rtt:
                # aioquic offers early data whenever the ticket allows it; without 0-RTT
                # asked for, the measured connections resume without offering it.
                ticket = dataclasses.replace(ticket, max_early_data_size=None)

        measured: list[H3ClientProtocol] = []
        for c in range(wl.connections):
            quic = QuicConnection(configuration=make_config(args, ticket))
            mine = [run.objects[i] for i in wl.objects_of(c)]
            membership = from_options(wl.cc_options, c)
            # A connected socket each (so that ICMP errors are reported), default buffers.
            factory = functools.partial(
                H3ClientProtocol, quic, run=run, conn=run.connections[c], objects=mine, authority=authority,
                sequential=wl.streams == "sequential", mquic=membership.header() if membership else None,
                preconnect=wl.preconnect,
            )  # fmt: skip
            transport, protocol = await loop.create_datagram_endpoint(factory, family=family, remote_addr=addr[:2])
            transports.append(transport)
            protocols.append(protocol)
            measured.append(protocol)
        peer = transports[-1].get_extra_info("peername") if family == socket.AF_INET6 else addr

        # The workload's request: the measured connection attempts start now (preconnect:
        # the handshakes start now, the request comes when they all ended).
        run.request_wall, run.t0 = time.time(), time.monotonic()
        if run.ready_mono is None:
            run.ready_mono, run.ready_cpu = run.t0, process_cpu()
        for p in measured:
            p.connect(peer, transmit=False)
            if wl.zero_rtt:
                p.start_requests()  # 0-RTT: STREAM frames in 0-RTT packets after the Initial
            p.transmit()
        if wl.preconnect:
            await preconnected(args, run, measured, deadline)
        _, pending = await asyncio.wait({p.done for p in measured}, timeout=max(0.0, deadline - time.monotonic()))
        if pending:
            for p, conn in zip(measured, run.connections, strict=True):
                p.fail_open(timeout_reason(args, conn.handshake_s is not None, p.refused))
        # Measurement done: print now, then close (the close only frees state and
        # finishes the qlogs). Before it, the last delayed ACK goes out (aioquic sends one
        # 1 ms after a packet): a close is a single datagram that loss may take, and the
        # server's mQUIC group ends when every member's data is acknowledged (h3_server.py).
        run.emit()
        await asyncio.sleep(ACK_FLUSH_S)
        for proto in protocols:
            proto.close()
        left = min(CLOSE_WAIT_S, deadline + CLOSE_WAIT_S - time.monotonic())
        if left > 0:
            await asyncio.wait([asyncio.ensure_future(proto.wait_closed()) for proto in protocols], timeout=left)
    finally:
        for t in transports:
            t.close()


def load_workload(text: str) -> Workload:
    """A workload from a JSON object given inline or in a file."""
    raw = text if text.lstrip().startswith("{") else Path(text).read_text()
    return Workload.from_dict(json.loads(raw))


def workload_error(wl: Workload) -> str | None:
    """What is wrong with a workload before anything is sent (None: nothing)."""
    errs = wl.errors()
    if errs:
        return "workload: " + "; ".join(errs)
    try:
        for c in range(wl.connections):
            from_options(wl.cc_options, c)
    except ValueError as e:
        return f"workload: cc_options: {e}"
    return None


SERVE_LINE_LIMIT = 16 * 2**20  # bytes of one --serve input line: 10,000 objects fit many times


def serve(args: argparse.Namespace) -> int:
    """--serve: one workload per input line, each answered by its JSON line, until end of
    input."""
    served = 0

    def watchdog(run: Run) -> None:
        if run.error is None:
            run.error = f"timeout after {args.timeout:g} s (watchdog)"
        run.emit()
        os._exit(1)

    async def lines() -> None:
        nonlocal served
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=SERVE_LINE_LIMIT)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        while True:
            try:
                line = await reader.readline()
            except ValueError:  # longer than the limit: the rest of the input cannot be trusted
                run = Run(Workload.single(0))
                run.error = f"--serve: an input line longer than {SERVE_LINE_LIMIT} bytes"
                run.emit()
                return
            if not line:
                return
            if not line.strip():
                continue
            served += 1
            try:
                wl = Workload.from_dict(json.loads(line))
                error = workload_error(wl)
            except (ValueError, TypeError, KeyError) as e:
                wl, error = Workload.single(0), f"--serve: not a workload: {type(e).__name__}: {e}"
            run = Run(wl)
            run.served = served
            if error is not None:
                run.error = error
                run.emit()
                continue
            dog = threading.Timer(args.timeout + CLOSE_WAIT_S + 2.0, watchdog, (run,))
            dog.daemon = True
            dog.start()
            try:
                await workload(args, run)
            except Exception as e:  # noqa: BLE001 - any failure becomes ok=false, the next line still runs
                if run.error is None:
                    run.error = f"{type(e).__name__}: {e}"
            run.emit()
            dog.cancel()

    asyncio.run(lines())
    if RX_TRACE is not None:
        RX_TRACE.write()
    return 0


def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description="A timed HTTP/3 client workload (aioquic)")
    ap.add_argument("--host", required=True)
    ap.add_argument("--port", type=int, default=4433)
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--size", type=int, help="one object of this many bytes on one connection (GET /<size>)")
    what.add_argument("--workload", help="a workload as a JSON object, or the path of a JSON file")
    what.add_argument("--serve", action="store_true",
                      help="run one workload (a JSON object) per line of standard input, printing each result line")
    ap.add_argument("--cc", default="reno",
                    help="congestion control: aioquic's reno, cubic, or our bbr (BBR v1, bbr.py); mquic-X runs X")
    ap.add_argument("--ca", help="certificate to trust (the server's self-signed one)")
    ap.add_argument("--insecure", action="store_true", help="skip certificate verification")
    ap.add_argument("--qlog-dir", help="write each connection's qlog here (costs CPU)")
    ap.add_argument("--keylog", help="append the TLS secrets to this file (NSS key log format, for Wireshark)")
    ap.add_argument("--timeout", type=float, default=600.0, help="give up after this many seconds")
    ap.add_argument("--max-datagram-size", type=int, default=DEFAULT_DATAGRAM)
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)

    def bad(msg: str, run: Run | None = None) -> int:
        run = run or Run(Workload.single(max(args.size or 0, 0)))
        run.error = msg
        run.emit()
        print(f"h3_client: {msg}", file=sys.stderr, flush=True)
        return 2

    try:
        if args.serve:
            wl = Workload.single(0)  # stands for the workloads to come in a refusal's line
        else:
            wl = Workload.single(args.size) if args.workload is None else load_workload(args.workload)
    except (OSError, ValueError, TypeError) as e:
        return bad(f"--workload: {e}")
    error = None if args.serve else workload_error(wl)
    if error:
        return bad(error)
    run = Run(wl)
    args.cc = client_cc(args.cc)

    from .h3_server import cc_error

    err = cc_error(args.cc)
    if err:
        return bad(err, run)
    if not args.insecure and (not args.ca or not Path(args.ca).is_file()):
        return bad(f"--ca: no such file: {args.ca}", run)
    if args.serve:
        return serve(args)

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
    if RX_TRACE is not None:
        RX_TRACE.write()
    dog.cancel()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
