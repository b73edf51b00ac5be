"""The one interface every transport stack implements.

A stack starts an HTTP server for generated bodies (``GET /<n>`` returns n bytes) inside
the server namespace, and runs a client *workload* inside the client namespace: one or
more connections fetching a list of objects, over streams in parallel or one after
another, optionally resuming a session and sending the requests in 0-RTT or handshaking
every connection before the requests; the objects may also be byte ranges of one body
(``range: bytes=A-B``). It reports per-object and per-connection timings besides the
totals. The testbed owns the
namespaces, the processes' lifetime and the host settings; a stack only builds commands
and reads results.

What a stack can do is declared once (``ccs``, ``capabilities``) and checked in one place
(``Stack.check``), before anything starts.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import IO, Any, Generic, Literal, TypeVar

from ..errors import InputError
from ..files import JsonObject, clip

MAX_CONNECTIONS = 64
# Where an end asked for ``keylog`` writes its TLS secrets, in its workdir: the NSS key log
# format (SSLKEYLOGFILE's), which Wireshark and tshark read to decrypt TLS and QUIC.
KEYLOG_FILE = "tls-keys.log"
MAX_OBJECTS = 10_000


class StackError(InputError):
    """A stack cannot do what was asked (congestion control, workload); the message names
    the option and what the stack offers."""


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
    quic_datagram: int | None = None  # max UDP payload a QUIC server sends; None: the stack's default
    keylog: bool = False  # TLS secrets into workdir/KEYLOG_FILE (NSS key log format)


@dataclass(frozen=True)
class Workload:
    """What one client fetches.

    ``objects`` are body sizes in bytes, each fetched as ``GET /<size>``. Object i goes on
    connection ``assignment[i]`` (0-based; default round-robin over ``connections``). On
    one connection, ``streams="parallel"`` requests all its objects at once, one stream
    each; ``"sequential"`` requests the next when the previous body ended. With
    ``resumption`` a warm-up connection (not measured) obtains a session ticket first and
    every measured connection resumes it; ``zero_rtt`` also sends the requests as 0-RTT
    early data. ``cc_options`` are per-connection stack-specific knobs (empty: none).

    ``ranged``: the objects are consecutive byte ranges of ONE body of ``total_bytes``
    bytes: object i covers bytes ``[sum(objects[:i]), sum(objects[:i+1]))`` and is
    requested as ``GET /<total_bytes>`` with ``range: bytes=A-B`` (B inclusive, RFC 9110);
    it is ok only with status 206 and exactly its range's bytes (``ranges`` builds one
    range per connection). ``preconnect``: every connection completes its handshake
    first; then all requests go out at once, and that moment is the workload's request
    (``request_wall``, 0 of every ``*_s`` time), so the completion time excludes the
    handshake and each connection's ``handshake_s`` is its handshake's duration. A
    connection whose handshake fails or times out fails its objects.
    """

    objects: tuple[int, ...] = (100_000_000,)
    connections: int = 1
    assignment: tuple[int, ...] | None = None
    streams: Literal["parallel", "sequential"] = "parallel"
    resumption: bool = False
    zero_rtt: bool = False
    cc_options: tuple[dict[str, str], ...] = ()
    ranged: bool = False
    preconnect: bool = False

    @classmethod
    def single(cls, size: int) -> Workload:
        """One object on one connection: the study's download."""
        return cls(objects=(size,))

    @classmethod
    def ranges(cls, size: int, n: int, **kw: Any) -> Workload:
        """One body of ``size`` bytes fetched as ``n`` byte ranges of nearly equal size (the
        first ``size % n`` one byte longer), range i on connection i; ``kw`` sets the other
        fields (e.g. ``preconnect=True``). A range of 0 bytes (size < n) is left to
        ``errors``; n < 1 is a ValueError."""
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError(f"ranges: n must be a whole number >= 1 (got {clip(n)})")
        base, extra = divmod(size, n)
        objects = tuple(base + 1 if i < extra else base for i in range(n))
        return cls(objects=objects, connections=n, assignment=tuple(range(n)), ranged=True, **kw)

    @property
    def total_bytes(self) -> int:
        return sum(self.objects)

    def byte_ranges(self) -> list[tuple[int, int] | None]:
        """Each object's byte range ``(first, last)``, both inclusive, when ``ranged``;
        None for every object otherwise (and for an empty object)."""
        out: list[tuple[int, int] | None] = []
        first = 0
        for size in self.objects:
            out.append((first, first + size - 1) if self.ranged and size > 0 else None)
            first += size
        return out

    def path_size(self, i: int) -> int:
        """The n of object i's ``GET /<n>``: the whole body when ``ranged``, else its size."""
        return self.total_bytes if self.ranged else self.objects[i]

    def connection_of(self, i: int) -> int:
        return self.assignment[i] if self.assignment is not None else i % self.connections

    def objects_of(self, c: int) -> list[int]:
        """Indices of the objects connection ``c`` carries, in workload order."""
        return [i for i in range(len(self.objects)) if self.connection_of(i) == c]

    def to_dict(self) -> JsonObject:
        """JSON-ready form (lists for tuples); ``from_dict`` reads it back."""
        d = asdict(self)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}

    @classmethod
    def from_dict(cls, d: JsonObject) -> Workload:
        """Reads ``to_dict``'s form; missing keys take the defaults, unknown keys are a
        ValueError (not a dict: TypeError). The values are not checked here: see ``errors``."""
        if not isinstance(d, dict):
            raise TypeError(f"workload: must be a JSON object (got {type(d).__name__})")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"workload: unknown keys {', '.join(unknown)} (known: {', '.join(sorted(known))})")
        kw = dict(d)
        for key in ("objects", "assignment", "cc_options"):
            if isinstance(kw.get(key), list):
                kw[key] = tuple(kw[key])
        return cls(**kw)

    def max_objects_per_connection(self) -> int:
        """The most objects one connection carries (0 when the assignment is invalid)."""
        counts: dict[int, int] = {}
        try:
            for i in range(len(self.objects)):
                c = self.connection_of(i)
                counts[c] = counts.get(c, 0) + 1
        except (IndexError, ZeroDivisionError, TypeError):
            return 0
        return max(counts.values(), default=0)

    def errors(self) -> list[str]:
        """What is wrong with the workload itself, whatever the stack (empty when valid)."""
        # Types first (a workload may come from JSON); the checks below rely on them.
        types = {"connections": int, "objects": tuple, "streams": str, "resumption": bool, "zero_rtt": bool,
                 "cc_options": tuple, "ranged": bool, "preconnect": bool}  # fmt: skip
        wrong = [f"{k}: must be {t.__name__} (got {type(getattr(self, k)).__name__})" for k, t in types.items()
                 if not isinstance(getattr(self, k), t) or (t is int and isinstance(getattr(self, k), bool))]  # fmt: skip
        if self.assignment is not None and not isinstance(self.assignment, tuple):
            wrong.append(f"assignment: must be a tuple or None (got {type(self.assignment).__name__})")
        if wrong:
            return wrong
        errs: list[str] = []
        if not 1 <= self.connections <= MAX_CONNECTIONS:
            errs.append(f"connections: must be 1 to {MAX_CONNECTIONS} (got {self.connections})")
        if not 1 <= len(self.objects) <= MAX_OBJECTS:
            errs.append(f"objects: must be 1 to {MAX_OBJECTS} (got {len(self.objects)})")
        if any(not isinstance(s, int) or s < 0 for s in self.objects):
            errs.append("objects: sizes must be whole numbers of bytes >= 0")
        assignment_ok = True
        if self.assignment is not None:
            if len(self.assignment) != len(self.objects):
                errs.append(f"assignment: needs one connection per object ({len(self.objects)}), got {len(self.assignment)}")
                assignment_ok = False
            elif any(not isinstance(c, int) or not 0 <= c < self.connections for c in self.assignment):
                errs.append(f"assignment: connection numbers must be 0 to {self.connections - 1}")
                assignment_ok = False
        if assignment_ok and self.objects and 1 <= self.connections <= MAX_CONNECTIONS:
            # A connection without objects would measure nothing (and has no first byte).
            idle = sorted(set(range(self.connections)) - {self.connection_of(i) for i in range(len(self.objects))})
            if idle:
                errs.append(f"connections: every connection needs an object (none on {', '.join(map(str, idle[:5]))})")
        if self.streams not in ("parallel", "sequential"):
            errs.append(f"streams: must be parallel or sequential (got {self.streams!r})")
        if any(not isinstance(o, dict) for o in self.cc_options):
            errs.append("cc_options: each entry must be an object of knob names to values")
        if self.cc_options and len(self.cc_options) != self.connections:
            errs.append(f"cc_options: needs one entry per connection ({self.connections}), got {len(self.cc_options)}")
        if self.zero_rtt and not self.resumption:
            errs.append("zero_rtt: needs resumption (0-RTT resumes an earlier session)")
        if self.ranged:
            empty = [i for i, s in enumerate(self.objects) if isinstance(s, int) and s < 1]
            if empty:
                errs.append(f"ranged: every range needs at least 1 byte (not object {', '.join(map(str, empty[:5]))})")
        if self.preconnect and self.zero_rtt:
            errs.append("preconnect: not with zero_rtt (0-RTT exists to overlap the handshake)")
        return errs


