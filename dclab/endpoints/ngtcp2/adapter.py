"""ngtcp2 0.12.1 through Debian's example programs ``gtlsserver`` and ``gtlsclient``.

Server: ``gtlsserver`` generates ``/<n>`` on the fly (the document root is an empty
directory, so every ``/<n>`` is generated). Its ``--max-dyn-length`` defaults to 20M and
a larger request ends "successfully" with a short body, so it is raised to
``MAX_DYN_LENGTH`` and the client always checks the byte count.

Client, and how it measures. Printing the client's debug output costs several lines per
packet (millions of lines for a GB, with the receiver's CPU as the bottleneck), so the
client runs with ``-q``. It saves the body with ``--download DIR`` into ``DIR/<n>``; that
file is created beforehand as a FIFO and a reader thread in this process drains it,
counting bytes and noting times, so nothing is stored:

- ``handshake_s``: when the client opens the FIFO. gtlsclient opens the download file
  when it submits the request, which it does right after the QUIC handshake completes
  on the client side (checked with strace: about 0.1 ms after "QUIC handshake has
  completed"). This is handshake completion, not handshake confirmation.
- ``first_byte_s``: the first body bytes read from the FIFO.
- ``last_byte_s``: the last body bytes read from the FIFO (before EOF).
- ``request_s`` = 0 is ``request_wall`` = ``time.time()`` just before the client process is
  started, so all times include starting the process (a few ms).
- ``bytes``: the body bytes read; ``ok`` only when it equals the requested size and the
  client exited 0. The HTTP status is not visible with ``-q``; a 404 or short body shows
  as a byte count that does not match.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from ..base import DownloadResult, DownloadSpec, ServerSpec, Stack, run_bounded

# 0.12.1's --cc accepts "(cubic|reno|bbr|bbr2)" (gtlsserver --help and gtlsclient --help).
CCS = ("cubic", "reno", "bbr", "bbr2")
MAX_DYN_LENGTH = "64G"  # SIZE units are powers of 1024
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

    def missing(self) -> list[str]:
        out = []
        if _find("gtlsserver") is None:
            out.append("gtlsserver not found: apt-get install ngtcp2-server")
        if _find("gtlsclient") is None:
            out.append("gtlsclient not found: apt-get install ngtcp2-client")
        return out

    def _check_cc(self, cc: str) -> None:
        if cc not in self.ccs:
            raise ValueError(f"ngtcp2 has no congestion controller {cc!r}; choose one of {', '.join(self.ccs)}")

    def server_command(self, spec: ServerSpec) -> list[str]:
        self._check_cc(spec.cc)
        htdocs = Path(spec.workdir) / "htdocs"
        htdocs.mkdir(parents=True, exist_ok=True)
        cmd = [
            _find("gtlsserver") or "gtlsserver",
            "-q",
            f"--htdocs={htdocs}",
            f"--max-dyn-length={MAX_DYN_LENGTH}",
            f"--cc={spec.cc}",
        ]
        if spec.qlog:
            qdir = Path(spec.workdir) / "qlog-server"
            qdir.mkdir(parents=True, exist_ok=True)
            cmd.append(f"--qlog-dir={qdir}")
        cmd += [spec.address, str(spec.port), str(spec.certs.key), str(spec.certs.cert)]
        return cmd

    def client_command(self, spec: DownloadSpec, download_dir: Path) -> list[str]:
        self._check_cc(spec.cc)
        cmd = [
            _find("gtlsclient") or "gtlsclient",
            "-q",
            "--exit-on-all-streams-close",
            f"--cc={spec.cc}",
            f"--download={download_dir}",
            f"--handshake-timeout={_seconds_arg(min(10.0, max(0.5, spec.timeout_s - 0.5)))}",
        ]
        if spec.qlog:
            qdir = Path(spec.workdir) / "qlog-client"
            qdir.mkdir(parents=True, exist_ok=True)
            cmd.append(f"--qlog-dir={qdir}")
        cmd += [spec.address, str(spec.port), f"https://{spec.address}:{spec.port}/{spec.size}"]
        return cmd

    def download(self, spec: DownloadSpec, netns_exec: list[str]) -> DownloadResult:
        """Downloads ``/<spec.size>``; see the module docstring for what is measured."""
        try:
            if spec.cc not in self.ccs:
                return DownloadResult(ok=False, bytes=0, error=f"unknown cc {spec.cc!r} for ngtcp2")
            Path(spec.workdir).mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix="ngtcp2-dl-", dir=spec.workdir))
        except Exception as e:  # noqa: BLE001 - a download never raises
            return DownloadResult(ok=False, bytes=0, error=f"setup: {e}")
        try:
            return self._download(spec, netns_exec, tmp)
        except Exception as e:  # noqa: BLE001
            return DownloadResult(ok=False, bytes=0, error=f"{type(e).__name__}: {e}")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _download(self, spec: DownloadSpec, netns_exec: list[str], tmp: Path) -> DownloadResult:
        fifo = tmp / str(spec.size)
        os.mkfifo(fifo, 0o600)
        reader = _FifoCounter(fifo)
        cmd = [*netns_exec, *self.client_command(spec, tmp)]
        reader.start()
        wall = time.time()
        t0 = time.monotonic()
        try:
            p = run_bounded(cmd, spec.timeout_s)
        finally:
            reader.release()  # never leave the reader blocked in open()
            reader.join(timeout=2.0)

        def rel(t: float | None) -> float | None:
            return None if t is None else t - t0

        res = DownloadResult(
            ok=False,
            bytes=reader.bytes,
            request_wall=wall,
            handshake_s=rel(reader.opened if reader.first is not None or not reader.released else None),
            first_byte_s=rel(reader.first),
            last_byte_s=rel(reader.last),
            extra={"returncode": p.returncode, "cc": spec.cc},
        )
        errs = []
        if p.returncode == -9:
            errs.append(f"timed out after {spec.timeout_s} s")
        elif p.returncode != 0:
            errs.append(f"gtlsclient exited {p.returncode}")
        if reader.is_alive():
            errs.append("fifo reader did not finish")
        if reader.error:
            errs.append(reader.error)
        if reader.bytes != spec.size:
            errs.append(f"got {reader.bytes} of {spec.size} bytes")
        tail = (p.stderr or "").strip()[-500:] + (p.stdout or "").strip()[-300:]
        if errs:
            res.error = "; ".join(errs) + (f": {tail}" if tail else "")
        else:
            res.ok = True
        return res

    def version(self) -> str:
        try:
            p = subprocess.run(
                ["dpkg-query", "-W", "-f=${Version}", "ngtcp2-client"], capture_output=True, text=True, timeout=5
            )
            if p.returncode == 0 and p.stdout.strip():
                return f"ngtcp2 {p.stdout.strip()} (gtlsclient/gtlsserver)"
        except (OSError, subprocess.SubprocessError):
            pass
        return "ngtcp2 unknown"
