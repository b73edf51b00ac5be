"""Kernel TCP: Hypercorn (HTTP/2 over TLS 1.3, ``dclab.endpoints.tcp.h2_app``) as server and
``curl --http2`` (7.88) as client.

The congestion controller is the sender's, i.e. the server namespace's
``net.ipv4.tcp_congestion_control``; ``server_sysctls`` says so and the testbed applies it
(``cubic`` also needs the root namespace's ``net.ipv4.tcp_allowed_congestion_control`` to
list it, which the testbed handles). The MSS clamp (1280) is the testbed's, too.

Workload: one curl process per connection, all started together, each fetching its
objects (a ``-K`` config file of URLs) over one HTTP/2 connection: ``--parallel`` streams
(at most ``PARALLEL_MAX`` at once, curl's and Hypercorn's per-connection stream limit;
more objects wait for a free stream) or one after another. curl reports whether it opened
exactly one connection per process (``num_connects``, ``local_port``); anything else fails
the run, since it would not be the workload asked for. No resumption or 0-RTT.

Timings. ``request_s`` = 0 is ``request_wall`` = ``time.time()`` just before the first
curl process is started. curl times each transfer from its own start (``-w '%{json}'``,
written to stderr for each URL), and those starts are not reported; they are recovered
from ``-v --trace-time``: the line ``> GET /<size>?o=<index> HTTP/2`` is stamped when
object ``index``'s request was sent, i.e. at start + ``time_pretransfer``. curl stamps
with CLOCK_MONOTONIC's fraction of a second plus a whole-second offset to wall time, so
the stamp is read back as a monotonic time (the offset is the whole number of seconds
that makes the stamps agree with when the lines were read here); a stamp that does not
agree falls back to when the line was read. Then ``request_s`` is that stamp,
``first_byte_s`` = start + ``time_starttransfer``, ``last_byte_s`` = start + ``time_total``,
and a connection's ``handshake_s`` = start + ``time_appconnect`` of the transfer that
opened it (TLS done). ``-v`` prints headers and one short line per read, not bodies. An
object is ok only when curl's transfer ended without error, the status is 200, the HTTP
version is 2 and ``size_download`` equals its size.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import platform
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ..base import (
    MAX_CONNECTIONS,
    MAX_OBJECTS,
    Capabilities,
    ClientSpec,
    ConnectionResult,
    ObjectResult,
    ServerSpec,
    Stack,
    TransferResult,
)

CCS = ("cubic", "reno", "bbr")
PARALLEL_MAX = 100  # streams at once per connection: beyond, curl 7.88 opens more connections
STOP_S = 5.0  # to let curl processes end after a kill


def hypercorn_command(spec: ServerSpec) -> list[str]:
    """The one-process Hypercorn launcher in ``h2_app`` (TLS 1.3, ALPN h2, quiet)."""
    return [
        sys.executable,
        "-m",
        "dclab.endpoints.tcp.h2_app",
        "--bind",
        f"{spec.address}:{spec.port}",
        "--certfile",
        str(spec.certs.cert),
        "--keyfile",
        str(spec.certs.key),
        "--log-level",
        "warning",
    ]


_REQUEST = re.compile(r"^(\d\d):(\d\d):(\d\d)\.(\d{6}) > GET /\d+\?o=(\d+) HTTP/2")
DAY = 86400


class _Reports(threading.Thread):
    """Reads one curl's stderr: its per-URL JSON reports, each request's ``--trace-time``
    stamp (seconds of the day) with the monotonic time the line was read, and curl's own
    error messages."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        super().__init__(daemon=True)
        self.proc = proc
        self.reports: list[dict[str, Any]] = []
        self.requests: dict[int, tuple[float, float]] = {}  # object index -> (stamp, read at)
        self.other: list[str] = []

    def run(self) -> None:
        assert self.proc.stderr is not None
        decoder = json.JSONDecoder()
        for line in self.proc.stderr:
            now = time.monotonic()
            m = _REQUEST.match(line)
            if m:
                h, mi, sec, us, i = (int(g) for g in m.groups())
                self.requests[i] = (h * 3600 + mi * 60 + sec + us / 1e6, now)
                continue
            at = line.find('{"')
            if at >= 0:
                try:
                    d, _ = decoder.raw_decode(line, at)
                except ValueError:
                    d = None
                if isinstance(d, dict):
                    self.reports.append(d)
                    continue
            if line.startswith("curl:"):
                self.other.append(line.strip())

    def request_times(self) -> tuple[dict[int, float], int]:
        """Each request's monotonic time, from curl's stamp where it agrees with when the
        line was read (module docstring), else when it was read; and how many agreed."""
        if not self.requests:
            return {}, 0
        # curl's stamp = monotonic + a whole number of seconds (modulo a day).
        offset = round(statistics.median((s - r) % DAY for s, r in self.requests.values()))
        out, agreed = {}, 0
        for i, (stamp, read) in self.requests.items():
            mono = read + ((stamp - offset - read + DAY / 2) % DAY - DAY / 2)
            ok = 0 <= read - mono < 0.5
            out[i] = mono if ok else read
            agreed += ok
        return out, agreed


