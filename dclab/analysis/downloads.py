"""Short downloads as a run records them and the tables and figures read them.

A ``Download`` is one download: how it was made (``mode``, any string: a resume mode, an
mQUIC mode, a series label), its size in bytes, whether it completed and its completion
time in seconds after the request. The download experiment records ``TimedDownload``
(handshake, first byte, resumption; ``experiments/download.py``), the mquic experiment
``MquicDownload`` (what the server's engine logged of the group's network feedback
events; ``experiments/mquic_downloads.py``). A run keeps its downloads as JSON in its
details (``downloads``); ``downloads_in`` reads them back typed, from a repetition just
measured or from the store, old records (fields added since) included.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from functools import cache
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, TypeAdapter

Number = int | float  # as the program logged it: an integer stays one in the JSON


class Download(BaseModel):
    """One download: what every completion table and CDF reads."""

    model_config = ConfigDict(frozen=True)

    mode: str
    size: int  # bytes
    ok: bool = False
    error: str | None = None
    completion_s: float | None = None  # request to last byte

    @property
    def completed(self) -> bool:
        """It succeeded and its completion time is known."""
        return self.ok and self.completion_s is not None and not math.isnan(self.completion_s)


class TimedDownload(Download):
    """A download of the download experiment: its phases and what the stack said of
    resumption (times in s after the request)."""

    round: int | None = None  # the k-th download of its size in the repetition
    handshake_s: float | None = None
    first_byte_s: float | None = None
    last_byte_s: float | None = None
    bytes: int | None = None
    resumed: bool | None = None  # None: the stack cannot tell
    early_data: bool | None = None
    startup_s: float | None = None  # the client's start-up, where the stack reports it


class ConnTiming(BaseModel):
    """One connection of a download made over several."""

    model_config = ConfigDict(frozen=True)

    index: int
    handshake_s: float | None = None
    first_byte_s: float | None = None
    last_byte_s: float | None = None
    bytes: int | None = None


class PdcpStalls(BaseModel):
    """Reordering stalls of PDCP during a download over DC: t-Reordering started (a gap
    waited for), expired (a gap given up), and SDUs discarded as late."""

    model_config = ConfigDict(frozen=True)

    timer_starts: int = 0
    timer_expiries: int = 0
    discarded_late: int = 0


class MquicDownload(Download):
    """A download of the mquic experiment with the network feedback events (NFEs) the
    server's mQUIC engine logged for its group (None where the log did not say)."""

    paper_size: int | None = None  # the paper's size before --scale
    group: str | None = None  # the engine's group (None in records from before it was kept)
    nfes: Number | None = None
    nfes_within_rtt: Number | None = None
    delay_exits: Number | None = None
    first_nfe_packets: Number | None = None  # packets the group had sent before its first NFE
    first_nfe_cwnd: Number | None = None
    first_nfe_group_cwnd: Number | None = None
    first_nfe_kind: str | None = None  # "loss", "delay", ...
    syncs: int | None = None
    stop_packets: Number | None = None  # packets sent when synchronization stopped (None: it never did)
    group_packets: Number | None = None
    served: int | None = None  # the long-lived client's workload count: 1, 2, 3 ...
    conns: tuple[ConnTiming, ...] = ()
    pdcp_stalls: PdcpStalls | None = None  # over DC with PDCP reordering


D = TypeVar("D", bound=Download)


@cache
def _adapter(model: type[Download]) -> TypeAdapter[list[Download]]:
    return TypeAdapter(list[model])  # type: ignore[valid-type]


def downloads_in(details: Mapping[str, object], model: type[D]) -> list[D]:
    """The ``downloads`` of a run's details or stored metrics as ``model`` (none when it
    has none)."""
    raw = details.get("downloads")
    return _adapter(model).validate_python(raw) if raw else []  # type: ignore[return-value]


def with_mode(downloads: Iterable[D], mode: str) -> list[D]:
    """The downloads relabelled as one series ``mode``."""
    return [d.model_copy(update={"mode": mode}) for d in downloads]
