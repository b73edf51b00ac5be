"""Metric computations on hand-made inputs with known answers."""

import json

from dclab.analysis.metrics import (
    LegTotals,
    MeanStd,
    PdcpSummary,
    RxWait,
    bearer_series,
    jain,
    leg_series,
    mean_std,
    nearest,
    pdcp_summary,
)
from dclab.dcemu.records import Direction, Hist, Rx, Stats
from dclab.endpoints.base import TransferResult
from dclab.units import parse_size


def test_goodput_is_bytes_over_last_byte_minus_request():
    r = TransferResult(ok=True, bytes=100_000_000, request_s=0.0, first_byte_s=0.1, last_byte_s=20.0)
    assert r.goodput_mbps == 40.0
    assert TransferResult(ok=False, bytes=5).goodput_mbps is None


def test_mean_and_sample_std():
    assert mean_std([10.0, 20.0, 30.0]) == MeanStd(20.0, 10.0, 3)
    assert mean_std([5.0]) == MeanStd(5.0, 0.0, 1)
    assert mean_std([]).mean is None


def test_jain():
    assert jain([10, 10, 10]) == 1.0
    assert abs(jain([30, 0, 0]) - 1 / 3) < 1e-12
    assert abs(jain([20, 10, 10]) - (40**2) / (3 * 600)) < 1e-12


def test_series_are_aligned_to_the_request():
    recs = [
        {"type": "interval", "t_ms": 1000.0, "legs": [{"name": "leg1", "downlink": {"out_mbps": 5.0}}],
         "bearers": [{"name": "dc", "delivered_mbps": 4.0}]},
        {"type": "interval", "t_ms": 1010.0, "legs": [{"name": "leg1", "downlink": {"out_mbps": 7.0}}],
         "bearers": [{"name": "dc", "delivered_mbps": 6.0}]},
        {"type": "summary", "t_ms": 1012.0, "legs": [], "bearers": []},
    ]
    recs = [Stats.model_validate(d) for d in recs]
    assert leg_series(recs, t0_ms=1000.0) == {"leg1": [(0.0, 5.0), (0.01, 7.0)]}
    assert bearer_series(recs, t0_ms=990.0)["dc"] == [(0.01, 4.0), (0.02, 6.0)]


def test_pdcp_summary_picks_the_bearer():
    raw = [{"type": "summary", "t_ms": 1.0, "legs": [{"name": "leg1", "downlink": {"bytes_out": 3, "packets_out": 1, "dropped_queue_packets": 0,
                                                                      "dropped_loss_packets": 0}}],
             "bearers": [{"name": "dc", "tx_pdus": [["leg1", 1]], "rx": {"delivered": 1, "wait": {"count": 1, "mean_us": 2.0,
                          "p50_us": 2.0, "p99_us": 2.0, "max_us": 2.0, "buckets": []}}, "delivered_bytes": 1}]}]
    p = pdcp_summary([Stats.model_validate(d) for d in raw], "dc")
    assert p is not None and p.tx_pdus == {"leg1": 1} and p.rx_wait_us is not None and p.rx_wait_us.count == 1
    assert p.rx["delivered"] == 1 and set(p.rx) == set(Rx.model_fields) - {"wait"}  # every counter, 0 if unsaid
    assert p.legs["leg1"].bytes_out == 3
    # the kept totals are fields the records have, read by name: a renamed field fails here, not as a silent 0
    assert set(LegTotals.model_fields) <= set(Direction.model_fields)
    assert set(RxWait.model_fields) <= set(Hist.model_fields)
    assert p.rx_wait_us == RxWait(count=1, mean_us=2.0, p50_us=2.0, p99_us=2.0, max_us=2.0)
    assert pdcp_summary([], "dc") is None, "no summary record: none"
    stored = json.loads(json.dumps(p.model_dump(mode="json")))
    assert PdcpSummary.of(stored) == p and PdcpSummary.of({}) is None, "read back from the store as written"


def test_sizes():
    assert parse_size("100MB") == 100_000_000
    assert parse_size("1GB") == 10**9
    assert parse_size("2MiB") == 2 * 2**20
    assert parse_size("5000") == 5000


def test_bad_sizes_name_the_option():
    import pytest

    for bad in ("10XB", "0", "200GB", ""):
        with pytest.raises(ValueError, match="--size"):
            parse_size(bad)


def test_records_read_plain_or_gzipped_and_survive_a_cut(tmp_path):
    """A simulated run keeps its records gzipped; a crash may cut either kind of file. Every
    complete line is read, the cut one is not, and the records parse only what is looked at."""
    import gzip
    import json

    from dclab.dcemu.records import StatsRecords, stats_file

    lines = [json.dumps({"type": "interval", "t_ms": float(i)}) for i in range(500)]
    lines += [json.dumps({"type": "summary", "t_ms": 500.0}), json.dumps({"type": "sim", "packets": 7})]
    text = ("\n".join(lines) + "\n").encode()
    plain, packed = tmp_path / "a" / "dcemu-stats.jsonl", tmp_path / "b" / "dcemu-stats.jsonl.gz"
    for p, data in ((plain, text), (packed, gzip.compress(text))):
        p.parent.mkdir()
        p.write_bytes(data)
        assert stats_file(p.parent) == p
        r = StatsRecords.of_file(p, drop_last_of_type="sim")
        assert len(r) == 501 and r[-1].type == "summary" and r[0].t_ms == 0.0
        assert sum(x is not None for x in r._parsed) == 2  # only what was looked at
        assert r.summary() is r[-1] and len(r.intervals()) == 500
    assert stats_file(tmp_path) is None
    packed.write_bytes(gzip.compress(text)[: len(gzip.compress(text)) * 2 // 3])  # cut mid-stream
    cut = StatsRecords.of_file(packed)
    assert 0 < len(cut) < 502 and [x.t_ms for x in cut] == [float(i) for i in range(len(cut))]
    plain.write_bytes(text[: len(text) - 10])
    assert len(StatsRecords.of_file(plain)) == 501  # the cut sim line is left out


def test_nearest_is_the_first_record_nearest_in_time_and_parses_few(tmp_path):
    """The binary search finds what a scan of every record finds (the first of the nearest),
    over times with repeats and ties, and reads only a few records of a lazily parsed file."""
    import json
    import random

    from dclab.dcemu.records import StatsRecords

    rnd = random.Random(7)
    for _ in range(300):
        times = sorted(rnd.choice([0.0, 10.0, 10.0, 20.0, 25.0, 30.0, 30.0, 30.0, 45.0]) for _ in range(rnd.randint(1, 9)))
        records = [Stats(type="interval", t_ms=t, dt_ms=float(i)) for i, t in enumerate(times)]
        for t in (-5.0, 0.0, 5.0, 10.0, 12.5, 15.0, 22.5, 27.5, 30.0, 37.5, 50.0):
            assert nearest(records, t) is min(records, key=lambda r: abs(r.t_ms - t)), (times, t)
    lines = [json.dumps({"type": "interval", "version": 4, "t_ms": 10.0 * i}).encode() for i in range(18_000)]
    lazy = StatsRecords(lines)
    assert nearest(lazy, 90_004.0).t_ms == 90_000.0
    assert sum(p is not None for p in lazy._parsed) < 40
