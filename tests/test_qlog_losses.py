"""scripts/qlog_losses.py (docs/fidelity.md): losses and window reductions from the qlogs
of both aioquic generations."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from dclab.paths import ROOT


def _script():
    spec = importlib.util.spec_from_file_location("qlog_losses", ROOT / "scripts" / "qlog_losses.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_counts_losses_and_reductions_in_both_qlog_generations(tmp_path):
    qlog = _script()
    new = {"qlog_version": "0.3", "traces": [{"events": [
        {"name": "recovery:metrics_updated", "data": {"cwnd": 30000}},
        {"name": "recovery:packet_lost", "data": {}},
        {"name": "recovery:metrics_updated", "data": {"cwnd": 30000, "bytes_in_flight": 10}},
        {"name": "recovery:metrics_updated", "data": {"cwnd": 15000}},
        {"name": "recovery:metrics_updated", "data": {"bytes_in_flight": 10}},
        {"name": "recovery:metrics_updated", "data": {"cwnd": 16280}},
    ]}]}
    old = {"qlog_version": "draft-01", "traces": [{"event_fields": ["relative_time", "category", "event_type", "data"],
                                                   "events": [["0", "recovery", "metrics_updated", {"congestion_window": 12800}],
                                                              ["5", "recovery", "packet_lost", {}],
                                                              ["5", "recovery", "packet_lost", {}],
                                                              ["6", "recovery", "metrics_updated", {"congestion_window": 6400}],
                                                              ["9", "recovery", "metrics_updated", {"congestion_window": 3200}]]}]}
    (tmp_path / "new.qlog").write_text(json.dumps(new))
    (tmp_path / "old.qlog").write_text(json.dumps(old))
    assert qlog.count(Path(tmp_path / "new.qlog")) == {"packets_lost": 1, "cwnd_reductions": 1, "lowest_cwnd": 15000}
    assert qlog.count(Path(tmp_path / "old.qlog")) == {"packets_lost": 2, "cwnd_reductions": 2, "lowest_cwnd": 3200}
