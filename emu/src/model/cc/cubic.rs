//! CUBIC twice: as aioquic 1.7.2 does it (bytes, floating point), and as Linux's
//! net/ipv4/tcp_cubic.c does it (segments, fixed point, with HyStart).
//!
//! [`Cubic`] follows aioquic's `quic/congestion/cubic.py` (the installed package under
//! `.venv/lib/python3.11/site-packages/aioquic/`), quirks included:
//! - slow start as NewReno (+ acknowledged bytes), ended by a loss or by the RTT monitor
//!   of [`super::reno::RttMonitor`] (ssthresh = the window); it has no recovery check on
//!   ACKs: packets sent before a loss grow the window like any other;
//! - the first ACK in congestion avoidance after slow start ended without a loss starts
//!   an epoch with W_max = the window (K = 0); after a loss, the first ACK starts an epoch
//!   from the reduced window with K = cbrt((W_max - cwnd_epoch) / C) in segments, C = 0.4;
//! - W_est (the Reno-friendly estimate) grows by one datagram × acked bytes / window per
//!   ACK, truncated to an integer each time;
//! - target = W_cubic(t + latest RTT), kept within [cwnd, 1.5 cwnd]; if W_cubic(t) is
//!   below W_est the window becomes W_est, otherwise it moves (target - cwnd) × datagram /
//!   cwnd towards the target (the concave and convex regions are the same formula);
//! - a loss of a packet sent after the last recovery start: fast convergence (W_max =
//!   cwnd × 1.7 / 2 when the window is below the previous W_max, else W_max = cwnd), then
//!   ssthresh = max(0.7 × bytes in flight after the loss, 2 datagrams) and cwnd = ssthresh;
//! - persistent congestion: 2 datagrams (ssthresh kept, so slow start up to it);
//! - no app-limited handling, except: a packet sent 2 s or more after the send time of the
//!   last acknowledged packet resets everything to the initial state (aioquic compares
//!   with the acknowledged packet's send time, not the ACK's arrival).
//!
//! [`LinuxCubic`] follows net/ipv4/tcp_cubic.c (Linux 6.x); see its documentation.

use super::reno::{LinuxWindow, RttMonitor, INITIAL_WINDOW, MINIMUM_WINDOW};
use super::{Acked, Controller};
use crate::base::time::{Nanos, NS_PER_S, NS_PER_US};
use crate::model::rtt::RttEstimator;

const C: f64 = 0.4;
const LOSS_REDUCTION_FACTOR: f64 = 0.7;
const MAX_IDLE: Nanos = 2 * NS_PER_S;

fn secs(t: Nanos) -> f64 {
    t as f64 / NS_PER_S as f64
}

/// Python's `x ** (1 / 3)` with the sign taken out first (aioquic's `better_cube_root`).
fn cube_root(x: f64) -> f64 {
    if x < 0.0 {
        -(-x).powf(1.0 / 3.0)
    } else {
        x.powf(1.0 / 3.0)
    }
}

/// aioquic 1.7.2's CUBIC (`CubicCongestionControl`), in bytes.
#[derive(Clone, Debug)]
pub struct Cubic {
    mds: u64,
    cwnd: u64,
    ssthresh: Option<u64>,
    recovery_start: Option<Nanos>,
    monitor: RttMonitor,
    /// The latest RTT in seconds; aioquic starts from 20 ms.
    rtt: f64,
    first_slow_start: bool,
    starting_ca: bool,
    k: f64,
    w_est: u64,
    cwnd_epoch: u64,
    t_epoch: f64,
    w_max: u64,
    /// Send time of the last acknowledged packet (aioquic's `last_ack`; None: its 0.0).
    last_ack: Option<Nanos>,
}

impl Cubic {
    /// `max_datagram_size`: the bytes of a full-sized QUIC packet as counted in flight.
    pub fn new(max_datagram_size: u64) -> Self {
        let mut c = Self {
            mds: max_datagram_size,
            cwnd: 0,
            ssthresh: None,
            recovery_start: None,
            monitor: RttMonitor::default(),
            rtt: 0.02,
            first_slow_start: true,
            starting_ca: false,
            k: 0.0,
            w_est: 0,
            cwnd_epoch: 0,
            t_epoch: 0.0,
            w_max: 0,
            last_ack: None,
        };
        c.reset();
        c
    }