@dataclass(frozen=True)
class Capabilities:
    """What a stack's client can do; anything beyond is refused before a run starts."""

    max_connections: int = 1
    max_objects: int = 1
    streams: tuple[str, ...] = ("parallel",)
    resumption: bool = False
    zero_rtt: bool = False
    cc_options: tuple[str, ...] = ()  # names of the per-connection knobs it accepts
    ranges: bool = False  # Workload.ranged: objects as byte ranges of one body
    preconnect: bool = False  # Workload.preconnect: every handshake before the requests
    # A QUIC stack whose max datagram size cannot be set: that size (None: it takes --quic-datagram)
    fixed_datagram: int | None = None
    # One client process runs many workloads in turn (Stack.session); without, each
    # workload starts its own process
    serve: bool = False
    # Aggregates at the transport layer: a subflow (MPTCP) or path (multipath QUIC) from
    # each of ClientSpec.paths; a flow on a ``paths`` bearer needs it
    multipath: bool = False
    # ECN (RFC 3168, RFC 9000 section 13.4): "library", the stack marks its packets ECT(0)
    # and feeds CE back by itself, always (its library's default; no knob here); "sysctl",
    # kernel TCP, on with --ecn (net.ipv4.tcp_ecn 1); "none", not ECN-capable (an AQM drops
    # where it would mark). Checked by a run through CoDel (docs/explanation/stacks.md).
    ecn: Literal["none", "library", "sysctl"] = "none"


