"""aioquic (Python QUIC) behind the Stack interface: our own HTTP/3 server and client
(``h3_server.py``, ``h3_client.py``) on aioquic's asyncio API. The client runs the whole
workload in one process; this module writes the workload to a file, starts the client in
the client namespace and reads back the JSON line it prints. ``quic_datagram`` of the specs
becomes both ends' ``--max-datagram-size`` (QuicConfiguration.max_datagram_size; their
default is ``h3_server.DEFAULT_DATAGRAM``).

``request_s`` = 0 (``request_wall``) is taken inside the client, when the measured
connections start (after the warm-up, if any), so the process's start-up is in no time.
``extra["startup_s"]`` is that start-up: from just before the client process is started
(``ip netns exec`` included) to when it was ready to send its first packet (the client's
``ready_mono``: the warm-up's first packet with resumption); ``startup_s_connections``
repeats it for each connection, since one process makes them all."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ..base import (
    Capabilities,
    ClientSpec,
    ConnectionResult,
    ObjectResult,
    ServerSpec,
    Stack,
    TransferResult,
    run_bounded,
)

SERVER_MODULE = "dclab.endpoints.aioquic.h3_server"
MQUIC_LOG = "mquic.jsonl"  # in the server's workdir: the mQUIC groups' JSON lines
MQUIC_CCS = ("mquic-reno", "mquic-cubic", "mquic-bbr")
# Workload.cc_options knobs of AioquicMquicStack (dclab.endpoints.aioquic.mquic.OPTIONS)
MQUIC_OPTIONS = ("mquic_group", "mquic_n", "mquic_sync", "mquic_params", "mquic_iw")
CLIENT_MODULE = "dclab.endpoints.aioquic.h3_client"
STOP_S = 10.0  # beyond the client's own timeout: its watchdog ends it 5 s after


def _tail(text: str, n: int = 600) -> str:
    text = (text or "").strip()
    return text if len(text) <= n else "..." + text[-n:]


def _num(d: dict[str, Any], key: str) -> float | None:
    v = d.get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _flag(d: dict[str, Any], key: str) -> bool | None:
    v = d.get(key)
    return v if isinstance(v, bool) else None


class AioquicStack(Stack):
    name = "aioquic"
    transport = "udp"
    ccs: tuple[str, ...] = ("reno", "cubic", "bbr")  # bbr: our BBR v1 (bbr.py), registered by the server and client
    capabilities = Capabilities(
        max_connections=64,
        max_objects=10_000,
        streams=("parallel", "sequential"),
        resumption=True,
        zero_rtt=True,
        ranges=True,
        preconnect=True,
    )

    def missing(self) -> list[str]:
        try:
            import aioquic  # noqa: F401
            from aioquic.h3.connection import H3Connection  # noqa: F401
        except ImportError as e:
            return [f"aioquic is not importable ({e}): pip install aioquic (version in requirements.lock)"]
        return []

    def program(self, role: str) -> list[str]:
        """The start of the command that runs our ``server`` or ``client`` (a subclass may
        run another interpreter and script)."""
        return [sys.executable, "-m", SERVER_MODULE if role == "server" else CLIENT_MODULE]

    def server_command(self, spec: ServerSpec) -> list[str]:
        cc = self.resolve_cc(spec.cc)
        cmd = [
            *self.program("server"),
            "--host", spec.address,
            "--port", str(spec.port),
            "--cert", str(spec.certs.cert),
            "--key", str(spec.certs.key),
            "--cc", cc,
        ]  # fmt: skip
        if spec.qlog:
            cmd += ["--qlog-dir", str(spec.workdir / "qlog-server")]
        if spec.quic_datagram is not None and self.capabilities.fixed_datagram is None:
            cmd += ["--max-datagram-size", str(spec.quic_datagram)]
        if cc.startswith("mquic-"):
            cmd += ["--mquic-log", str(spec.workdir / MQUIC_LOG)]
        return cmd

    def client_command(self, spec: ClientSpec, workload_file: Path) -> list[str]:
        """The client command; the workload is read from ``workload_file`` (see
        ``write_workload``)."""
        cmd = [
            *self.program("client"),
            "--host", spec.address,
            "--port", str(spec.port),
            "--workload", str(workload_file),
            "--cc", spec.cc,
            "--ca", str(spec.certs.cert),
            "--timeout", f"{spec.timeout_s:g}",
        ]  # fmt: skip
        if spec.qlog:
            cmd += ["--qlog-dir", str(spec.workdir / "qlog-client")]
        if spec.quic_datagram is not None and self.capabilities.fixed_datagram is None:
            cmd += ["--max-datagram-size", str(spec.quic_datagram)]
        return cmd

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
            return TransferResult.failed(f"cannot run the aioquic client: {type(e).__name__}: {e}")

    @staticmethod
    def _result(spec: ClientSpec, p: Any, spawned: float | None = None) -> TransferResult:
        d = None
        for line in reversed((p.stdout or "").splitlines()):
            line = line.strip()
            if line.startswith("{"):
                try:
                    d = json.loads(line)
                    break
                except ValueError:
                    continue
        extra: dict[str, Any] = {"returncode": p.returncode}
        if not isinstance(d, dict):
            err = f"aioquic client printed no result (exit {p.returncode})"
            if p.stderr and p.stderr.strip():
                err += ": " + _tail(p.stderr)
            return TransferResult.failed(err, extra=extra)
        if d.get("warmup") is not None:
            extra["warmup"] = d["warmup"]
        if isinstance(d.get("cpu_s"), (int, float)):
            extra["cpu_s"] = d["cpu_s"]  # the client's CPU seconds after start-up
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
            )
        conns_in = {c.get("index"): c for c in d.get("connections") or [] if isinstance(c, dict)}
        connections = []
        for c in range(wl.connections):
            cd = conns_in.get(c, {})
            connections.append(
                ConnectionResult(
                    index=c, handshake_s=_num(cd, "handshake_s"), resumed=_flag(cd, "resumed"),
                    early_data=_flag(cd, "early_data"),
                )
            )
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

    def version(self) -> str:
        try:
            import aioquic

            return str(aioquic.__version__)
        except Exception:  # noqa: BLE001
            return "unknown"


class AioquicMquicStack(AioquicStack):
    """aioquic with mQUIC (docs/mquic.md, "The server"): the controllers ``mquic-reno``,
    ``mquic-cubic`` and ``mquic-bbr`` (the server runs them, the client the wrapped reno,
    cubic or bbr) and the per-connection ``cc_options`` ``mquic_group``, ``mquic_n``,
    ``mquic_sync`` (full|cwnd|off), ``mquic_params`` (aioquic|paper) and ``mquic_iw``
    (packets). A variant (endpoints.VARIANTS), not offered by --stack, so that
    ``aioquic``'s advertised controllers and options stay as they were; the server
    appends its groups' lines to ``<server workdir>/mquic.jsonl``."""

    name = "aioquic-mquic"
    ccs = MQUIC_CCS
    capabilities = dataclasses.replace(AioquicStack.capabilities, cc_options=MQUIC_OPTIONS)
