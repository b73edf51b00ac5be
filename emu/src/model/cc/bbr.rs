//! BBR v1 as dclab's own aioquic controller does it: dclab/endpoints/aioquic/bbr.py
//! (draft-cardwell-iccrg-bbr-congestion-control-00 with the rate samples of
//! draft-cheng-iccrg-delivery-rate-estimation; docs/bbr.md says how it maps onto aioquic).
//!
//! - STARTUP (pacing and cwnd gain 2/ln 2), DRAIN (pacing gain ln 2/2) until the bytes in
//!   flight fall to one BDP, PROBE_BW (the eight-phase gain cycle 5/4, 3/4, 1 × 6 entered at
//!   a random phase other than 3/4, cwnd gain 2), PROBE_RTT (cwnd 4 packets for 200 ms and
//!   a round when the min RTT is 10 s old);
//! - the bottleneck bandwidth: a windowed max filter (Kathleen Nichols' three samples)
//!   over 10 rounds of delivery-rate samples; app-limited samples only when they raise it;
//!   samples over an interval shorter than the lowest RTT are dropped;
//! - the pipe is full after 3 rounds (not app-limited) without 25 % bandwidth growth;
//! - cwnd = gain × BDP + 3 send quanta, at least 4 packets; grows by the acknowledged
//!   bytes towards it; packet conservation for one round after a loss starts recovery;
//! - pacing rate = pacing gain × max bandwidth (in STARTUP only when that raises it); before
//!   the first sample 2/ln 2 × the initial window per the first RTT (1 ms before any).
//!
//! The sender keeps the delivery-rate state (C.delivered, C.delivered_time,
//! C.first_sent_time, reset to the send time when a packet leaves an empty pipe, and the
//! send time of the last acknowledged packet as C.first_sent_time) and hands it in with
//! each [`Acked`]. The app-limited mark bbr.py keeps (C.app_limited: set when a packet leaves
//! an empty pipe and during PROBE_RTT, cleared once delivery passes it) is kept here and
//! reported through [`Controller::app_limited`]. aioquic reports acknowledged packets one by
//! one, and bbr.py processes each as its own ACK: so does this model (`on_ack_end` unused).
//!
//! The random PROBE_BW phase comes from Python's Mersenne Twister with bbr.py's seed
//! (0x42B + the controller's number in its process), so a given seed picks the same phases.

use super::{Acked, Controller};
use crate::base::time::{Nanos, NS_PER_MS, NS_PER_S};
use crate::model::rtt::RttEstimator;

/// 2 / ln 2: STARTUP's pacing and cwnd gain.
pub const HIGH_GAIN: f64 = 2.0 / std::f64::consts::LN_2;
pub const DRAIN_GAIN: f64 = 1.0 / HIGH_GAIN;
const PROBE_BW_CWND_GAIN: f64 = 2.0;
pub const PACING_GAIN_CYCLE: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
const BTLBW_FILTER_LEN: u64 = 10;
const RTPROP_FILTER_LEN: Nanos = 10 * NS_PER_S;
const PROBE_RTT_DURATION: Nanos = 200 * NS_PER_MS;
const MIN_PIPE_CWND_PACKETS: u64 = 4;
const FULL_BW_THRESH: f64 = 1.25;
const FULL_BW_COUNT: u32 = 3;
/// The nominal RTT (s) of the initial pacing rate before any sample.
const MIN_RTT_FALLBACK: f64 = 0.001;
const QUANTUM_1_PACKET_BELOW: f64 = 1.2e6 / 8.0;
const QUANTUM_2_PACKETS_BELOW: f64 = 24e6 / 8.0;
const QUANTUM_MAX_BYTES: u64 = 64 * 1024;
const QUANTUM_INTERVAL: f64 = 0.001;
const INITIAL_WINDOW: u64 = 10;
/// bbr.py's DEFAULT_SEED.
pub const DEFAULT_SEED: u32 = 0x42B;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

/// Python's `random.Random(seed)` (MT19937 seeded by init_by_array with one 32-bit key),
/// as far as bbr.py uses it: `randint(0, n)`.
#[derive(Clone, Debug)]
struct PyRandom {
    mt: Box<[u32; 624]>,
    idx: usize,
}