@dataclass(frozen=True)
class ClientSpec:
    address: str
    port: int
    workload: Workload
    cc: str
    workdir: Path
    certs: Certs  # the client trusts this certificate (or skips verification)
    timeout_s: float  # for the whole workload
    qlog: bool = False
    quic_datagram: int | None = None  # max UDP payload a QUIC client sends; None: the stack's default
    keylog: bool = False  # TLS secrets into workdir/KEYLOG_FILE (NSS key log format)
    # A multipath client's own address on each leg, in leg order: its first connection
    # leaves from paths[0], further subflows or paths from the others. Empty: the client
    # namespace's one address, chosen by the kernel (every single-path flow).
    paths: tuple[str, ...] = ()


@dataclass
class ObjectResult:
    """One object; times are seconds after the request of the whole workload."""

    index: int
    size: int
    connection: int
    bytes: int = 0
    ok: bool = False
    request_s: float | None = None
    first_byte_s: float | None = None
    last_byte_s: float | None = None
    error: str | None = None


@dataclass
class ConnectionResult:
    """One connection; ``first_byte_s``, ``last_byte_s`` and ``bytes`` span its objects
    (``TransferResult.from_parts`` fills them in). ``handshake_s`` is when its handshake
    completed, after the request; with ``Workload.preconnect`` (every handshake before
    the request) it is instead the handshake's duration, from its first packet."""

    index: int
    handshake_s: float | None = None
    first_byte_s: float | None = None
    last_byte_s: float | None = None
    bytes: int = 0
    resumed: bool | None = None  # None: the stack cannot tell
    early_data: bool | None = None  # 0-RTT accepted by the server


