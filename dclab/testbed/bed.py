"""What an experiment's ``measure`` may use of the bed it runs on: the real-time testbed
(``testbed.py``) and the simulated one (``simbed.py``) both are a :class:`Bed`, so an
experiment is written once for both and the type checker holds each to this face."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from ..dcemu.records import Stats
from ..endpoints.base import TransferResult, Workload
from .ping import Probe


class Bed(Protocol):
    """A bed with its servers up: clients run on it, and ``finish`` ends it and returns
    dcemu's records."""

    @property
    def workdir(self) -> Path:
        """Where the bed's own files are (dcemu's stats, the ends' logs)."""
        ...

    @property
    def tag(self) -> str:
        """A short name, unique among the beds of this host at a time (names things the
        servers keep across workloads, e.g. mQUIC's groups)."""
        ...

    # an experiment's own bookkeeping across the repetitions on this bed (``one_testbed``)
    state: dict[str, Any]
    # UDP datagrams the client's host dropped for a full socket buffer during the last
    # ``run_clients`` (None: not measured)
    client_udp_drops: int | None

    @property
    def start_wall(self) -> float | None:
        """Unix time of dcemu's stats ``t_ms`` = 0 (None before it started)."""
        ...

    def run_clients(self, timeout_s: float, qlog: bool = False, flows: list[str] | None = None,
                    workloads: dict[str, Workload] | None = None,
                    persistent: bool = False) -> dict[str, TransferResult]: ...  # fmt: skip

    def ping(self, interval_s: float) -> Probe:
        """A latency probe from the client to the server until stopped (``ping.py``);
        the real-time testbed's only."""
        ...

    def stop_clients(self) -> None:
        """Ends every running client now; the real-time testbed's only."""
        ...

    def finish(self) -> Sequence[Stats]:
        """Ends the bed and returns dcemu's records (``dcemu/records.py``)."""
        ...

    def dead_part(self) -> str | None: ...


def stats_ms(bed: Bed, wall: float | None) -> float | None:
    """Unix time ``wall`` on dcemu's stats clock: ms since its ``t_ms`` = 0 (None when
    either is unknown). The one place a client's wall time meets dcemu's records."""
    if wall is None or bed.start_wall is None:
        return None
    return (wall - bed.start_wall) * 1e3


__all__ = ["Bed", "stats_ms"]
