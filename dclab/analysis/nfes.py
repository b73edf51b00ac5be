"""The evidence behind mQUIC's completion times (docs/mquic.md, "Fidelity"): per size and
mode, what the downloads' NFEs were. A download is the mquic experiment's record
(``experiments/mquic.py``, ``download_record``): ``nfes``, ``delay_exits``,
``nfes_within_rtt``, ``first_nfe_kind``, ``first_nfe_group_cwnd``, ``syncs`` (None
where the server's log did not report the group). Medians over the downloads that have
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


def nfe_evidence(downloads: Iterable[Download], modes: list[str]) -> list[dict[str, Any]]:
    """One row per (size, mode), sizes ascending, modes in order: ``{"size", "mode", "n",
    "nfes", "delay_exits", "nfes_within_rtt", "syncs", "first_nfe_group_cwnd"}`` (medians)
    and ``"first_delay_pct"``: the share of downloads whose first NFE was a delay exit."""
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
            rows.append(row)
    return rows
