"""What a simulation model was calibrated on, as the calibration kept it.

``scripts/calibrate_client.py`` measures the aioquic client's cost per packet (the
simulation's ``AIOQUIC_CLIENT_US``, dclab/dcemu/sim_models.py) in emulated runs and keeps
what it measured in ``data/calibration/aioquic-client.json``: the command, each point's
configuration and each run's statistics. The constant in the code is the value that record
gives (a test holds them together), and ``dclab validate`` marks the points the model was
calibrated on, so that the model is judged on the others (hold-out).
"""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..files import JsonObject
from ..paths import ROOT
from ..scenario import Scenario, build

CLIENT = ROOT / "data" / "calibration" / "aioquic-client.json"


@dataclass(frozen=True)
class RunStats:
    """One run's backlogged service times, µs (dclab/endpoints/aioquic/rx_trace.py)."""

    trace: str  # the trace file's name
    n: int
    mean_us: float
    p50_us: float
    p90_us: float
    p99_us: float


@dataclass(frozen=True)
class CalibrationPoint:
    """One configuration the model was calibrated on: a throughput run of ``stack`` with
    ``scenario`` (changes from the default scenario) and ``udp_buffer``."""

    name: str
    options: list[str]  # the `dclab run throughput` options that make it
    stack: str
    cc: str
    udp_buffer: str
    size: str
    scenario: JsonObject  # as the calibration file gives it
    runs: list[RunStats] = field(default_factory=list)

    def scenario_model(self) -> Scenario:
        return build(**self.scenario)

    def matches(self, experiment: str, stack: str, cc: str, udp_buffer: str | None, scenario: Scenario) -> bool:
        """Whether a run is of this point (any seed)."""
        ours = self.scenario_model().model_copy(update={"seed": scenario.seed})
        return (experiment, stack, cc, udp_buffer or "default") == ("throughput", self.stack, self.cc,
                                                                     self.udp_buffer) and ours == scenario


@dataclass(frozen=True)
class Calibration:
    """A kept calibration: what it measured and the value it gives."""

    parameter: str  # the constant it sets, e.g. "AIOQUIC_CLIENT_US"
    command: str
    commit: str
    date: str
    trace_cost_us: float  # what noting one datagram costs the traced client
    points: list[CalibrationPoint]

    def pooled_mean_us(self) -> float:
        """The mean over every backlogged packet of every run (each run weighed by its packets)."""
        runs = [r for p in self.points for r in p.runs]
        return sum(r.n * r.mean_us for r in runs) / sum(r.n for r in runs)

    def value(self) -> float:
        """The constant this calibration gives: the pooled mean less the trace's own cost, to 0.1 µs."""
        return round(self.pooled_mean_us() - self.trace_cost_us, 1)

    def run_means(self) -> list[float]:
        return [r.mean_us for p in self.points for r in p.runs]

    def spread(self) -> tuple[float, float, float]:
        """The runs' means: lowest, median, highest."""
        means = self.run_means()
        return min(means), statistics.median(means), max(means)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1) + "\n"


def load(path: Path = CLIENT) -> Calibration:
    d = json.loads(Path(path).read_text())
    points = [CalibrationPoint(**{**p, "runs": [RunStats(**r) for r in p["runs"]]}) for p in d.pop("points")]
    return Calibration(**d, points=points)


def client_points(path: Path = CLIENT) -> list[CalibrationPoint]:
    """The points the client model was calibrated on; none when no calibration is kept."""
    return load(path).points if Path(path).is_file() else []