    fn reset(&mut self) {
        self.cwnd = INITIAL_WINDOW * self.mds;
        self.ssthresh = None;
        self.first_slow_start = true;
        self.starting_ca = false;
        self.k = 0.0;
        self.w_est = 0;
        self.cwnd_epoch = 0;
        self.t_epoch = 0.0;
        self.w_max = self.cwnd;
    }

    /// W_cubic(t) in bytes, `t` seconds after the epoch started.
    pub fn w_cubic(&self, t: f64) -> i64 {
        let w_max_segments = self.w_max as f64 / self.mds as f64;
        let target_segments = C * (t - self.k).powi(3) + w_max_segments;
        (target_segments * self.mds as f64) as i64
    }

    pub fn k(&self) -> f64 {
        self.k
    }
    pub fn w_max(&self) -> u64 {
        self.w_max
    }
    pub fn w_est(&self) -> u64 {
        self.w_est
    }
    pub fn ssthresh(&self) -> Option<u64> {
        self.ssthresh
    }

    fn start_epoch(&mut self, now: f64) {
        self.t_epoch = now;
        self.cwnd_epoch = self.cwnd;
        self.w_est = self.cwnd_epoch;
        let mds = self.mds as f64;
        self.k = cube_root((self.w_max as f64 / mds - self.cwnd_epoch as f64 / mds) / C);
    }
}

impl Controller for Cubic {
    fn on_sent(&mut self, now: Nanos, _bytes: u64, _in_flight: u64) {
        if let Some(last) = self.last_ack {
            if now.saturating_sub(last) >= MAX_IDLE {
                self.reset();
            }
        }
    }

    fn on_acked(&mut self, now: Nanos, acked: &Acked, _rtt: &RttEstimator, _in_flight: u64) {
        self.last_ack = Some(acked.sent_at);
        if self.in_slow_start() {
            self.cwnd += acked.bytes;
            return;
        }
        let now = secs(now);
        if self.first_slow_start && !self.starting_ca {
            // slow start ended without a loss
            self.first_slow_start = false;
            self.w_max = self.cwnd;
            self.start_epoch(now);
        }
        if self.starting_ca {
            self.starting_ca = false;
            self.first_slow_start = false;
            self.start_epoch(now);
        }
        let cwnd = self.cwnd as f64;
        self.w_est = (self.w_est as f64 + self.mds as f64 * (acked.bytes as f64 / cwnd)) as u64;
        let t = now - self.t_epoch;
        let w_cubic = self.w_cubic(t + self.rtt);
        let target = if w_cubic < self.cwnd as i64 {
            self.cwnd as i64
        } else if w_cubic as f64 > 1.5 * cwnd {
            (cwnd * 1.5) as i64
        } else {
            w_cubic
        };
        if self.w_cubic(t) < self.w_est as i64 {
            // the Reno-friendly region
            self.cwnd = self.w_est;
        } else {
            // the concave and the convex region: the same step in aioquic
            self.cwnd =
                (cwnd + (target - self.cwnd as i64) as f64 * (self.mds as f64 / cwnd)) as u64;
        }
    }

    fn on_rtt_sample(&mut self, now: Nanos, rtt: &RttEstimator) {
        self.rtt = secs(rtt.latest());
        if self.ssthresh.is_none() && self.monitor.is_rtt_increasing(now, rtt.latest()) {
            self.ssthresh = Some(self.cwnd);
        }
    }

