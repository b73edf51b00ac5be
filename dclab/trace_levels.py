"""Cutting a UCC-style CSV trace (one row per second: ``DL_bitrate`` in kbit/s, ``CQI``,
``RSRP``) into one trace per signal level of ``--link lte:LEVEL`` (``lte.py``).

Each row goes to one level by its CQI or its RSRP; a level's lower bound is inclusive, so a
value on a bound goes to the better level.

**CQI**: the bounds come from our own channel model, not from the trace. Each level's mean
SINR (``lte.sinr_db``) maps to one CQI through PiroEW2010 as the cell does
(emu/src/cell/amc.rs, mirrored by ``cqi_from_sinr_db``): good 32.5 dB -> 15, medium 14.6 dB
-> 9, poor 3.3 dB -> 3, edge -5.1 dB -> 0. Neighbouring levels split at the midpoint of
their CQIs: good >= 12, medium 6-11, poor 2-5, edge 0-1.

**RSRP**: a common field rule of thumb (not a standard), one band per level: >= -80 dBm excellent (good),
-90 to -80 good (medium), -100 to -90 fair, mid-cell (poor), below -100 poor, cell edge
(edge). Our model's cell has no interference, so its levels have a far lower RSRP for their
SINR (46 dBm over 1200 subcarriers is 15.2 dBm per resource element, minus the path loss of
``lte.py``: -90, -108, -120, -128 dBm): RSRP and CQI cuts of one trace need not agree.

A row whose CQI (an integer 0-15), RSRP (-140 to -44 dBm, the LTE reporting range) or
``DL_bitrate`` (0 to 1e9 kbit/s, what dcemu accepts) is missing or invalid is skipped and
counted. A level's rows keep their order and all columns; ``Timestamp`` (UCC's
``%Y.%m.%d_%H.%M.%S``) is rewritten as consecutive seconds from the level's first row, as
dcemu replays them (it ignores timestamps). A level with fewer than ``MIN_ROWS`` rows gets
no file.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import math
import statistics
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from . import lte
from .errors import TraceError
from .files import FileRefused, check_output, check_output_dir, write_output
from .traces import read_csv

By = Literal["cqi", "rsrp"]
COLUMN: dict[str, str] = {"cqi": "CQI", "rsrp": "RSRP"}
RATE_COLUMN = "DL_bitrate"
MIN_ROWS = 10  # seconds: shorter is too little to run a flow over
MAX_KBPS = 1e9  # dcemu's largest CSV rate (emu/src/config/trace_file.rs)
RSRP_RANGE = (-140.0, -44.0)  # dBm
# Lower bound of each level's RSRP band, dBm (see the module docs); the worst has none.
RSRP_BANDS: dict[str, float] = {"good": -80.0, "medium": -90.0, "poor": -100.0, "edge": -math.inf}
TIME_FORMAT = "%Y.%m.%d_%H.%M.%S"

# TS 36.213 Table 7.2.3-1 as (bits per symbol, code rate x 1024), indexed by CQI; the copy
# of emu/src/cell/amc.rs's CQI_TABLE (tests check both agree through dcemu).
CQI_TABLE = [(0, 0), (2, 78), (2, 120), (2, 193), (2, 308), (2, 449), (2, 602), (4, 378), (4, 490),
             (4, 616), (6, 466), (6, 567), (6, 666), (6, 772), (6, 873), (6, 948)]
BER = 0.00005  # PiroEW2010's target bit error rate


class CutError(TraceError):
    """Bad input to a cut: ``option`` names the option or argument (FILE), the message what is wrong."""

    def __init__(self, option: str, message: str):
        super().__init__(f"{option}: {message}")
        self.option, self.message = option, message


def cqi_from_sinr_db(sinr_db: float) -> int:
    """The CQI PiroEW2010 gives a SINR (dB): the highest whose efficiency ``Qm·rate/1024``
    does not exceed ``log2(1 + SINR/Γ)``, ``Γ = -ln(5·BER)/1.5``; 0 out of range."""
    s = math.log2(1 + 10 ** (sinr_db / 10) / (-math.log(5 * BER) / 1.5))
    return sum(1 for qm, rate in CQI_TABLE[1:] if qm * rate / 1024 <= s)


def level_cqi() -> dict[str, int]:
    """The CQI of each level's mean SINR, best level first."""
    return {name: cqi_from_sinr_db(lte.sinr_db(d)) for name, d in lte.LEVELS.items()}