@dataclass
class TransferResult:
    """What one client workload measured. Times are seconds relative to the request (0),
    or None where the stack cannot tell; totals span every object and connection
    (handshake: the first connection's; first byte: the earliest; last byte: the
    latest). With resumption the warm-up connection comes before the request and is not
    counted (a stack may describe it in ``extra["warmup"]``). With ``Workload.preconnect``
    the handshakes come before the request too: ``handshake_s`` (the first connection's,
    like each ``ConnectionResult.handshake_s``) is then a handshake's duration, not a
    time after the request."""

    ok: bool
    bytes: int
    request_s: float = 0.0
    handshake_s: float | None = None
    first_byte_s: float | None = None
    last_byte_s: float | None = None
    error: str | None = None
    # Wall-clock time (time.time()) of the request, to line results up with dcemu stats.
    request_wall: float | None = None
    objects: list[ObjectResult] = field(default_factory=list)
    connections: list[ConnectionResult] = field(default_factory=list)
    extra: JsonObject = field(default_factory=dict)

    @property
    def goodput_mbps(self) -> float | None:
        """bytes / (last byte - request), as in docs/testbed-reference.md."""
        if not self.ok or not self.last_byte_s or self.last_byte_s <= self.request_s:
            return None
        return self.bytes * 8 / (self.last_byte_s - self.request_s) / 1e6

    @property
    def completion_s(self) -> float | None:
        """Time from the request to the last byte of the last object."""
        return self.last_byte_s - self.request_s if self.ok and self.last_byte_s is not None else None

    def to_dict(self) -> JsonObject:
        d = asdict(self)
        d["goodput_mbps"] = self.goodput_mbps
        return d

    @classmethod
    def failed(cls, error: str, **kw: Any) -> TransferResult:
        return cls(ok=False, bytes=0, error=error, **kw)

    @classmethod
    def from_parts(
        cls,
        objects: list[ObjectResult],
        connections: list[ConnectionResult],
        *,
        request_wall: float | None = None,
        error: str | None = None,
        extra: JsonObject | None = None,
    ) -> TransferResult:
        """The totals of per-object and per-connection results, as the class docstring
        says: ok only when every object is ok (and no ``error``); a failure names the
        first failed object and how many failed."""
        failed = [o for o in objects if not o.ok]
        errs = [error] if error else []
        if failed:
            first = failed[0]
            why = first.error or f"got {first.bytes} of {first.size} bytes"
            what = f"object {first.index} (/{first.size} on connection {first.connection}): {why}"
            errs.append(what if len(failed) == 1 else f"{len(failed)} of {len(objects)} objects failed, first {what}")
        if not objects:
            errs.append("no objects")

        def times(key: str) -> list[float]:
            return [v for o in objects if (v := getattr(o, key)) is not None]

        for c in connections:
            mine = [o for o in objects if o.connection == c.index]
            firsts = [o.first_byte_s for o in mine if o.first_byte_s is not None]
            lasts = [o.last_byte_s for o in mine if o.last_byte_s is not None]
            c.bytes = sum(o.bytes for o in mine)
            c.first_byte_s = min(firsts) if firsts else None
            c.last_byte_s = max(lasts) if lasts else None
        first_bytes, last_bytes = times("first_byte_s"), times("last_byte_s")
        return cls(
            ok=not errs,
            bytes=sum(o.bytes for o in objects),
            handshake_s=connections[0].handshake_s if connections else None,
            first_byte_s=min(first_bytes) if first_bytes else None,
            last_byte_s=max(last_bytes) if last_bytes else None,
            error="; ".join(errs) or None,
            request_wall=request_wall,
            objects=objects,
            connections=connections,
            extra=extra or {},
        )


