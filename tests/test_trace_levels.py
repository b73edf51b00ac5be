"""`dclab cell cut-trace`: thresholds derived from the cell model, assignment of rows,
the shipped UCC 4G trace cut by CQI and by RSRP (each output a valid --trace), bad input."""

from __future__ import annotations

import csv
import json
import math
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from dclab import lte
from dclab import trace_levels as tl
from dclab.cli import app
from dclab.dcemu.process import check_scenario
from dclab.paths import DCEMU
from dclab.traces import read_csv, trace_mean_mbps

UCC4G = Path(__file__).resolve().parent.parent / "data/traces/raca4g/4G_A_2018.01.27_13.58.29.csv"
HEADER = "Timestamp,RSRP,CQI,DL_bitrate,UL_bitrate"


def cut(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(app, ["cell", "cut-trace", *args])
    assert "Traceback" not in r.output and (r.exception is None or isinstance(r.exception, SystemExit)), r.exception
    return r.exit_code, " ".join(r.output.split())


def write(path: Path, rows: list[str], header: str = HEADER) -> Path:
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def test_level_cqis_and_midpoints():
    assert {n: lte.sinr_db(d) for n, d in lte.LEVELS.items()} == {"good": 32.5, "medium": 14.6, "poor": 3.3, "edge": -5.1}
    assert tl.level_cqi() == {"good": 15, "medium": 9, "poor": 3, "edge": 0}
    assert tl.lower_bounds("cqi") == {"good": 12.0, "medium": 6.0, "poor": 1.5, "edge": -math.inf}
    assert tl.threshold_text("cqi") == {"good": "CQI 12-15", "medium": "CQI 6-11", "poor": "CQI 2-5", "edge": "CQI 0-1"}
    assert tl.threshold_text("rsrp") == {"good": "RSRP >= -80 dBm", "medium": "-90 <= RSRP < -80 dBm",
                                         "poor": "-100 <= RSRP < -90 dBm", "edge": "RSRP < -100 dBm"}
    # The documented PiroEW2010 bounds of emu/src/cell/amc.rs: CQI 1 from -2.11 dB, 15 from 24.05 dB.
    assert tl.cqi_from_sinr_db(-2.12) == 0 and tl.cqi_from_sinr_db(-2.10) == 1
    assert tl.cqi_from_sinr_db(24.04) == 14 and tl.cqi_from_sinr_db(24.06) == 15


@pytest.mark.skipif(not DCEMU.exists(), reason="dcemu not built")
def test_cqi_mapping_agrees_with_the_cell_model():
    """With fading off, dcemu's capacity at a SINR is 100 RBs at that SINR's CQI: the Python
    copy of the CQI table and PiroEW2010 must give the same bits, from -8 to 35 dB."""
    seen = set()
    for k in range(-16, 71):
        db = k / 2
        p = subprocess.run([str(DCEMU), "cell-capacity", f"--sinr-db={db}", "--fading", "none", "--seconds", "0.001"],
                           capture_output=True, text=True, check=True)
        qm, rate = tl.CQI_TABLE[c := tl.cqi_from_sinr_db(db)]
        assert json.loads(p.stdout)["mean_mbps"] == pytest.approx(100 * qm * rate * 120 // 1024 / 1e3), (db, c)
        seen.add(c)
    assert seen == set(range(16))


def test_assignment_on_a_small_trace(tmp_path):
    # 12 s at CQI 15 (good), 11 s at CQI 6 (medium, on its bound), one row of each kind of bad value,
    # 2 s at CQI 1 (edge: too few for a file).
    rows = [f"2020.01.01_00.00.{i:02d},-70,15,{1000 * (i + 1)},1" for i in range(12)]
    rows += ["2020.01.01_00.01.00,-85,6,5000,1"] * 11
    rows += ["2020.01.01_00.02.00,-85,-,5000,1", "2020.01.01_00.02.01,-85,16,5000,1",
             "2020.01.01_00.02.02,-85,7.5,5000,1", "2020.01.01_00.02.03,-85,7,-1,1", "2020.01.01_00.02.04,-85,7,,1",
             "2020.01.01_00.02.05,-85,7"]
    rows += ["2020.01.01_00.03.00,-120,1,100,1", "2020.01.01_00.03.01,-120,0,300,1"]
    src = write(tmp_path / "t.csv", rows)
    code, out = cut(str(src), "--by", "cqi", "--out", str(tmp_path / "out"), "--json")
    assert code == 0, out
    [r] = json.loads(out)
    levels = {lv["level"]: lv for lv in r["levels"]}
    assert r["rows"] == 31 and r["skipped"] == {"CQI": 3, "DL_bitrate": 3} and r["other_levels"] == 0
    assert [levels[n]["rows"] for n in lte.LEVELS] == [12, 11, 0, 2]
    assert sum(lv["rows"] for lv in r["levels"]) + sum(r["skipped"].values()) == r["rows"]
    assert levels["good"]["mean_mbps"] == 6.5 and levels["good"]["median_mbps"] == 6.5
    assert levels["edge"]["mean_mbps"] == 0.2 and levels["edge"]["file"] is None
    assert "2 rows, fewer than 10" in levels["edge"]["note"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["t-good.csv", "t-medium.csv"]
    header, med = read_csv(tmp_path / "out/t-medium.csv")
    assert header == HEADER.split(",") and len(med) == 11
    # Re-timestamped as consecutive seconds from the level's first row; other columns kept.
    assert [r[0] for r in med[:3]] == ["2020.01.01_00.01.00", "2020.01.01_00.01.01", "2020.01.01_00.01.02"]
    assert med[10][0] == "2020.01.01_00.01.10" and all(r[1:] == ["-85", "6", "5000", "1"] for r in med)
    _, good = read_csv(tmp_path / "out/t-good.csv")
    assert [r[3] for r in good] == [str(1000 * (i + 1)) for i in range(12)]  # order kept

    # By RSRP the same rows split otherwise: -70 good, -85 medium (its invalid CQIs do not matter), -120 edge.
    code, out = cut(str(src), "--by", "rsrp", "--out", str(tmp_path / "rsrp"), "--json", "--levels", "edge,750m")
    assert code == 0, out
    [r] = json.loads(out)
    assert [lv["level"] for lv in r["levels"]] == ["medium", "edge"]
    assert [lv["rows"] for lv in r["levels"]] == [14, 2] and r["skipped"] == {"RSRP": 0, "DL_bitrate": 3}
    assert r["other_levels"] == 12 and not (tmp_path / "rsrp/t-good.csv").exists()


def test_bounds_go_to_the_better_level():
    header = HEADER.split(",")
    rows = [["t", str(rsrp), str(cqi), "1", "1"] for rsrp, cqi in
            [(-80, 12), (-80.5, 11), (-90, 6), (-90.1, 5), (-100, 2), (-100.1, 1), (-44, 15), (-140, 0)]]
    by_cqi, _ = tl.assign(header, rows, "cqi")
    by_rsrp, _ = tl.assign(header, rows, "rsrp")
    cqis = {n: [int(r[2]) for r in v] for n, v in by_cqi.items()}
    rsrps = {n: [float(r[1]) for r in v] for n, v in by_rsrp.items()}
    assert cqis == {"good": [12, 15], "medium": [11, 6], "poor": [5, 2], "edge": [1, 0]}
    assert rsrps == {"good": [-80, -44], "medium": [-80.5, -90], "poor": [-90.1, -100], "edge": [-100.1, -140]}
    _, skipped = tl.assign(header, [["t", "-43", "1", "1", "1"], ["t", "-141", "1", "1", "1"]], "rsrp")
    assert skipped == {"RSRP": 2, "DL_bitrate": 0}


@pytest.mark.parametrize("by", ["cqi", "rsrp"])
def test_shipped_4g_trace(tmp_path, by):
    """The UCC 4G trace (static, RSRP -105 to -116 dBm, CQI 5-8): every row is kept, and each
    file written is a --trace dcemu accepts with the level's mean rate."""
    code, out = cut(str(UCC4G), "--by", by, "--out", str(tmp_path), "--json")
    assert code == 0, out
    [r] = json.loads(out)
    _, rows = read_csv(UCC4G)
    assert r["rows"] == len(rows) == 856
    assert sum(lv["rows"] for lv in r["levels"]) + sum(r["skipped"].values()) == r["rows"]
    rows_of = {lv["level"]: lv["rows"] for lv in r["levels"]}
    # Measured: CQI 6-8 in 853 s, CQI 5 in 3 s; RSRP below -100 dBm throughout.
    assert rows_of == ({"good": 0, "medium": 853, "poor": 3, "edge": 0} if by == "cqi" else
                       {"good": 0, "medium": 0, "poor": 0, "edge": 856})
    written = [lv for lv in r["levels"] if lv["file"]]
    assert [lv["level"] for lv in written] == (["medium"] if by == "cqi" else ["edge"])
    assert sorted(p.name for p in tmp_path.iterdir()) == [Path(lv["file"]).name for lv in written]
    for lv in written:
        f = Path(lv["file"])
        assert trace_mean_mbps(f) == pytest.approx(lv["mean_mbps"], abs=1e-3)
        if not DCEMU.exists():
            continue
        r = CliRunner().invoke(app, ["scenario", "show", "--dcemu", "--trace", str(f)])
        assert r.exit_code == 0 and str(f) in r.output, r.output
        assert check_scenario(r.output) is None


@pytest.mark.skipif(not DCEMU.exists(), reason="dcemu not built")
def test_dcemu_check_refuses_a_bad_trace(tmp_path):
    """The control for the check above: a CSV with a bad rate is refused by the same path."""
    f = write(tmp_path / "bad.csv", ["t,-85,6,-,1"] * 10)
    text = CliRunner().invoke(app, ["scenario", "show", "--dcemu", "--trace", str(f)]).output
    err = check_scenario(text)
    assert err is not None and "DL_bitrate" in err


def test_bad_input_is_refused_before_anything_is_written(tmp_path):
    out = tmp_path / "out"
    good = write(tmp_path / "g.csv", ["t,-85,6,5000,1"] * 10)
    cases = [
        ([str(good), "--by", "cqi", "--out", str(out), "--levels", "good,far"], "--levels: unknown level 'far'"),
        ([str(good), "--by", "cqi", "--out", str(out), "--levels", ""], "--levels: unknown level ''"),
        ([str(good), "--by", "snr", "--out", str(out)], "'snr' is not one of 'cqi', 'rsrp'"),
        ([str(good), "--by", "cqi"], "Missing option '--out'"),
        (["--by", "cqi", "--out", str(out)], "Missing argument 'FILES...'"),
        ([str(tmp_path / "nope.csv"), "--by", "cqi", "--out", str(out)], "does not exist"),
        ([str(tmp_path), "--by", "cqi", "--out", str(out)], "is a directory"),
        ([str(write(tmp_path / "empty.csv", [], header="")), "--by", "cqi", "--out", str(out)],
         "FILE: " + str(tmp_path / "empty.csv") + ": empty file (no header row)"),
        ([str(write(tmp_path / "hdr.csv", [])), "--by", "cqi", "--out", str(out)], "no data rows (only a header)"),
        ([str(write(tmp_path / "nocqi.csv", ["t,-85,5000,1"], header="Timestamp,RSRP,DL_bitrate,UL_bitrate")),
          "--by", "cqi", "--out", str(out)], "no column 'CQI' (--by cqi needs CQI and DL_bitrate"),
        ([str(write(tmp_path / "nodl.csv", ["t,-85,6"], header="Timestamp,RSRP,CQI")), "--by", "rsrp", "--out",
          str(out)], "no column 'DL_bitrate'"),
        ([str(UCC4G.parent.parent / "mahimahi/Verizon-LTE-short.down"), "--by", "rsrp", "--out", str(out)],
         "no column 'RSRP'"),
        ([str(good), str(write(tmp_path / "sub.csv", [])), "--by", "cqi", "--out", str(out)], "no data rows"),
        ([str(good), "--by", "cqi", "--out", str(good)], "--out"),
    ]
    (tmp_path / "bin.csv").write_bytes(b"\xff\xfe\x00\x81" * 10)
    cases.append(([str(tmp_path / "bin.csv"), "--by", "cqi", "--out", str(out)], "is not UTF-8 text"))
    (tmp_path / "same").mkdir()
    twin = write(tmp_path / "same/g.csv", ["t,-85,6,5000,1"] * 10)
    cases.append(([str(good), str(twin), "--by", "cqi", "--out", str(out)], "two inputs named 'g'"))
    for args, fragment in cases:
        code, text = cut(*args)
        assert code == 2 and fragment in text, (args, text)
        assert not out.exists(), args


def test_existing_files_are_kept_unless_force(tmp_path):
    out = tmp_path / "out"
    src = write(tmp_path / "g.csv", ["t,-85,6,5000,1"] * 10 + ["t,-70,15,9000,1"] * 10)
    assert cut(str(src), "--by", "cqi", "--out", str(out))[0] == 0
    (out / "g-good.csv").write_text("mine\n")
    code, text = cut(str(src), "--by", "cqi", "--out", str(out))
    assert code == 2 and f"{out / 'g-good.csv'}, {out / 'g-medium.csv'} already exist (--force overwrites)" in text
    assert (out / "g-good.csv").read_text() == "mine\n"
    code, text = cut(str(src), "--by", "cqi", "--out", str(out), "--force")
    assert code == 0, text
    _, rows = read_csv(out / "g-good.csv")
    assert len(rows) == 10 and all(r[3] == "9000" for r in rows)


def test_table_output(tmp_path):
    code, text = cut(str(UCC4G), "--by", "cqi", "--out", str(tmp_path))
    assert code == 0, text
    for fragment in ("by CQI", "medium │ CQI 6-11 │ 853 │ 5.72 │ 3.94", "poor │ CQI 2-5 │ 3 │ 11.97 │ 12.22",
                     "856 rows: 856 in the levels above", "good: 0 rows, fewer than 10: no file",
                     f"medium: wrote {tmp_path}/4G_A_2018.01.27_13.58.29-medium.csv (853 s)"):
        assert fragment in text, (fragment, text)
    with open(tmp_path / "4G_A_2018.01.27_13.58.29-medium.csv", newline="") as f:
        assert {r["CQI"] for r in csv.DictReader(f)} == {"6", "7", "8"}
