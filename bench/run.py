#!/usr/bin/env python3
"""`make bench`: dcemu side by side with the kernel path (the same two namespaces joined
by a plain veth pair), against its targets (bench/table.py).

A run writes only under bench/out/ (gitignored): results-<YYYYmmdd-HHMMSS>.json,
latest.json and table.md, and prints the table. `--update-docs` (for maintainers; also
spelled `--update-readme`, its name from when the table lived in the README) also rewrites
the benchmarks page, docs/explanation/benchmarks.md, between the bench markers, and the
tracked bench/results.json. A run
that fails or is interrupted (Ctrl-C, SIGTERM) keeps what it measured in
bench/out/results.partial.json and removes its namespaces and processes.

Every figure is measured `--repeats` times; the table shows the median and every run.
Everything runs inside namespaces this script creates, on 198.18.0.0/15, and every
traffic generator runs for a bounded time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.figures import SECTION_HELP, SECTIONS, log, new_results  # noqa: E402
from bench.sections import measure_sections  # noqa: E402
from bench.table import render_table, replace_between_markers  # noqa: E402
from dclab.dcemu.process import require_root  # noqa: E402
from dclab.paths import DCEMU  # noqa: E402

REPEATS_DEFAULT, REPEATS_MIN, REPEATS_MAX = 3, 1, 20


# -- outputs ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Paths:
    out_dir: Path = ROOT / "bench" / "out"
    page: Path = ROOT / "docs" / "explanation" / "benchmarks.md"  # the table between its bench markers
    tracked_json: Path = ROOT / "bench" / "results.json"


def write_outputs(results: dict, table: str, paths: Paths, update_docs: bool, stamp: str) -> list[Path]:
    """bench/out/results-STAMP.json, latest.json, table.md; with update_docs also the
    benchmarks page's table and the tracked results.json. Returns what it wrote."""
    paths.out_dir.mkdir(parents=True, exist_ok=True)
    text = json.dumps(results, indent=2) + "\n"
    written = []
    for p, content in ((paths.out_dir / f"results-{stamp}.json", text), (paths.out_dir / "latest.json", text),
                       (paths.out_dir / "table.md", table + "\n")):
        p.write_text(content)
        written.append(p)
    if update_docs:
        paths.page.write_text(replace_between_markers(paths.page.read_text(), table))
        paths.tracked_json.write_text(text)
        written += [paths.page, paths.tracked_json]
    return written


def write_partial(results: dict, paths: Paths) -> Path:
    paths.out_dir.mkdir(parents=True, exist_ok=True)
    p = paths.out_dir / "results.partial.json"
    p.write_text(json.dumps(results, indent=2) + "\n")
    return p


# -- arguments -------------------------------------------------------------------------------


def _repeats(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = None
    if n is None or not REPEATS_MIN <= n <= REPEATS_MAX:
        raise argparse.ArgumentTypeError(f"must be an integer from {REPEATS_MIN} to {REPEATS_MAX} (got {text!r})")
    return n


def _only(text: str) -> list[str]:
    names = [s.strip() for s in text.split(",")]
    bad = [s for s in names if s not in SECTIONS]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"unknown section(s) {', '.join(repr(s) for s in bad)}; "
                                         f"valid sections: {', '.join(SECTIONS)}")
    return [s for s in SECTIONS if s in names]  # the bench's own order (kernel first)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="bench/run.py",
        description="Measure dcemu against the kernel path and its targets.\n"
                    "Writes bench/out/results-TIME.json, bench/out/latest.json and bench/out/table.md and prints\n"
                    "the table; changes no tracked file unless --update-docs is given. An interrupted or failed\n"
                    "run keeps what it measured in bench/out/results.partial.json. Needs root and a built dcemu.",
        epilog="sections (for --only; the default runs all, in this order):\n" + "\n".join(f"  {s:<10} {h}" for s, h in SECTION_HELP.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--repeats", type=_repeats, default=REPEATS_DEFAULT, metavar="N",
                   help=f"runs per figure, {REPEATS_MIN} to {REPEATS_MAX}; the table shows the median and every run "
                        f"[default {REPEATS_DEFAULT}]")
    p.add_argument("--only", type=_only, default=list(SECTIONS), metavar="SECTION[,SECTION]",
                   help="run only these sections (comma-separated; names below); the table then shows only what was "
                        "measured [default: all]")
    # --update-readme: the option's name from when the table lived in the README, kept working.
    p.add_argument("--update-docs", "--update-readme", dest="update_docs", action="store_true",
                   help="for maintainers: also rewrite the table of docs/explanation/benchmarks.md (between the bench "
                        "markers) and the tracked bench/results.json; needs the full bench (no --only)")
    args = p.parse_args(argv)
    if args.update_docs and args.only != list(SECTIONS):
        p.error("--update-docs needs the full bench: the benchmarks page's table must not lose rows (drop --only)")
    return args


# -- running ---------------------------------------------------------------------------------


def environment() -> dict[str, Any]:
    def out(*cmd: str) -> str:
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=10, cwd=ROOT)
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return p.stdout.strip() if p.returncode == 0 else ""

    return {"measured_at": time.strftime("%Y-%m-%d %H:%M:%S"), "kernel": out("uname", "-r") or "unknown",
            "cpus": os.cpu_count(), "git_commit": out("git", "rev-parse", "--short", "HEAD") or "unknown",
            "dcemu_version": out(str(DCEMU), "--version") or "unknown",
            "net.core.rmem_max": out("sysctl", "-n", "net.core.rmem_max"), "net.core.wmem_max": out("sysctl", "-n", "net.core.wmem_max")}


def preflight() -> None:
    require_root()
    missing = [t for t in ("iperf3", "ping", "setpriv") if shutil.which(t) is None]
    if missing:
        raise SystemExit(f"missing: {', '.join(missing)} (make setup)")


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None, paths: Paths | None = None) -> int:
    paths = paths or Paths()
    args = parse_args(argv)
    preflight()
    results = new_results(args.repeats, args.only)
    results["environment"] = environment()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    # Ctrl-C and SIGTERM unwind every context manager: namespaces, dcemu and iperf3 go.
    old = {s: signal.signal(s, _interrupt) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        try:
            measure_sections(results, args.only)
        except BaseException as e:
            partial = write_partial(results, paths)
            if results["figures"]:
                print(render_table(results))
            why = "interrupted" if isinstance(e, KeyboardInterrupt) else f"{type(e).__name__}: {e}"
            log(f"stopped early ({why}); what was measured is in {partial}")
            if isinstance(e, KeyboardInterrupt):
                return 130
            raise
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    table = render_table(results)
    print(table)
    for p in write_outputs(results, table, paths, args.update_docs, stamp):
        log(f"wrote {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
