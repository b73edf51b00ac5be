"""Why 0-RTT saves less than a round trip on a whole download: one testbed, the LTE
study's cell (``lte:good``, 12 ms core delay each way, no jitter, no loss), 64 kB
downloads with a full handshake (``off``), a resumed session (``ticket``) and 0-RTT
(``0rtt``), qlogs at both ends; per download the client's first and last byte, and from
the server's qlog (dclab/analysis/qlog_flight.py) what it sent before it validated the
client's address and how long it then paused. Needs root (a testbed).

    .venv/bin/python scripts/zero_rtt_phases.py --reps 10 [--stack aioquic-token] [--out DIR]

The medians are printed per mode; every download's row goes to ``DIR/downloads.json``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from dclab.analysis.qlog_flight import is_server, read_traces, server_flight
from dclab.endpoints import get_stack
from dclab.endpoints.base import Workload
from dclab.flowplan import Flow, single_bearer_plan
from dclab.scenario import Scenario, build
from dclab.testbed import Testbed
from dclab.testbed.hostconfig import host_config_for

MODES = {"off": (False, False), "ticket": (True, False), "0rtt": (True, True)}
SIZE = 64_000
QLOG_WAIT_S = 3.0  # the server writes a connection's qlog when it closes


def new_files(d: Path, seen: set[Path]) -> list[Path]:
    files = sorted(p for p in d.glob("*.qlog") if p not in seen) if d.is_dir() else []
    seen.update(files)
    return files


def one(tb: Testbed, mode: str, server_dir: Path, seen: set[Path]) -> dict[str, Any]:
    resumption, zero_rtt = MODES[mode]
    wl = Workload(objects=(SIZE,), resumption=resumption, zero_rtt=zero_rtt)
    r = tb.run_clients(timeout_s=30, qlog=True, workloads={"dl": wl})["dl"]
    deadline = time.monotonic() + QLOG_WAIT_S
    traces: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        time.sleep(0.2)
        traces += [t for f in new_files(server_dir, seen) for t in read_traces(f) if is_server(t)]
        if len(traces) >= (2 if resumption else 1):  # the warm-up's connection and the measured one
            break
    # the measured connection is the one that carried the response (the warm-up fetches nothing)
    flights = [server_flight(t) for t in traces]
    measured = max(flights, key=lambda f: f.response_bytes, default=None)
    row: dict[str, Any] = {"mode": mode, "ok": r.ok, "error": r.error, "first_byte_ms": _ms(r.first_byte_s),
                           "last_byte_ms": _ms(r.last_byte_s), "early_data": r.connections[0].early_data if r.connections else None}  # fmt: skip
    if measured is not None:
        row.update({"validated_ms": measured.validated_ms, "received_before": measured.received_before,
                    "budget": measured.budget, "sent_before": measured.sent_before,
                    "response_before": measured.response_before, "paused_ms": measured.paused_ms,
                    "zero_rtt_packets": measured.zero_rtt_packets, "server_first_response_ms": measured.first_response_ms,
                    "server_last_response_ms": measured.last_response_ms})  # fmt: skip
    return row


def _ms(s: float | None) -> float | None:
    return None if s is None else s * 1e3


def median(rows: list[dict[str, Any]], key: str) -> str:
    vals = [r[key] for r in rows if isinstance(r.get(key), (int, float))]
    return f"{statistics.median(vals):.1f}" if vals else "-"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=10, help="downloads per mode (1 to 200)")
    ap.add_argument("--stack", default="aioquic", help="aioquic, or aioquic-token (the client's address counts as validated)")
    ap.add_argument("--cc", default="reno")
    ap.add_argument("--out", type=Path, help="keep the qlogs and downloads.json here")
    a = ap.parse_args()
    if not 1 <= a.reps <= 200:
        ap.error(f"--reps: from 1 to 200 (got {a.reps})")
    stack = get_stack(a.stack)
    scenario = build(Scenario(), link="lte:good", delay=[12.0], delay_cov=0.0, uplink_delay=12.0)
    plan = single_bearer_plan(scenario, [Flow("dl", a.stack, "dc", Workload(objects=(SIZE,)), a.cc)])
    work = a.out or Path(tempfile.mkdtemp(prefix="zero-rtt-"))
    if a.out is not None and a.out.exists() and any(a.out.iterdir()):
        ap.error(f"--out: {a.out} is not empty")
    rows: list[dict[str, Any]] = []
    with Testbed(scenario, plan, host_config_for(stack.transport, "default"), work) as tb:
        tb.start_servers(qlog=True)
        server_dir = work / "server" / "qlog-server"
        seen: set[Path] = set()
        one(tb, "off", server_dir, seen)  # the server's first request (imports, caches) is not measured
        for k in range(a.reps):
            for mode in MODES:  # interleaved, so that a slow moment of the host hits every mode alike
                rows.append(one(tb, mode, server_dir, seen))
                print(f"rep {k + 1} {mode}: " + json.dumps({x: rows[-1].get(x) for x in ("first_byte_ms", "last_byte_ms", "paused_ms")}),
                      file=sys.stderr)  # fmt: skip
        tb.finish()
    (work / "downloads.json").write_text(json.dumps(rows, indent=1))
    keys = ["first_byte_ms", "last_byte_ms", "validated_ms", "received_before", "budget", "sent_before",
            "response_before", "paused_ms", "server_first_response_ms", "server_last_response_ms"]  # fmt: skip
    print(f"{a.stack} {a.cc}, 64 kB over lte:good, 12 ms core delay each way, medians of {a.reps} downloads per mode")
    print("mode    " + " ".join(f"{k:>24}" for k in keys))
    for mode in MODES:
        rs = [r for r in rows if r["mode"] == mode and r["ok"]]
        print(f"{mode:<8}" + " ".join(f"{median(rs, k):>24}" for k in keys))
    if a.out is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
