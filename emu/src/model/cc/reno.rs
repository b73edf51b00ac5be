//! NewReno twice: as aioquic 1.7.2 does it (bytes), and as Linux does it (segments).
//!
//! [`NewReno`] follows aioquic's `quic/congestion/reno.py` and `quic/congestion/base.py`
//! (the installed package under `.venv/lib/python3.11/site-packages/aioquic/`):
//! - initial window 10 datagrams, minimum window 2 datagrams;
//! - slow start: the window grows by each acknowledged packet's bytes while there is no
//!   ssthresh or the window is below it;
//! - congestion avoidance: acknowledged bytes go to a stash; each full window of stashed
//!   bytes adds one datagram;
//! - acknowledgments of packets sent at or before the recovery start time grow nothing;
//! - a loss of a packet sent after the recovery start halves the window (at least the
//!   minimum), sets ssthresh to it and starts recovery now; losses of packets sent before
//!   that start change nothing;
//! - persistent congestion: the minimum window, and the recovery start forgotten;
//! - while there is no ssthresh, [`RttMonitor`] (aioquic's `QuicRttMonitor`) ends slow
//!   start when the RTT has been increasing (ssthresh = the window).
//!
//! [`LinuxReno`] follows Linux's `tcp_reno_cong_avoid` / `tcp_reno_ssthresh`
//! (net/ipv4/tcp_cong.c), in segments, once per ACK; see its documentation.

use super::{Acked, Controller};
use crate::base::time::{Nanos, NS_PER_MS};
use crate::model::rtt::RttEstimator;

/// aioquic's `K_INITIAL_WINDOW` and `K_MINIMUM_WINDOW`, in datagrams.
pub const INITIAL_WINDOW: u64 = 10;
pub const MINIMUM_WINDOW: u64 = 2;
/// aioquic's `K_GRANULARITY`: RTT samples closer together than this are not counted.
const MONITOR_GRANULARITY: Nanos = NS_PER_MS;
/// Samples in the monitor's window, and consecutive increases that end slow start.
const MONITOR_SIZE: usize = 5;

/// aioquic's `QuicRttMonitor` (base.py): a ring of the last 5 RTT samples (one per
/// millisecond at most). Once full, `filtered_min` is the lowest window maximum seen; an
/// increase is a window whose minimum is at least 1.25 × `filtered_min`; 5 increases in a
/// row (a window minimum above `filtered_min` but below that threshold restarts the count)
/// say the RTT is increasing.
#[derive(Clone, Debug, Default)]
pub struct RttMonitor {
    increases: u32,
    ready: bool,
    filtered_min: Option<Nanos>,
    idx: usize,
    sample_max: Nanos,
    sample_min: Nanos,
    sample_time: Nanos,
    samples: [Nanos; MONITOR_SIZE],
}

impl RttMonitor {
    fn add_rtt(&mut self, rtt: Nanos) {
        self.samples[self.idx] = rtt;
        self.idx += 1;
        if self.idx >= MONITOR_SIZE {
            self.idx = 0;
            self.ready = true;
        }
        if self.ready {
            self.sample_max = self.samples[0];
            self.sample_min = self.samples[0];
            for &s in &self.samples[1..] {
                if s < self.sample_min {
                    self.sample_min = s;
                } else if s > self.sample_max {
                    self.sample_max = s;
                }
            }
        }
    }

    /// One RTT sample (`rtt`: the latest RTT, without the ACK delay taken off) at `now`.
    pub fn is_rtt_increasing(&mut self, now: Nanos, rtt: Nanos) -> bool {
        if now > self.sample_time + MONITOR_GRANULARITY {
            self.add_rtt(rtt);
            self.sample_time = now;
            if self.ready {
                let fmin = match self.filtered_min {
                    Some(f) if f <= self.sample_max => f,
                    _ => self.sample_max,
                };
                self.filtered_min = Some(fmin);
                let delta = self.sample_min as i128 - fmin as i128;
                if delta * 4 >= fmin as i128 {
                    self.increases += 1;
                    if self.increases as usize >= MONITOR_SIZE {
                        return true;
                    }
                } else if delta > 0 {
                    self.increases = 0;
                }
            }
        }
        false
    }
}