impl PyRandom {
    fn new(seed: u32) -> Self {
        let mut mt = Box::new([0u32; 624]);
        mt[0] = 19_650_218;
        for i in 1..624 {
            mt[i] = 1_812_433_253u32
                .wrapping_mul(mt[i - 1] ^ (mt[i - 1] >> 30))
                .wrapping_add(i as u32);
        }
        let (mut i, key) = (1usize, seed);
        for _ in 0..624 {
            mt[i] =
                (mt[i] ^ (mt[i - 1] ^ (mt[i - 1] >> 30)).wrapping_mul(1_664_525)).wrapping_add(key);
            i += 1;
            if i >= 624 {
                mt[0] = mt[623];
                i = 1;
            }
        }
        for _ in 0..623 {
            mt[i] = (mt[i] ^ (mt[i - 1] ^ (mt[i - 1] >> 30)).wrapping_mul(1_566_083_941))
                .wrapping_sub(i as u32);
            i += 1;
            if i >= 624 {
                mt[0] = mt[623];
                i = 1;
            }
        }
        mt[0] = 0x8000_0000;
        Self { mt, idx: 624 }
    }

    fn next_u32(&mut self) -> u32 {
        if self.idx >= 624 {
            for k in 0..624 {
                let y = (self.mt[k] & 0x8000_0000) | (self.mt[(k + 1) % 624] & 0x7fff_ffff);
                let mag = if y & 1 == 1 { 0x9908_b0df } else { 0 };
                self.mt[k] = self.mt[(k + 397) % 624] ^ (y >> 1) ^ mag;
            }
            self.idx = 0;
        }
        let mut y = self.mt[self.idx];
        self.idx += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `randint(0, n)`: rejection sampling on the top bits, as CPython's `_randbelow`.
    fn randint(&mut self, n: u32) -> u32 {
        let k = 32 - (n + 1).leading_zeros();
        loop {
            let r = self.next_u32() >> (32 - k);
            if r <= n {
                return r;
            }
        }
    }
}

/// bbr.py's `WindowedMaxFilter`: the running maximum over `window` rounds, from the best,
/// second and third best samples of successive sub-windows.
#[derive(Clone, Debug)]
struct MaxFilter {
    window: u64,
    s: [(u64, f64); 3],
}

impl MaxFilter {
    fn reset(&mut self, time: u64, value: f64) -> f64 {
        self.s = [(time, value); 3];
        value
    }

    fn update(&mut self, time: u64, value: f64) -> f64 {
        let w = self.window;
        if value >= self.s[0].1 || time - self.s[2].0 > w {
            return self.reset(time, value);
        }
        let s = &mut self.s;
        if value >= s[1].1 {
            s[1] = (time, value);
            s[2] = (time, value);
        } else if value >= s[2].1 {
            s[2] = (time, value);
        }
        let dt = time - s[0].0;
        if dt > w {
            *s = [s[1], s[2], (time, value)];
            if time - s[0].0 > w {
                *s = [s[1], s[2], (time, value)];
            }
        } else if s[1].0 == s[0].0 && dt as f64 > w as f64 / 4.0 {
            s[1] = (time, value);
            s[2] = (time, value);
        } else if s[2].0 == s[1].0 && dt as f64 > w as f64 / 2.0 {
            s[2] = (time, value);
        }
        s[0].1
    }
}

/// One acknowledged packet's rate sample.
struct RateSample {
    rate: Option<f64>,
    app_limited: bool,
}

/// dclab's BBR v1 (bbr.py), in bytes.
#[derive(Clone, Debug)]
pub struct Bbr {
    mss: u64,
    initial_cwnd: u64,
    min_pipe_cwnd: u64,
    rng: PyRandom,
    cwnd: u64,
    in_flight: u64,
    delivered: u64,
    /// C.app_limited: 0, or the delivered count that ends the app-limited bubble.
    app_limited: u64,
    min_rtt: Option<Nanos>,
    btlbw_filter: MaxFilter,
    btlbw: f64,
    rtprop: Option<Nanos>,
    rtprop_stamp: Nanos,
    rtprop_stamped: bool,
    rtprop_expired: bool,
    next_round_delivered: u64,
    round_start: bool,
    round_count: u64,
    filled_pipe: bool,
    full_bw: f64,
    full_bw_count: u32,
    state: State,
    pacing_gain: f64,
    cwnd_gain: f64,
    cycle_index: usize,
    cycle_stamp: Nanos,
    probe_rtt_done_stamp: Option<Nanos>,
    probe_rtt_round_done: bool,
    idle_restart: bool,
    prior_cwnd: u64,
    pacing_rate: f64,
    pacing_rate_from_rtt: bool,
    /// What reaches the pacer of `pacing_rate`: 1, or Linux's 0.99 (bbr_pacing_margin_percent).
    pacing_margin: f64,
    send_quantum: u64,
    in_recovery: bool,
    /// None: bbr.py's -inf.
    recovery_start: Option<Nanos>,
    packet_conservation: bool,
    conservation_until: u64,
    ack_now: Option<Nanos>,
    acked_at_now: u64,
}

impl Bbr {
    /// `mss`: the bytes of a full-sized packet as counted in flight; bbr.py's default seed.
    pub fn new(mss: u64) -> Self {
        Self::with_seed(mss, DEFAULT_SEED)
    }

