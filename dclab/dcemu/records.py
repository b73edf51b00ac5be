"""dcemu's stats records, typed: one model per struct of ``emu/src/engine/record.rs`` (the
names and fields mirror it; ``tests/test_records.py`` checks every record dcemu writes
parses with no field left over or missing), read from a stats file and refused with a
clear message when dcemu wrote a version this dclab does not know.

Counters are cumulative since dcemu started; ``queue_*``, ``in_flight``, ``cqi`` and
``buffers_in_use`` are instantaneous; ``*_mbps`` are rates over the interval ending at
``t_ms`` (record.rs says the same)."""

from __future__ import annotations

import collections
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Literal, overload

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

# The version of the records this dclab reads; dcemu writes it in every record
# (``STATS_VERSION`` in emu/src/engine/record.rs). Records from before it was written
# have none: 1.
STATS_VERSION = 9
STATS_FILES = ("dcemu-stats.jsonl", "dcemu-stats.jsonl.gz")  # emulated runs write the first, simulated the second


class StatsError(ValueError):
    """A stats file this dclab cannot read: an unknown version, or a record of another shape."""


class _Record(BaseModel):
    # A field dcemu adds without a new version is refused (a drift the tests must see,
    # not something to drop silently). A missing one reads as zero: records from before
    # a counter existed, and the tests' hand-made records, carry only what they need;
    # tests/test_records.py checks dcemu writes exactly these fields.
    model_config = ConfigDict(extra="forbid", frozen=True)


class Hist(_Record):
    """A histogram's summary (``base::HistSummary``); ``buckets`` (lower bound in µs,
    count, for the non-empty ones) only in the summary record."""

    count: int = 0
    mean_us: float = 0.0
    p50_us: float = 0.0
    p90_us: float = 0.0
    p99_us: float = 0.0
    p999_us: float = 0.0
    max_us: float = 0.0
    buckets: list[tuple[float, int]] = []


class Aqm(_Record):
    """What a rate stage's AQM dropped and marked CE, cumulative (``link::AqmCounters``)."""

    dropped_packets: int = 0
    dropped_bytes: int = 0
    marked_packets: int = 0


class Direction(_Record):
    """One direction of one leg (``DirRecord`` with ``link::LinkCounters``)."""

    bytes_in: int = 0
    packets_in: int = 0
    bytes_out: int = 0
    packets_out: int = 0
    dropped_queue_packets: int = 0
    dropped_queue_bytes: int = 0
    dropped_delay_limit_packets: int = 0
    dropped_loss_packets: int = 0
    dropped_loss_bytes: int = 0
    queue_packets: int = 0
    queue_bytes: int = 0
    in_flight: int = 0
    out_mbps: float = 0.0
    aqm: Aqm | None = None  # version 6: absent for tail drop alone; a cell's devices' together (version 8)
    sojourn: Hist | None = None  # version 7: each served packet's wait in the rate stage's queue; absent for a cell


class Device(_Record):
    """One device of an LTE or NR cell (``DeviceRecord`` with ``cell::DeviceCounters``)."""

    device: int = 0
    bearer: str = ""
    bytes_in: int = 0
    packets_in: int = 0
    bytes_out: int = 0
    packets_out: int = 0
    dropped_bytes: int = 0
    dropped_packets: int = 0
    queue_bytes: int = 0
    queue_packets: int = 0
    capacity_bits: int = 0
    rbs: int = 0
    cqi: int = 0
    # HARQ and blockage (version 2; dcemu leaves each out while 0)
    harq_failed: int = 0
    harq_retx: int = 0
    harq_lost_packets: int = 0
    harq_lost_bytes: int = 0
    # RLC AM: blocks HARQ gave up on that RLC sent again, and their packets
    rlc_retx: int = 0
    rlc_retx_packets: int = 0
    blocked_ttis: int = 0
    # TTIs run with data queued, and the bits the device could have had in them (its
    # blocks and the idle resource blocks): the rate flow control reads
    busy_ttis: int = 0
    busy_capacity_bits: int = 0
    aqm: Aqm | None = None  # version 8: the device queue's AQM; absent for tail drop alone
    sojourn: Hist | None = None  # version 8: each packet's wait before its service started (summary record)
    out_mbps: float = 0.0


