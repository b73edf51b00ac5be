"""The adapter of every stack whose client is our own program printing one JSON line
(aioquic's ``h3_client.py``, the quic-go and quinn binaries): the one command-line
contract of those servers and clients, the workload handed over in a file, and the JSON
line read back into a ``TransferResult``.

Server: ``PROGRAM --host A --port P --cert F --key F --cc CC [--qlog-dir D] [--keylog F]
[--max-datagram-size N]``. Client: ``PROGRAM --host A --port P --workload FILE --cc CC
--ca F --timeout S`` and the same options. The client prints (``aioquic/h3_client.py``'s
docstring has the whole form)::

    {"ok": ..., "objects": [...], "connections": [...], "request_wall": ...,
     "ready_mono": ..., "cpu_s": ..., "warmup": ..., "workload_error": ..., "stack": {...}}

``request_s`` = 0 (``request_wall``) is taken inside the client, when the measured
connections start (after the warm-up, if any), so the process's start-up is in no time.
``extra["startup_s"]`` is that start-up: from just before the client process is started
(``ip netns exec`` included) to when it was ready to send its first packet (the client's
``ready_mono``, CLOCK_MONOTONIC like ``time.monotonic()``); ``startup_s_connections``
repeats it for each connection, since one process makes them all."""

from __future__ import annotations

import dataclasses
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from abc import abstractmethod
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ..files import JsonObject
from ..paths import ROOT
from .base import (
    KEYLOG_FILE,
    Capabilities,
    ClientSession,
    ClientSpec,
    ConnectionResult,
    ObjectResult,
    ServerSpec,
    Stack,
    TransferResult,
    Workload,
    run_bounded,
)

STOP_S = 10.0  # beyond the client's own timeout: its watchdog ends it 5 s after
SESSION_LOG = "client-serve.log"  # a --serve client's standard error, in the client's workdir
CLOSE_S = 5.0  # a --serve client ends this long after its input closed, or is killed


def _tail(text: str, n: int = 600) -> str:
    text = (text or "").strip()
    return text if len(text) <= n else "..." + text[-n:]


def _num(d: JsonObject, key: str) -> float | None:
    v = d.get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _flag(d: JsonObject, key: str) -> bool | None:
    v = d.get(key)
    return v if isinstance(v, bool) else None


