"""Every TCP and MPTCP socket of a run, sampled in both namespaces while the clients run
(``--sockets``): ``ss -tinmMH`` every PERIOD_S, each socket a line of ``sockets.jsonl`` in
the run directory, on dcemu's clock. What kernel TCP and MPTCP did, as a qlog says what a
QUIC stack did: each subflow's window, RTT, retransmissions and how long the peer's window
or its own send buffer held it back, and the MPTCP connection's shared receive buffer
(``analysis/socket_series.py`` reads it).

Each sample starts an ``ss`` in each namespace (about 5 ms of CPU; the endpoints feel it on
a 2-core host, so it is off unless asked for). Lines are appended as they come, so a run
cut short keeps what it sampled; at most MAX_SAMPLES rounds, and the thread ends with the
clients (``stop``) or at its lifetime."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import TextIO

from ..analysis.socket_series import FILE
from ..endpoints.tcp.sockets import Side, parse_ss

PERIOD_S = 0.1
MAX_SAMPLES = 36_000  # an hour of samples


class SocketSampler:
    """``start()`` before the clients, ``stop()`` after. ``exec_in(side, *cmd)`` is the
    command line that runs ``cmd`` in that side's namespace."""

    def __init__(self, exec_in: Callable[..., list[str]], run_dir: Path, lifetime_s: float,
                 to_stats_ms: Callable[[float], float | None]):
        self._exec_in = exec_in
        self._path = Path(run_dir) / FILE
        self._lifetime_s = lifetime_s
        self._to_stats_ms = to_stats_ms
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.samples = 0

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="socket-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> int:
        """Ends the sampling (after one last sample); how many rounds it took."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        return self.samples

    def _run(self) -> None:
        end = time.monotonic() + self._lifetime_s
        with self._path.open("a") as out:
            while self.samples < MAX_SAMPLES and time.monotonic() < end:
                stopping = self._stop.is_set()
                self._sample(out)
                if stopping:
                    return
                self._stop.wait(PERIOD_S)

    def _sample(self, out: TextIO) -> None:
        sides: tuple[Side, Side] = ("server", "client")
        for side in sides:
            wall = time.time()
            try:
                p = subprocess.run(self._exec_in(side, "ss", "-tinmMH"), capture_output=True, text=True, timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                continue
            t = self._to_stats_ms(wall)
            if p.returncode != 0 or t is None:
                continue
            for s in parse_ss(p.stdout, round(t, 1), side):
                if s.state != "LISTEN":
                    out.write(json.dumps(asdict(s)) + "\n")
        out.flush()
        self.samples += 1
