"""mQUIC: N connections of one download share congestion state through a server-side
engine (docs/mquic.md). ``engine`` is the sans-IO core, ``controllers`` the aioquic
controllers wrapping it (imported on demand: it needs aioquic). The request header that
names a connection's group (``dclab-mquic``) is built and parsed here, so that client and
server share one format."""

from dataclasses import dataclass

from ..hystart import EXITS, SlowStartExit
from .engine import (
    MAX_CONNECTIONS,
    ConnId,
    ConnState,
    Decision,
    Group,
    Params,
    RateDecision,
    Record,
    SyncMode,
    gamma_sequence,
    next_gamma,
    stop_nfe,
)

HEADER = b"dclab-mquic"
# Workload.cc_options knobs (per connection) that the aioquic client turns into the header
OPTIONS = ("mquic_group", "mquic_n", "mquic_sync", "mquic_params", "mquic_iw", "mquic_exit", "mquic_merge")
PARAM_SETS = ("aioquic", "paper")
SS_EXITS = EXITS  # the controllers' delay-based slow-start exit (docs/mquic-implementation.md, "The controllers")
SYNC_MODES = ("full", "cwnd", "off")
DEFAULT_IW = 10  # packets: aioquic's K_INITIAL_WINDOW
MAX_IW = 1000


@dataclass(frozen=True)
class Membership:
    """What the ``dclab-mquic`` header says: connection ``conn`` of group ``group`` of
    ``n`` connections, with the sync mode (``off``: observe only), the parameter set
    (``aioquic``: ``Params.for_controller`` of the wrapped controller; ``paper``:
    ``Params.paper``) and one connection's initial window ``iw`` in packets (the group's
    ``iw_bytes`` is ``iw`` x max_datagram_size), the controllers' slow-start exit
    ``ss_exit`` (``aioquic``: aioquic's RTT monitor; ``hystart``: ``hystart.HyStart``, as
    Chromium) and ``merge`` (``Params.merge_within_rtt``)."""

    group: str
    conn: ConnId
    n: int
    sync: SyncMode = "full"
    params: str = "aioquic"
    iw: int = DEFAULT_IW
    ss_exit: SlowStartExit = "aioquic"
    merge: bool = False

    def header(self) -> bytes:
        return (f"group={self.group}; conn={self.conn}; n={self.n}; sync={self.sync}; params={self.params}; "
                f"iw={self.iw}; exit={self.ss_exit}; merge={int(self.merge)}").encode()  # fmt: skip

    def to_params(self, controller: str) -> Params:
        """The group's parameters for wrapped controller ``controller`` (reno, cubic, bbr)."""
        if self.params == "paper":
            return Params.paper(self.n, self.sync, self.merge)
        return Params.for_controller(controller, self.n, self.sync, self.merge)


def _int(key: str, text: str, lo: int, hi: int) -> int:
    try:
        v = int(text)
    except ValueError:
        raise ValueError(f"{key}: must be an integer (got {text!r})") from None
    if not lo <= v <= hi:
        raise ValueError(f"{key}: must be from {lo} to {hi} (got {v})")
    return v


def parse_header(value: bytes | str) -> Membership:
    """The header's value (``group=g1; conn=0; n=3; sync=full; params=aioquic; iw=10;
    exit=aioquic; merge=0``; group, conn and n required) as a Membership; ValueError
    naming what is wrong."""
    text = value.decode("ascii", "replace") if isinstance(value, bytes) else value
    fields: dict[str, str] = {}
    for part in text.split(";"):
        part = part.strip()
        if not part:
            continue
        key, eq, val = part.partition("=")
        key, val = key.strip(), val.strip()
        if not eq or not key:
            raise ValueError(f"not key=value: {part!r}")
        if key not in ("group", "conn", "n", "sync", "params", "iw", "exit", "merge"):
            raise ValueError(f"unknown field {key!r}")
        fields[key] = val
    for key in ("group", "conn", "n"):
        if not fields.get(key):
            raise ValueError(f"{key}: missing")
    n = _int("n", fields["n"], 1, MAX_CONNECTIONS)
    conn = _int("conn", fields["conn"], 0, n - 1)
    sync = fields.get("sync", "full")
    modes: dict[str, SyncMode] = {"full": "full", "cwnd": "cwnd", "off": "off"}
    if sync not in modes:
        raise ValueError(f"sync: must be {', '.join(SYNC_MODES)} (got {sync!r})")
    params = fields.get("params", "aioquic")
    if params not in PARAM_SETS:
        raise ValueError(f"params: must be {' or '.join(PARAM_SETS)} (got {params!r})")
    iw = _int("iw", fields.get("iw") or str(DEFAULT_IW), 1, MAX_IW)
    exits: dict[str, SlowStartExit] = {e: e for e in EXITS}
    ss_exit = fields.get("exit", "aioquic")
    if ss_exit not in exits:
        raise ValueError(f"exit: must be {' or '.join(EXITS)} (got {ss_exit!r})")
    merge = fields.get("merge", "0")
    if merge not in ("0", "1"):
        raise ValueError(f"merge: must be 0 or 1 (got {merge!r})")
    return Membership(fields["group"], conn, n, modes[sync], params, iw, exits[ss_exit], merge == "1")


def from_options(options: tuple[dict[str, str], ...], conn: ConnId) -> Membership | None:
    """Connection ``conn``'s membership from a workload's ``cc_options`` (None: no
    ``mquic_group`` for it). ``mquic_n`` defaults to the number of connections naming the
    same group, ``mquic_iw`` (packets) to 10, ``mquic_exit`` to aioquic, ``mquic_merge``
    (0 or 1) to 0; ValueError on a bad value."""
    if not options or not 0 <= conn < len(options):
        return None
    mine = options[conn]
    group = mine.get("mquic_group")
    if not group:
        return None
    if any(c in group for c in ";=") or group != group.strip():
        raise ValueError(f"mquic_group: no ';', '=' or surrounding spaces (got {group!r})")
    for key in OPTIONS[1:]:
        if any(c in str(mine.get(key, "")) for c in ";="):
            raise ValueError(f"{key}: no ';' or '=' (got {mine[key]!r})")
    n_text = mine.get("mquic_n") or str(sum(1 for o in options if o.get("mquic_group") == group))
    # the connection's index among those of its group is its conn id
    index = sum(1 for o in options[:conn] if o.get("mquic_group") == group)
    return parse_header(
        f"group={group}; conn={index}; n={n_text}; sync={mine.get('mquic_sync', 'full')}; "
        f"params={mine.get('mquic_params', 'aioquic')}; iw={mine.get('mquic_iw', DEFAULT_IW)}; "
        f"exit={mine.get('mquic_exit', 'aioquic')}; merge={mine.get('mquic_merge', '0')}"
    )

__all__ = [
    "HEADER",
    "OPTIONS",
    "PARAM_SETS",
    "SS_EXITS",
    "SYNC_MODES",
    "ConnId",
    "ConnState",
    "Decision",
    "Group",
    "Membership",
    "Params",
    "RateDecision",
    "Record",
    "gamma_sequence",
    "from_options",
    "next_gamma",
    "parse_header",
    "stop_nfe",
]
