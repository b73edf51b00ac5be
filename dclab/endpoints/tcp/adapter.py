"""Kernel TCP: Hypercorn (HTTP/2 over TLS 1.3, ``dclab.endpoints.tcp.h2_app``) as server and
``curl --http2`` (7.88) as client.

The congestion controller is the sender's, i.e. the server namespace's
``net.ipv4.tcp_congestion_control``; ``server_sysctls`` says so and the testbed applies it
(``cubic`` also needs the root namespace's ``net.ipv4.tcp_allowed_congestion_control`` to
list it, which the testbed handles). The MSS clamp (1280) is the testbed's, too.

Timings come from curl's ``-w '%{json}'`` and are relative to curl's own start of the
transfer (``request_s`` = 0): ``handshake_s`` = ``time_appconnect`` (TLS done),
``first_byte_s`` = ``time_starttransfer``, ``last_byte_s`` = ``time_total``. ``request_wall``
is ``time.time()`` just before the curl process is started. ``ok`` only when curl exited 0,
the status is 200, the negotiated HTTP version is 2 and ``size_download`` equals the size.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import platform
import shutil
import subprocess
import sys
import time

from ..base import DownloadResult, DownloadSpec, ServerSpec, Stack, run_bounded

CCS = ("cubic", "reno", "bbr")


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


class TcpStack(Stack):
    name = "tcp"
    transport = "tcp"
    ccs = CCS

    def missing(self) -> list[str]:
        out = []
        if shutil.which("curl") is None:
            out.append("curl not found: apt-get install curl")
        else:
            p = subprocess.run(["curl", "--version"], capture_output=True, text=True)
            if "HTTP2" not in p.stdout:
                out.append("curl lacks HTTP/2 support: apt-get install curl (built with nghttp2)")
        if importlib.util.find_spec("hypercorn") is None:
            out.append(f"hypercorn not installed for {sys.executable}: pip install 'hypercorn>=0.18'")
        return out

    def server_sysctls(self, cc: str) -> dict[str, str]:
        if cc not in self.ccs:
            raise ValueError(f"kernel TCP has no congestion controller {cc!r}; choose one of {', '.join(self.ccs)}")
        return {"net.ipv4.tcp_congestion_control": cc}

    def server_command(self, spec: ServerSpec) -> list[str]:
        if spec.cc not in self.ccs:
            raise ValueError(f"kernel TCP has no congestion controller {spec.cc!r}")
        return hypercorn_command(spec)

    def client_command(self, spec: DownloadSpec) -> list[str]:
        max_time = max(0.2, spec.timeout_s - 0.5)  # curl reports before run_bounded kills it
        return [
            "curl",
            "--http2",
            "--tlsv1.3",
            "-sS",
            "-o",
            "/dev/null",
            "--cacert",
            str(spec.certs.cert),
            "--max-time",
            f"{max_time:.3f}",
            "--connect-timeout",
            f"{min(10.0, max_time):.3f}",
            "-w",
            "%{json}",
            f"https://{spec.address}:{spec.port}/{spec.size}",
        ]

    def download(self, spec: DownloadSpec, netns_exec: list[str]) -> DownloadResult:
        try:
            wall = time.time()
            p = run_bounded([*netns_exec, *self.client_command(spec)], spec.timeout_s)
            return self._result(spec, p, wall)
        except Exception as e:  # noqa: BLE001 - a download never raises
            return DownloadResult(ok=False, bytes=0, error=f"{type(e).__name__}: {e}")

    @staticmethod
    def _result(spec: DownloadSpec, p: subprocess.CompletedProcess[str], wall: float) -> DownloadResult:
        stderr = (p.stderr or "").strip()
        try:
            w = json.loads(p.stdout) if p.stdout.strip() else {}
        except json.JSONDecodeError:
            w = {}
        if not w:
            return DownloadResult(
                ok=False,
                bytes=0,
                request_wall=wall,
                error=f"curl exited {p.returncode} without a report: {stderr[-500:]}",
                extra={"returncode": p.returncode},
            )

        def t(key: str) -> float | None:
            v = w.get(key)
            return float(v) if isinstance(v, (int, float)) and v > 0 else None

        size = int(w.get("size_download") or 0)
        code = int(w.get("response_code") or w.get("http_code") or 0)
        version = str(w.get("http_version") or "")
        res = DownloadResult(
            ok=False,
            bytes=size,
            request_wall=wall,
            handshake_s=t("time_appconnect"),
            first_byte_s=t("time_starttransfer"),
            last_byte_s=t("time_total"),
            extra={
                "returncode": p.returncode,
                "http_code": code,
                "http_version": version,
                "time_connect": t("time_connect"),
                "cc": spec.cc,
            },
        )
        errs = []
        if p.returncode != 0 or w.get("exitcode"):
            errs.append(f"curl exited {p.returncode} ({w.get('errormsg') or stderr[-300:]})")
        if code != 200:
            errs.append(f"HTTP status {code}")
        if version != "2":
            errs.append(f"HTTP version {version or 'none'}, not 2")
        if size != spec.size:
            errs.append(f"got {size} of {spec.size} bytes")
        if errs:
            res.error = "; ".join(errs)
        else:
            res.ok = True
        return res

    def version(self) -> str:
        parts = []
        try:
            parts.append(f"hypercorn {importlib.metadata.version('hypercorn')}")
        except importlib.metadata.PackageNotFoundError:
            parts.append("hypercorn missing")
        try:
            p = subprocess.run(["curl", "--version"], capture_output=True, text=True, timeout=5)
            parts.append(" ".join(p.stdout.split()[:2]) or "curl unknown")
        except (OSError, subprocess.SubprocessError):
            parts.append("curl missing")
        parts.append(f"linux {platform.release()}")
        return ", ".join(parts)