    /// For the TCP model: Linux's BBR v1 (net/ipv4/tcp_bbr.c) has the same state machine,
    /// gains, filters and cwnd rules as bbr.py; what this adds of it is the 1 % pacing
    /// margin. Not modelled: its ACK-aggregation allowance (extra_acked) and TSO sizing.
    pub fn linux(mss: u64) -> Self {
        Self {
            pacing_margin: 0.99,
            ..Self::new(mss)
        }
    }

    /// bbr.py gives the n-th controller of a process the seed 0x42B + n.
    pub fn with_seed(mss: u64, seed: u32) -> Self {
        let initial_cwnd = INITIAL_WINDOW * mss;
        Self {
            mss,
            initial_cwnd,
            min_pipe_cwnd: MIN_PIPE_CWND_PACKETS * mss,
            rng: PyRandom::new(seed),
            cwnd: initial_cwnd,
            in_flight: 0,
            delivered: 0,
            app_limited: 0,
            min_rtt: None,
            btlbw_filter: MaxFilter {
                window: BTLBW_FILTER_LEN,
                s: [(0, 0.0); 3],
            },
            btlbw: 0.0,
            rtprop: None,
            rtprop_stamp: 0,
            rtprop_stamped: false,
            rtprop_expired: false,
            next_round_delivered: 0,
            round_start: false,
            round_count: 0,
            filled_pipe: false,
            full_bw: 0.0,
            full_bw_count: 0,
            state: State::Startup,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            cycle_index: 0,
            cycle_stamp: 0,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            idle_restart: false,
            prior_cwnd: 0,
            pacing_rate: HIGH_GAIN * initial_cwnd as f64 / MIN_RTT_FALLBACK,
            pacing_rate_from_rtt: false,
            pacing_margin: 1.0,
            send_quantum: 2 * mss,
            in_recovery: false,
            recovery_start: None,
            packet_conservation: false,
            conservation_until: 0,
            ack_now: None,
            acked_at_now: 0,
        }
    }

    pub fn state(&self) -> State {
        self.state
    }
    /// The max-filtered bottleneck bandwidth, bytes per second.
    pub fn btlbw(&self) -> f64 {
        self.btlbw
    }
    pub fn pacing_gain(&self) -> f64 {
        self.pacing_gain
    }
    pub fn round_count(&self) -> u64 {
        self.round_count
    }
    pub fn rtprop(&self) -> Option<Nanos> {
        self.rtprop
    }

    fn stamp_rtprop(&mut self, now: Nanos) {
        if !self.rtprop_stamped {
            self.rtprop_stamped = true;
            self.rtprop_stamp = now;
        }
    }

    /// UpdateRateSample and GenerateRateSample for one acknowledged packet.
    fn rate_sample(&mut self, now: Nanos, p: &Acked) -> RateSample {
        self.delivered = self.delivered.max(p.delivered_now);
        let send_elapsed = p.sent_at.saturating_sub(p.first_sent_time_at_send);
        let ack_elapsed = now.saturating_sub(p.delivered_time_at_send);
        if self.app_limited != 0 && self.delivered > self.app_limited {
            self.app_limited = 0;
        }
        let interval = send_elapsed.max(ack_elapsed);
        let delivered = self.delivered.saturating_sub(p.delivered_at_send);
        let rate = (self.min_rtt.is_some_and(|m| interval >= m) && interval > 0)
            .then(|| delivered as f64 / (interval as f64 / NS_PER_S as f64));
        RateSample {
            rate,
            app_limited: p.app_limited,
        }
    }

