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
the run, since it would not be the workload asked for.

Resumption and "0-RTT". curl 7.88 keeps TLS sessions in memory only, within one process,
and with OpenSSL it sends no TLS 1.3 early data. So with ``resumption`` the curl process
first fetches ``/0?warmup`` (the warm-up, not measured: a full handshake that gets the
server's session tickets), then, after ``--next``, the measured objects over a new
connection (``--local-port`` keeps curl from reusing the warm-up's) that offers the
session. A failed warm-up fails the workload; ``extra["warmup"]`` says what it did. One
curl process can only do this for itself and one connection after the other, so
resumption is refused with more than one connection, and with parallel streams of
several objects (curl's ``--parallel`` would start the warm-up with them).
``zero_rtt`` on TCP means TCP Fast Open plus TLS resumption: both connections use
``--tcp-fastopen``; the warm-up gets the server's TFO cookie (the client namespace's
cached cookie for the server is deleted first, so it is always the warm-up that asks)
and the measured connection sends its ClientHello in the SYN. The HTTP request itself
still waits for the TLS handshake: TFO saves the TCP handshake's round trip, nothing
more. Evidence, never assumed: ``resumed`` is True when the measured connection's
TLS 1.3 handshake had a ServerHello but no server Certificate (the server took the
offered session; a full handshake always sends one), from curl's ``-v`` trace;
``early_data`` (for TCP: data in the SYN, acknowledged by the server) comes from the
client namespace's ``TcpExtTCPFastOpenActive`` counter (/proc/net/netstat), read
before and after: it counts connections whose SYN data the server acknowledged. The
counter is per namespace, so this holds while no other TFO client runs there; with
several connections it is True for all only when it grew by their number. The server
side (``h2_app``) allows TFO on its listening socket and ``server_sysctls`` sets the
server namespace's ``net.ipv4.tcp_fastopen`` to 3 (client and server); a fresh
namespace's default, 1, already lets the client use it.

Timings. ``request_s`` = 0 is when the first curl process is ready to send the first
packet of a measured connection: the ``--trace-time`` stamp of its ``Trying ADDR:PORT...``
line, which curl prints just before ``connect()`` (with TFO the SYN then leaves with the
first write, the ClientHello, right after); ``request_wall`` is its ``time.time()``.
Before, 0 was the start of the first process, so every time included curl's start-up.
``extra["startup_s"]`` is the time from starting the first curl process (``ip netns
exec`` included) to its first ``Trying`` line (the warm-up's with resumption),
``extra["startup_s_connections"]`` each process's own; a process whose line is missing
leaves None and, if none has one, 0 falls back to the start of the first process.
curl times each transfer from its own start (``-w '%{json}'``,
written to stderr for each URL), and those starts are not reported; they are recovered
from ``-v --trace-time``: the line ``> GET /<size>?o=<index> HTTP/2`` is stamped when
object ``index``'s request was sent, i.e. at start + ``time_pretransfer``. curl stamps
with CLOCK_MONOTONIC's fraction of a second plus a whole-second offset to wall time, so
the stamp is read back as a monotonic time (the offset is the whole number of seconds
that makes the stamps agree with when the lines were read here); a stamp that does not
agree falls back to when the line was read. Then ``request_s`` is that stamp,
``first_byte_s`` = start + ``time_starttransfer``, ``last_byte_s`` = start + ``time_total``,
and a connection's ``handshake_s`` is the stamp of its ``SSL connection using`` line, which
curl prints when its TLS handshake is done (else, where the line is missing, start +
``time_appconnect`` of the transfer that opened it; ``extra["stamped_handshakes"]`` counts
the connections timed by the line). The line and not the chained durations, because
start + ``time_appconnect`` once came out 27 µs before the connection's own ``Trying``
line, several milliseconds early (docs/explanation/testing.md, failure table). ``-v`` prints headers and one short line per read, not bodies. An
object is ok only when curl's transfer ended without error, the status is 200, the HTTP
version is 2 and ``size_download`` equals its size.

Streams at once. ``extra["streams_at_once"]`` is, per connection, the most objects whose
request line curl had written and whose report it had not: curl writes both to one
stderr in the order it does them, so this is the stack's own count of streams in flight,
whatever the clocks say (1 for sequential streams; with ``--parallel``, how many it
multiplexed).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ...files import JsonObject
from ..base import (
    KEYLOG_FILE,
    MAX_CONNECTIONS,
    MAX_OBJECTS,
    Capabilities,
    ClientSpec,
    ConnectionResult,
    ObjectResult,
    ServerSpec,
    Stack,
    StackError,
    TransferResult,
    Workload,
    run_and_reap,
    run_bounded,
)

CCS = ("cubic", "reno", "bbr")
PARALLEL_MAX = 100  # streams at once per connection: beyond, curl 7.88 opens more connections
WARMUP = "/0?warmup"  # the warm-up's request (an empty body)
WARMUP_MAX_S = 10.0
# A port range for the measured connection: bound to one, curl does not reuse the
# warm-up's connection (lib/url.c, ConnectionExists); the session cache still applies.
LOCAL_PORTS = "32768-60999"
TFO_KEYS = ("TCPFastOpenActive", "TCPFastOpenActiveFail")  # TcpExt counters of /proc/net/netstat


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


_STAMP = r"^(\d\d):(\d\d):(\d\d)\.(\d{6}) "
_REQUEST = re.compile(_STAMP + r"> GET /\d+\?o=(\d+) HTTP/2")
_TRYING = re.compile(_STAMP + r"\*\s+Trying ")
_TLS_DONE = re.compile(_STAMP + r"\* SSL connection using ")
_URL_INDEX = re.compile(r"[?&]o=(\d+)$")
DAY = 86400


def _stamp(m: re.Match[str]) -> float:
    h, mi, sec, us = (int(g) for g in m.groups()[:4])
    return h * 3600 + mi * 60 + sec + us / 1e6


@dataclass
class TlsSeen:
    """One connection's TLS handshake as curl's ``-v`` trace shows it."""

    offered: bool = False  # "SSL re-using session ID": the client offered a session
    server_hello: bool = False
    certificate: bool = False  # the server sent its Certificate: a full handshake
    done: tuple[float, float] | None = None  # "SSL connection using": (stamp, read at)

    def see(self, line: str) -> None:
        if "SSL re-using session ID" in line:
            self.offered = True
        elif "TLS handshake, Server hello (2)" in line:
            self.server_hello = True
        elif "(IN), TLS handshake, Certificate (11)" in line:
            self.certificate = True

    def resumed(self) -> bool | None:
        """TLS 1.3: the server sends no Certificate when it takes the offered session;
        None when the handshake is not in the trace."""
        return None if not self.server_hello else not self.certificate


class _Reports(threading.Thread):
    """Reads one curl's stderr: its per-URL JSON reports, each request's and each
    connection attempt's ``--trace-time`` stamp (seconds of the day) with the monotonic
    time the line was read, each connection's TLS handshake, and curl's own error messages."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        super().__init__(daemon=True)
        self.proc = proc
        self.reports: list[JsonObject] = []
        self.requests: dict[int, tuple[float, float]] = {}  # object index -> (stamp, read at)
        self.tryings: list[tuple[float, float]] = []  # each connection attempt: (stamp, read at)
        self.tls: list[TlsSeen] = []  # one per connection attempt, in order
        self.other: list[str] = []
        self.in_flight = 0  # objects requested and not yet reported, in stderr's order
        self.most_in_flight = 0

    def run(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.see(line, time.monotonic())

    def see(self, line: str, now: float) -> None:
        m = _REQUEST.match(line)
        if m:
            self.requests[int(m.group(5))] = (_stamp(m), now)
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            return
        m = _TRYING.match(line)
        if m:
            self.tryings.append((_stamp(m), now))
            self.tls.append(TlsSeen())
            return
        m = _TLS_DONE.match(line)
        if m and self.tls:
            self.tls[-1].done = (_stamp(m), now)
            return
        if self.tls:
            self.tls[-1].see(line)
        at = line.find('{"')
        if at >= 0:
            try:
                d, _ = json.JSONDecoder().raw_decode(line, at)
            except ValueError:
                d = None
            if isinstance(d, dict):
                self.reports.append(d)
                if _URL_INDEX.search(str(d.get("url_effective") or "")):  # an object's, not the warm-up's
                    self.in_flight = max(0, self.in_flight - 1)
                return
        if line.startswith("curl:"):
            self.other.append(line.strip())

    def _offset(self) -> int:
        # curl's stamp = monotonic + a whole number of seconds (modulo a day).
        pairs = [*self.requests.values(), *self.tryings]
        return round(statistics.median((s - r) % DAY for s, r in pairs)) if pairs else 0

    def _mono(self, stamp: float, read: float, offset: int) -> tuple[float, bool]:
        mono = read + ((stamp - offset - read + DAY / 2) % DAY - DAY / 2)
        ok = 0 <= read - mono < 0.5
        return (mono if ok else read), ok

    def request_times(self) -> tuple[dict[int, float], int]:
        """Each request's monotonic time, from curl's stamp where it agrees with when the
        line was read (module docstring), else when it was read; and how many agreed."""
        offset = self._offset()
        out, agreed = {}, 0
        for i, (stamp, read) in self.requests.items():
            out[i], ok = self._mono(stamp, read, offset)
            agreed += ok
        return out, agreed

    def trying_times(self) -> list[float]:
        """Each connection attempt's monotonic time (as ``request_times``)."""
        offset = self._offset()
        return [self._mono(stamp, read, offset)[0] for stamp, read in self.tryings]

    def handshake_time(self, attempt: int) -> float | None:
        """When connection attempt ``attempt``'s TLS handshake was done (as
        ``request_times``), None if the trace does not say."""
        done = self.tls[attempt].done if attempt < len(self.tls) else None
        return None if done is None else self._mono(*done, self._offset())[0]


def netstat_counters(netns_exec: list[str], group: str) -> dict[str, int] | None:
    """A namespace's counters of one group of /proc/net/netstat (``TcpExt``, ``MPTcpExt``),
    None if unreadable."""
    p = run_bounded([*netns_exec, "cat", "/proc/net/netstat"], 10.0)
    lines = [ln.split() for ln in p.stdout.splitlines() if ln.startswith(f"{group}:")]
    if p.returncode != 0 or len(lines) < 2:
        return None
    try:
        return {k: int(v) for k, v in zip(lines[0][1:], lines[1][1:], strict=True)}
    except ValueError:
        return None


def _tfo_counters(netns_exec: list[str]) -> dict[str, int] | None:
    """The client namespace's TCP Fast Open counters (``TFO_KEYS``), None if unreadable."""
    values = netstat_counters(netns_exec, "TcpExt")
    if values is None or any(k not in values for k in TFO_KEYS):
        return None
    return {k: values[k] for k in TFO_KEYS}


def _t(w: JsonObject, key: str) -> float:
    v = w.get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 else 0.0


def _judge(o: ObjectResult, w: JsonObject, stderr: str) -> tuple[int, str]:
    """Sets ``o.ok`` and ``o.error`` from curl's report ``w`` of it; its HTTP status and version."""
    code = int(w.get("response_code") or w.get("http_code") or 0)
    version = str(w.get("http_version") or "")
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
    return code, version


def _warmup(reader: _Reports) -> tuple[JsonObject | None, str | None]:
    """The resumption warm-up's record (None: curl reported none) and why it failed (None: it did not)."""
    warm = next((w for w in reader.reports if str(w.get("url_effective") or "").endswith("?warmup")), None)
    tail = " ".join(reader.other)[-200:]
    if warm is None:
        return None, f"no report; {tail}"
    code = int(warm.get("response_code") or 0)
    record = {"duration_s": _t(warm, "time_total"), "http_code": code, "exitcode": warm.get("exitcode")}
    if warm.get("exitcode") or code != 200:
        return record, f"curl error {warm.get('exitcode')}, HTTP status {code}; {tail}"
    return record, None


class TcpStack(Stack):
    name = "tcp"
    transport = "tcp"
    ccs = CCS
    capabilities = Capabilities(
        max_connections=MAX_CONNECTIONS,
        max_objects=MAX_OBJECTS,
        streams=("parallel", "sequential"),
        resumption=True,
        zero_rtt=True,
        ecn="sysctl",
    )

    def check(self, cc: str | None, workload: Workload | None = None) -> str:
        """``Stack.check``, and resumption only where one curl process can warm up first
        (module docstring): one connection, its objects one after another."""
        cc = super().check(cc, workload)
        if workload is not None and workload.resumption:
            errs = []
            if workload.connections > 1:
                errs.append(f"session resumption over {workload.connections} connections (at most 1: curl keeps TLS sessions "
                            "per process, so every connection would need its own warm-up during the others' transfers)")  # fmt: skip
            if workload.streams == "parallel" and workload.max_objects_per_connection() > 1:
                errs.append("session resumption with parallel streams (curl would start the warm-up with them: use sequential)")
            if errs:
                raise StackError(f"{self.name} cannot run this workload: " + "; ".join(errs))
        return cc

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
        # tcp_fastopen 3: client and server TFO; h2_app's listener allows it (module docstring).
        return {"net.ipv4.tcp_congestion_control": self.resolve_cc(cc), "net.ipv4.tcp_fastopen": "3"}

    def server_command(self, spec: ServerSpec) -> list[str]:
        self.resolve_cc(spec.cc)
        return hypercorn_command(spec)

    def client_command(self, spec: ClientSpec, config: Path, n_objects: int) -> list[str]:
        """One connection's curl: the URLs (and ``output = /dev/null`` for each) are in
        ``config``, written by ``write_config``; with resumption the warm-up comes first
        (module docstring)."""
        wl = spec.workload
        max_time = max(0.2, spec.timeout_s - 0.5)  # curl reports before it is killed
        cmd = ["curl", "-sS", "--no-progress-meter", "-v", "--trace-time"]
        if wl.streams == "parallel" and n_objects > 1:
            cmd += ["--parallel", "--parallel-max", str(min(n_objects, PARALLEL_MAX))]

        def transfer(limit: float) -> list[str]:
            return [
                "--http2", "--tlsv1.3", "--cacert", str(spec.certs.cert), "--max-time", f"{limit:.3f}",
                "--connect-timeout", f"{min(10.0, limit):.3f}", "-w", "%{stderr}%{json}\\n",
                *(["--tcp-fastopen"] if wl.zero_rtt else []),
            ]  # fmt: skip

        if wl.resumption:
            warm = min(WARMUP_MAX_S, max(0.2, max_time / 2))
            cmd += [*transfer(warm), f"https://{spec.address}:{spec.port}{WARMUP}", "-o", "/dev/null", "--next"]
            cmd += ["--local-port", LOCAL_PORTS]
        return [*cmd, *transfer(max_time), "-K", str(config)]

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
        if wl.zero_rtt:  # the warm-up, not a cookie left from before, gets the TFO cookie
            run_bounded([*netns_exec, "ip", "tcp_metrics", "delete", spec.address], 10.0)
        tfo_before = _tfo_counters(netns_exec)
        env = dict(os.environ)
        if spec.keylog:  # curl (OpenSSL) writes its TLS secrets where SSLKEYLOGFILE says
            Path(spec.workdir).mkdir(parents=True, exist_ok=True)
            env["SSLKEYLOGFILE"] = str(Path(spec.workdir) / KEYLOG_FILE)

        wall, mono = time.time(), time.monotonic()
        ran = run_and_reap(cmds, mono + spec.timeout_s, _Reports, env, subprocess.DEVNULL, subprocess.PIPE)
        procs, readers, spawned, killed = ran.procs, ran.readers, ran.spawned, ran.killed
        tfo_after = _tfo_counters(netns_exec) if tfo_before is not None else None

        # 0 of every time: the first measured connection attempt (module docstring); with
        # resumption each process's first attempt is its warm-up's.
        warmups = 1 if wl.resumption else 0
        tryings = [r.trying_times() for r in readers]
        measured = [t[warmups] for t in tryings if len(t) > warmups]
        t0 = min(measured) if measured else spawned[0]
        firsts = [t[0] if t else None for t in tryings]
        startups = [None if f is None else f - spawned[c] for c, f in enumerate(firsts)]
        known = [f for f in firsts if f is not None]

        objects: list[ObjectResult] = [
            ObjectResult(index=i, size=s, connection=wl.connection_of(i)) for i, s in enumerate(wl.objects)
        ]
        connections = [ConnectionResult(index=c) for c in range(wl.connections)]
        errs: list[str] = []
        extra: JsonObject = {"returncodes": [p.returncode for p in procs], "local_ports": [], "cc": spec.cc,
                                 "startup_s": min(known) - spawned[0] if known else None,
                                 "startup_s_connections": startups,
                                 "streams_at_once": [r.most_in_flight for r in readers]}  # fmt: skip
        http_codes: list[int | None] = [None] * len(wl.objects)
        http_versions: list[str | None] = [None] * len(wl.objects)
        stamped = 0  # requests timed by curl's own stamp (else: when its line was read)
        stamped_handshakes = 0  # connections whose TLS end is the trace's line
        for c, idx in enumerate(per_conn):
            reader = readers[c]
            reports: dict[int, JsonObject] = {}
            for report in reader.reports:  # the warm-up's (?warmup) is not an object's
                m = _URL_INDEX.search(str(report.get("url_effective") or ""))
                if m and int(m.group(1)) in idx:
                    reports[int(m.group(1))] = report
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
                http_codes[i], http_versions[i] = _judge(o, w, stderr)
            # One connection per process, or it is not the workload asked for.
            ports = sorted(
                {w["local_port"] for w in reports.values() if isinstance(w.get("local_port"), int) and not w.get("exitcode")}
                - {-1, 0}
            )
            connects = sum(int(w.get("num_connects") or 0) for w in reports.values())
            extra["local_ports"].append(ports[0] if len(ports) == 1 else ports)
            if len(ports) > 1 or connects > 1:
                errs.append(f"connection {c}: curl opened {connects} TCP connections (local ports {ports}), not one")
            if len(reader.tls) > warmups:
                connections[c].resumed = reader.tls[warmups].resumed()
            done = reader.handshake_time(warmups)
            if done is not None:
                connections[c].handshake_s = done - t0
                stamped_handshakes += 1
            if wl.resumption:  # a failed warm-up fails the workload, as for the other stacks
                warm, failed = _warmup(reader)
                extra.setdefault("warmup", []).append(warm)
                if failed:
                    errs.append(f"resumption: the warm-up of connection {c} failed ({failed})")
        # Data in the SYN acknowledged by the server, from the namespace's counter.
        grew = None if tfo_before is None or tfo_after is None else tfo_after[TFO_KEYS[0]] - tfo_before[TFO_KEYS[0]]
        extra["tfo_active"] = grew
        for conn in connections:
            conn.early_data = None if grew is None else (grew == len(connections) if grew else False)
            if grew is not None and grew and grew != len(connections):
                conn.early_data = None  # some did, which ones cannot be told
        extra["http_codes"], extra["http_versions"] = http_codes, http_versions
        extra["stamped_requests"] = stamped
        extra["stamped_handshakes"] = stamped_handshakes
        return TransferResult.from_parts(objects, connections, request_wall=wall + (t0 - mono), error="; ".join(errs) or None,
                                         extra=extra)  # fmt: skip

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
