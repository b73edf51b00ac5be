"""One download of the mquic experiment on its testbed (docs/mquic-fidelity.md,
"The experiment: dclab run mquic"):
its lines of the server's mQUIC log, the PDCP receiver's counters around it (over DC),
and its record as the tables and figures read it."""

from __future__ import annotations

import json
import time
from pathlib import Path

from ..analysis.downloads import ConnTiming, MquicDownload, PdcpStalls
from ..dcemu.records import parse
from ..endpoints.base import TransferResult
from ..files import JsonObject
from ..scenario import Scenario
from ..testbed import Bed, stats_ms

LogLine = JsonObject  # a line of the server's mQUIC log (endpoints/aioquic/mquic/engine.py)

LOG = "mquic.jsonl"  # the repetition's lines of the server's log, in its directory
STATS_WAIT_S = 1.0
# A download's log lines are written when its last byte range is acknowledged on the
# server; at high loss that ACK may need PTOs first.
LOG_WAIT_S = 10.0


def new_lines(bed: Bed, path: Path, key: str) -> list[bytes]:
    """The lines appended to ``path`` since the last call with ``key`` (its offset is kept
    in ``bed.state``); a line still being written waits for the next call."""
    offset = bed.state.get(key, 0)
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            chunk = f.read()
    except FileNotFoundError:
        chunk = b""
    end = chunk.rfind(b"\n") + 1
    bed.state[key] = offset + end
    return [line for line in chunk[:end].splitlines() if line.strip()]


def new_records(bed: Bed, path: Path, key: str) -> list[LogLine]:
    """The JSON objects of ``new_lines`` (the server's mQUIC log)."""
    out = []
    for raw in new_lines(bed, path, key):
        try:
            d = json.loads(raw)
        except ValueError:
            continue
        if isinstance(d, dict):
            out.append(d)
    return out


def read_group(bed: Bed, group: str) -> list[LogLine]:
    """The server log's lines of ``group``, waiting up to LOG_WAIT_S for its "done" line;
    other groups' lines are kept in ``bed.state`` until asked for."""
    path = bed.workdir / "server" / LOG
    pending: dict[str, list[LogLine]] = bed.state.setdefault("mquic_lines", {})
    deadline = time.monotonic() + LOG_WAIT_S
    while True:
        for d in new_records(bed, path, "mquic_offset"):
            if isinstance(d.get("group"), str):
                pending.setdefault(d["group"], []).append(d)
        mine = pending.get(group, [])
        if any(d.get("event") == "done" for d in mine) or time.monotonic() > deadline:
            return pending.pop(group, [])
        time.sleep(0.05)


def counts_stalls(s: Scenario) -> bool:
    """Over DC with PDCP reordering a reordering stall is the third kind of NFE."""
    return s.legs > 1 and s.reordering


def pdcp_counters(bed: Bed, after: float | None = None) -> dict[str, int]:
    """The PDCP receiver's cumulative counters of the bearer from dcemu's newest interval
    record; with ``after`` (Unix time), from the first record that ends at or after it
    (waiting up to STATS_WAIT_S), so that everything up to then is counted."""
    path = bed.workdir / "dcemu-stats.jsonl"
    deadline = time.monotonic() + STATS_WAIT_S
    after_ms = stats_ms(bed, after)
    latest: dict[str, int] = bed.state.get("pdcp_latest", {})
    while True:
        t_ms = bed.state.get("stats_t_ms", -1.0)
        for line in new_lines(bed, path, "stats_offset"):
            rec = parse(line, str(path))
            for b in rec.bearers:
                if b.rx is not None:
                    latest = b.rx.model_dump(exclude={"wait"})
                    t_ms = rec.t_ms
        bed.state.update(pdcp_latest=latest, stats_t_ms=t_ms)
        if after_ms is None or t_ms >= after_ms or time.monotonic() > deadline:
            return dict(latest)
        time.sleep(0.02)


def pdcp_stalls(before: dict[str, int], after: dict[str, int]) -> PdcpStalls:
    """Reordering stalls during a download (``PdcpStalls``)."""
    return PdcpStalls(**{k: after.get(k, 0) - before.get(k, 0) for k in PdcpStalls.model_fields})


def download_record(mode: str, size: int, paper_size: int, r: TransferResult, lines: list[LogLine],
                    stalls: PdcpStalls | None = None) -> MquicDownload:
    """One download with what the server's engine logged of its group (``lines``)."""
    done = next((d for d in lines if d.get("event") == "done"), None)
    group = next((str(d["group"]) for d in lines if d.get("group") is not None), None)
    first = (done or {}).get("first_nfe") or None
    syncs = sum(1 for d in lines if d.get("event") in ("nfe", "round", "rate") and d.get("action") in ("sync", "mean", "stop"))
    stop = next((d for d in lines if d.get("event") == "nfe" and d.get("action") == "stop"), None)
    served = r.extra.get("served")
    return MquicDownload(
        mode=mode, size=size, paper_size=paper_size, group=group, ok=r.ok, error=r.error, completion_s=r.completion_s,
        nfes=done.get("nfes") if done else None,
        nfes_within_rtt=done.get("nfes_within_rtt") if done else None,
        delay_exits=done.get("delay_exits") if done else None,
        first_nfe_packets=first.get("group_packets", first.get("packets")) if first else None,
        first_nfe_cwnd=first.get("cwnd_before") if first else None,
        first_nfe_group_cwnd=first.get("group_cwnd") if first else None,
        first_nfe_kind=first.get("kind") if first else None,
        syncs=syncs if lines else None,
        stop_packets=stop.get("group_packets") if stop else None,
        group_packets=done.get("group_packets") if done else None,
        served=served if isinstance(served, int) else None,
        conns=tuple(ConnTiming(index=c.index, handshake_s=c.handshake_s, first_byte_s=c.first_byte_s,
                               last_byte_s=c.last_byte_s, bytes=c.bytes) for c in r.connections),
        pdcp_stalls=stalls)


def lines_of(d: MquicDownload, lines: list[LogLine]) -> list[LogLine]:
    """A download's lines among its repetition's log lines: those of its recorded group,
    or (records from before ``group`` was kept) of the repetition's one group of its mode
    and size (group names end in ``-<mode>-<size>``)."""
    group = d.group
    if group is None:
        suffix = f"-{d.mode}-{d.size}"
        group = next((x["group"] for x in lines if str(x.get("group", "")).endswith(suffix)), None)
    return [x for x in lines if group is not None and x.get("group") == group]