    fn update_round(&mut self, p: &Acked) {
        if p.delivered_at_send >= self.next_round_delivered {
            self.next_round_delivered = self.delivered;
            self.round_count += 1;
            self.round_start = true;
        } else {
            self.round_start = false;
        }
    }

    fn update_btlbw(&mut self, p: &Acked, rs: &RateSample) {
        self.update_round(p);
        if let Some(rate) = rs.rate {
            if rate >= self.btlbw || !rs.app_limited {
                self.btlbw = self.btlbw_filter.update(self.round_count, rate);
            }
        }
    }

    fn update_rtprop(&mut self, now: Nanos, rtt: Nanos) {
        self.rtprop_expired = now > self.rtprop_stamp + RTPROP_FILTER_LEN;
        if self.rtprop.is_none_or(|r| rtt <= r) || self.rtprop_expired {
            self.rtprop = Some(rtt);
            self.rtprop_stamp = now;
        }
    }

    /// BBRInflight: gain × BDP plus three send quanta.
    fn inflight(&self, gain: f64) -> u64 {
        match self.rtprop {
            None => self.initial_cwnd,
            Some(r) => {
                (gain * self.btlbw * (r as f64 / NS_PER_S as f64)) as u64 + 3 * self.send_quantum
            }
        }
    }

    fn enter_startup(&mut self) {
        self.state = State::Startup;
        self.pacing_gain = HIGH_GAIN;
        self.cwnd_gain = HIGH_GAIN;
    }

    fn check_full_pipe(&mut self, rs: &RateSample) {
        if self.filled_pipe || !self.round_start || rs.app_limited {
            return;
        }
        if self.btlbw >= self.full_bw * FULL_BW_THRESH {
            self.full_bw = self.btlbw;
            self.full_bw_count = 0;
            return;
        }
        self.full_bw_count += 1;
        if self.full_bw_count >= FULL_BW_COUNT {
            self.filled_pipe = true;
        }
    }

    fn check_drain(&mut self, now: Nanos) {
        if self.state == State::Startup && self.filled_pipe {
            self.state = State::Drain;
            self.pacing_gain = DRAIN_GAIN;
            self.cwnd_gain = HIGH_GAIN;
        }
        if self.state == State::Drain && self.in_flight <= self.inflight(1.0) {
            self.enter_probe_bw(now);
        }
    }

    fn enter_probe_bw(&mut self, now: Nanos) {
        self.state = State::ProbeBw;
        self.pacing_gain = 1.0;
        self.cwnd_gain = PROBE_BW_CWND_GAIN;
        // a random phase other than 3/4: 7 - [0, 6], advanced by one below
        let n = PACING_GAIN_CYCLE.len();
        self.cycle_index = n - 1 - self.rng.randint(n as u32 - 2) as usize;
        self.advance_cycle_phase(now);
    }

    fn advance_cycle_phase(&mut self, now: Nanos) {
        self.cycle_stamp = now;
        self.cycle_index = (self.cycle_index + 1) % PACING_GAIN_CYCLE.len();
        self.pacing_gain = PACING_GAIN_CYCLE[self.cycle_index];
    }

    fn check_cycle_phase(&mut self, now: Nanos, prior_inflight: u64, lost: bool) {
        if self.state == State::ProbeBw && self.is_next_cycle_phase(now, prior_inflight, lost) {
            self.advance_cycle_phase(now);
        }
    }

    fn is_next_cycle_phase(&self, now: Nanos, prior_inflight: u64, lost: bool) -> bool {
        let full_length = self
            .rtprop
            .is_some_and(|r| now.saturating_sub(self.cycle_stamp) > r);
        if self.pacing_gain == 1.0 {
            full_length
        } else if self.pacing_gain > 1.0 {
            full_length && (lost || prior_inflight >= self.inflight(self.pacing_gain))
        } else {
            full_length || prior_inflight <= self.inflight(1.0)
        }
    }

    fn handle_restart_from_idle(&mut self) {
        if self.app_limited != 0 {
            self.idle_restart = true;
            if self.state == State::ProbeBw {
                self.set_pacing_rate(1.0);
            }
        }
    }

    fn check_probe_rtt(&mut self, now: Nanos) {
        if self.state != State::ProbeRtt && self.rtprop_expired && !self.idle_restart {
            self.state = State::ProbeRtt;
            self.pacing_gain = 1.0;
            self.cwnd_gain = 1.0;
            self.prior_cwnd = self.save_cwnd();
            self.probe_rtt_done_stamp = None;
        }
        if self.state == State::ProbeRtt {
            self.handle_probe_rtt(now);
        }
        self.idle_restart = false;
    }

