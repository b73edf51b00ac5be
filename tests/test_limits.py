"""One authority for bounds: dcemu (`dcemu limits`, LIMITS in emu/src/config/validate/mod.rs).
The harness's own bounds sit within dcemu's, so a value it takes is never refused later by
the emulator; and the two languages' defaults mean the same link."""

from __future__ import annotations

import json
import subprocess
import tomllib

import pytest

from dclab.paths import DCEMU
from dclab.scenario import RANGES, Scenario

# A scenario field -> dcemu's field (a leg direction's as "direction.*"), with the factor
# from the harness's unit to dcemu's.
FIELDS: dict[str, tuple[str, float]] = {
    "batch": ("split.batch", 1), "split": ("split.ratio", 1), "mtu": ("topology.mtu", 1),
    "t_reordering": ("pdcp.t_reordering_ms", 1), "pdcp_processing": ("pdcp.processing_ms", 1),
    "header_bytes": ("pdcp.header_bytes", 1), "stats_interval_ms": ("stats.interval_ms", 1),
    "queue_packets": ("direction.queue_packets", 1), "uplink_queue_packets": ("direction.queue_packets", 1),
    "delay_limit": ("direction.delay_limit", 1), "delay": ("direction.delay_ms", 1),
    "uplink_delay": ("direction.delay_ms", 1), "loss": ("direction.loss_percent", 1),
    "uplink_loss": ("direction.loss_percent", 1), "bw": ("direction.rate_bps", 1e6),
    "uplink_bw": ("direction.rate_bps", 1e6), "aqm_target_ms": ("aqm.target_ms", 1),
    "aqm_interval_ms": ("aqm.interval_ms", 1),
}  # fmt: skip


@pytest.fixture(scope="module")
def limits() -> dict[str, list[float]]:
    if not DCEMU.exists():
        pytest.skip("dcemu is not built (make build)")
    return json.loads(subprocess.run([str(DCEMU), "limits"], capture_output=True, text=True, check=True).stdout)


def test_every_bound_of_the_harness_sits_within_dcemus(limits):
    assert set(FIELDS) <= set(RANGES), "every mapped field has a range in dclab/scenario.py"
    for field, (name, factor) in FIELDS.items():
        lo, hi = RANGES[field]
        d_lo, d_hi = limits[name]
        assert d_lo <= float(lo) * factor and float(hi) * factor <= d_hi, (field, (lo, hi), name, (d_lo, d_hi))
    # the delay's jitter: a standard deviation up to the mean (delay_cov <= 1)
    assert float(RANGES["delay"][1]) * float(RANGES["delay_cov"][1]) <= limits["direction.delay_ms"][1]


def test_a_value_past_dcemus_bound_is_what_dcemu_refuses(limits, tmp_path):
    """The bounds printed are the ones applied: one beyond the largest batch is refused."""
    lo, hi = limits["split.batch"]
    p = tmp_path / "s.toml"
    for batch, ok in ((int(hi), True), (int(hi) + 1, False), (int(lo) - 1, False)):
        p.write_text(f"[split]\nbatch = {batch}\n")
        r = subprocess.run([str(DCEMU), "check", str(p)], capture_output=True, text=True)
        assert (r.returncode == 0) == ok, (batch, r.stderr)
        if not ok:
            assert "split.batch: must be between 1 and 1000000" in r.stderr


def test_the_defaults_are_the_same_link_in_both_languages(limits):
    d = tomllib.loads(subprocess.run([str(DCEMU), "defaults"], capture_output=True, text=True, check=True).stdout)
    s = Scenario()
    down, up = d["legs"][0]["downlink"], d["legs"][0]["uplink"]
    assert len(d["legs"]) == len(s.bw) == len(s.delay)
    assert (d["split"]["batch"], s.split[0] == s.split[1], "ratio" not in d["split"]) == (s.batch, True, True)
    assert down["rate"] == f"{s.bw[0]:g}mbit" and up["rate"] == f"{s.uplink_bw:g}mbit"
    assert down["delay"] == {"distribution": "normal", "mean_ms": s.delay[0], "std_ms": s.delay[0] * s.delay_cov}
    assert up["delay"]["mean_ms"] == s.uplink_delay and down["loss"] == {"model": "none"} == up["loss"]
    assert (down["queue_packets"], up["queue_packets"], down["delay_limit"]) == (
        s.queue_packets, s.uplink_queue_packets, s.delay_limit)
    assert down["loss_at"] == s.loss_at and down["jitter_reorders"] is True and s.reorders_by_jitter
    p = d["pdcp"]
    assert (p["sn_bits"], p["header_bytes"], p["t_reordering_ms"], p["reordering"], p["processing_ms"]) == (
        s.pdcp_sn_bits, s.header_bytes, s.t_reordering, s.reordering, s.pdcp_processing)
    assert d["topology"]["mtu"] == s.mtu and d["seed"] == s.seed
    # The one that differs on purpose: the harness records every 10 ms (its figures and
    # window means need it); dcemu alone writes a record every 100 ms.
    assert (s.stats_interval_ms, d["stats"]["interval_ms"]) == (10.0, 100.0)