class JsonClientStack(Stack):
    """A QUIC stack whose server and client follow this module's contract."""

    transport = "udp"

    @abstractmethod
    def program(self, role: str) -> list[str]:
        """The start of the command that runs our ``server`` or ``client``."""

    def inspection_args(self, spec: ServerSpec | ClientSpec, role: str) -> list[str]:
        """qlog and key log on request, into the end's workdir; the datagram size."""
        args: list[str] = []
        if spec.qlog:
            args += ["--qlog-dir", str(Path(spec.workdir) / f"qlog-{role}")]
        if spec.keylog:
            Path(spec.workdir).mkdir(parents=True, exist_ok=True)
            args += ["--keylog", str(Path(spec.workdir) / KEYLOG_FILE)]
        if spec.quic_datagram is not None and self.capabilities.fixed_datagram is None:
            args += ["--max-datagram-size", str(spec.quic_datagram)]
        return args

    def server_command(self, spec: ServerSpec) -> list[str]:
        cc = self.resolve_cc(spec.cc)
        return [
            *self.program("server"),
            "--host", spec.address,
            "--port", str(spec.port),
            "--cert", str(spec.certs.cert),
            "--key", str(spec.certs.key),
            "--cc", cc,
            *self.inspection_args(spec, "server"),
        ]  # fmt: skip

    def client_command(self, spec: ClientSpec, workload_file: Path | None) -> list[str]:
        """The client command; the workload is read from ``workload_file`` (see
        ``write_workload``), or with None (``--serve``) one per line of standard input."""
        return [
            *self.program("client"),
            "--host", spec.address,
            "--port", str(spec.port),
            *(["--serve"] if workload_file is None else ["--workload", str(workload_file)]),
            "--cc", spec.cc,
            "--ca", str(spec.certs.cert),
            "--timeout", f"{spec.timeout_s:g}",
            *self.inspection_args(spec, "client"),
        ]  # fmt: skip

    @staticmethod
    def write_workload(spec: ClientSpec) -> Path:
        """A file (not an argument: 10,000 objects exceed the kernel's limit on one
        argument) holding the workload as JSON, in ``spec.workdir``."""
        spec.workdir.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix="workload-", suffix=".json", dir=spec.workdir)
        with os.fdopen(fd, "w") as f:
            json.dump(spec.workload.to_dict(), f)
        return Path(name)

    def run(self, spec: ClientSpec, netns_exec: list[str]) -> TransferResult:
        refused = self.refusal(spec)
        if refused is not None:
            return refused
        try:
            wfile = self.write_workload(spec)
            try:
                spawned = time.monotonic()
                p = run_bounded([*netns_exec, *self.client_command(spec, wfile)], spec.timeout_s + STOP_S)
            finally:
                wfile.unlink(missing_ok=True)
            return self._result(spec, p, spawned)
        except Exception as e:  # noqa: BLE001 - run never raises
            return TransferResult.failed(f"cannot run the {self.name} client: {type(e).__name__}: {e}")

    def session(self, spec: ClientSpec, netns_exec: list[str]) -> ClientSession | None:
        return JsonClientSession(self, spec, netns_exec) if self.capabilities.serve else None

    def _result(self, spec: ClientSpec, p: Any, spawned: float | None = None) -> TransferResult:
        d = None
        for line in reversed((p.stdout or "").splitlines()):
            line = line.strip()
            if line.startswith("{"):
                try:
                    d = json.loads(line)
                    break
                except ValueError:
                    continue
        extra: JsonObject = {"returncode": p.returncode}
        if not isinstance(d, dict):
            err = f"{self.name} client printed no result (exit {p.returncode})"
            if p.stderr and p.stderr.strip():
                err += ": " + _tail(p.stderr)
            return TransferResult.failed(err, extra=extra)
        if d.get("warmup") is not None:
            extra["warmup"] = d["warmup"]
        if isinstance(d.get("cpu_s"), (int, float)):
            extra["cpu_s"] = d["cpu_s"]  # the client's CPU seconds after start-up
        if isinstance(d.get("stack"), dict):
            extra["stack"] = d["stack"]  # what the client tells of its library (version, sockets)
        if isinstance(d.get("served"), int):
            extra["served"] = d["served"]  # --serve: workloads its process ran, this one included
        ready = _num(d, "ready_mono")
        startup = ready - spawned if ready is not None and spawned is not None else None
        extra["startup_s"] = startup
        extra["startup_s_connections"] = [startup] * spec.workload.connections

        # Rebuilt from the per-object lines; an object's ok is re-checked against its size.
        wl = spec.workload
        reported = {o.get("index"): o for o in d.get("objects") or [] if isinstance(o, dict)}
        objects = []
        for i, size in enumerate(wl.objects):
            o = reported.get(i, {})
            got = o.get("bytes")
            nbytes = got if isinstance(got, int) else 0
            ok = o.get("ok") is True and nbytes == size
            objects.append(
                ObjectResult(
                    index=i, size=size, connection=wl.connection_of(i), bytes=nbytes, ok=ok,
                    request_s=_num(o, "request_s"), first_byte_s=_num(o, "first_byte_s"),
                    last_byte_s=_num(o, "last_byte_s"),
                    error=None if ok else (o.get("error") or ("not reported" if not o else f"got {nbytes} of {size} bytes")),
                )
            )  # fmt: skip
        conns_in = {c.get("index"): c for c in d.get("connections") or [] if isinstance(c, dict)}
        connections = []
        for c in range(wl.connections):
            cd = conns_in.get(c, {})
            connections.append(
                ConnectionResult(
                    index=c, handshake_s=_num(cd, "handshake_s"), resumed=_flag(cd, "resumed"),
                    early_data=_flag(cd, "early_data"),
                )
            )  # fmt: skip
        # An error of the whole workload (not of one object), e.g. a failed warm-up, or
        # the client's own summary when it failed but no object did.
        error = d.get("workload_error") or None
        if error is None and d.get("ok") is not True and all(o.ok for o in objects):
            error = d.get("error") or "the client reported failure"
        r = TransferResult.from_parts(
            objects, connections, request_wall=_num(d, "request_wall"), error=error, extra=extra
        )
        if not r.ok and p.stderr and p.stderr.strip():
            r.error = f"{r.error} | stderr: {_tail(p.stderr)}"
        return r