    fn handle_probe_rtt(&mut self, now: Nanos) {
        self.app_limited = (self.delivered + self.in_flight).max(1);
        match self.probe_rtt_done_stamp {
            None if self.in_flight <= self.min_pipe_cwnd => {
                self.probe_rtt_done_stamp = Some(now + PROBE_RTT_DURATION);
                self.probe_rtt_round_done = false;
                self.next_round_delivered = self.delivered;
            }
            None => {}
            Some(done) => {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done && now > done {
                    self.rtprop_stamp = now;
                    self.restore_cwnd();
                    if self.filled_pipe {
                        self.enter_probe_bw(now);
                    } else {
                        self.enter_startup();
                    }
                }
            }
        }
    }

    fn set_pacing_rate(&mut self, gain: f64) {
        let rate = gain * self.btlbw;
        if self.filled_pipe || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    fn set_send_quantum(&mut self) {
        self.send_quantum = if self.pacing_rate < QUANTUM_1_PACKET_BELOW {
            self.mss
        } else if self.pacing_rate < QUANTUM_2_PACKETS_BELOW {
            2 * self.mss
        } else {
            ((self.pacing_rate * QUANTUM_INTERVAL) as u64).min(QUANTUM_MAX_BYTES)
        };
    }

    fn save_cwnd(&self) -> u64 {
        if !self.in_recovery && self.state != State::ProbeRtt {
            self.cwnd
        } else {
            self.prior_cwnd.max(self.cwnd)
        }
    }

    fn restore_cwnd(&mut self) {
        self.cwnd = self.cwnd.max(self.prior_cwnd);
    }

    fn set_cwnd(&mut self, acked: u64) {
        let target = self.inflight(self.cwnd_gain);
        let mut cwnd = self.cwnd;
        if self.packet_conservation {
            cwnd = cwnd.max(self.in_flight + acked);
        } else {
            if self.filled_pipe {
                cwnd = (cwnd + acked).min(target);
            } else if cwnd < target || self.delivered < self.initial_cwnd {
                cwnd += acked;
            }
            cwnd = cwnd.max(self.min_pipe_cwnd);
        }
        if self.state == State::ProbeRtt {
            cwnd = cwnd.min(self.min_pipe_cwnd);
        }
        self.cwnd = cwnd;
    }
}

impl Controller for Bbr {
    fn on_sent(&mut self, now: Nanos, bytes: u64, in_flight: u64) {
        self.stamp_rtprop(now);
        if in_flight <= bytes {
            // the pipe was empty: the application had nothing to send
            self.app_limited = self.delivered.max(1);
            self.handle_restart_from_idle();
        }
        self.in_flight = in_flight;
    }

    fn on_acked(&mut self, now: Nanos, p: &Acked, _rtt: &RttEstimator, in_flight: u64) {
        let prior_inflight = in_flight + p.bytes;
        self.in_flight = in_flight;
        if self.ack_now != Some(now) {
            self.ack_now = Some(now);
            self.acked_at_now = 0;
        }
        self.acked_at_now += p.bytes;
        self.stamp_rtprop(now);
        let rtt = now.saturating_sub(p.sent_at);
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        if !self.pacing_rate_from_rtt {
            self.pacing_rate_from_rtt = true;
            if self.btlbw == 0.0 {
                let rtt_s = (rtt as f64 / NS_PER_S as f64).max(MIN_RTT_FALLBACK);
                self.pacing_rate = self.pacing_gain * self.initial_cwnd as f64 / rtt_s;
            }
        }
        let rs = self.rate_sample(now, p);
        if self.in_recovery && self.recovery_start.is_none_or(|r| p.sent_at > r) {
            self.in_recovery = false;
            self.packet_conservation = false;
            self.restore_cwnd();
        }
        if self.packet_conservation && p.delivered_at_send >= self.conservation_until {
            self.packet_conservation = false;
        }
        self.update_btlbw(p, &rs);
        self.check_cycle_phase(now, prior_inflight, false);
        self.check_full_pipe(&rs);
        self.check_drain(now);
        self.update_rtprop(now, rtt);
        self.check_probe_rtt(now);
        self.set_pacing_rate(self.pacing_gain);
        self.set_send_quantum();
        self.set_cwnd(p.bytes);
    }

