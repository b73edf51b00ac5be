"""The one interface every transport stack implements.

A stack knows how to start an HTTP server for generated bodies (``GET /<n>`` returns n
bytes) inside the server namespace, and how to download n bytes from it inside the client
namespace, reporting what it measured. The testbed owns the namespaces, the processes'
lifetime and the host settings; a stack only builds commands and reads results.
"""

from __future__ import annotations

import subprocess
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Certs:
    """A self-signed certificate for the server address (made by the harness)."""

    cert: Path
    key: Path


@dataclass(frozen=True)
class ServerSpec:
    port: int
    cc: str
    workdir: Path  # logs, qlogs and scratch files of this server go here
    certs: Certs
    address: str  # the server's address, 198.18.x.y
    qlog: bool = False


@dataclass(frozen=True)
class DownloadSpec:
    address: str
    port: int
    size: int  # bytes to download
    cc: str
    workdir: Path
    certs: Certs  # the client trusts this certificate (or skips verification)
    timeout_s: float
    qlog: bool = False


@dataclass
class DownloadResult:
    """What one download measured. Times are seconds relative to the request (0), or
    None where the stack cannot tell."""

    ok: bool
    bytes: int
    request_s: float = 0.0
    handshake_s: float | None = None  # handshake complete
    first_byte_s: float | None = None
    last_byte_s: float | None = None
    error: str | None = None
    # Wall-clock time (time.time()) of the request, to line results up with dcemu stats.
    request_wall: float | None = None
    extra: dict = field(default_factory=dict)

    @property
    def goodput_mbps(self) -> float | None:
        """bytes / (last byte - request), as in testbed-reference.md."""
        if not self.ok or not self.last_byte_s or self.last_byte_s <= self.request_s:
            return None
        return self.bytes * 8 / (self.last_byte_s - self.request_s) / 1e6

    def to_dict(self) -> dict:
        d = asdict(self)
        d["goodput_mbps"] = self.goodput_mbps
        return d


class Stack(ABC):
    """A transport stack (one module per stack under dclab/endpoints/)."""

    name: str  # as given to --stack
    transport: str  # "udp" or "tcp"
    ccs: tuple[str, ...]  # congestion controllers it offers; ccs[0] is the default

    @abstractmethod
    def missing(self) -> list[str]:
        """What is not installed (empty when ready), each with how to fix it."""

    @abstractmethod
    def server_command(self, spec: ServerSpec) -> list[str]:
        """The server command, run inside the server namespace by the testbed."""

    def server_ready(self, spec: ServerSpec) -> bool:
        """Whether the started server accepts requests; the default trusts it after start."""
        return True

    @abstractmethod
    def download(self, spec: DownloadSpec, netns_exec: list[str]) -> DownloadResult:
        """Runs one download in the client namespace (prefix commands with ``netns_exec``)
        and returns what it measured. Must not raise for a failed download: return
        ``ok=False`` with the error. Must end within ``spec.timeout_s``."""

    def server_sysctls(self, cc: str) -> dict[str, str]:
        """Per-namespace sysctls the server namespace needs for ``cc`` (kernel TCP)."""
        return {}

    def version(self) -> str:
        return "unknown"


def run_bounded(cmd: list[str], timeout_s: float, **kw) -> subprocess.CompletedProcess[str]:
    """Runs a command with a hard time limit; a timeout becomes returncode -9."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, **kw)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        return subprocess.CompletedProcess(cmd, -9, out, err + f"\ntimed out after {timeout_s} s")