class JsonClientSession(ClientSession):
    """A stack's client started once with ``--serve`` in the client namespace: each
    workload is one JSON line to its standard input, its result the next line of its
    output. The process starts at the first workload; one that exits, or gives no line
    within the timeout plus ``STOP_S``, is stopped and the next workload starts another.
    Its standard error is appended to ``SESSION_LOG`` in the client's workdir. Only a
    process's first workload has a start-up (``extra["startup_s"]``; None after it).

    The process is started from a thread of the session's own, which lives until
    :meth:`close`: the namespace wrapper's parent-death signal (``testbed/netns.py``)
    fires when the *thread* that started a process ends, and each ``run`` may come from
    a short-lived thread (``Testbed.run_clients`` starts one per flow), which would kill
    the client right after its result line, before it closed its connections."""

    def __init__(self, stack: JsonClientStack, spec: ClientSpec, netns_exec: list[str]) -> None:
        self.stack, self.spec, self.netns_exec = stack, spec, netns_exec
        self.started = 0  # client processes started
        self._proc: subprocess.Popen[bytes] | None = None
        self._buf = b""
        self._spawner: ThreadPoolExecutor | None = None

    @property
    def log(self) -> Path:
        return Path(self.spec.workdir) / SESSION_LOG

    def run(self, workload: Workload) -> TransferResult:
        spec = dataclasses.replace(self.spec, workload=workload)
        refused = self.stack.refusal(spec)
        if refused is not None:
            return refused
        try:
            proc = self._process()
            assert proc.stdin is not None
            written = time.monotonic()
            proc.stdin.write((json.dumps(workload.to_dict()) + "\n").encode())
            proc.stdin.flush()
            line = self._line(written + spec.timeout_s + STOP_S)
        except (OSError, ValueError) as e:  # a broken pipe: the client is gone
            line, written = None, time.monotonic()
            why = f"{type(e).__name__}: {e}"
        else:
            why = "no result line within the timeout" if self._proc and self._proc.poll() is None else "it exited"
        if line is None:
            self._stop()
            return TransferResult.failed(f"{self.stack.name} client (--serve) gave no result: {why}"
                                         f"{_log_tail(self.log)}")  # fmt: skip
        r = self.stack._result(spec, subprocess.CompletedProcess([], 0, line, ""), written)
        if r.extra.get("served", 1) > 1:  # a running process: no start-up in this workload
            r.extra["startup_s"] = None
            r.extra["startup_s_connections"] = [None] * workload.connections
        return r

    def close(self) -> None:
        proc = self._proc
        if proc is not None and proc.stdin is not None:
            try:
                proc.stdin.close()  # end of input: the client ends after its current workload
                proc.wait(timeout=CLOSE_S)
            except (OSError, subprocess.TimeoutExpired):
                pass  # killed by _stop
        self._stop()
        self._end_spawner()

    def _end_spawner(self) -> None:
        spawner, self._spawner = self._spawner, None
        if spawner is not None:
            spawner.shutdown()

    def _process(self) -> subprocess.Popen[bytes]:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        self._stop()
        Path(self.spec.workdir).mkdir(parents=True, exist_ok=True)
        if self._spawner is None:
            self._spawner = ThreadPoolExecutor(1, thread_name_prefix="client-session")
        with open(self.log, "ab") as err:  # the child keeps its own descriptor
            self._proc = self._spawner.submit(
                subprocess.Popen, [*self.netns_exec, *self.stack.client_command(self.spec, None)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
            ).result()  # fmt: skip
        self._buf = b""
        self.started += 1
        return self._proc

    def _line(self, deadline: float) -> str | None:
        """The client's next output line, None at end of output or past ``deadline``."""
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line.decode(errors="replace")

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            for f in (proc.stdin, proc.stdout):
                if f is not None:
                    f.close()


def _log_tail(path: Path) -> str:
    try:
        text = path.read_bytes()[-2000:].decode(errors="replace")
    except OSError:
        return ""
    return f": {_tail(text)}" if text.strip() else ""


class BinaryStack(JsonClientStack):
    """A stack whose server and client are one compiled program of ours (``PROGRAM server
    ...``, ``PROGRAM client ...``, ``PROGRAM version``), built by `make build` into
    ``binary``, sending datagrams of ``datagrams`` = (smallest, first, largest) bytes:
    without a fixed size the first ones have the middle size (path MTU discovery then finds
    what the path carries). Its client, by default, runs up to 64 connections and 10,000
    objects, with parallel or sequential streams, byte ranges and pre-established
    connections (no resumption, 0-RTT or ``cc_options``); a stack sets only its ``ccs``."""

    capabilities = Capabilities(
        max_connections=64,
        max_objects=10_000,
        streams=("parallel", "sequential"),
        ranges=True,
        preconnect=True,
        ecn="library",  # quic-go, quinn and noq send ECT(0) and report CE by default
    )
    binary: Path
    tool: str  # the build tool `make build` needs for it (go, cargo)
    build_hint: str  # how to get that tool
    datagrams: tuple[int, int, int]

    def program(self, role: str) -> list[str]:
        return [str(self.binary), role]

    def missing(self) -> list[str]:
        if self.binary.is_file():
            return []
        how = f"make build ({self.build_hint})"
        if shutil.which(self.tool) is None:
            how += f"; no `{self.tool}` found"
        return [f"{self.binary.relative_to(ROOT)} not built: {how}"]

    def datagram_error(self, quic_datagram: int | None, largest: int) -> str | None:
        lo, first, hi = self.datagrams
        if quic_datagram is not None and not lo <= quic_datagram <= hi:
            return f"--quic-datagram: {self.name} sends {lo} to {hi}-byte datagrams (got {quic_datagram})"
        size = first if quic_datagram is None else quic_datagram
        if size > largest:
            return f"--mtu: {self.name} sends {size}-byte datagrams, more than the MTU carries ({largest} bytes of UDP payload)"
        return None

    def version(self) -> str:
        try:
            p = subprocess.run([str(self.binary), "version"], check=False, capture_output=True, text=True, timeout=5)
        except (OSError, subprocess.SubprocessError):
            return f"{self.name} unknown"
        out = p.stdout.strip()
        return out if p.returncode == 0 and out else f"{self.name} unknown"
