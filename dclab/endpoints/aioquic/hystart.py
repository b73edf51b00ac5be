"""A Chromium-style HyStart delay exit for aioquic's loss-based controllers, sans-IO.

aioquic's own exit (``QuicRttMonitor``) looks at RTT samples at most one per millisecond:
it leaves slow start after five samples in a row whose minimum over the last five is 25 %
above a filtered minimum. Chromium's QUIC (the stack the mQUIC paper measured) instead
works in rounds (docs/mquic-implementation.md, "The controllers", its "Slow-start exits"
paragraph):

- a round starts at the first RTT sample after the previous one ended, and ends when a
  packet sent after its start is acknowledged;
- within a round, the minimum of its first ``MIN_SAMPLES`` (8) RTT samples is taken;
- at the 8th sample, slow start is over when that minimum exceeds the connection's
  minimum RTT by more than ``min_rtt / 8``, clamped to 4-16 ms;
- an exit is only taken at a window of at least ``LOW_WINDOW`` (16) packets; found once,
  it stays found until :meth:`HyStart.restart` (a connection put back in slow start).

Nothing here reads a clock: the caller passes every sample and packet number.
"""

from __future__ import annotations

from typing import Literal

SlowStartExit = Literal["aioquic", "hystart"]  # aioquic's QuicRttMonitor, or HyStart here
EXITS: tuple[SlowStartExit, ...] = ("aioquic", "hystart")

MIN_SAMPLES = 8  # RTT samples per round whose minimum is compared
DELAY_FACTOR = 8  # the increase that counts: min_rtt / DELAY_FACTOR ...
MIN_THRESHOLD_S = 0.004  # ... but at least 4 ms
MAX_THRESHOLD_S = 0.016  # ... and at most 16 ms
LOW_WINDOW = 16  # packets: no exit below this window


def threshold(min_rtt: float) -> float:
    """The RTT increase (s) over ``min_rtt`` that ends slow start."""
    return min(max(min_rtt / DELAY_FACTOR, MIN_THRESHOLD_S), MAX_THRESHOLD_S)


class HyStart:
    """One connection's delay detector. Feed it every packet sent (:meth:`on_sent`), every
    packet acknowledged (:meth:`on_acked`) and the RTT samples taken in slow start
    (:meth:`should_exit`). aioquic reports an ACK's packets before its RTT sample, where
    Chromium takes the sample first: the end of a round seen in :meth:`on_acked` takes
    effect after the next sample, so that the sample of the ACK ending a round still
    counts in it, as in Chromium."""

    def __init__(self) -> None:
        self.found = False
        self._started = False
        self._ending = False  # a packet after the round's end was acked
        self._last_sent: int | None = None
        self._round_end: int | None = None  # the round ends when a later packet is acked
        self._samples = 0
        self._round_min: float | None = None

    def on_sent(self, packet_number: int) -> None:
        self._last_sent = packet_number

    def on_acked(self, packet_number: int) -> None:
        if self._started and (self._round_end is None or packet_number > self._round_end):
            self._ending = True

    def restart(self) -> None:
        """Forget a found exit and the current round (back in slow start)."""
        self.found = False
        self._started = self._ending = False

    def should_exit(self, rtt: float, min_rtt: float, cwnd_packets: float) -> bool:
        """An RTT sample (s) with the connection's minimum RTT; True when slow start should
        end now."""
        if not self._started:
            self._started, self._ending, self._round_end = True, False, self._last_sent
            self._samples, self._round_min = 0, None
        if not self.found:
            self._samples += 1
            if self._samples <= MIN_SAMPLES:
                self._round_min = rtt if self._round_min is None else min(self._round_min, rtt)
            if self._samples == MIN_SAMPLES and self._round_min is not None:
                self.found = self._round_min > min_rtt + threshold(min_rtt)
        if self._ending:
            self._started = self._ending = False
        return self.found and cwnd_packets >= LOW_WINDOW