/// aioquic 1.7.2's NewReno (`RenoCongestionControl`), in bytes.
#[derive(Clone, Debug)]
pub struct NewReno {
    mds: u64,
    cwnd: u64,
    ssthresh: Option<u64>,
    /// None: aioquic's 0.0, before any loss or after persistent congestion.
    recovery_start: Option<Nanos>,
    stash: u64,
    monitor: RttMonitor,
}

impl NewReno {
    /// `max_datagram_size`: the bytes of a full-sized QUIC packet as counted in flight.
    pub fn new(max_datagram_size: u64) -> Self {
        Self {
            mds: max_datagram_size,
            cwnd: INITIAL_WINDOW * max_datagram_size,
            ssthresh: None,
            recovery_start: None,
            stash: 0,
            monitor: RttMonitor::default(),
        }
    }

    pub fn ssthresh(&self) -> Option<u64> {
        self.ssthresh
    }
}

impl Controller for NewReno {
    fn on_sent(&mut self, _now: Nanos, _bytes: u64, _in_flight: u64) {}

    fn on_acked(&mut self, _now: Nanos, acked: &Acked, _rtt: &RttEstimator, _in_flight: u64) {
        if self.recovery_start.is_some_and(|r| acked.sent_at <= r) {
            return;
        }
        if self.in_slow_start() {
            self.cwnd += acked.bytes;
        } else {
            self.stash += acked.bytes;
            let count = self.stash / self.cwnd;
            if count > 0 {
                self.stash -= count * self.cwnd;
                self.cwnd += count * self.mds;
            }
        }
    }

    fn on_rtt_sample(&mut self, now: Nanos, rtt: &RttEstimator) {
        if self.ssthresh.is_none() && self.monitor.is_rtt_increasing(now, rtt.latest()) {
            self.ssthresh = Some(self.cwnd);
        }
    }

    fn on_lost(&mut self, now: Nanos, newest_sent_at: Nanos, _lost: u64, _in_flight: u64) {
        if self.recovery_start.is_none_or(|r| newest_sent_at > r) {
            self.recovery_start = Some(now);
            self.cwnd = (self.cwnd / 2).max(MINIMUM_WINDOW * self.mds);
            self.ssthresh = Some(self.cwnd);
        }
    }

    fn on_persistent_congestion(&mut self, _now: Nanos) {
        self.cwnd = MINIMUM_WINDOW * self.mds;
        self.recovery_start = None;
    }

    fn window(&self) -> u64 {
        self.cwnd
    }

    fn in_slow_start(&self) -> bool {
        self.ssthresh.is_none_or(|s| self.cwnd < s)
    }
}

/// Linux's "infinite" initial ssthresh (`TCP_INFINITE_SSTHRESH`).
pub const LINUX_INFINITE_SSTHRESH: u64 = 0x7fff_ffff;
/// Linux's initial window (`TCP_INIT_CWND`), in segments.
pub const LINUX_INIT_CWND: u64 = 10;

/// Linux's segment-counting window state shared by its Reno and CUBIC: the window and
/// ssthresh in segments, the additive-increase credit `snd_cwnd_cnt`, and which ACKs may
/// raise the window (none during fast recovery).
///
/// What the kernel decides by sequence numbers is decided here by send times, like
/// aioquic does: a loss starts a new recovery only when the lost packet was sent after
/// the previous one started (the kernel: when it was sent after `high_seq`); recovery
/// ends at the first ACK of a packet sent after it started (the kernel: when `snd_una`
/// passes `high_seq`). On entering recovery the window drops to ssthresh at once; the
/// kernel's proportional rate reduction (PRR, tcp_cwnd_reduction in tcp_input.c) lowers it
/// over the recovery round and also ends at ssthresh. `tcp_is_cwnd_limited` is not
/// modelled: the modelled senders always have data.
#[derive(Clone, Debug)]
pub struct LinuxWindow {
    pub mss: u64,
    pub cwnd: u64,
    pub ssthresh: u64,
    pub cwnd_cnt: u64,
    recovery_start: Option<Nanos>,
    in_recovery: bool,
    /// After an RTO (TCP_CA_Loss) until a packet sent after it is acknowledged.
    in_loss: bool,
    /// Packets acknowledged by the ACK being processed, and the newest one's send time.
    pub ack_packets: u64,
    pub ack_newest_sent: Option<Nanos>,
}

