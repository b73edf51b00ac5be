"""dcemu's stats records read through one typed, versioned reader (dclab/dcemu/records.py)
that mirrors emu/src/engine/record.rs."""

from __future__ import annotations

import gzip
import json

import orjson
import pytest
from conftest import run_dclab
from record_checks import kinds_seen, mismatches

from dclab.dcemu.records import STATS_VERSION, Stats, StatsError, StatsRecords, parse
from dclab.dcemu.sim import simulate


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
        # every downlink packet handed to the client is in one flow's count
        summary = stats[-1]
        assert summary["flows"] and "flows_beyond" not in summary
        assert sum(f["packets"] for f in summary["flows"]) == summary["engine"]["packets_out_down"]
        assert len(StatsRecords.of_file(out / "rep-01" / "dcemu-stats.jsonl.gz", drop_last_of_type="sim")) == len(stats)
    assert {"Leg", "Direction", "Bearer", "Rx", "Hist", "Cell", "Device", "Engine", "DeliveredFlow"} <= seen


def test_a_leg_with_codel_reports_its_drops_in_the_modelled_fields(tmp_path):
    """A simulated TCP download through a leg whose queue runs CoDel (the scenario file's
    ``[legs.downlink.aqm]``): its records carry the AQM's counters, exactly as modelled,
    and CoDel dropped what the leg's queue never had to tail-drop."""
    out = tmp_path / "run"
    r = run_dclab("run", "throughput", "--backend", "sim", "--stack", "tcp", "--size", "10MB", "--json", "--out",
                  str(out), timeout=120)
    assert r.returncode == 0, r.stderr
    rep = out / "rep-01"
    scenario = tmp_path / "codel.toml"
    # The file ends inside the last [[legs]]: this table is that leg's downlink's.
    scenario.write_text((rep / "scenario.toml").read_text() + '\n[legs.downlink.aqm]\nkind = "codel"\n')
    stats = tmp_path / "stats.jsonl"
    simulate(scenario, rep / "workload.toml", stats, tmp_path / "dcemu.log")
    lines = [x for x in stats.read_bytes().splitlines() if x.strip()]
    raw = [orjson.loads(x) for x in lines]
    assert raw[-1]["type"] == "sim"  # the simulation's own line, not a stats record
    for i, d in enumerate(raw[:-1]):
        assert mismatches(d) == [], f"record {i}"
    last = parse(lines[-2].decode())
    assert last.type == "summary"
    *_, codel_leg = last.legs
    assert codel_leg.downlink.aqm is not None and codel_leg.downlink.aqm.dropped_packets > 0
    assert codel_leg.downlink.aqm.marked_packets == 0, "the modelled TCP sends no ECN-capable packet"
    assert codel_leg.downlink.dropped_queue_packets == 0
    assert all(leg.downlink.aqm is None for leg in last.legs[:-1]), "tail drop alone elsewhere"
    # Every leg's rate stage reports its packets' waits, whatever its discipline; none waits
    # longer than a full queue of 100 packets of 1,322 bytes at 20 Mbit/s takes (in µs).
    for leg in last.legs:
        assert leg.downlink.sojourn is not None and leg.downlink.sojourn.count > 1000, leg
        assert 0 < leg.downlink.sojourn.p50_us <= leg.downlink.sojourn.p99_us <= leg.downlink.sojourn.max_us
        assert leg.downlink.sojourn.max_us <= 100 * 1322 * 8 / 20 + 1


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


def _record(t_ms: float, kind: str = "interval") -> bytes:
    return orjson.dumps({"type": kind, "version": STATS_VERSION, "t_ms": t_ms})


def test_a_long_or_bomb_like_stats_file_is_thinned_as_it_is_read(tmp_path):
    """A figure reads at most about twice ``most`` records however long the file (a gzip
    of a few hundred kB here expands to tens of MB), keeping the first and the last two
    (the summary, the simulation's own line); a short file is read whole."""
    n = 300_000
    body = b"\n".join(_record(float(i)) for i in range(n)) + b"\n" + _record(n, "summary") + b"\n" + \
        _record(n, "sim") + b"\n"
    gz = tmp_path / "dcemu-stats.jsonl.gz"
    gz.write_bytes(gzip.compress(body))
    thin = StatsRecords.of_file(gz, drop_last_of_type="sim", most=1000)
    assert 1000 <= len(thin) <= 2000
    assert thin[0].t_ms == 0 and thin.summary() is not None and thin[-1].type == "summary"
    times = [r.t_ms for r in thin.intervals()]
    assert times == sorted(times) and times[-1] > 0.99 * (n - 1)
    # Evenly spread: one record every 2^k.
    steps = {b - a for a, b in zip(times, times[1:])}
    assert len(steps) == 1 and next(iter(steps)) in {2**k for k in range(20)}, sorted(steps)[:5]
    whole = StatsRecords.of_file(gz, drop_last_of_type="sim")
    assert len(whole) == n + 1
    # Cut mid-stream (a crash): what was written before the cut is read.
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(gzip.compress(body)[: len(gzip.compress(body)) // 2])
    part = StatsRecords.of_file(cut)
    assert 0 < len(part) < n and part[0].t_ms == 0