def _t(w: dict[str, Any], key: str) -> float:
    v = w.get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 else 0.0


class TcpStack(Stack):
    name = "tcp"
    transport = "tcp"
    ccs = CCS
    capabilities = Capabilities(
        max_connections=MAX_CONNECTIONS,
        max_objects=MAX_OBJECTS,
        streams=("parallel", "sequential"),
    )

    def missing(self) -> list[str]:
        out = []
        if shutil.which("curl") is None:
            out.append("curl not found: apt-get install curl")
        else:
            p = subprocess.run(["curl", "--version"], check=False, capture_output=True, text=True)
            if "HTTP2" not in p.stdout:
                out.append("curl lacks HTTP/2 support: apt-get install curl (built with nghttp2)")
        if importlib.util.find_spec("hypercorn") is None:
            out.append(f"hypercorn not installed for {sys.executable}: pip install 'hypercorn>=0.18'")
        return out

    def server_sysctls(self, cc: str) -> dict[str, str]:
        return {"net.ipv4.tcp_congestion_control": self.resolve_cc(cc)}

    def server_command(self, spec: ServerSpec) -> list[str]:
        self.resolve_cc(spec.cc)
        return hypercorn_command(spec)

    def client_command(self, spec: ClientSpec, config: Path, n_objects: int) -> list[str]:
        """One connection's curl: the URLs (and ``output = /dev/null`` for each) are in
        ``config``, written by ``write_config``."""
        max_time = max(0.2, spec.timeout_s - 0.5)  # curl reports before it is killed
        cmd = [
            "curl",
            "--http2",
            "--tlsv1.3",
            "-sS",
            "--no-progress-meter",
            "--cacert",
            str(spec.certs.cert),
            "--max-time",
            f"{max_time:.3f}",
            "--connect-timeout",
            f"{min(10.0, max_time):.3f}",
            "-v",
            "--trace-time",
            "-w",
            "%{stderr}%{json}\\n",
        ]
        if spec.workload.streams == "parallel" and n_objects > 1:
            cmd += ["--parallel", "--parallel-max", str(min(n_objects, PARALLEL_MAX))]
        return [*cmd, "-K", str(config)]

    @staticmethod
    def write_config(spec: ClientSpec, indices: list[int], path: Path) -> None:
        lines = []
        for i in indices:
            size = spec.workload.objects[i]
            # ?o=<index> names the object in curl's trace (the server ignores the query).
            lines += [f'url = "https://{spec.address}:{spec.port}/{size}?o={i}"', 'output = "/dev/null"']
        path.write_text("\n".join(lines) + "\n")

    def run(self, spec: ClientSpec, netns_exec: list[str]) -> TransferResult:
        return self.guarded(spec, "curl-", lambda tmp: self._run(spec, netns_exec, tmp))

    def _run(self, spec: ClientSpec, netns_exec: list[str], tmp: Path) -> TransferResult:
        wl = spec.workload
        per_conn = [wl.objects_of(c) for c in range(wl.connections)]
        cmds = []
        for c, idx in enumerate(per_conn):
            cfg = tmp / f"urls-{c}.conf"
            self.write_config(spec, idx, cfg)
            cmds.append([*netns_exec, *self.client_command(spec, cfg, len(idx))])

        procs: list[subprocess.Popen[str]] = []
        readers: list[_Reports] = []
        starts: list[float] = []
        wall = time.time()
        t0 = time.monotonic()
        deadline = t0 + spec.timeout_s
        killed: set[int] = set()
        try:
            for cmd in cmds:
                starts.append(time.monotonic() - t0)
                p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                procs.append(p)
                r = _Reports(p)
                r.start()
                readers.append(r)
            for c, p in enumerate(procs):
                try:
                    p.wait(timeout=max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    p.kill()
                    killed.add(c)
                    p.wait(timeout=STOP_S)
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait(timeout=STOP_S)
            for r in readers:
                r.join(timeout=2.0)

        objects: list[ObjectResult] = [
            ObjectResult(index=i, size=s, connection=wl.connection_of(i)) for i, s in enumerate(wl.objects)
        ]
        connections = [ConnectionResult(index=c) for c in range(wl.connections)]
        errs: list[str] = []
        extra: dict[str, Any] = {"returncodes": [p.returncode for p in procs], "local_ports": [], "cc": spec.cc}
        http_codes: list[int | None] = [None] * len(wl.objects)
        http_versions: list[str | None] = [None] * len(wl.objects)
        stamped = 0  # requests timed by curl's own stamp (else: when its line was read)
        for c, idx in enumerate(per_conn):
            reader = readers[c]
            # curl numbers the URLs of its config from 0, in the order of idx.
            reports = {idx[w["urlnum"]]: w for w in reader.reports if w.get("urlnum") in range(len(idx))}
            sent, agreed = reader.request_times()
            stamped += agreed
            stderr = " ".join(reader.other)[-300:]
            for i in idx:
                o = objects[i]
                w = reports.get(i)
                if w is None:
                    o.error = (
                        f"timed out after {spec.timeout_s:g} s (curl killed)" if c in killed
                        else f"curl reported nothing ({stderr or f'exit {procs[c].returncode}'})"
                    )  # fmt: skip
                    continue
                o.bytes = int(w.get("size_download") or 0)
                if i in sent:
                    start = sent[i] - t0 - _t(w, "time_pretransfer")
                    o.request_s = sent[i] - t0
                    o.first_byte_s = start + _t(w, "time_starttransfer") if _t(w, "time_starttransfer") else None
                    o.last_byte_s = start + _t(w, "time_total") if o.bytes else None
                    if int(w.get("num_connects") or 0) > 0 and _t(w, "time_appconnect"):
                        connections[c].handshake_s = start + _t(w, "time_appconnect")
                code = int(w.get("response_code") or w.get("http_code") or 0)
                version = str(w.get("http_version") or "")
                http_codes[i], http_versions[i] = code, version
                problems = []
                if w.get("exitcode"):
                    problems.append(f"curl error {w.get('exitcode')} ({w.get('errormsg') or stderr})")
                if code != 200:
                    problems.append(f"HTTP status {code}")
                if version != "2":
                    problems.append(f"HTTP version {version or 'none'}, not 2")
                if o.bytes != o.size:
                    problems.append(f"got {o.bytes} of {o.size} bytes")
                if o.bytes and o.last_byte_s is None:
                    problems.append("no request line in curl's trace, so no timings")
                o.ok = not problems
                o.error = "; ".join(problems) or None
            # One connection per process, or it is not the workload asked for.
            ports = sorted(
                {w["local_port"] for w in reports.values() if isinstance(w.get("local_port"), int) and not w.get("exitcode")}
                - {-1, 0}
            )
            connects = sum(int(w.get("num_connects") or 0) for w in reports.values())
            extra["local_ports"].append(ports[0] if len(ports) == 1 else ports)
            if len(ports) > 1 or connects > 1:
                errs.append(f"connection {c}: curl opened {connects} TCP connections (local ports {ports}), not one")
        extra["http_codes"], extra["http_versions"] = http_codes, http_versions
        extra["stamped_requests"] = stamped
        return TransferResult.from_parts(objects, connections, request_wall=wall, error="; ".join(errs) or None, extra=extra)

    def version(self) -> str:
        parts = []
        try:
            parts.append(f"hypercorn {importlib.metadata.version('hypercorn')}")
        except importlib.metadata.PackageNotFoundError:
            parts.append("hypercorn missing")
        try:
            p = subprocess.run(["curl", "--version"], check=False, capture_output=True, text=True, timeout=5)
            parts.append(" ".join(p.stdout.split()[:2]) or "curl unknown")
        except (OSError, subprocess.SubprocessError):
            parts.append("curl missing")
        parts.append(f"linux {platform.release()}")
        return ", ".join(parts)