    fn on_lost(&mut self, now: Nanos, newest_sent_at: Nanos, lost: u64, in_flight: u64) {
        self.in_flight = in_flight;
        if lost == 0 {
            return;
        }
        if self.recovery_start.is_none_or(|r| newest_sent_at > r) {
            // a new recovery period: save cwnd, cwnd = in flight + what this ACK delivered
            self.prior_cwnd = self.save_cwnd();
            self.in_recovery = true;
            self.recovery_start = Some(now);
            let delivered_now = if self.ack_now == Some(now) {
                self.acked_at_now
            } else {
                0
            };
            self.cwnd = in_flight + delivered_now.max(self.mss);
            self.packet_conservation = true;
            self.conservation_until = self.delivered;
        } else {
            self.cwnd = self.cwnd.saturating_sub(lost).max(self.mss);
        }
        if self.state == State::ProbeRtt {
            self.cwnd = self.cwnd.min(self.min_pipe_cwnd);
        }
        self.check_cycle_phase(now, in_flight + lost, true);
    }

    fn on_persistent_congestion(&mut self, _now: Nanos) {
        self.prior_cwnd = self.save_cwnd();
        self.in_recovery = true;
        self.packet_conservation = false;
        self.cwnd = self.mss;
    }

    fn window(&self) -> u64 {
        self.cwnd
    }

    fn pacing_rate(&self) -> Option<f64> {
        Some(self.pacing_rate * self.pacing_margin)
    }

    fn in_slow_start(&self) -> bool {
        self.state == State::Startup
    }