class ClientSession(ABC):
    """One client process that runs workloads in turn (``Stack.session``)."""

    @abstractmethod
    def run(self, workload: Workload) -> TransferResult:
        """Runs ``workload`` on new connections; never raises for a failed transfer, and
        ends within the session's timeout plus a few seconds (a client that hangs is
        stopped, and the next workload starts a new one)."""

    @abstractmethod
    def close(self) -> None:
        """Ends the client process. Safe to call twice."""


class Stack(ABC):
    """A transport stack (one folder per stack under dclab/endpoints/)."""

    name: str  # as given to --stack
    transport: Literal["udp", "tcp"]
    ccs: tuple[str, ...]  # congestion controllers it offers; ccs[0] is the default
    capabilities: Capabilities = Capabilities()
    # What the testbed waits for its server to listen on: its transport, but for a UDP load
    # whose server listens on a TCP control connection first (iperf3)
    listens_on: Literal["udp", "tcp"] | None = None

    @property
    def default_cc(self) -> str:
        return self.ccs[0]

    def resolve_cc(self, cc: str | None, option: str = "--cc") -> str:
        """``cc`` or the default; a controller the stack lacks is refused naming ``option``."""
        if cc is None:
            return self.default_cc
        if cc not in self.ccs:
            raise StackError(f"{option}: {self.name} offers {', '.join(self.ccs)} (got {clip(cc)})")
        return cc

    def check(self, cc: str | None, workload: Workload | None = None) -> str:
        """The one check of what is asked of this stack: the congestion controller (returned,
        defaulted) and the workload against ``capabilities``. Raises StackError."""
        cc = self.resolve_cc(cc)
        if workload is None:
            return cc
        caps = self.capabilities
        errs = workload.errors()
        if errs:  # the workload itself is wrong: the checks below would not make sense
            raise StackError(f"{self.name} cannot run this workload: " + "; ".join(errs))
        if workload.connections > caps.max_connections:
            errs.append(f"{workload.connections} connections (at most {caps.max_connections})")
        if len(workload.objects) > caps.max_objects:
            errs.append(f"{len(workload.objects)} objects (at most {caps.max_objects})")
        if workload.streams not in caps.streams and workload.max_objects_per_connection() > 1:
            errs.append(f"{workload.streams} streams (offers {', '.join(caps.streams)})")
        if workload.resumption and not caps.resumption:
            errs.append("session resumption (not offered)")
        if workload.zero_rtt and not caps.zero_rtt:
            errs.append("0-RTT (not offered)")
        if workload.ranged and not caps.ranges:
            errs.append("byte ranges (not offered)")
        if workload.preconnect and not caps.preconnect:
            errs.append("pre-established connections (not offered)")
        unknown = sorted({k for o in workload.cc_options for k in o} - set(caps.cc_options))
        if unknown:
            errs.append(f"congestion control options {', '.join(unknown)} (accepts {', '.join(caps.cc_options) or 'none'})")
        if errs:
            raise StackError(f"{self.name} cannot run this workload: " + "; ".join(errs))
        return cc

    def datagram_error(self, quic_datagram: int | None, largest: int) -> str | None:
        """Why this stack cannot run with max QUIC datagram ``quic_datagram`` (None: its
        default) when the MTU carries at most ``largest`` bytes of UDP payload; None when
        it can. Only a stack with ``capabilities.fixed_datagram`` can refuse."""
        fixed = self.capabilities.fixed_datagram
        if fixed is None:
            return None
        if quic_datagram not in (None, fixed):
            return f"--quic-datagram: {self.name} sends {fixed}-byte datagrams, a size it cannot change (got {quic_datagram})"
        if fixed > largest:
            return f"--mtu: {self.name} sends {fixed}-byte datagrams, more than the MTU carries ({largest} bytes of UDP payload)"
        return None

    def refusal(self, spec: ClientSpec) -> TransferResult | None:
        """For ``run``, which must not raise: None when ``check`` accepts the spec's cc and
        workload, else a failed result carrying its message."""
        try:
            self.check(spec.cc, spec.workload)
        except StackError as e:
            return TransferResult.failed(str(e))
        return None

    def guarded(self, spec: ClientSpec, prefix: str, body: Callable[[Path], TransferResult]) -> TransferResult:
        """``body(scratch)`` after the one check (``refusal``), with a scratch directory in the
        client's workdir that is removed afterwards; an exception becomes a failed result,
        so ``run`` never raises."""
        refused = self.refusal(spec)
        if refused is not None:
            return refused
        try:
            Path(spec.workdir).mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=spec.workdir))
        except Exception as e:  # noqa: BLE001 - run never raises
            return TransferResult.failed(f"setup: {type(e).__name__}: {e}")
        try:
            return body(tmp)
        except Exception as e:  # noqa: BLE001
            return TransferResult.failed(f"{type(e).__name__}: {e}")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

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
    def run(self, spec: ClientSpec, netns_exec: list[str]) -> TransferResult:
        """Runs the client workload in the client namespace (prefix commands with
        ``netns_exec``) and returns what it measured. Must not raise for a failed
        transfer: return ``ok=False`` with the error. Must end within ``spec.timeout_s``
        (plus a few seconds to stop)."""

    def session(self, spec: ClientSpec, netns_exec: list[str]) -> ClientSession | None:
        """A long-lived client for many workloads of ``spec`` (its workload stands for
        theirs), or None when the stack starts a process per workload
        (``capabilities.serve``)."""
        return None

    def server_sysctls(self, cc: str) -> dict[str, str]:
        """Per-namespace sysctls the server namespace needs for ``cc`` (kernel TCP)."""
        return {}

    def server_setup(self) -> list[list[str]]:
        """Commands (argument lists, no shell) the testbed runs in the server namespace
        before the server starts, e.g. MPTCP's path manager limits; it fails the run,
        naming the command, if one fails. The namespace goes with the run, and so do they."""
        return []

    def version(self) -> str:
        return "unknown"


