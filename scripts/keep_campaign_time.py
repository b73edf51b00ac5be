"""Keeps how long a finished campaign's runs took, so the planner is held to it.

    .venv/bin/python scripts/keep_campaign_time.py NAME [--store PATH]

Reads the campaign's store (default: where `dclab campaign run NAME` wrote it), refuses one
that lacks any of the campaign's planned runs (a campaign measured in part says nothing of
the whole), and writes into tests/data/campaign_times.json the campaign's run count, the
seconds its runs took (each run's ``elapsed_s`` summed), the machine and the commit they
ran on. `tests/test_campaign_timing.py` then holds the planner's estimate of the campaign
within dclab/campaign/timing.py's tolerance of it. The emulated runs are what is planned
(a campaign's simulated twins have run keys of their own).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dclab.campaign import plan as cp  # noqa: E402
from dclab.campaign import timing  # noqa: E402
from dclab.campaign.store import campaign_dir, open_existing  # noqa: E402

KEPT = ROOT / "tests" / "data" / "campaign_times.json"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("name", help="a campaign of campaigns/")
    ap.add_argument("--store", type=Path, help="its store [default: the campaign's directory's]")
    a = ap.parse_args()
    c = cp.load(a.name)
    runs = cp.plan(c)
    store = open_existing(a.store or campaign_dir(c.name) / "store.sqlite")
    ts = timing.timings(runs, timing.measured(store))
    got = timing.total(ts)
    if got.runs != len(runs):
        print(f"campaign {c.name}: {got.runs} of its {len(runs)} planned runs stored with their time; "
              "run it to the end first (nothing written)", file=sys.stderr)
        return 1
    rows = store.rows()
    kept = json.loads(KEPT.read_text()) if KEPT.exists() else {}
    kept[c.name] = {
        "runs": got.runs,
        "measured_s": round(got.measured_s, 1),
        "machine": rows[0]["machine"],
        "commits": sorted({str(r["environment"].get("git_commit", ""))[:12] for r in rows} - {""}),
        "last_run": max(r["finished_at"] for r in rows)[:10],
        "kept": date.today().isoformat(),
    }
    KEPT.write_text(json.dumps(dict(sorted(kept.items())), indent=1) + "\n")
    print(f"campaign {c.name}: {got.runs} runs took {timing.hours_text(got.measured_s)}; the planner says "
          f"{timing.hours_text(got.estimate_s)} (x{got.ratio:.2f}) -> {KEPT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
