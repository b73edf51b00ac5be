"""The evidence behind mQUIC's completion times (docs/mquic-fidelity.md, "Fidelity"): per size and
mode, what the downloads' NFEs were. A download is the mquic experiment's record
(``experiments/mquic.py``, ``download_record``): ``nfes``, ``delay_exits``,
``nfes_within_rtt``, ``first_nfe_kind``, ``first_nfe_group_cwnd``, ``syncs``,
``stop_packets``, ``group_packets`` (None where the server's log did not report the
group). Medians over the downloads that have
the value; ``n`` counts the downloads with a log."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .completion import Download, sizes_of
from .metrics import distribution

FIELDS = ("nfes", "delay_exits", "nfes_within_rtt", "syncs", "first_nfe_group_cwnd")


def _median(downloads: list[Download], key: str) -> float | None:
    values = [d.get(key) for d in downloads]
    return distribution(float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool))["median"]


def synchronized_pct(d: Download) -> float | None:
    """The share of a full-sync download's packets that its group sent while it still
    synchronized (100 when it never stopped); None for other modes or without counts."""
    total = d.get("group_packets")
    if d.get("mode") != "mquic" or not isinstance(total, int) or total <= 0:
        return None
    stop = d.get("stop_packets")
    return 100.0 if stop is None else 100.0 * min(int(stop), total) / total


def _median_of(values: Iterable[float | None]) -> float | None:
    return distribution(v for v in values if v is not None)["median"]


def nfe_evidence(downloads: Iterable[Download], modes: list[str]) -> list[dict[str, Any]]:
    """One row per (size, mode), sizes ascending, modes in order: ``{"size", "mode", "n",
    "nfes", "delay_exits", "nfes_within_rtt", "syncs", "first_nfe_group_cwnd"}`` (medians)
    and ``"first_delay_pct"``: the share of downloads whose first NFE was a delay exit;
    ``"synchronized_pct"``: mquic, the median share of a download's packets sent before
    its group stopped synchronizing (``synchronized_pct``)."""
    downloads = list(downloads)
    rows = []
    for size in sizes_of(d for d in downloads if d.get("mode") in modes):
        for mode in modes:
            logged = [d for d in downloads if d.get("mode") == mode and d.get("size") == size
                      and d.get("nfes") is not None]  # fmt: skip
            kinds = [d.get("first_nfe_kind") for d in logged if d.get("first_nfe_kind") is not None]
            row: dict[str, Any] = {"size": size, "mode": mode, "n": len(logged)}
            row.update({k: _median(logged, k) for k in FIELDS})
            row["first_delay_pct"] = 100.0 * kinds.count("delay") / len(kinds) if kinds else None
            row["synchronized_pct"] = _median_of(synchronized_pct(d) for d in logged)
            rows.append(row)
    return rows