impl LinuxWindow {
    pub fn new(mss: u64) -> Self {
        Self {
            mss,
            cwnd: LINUX_INIT_CWND,
            ssthresh: LINUX_INFINITE_SSTHRESH,
            cwnd_cnt: 0,
            recovery_start: None,
            in_recovery: false,
            in_loss: false,
            ack_packets: 0,
            ack_newest_sent: None,
        }
    }

    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// Counts one packet of the current ACK; an ACK of a packet sent after the recovery
    /// (or RTO) started ends it.
    pub fn count_acked(&mut self, acked: &Acked) {
        self.ack_packets += 1;
        self.ack_newest_sent = Some(
            self.ack_newest_sent
                .map_or(acked.sent_at, |t| t.max(acked.sent_at)),
        );
        if self.recovery_start.is_some_and(|r| acked.sent_at > r) {
            self.in_recovery = false;
            self.in_loss = false;
        }
    }

    /// Ends the ACK: the packets it acknowledged, if the window may grow (not in recovery).
    pub fn take_ack(&mut self) -> Option<u64> {
        let n = std::mem::take(&mut self.ack_packets);
        self.ack_newest_sent = None;
        (n > 0 && !self.in_recovery).then_some(n)
    }

    /// tcp_slow_start (tcp_cong.c): grows to at most ssthresh, returns the acks left over.
    pub fn slow_start(&mut self, acked: u64) -> u64 {
        let cwnd = (self.cwnd + acked).min(self.ssthresh);
        let left = acked - (cwnd - self.cwnd);
        self.cwnd = cwnd;
        left
    }

    /// tcp_cong_avoid_ai (tcp_cong.c): one segment per `w` acknowledged segments.
    pub fn cong_avoid_ai(&mut self, w: u64, acked: u64) {
        let w = w.max(1);
        if self.cwnd_cnt >= w {
            self.cwnd_cnt = 0;
            self.cwnd += 1;
        }
        self.cwnd_cnt += acked;
        if self.cwnd_cnt >= w {
            let delta = self.cwnd_cnt / w;
            self.cwnd_cnt -= delta * w;
            self.cwnd += delta;
        }
    }

    /// A loss: true when it starts a new recovery (the caller then sets ssthresh and the
    /// window with [`LinuxWindow::enter_recovery`]).
    pub fn is_new_loss_event(&self, newest_sent_at: Nanos) -> bool {
        self.recovery_start.is_none_or(|r| newest_sent_at > r)
    }

    /// tcp_init_cwnd_reduction with the algorithm's `ssthresh`: the window goes to it.
    pub fn enter_recovery(&mut self, now: Nanos, ssthresh: u64) {
        self.ssthresh = ssthresh;
        self.cwnd = ssthresh;
        self.cwnd_cnt = 0;
        self.recovery_start = Some(now);
        self.in_recovery = true;
        self.in_loss = false;
    }

    /// Whether an RTO now recomputes ssthresh (tcp_enter_loss: not while in recovery, nor
    /// on a repeated RTO).
    pub fn rto_recomputes_ssthresh(&self) -> bool {
        !self.in_recovery && !self.in_loss
    }

    /// tcp_enter_loss: one segment in slow start; the window grows again with ACKs.
    pub fn enter_loss(&mut self, now: Nanos, ssthresh: Option<u64>) {
        if let Some(s) = ssthresh {
            self.ssthresh = s;
        }
        self.cwnd = 1;
        self.cwnd_cnt = 0;
        self.recovery_start = Some(now);
        self.in_recovery = false;
        self.in_loss = true;
    }
}

