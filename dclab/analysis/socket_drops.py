"""When the client's UDP sockets dropped datagrams for a full receive buffer: the samples
the testbed takes of the client namespace's ``Udp RcvbufErrors`` while the clients run
(``testbed/udp_drops.py``), kept in the run directory as ``client-udp-drops.jsonl``, one
line per sample that saw new drops: ``{"t_ms": ..., "drops": n}``, ``t_ms`` on dcemu's
stats clock (as its records' ``t_ms``) and ``n`` the datagrams dropped since the sample
before. A run's total alone (``client_udp_drops`` in its details) says how many, not when.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import orjson

DROPS_FILE = "client-udp-drops.jsonl"


@dataclass(frozen=True)
class DropSample:
    """``drops`` datagrams dropped at the client's sockets in the sample ending at ``t_ms``
    (dcemu's stats clock)."""

    t_ms: float
    drops: int


def append_samples(run_dir: Path, samples: list[DropSample]) -> None:
    """Adds samples to the run's file (a testbed running its clients several times keeps
    every call's)."""
    with open(Path(run_dir) / DROPS_FILE, "ab") as f:
        for s in samples:
            f.write(orjson.dumps({"t_ms": round(s.t_ms, 3), "drops": s.drops}) + b"\n")


def read_samples(run_dir: Path) -> list[DropSample] | None:
    """The run's samples in time order; None when it has no file (not sampled: a
    simulation, or a run from before samples were taken). A torn line is skipped."""
    path = Path(run_dir) / DROPS_FILE
    try:
        lines = path.read_bytes().splitlines()
    except OSError:
        return None
    out = []
    for line in lines:
        try:
            d = orjson.loads(line)
            out.append(DropSample(float(d["t_ms"]), int(d["drops"])))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            continue
    return sorted(out, key=lambda s: s.t_ms)
