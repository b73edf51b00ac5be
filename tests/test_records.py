"""dcemu's stats records read through one typed, versioned reader (dclab/analysis/records.py)
that mirrors emu/src/engine/record.rs."""

from __future__ import annotations

import gzip
import json

import orjson
import pytest
from conftest import run_dclab
from record_checks import kinds_seen, mismatches

from dclab.analysis.records import STATS_VERSION, Stats, StatsError, StatsRecords, parse


def test_every_record_a_simulation_writes_has_exactly_the_modelled_fields(tmp_path):
    """Two simulated runs, one over two DC legs with PDCP reordering and one over an LTE
    cell: each of their records parses, and dcemu wrote exactly the fields of the models
    (the real-time runtime's are checked by tests/test_inspection.py)."""
    seen: set[str] = set()
    for name, args in (("dc", []), ("cell", ["--link", "lte:good"])):
        out = tmp_path / name
        r = run_dclab("run", "throughput", "--backend", "sim", "--size", "2MB", "--json", "--out", str(out), *args,
                      timeout=120)
        assert r.returncode == 0, r.stderr
        lines = gzip.decompress((out / "rep-01" / "dcemu-stats.jsonl.gz").read_bytes()).splitlines()
        raw = [orjson.loads(x) for x in lines if x.strip()]
        assert raw[-1]["type"] == "sim"  # the simulation's own line, not a stats record
        stats = raw[:-1]
        assert {d["type"] for d in stats} == {"interval", "summary"}
        for i, d in enumerate(stats):
            assert mismatches(d) == [], f"{name} record {i}"
            seen |= kinds_seen(d)
        assert len(StatsRecords.of_file(out / "rep-01" / "dcemu-stats.jsonl.gz", drop_last_of_type="sim")) == len(stats)
    assert {"Leg", "Direction", "Bearer", "Rx", "Hist", "Cell", "Device", "Engine"} <= seen


def test_an_unknown_version_or_shape_is_refused_with_what_to_do(tmp_path):
    rec = {"type": "summary", "t_ms": 1.0}
    assert parse(json.dumps(rec)).version == 1  # records from before the version was written
    assert parse(json.dumps({**rec, "version": STATS_VERSION})).t_ms == 1.0
    with pytest.raises(StatsError, match=rf"stats version {STATS_VERSION + 1}; this dclab reads versions 1 to "
                                         rf"{STATS_VERSION} \(update dclab"):
        parse(json.dumps({**rec, "version": STATS_VERSION + 1}))
    with pytest.raises(StatsError, match=r"legs\.0\.downlink\.out_gbps: Extra inputs are not permitted"):
        parse(json.dumps({**rec, "legs": [{"name": "leg1", "downlink": {"out_gbps": 1}}]}))
    with pytest.raises(StatsError, match="type: Input should be 'interval' or 'summary'"):
        parse(json.dumps({"type": "sim", "t_ms": 1.0}))
    f = tmp_path / "dcemu-stats.jsonl"
    f.write_text(json.dumps(rec) + "\n" + json.dumps({**rec, "version": 99}) + "\n")
    records = StatsRecords.of_file(f)
    assert records[0] == Stats(type="summary", t_ms=1.0)  # read when looked at ...
    with pytest.raises(StatsError, match=r"dcemu-stats\.jsonl, line 2: dcemu's stats version 99"):
        records.summary()  # ... and the file's second line is named when it is refused
