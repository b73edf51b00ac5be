"""The evidence behind mQUIC's completion times (docs/mquic-fidelity.md, "Fidelity"): per size and
mode, what the downloads' NFEs were (``downloads.MquicDownload``; None where the server's
log did not report the group). Medians over the downloads that have the value; ``n``
counts the downloads with a log."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from pydantic import BaseModel, ConfigDict

from .completion import sizes_of
from .downloads import MquicDownload
from .metrics import distribution

FIELDS: dict[str, Callable[[MquicDownload], float | None]] = {
    "nfes": lambda d: d.nfes, "delay_exits": lambda d: d.delay_exits, "nfes_within_rtt": lambda d: d.nfes_within_rtt,
    "syncs": lambda d: d.syncs, "first_nfe_group_cwnd": lambda d: d.first_nfe_group_cwnd,
}


class NfeRow(BaseModel):
    """One (size, mode) of ``nfe_evidence``: medians over the downloads with a log."""

    model_config = ConfigDict(frozen=True)

    size: int
    mode: str
    n: int
    nfes: float | None
    delay_exits: float | None
    nfes_within_rtt: float | None
    syncs: float | None
    first_nfe_group_cwnd: float | None
    first_delay_pct: float | None  # the share of downloads whose first NFE was a delay exit
    synchronized_pct: float | None  # mquic: the median of ``synchronized_pct``


def synchronized_pct(d: MquicDownload) -> float | None:
    """The share of a full-sync download's packets that its group sent while it still
    synchronized (100 when it never stopped); None for other modes or without counts."""
    total = d.group_packets
    if d.mode != "mquic" or total is None or total <= 0:
        return None
    stop = d.stop_packets
    return 100.0 if stop is None else 100.0 * min(stop, total) / total


def _median_of(values: Iterable[float | None]) -> float | None:
    return distribution(v for v in values if v is not None).median


def nfe_evidence(downloads: Iterable[MquicDownload], modes: list[str]) -> list[NfeRow]:
    """One row per (size, mode), sizes ascending, modes in order."""
    downloads = list(downloads)
    rows = []
    for size in sizes_of(d for d in downloads if d.mode in modes):
        for mode in modes:
            logged = [d for d in downloads if d.mode == mode and d.size == size and d.nfes is not None]
            kinds = [d.first_nfe_kind for d in logged if d.first_nfe_kind is not None]
            medians = {k: _median_of(f(d) for d in logged) for k, f in FIELDS.items()}
            rows.append(NfeRow(size=size, mode=mode, n=len(logged), **medians,
                               first_delay_pct=100.0 * kinds.count("delay") / len(kinds) if kinds else None,
                               synchronized_pct=_median_of(synchronized_pct(d) for d in logged)))
    return rows