def lower_bounds(by: By) -> dict[str, float]:
    """Each level's inclusive lower bound of CQI or RSRP, best level first (the worst: -inf)."""
    if by == "rsrp":
        return dict(RSRP_BANDS)
    cqi = list(level_cqi().items())
    return {name: (c + cqi[i + 1][1]) / 2 if i + 1 < len(cqi) else -math.inf for i, (name, c) in enumerate(cqi)}


def threshold_text(by: By) -> dict[str, str]:
    """Each level's range as people read it: 'CQI 6-11', '-90 <= RSRP < -80 dBm', ..."""
    b = lower_bounds(by)
    names = list(b)
    out = {}
    for i, name in enumerate(names):
        lo, hi = b[name], b[names[i - 1]] if i else math.inf
        if by == "cqi":
            a = 0 if math.isinf(lo) else math.ceil(lo)
            z = 15 if math.isinf(hi) else math.ceil(hi) - 1
            out[name] = f"CQI {a}-{z}" if a != z else f"CQI {a}"
        elif math.isinf(hi):
            out[name] = f"RSRP >= {lo:g} dBm"
        elif math.isinf(lo):
            out[name] = f"RSRP < {hi:g} dBm"
        else:
            out[name] = f"{lo:g} <= RSRP < {hi:g} dBm"
    return out


def parse_levels(text: str) -> list[str]:
    """Level names or distances (750m) separated by ',', as best first; CutError naming
    --levels."""
    names = []
    for x in text.split(","):
        try:
            names.append(lte.parse_link(f"lte:{x.strip()}").level)
        except ValueError:
            allowed = ", ".join([*lte.LEVELS, *(f"{d}m" for d in lte.LEVELS.values())])
            raise CutError("--levels", f"unknown level {x.strip()!r} (allowed: {allowed}, separated by ',')") from None
    return [n for n in lte.LEVELS if n in names]


class LevelCut(BaseModel):
    """One level of a cut: a row of the table, an entry of --json."""

    level: str
    threshold: str
    rows: int
    mean_mbps: float | None
    median_mbps: float | None
    file: str | None  # None: fewer than MIN_ROWS rows (see note)
    note: str = ""


class FileCut(BaseModel):
    """The cut of one input file."""

    input: str
    by: By
    rows: int
    skipped: dict[str, int]  # column -> rows skipped for a missing or invalid value there
    other_levels: int  # rows assigned to a level not asked for
    levels: list[LevelCut]


def _valid(row: list[str], i: int, column: str) -> float | None:
    """The row's value in ``column`` (index ``i``), or None if missing or out of range."""
    try:
        v = float(row[i]) if i < len(row) else math.nan
    except ValueError:
        return None
    lo, hi = {"CQI": (0, 15), "RSRP": RSRP_RANGE}.get(column, (0, MAX_KBPS))
    ok = lo <= v <= hi and (column != "CQI" or v == int(v))  # NaN fails the range
    return v if ok else None


def read_trace(path: Path, by: By) -> tuple[list[str], list[list[str]]]:
    """Header and rows of a CSV trace with the columns cutting ``by`` needs; CutError
    naming the file and what is wrong."""
    try:
        header, rows = read_csv(path)
    except FileRefused as e:
        raise CutError("FILE", str(e).removeprefix("trace: ")) from None
    if not header:
        raise CutError("FILE", f"{path}: empty file (no header row)")
    for column in (COLUMN[by], RATE_COLUMN):
        if column not in header:
            raise CutError("FILE", f"{path}: no column {column!r} (--by {by} needs {COLUMN[by]} and {RATE_COLUMN}; "
                                   f"have: {', '.join(header)})")
    if not rows:
        raise CutError("FILE", f"{path}: no data rows (only a header)")
    return header, rows