class Cell(_Record):
    rat: str = "lte"  # version 2; LTE before
    tti_us: float = 1000.0
    bandwidth_mhz: float = 0.0
    rbs_per_tti: int = 0
    ttis: int = 0
    idle_ttis: int = 0
    devices: list[Device] = []


class Secondary(_Record):
    """A leg's secondary node once an event happened to it (``SnRecord``): its state, the
    packets being forwarded now, and its events and packets, cumulative."""

    state: str = "active"
    forwarding_packets: int = 0
    releases: int = 0
    additions: int = 0
    changes: int = 0
    forwarded_packets: int = 0
    lost_packets: int = 0
    interrupted_ms: float = 0.0


class Leg(_Record):
    name: str = ""
    downlink: Direction = Direction()
    uplink: Direction | None = None
    cell: Cell | None = None  # on a cell leg only
    x2: Direction | None = None  # the X2/Xn hop before a secondary leg (version 2)
    secondary: Secondary | None = None  # once a secondary node event happened on the leg


class Rx(_Record):
    """A PDCP receiver's counters (``pdcp::RxCounters``) and its reorder wait."""

    pdus_received: int = 0
    delivered: int = 0
    discarded_late: int = 0
    discarded_duplicate: int = 0
    discarded_hfn: int = 0
    timer_starts: int = 0
    timer_stops: int = 0
    timer_expiries: int = 0
    counts_given_up: int = 0
    counts_misread: int = 0  # version 5: sent over half the SN space before RX_DELIV, rebuilt as another COUNT
    buffer_high_water: int = 0
    wait: Hist = Hist()


class Fallback(_Record):
    """A leg's outage fallback (``FallbackRecord``, ``split.fallback_ms``): in an outage
    now, outages acted on and copies sent again on another leg (cumulative), copies kept
    now and refused (cumulative), and (version 5) the originals of those copies discarded
    as they left the leg."""

    outage: bool = False
    outages: int = 0
    resent_packets: int = 0
    resent_bytes: int = 0
    copies_bytes: int = 0
    copies_refused: int = 0
    stranded_discarded: int = 0


class FlowLeg(Fallback):
    """A secondary leg of a flow-controlled split (``FlowLegRecord``): its reports
    (cumulative), the last one the master received (None before the first), the master's
    credit for it now, and its outage fallback (its copies sent again on the master's leg)."""

    leg: str = ""
    reports_made: int = 0
    reports_received: int = 0
    desired_bytes: int | None = None
    reported_queue_bytes: int | None = None
    reported_rate_mbps: float | None = None
    credit_bytes: int = 0
    unseen_bytes: int = 0


class Flow(_Record):
    """A flow-controlled split (``FlowRecord``): ddds, delay-aware or delay-target."""

    policy: str = ""
    master_rate_mbps: float | None = None
    master_fallback: Fallback = Fallback()  # the master's own leg (its copies sent to a secondary)
    secondaries: list[FlowLeg] = []


class Hold(_Record):
    """The master PDCP's SDUs held unnumbered under ``delay-target`` (``HoldRecord``):
    cumulative counters, what it holds now, and how long released SDUs waited."""

    admitted: int = 0
    released: int = 0
    dropped_full: int = 0
    dropped_full_bytes: int = 0
    discarded_timer: int = 0
    discarded_timer_bytes: int = 0
    peak_bytes: int = 0
    held_bytes: int = 0
    held_packets: int = 0
    wait: Hist = Hist()


class Bearer(_Record):
    name: str = ""
    mode: str = ""
    tx_pdus: list[tuple[str, int]] = []  # PDUs sent per downlink leg, by leg name
    rx: Rx | None = None  # absent when reordering is off
    reorder_buffer: int = 0
    delivered_bytes: int = 0
    delivered_packets: int = 0
    delivered_mbps: float = 0.0
    uplink_bytes: int = 0
    uplink_packets: int = 0
    flow: Flow | None = None  # a flow-controlled split's (version 2)
    hold: Hold | None = None  # delay-target's unnumbered SDUs (version 3)


