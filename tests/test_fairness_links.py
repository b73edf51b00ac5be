"""Fairness counted at the links (experiments/fairness.py, ``at_links``): the study
measured each flow on the links, so a duplicated DC flow counts once per leg; dclab's
headline JFI counts goodput after duplicate removal. Both come from dcemu's records."""

from __future__ import annotations

import pytest

from dclab.analysis.metrics import jain, leg_window_means, window_means
from dclab.dcemu.records import Stats
from dclab.experiments.fairness import at_links


def record(t_ms: float, leg_bytes: tuple[int, int], delivered: dict[str, int]) -> Stats:
    return Stats.model_validate({"type": "interval", "t_ms": t_ms,
            "legs": [{"name": f"leg{i + 1}", "downlink": {"bytes_out": b}} for i, b in enumerate(leg_bytes)],
            "bearers": [{"name": n, "delivered_bytes": d} for n, d in delivered.items()]})  # fmt: skip


def test_duplication_counts_the_dc_flow_once_per_leg():
    # 10 s: each leg sends 20 Mbit/s; SC1 and SC2 get 3 Mbit/s each; the duplicated DC flow
    # delivers 16 Mbit/s of goodput but takes 17 Mbit/s on each leg (34 at the links).
    mb = 1e6 / 8
    recs = [record(0, (0, 0), {"dc": 0, "sc1": 0, "sc2": 0}),
            record(10_000, (int(200 * mb), int(200 * mb)), {"dc": int(160 * mb), "sc1": int(30 * mb), "sc2": int(30 * mb)})]
    delivered = window_means(recs, 0.0, 10.0)
    legs = leg_window_means(recs, 0.0, 10.0)
    assert legs == {"leg1": pytest.approx(20.0), "leg2": pytest.approx(20.0)}
    links = at_links(delivered, legs)
    assert links == {"dc": pytest.approx(34.0), "sc1": pytest.approx(3.0), "sc2": pytest.approx(3.0)}
    assert jain(list(links.values())) == pytest.approx(40**2 / (3 * (34**2 + 9 + 9)))
    assert jain(list(links.values())) < jain(list(delivered.values())), "counting at the links is less fair"


def test_without_a_flow_or_a_leg_there_is_no_link_measure():
    assert at_links({"dc": 1.0, "sc1": 1.0}, {"leg1": 2.0, "leg2": 2.0}) == {}
    assert at_links({"dc": 1.0, "sc1": 1.0, "sc2": 1.0}, {"leg1": 2.0}) == {}
    assert leg_window_means([], 0.0, 10.0) == {}
    with pytest.raises(ValueError, match="start_s"):
        leg_window_means([], 0.0, 1.0, start_s=2.0)