def assign(header: list[str], rows: list[list[str]], by: By) -> tuple[dict[str, list[list[str]]], dict[str, int]]:
    """Rows per level (all four, best first, in input order) and rows skipped, counted
    under the first column of (CQI or RSRP, DL_bitrate) whose value is bad."""
    bounds = lower_bounds(by)
    col, rate = header.index(COLUMN[by]), header.index(RATE_COLUMN)
    out: dict[str, list[list[str]]] = {name: [] for name in bounds}
    skipped = {COLUMN[by]: 0, RATE_COLUMN: 0}
    for row in rows:
        if (v := _valid(row, col, COLUMN[by])) is None:
            skipped[COLUMN[by]] += 1
        elif _valid(row, rate, RATE_COLUMN) is None:
            skipped[RATE_COLUMN] += 1
        else:
            out[next(name for name, lo in bounds.items() if v >= lo)].append(row)
    return out, skipped


def retimed(header: list[str], rows: list[list[str]]) -> list[list[str]]:
    """``rows`` with Timestamp as consecutive seconds from the first row's (unchanged if
    there is no such column or the first row's does not parse)."""
    if "Timestamp" not in header or not rows:
        return rows
    i = header.index("Timestamp")
    try:
        t0 = dt.datetime.strptime(rows[0][i], TIME_FORMAT)
    except (IndexError, ValueError):
        return rows
    return [[*r[:i], (t0 + dt.timedelta(seconds=k)).strftime(TIME_FORMAT), *r[i + 1:]] for k, r in enumerate(rows)]


def cut(paths: list[Path], by: By, levels: list[str], out: Path, force: bool = False) -> list[FileCut]:
    """Cuts each trace and writes ``<stem>-<level>.csv`` into ``out`` for each asked level
    with at least MIN_ROWS rows. Every input is read and every output name checked before
    anything is written: CutError for a bad input, FileExistsError for an output that
    exists (unless ``force``)."""
    try:
        check_output_dir(out, "--out")
    except FileRefused as e:
        raise CutError("--out", str(e).removeprefix("--out: ")) from None
    stems = [p.stem for p in paths]
    if dup := sorted({s for s in stems if stems.count(s) > 1}):
        raise CutError("FILE", f"two inputs named {dup[0]!r} would write the same files")
    results, writes = [], {}
    for path in paths:
        header, rows = read_trace(path, by)
        per_level, skipped = assign(header, rows, by)
        text = threshold_text(by)
        rate = header.index(RATE_COLUMN)
        cuts = []
        for name in levels:
            mine = per_level[name]
            mbps = [float(r[rate]) / 1e3 for r in mine]
            file, note = None, ""
            if len(mine) < MIN_ROWS:
                note = f"{len(mine)} rows, fewer than {MIN_ROWS}: no file"
            else:
                f = out / f"{path.stem}-{name}.csv"
                writes[f] = [header, *retimed(header, mine)]
                file = str(f)
            cuts.append(LevelCut(level=name, threshold=text[name], rows=len(mine),
                                 mean_mbps=round(statistics.fmean(mbps), 3) if mbps else None,
                                 median_mbps=round(statistics.median(mbps), 3) if mbps else None, file=file,
                                 note=note))
        other = sum(len(v) for k, v in per_level.items() if k not in levels)
        results.append(FileCut(input=str(path), by=by, rows=len(rows), skipped=skipped, other_levels=other,
                               levels=cuts))
    if not force and (there := [str(f) for f in writes if f.exists()]):
        raise FileExistsError(f"{', '.join(there)} already exist{'s' if len(there) == 1 else ''} (--force overwrites)")
    out.mkdir(parents=True, exist_ok=True)
    try:
        for f in writes:
            check_output(f, "--out")
    except FileRefused as e:
        raise CutError("--out", str(e).removeprefix("--out: ")) from None
    for f, lines in writes.items():
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(lines)
        write_output(f, buf.getvalue(), "--out")
    return results