class Engine(_Record):
    packets_in_down: int = 0
    packets_in_up: int = 0
    dropped_no_buffer: int = 0
    packets_out_down: int = 0
    packets_out_up: int = 0
    uplink_unshaped: int = 0
    buffers_in_use: int = 0
    dropped_count_exhausted: int = 0  # absent while 0


class Runtime(_Record):
    """The real-time runtime's figures (absent in virtual time)."""

    lateness: Hist = Hist()
    service_lateness: Hist = Hist()
    write_cost: Hist = Hist()
    tun_read_packets: int = 0
    tun_write_packets: int = 0
    tun_write_errors: int = 0
    malformed: int = 0
    cpu_user_s: float = 0.0
    cpu_sys_s: float = 0.0
    wakeups: int = 0
    tun_kernel_drops: int = 0
    tun_offload: str = ""
    tun_read_calls: int = 0
    tun_super_reads: int = 0
    tun_write_calls: int = 0
    tun_joined_writes: int = 0


class FlowEcn(_Record):
    """Downlink packets handed to the client, those ECN-capable and those marked CE
    (``delivered::FlowEcn``)."""

    packets: int = 0
    ect_packets: int = 0
    ce_packets: int = 0


class DeliveredFlow(FlowEcn):
    """One flow's deliveries (``delivered::FlowEcnRecord``), from the server's side:
    protocol 6 TCP, 17 UDP, 1 ICMP (no ports)."""

    protocol: int = 0
    server_port: int = 0
    client_port: int = 0


class Stats(_Record):
    """One record: an interval's, or the summary at the end (same shape)."""

    type: Literal["interval", "summary"]
    version: int = 1
    t_ms: float  # end of the interval, ms since dcemu started forwarding
    dt_ms: float = 0.0
    legs: list[Leg] = []
    bearers: list[Bearer] = []
    engine: Engine = Engine()
    flows: list[DeliveredFlow] = []  # version 9, summary record only: per flow, what reached the client
    flows_beyond: FlowEcn | None = None  # flows past dcemu's 256, and non-IPv4 packets; absent when none
    runtime: Runtime | None = None

    def bearer(self, name: str) -> Bearer | None:
        return next((b for b in self.bearers if b.name == name), None)


def stats_file(run_dir: Path) -> Path | None:
    """A run's dcemu records, whichever of the two files it has (None: neither)."""
    return next((p for name in STATS_FILES if (p := Path(run_dir) / name).is_file()), None)


# Reading a stats file: in chunks (a gzip one decompressed a chunk at a time), so memory
# follows the records kept, not the file; a line longer than any record ends the reading.
CHUNK = 1 << 20
MAX_LINE = 16 << 20


def _chunks(path: Path) -> Iterator[bytes]:
    """The file's bytes, gunzipped if its name ends in .gz, as far as they can be read (a
    stream cut by a crash, or damaged, ends where it breaks)."""
    try:
        with open(path, "rb") as f:
            if path.suffix != ".gz":
                while chunk := f.read(CHUNK):
                    yield chunk
                return
            z = zlib.decompressobj(wbits=31)
            while not z.eof and (raw := f.read(CHUNK)):
                out = z.decompress(raw, CHUNK)
                yield out
                while z.unconsumed_tail and not z.eof:  # never more than CHUNK out at once
                    yield z.decompress(z.unconsumed_tail, CHUNK)
    except (OSError, zlib.error):
        return


def _iter_lines(path: Path) -> Iterator[bytes]:
    """The file's non-blank lines, as they are read."""
    rest = b""
    for chunk in _chunks(path):
        rest += chunk
        *lines, rest = rest.split(b"\n")
        for line in lines:
            if line.strip():
                yield line
        if len(rest) > MAX_LINE:
            return
    if rest.strip():
        yield rest