    fn app_limited(&self) -> bool {
        self.app_limited != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;
    const MS: Nanos = NS_PER_MS;

    #[test]
    fn the_random_phase_is_pythons() {
        // random.Random(0x42B): randint(0, 6) x 6 and getrandbits(32) x 3, from CPython
        let mut r = PyRandom::new(DEFAULT_SEED);
        let v: Vec<u32> = (0..12).map(|_| r.randint(6)).collect();
        assert_eq!(v, [0, 2, 3, 1, 2, 5, 4, 2, 3, 3, 4, 1]);
        let mut r = PyRandom::new(DEFAULT_SEED);
        let v: Vec<u32> = (0..3).map(|_| r.next_u32()).collect();
        assert_eq!(v, [63_107_810, 1_219_892_833, 4_004_935_044]);
        let mut r = PyRandom::new(DEFAULT_SEED + 1);
        assert_eq!(r.randint(6), 3);
    }

    /// ACK k (1-based) at k × 100 ms of a packet sent 10 ms earlier, a round of its own,
    /// whose rate sample is `rate` bytes/s over 100 ms.
    struct Feeder {
        k: u64,
        delivered: u64,
    }

    impl Feeder {
        fn ack(&mut self, cc: &mut Bbr, rate: f64, in_flight: u64) {
            self.k += 1;
            let now = self.k * 100 * MS;
            let before = self.delivered;
            self.delivered += (rate * 0.1) as u64;
            let p = Acked {
                sent_at: now - 10 * MS,
                bytes: MSS,
                delivered_at_send: before,
                delivered_time_at_send: now - 100 * MS,
                first_sent_time_at_send: now - 60 * MS,
                app_limited: false,
                delivered_now: self.delivered,
            };
            cc.on_acked(now, &p, &RttEstimator::default(), in_flight);
        }
    }

    #[test]
    fn startup_ends_after_three_rounds_without_a_quarter_more_bandwidth() {
        let mut cc = Bbr::new(MSS);
        let mut f = Feeder { k: 0, delivered: 0 };
        // before any sample: 2/ln 2 x 10 packets per 1 ms
        assert_eq!(cc.pacing_rate(), Some(HIGH_GAIN * 10_000.0 / 0.001));
        for rate in [1e6, 2e6, 4e6, 4.5e6] {
            f.ack(&mut cc, rate, 1_000_000);
        }
        // 4.5 < 1.25 x 4: the first round without growth; the pacing rate follows the
        // max bandwidth with the high gain
        assert_eq!(cc.btlbw(), 4.5e6);
        assert_eq!(cc.pacing_rate(), Some(HIGH_GAIN * 4.5e6));
        assert_eq!(cc.round_count(), 4);
        f.ack(&mut cc, 4.9e6, 1_000_000);
        assert_eq!(cc.state(), State::Startup, "two rounds without growth");
        f.ack(&mut cc, 3e6, 1_000_000);
        assert_eq!(cc.state(), State::Drain, "the third");
        assert_eq!(cc.btlbw(), 4.9e6, "the windowed max");
        assert_eq!(cc.pacing_rate(), Some(DRAIN_GAIN * 4.9e6));
        // still 1 MB in flight, above one BDP (49 kB + 3 quanta): DRAIN goes on
        f.ack(&mut cc, 3e6, 1_000_000);
        assert_eq!(cc.state(), State::Drain);
        // the pipe drained: PROBE_BW at the phase bbr.py's seed picks first: randint 0 ->
        // index 7, advanced to 0: gain 5/4; pacing = gain x max bandwidth
        f.ack(&mut cc, 3e6, 10_000);
        assert_eq!(cc.state(), State::ProbeBw);
        assert_eq!(cc.pacing_gain(), 1.25);
        assert_eq!(cc.pacing_rate(), Some(1.25 * 4.9e6));
    }

    #[test]
    fn linux_paces_one_percent_below_the_rate() {
        let mut cc = Bbr::linux(MSS);
        let mut f = Feeder { k: 0, delivered: 0 };
        for rate in [1e6, 2e6, 4e6, 4.5e6] {
            f.ack(&mut cc, rate, 1_000_000);
        }
        assert_eq!(cc.pacing_rate(), Some(HIGH_GAIN * 4.5e6 * 0.99));
    }

    #[test]
    fn growth_of_a_quarter_restarts_the_count() {
        let mut cc = Bbr::new(MSS);
        let mut f = Feeder { k: 0, delivered: 0 };
        for rate in [1e6, 1.1e6, 1.2e6, 1.25e6, 1.3e6, 1.4e6] {
            f.ack(&mut cc, rate, 1_000_000);
        }
        // 1.25e6 >= 1.25 x 1e6 reset the count after two rounds; two more since
        assert_eq!(cc.state(), State::Startup);
        f.ack(&mut cc, 1.4e6, 1_000_000);
        assert_eq!(cc.state(), State::Drain);
    }

    #[test]
    fn the_max_filter_forgets_after_ten_rounds() {
        let mut cc = Bbr::new(MSS);
        let mut f = Feeder { k: 0, delivered: 0 };
        f.ack(&mut cc, 8e6, 1_000_000);
        for _ in 0..10 {
            f.ack(&mut cc, 2e6, 1_000_000);
        }
        assert_eq!(
            cc.btlbw(),
            8e6,
            "round 11: the 8e6 of round 1 is 10 rounds old"
        );
        f.ack(&mut cc, 2e6, 1_000_000);
        assert_eq!(cc.btlbw(), 2e6);
    }

    #[test]
    fn a_loss_starts_recovery_with_packet_conservation() {
        let mut cc = Bbr::new(MSS);
        let mut f = Feeder { k: 0, delivered: 0 };
        f.ack(&mut cc, 1e6, 20_000); // at 100 ms, 1000 bytes acked
        let w = cc.window();
        assert_eq!(w, 11_000);
        // a loss in the same ACK: cwnd = in flight + the bytes this ACK delivered (at
        // least a packet)
        cc.on_lost(100 * MS, 50 * MS, 2000, 18_000);
        assert_eq!(cc.window(), 18_000 + 1000);
        // another loss of the same period takes its bytes off
        cc.on_lost(110 * MS, 60 * MS, 3000, 15_000);
        assert_eq!(cc.window(), 16_000);
        // the ACK of a packet sent after the recovery started ends it: cwnd back to 11_000
        // at least, and grows by the acked bytes (not yet at the target)
        f.ack(&mut cc, 1e6, 5000);
        assert_eq!(cc.window(), 17_000);
    }

    #[test]
    fn an_empty_pipe_marks_packets_app_limited_until_they_are_delivered() {
        let mut cc = Bbr::new(MSS);
        assert!(!cc.app_limited());
        cc.on_sent(0, MSS, MSS);
        assert!(cc.app_limited());
        cc.on_sent(MS, MSS, 2 * MSS);
        let mut f = Feeder { k: 0, delivered: 0 };
        f.ack(&mut cc, 1e6, 0); // delivered 100_000 > mark 1
        assert!(!cc.app_limited());
    }
}