ReaderT = TypeVar("ReaderT", bound=threading.Thread)
REAP_S = 5.0  # for a killed client process to end
JOIN_S = 2.0  # for a reader thread to see its process's output end


@dataclass
class Reaped(Generic[ReaderT]):
    """Client processes run to their end or to the deadline: each process, the reader
    thread of its output, when it was started (``time.monotonic()`` just before), and
    the indices of those killed at the deadline."""

    procs: list[subprocess.Popen[str]]
    readers: list[ReaderT]
    spawned: list[float]
    killed: set[int]


def run_and_reap(cmds: list[list[str]], deadline: float, reader: Callable[[subprocess.Popen[str]], ReaderT],
                 env: Mapping[str, str], stdout: int | IO[Any] | None, stderr: int | IO[Any] | None) -> Reaped[ReaderT]:
    """Starts every command at once (text output, no input), a ``reader`` thread on each,
    waits for them until ``deadline`` (``time.monotonic()``), kills those still running
    then, and whatever happens (an exception, Ctrl-C) leaves no process running and
    every reader joined. The one run-and-reap of the adapters whose clients are several
    processes (tcp's curl, ngtcp2's gtlsclient)."""
    out: Reaped[ReaderT] = Reaped([], [], [], set())
    try:
        for cmd in cmds:
            out.spawned.append(time.monotonic())
            p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, text=True, env=dict(env))
            out.procs.append(p)
            r = reader(p)
            r.start()
            out.readers.append(r)
        for c, p in enumerate(out.procs):
            try:
                p.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                out.killed.add(c)
                p.wait(timeout=REAP_S)
    finally:
        for p in out.procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=REAP_S)
        for r in out.readers:
            r.join(timeout=JOIN_S)
    return out


def run_bounded(cmd: list[str], timeout_s: float, **kw: Any) -> subprocess.CompletedProcess[str]:
    """Runs a command with a hard time limit; a timeout becomes returncode -9."""
    try:
        return subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout_s, **kw)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        return subprocess.CompletedProcess(cmd, -9, out, err + f"\ntimed out after {timeout_s} s")
