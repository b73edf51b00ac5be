"""ngtcp2 0.12.1 through Debian's example programs ``gtlsserver`` and ``gtlsclient``.

Server: ``gtlsserver`` generates ``/<n>`` on the fly (the document root is an empty
directory, so every ``/<n>`` is generated). Its ``--max-dyn-length`` defaults to 20M and
a larger request ends "successfully" with a short body, so it is raised to
``MAX_DYN_LENGTH`` and the client always checks the byte count. As started it resumes
sessions and accepts 0-RTT: one session ticket key per server process, early data up to
any size, and an anti-replay check that only bounds the ticket's age (gnutls' default
window, 10 s; examples/tls_server_*_gnutls.cc in ngtcp2 0.12.1), so no option is needed.

Workload: one gtlsclient per connection, all started together, each given its objects as
URIs, which it requests at once on a stream each once the handshake completes (parallel
streams; it has no sequential mode). At most ``MAX_OBJECTS`` objects: each has its own
FIFO and reader thread.

Resumption and 0-RTT: with ``resumption`` a warm-up gtlsclient (``GET /1``, not measured,
before the request) writes the TLS session (``--session-file``) and the server's QUIC
transport parameters (``--tp-file``) into the scratch directory; every measured client
reads its own copy of both. Without ``zero_rtt`` it runs with ``--disable-early-data``
and resumes only; with it, it opens its streams before the handshake and sends the
requests in 0-RTT packets. What happened is read, never assumed, from gnutls' own
handshake log (``GNUTLS_DEBUG_LEVEL=4`` in the client's environment; gtlsclient's ``-q``
does not silence it; about 150 lines per connection, all during the handshake, none
per packet), see ``Handshake``: a connection is ``resumed`` when the server's
ServerHello selected the offered PSK ("selected PSK-resumption mode"), and has
``early_data`` when the client sent 0-RTT (early data offered in its ClientHello and not
disabled) and the server's EncryptedExtensions carried the early_data extension (its
acceptance, RFC 8446 4.2.10). A client without that log leaves both None. Known: with
0-RTT this version stalls after the first bytes (the client's Handshake Finished leaves
only at its PTO; docs/explanation/workloads.md, "Known in ngtcp2 0.12.1"); it is measured as it is.

Client, and how it measures. Printing the client's debug output costs several lines per
packet (millions of lines for a GB, with the receiver's CPU as the bottleneck), so the
client runs with ``-q``. It saves each body with ``--download DIR`` into
``DIR/<n>?o=<index>`` (the query only makes the names distinct; the server ignores it);
those files are created beforehand as FIFOs and a reader thread in this process drains
each, counting bytes and noting times, so nothing is stored:

- start-up: a client is ready to send its first packet when gnutls queues its
  ClientHello (the first Initial is written right after) or, with 0-RTT, when it opens
  its first request, if that is earlier; each line of its output is timed when read
  here (so a little late under load, see ``handshake_s``). ``extra["startup_s"]`` is the time from starting the first client process
  (``ip netns exec`` included) to the first client being ready, and
  ``extra["startup_s_connections"]`` each client's own.
- ``request_s`` = 0 is that moment (``request_wall`` its ``time.time()``), so process
  start-up is not counted as network time (before, 0 was the first process start); a
  client without the log falls back to its process start.
- an object's ``request_s``: when the client opens its FIFO. gtlsclient opens the
  download file when it submits the request, which it does right after the QUIC
  handshake completes on the client side (checked with strace: about 0.1 ms after
  "QUIC handshake has completed"), or with 0-RTT before the handshake.
- a connection's ``handshake_s``: handshake complete on the client side (not confirmed):
  the earliest of when gnutls queued the client's Finished, the first of its objects'
  FIFO opens (not with 0-RTT, where the requests come first) and its first body byte
  (1-RTT data is readable only once the handshake is complete). Each of these is noted
  when this process reads it, a little late under load (a few ms were seen on the
  busy 2-core host), so the earliest is the best bound.
- ``first_byte_s``, ``last_byte_s``: the first and the last body bytes read from the FIFO.
- ``extra["hello_read_late"]``: the connections whose ClientHello line was read here only
  after something that must follow it (its Finished, a body byte or, without 0-RTT, a
  request); their request and handshake then coincide (on a busy host with no emulated
  delay), so their ``handshake_s`` is an upper bound, not a duration. Absent when none.
- ``bytes``: the body bytes read; an object is ok only when they equal its size and its
  client exited 0. The HTTP status is not visible with ``-q``; a 404 or short body shows
  as a byte count that does not match.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

from ..base import (
    KEYLOG_FILE,
    MAX_CONNECTIONS,
    Capabilities,
    ClientSpec,
    ConnectionResult,
    ObjectResult,
    ServerSpec,
    Stack,
    TransferResult,
    run_and_reap,
    run_bounded,
)
from .gnutls_log import GNUTLS_ENV, Handshake

# 0.12.1's --cc accepts "(cubic|reno|bbr|bbr2)" (gtlsserver --help and gtlsclient --help).
CCS = ("cubic", "reno", "bbr", "bbr2")
MAX_DYN_LENGTH = "64G"  # SIZE units are powers of 1024
MAX_OBJECTS = 100  # one FIFO and one reader thread each; also gtlsserver's default stream limit
STOP_S = 5.0  # to let client processes end after a kill
READ_CHUNK = 1 << 20
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
WARMUP_PATH = "/1"  # the warm-up's request: one byte
WARMUP_MAX_S = 10.0
TAIL_LINES = 20  # of a client's output, kept for error messages


class _Output(threading.Thread):
    """Reads one client's output (stdout and stderr) line by line, timing gnutls' handshake
    lines as they arrive and keeping the last lines for error messages."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        super().__init__(daemon=True)
        self.proc = proc
        self.handshake = Handshake()
        self.tail: list[str] = []

    def run(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.handshake.see(line, time.monotonic())
            if not line.startswith("gnutls["):
                self.tail = [*self.tail[-(TAIL_LINES - 1):], line.strip()]

    def text(self) -> str:
        return "\n".join(t for t in self.tail if t)


def _find(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for d in ("/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"):
        p = Path(d) / name
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
    return None


def _seconds_arg(s: float) -> str:
    """A gtlsclient <DURATION> in whole milliseconds (at least 1 ms)."""
    return f"{max(1, int(s * 1000))}ms"


def _datagram_args(size: int | None) -> list[str]:
    """The max UDP payload this end sends (None: gtlsclient/gtlsserver's own, 1200 raised
    to about 1450 by their path MTU discovery)."""
    return [] if size is None else [f"--max-udp-payload-size={size}"]


class _FifoCounter(threading.Thread):
    """Drains a FIFO: counts bytes and notes when the writer opened it, the first and the
    last data."""

    def __init__(self, path: Path) -> None:
        super().__init__(daemon=True)
        self.path = path
        self.opened: float | None = None  # time.monotonic()
        self.first: float | None = None
        self.last: float | None = None
        self.bytes = 0
        self.error: str | None = None
        self.released = False  # release() had to open the write end itself
        self._lock = threading.Lock()
        self._in_open = True

    def run(self) -> None:
        try:
            fd = os.open(self.path, os.O_RDONLY)  # blocks until the client opens it
        except OSError as e:
            self.error = f"open fifo: {e}"
            return
        with self._lock:
            self._in_open = False
        self.opened = time.monotonic()
        try:
            fcntl.fcntl(fd, F_SETPIPE_SZ, READ_CHUNK)  # fewer stalls of the client's writes
        except OSError:
            pass
        try:
            while True:
                b = os.read(fd, READ_CHUNK)
                if not b:
                    break
                now = time.monotonic()
                if self.first is None:
                    self.first = now
                self.last = now
                self.bytes += len(b)
        except OSError as e:
            self.error = f"read fifo: {e}"
        finally:
            os.close(fd)

    def release(self) -> None:
        """Unblocks a reader still waiting in open() (the client never opened the FIFO)
        by opening and closing the write end ourselves: the reader then sees EOF."""
        with self._lock:
            waiting = self._in_open
        if waiting:
            self.released = True
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)
                os.close(fd)
            except OSError:
                pass


class Ngtcp2Stack(Stack):
    name = "ngtcp2"
    transport = "udp"
    ccs = CCS
    capabilities = Capabilities(
        max_connections=MAX_CONNECTIONS, max_objects=MAX_OBJECTS, streams=("parallel",), resumption=True, zero_rtt=True,
        ecn="library",  # the example client and server mark ECT(0) and echo CE
    )

    def missing(self) -> list[str]:
        out = []
        if _find("gtlsserver") is None:
            out.append("gtlsserver not found: apt-get install ngtcp2-server")
        if _find("gtlsclient") is None:
            out.append("gtlsclient not found: apt-get install ngtcp2-client")
        return out

    def server_command(self, spec: ServerSpec) -> list[str]:
        cc = self.resolve_cc(spec.cc)
        htdocs = Path(spec.workdir) / "htdocs"
        htdocs.mkdir(parents=True, exist_ok=True)
        cmd = [
            _find("gtlsserver") or "gtlsserver",
            "-q",
            f"--htdocs={htdocs}",
            f"--max-dyn-length={MAX_DYN_LENGTH}",
            f"--cc={cc}",
        ]
        if spec.qlog:
            qdir = Path(spec.workdir) / "qlog-server"
            qdir.mkdir(parents=True, exist_ok=True)
            cmd.append(f"--qlog-dir={qdir}")
        cmd += _datagram_args(spec.quic_datagram)
        cmd += [spec.address, str(spec.port), str(spec.certs.key), str(spec.certs.cert)]
        return cmd

    @staticmethod
    def fifo_name(spec: ClientSpec, i: int) -> str:
        """The file gtlsclient saves object i into (the last part of its URI)."""
        return f"{spec.workload.objects[i]}?o={i}"

    def client_command(
        self, spec: ClientSpec, download_dir: Path, objects: list[int], session: tuple[Path, Path] | None = None
    ) -> list[str]:
        """The client of one connection, fetching ``objects`` (indices into the workload);
        ``session``: the TLS session and transport parameter files to resume from (with
        ``--disable-early-data`` unless the workload asks for 0-RTT)."""
        cc = self.resolve_cc(spec.cc)
        cmd = [
            _find("gtlsclient") or "gtlsclient",
            "-q",
            "--exit-on-all-streams-close",
            f"--cc={cc}",
            f"--download={download_dir}",
            f"--handshake-timeout={_seconds_arg(min(10.0, max(0.5, spec.timeout_s - 0.5)))}",
        ]
        if session is not None:
            cmd += [f"--session-file={session[0]}", f"--tp-file={session[1]}"]
            if not spec.workload.zero_rtt:
                cmd.append("--disable-early-data")
        if spec.qlog:
            qdir = Path(spec.workdir) / "qlog-client"
            qdir.mkdir(parents=True, exist_ok=True)
            cmd.append(f"--qlog-dir={qdir}")
        cmd += _datagram_args(spec.quic_datagram)
        cmd += [spec.address, str(spec.port)]
        cmd += [f"https://{spec.address}:{spec.port}/{self.fifo_name(spec, i)}" for i in objects]
        return cmd

    def warmup_command(self, spec: ClientSpec, session: Path, tp: Path, timeout_s: float) -> list[str]:
        """The unmeasured warm-up: one small request that writes the session ticket and the
        server's transport parameters."""
        return [
            _find("gtlsclient") or "gtlsclient", "-q", "--exit-on-all-streams-close", f"--cc={self.resolve_cc(spec.cc)}",
            f"--handshake-timeout={_seconds_arg(timeout_s)}", f"--session-file={session}", f"--tp-file={tp}",
            spec.address, str(spec.port), f"https://{spec.address}:{spec.port}{WARMUP_PATH}",
        ]  # fmt: skip

    def warm_up(self, spec: ClientSpec, netns_exec: list[str], tmp: Path) -> tuple[tuple[Path, Path] | None, dict[str, object]]:
        """Runs the warm-up; returns its session and transport parameter files (None when
        it got either not) and what it did, for ``extra["warmup"]``."""
        session, tp = tmp / "warmup.session", tmp / "warmup.tp"
        limit = min(WARMUP_MAX_S, max(0.5, spec.timeout_s / 2))
        t = time.monotonic()
        p = run_bounded([*netns_exec, *self.warmup_command(spec, session, tp, limit)], limit + STOP_S)
        got = {f: f.is_file() and f.stat().st_size > 0 for f in (session, tp)}
        info: dict[str, object] = {"duration_s": time.monotonic() - t, "returncode": p.returncode,
                                   "ticket": got[session], "transport_params": got[tp]}  # fmt: skip
        if p.returncode != 0 or not all(got.values()):
            info["output"] = ((p.stdout or "") + (p.stderr or "")).strip()[-300:]
            return None, info
        return (session, tp), info

    def run(self, spec: ClientSpec, netns_exec: list[str]) -> TransferResult:
        """Runs the workload; see the module docstring for what is measured."""
        return self.guarded(spec, "ngtcp2-dl-", lambda tmp: self._run(spec, netns_exec, tmp))

    def _run(self, spec: ClientSpec, netns_exec: list[str], tmp: Path) -> TransferResult:
        wl = spec.workload
        deadline = time.monotonic() + spec.timeout_s  # the warm-up counts against the timeout
        extra: dict[str, object] = {"cc": spec.cc}
        sessions: list[tuple[Path, Path] | None] = [None] * wl.connections
        if wl.resumption:
            files, extra["warmup"] = self.warm_up(spec, netns_exec, tmp)
            if files is None:
                return TransferResult.failed(
                    f"resumption: the warm-up gtlsclient got no session ticket or transport parameters ({extra['warmup']})",
                    extra=extra,
                )
            for c in range(wl.connections):  # a copy each: every client rewrites its files
                mine = (tmp / f"conn-{c}.session", tmp / f"conn-{c}.tp")
                for src, dst in zip(files, mine, strict=True):
                    shutil.copyfile(src, dst)
                sessions[c] = mine
        per_conn = [wl.objects_of(c) for c in range(wl.connections)]
        readers = []
        for i in range(len(wl.objects)):
            fifo = tmp / self.fifo_name(spec, i)
            os.mkfifo(fifo, 0o600)
            readers.append(_FifoCounter(fifo))
        cmds = [[*netns_exec, *self.client_command(spec, tmp, idx, sessions[c])] for c, idx in enumerate(per_conn)]
        env = {**os.environ, **GNUTLS_ENV}
        if spec.keylog:  # GnuTLS writes every session's secrets where SSLKEYLOGFILE says
            env["SSLKEYLOGFILE"] = str(Path(spec.workdir) / KEYLOG_FILE)
        for r in readers:
            r.start()
        wall, mono = time.time(), time.monotonic()
        try:
            ran = run_and_reap(cmds, deadline, _Output, env, subprocess.PIPE, subprocess.STDOUT)
        finally:
            for r in readers:
                r.release()  # never leave a reader blocked in open()
            for r in readers:
                r.join(timeout=2.0)
        procs, outs, spawned, killed = ran.procs, ran.readers, ran.spawned, ran.killed

        # Each client is ready to send when gnutls queued its ClientHello or, with 0-RTT,
        # when it opened its first request, if earlier; the first ready client is the
        # workload's request (0). Without the log: its process start.
        ready: list[float | None] = []
        complete: list[float | None] = []  # each connection's handshake_s, before t0 is known
        late: list[int] = []
        for c, idx in enumerate(per_conn):
            hs = outs[c].handshake
            opens: list[float | None] = [readers[i].opened for i in idx if not readers[i].released]
            marks = [t for t in (hs.hello_at, *opens) if t is not None]
            ready.append(min(marks) if hs.hello_at is not None else None)
            firsts = [readers[i].first for i in idx]
            complete.append(hs.complete_by(firsts, opens, wl.zero_rtt))
            if hs.hello_read_late(firsts, opens, wl.zero_rtt):
                late.append(c)
        if late:
            extra["hello_read_late"] = late
        known = [t for t in ready if t is not None]
        t0 = min(known) if known else spawned[0]
        extra["startup_s"] = t0 - spawned[0] if known else None
        extra["startup_s_connections"] = [None if r is None else r - spawned[c] for c, r in enumerate(ready)]

        def rel(t: float | None) -> float | None:
            return None if t is None else t - t0

        objects = []
        connections = []
        for c, idx in enumerate(per_conn):
            rc = procs[c].returncode
            tail = outs[c].text()[-500:]
            hs = outs[c].handshake
            for i in idx:
                r = readers[i]
                o = ObjectResult(
                    index=i, size=wl.objects[i], connection=c, bytes=r.bytes,
                    # released: the client never opened it, so this is not a request time
                    request_s=None if r.released else rel(r.opened),
                    first_byte_s=rel(r.first), last_byte_s=rel(r.last),
                )  # fmt: skip
                errs = []
                if c in killed:
                    errs.append(f"timed out after {spec.timeout_s} s")
                elif rc != 0:
                    errs.append(f"gtlsclient exited {rc}")
                if r.is_alive():
                    errs.append("fifo reader did not finish")
                if r.error:
                    errs.append(r.error)
                if r.bytes != o.size:
                    errs.append(f"got {r.bytes} of {o.size} bytes")
                o.ok = not errs
                o.error = ("; ".join(errs) + (f": {tail}" if tail else "")) if errs else None
                objects.append(o)
            connections.append(ConnectionResult(index=c, handshake_s=rel(complete[c]), resumed=hs.resumed(),
                                                early_data=hs.early_data(wl.zero_rtt)))  # fmt: skip
        objects.sort(key=lambda o: o.index)
        extra["returncodes"] = [p.returncode for p in procs]
        return TransferResult.from_parts(objects, connections, request_wall=wall + (t0 - mono), extra=extra)

    def version(self) -> str:
        try:
            p = subprocess.run(
                ["dpkg-query", "-W", "-f=${Version}", "ngtcp2-client"], check=False, capture_output=True, text=True, timeout=5
            )
            if p.returncode == 0 and p.stdout.strip():
                return f"ngtcp2 {p.stdout.strip()} (gtlsclient/gtlsserver)"
        except (OSError, subprocess.SubprocessError):
            pass
        return "ngtcp2 unknown"
