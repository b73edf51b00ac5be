"""mQUIC: N connections of one download share congestion state through a server-side
engine (docs/mquic.md). ``engine`` is the sans-IO core; the aioquic controllers that
wrap it come later."""

from .engine import (
    ConnId,
    ConnState,
    Decision,
    Group,
    Params,
    RateDecision,
    Record,
    gamma_sequence,
    next_gamma,
    stop_nfe,
)

__all__ = [
    "ConnId",
    "ConnState",
    "Decision",
    "Group",
    "Params",
    "RateDecision",
    "Record",
    "gamma_sequence",
    "next_gamma",
    "stop_nfe",
]