    fn on_lost(&mut self, now: Nanos, newest_sent_at: Nanos, _lost: u64, in_flight: u64) {
        if self.recovery_start.is_some_and(|r| newest_sent_at <= r) {
            return;
        }
        self.recovery_start = Some(now);
        // fast convergence
        self.w_max = if self.cwnd < self.w_max {
            (self.cwnd as f64 * (1.0 + LOSS_REDUCTION_FACTOR) / 2.0) as u64
        } else {
            self.cwnd
        };
        let min = MINIMUM_WINDOW * self.mds;
        let ssthresh = ((in_flight as f64 * LOSS_REDUCTION_FACTOR) as u64).max(min);
        self.ssthresh = Some(ssthresh);
        self.cwnd = ssthresh.max(min);
        self.starting_ca = true;
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

// -- Linux -------------------------------------------------------------------------------

/// The kernel's timer frequency: `tcp_jiffies32` ticks per second. 250 on the testbed's
/// kernel (CONFIG_HZ=250); CUBIC's epoch and its once-per-jiffy update use it.
pub const LINUX_HZ: u64 = 250;
const BETA_SCALE: u64 = 1024;
const BETA: u64 = 717;
const BIC_SCALE: u64 = 41;
const BICTCP_HZ: u32 = 10;
const HYSTART_LOW_WINDOW: u64 = 16;
const HYSTART_ACK_DELTA_US: u64 = 2000;
const HYSTART_MIN_SAMPLES: u32 = 8;
const HYSTART_DELAY_MIN_US: u32 = 4000;
const HYSTART_DELAY_MAX_US: u32 = 16000;
/// `sk_gso_max_size` (GSO_LEGACY_MAX_SIZE) for HyStart's ACK-delay cushion.
const GSO_MAX_SIZE: u64 = 65536;
/// `beta_scale` and `cube_rtt_scale` as cubictcp_register computes them.
const FRIENDLY_BETA_SCALE: u64 = 8 * (BETA_SCALE + BETA) / 3 / (BETA_SCALE - BETA);
const CUBE_RTT_SCALE: u64 = BIC_SCALE * 10;
const CUBE_FACTOR: u64 = (1u64 << (10 + 3 * BICTCP_HZ)) / (BIC_SCALE * 10);

/// tcp_cubic.c's `cubic_root`: a table lookup and one Newton-Raphson step (about 0.2 %
/// off), reproduced because K, and so the whole curve, comes from it.
pub fn linux_cubic_root(a: u64) -> u32 {
    const V: [u8; 64] = [
        0, 54, 54, 54, 118, 118, 118, 118, 123, 129, 134, 138, 143, 147, 151, 156, 157, 161, 164,
        168, 170, 173, 176, 179, 181, 185, 187, 190, 192, 194, 197, 199, 200, 202, 204, 206, 209,
        211, 213, 215, 217, 219, 221, 222, 224, 225, 227, 229, 231, 232, 234, 236, 237, 239, 240,
        242, 244, 245, 246, 248, 250, 251, 252, 254,
    ];
    let b = 64 - a.leading_zeros();
    if b < 7 {
        return (V[a as usize] as u32 + 35) >> 6;
    }
    let b = ((b * 84) >> 8) - 1;
    let shift = (a >> (b * 3)) as usize;
    let mut x: u32 = ((V[shift] as u32 + 10) << b) >> 6;
    // u32 arithmetic as in the kernel
    x = x
        .wrapping_mul(2)
        .wrapping_add((a / (x as u64 * (x as u64 - 1))) as u32);
    x.wrapping_mul(341) >> 10
}

/// Linux CUBIC (net/ipv4/tcp_cubic.c with its default parameters: beta 717/1024, C =
/// bic_scale 41/1024 per 100 ms RTT, fast convergence, tcp_friendliness, HyStart with
/// ACK-train and delay-increase detection), in segments of `mss` bytes, once per ACK in
/// `on_ack_end` as the kernel calls `pkts_acked` and then `cong_avoid`. The window, slow
/// start and recovery are [`LinuxWindow`]'s (tcp_cong.c). Integer arithmetic, jiffies and
/// microseconds as in the kernel.
///
/// Where the model differs: HyStart's round ends at the first ACK of a packet sent at or
/// after the round started (the kernel: when `snd_una` passes `snd_nxt` of that moment);
/// the pacing rate in HyStart's ACK-delay cushion is the kernel's (2 × or 1.2 × cwnd × mss
/// / srtt) computed from this ACK's smoothed RTT; the socket is taken as not paced
/// (SK_PACING_NONE: no fq qdisc), which halves the ACK-train threshold as the kernel does.
#[derive(Clone, Debug)]
pub struct LinuxCubic {
    w: LinuxWindow,
    cnt: u32,
    last_max_cwnd: u32,
    last_cwnd: u32,
    last_time: u64,
    bic_origin_point: u32,
    bic_k: u32,
    delay_min: u32,
    epoch_start: Option<u64>,
    ack_cnt: u32,
    tcp_cwnd: u32,
    sample_cnt: u32,
    found: bool,
    /// HyStart's round: its start (µs) and the time packets sent from then on are beyond it.
    round_start: u64,
    round_from: Option<Nanos>,
    last_ack: u64,
    curr_rtt: u32,
    last_send: Option<Nanos>,
}

fn jiffies(t: Nanos) -> u64 {
    t / (NS_PER_S / LINUX_HZ)
}

fn usecs_to_jiffies(us: u32) -> u64 {
    let per = 1_000_000 / LINUX_HZ;
    (us as u64).div_ceil(per)
}

impl LinuxCubic {
    pub fn new(mss: u64) -> Self {
        Self {
            w: LinuxWindow::new(mss),
            cnt: 0,
            last_max_cwnd: 0,
            last_cwnd: 0,
            last_time: 0,
            bic_origin_point: 0,
            bic_k: 0,
            delay_min: 0,
            epoch_start: None,
            ack_cnt: 0,
            tcp_cwnd: 0,
            sample_cnt: 0,
            found: false,
            round_start: 0,
            round_from: None,
            last_ack: 0,
            curr_rtt: u32::MAX,
            last_send: None,
        }
    }

    pub fn cwnd_segments(&self) -> u64 {
        self.w.cwnd
    }
    pub fn ssthresh_segments(&self) -> u64 {
        self.w.ssthresh
    }
    /// HyStart found the exit point in this slow start.
    pub fn hystart_found(&self) -> bool {
        self.found
    }
    /// K in 1/1024 s and W_max in segments of the current epoch.
    pub fn k(&self) -> u32 {
        self.bic_k
    }
    pub fn last_max_cwnd(&self) -> u32 {
        self.last_max_cwnd
    }

    /// bictcp_reset: everything but HyStart's round.
    fn reset(&mut self) {
        self.cnt = 0;
        self.last_max_cwnd = 0;
        self.last_cwnd = 0;
        self.last_time = 0;
        self.bic_origin_point = 0;
        self.bic_k = 0;
        self.delay_min = 0;
        self.epoch_start = None;
        self.ack_cnt = 0;
        self.tcp_cwnd = 0;
        self.found = false;
    }

    fn hystart_reset(&mut self, now: Nanos) {
        self.round_start = now / NS_PER_US;
        self.last_ack = self.round_start;
        self.round_from = Some(now);
        self.curr_rtt = u32::MAX;
        self.sample_cnt = 0;
    }

    /// cubictcp_recalc_ssthresh.
    fn recalc_ssthresh(&mut self) -> u64 {
        self.epoch_start = None;
        let cwnd = self.w.cwnd as u32;
        self.last_max_cwnd = if cwnd < self.last_max_cwnd {
            ((cwnd as u64 * (BETA_SCALE + BETA)) / (2 * BETA_SCALE)) as u32
        } else {
            cwnd
        };
        ((cwnd as u64 * BETA) / BETA_SCALE).max(2)
    }

    /// hystart_ack_delay: min(1 ms, 4 GSO frames at the pacing rate).
    fn hystart_ack_delay(&self, rtt: &RttEstimator) -> u32 {
        let srtt_us = (rtt.smoothed() / NS_PER_US).max(1);
        let ratio = if self.w.cwnd < self.w.ssthresh / 2 {
            200
        } else {
            120
        };
        let rate = self.w.mss * self.w.cwnd * 10_000 * ratio / srtt_us; // bytes/s
        if rate == 0 {
            return 0;
        }
        (GSO_MAX_SIZE * 4 * 1_000_000 / rate).min(1000) as u32
    }

    fn hystart_update(&mut self, now: Nanos, delay: u32, newest_sent: Nanos, rtt: &RttEstimator) {
        if self.round_from.is_none_or(|r| newest_sent >= r) {
            self.hystart_reset(now);
        }
        let now_us = now / NS_PER_US;
        // ACK train: ACKs at most 2 ms apart spanning more than half the minimum delay
        if now_us.wrapping_sub(self.last_ack) <= HYSTART_ACK_DELTA_US {
            self.last_ack = now_us;
            let threshold = (self.delay_min + self.hystart_ack_delay(rtt)) >> 1;
            if now_us - self.round_start > threshold as u64 {
                self.found = true;
                self.w.ssthresh = self.w.cwnd;
            }
        }
        // delay increase: the round's minimum of 8+ samples above delay_min + delay_min/8
        // (clamped to 4..16 ms)
        self.curr_rtt = self.curr_rtt.min(delay);
        if self.sample_cnt < HYSTART_MIN_SAMPLES {
            self.sample_cnt += 1;
        } else {
            let thresh = (self.delay_min >> 3).clamp(HYSTART_DELAY_MIN_US, HYSTART_DELAY_MAX_US);
            if self.curr_rtt > self.delay_min + thresh {
                self.found = true;
                self.w.ssthresh = self.w.cwnd;
            }
        }
    }

    /// cubictcp_acked: the ACK's RTT sample (µs), HyStart.
    fn pkts_acked(&mut self, now: Nanos, delay_us: u64, newest_sent: Nanos, rtt: &RttEstimator) {
        if let Some(e) = self.epoch_start {
            if jiffies(now).wrapping_sub(e) < LINUX_HZ {
                return; // right after a recovery
            }
        }
        let delay = delay_us.clamp(1, u32::MAX as u64) as u32;
        if self.delay_min == 0 || self.delay_min > delay {
            self.delay_min = delay;
        }
        if !self.found && self.w.in_slow_start() && self.w.cwnd >= HYSTART_LOW_WINDOW {
            self.hystart_update(now, delay, newest_sent, rtt);
        }
    }

    /// bictcp_update: sets `cnt`, the acknowledged segments per added segment.
    fn update(&mut self, now: Nanos, cwnd: u32, acked: u32) {
        let jf = jiffies(now);
        self.ack_cnt = self.ack_cnt.wrapping_add(acked);
        if self.last_cwnd == cwnd && jf.wrapping_sub(self.last_time) <= LINUX_HZ / 32 {
            return;
        }
        if !(self.epoch_start.is_some() && jf == self.last_time) {
            self.last_cwnd = cwnd;
            self.last_time = jf;
            let epoch = match self.epoch_start {
                Some(e) => e,
                None => {
                    self.ack_cnt = acked;
                    self.tcp_cwnd = cwnd;
                    if self.last_max_cwnd <= cwnd {
                        self.bic_k = 0;
                        self.bic_origin_point = cwnd;
                    } else {
                        let d = (self.last_max_cwnd - cwnd) as u64;
                        self.bic_k = linux_cubic_root(CUBE_FACTOR.wrapping_mul(d));
                        self.bic_origin_point = self.last_max_cwnd;
                    }
                    self.epoch_start = Some(jf);
                    jf
                }
            };
            let mut t = jf.wrapping_sub(epoch) + usecs_to_jiffies(self.delay_min);
            t = (t << BICTCP_HZ) / LINUX_HZ;
            let k = self.bic_k as u64;
            let offs = t.abs_diff(k);
            let delta = (CUBE_RTT_SCALE
                .wrapping_mul(offs)
                .wrapping_mul(offs)
                .wrapping_mul(offs)
                >> (10 + 3 * BICTCP_HZ)) as u32;
            let bic_target = if t < k {
                self.bic_origin_point.wrapping_sub(delta)
            } else {
                self.bic_origin_point.wrapping_add(delta)
            };
            self.cnt = if bic_target > cwnd {
                cwnd / (bic_target - cwnd)
            } else {
                100u32.wrapping_mul(cwnd)
            };
            if self.last_max_cwnd == 0 && self.cnt > 20 {
                self.cnt = 20; // 5 % per RTT while the bandwidth is unknown
            }
        }
        // tcp_friendliness: the window Reno would have (beta_scale = 15 / 8 per segment)
        let delta = ((cwnd as u64 * FRIENDLY_BETA_SCALE) >> 3).max(1) as u32;
        while self.ack_cnt > delta {
            self.ack_cnt -= delta;
            self.tcp_cwnd += 1;
        }
        if self.tcp_cwnd > cwnd {
            let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
            self.cnt = self.cnt.min(max_cnt);
        }
        self.cnt = self.cnt.max(2);
    }
}

impl Controller for LinuxCubic {
    fn on_sent(&mut self, now: Nanos, bytes: u64, in_flight: u64) {
        // CA_EVENT_TX_START (nothing was in flight): shift the epoch by the idle time
        if in_flight <= bytes {
            if let (Some(e), Some(last)) = (self.epoch_start, self.last_send) {
                let (jf, delta) = (jiffies(now), jiffies(now) as i64 - jiffies(last) as i64);
                if delta > 0 {
                    self.epoch_start = Some((e + delta as u64).min(jf));
                }
            }
        }
        self.last_send = Some(now);
    }

    fn on_acked(&mut self, _now: Nanos, acked: &Acked, _rtt: &RttEstimator, _in_flight: u64) {
        self.w.count_acked(acked);
    }

    fn on_ack_end(&mut self, now: Nanos, rtt: &RttEstimator, _in_flight: u64) {
        if let Some(newest) = self.w.ack_newest_sent {
            let delay_us = now.saturating_sub(newest) / NS_PER_US;
            self.pkts_acked(now, delay_us, newest, rtt);
        }
        let Some(mut acked) = self.w.take_ack() else {
            return;
        };
        if self.w.in_slow_start() {
            acked = self.w.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        let cwnd = self.w.cwnd as u32;
        self.update(now, cwnd, acked as u32);
        let cnt = self.cnt as u64;
        self.w.cong_avoid_ai(cnt, acked);
    }

    fn on_lost(&mut self, now: Nanos, newest_sent_at: Nanos, _lost: u64, _in_flight: u64) {
        if self.w.is_new_loss_event(newest_sent_at) {
            let s = self.recalc_ssthresh();
            self.w.enter_recovery(now, s);
        }
    }

    fn on_persistent_congestion(&mut self, now: Nanos) {
        // tcp_enter_loss: ssthresh (maybe), then TCP_CA_Loss resets CUBIC and HyStart
        let s = self
            .w
            .rto_recomputes_ssthresh()
            .then(|| self.recalc_ssthresh());
        self.w.enter_loss(now, s);
        self.reset();
        self.hystart_reset(now);
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
    use crate::base::time::NS_PER_MS;

    const MDS: u64 = 1000;
    const MS: Nanos = NS_PER_MS;

    /// A CUBIC that grew to 100 datagrams in slow start and then lost a packet with
    /// 100_000 bytes in flight: W_max 100_000, window and ssthresh 70_000.
    fn after_a_loss(rtt_s: Nanos) -> (Cubic, RttEstimator) {
        let mut cc = Cubic::new(MDS);
        let mut r = RttEstimator::default();
        r.update(rtt_s, 0);
        cc.on_rtt_sample(MS, &r);
        while cc.window() < 100_000 {
            cc.on_acked(MS, &Acked::sent(0, MDS), &r, 0);
        }
        cc.on_lost(10 * MS, 5 * MS, MDS, 100_000);
        assert_eq!(
            (cc.window(), cc.ssthresh(), cc.w_max()),
            (70_000, Some(70_000), 100_000)
        );
        (cc, r)
    }

    #[test]
    fn k_and_the_cubic_curve_after_a_loss() {
        let (mut cc, r) = after_a_loss(100 * MS);
        // the first ACK in congestion avoidance starts the epoch at 20 ms
        cc.on_acked(20 * MS, &Acked::sent(11 * MS, MDS), &r, 0);
        // K = cbrt((100 - 70) / 0.4) = cbrt(75) = 4.2171633 s
        assert!(
            (cc.k() - 4.217_163_326_508_746).abs() < 1e-12,
            "K {}",
            cc.k()
        );
        // W(K) = W_max; W(K + 2) = (0.4 * 8 + 100) datagrams; W(0) = the reduced window
        assert_eq!(cc.w_cubic(cc.k()), 100_000);
        assert_eq!(cc.w_cubic(cc.k() + 2.0), 103_200);
        assert_eq!(cc.w_cubic(0.0), 70_000);
        // W(1 s) = (0.4 * (1 - 4.2172)^3 + 100) datagrams = 86_680 bytes
        assert_eq!(cc.w_cubic(1.0), 86_680);
    }

    #[test]
    fn a_second_loss_below_w_max_lowers_it_fast_convergence() {
        let (mut cc, r) = after_a_loss(100 * MS);
        // grow in congestion avoidance to at least 80_000 (well below W_max 100_000)
        let mut t = 20 * MS;
        while cc.window() < 80_000 {
            t += MS;
            cc.on_acked(t, &Acked::sent(t.saturating_sub(100 * MS), MDS), &r, 0);
        }
        let w = cc.window();
        assert!(w < 100_000);
        cc.on_lost(t + MS, t, MDS, 80_000);
        // W_max = w * (1 + 0.7) / 2 (not w); ssthresh = 0.7 * 80_000 bytes in flight
        assert_eq!(cc.w_max(), (w as f64 * 1.7 / 2.0) as u64);
        assert!(cc.w_max() < w);
        assert_eq!((cc.window(), cc.ssthresh()), (56_000, Some(56_000)));
        // a loss above W_max sets W_max to the window
        let (mut cc, _) = after_a_loss(100 * MS);
        cc.on_lost(20 * MS, 15 * MS, MDS, 50_000);
        assert_eq!(
            cc.w_max(),
            (70_000.0 * 1.7 / 2.0) as u64,
            "70k < 100k: lowered"
        );
        assert_eq!(cc.w_max(), 59_500);
        let w = cc.window(); // 35_000 < 59_500: lowered again
        cc.on_lost(30 * MS, 25 * MS, MDS, 50_000);
        assert_eq!(cc.w_max(), (w as f64 * 1.7 / 2.0) as u64);
        // a loss of a packet sent before the last recovery start: nothing
        cc.on_lost(40 * MS, 29 * MS, MDS, 10_000);
        assert_eq!(cc.window(), 35_000);
    }

    /// Acknowledges one window per RTT (one datagram per ACK, spread over the RTT) for
    /// `dur`, starting at 20 ms.
    fn run_rounds(cc: &mut Cubic, r: &RttEstimator, rtt: Nanos, dur: Nanos) {
        let mut t = 20 * MS;
        while t < 20 * MS + dur {
            let n = cc.window() / MDS;
            let step = rtt / n;
            for _ in 0..n {
                t += step;
                cc.on_acked(t, &Acked::sent(t.saturating_sub(rtt), MDS), r, 0);
            }
        }
    }

    #[test]
    fn the_reno_friendly_region_takes_over_on_a_short_rtt() {
        // 10 ms RTT: W_est gains a datagram every 10 ms (+~100 in 1 s), far above
        // W_cubic(1 s) = 86_680: the window is W_est.
        let (mut cc, r) = after_a_loss(10 * MS);
        run_rounds(&mut cc, &r, 10 * MS, 1000 * MS);
        assert_eq!(cc.window(), cc.w_est());
        assert!(cc.window() > 120_000, "{}", cc.window());
        // 200 ms RTT: W_est gains ~5 datagrams in 1 s (75_000), below W_cubic: the window
        // follows the curve, above W_est, and below W_cubic(1.2 s) = 89_013.
        let (mut cc, r) = after_a_loss(200 * MS);
        run_rounds(&mut cc, &r, 200 * MS, 1000 * MS);
        assert!(
            cc.window() > cc.w_est() + 5 * MDS,
            "{} vs {}",
            cc.window(),
            cc.w_est()
        );
        assert!(cc.window() < 89_013 + MDS);
    }

    #[test]
    fn slow_start_exit_without_loss_starts_a_convex_epoch() {
        let mut cc = Cubic::new(MDS);
        let mut r = RttEstimator::default();
        let mut t = 0;
        for i in 0..14 {
            t += 10 * MS;
            r.update(if i < 5 { 100 * MS } else { 125 * MS }, 0);
            cc.on_acked(t, &Acked::sent(t - MS, MDS), &r, 0);
            cc.on_rtt_sample(t, &r);
        }
        assert_eq!(cc.ssthresh(), Some(24 * MDS));
        cc.on_acked(t + MS, &Acked::sent(t, MDS), &r, 0);
        assert_eq!((cc.w_max(), cc.k()), (24 * MDS, 0.0));
    }

    #[test]
    fn two_seconds_after_the_last_acked_send_time_cubic_starts_over() {
        let (mut cc, _) = after_a_loss(100 * MS);
        cc.on_acked(
            3 * NS_PER_S,
            &Acked::sent(NS_PER_S, MDS),
            &RttEstimator::default(),
            0,
        );
        cc.on_sent(3 * NS_PER_S - 1, MDS, MDS);
        assert_eq!(cc.window(), 70_000 + 14, "1.999 s: kept (grew by W_est)");
        cc.on_sent(3 * NS_PER_S, MDS, MDS);
        assert_eq!((cc.window(), cc.ssthresh()), (10 * MDS, None));
    }

    #[test]
    fn linux_cubic_root_is_within_its_documented_error() {
        for a in [1u64, 8, 27, 1000, 75 << 30, CUBE_FACTOR * 30, 1 << 50] {
            let exact = (a as f64).cbrt();
            let got = linux_cubic_root(a) as f64;
            assert!(
                (got - exact).abs() <= (exact * 0.01).max(1.0),
                "{a}: {got} vs {exact}"
            );
        }
        // K for W_max - cwnd = 30 segments: cbrt(30 / 0.4 s^3) = 4.217 s = 4318 / 1024 s
        let k = linux_cubic_root(CUBE_FACTOR * 30);
        assert!((4300..=4335).contains(&k), "{k}");
        assert_eq!(FRIENDLY_BETA_SCALE, 15);
        assert_eq!(CUBE_FACTOR, 2_681_735_677);
    }

    fn ack_linux(cc: &mut LinuxCubic, now: Nanos, rtt_ms: Nanos, r: &RttEstimator) {
        cc.on_acked(now, &Acked::sent(now - rtt_ms * MS, 1500), r, 0);
        cc.on_ack_end(now, r, 0);
    }

    /// Six ACKs (3 ms apart, too far apart for an ACK train) at 50 ms RTT take the window
    /// from 10 to 16 segments; then ACKs at `later_ms`.
    fn hystart_run(later_ms: Nanos) -> (LinuxCubic, Vec<(u64, bool)>) {
        let mut cc = LinuxCubic::new(1500);
        let mut r = RttEstimator::default();
        r.update(50 * MS, 0);
        let mut t = NS_PER_S;
        for _ in 0..6 {
            t += 3 * MS;
            ack_linux(&mut cc, t, 50, &r);
        }
        assert_eq!(cc.cwnd_segments(), 16);
        let mut seen = vec![];
        for _ in 0..12 {
            t += 3 * MS;
            ack_linux(&mut cc, t, later_ms, &r);
            seen.push((cc.cwnd_segments(), cc.hystart_found()));
        }
        (cc, seen)
    }

    #[test]
    fn linux_hystart_leaves_slow_start_on_a_delay_increase() {
        // delay_min 50 ms: the threshold is 50 + clamp(50 / 8, 4, 16) = 56.25 ms. The
        // first HyStart sample (cwnd 16) starts a round; samples 1-8 are counted, the 9th
        // (cwnd 24) finds the round's minimum 60 ms above it: ssthresh = cwnd = 24.
        let (cc, seen) = hystart_run(60);
        assert_eq!(seen[7], (24, false));
        assert_eq!(
            seen[8],
            (24, true),
            "the 9th ACK grows nothing: slow start is over"
        );
        assert_eq!((cc.cwnd_segments(), cc.ssthresh_segments()), (24, 24));
        assert!(!cc.in_slow_start());
        // 56 ms is not above 56.25 ms: slow start goes on, one segment per ACK
        let (cc, seen) = hystart_run(56);
        assert!(seen.iter().all(|&(_, found)| !found));
        assert_eq!(cc.cwnd_segments(), 28);
        assert!(cc.in_slow_start());
    }

    #[test]
    fn linux_hystart_ack_train() {
        // ACKs 1 ms apart at 50 ms RTT: a train. Threshold (50 ms + 1 ms cushion) / 2 =
        // 25.5 ms after the round started (at the first ACK with cwnd >= 16).
        let mut cc = LinuxCubic::new(1500);
        let mut r = RttEstimator::default();
        r.update(50 * MS, 0);
        let t0 = NS_PER_S;
        let mut t = t0;
        let mut found_at = None;
        for i in 0..60 {
            t += MS;
            ack_linux(&mut cc, t, 50, &r);
            if cc.hystart_found() && found_at.is_none() {
                found_at = Some(i);
            }
        }
        // the 6th ACK (i = 5) takes cwnd to 16: HyStart runs from the 7th (i = 6), which
        // starts the round; found when now - round_start > 25.5 ms: 26 ms later, i = 32,
        // with cwnd 10 + 32
        assert_eq!(found_at, Some(32));
        assert_eq!(cc.ssthresh_segments(), 42);
    }

    #[test]
    fn linux_cubic_loss_uses_beta_and_fast_convergence() {
        let mut cc = LinuxCubic::new(1500);
        let r = RttEstimator::default();
        cc.on_lost(MS, MS, 1500, 0); // cwnd 10: ssthresh = 10 * 717 / 1024 = 7
        assert_eq!((cc.cwnd_segments(), cc.last_max_cwnd()), (7, 10));
        // grow to 8 in congestion avoidance, then a loss below W_max 10: W_max = 8 * 0.85
        let mut t = 2 * MS;
        while cc.cwnd_segments() < 8 {
            t += MS;
            ack_linux(&mut cc, t, 1, &r);
        }
        cc.on_lost(t + MS, t, 1500, 0);
        assert_eq!(cc.last_max_cwnd(), 8 * 1741 / 2048);
        assert_eq!(cc.cwnd_segments(), 5, "8 * 717 / 1024");
    }
}
