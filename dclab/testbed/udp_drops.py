"""When the client's UDP sockets drop datagrams, sampled while the clients run: the client
namespace's ``Udp RcvbufErrors`` read every PERIOD_S, each rise kept with its time on
dcemu's clock (``analysis/socket_drops.py`` keeps them in the run directory, the run
figure marks them and the diagnosis times stalls with them).

Light and bounded: one ``sleep`` started in the client namespace (and only there: its
namespace is checked before the first read) gives a ``/proc/<pid>/net/snmp`` that shows
that namespace's counters, read from a thread of this process, so a sample is a file
read, not a process; the helper lives at most as long as the clients may, and at most
MAX_SAMPLES rises are kept (later ones are added to the last)."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ..analysis.socket_drops import DropSample
from .netns import stop_process, udp_rcvbuf_errors

PERIOD_S = 0.02  # twice dcemu's 10 ms stats interval: fine enough to place a burst's drops
MAX_SAMPLES = 20_000  # 400 s of drops in every sample
READY_S = 2.0  # how long the helper may take to enter the namespace


class DropSampler:
    """``start()`` before the clients, ``stop()`` after: the drops seen, as samples on
    dcemu's clock (``to_stats_ms`` maps a Unix time to it; None while dcemu has not
    started, when nothing is kept)."""

    def __init__(self, exec_in_client: Callable[..., list[str]], client_inode: int | None, lifetime_s: float,
                 to_stats_ms: Callable[[float], float | None], on_pid: Callable[[int], None]):
        self._exec = exec_in_client
        self._inode = client_inode
        self._lifetime_s = lifetime_s
        self._to_stats_ms = to_stats_ms
        self._on_pid = on_pid
        self._helper: subprocess.Popen[bytes] | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._rises: list[tuple[float, int]] = []  # (Unix time, datagrams dropped since the sample before)

    def start(self) -> None:
        if self._inode is None:
            return  # the client namespace cannot be told apart from another: sample nothing
        self._helper = subprocess.Popen(self._exec("sleep", str(int(self._lifetime_s) + 1)),
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)  # fmt: skip
        self._on_pid(self._helper.pid)
        snmp = self._snmp_in_client(self._helper.pid)
        if snmp is None:
            stop_process(self._helper)
            self._helper = None
            return
        self._thread = threading.Thread(target=self._sample, args=(snmp,), name="udp-drops", daemon=True)
        self._thread.start()

    def _snmp_in_client(self, pid: int) -> Path | None:
        """The helper's /proc/<pid>/net/snmp once it is in the client namespace (None if it
        is not there within READY_S: it died, or the namespace is not the run's)."""
        want = f"net:[{self._inode}]"
        deadline = time.monotonic() + READY_S
        while time.monotonic() < deadline:
            try:
                if os.readlink(f"/proc/{pid}/ns/net") == want:
                    return Path(f"/proc/{pid}/net/snmp")
            except OSError:
                return None
            time.sleep(0.005)
        return None

    def _read(self, snmp: Path) -> int | None:
        try:
            return udp_rcvbuf_errors(snmp.read_text())
        except OSError:
            return None

    def _sample(self, snmp: Path) -> None:
        last = self._read(snmp)
        while last is not None:
            stopping = self._stop.wait(PERIOD_S)  # one more read once told to stop: the drops up to then
            now = self._read(snmp)
            if now is None:
                return  # the helper is gone (its lifetime ran out, or the namespace was torn down)
            if now > last:
                if len(self._rises) < MAX_SAMPLES:
                    self._rises.append((time.time(), now - last))
                else:
                    t, n = self._rises[-1]
                    self._rises[-1] = (t, n + now - last)
            if stopping:
                return
            last = now

    def stop(self) -> list[DropSample]:
        """Ends the sampling and the helper; the rises seen, on dcemu's clock."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._helper is not None:
            stop_process(self._helper)
        out = []
        for wall, n in self._rises:
            t = self._to_stats_ms(wall)
            if t is not None:
                out.append(DropSample(t, n))
        return out