/// Linux Reno (net/ipv4/tcp_cong.c: `tcp_reno_cong_avoid`, `tcp_reno_ssthresh`), in
/// segments of `mss` bytes (the bytes one full segment counts in flight), processed once
/// per ACK in `on_ack_end` as the kernel does: slow start by acknowledged segments up to
/// ssthresh, then one segment per window of acknowledged segments; a loss: ssthresh =
/// max(cwnd / 2, 2). Initial window 10 segments. See [`LinuxWindow`] for recovery.
#[derive(Clone, Debug)]
pub struct LinuxReno {
    w: LinuxWindow,
}

impl LinuxReno {
    pub fn new(mss: u64) -> Self {
        Self {
            w: LinuxWindow::new(mss),
        }
    }
    /// The window in segments.
    pub fn cwnd_segments(&self) -> u64 {
        self.w.cwnd
    }
    pub fn ssthresh_segments(&self) -> u64 {
        self.w.ssthresh
    }
    fn ssthresh(&self) -> u64 {
        (self.w.cwnd / 2).max(2)
    }
}

impl Controller for LinuxReno {
    fn on_sent(&mut self, _now: Nanos, _bytes: u64, _in_flight: u64) {}

    fn on_acked(&mut self, _now: Nanos, acked: &Acked, _rtt: &RttEstimator, _in_flight: u64) {
        self.w.count_acked(acked);
    }