def _lines(path: Path, most: int | None = None) -> list[bytes]:
    """The file's lines (plain or .gz; [] if it cannot be read). With ``most``, at most
    twice that many: while reading, every other one kept is dropped each time the list
    reaches twice ``most`` (the records are cumulative, so a figure of every 2^k-th one is
    the same curve), and the last two lines (a summary, the simulation's own) are kept."""
    out: list[bytes] = []
    tail: collections.deque[tuple[int, bytes]] = collections.deque(maxlen=2)
    stride, n = 1, 0
    for line in _iter_lines(path):
        if n % stride == 0:
            out.append(line)
        tail.append((n, line))
        n += 1
        if most is not None and len(out) >= 2 * most:
            out, stride = out[::2], stride * 2
    out += [line for i, line in tail if i % stride != 0]
    return out


def _kind(line: bytes) -> object:
    try:
        d = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return d.get("type") if isinstance(d, dict) else None


def parse(line: bytes | str, where: str = "a stats record") -> Stats:
    """One record; StatsError naming ``where`` for an unknown version or another shape."""
    try:
        head = orjson.loads(line)
    except orjson.JSONDecodeError as e:
        raise StatsError(f"{where}: not JSON ({e})") from None
    version = head.get("version", 1) if isinstance(head, dict) else None
    if not isinstance(version, int) or not 1 <= version <= STATS_VERSION:
        raise StatsError(f"{where}: dcemu's stats version {version!r}; this dclab reads versions 1 to "
                         f"{STATS_VERSION} (update dclab, or read it with the dclab that wrote it)")  # fmt: skip
    try:
        return Stats.model_validate(head)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(x) for x in err["loc"])
        raise StatsError(f"{where}: {field}: {err['msg']} (not a dcemu stats record of version {version})") from None


class StatsRecords(Sequence[Stats]):
    """dcemu's records from a stats file, each parsed the first time it is looked at: a
    simulated campaign reads thousands of these files and its throughput runs need only the
    summary at the end. A last line cut by a crash is left out."""

    def __init__(self, lines: list[bytes], where: str = "stats") -> None:
        if lines and _kind(lines[-1]) is None:
            lines = lines[:-1]
        self._lines = lines
        self._where = where
        self._parsed: list[Stats | None] = [None] * len(lines)

    @classmethod
    def of_file(cls, path: Path, drop_last_of_type: str | None = None, most: int | None = None) -> StatsRecords:
        """The file's records (plain or .gz; none if it cannot be read); ``drop_last_of_type``:
        leave out the last line when it is a line of that type (the simulation's own);
        ``most``: thin them to at most about twice that many (``_lines``), for a figure."""
        lines = _lines(path, most)
        if drop_last_of_type and lines and _kind(lines[-1]) == drop_last_of_type:
            lines.pop()
        return cls(lines, str(path))

    def __len__(self) -> int:
        return len(self._lines)

    @overload
    def __getitem__(self, i: int) -> Stats: ...
    @overload
    def __getitem__(self, i: slice) -> list[Stats]: ...
    def __getitem__(self, i: int | slice) -> Stats | list[Stats]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        r = self._parsed[i]
        if r is None:
            r = self._parsed[i] = parse(self._lines[i], f"{self._where}, line {i + 1}")
        return r

    def intervals(self) -> list[Stats]:
        return [r for r in self if r.type == "interval"]

    def summary(self) -> Stats | None:
        """The last summary record (None: dcemu did not end cleanly)."""
        return next((r for r in reversed(self) if r.type == "summary"), None)


def read_stats(path: Path) -> StatsRecords:
    return StatsRecords.of_file(path)


__all__ = ["STATS_FILES", "STATS_VERSION", "Aqm", "Bearer", "Cell", "Device", "Direction", "Engine", "Hist", "Hold",
           "Leg", "Runtime", "Rx", "Stats", "StatsError", "StatsRecords", "parse", "read_stats", "stats_file"]
