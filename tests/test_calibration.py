"""The simulation's calibrated constant is the one its kept calibration gives, the
calibration's points are none of the validation campaigns', and `dclab validate` judges the
model only on the points it was not calibrated on."""

from __future__ import annotations

from dclab.campaign import calibration as cal
from dclab.campaign import plan as cp
from dclab.campaign import twins as v
from dclab.dcemu.sim_models import AIOQUIC_CLIENT_US


def test_the_client_cost_in_the_code_is_the_one_the_kept_calibration_gives():
    record = cal.load()
    assert record.parameter == "AIOQUIC_CLIENT_US" and record.command.startswith("scripts/calibrate_client.py")
    assert AIOQUIC_CLIENT_US == record.value(), (
        f"sim_models.AIOQUIC_CLIENT_US is {AIOQUIC_CLIENT_US}; data/calibration/aioquic-client.json gives "
        f"{record.value()} (pooled {record.pooled_mean_us():.2f} less the trace's {record.trace_cost_us})")
    assert all(len(p.runs) >= 2 and all(r.n > 1000 for r in p.runs) for p in record.points), "two runs a point, each backlogged"


def test_no_point_the_model_was_calibrated_on_is_judged_by_the_validation_campaigns():
    points = cal.client_points()
    assert len(points) == 3
    for name in ("validate-study", "validate-smoke"):
        runs = cp.plan(cp.load(name), 1)
        assert not [r for r in runs if v.calibration_of(r, points)], name


def test_a_calibration_point_is_shown_but_not_judged():
    c = cp.sweep_campaign("cal", 1, ["throughput"], [cp.parse_config("aioquic:reno:default"), cp.parse_config("tcp:cubic")],
                          [("batch", [50, 100])], {"throughput": {"size": "20MB"}})
    runs = cp.plan(c)
    pairs = [(r, t) for r in runs if (t := v.sim_twin(r)) is not None]
    point = cal.CalibrationPoint("batch 50", ["--batch", "50"], "aioquic", "reno", "default", "20MB", {"batch": 50})
    rows = {}
    for emu, sim in pairs:
        off = emu.config.stack == "aioquic" and emu.value == 50  # the fitted point misses by 20 %
        rows[emu.key] = {"ok": True, "metrics": {"goodput_mbps": 30.0}}
        rows[sim.key] = {"ok": True, "metrics": {"goodput_mbps": 36.0 if off else 30.5}}
    points = v.compare(pairs, rows, [point])
    fitted = [p for p in points if not p.judged]
    assert [(p.config, p.value, p.calibration, p.passed) for p in fitted] == [("aioquic reno default-buffer", "50", "batch 50", False)]
    assert fitted[0].as_dict()["role"] == "calibration"
    assert v.summary(points) == {"throughput": {"points": 3, "passed": 3, "incomplete": 0, "calibration": 1}}
    assert v.compare(pairs, rows, [])[0].judged, "without a calibration every point is hold-out"
