"""Per series of an mquic campaign (e.g. mquic-fidelity's variants): each mode's median and
95th percentile completion time at the largest size, mquic's improvement against 1c and
3c, and the NFE evidence of the report's table (dclab/analysis/nfes.py), with counts a
download's record lacks (stores from before ``stop_packets``, ``group_packets``) read
from its run's server log; for BBR groups, how many rate equalizations (the engine's
"rate" records) a download's group made. Then the paper's Tables 6-9 shape as Markdown
(experiments/mquic.py ``paper_tables``) for the settings measured with more than one
controller. docs/mquic-fidelity.md, "Fidelity", quotes its output:

    .venv/bin/python scripts/mquic_evidence.py results/mquic-fidelity
    .venv/bin/python scripts/mquic_evidence.py results/mquic        # the tables-* groups
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from dclab.analysis import completion, nfes
from dclab.campaign.report import resolve_run_dir
from dclab.campaign.store import Store
from dclab.experiments.mquic import BASELINES, LOG, _by_series, _downloads, _modes_of, paper_tables
from dclab.experiments.mquic_downloads import lines_of

MODES = ("1c", "3c", "mquic")


def filled(row: dict[str, Any], base: Path) -> list[dict[str, Any]]:
    """The run's downloads, their stop and packet counts taken from its log if missing,
    and each one's count of rate equalizations (``rates``: BBR groups; None without a log)."""
    ds = [dict(d) for d in _downloads(row)]
    run = resolve_run_dir(row.get("run_dir") or "", base)
    log = run / LOG if run else None
    lines = [json.loads(t) for t in log.read_text().splitlines() if t.strip()] if log and log.is_file() else []
    for d in ds:
        mine = lines_of(d, lines)
        done = next((x for x in mine if x.get("event") == "done"), None)
        stop = next((x for x in mine if x.get("event") == "nfe" and x.get("action") == "stop"), None)
        d.setdefault("group_packets", done.get("group_packets") if done else None)
        d.setdefault("stop_packets", stop.get("group_packets") if stop else None)
        d["rates"] = sum(1 for x in mine if x.get("event") == "rate") if done else None
    return ds


def fmt(v: float | None, digits: int = 3) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def main() -> int:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    base = Path(sys.argv[1])
    store = Store(base / "store.sqlite", readonly=True)
    rows = [r for r in store.rows("experiment = ?", ("mquic",)) if r.get("ok")]
    for series, rs in sorted(_by_series(rows).items()):
        ds = [d for r in rs for d in filled(r, base)]
        largest = max(d["size"] for d in ds)
        at = [d for d in ds if d["size"] == largest]
        modes = [m for m in _modes_of(at) if m in MODES]
        table = {r["mode"]: r for r in completion.completion_table(at, modes, BASELINES)}
        evidence = {r["mode"]: r for r in nfes.nfe_evidence(at, modes)}
        print(f"\n{series}: {len(rs)} repetitions, {completion.size_label(largest)}")
        for m in modes:
            t, e = table[m], evidence[m]
            imp = t["improvement"]
            gains = "  ".join(f"vs {b} {fmt((imp.get(b) or {}).get('median'), 1)} / {fmt((imp.get(b) or {}).get('p95'), 1)} %"
                              for b in BASELINES if b != m)  # fmt: skip
            print(f"  {m:<6} median {fmt(t['median'])} s, p95 {fmt(t['p95'])} s (n {t['n']})  {gains}  | NFEs "
                  f"{fmt(e['nfes'], 0)}, delay exits {fmt(e['delay_exits'], 0)}, within one RTT "
                  f"{fmt(e['nfes_within_rtt'], 0)}, group cwnd at the first {fmt(_kb(e['first_nfe_group_cwnd']), 0)} kB, "
                  f"first a delay exit {fmt(e['first_delay_pct'], 0)} %, packets before the stop "
                  f"{fmt(e['synchronized_pct'], 0)} %")  # fmt: skip
            rates = sorted(d["rates"] for d in at if d["mode"] == m and d.get("rates") is not None)
            if "bbr" in series and rates:
                print(f"         rate equalizations per download: median {rates[len(rates) // 2]}, mean "
                      f"{sum(rates) / len(rates):.2f}, none in {sum(1 for r in rates if r == 0)} of {len(rates)}")
    for caption, t in paper_tables(rows):
        print(f"\n{caption}\n")
        print("| " + " | ".join(t.columns) + " |")
        print("|" + " --- |" * len(t.columns))
        for cells in t.rows:
            print("| " + " | ".join(cells) + " |")
    return 0


def _kb(v: float | None) -> float | None:
    return None if v is None else v / 1e3


if __name__ == "__main__":
    sys.exit(main())
