"""ngtcp2 0.12.1 through Debian's example programs ``gtlsserver`` and ``gtlsclient``.

Server: ``gtlsserver`` generates ``/<n>`` on the fly (the document root is an empty
directory, so every ``/<n>`` is generated). Its ``--max-dyn-length`` defaults to 20M and
a larger request ends "successfully" with a short body, so it is raised to
``MAX_DYN_LENGTH`` and the client always checks the byte count.

Workload: one gtlsclient per connection, all started together, each given its objects as
URIs, which it requests at once on a stream each once the handshake completes (parallel
streams; it has no sequential mode). At most ``MAX_OBJECTS`` objects: each has its own
FIFO and reader thread. gtlsclient can resume and send 0-RTT (``--session-file``,
``--tp-file``), but with ``-q`` it does not say whether the server accepted either, so
neither is offered.

Client, and how it measures. Printing the client's debug output costs several lines per
packet (millions of lines for a GB, with the receiver's CPU as the bottleneck), so the
client runs with ``-q``. It saves each body with ``--download DIR`` into
``DIR/<n>?o=<index>`` (the query only makes the names distinct; the server ignores it);
those files are created beforehand as FIFOs and a reader thread in this process drains
each, counting bytes and noting times, so nothing is stored:

- an object's ``request_s``: when the client opens its FIFO. gtlsclient opens the
  download file when it submits the request, which it does right after the QUIC
  handshake completes on the client side (checked with strace: about 0.1 ms after
  "QUIC handshake has completed").
- a connection's ``handshake_s``: the first of its objects' FIFO opens. This is handshake
  completion, not handshake confirmation.
- ``first_byte_s``, ``last_byte_s``: the first and the last body bytes read from the FIFO.
- ``request_s`` = 0 is ``request_wall`` = ``time.time()`` just before the first client
  process is started, so all times include starting the process (a few ms).
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
    MAX_CONNECTIONS,
    Capabilities,
    ClientSpec,
    ConnectionResult,
    ObjectResult,
    ServerSpec,
    Stack,
    TransferResult,
)

# 0.12.1's --cc accepts "(cubic|reno|bbr|bbr2)" (gtlsserver --help and gtlsclient --help).
CCS = ("cubic", "reno", "bbr", "bbr2")
MAX_DYN_LENGTH = "64G"  # SIZE units are powers of 1024
MAX_OBJECTS = 100  # one FIFO and one reader thread each; also gtlsserver's default stream limit
STOP_S = 5.0  # to let client processes end after a kill
READ_CHUNK = 1 << 20
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


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
    capabilities = Capabilities(max_connections=MAX_CONNECTIONS, max_objects=MAX_OBJECTS, streams=("parallel",))

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

    def client_command(self, spec: ClientSpec, download_dir: Path, objects: list[int]) -> list[str]:
        """The client of one connection, fetching ``objects`` (indices into the workload)."""
        cc = self.resolve_cc(spec.cc)
        cmd = [
            _find("gtlsclient") or "gtlsclient",
            "-q",
            "--exit-on-all-streams-close",
            f"--cc={cc}",
            f"--download={download_dir}",
            f"--handshake-timeout={_seconds_arg(min(10.0, max(0.5, spec.timeout_s - 0.5)))}",
        ]
        if spec.qlog:
            qdir = Path(spec.workdir) / "qlog-client"
            qdir.mkdir(parents=True, exist_ok=True)
            cmd.append(f"--qlog-dir={qdir}")
        cmd += _datagram_args(spec.quic_datagram)
        cmd += [spec.address, str(spec.port)]
        cmd += [f"https://{spec.address}:{spec.port}/{self.fifo_name(spec, i)}" for i in objects]
        return cmd

    def run(self, spec: ClientSpec, netns_exec: list[str]) -> TransferResult:
        """Runs the workload; see the module docstring for what is measured."""
        return self.guarded(spec, "ngtcp2-dl-", lambda tmp: self._run(spec, netns_exec, tmp))

    def _run(self, spec: ClientSpec, netns_exec: list[str], tmp: Path) -> TransferResult:
        wl = spec.workload
        per_conn = [wl.objects_of(c) for c in range(wl.connections)]
        readers = []
        for i in range(len(wl.objects)):
            fifo = tmp / self.fifo_name(spec, i)
            os.mkfifo(fifo, 0o600)
            readers.append(_FifoCounter(fifo))
        cmds = [[*netns_exec, *self.client_command(spec, tmp, idx)] for idx in per_conn]
        for r in readers:
            r.start()
        procs: list[subprocess.Popen[str]] = []
        wall = time.time()
        t0 = time.monotonic()
        deadline = t0 + spec.timeout_s
        killed: set[int] = set()
        outputs: list[str] = []
        try:
            for cmd in cmds:
                procs.append(subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
            for c, p in enumerate(procs):
                try:
                    out, _ = p.communicate(timeout=max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    p.kill()
                    killed.add(c)
                    out, _ = p.communicate(timeout=STOP_S)
                outputs.append((out or "").strip())
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait(timeout=STOP_S)
            for r in readers:
                r.release()  # never leave a reader blocked in open()
            for r in readers:
                r.join(timeout=2.0)

        def rel(t: float | None) -> float | None:
            return None if t is None else t - t0

        objects = []
        connections = []
        for c, idx in enumerate(per_conn):
            rc = procs[c].returncode
            tail = outputs[c][-500:] if c < len(outputs) else ""
            opened = []
            for i in idx:
                r = readers[i]
                o = ObjectResult(
                    index=i, size=wl.objects[i], connection=c, bytes=r.bytes,
                    # released: the client never opened it, so this is not a request time
                    request_s=None if r.released else rel(r.opened),
                    first_byte_s=rel(r.first), last_byte_s=rel(r.last),
                )  # fmt: skip
                if o.request_s is not None:
                    opened.append(o.request_s)
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
            connections.append(ConnectionResult(index=c, handshake_s=min(opened) if opened else None))
        objects.sort(key=lambda o: o.index)
        extra = {"returncodes": [p.returncode for p in procs], "cc": spec.cc}
        return TransferResult.from_parts(objects, connections, request_wall=wall, extra=extra)

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
