"""aioquic (Python QUIC) behind the Stack interface: our own HTTP/3 server and client
(``h3_server.py``, ``h3_client.py``) on aioquic's asyncio API."""

from __future__ import annotations

import json
import sys

from ..base import DownloadResult, DownloadSpec, ServerSpec, Stack, run_bounded

SERVER_MODULE = "dclab.endpoints.aioquic.h3_server"
CLIENT_MODULE = "dclab.endpoints.aioquic.h3_client"


def _tail(text: str, n: int = 600) -> str:
    text = (text or "").strip()
    return text if len(text) <= n else "..." + text[-n:]


class AioquicStack(Stack):
    name = "aioquic"
    transport = "udp"
    ccs = ("reno", "cubic")

    def missing(self) -> list[str]:
        try:
            import aioquic  # noqa: F401
            from aioquic.h3.connection import H3Connection  # noqa: F401
        except ImportError as e:
            return [f"aioquic is not importable ({e}): pip install aioquic (version in requirements.lock)"]
        return []

    def server_command(self, spec: ServerSpec) -> list[str]:
        cmd = [
            sys.executable, "-m", SERVER_MODULE,
            "--host", spec.address,
            "--port", str(spec.port),
            "--cert", str(spec.certs.cert),
            "--key", str(spec.certs.key),
            "--cc", spec.cc,
        ]  # fmt: skip
        if spec.qlog:
            cmd += ["--qlog-dir", str(spec.workdir / "qlog-server")]
        return cmd

    def client_command(self, spec: DownloadSpec) -> list[str]:
        cmd = [
            sys.executable, "-m", CLIENT_MODULE,
            "--host", spec.address,
            "--port", str(spec.port),
            "--size", str(spec.size),
            "--cc", spec.cc,
            "--ca", str(spec.certs.cert),
            "--timeout", f"{spec.timeout_s:g}",
        ]  # fmt: skip
        if spec.qlog:
            cmd += ["--qlog-dir", str(spec.workdir / "qlog-client")]
        return cmd

    def download(self, spec: DownloadSpec, netns_exec: list[str]) -> DownloadResult:
        if spec.cc not in self.ccs:
            return DownloadResult(ok=False, bytes=0, error=f"aioquic: unknown congestion control {spec.cc!r} (offers {', '.join(self.ccs)})")
        try:
            p = run_bounded([*netns_exec, *self.client_command(spec)], spec.timeout_s + 10)
        except Exception as e:  # noqa: BLE001 - never raise for a failed download
            return DownloadResult(ok=False, bytes=0, error=f"cannot run the aioquic client: {type(e).__name__}: {e}")
        d = None
        for line in reversed((p.stdout or "").splitlines()):
            line = line.strip()
            if line.startswith("{"):
                try:
                    d = json.loads(line)
                    break
                except ValueError:
                    continue
        extra = {"returncode": p.returncode}
        if not isinstance(d, dict):
            err = f"aioquic client printed no result (exit {p.returncode})"
            if p.stderr and p.stderr.strip():
                err += ": " + _tail(p.stderr)
            return DownloadResult(ok=False, bytes=0, error=err, extra=extra)

        def num(key: str) -> float | None:
            v = d.get(key)
            return float(v) if isinstance(v, (int, float)) else None

        nbytes = d.get("bytes") if isinstance(d.get("bytes"), int) else 0
        ok = d.get("ok") is True and nbytes == spec.size
        error = d.get("error")
        if not ok:
            error = error or f"got {nbytes} of {spec.size} bytes"
            if p.stderr and p.stderr.strip():
                error += " | stderr: " + _tail(p.stderr)
        return DownloadResult(
            ok=ok,
            bytes=nbytes,
            request_s=0.0,
            handshake_s=num("handshake_s"),
            first_byte_s=num("first_byte_s"),
            last_byte_s=num("last_byte_s"),
            error=None if ok else error,
            request_wall=num("request_wall"),
            extra=extra,
        )

    def version(self) -> str:
        try:
            import aioquic

            return str(aioquic.__version__)
        except Exception:  # noqa: BLE001
            return "unknown"