    fn on_ack_end(&mut self, _now: Nanos, _rtt: &RttEstimator, _in_flight: u64) {
        let Some(mut acked) = self.w.take_ack() else {
            return;
        };
        if self.w.in_slow_start() {
            acked = self.w.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        let cwnd = self.w.cwnd;
        self.w.cong_avoid_ai(cwnd, acked);
    }

    fn on_lost(&mut self, now: Nanos, newest_sent_at: Nanos, _lost: u64, _in_flight: u64) {
        if self.w.is_new_loss_event(newest_sent_at) {
            let s = self.ssthresh();
            self.w.enter_recovery(now, s);
        }
    }

    fn on_persistent_congestion(&mut self, now: Nanos) {
        let s = self.w.rto_recomputes_ssthresh().then(|| self.ssthresh());
        self.w.enter_loss(now, s);
    }

    fn window(&self) -> u64 {
        self.w.cwnd * self.w.mss
    }

    fn in_slow_start(&self) -> bool {
        self.w.in_slow_start()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MDS: u64 = 1280;
    const MS: Nanos = NS_PER_MS;

    fn rtt() -> RttEstimator {
        RttEstimator::default()
    }

    /// Slow start up to `cwnd` bytes by acknowledging full packets sent at `t`.
    fn grow_to(cc: &mut NewReno, t: Nanos, cwnd: u64) {
        while cc.window() < cwnd {
            cc.on_acked(t, &Acked::sent(t, MDS), &rtt(), 0);
        }
        assert_eq!(cc.window(), cwnd);
    }

    #[test]
    fn aioquic_windows_start_from_the_datagram_size() {
        let cc = NewReno::new(MDS);
        assert_eq!(cc.window(), 12_800);
        assert!(cc.in_slow_start());
    }

    #[test]
    fn a_loss_in_slow_start_halves_the_window_and_sets_ssthresh() {
        let mut cc = NewReno::new(MDS);
        grow_to(&mut cc, 10 * MS, 20 * MDS); // 25_600
        cc.on_lost(50 * MS, 40 * MS, MDS, 0);
        assert_eq!(cc.window(), 12_800);
        assert_eq!(cc.ssthresh(), Some(12_800));
        assert!(!cc.in_slow_start());
    }

    #[test]
    fn a_loss_in_congestion_avoidance_halves_once_per_recovery() {
        let mut cc = NewReno::new(MDS);
        grow_to(&mut cc, 10 * MS, 30 * MDS); // 38_400
        cc.on_lost(50 * MS, 40 * MS, MDS, 0); // slow start ends: 19_200
                                              // grow in congestion avoidance: 15 packets of 1280 = 19_200 = one window: +1280
        for _ in 0..15 {
            cc.on_acked(60 * MS, &Acked::sent(55 * MS, MDS), &rtt(), 0);
        }
        assert_eq!(cc.window(), 20_480);
        // a loss of a packet sent after the recovery start (50 ms): a new event
        cc.on_lost(70 * MS, 60 * MS, MDS, 0);
        assert_eq!((cc.window(), cc.ssthresh()), (10_240, Some(10_240)));
        // a loss of a packet sent before it (70 ms): no second reduction
        cc.on_lost(75 * MS, 69 * MS, MDS, 0);
        assert_eq!(cc.window(), 10_240);
        // ... and its ACKs grow nothing; those sent after do
        cc.on_acked(80 * MS, &Acked::sent(70 * MS, 20_000), &rtt(), 0);
        assert_eq!(cc.window(), 10_240);
        cc.on_acked(80 * MS, &Acked::sent(71 * MS, 10_240), &rtt(), 0);
        assert_eq!(cc.window(), 11_520);
    }

    #[test]
    fn the_window_never_drops_below_two_datagrams() {
        let mut cc = NewReno::new(MDS);
        for i in 1..10 {
            cc.on_lost(i * 10 * MS, i * 10 * MS - 1, MDS, 0);
        }
        assert_eq!(cc.window(), 2 * MDS);
        cc.on_persistent_congestion(200 * MS);
        assert_eq!(cc.window(), 2 * MDS);
    }

    #[test]
    fn the_stash_adds_one_datagram_per_window_of_acked_bytes() {
        let mut cc = NewReno::new(MDS);
        cc.on_lost(MS, MS, MDS, 0); // 6400, ssthresh 6400: congestion avoidance
        assert_eq!(cc.window(), 6400);
        // 6399 bytes: not a full window yet
        cc.on_acked(5 * MS, &Acked::sent(2 * MS, 6399), &rtt(), 0);
        assert_eq!(cc.window(), 6400);
        // one more byte: one datagram, stash back to 0
        cc.on_acked(5 * MS, &Acked::sent(2 * MS, 1), &rtt(), 0);
        assert_eq!(cc.window(), 7680);
        // two and a half windows at once: two datagrams, half a window kept
        cc.on_acked(5 * MS, &Acked::sent(2 * MS, 7680 * 5 / 2), &rtt(), 0);
        assert_eq!(cc.window(), 7680 + 2 * MDS);
        cc.on_acked(5 * MS, &Acked::sent(2 * MS, 10_240 - 3840), &rtt(), 0);
        assert_eq!(cc.window(), 7680 + 3 * MDS);
    }

    #[test]
    fn persistent_congestion_forgets_the_recovery_start() {
        let mut cc = NewReno::new(MDS);
        cc.on_lost(100 * MS, 90 * MS, MDS, 0);
        cc.on_persistent_congestion(500 * MS);
        assert_eq!(cc.window(), 2 * MDS);
        // below ssthresh 6400: slow start again, even for packets sent before 100 ms
        assert!(cc.in_slow_start());
        cc.on_acked(600 * MS, &Acked::sent(50 * MS, MDS), &rtt(), 0);
        assert_eq!(cc.window(), 3 * MDS);
    }

    /// Feeds RTT samples 10 ms apart from `t`; returns the time after the last.
    fn feed(m: &mut RttMonitor, t: &mut Nanos, rtt: Nanos, n: usize) -> Vec<bool> {
        (0..n)
            .map(|_| {
                *t += 10 * MS;
                m.is_rtt_increasing(*t, rtt)
            })
            .collect()
    }

    #[test]
    fn the_rtt_monitor_needs_five_windows_with_the_minimum_a_quarter_up() {
        // 5 samples of 100 ms fill the window: filtered_min = 100 ms. Then 125 ms samples:
        // the window minimum reaches 125 ms at the 5th (an increase: 25 * 4 >= 100), and
        // 4 more increases follow: the 14th sample in all says "increasing".
        let mut m = RttMonitor::default();
        let mut t = 0;
        assert!(!feed(&mut m, &mut t, 100 * MS, 5).iter().any(|&b| b));
        let r = feed(&mut m, &mut t, 125 * MS, 9);
        assert_eq!(
            r,
            [false, false, false, false, false, false, false, false, true]
        );
        // samples within 1 ms of the last counted one are ignored
        let mut m = RttMonitor::default();
        let mut t = 0;
        feed(&mut m, &mut t, 100 * MS, 5);
        feed(&mut m, &mut t, 125 * MS, 8);
        assert!(!m.is_rtt_increasing(t + MS, 125 * MS));
        assert!(m.is_rtt_increasing(t + MS + 1, 125 * MS));
        // 124 ms is less than a quarter up: never
        let mut m = RttMonitor::default();
        let mut t = 0;
        feed(&mut m, &mut t, 100 * MS, 5);
        assert!(!feed(&mut m, &mut t, 124 * MS, 50).iter().any(|&b| b));
    }

    #[test]
    fn the_rtt_monitor_ends_newreno_slow_start() {
        let mut cc = NewReno::new(MDS);
        let mut r = rtt();
        let mut t = 0;
        for i in 0..14 {
            t += 10 * MS;
            r.update(if i < 5 { 100 * MS } else { 125 * MS }, 0);
            cc.on_acked(t, &Acked::sent(t - MS, MDS), &r, 0);
            cc.on_rtt_sample(t, &r);
            assert_eq!(cc.ssthresh().is_some(), i == 13, "sample {i}");
        }
        // ssthresh is the window at that moment: 10 + 14 datagrams
        assert_eq!(cc.ssthresh(), Some(24 * MDS));
        assert!(!cc.in_slow_start());
    }

    fn ack_linux(cc: &mut LinuxReno, now: Nanos, sent_at: Nanos, packets: u64) {
        for _ in 0..packets {
            cc.on_acked(now, &Acked::sent(sent_at, 1500), &rtt(), 0);
        }
        cc.on_ack_end(now, &rtt(), 0);
    }

    #[test]
    fn linux_reno_counts_segments_per_ack() {
        let mut cc = LinuxReno::new(1500);
        assert_eq!(cc.window(), 15_000);
        ack_linux(&mut cc, 10 * MS, MS, 2); // slow start: 12
        assert_eq!(cc.cwnd_segments(), 12);
        // a loss: ssthresh = 6, window 6
        cc.on_lost(20 * MS, 15 * MS, 1500, 0);
        assert_eq!((cc.cwnd_segments(), cc.ssthresh_segments()), (6, 6));
        // ACKs of packets sent before the recovery started grow nothing
        ack_linux(&mut cc, 25 * MS, 19 * MS, 3);
        assert_eq!(cc.cwnd_segments(), 6);
        // the first ACK of a later packet ends recovery: 5 acks, then 1 more: +1 segment
        ack_linux(&mut cc, 40 * MS, 21 * MS, 5);
        assert_eq!(cc.cwnd_segments(), 6);
        ack_linux(&mut cc, 41 * MS, 21 * MS, 1);
        assert_eq!(cc.cwnd_segments(), 7);
        // slow start stops at ssthresh and carries the rest into congestion avoidance
        let mut cc = LinuxReno::new(1500);
        cc.on_lost(MS, MS, 1500, 0); // ssthresh 5, cwnd 5
        cc.on_persistent_congestion(2 * MS); // RTO: cwnd 1, ssthresh kept (in recovery)
        assert_eq!((cc.cwnd_segments(), cc.ssthresh_segments()), (1, 5));
        ack_linux(&mut cc, 3 * MS, 3 * MS, 9); // 1 -> 5, 5 left: one segment (w = 5)
        assert_eq!(cc.cwnd_segments(), 6);
        assert!(!cc.in_slow_start());
    }
}
