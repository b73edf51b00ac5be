//! The server's TCP sender of a bulk transfer, as Linux 6.x sends it.
//!
//! - Scoreboard: one record per MSS-sized segment from the first unacknowledged one;
//!   cumulative ACKs drop records, SACK blocks mark whole segments (tcp_input.c
//!   `tcp_sacktag_write_queue`, `tcp_clean_rtx_queue`). `pipe` is Linux's
//!   `tcp_packets_in_flight`: sent, neither SACKed nor marked lost (a retransmission
//!   counts again).
//! - Loss detection: RACK (RFC 8985, tcp_recovery.c): walking the not-yet-delivered
//!   segments in send order, one sent before the newest delivered one is lost once
//!   `rack.rtt + reo_wnd` passed since it was sent; otherwise the REO timer waits for the
//!   rest. RACK runs only on ACKs that advanced its state, as Linux's `tcp_rack_mark_lost`.
//! - Recovery: entered on the first loss (ssthresh from the controller's `on_lost`),
//!   PRR (RFC 6937, Linux's `tcp_cwnd_reduction` with its snd_una-advanced bound) sets
//!   the window until `high_seq` is ACKed; lost segments go out before new data.
//! - TLP (RFC 8985 §7, `tcp_schedule_loss_probe`, `tcp_send_loss_probe`): in the open
//!   state, when nothing new may be sent, a probe after 2·SRTT (+200 ms with one segment
//!   out, else +2 jiffies), not later than the RTO; new data if the receive window allows,
//!   else the last segment again. A retransmitted probe the receiver did not report as a
//!   duplicate means a loss was repaired: the controller reduces its window once.
//! - RTO (RFC 6298 with Linux's numbers, tcp_timer.c `tcp_retransmit_timer`): SRTT plus
//!   the larger of 4·RTTVAR and 200 ms, in jiffies, at most 120 s, doubled per expiry and
//!   recomputed on the next RTT sample; on expiry every unSACKed segment is lost, the
//!   controller goes back to its minimum window (`on_persistent_congestion`) and the
//!   head is retransmitted.
//! - RTT: Linux's choice of sample (`tcp_ack_update_rtt`): the oldest newly ACKed
//!   never-retransmitted segment, else the oldest newly SACKed one, else the echoed
//!   timestamp; min_rtt from the newest.
//! - The controller is told of acknowledgments only while the sender is cwnd-limited
//!   (`tcp_is_cwnd_limited`) and not in PRR, as Linux calls `cong_avoid`; a controller
//!   with a pacing rate (BBR, Linux's `cong_control`) hears of every ACK and sets the
//!   window itself, and its rate paces the segments (Linux's internal pacing without fq).
//!
//! Not modelled: undo of a spurious recovery (the controller trait cannot restore a
//! window; RACK's window still grows on DSACK), F-RTO, TSO bursts, the zero-window probe.

use std::collections::{BTreeSet, VecDeque};

use super::rack::{sent_after, Rack};
use super::{jiffies, ts_of, DEFAULT_MSS, HEADERS, RTO_INIT, RTO_MAX, RTO_MIN, TIMEOUT_MIN};
use crate::base::packet::{ECT0, NOT_ECT};
use crate::base::time::{Nanos, NS_PER_S, NS_PER_US};
use crate::model::cc::{Acked, Controller};
use crate::model::rtt::RttEstimator;
use crate::model::wire::Segment;
use crate::model::{Endpoint, Progress};

/// One bulk transfer.
#[derive(Clone, Copy, Debug)]
pub struct SndConfig {
    pub flow: u16,
    /// Bytes to send.
    pub bytes: u64,
    /// When the first segment may leave.
    pub start: Nanos,
    /// Payload bytes per segment ([`super::mss_from_clamp`] under an MSS clamp).
    pub mss: u32,
    /// The RTT the handshake measured (Linux's first sample); None: RTO starts at 1 s.
    pub handshake_rtt: Option<Nanos>,
    /// The window the peer announced before the transfer (bytes).
    pub peer_window: u64,
    /// ECN negotiated (`net.ipv4.tcp_ecn = 1` at both ends, RFC 3168): new data leaves
    /// ECT(0), and an ACK with ECE reduces the window once per round, as a loss would.
    pub ecn: bool,
}

impl SndConfig {
    pub fn new(flow: u16, bytes: u64, start: Nanos) -> Self {
        SndConfig {
            flow,
            bytes,
            start,
            mss: DEFAULT_MSS,
            handshake_rtt: None,
            peer_window: 65535,
            ecn: false,
        }
    }
}

/// Linux's congestion states used here (Disorder needs no state of its own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaState {
    Open,
    /// `TCP_CA_CWR`: the window reduced for an ECN echo, nothing to retransmit.
    Cwr,
    Recovery,
    Loss,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Timer {
    Rto,
    Tlp,
    Reo,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Probe {
    New,
    Retrans(u64),
}

#[derive(Clone, Copy, Debug, Default)]
struct Seg {
    sent_at: Nanos,
    retrans: bool,
    sacked: bool,
    lost: bool,
    in_flight: bool,
    delivered: u64,
    delivered_time: Nanos,
    first_tx: Nanos,
    app_limited: bool,
}

pub struct TcpSender {
    cfg: SndConfig,
    mss: u64,
    nsegs: u64,
    cc: Box<dyn Controller>,
    rtt: RttEstimator,
    min_rtt: Nanos,
    /// Current RTO, backed off.
    rto: Nanos,
    backoffs: u32,
    // Scoreboard: segs[0] is segment `base`; `next_new` is the first never sent.
    segs: VecDeque<Seg>,
    base: u64,
    next_new: u64,
    snd_una: u64,
    snd_wnd_right: u64,
    /// Sent, neither delivered nor waiting for retransmission, by (send time, index):
    /// Linux's `tsorted_sent_queue`.
    tsorted: BTreeSet<(Nanos, u64)>,
    /// Lost, waiting for retransmission.
    retx: BTreeSet<u64>,
    pipe: u64,
    sacked_out: u64,
    highest_sack_end: u64,
    // Delivery rate (tcp_rate.c).
    delivered: u64,
    delivered_time: Nanos,
    first_tx: Nanos,
    app_limited_until: u64,
    // Recovery.
    state: CaState,
    high_seq: u64,
    prior_cwnd: u64,
    prr_delivered: u64,
    prr_out: u64,
    prr_cwnd: u64,
    newest_lost_sent: Nanos,
    /// `TCP_ECN_QUEUE_CWR`: the next new segment carries CWR.
    queue_cwr: bool,
    /// Window reductions for an ECN echo (`tcp_enter_cwr`).
    ecn_reductions: u64,
    rack: Rack,
    // cwnd validation (tcp_cwnd_validate).
    max_packets_out: u64,
    cwnd_usage_seq: u64,
    is_cwnd_limited: bool,
    // Timers and the probe.
    timer: Option<(Nanos, Timer)>,
    probe: Option<Probe>,
    tlp_high_seq: Option<u64>,
    tlp_retrans: bool,
    tlp_idx: u64,
    tlp_sent_at: Nanos,
    next_pace: Nanos,
    acked_scratch: Vec<Acked>,
    sent: u64,
    lost: u64,
    done_at: Option<Nanos>,
}

impl TcpSender {
    /// `cc` counts every segment as `cfg.mss` bytes (see the module `super`).
    pub fn new(cfg: SndConfig, cc: Box<dyn Controller>) -> Self {
        let mss = cfg.mss.max(1) as u64;
        let mut s = TcpSender {
            cfg,
            mss,
            nsegs: cfg.bytes.div_ceil(mss),
            cc,
            rtt: RttEstimator::default(),
            min_rtt: Nanos::MAX,
            rto: RTO_INIT,
            backoffs: 0,
            segs: VecDeque::new(),
            base: 0,
            next_new: 0,
            snd_una: 0,
            snd_wnd_right: cfg.peer_window,
            tsorted: BTreeSet::new(),
            retx: BTreeSet::new(),
            pipe: 0,
            sacked_out: 0,
            highest_sack_end: 0,
            delivered: 0,
            delivered_time: 0,
            first_tx: 0,
            app_limited_until: 0,
            state: CaState::Open,
            high_seq: 0,
            prior_cwnd: 0,
            prr_delivered: 0,
            prr_out: 0,
            prr_cwnd: 0,
            newest_lost_sent: 0,
            queue_cwr: false,
            ecn_reductions: 0,
            rack: Rack::default(),
            max_packets_out: 0,
            cwnd_usage_seq: 0,
            is_cwnd_limited: false,
            timer: None,
            probe: None,
            tlp_high_seq: None,
            tlp_retrans: false,
            tlp_idx: 0,
            tlp_sent_at: 0,
            next_pace: 0,
            acked_scratch: Vec::new(),
            sent: 0,
            lost: 0,
            done_at: None,
        };
        if let Some(r) = cfg.handshake_rtt {
            s.rtt.update(r, 0);
            s.min_rtt = r;
            s.set_rto();
        }
        s
    }

    pub fn state(&self) -> CaState {
        self.state
    }
    /// The RTO as it stands (backed off), and how often it expired in a row.
    pub fn rto(&self) -> (Nanos, u32) {
        (self.rto, self.backoffs)
    }
    /// RACK's reordering window as loss detection would use it now.
    pub fn reo_wnd(&self) -> Nanos {
        self.rack.reo_wnd(
            matches!(self.state, CaState::Recovery | CaState::Loss),
            self.sacked_out,
            self.min_rtt,
            self.srtt(),
        )
    }
    pub fn min_rtt(&self) -> Nanos {
        self.min_rtt
    }
    /// The window in segments the sender uses now.
    /// Window reductions for an ECN echo so far.
    pub fn ecn_reductions(&self) -> u64 {
        self.ecn_reductions
    }

    pub fn cwnd(&self) -> u64 {
        if self.in_cwnd_reduction() && !self.paced() {
            self.prr_cwnd
        } else {
            (self.cc.window() / self.mss).max(1)
        }
    }

    fn srtt(&self) -> Nanos {
        if self.rtt.has_sample() {
            self.rtt.smoothed()
        } else {
            0
        }
    }
    fn paced(&self) -> bool {
        self.cc.pacing_rate().is_some()
    }
    fn seg_start(&self, idx: u64) -> u64 {
        idx * self.mss
    }
    fn seg_end(&self, idx: u64) -> u64 {
        ((idx + 1) * self.mss).min(self.cfg.bytes)
    }
    fn seg(&mut self, idx: u64) -> &mut Seg {
        &mut self.segs[(idx - self.base) as usize]
    }
    fn packets_out(&self) -> u64 {
        self.next_new - self.base
    }
    fn snd_nxt(&self) -> u64 {
        self.seg_start(self.next_new).min(self.cfg.bytes)
    }
    fn done(&self) -> bool {
        self.base == self.nsegs
    }
    fn rwnd_allows(&self, idx: u64) -> bool {
        self.seg_end(idx) <= self.snd_wnd_right
    }
    fn new_data_sendable(&self) -> bool {
        self.next_new < self.nsegs && self.rwnd_allows(self.next_new)
    }

    /// `tcp_set_rto`: SRTT + max(4·RTTVAR, 200 ms), in jiffies, at most 120 s.
    fn set_rto(&mut self) {
        let rto = self.rtt.smoothed() + (4 * self.rtt.var()).max(RTO_MIN);
        self.rto = jiffies(rto).min(RTO_MAX);
    }

    /// `tcp_rearm_rto`: after a RACK or TLP timer, the RTO counts from the head's
    /// transmission; otherwise from now.
    fn rearm_rto(&mut self, now: Nanos) {
        if self.packets_out() == 0 {
            self.timer = None;
            return;
        }
        let mut rto = self.rto;
        if matches!(self.timer, Some((_, Timer::Reo | Timer::Tlp))) {
            let head = self.segs[0].sent_at + self.rto;
            rto = jiffies(head.saturating_sub(now).max(NS_PER_US));
        }
        self.timer = Some((now + rto, Timer::Rto));
    }

    /// `tcp_schedule_loss_probe`; false when no probe is due in this state.
    fn schedule_tlp(&mut self, now: Nanos, advancing_rto: bool) -> bool {
        if self.packets_out() == 0 || !matches!(self.state, CaState::Open | CaState::Cwr) {
            return false;
        }
        if self.cwnd() > self.pipe && self.next_new < self.nsegs {
            return false;
        }
        let mut timeout = if self.rtt.has_sample() {
            let extra = if self.packets_out() == 1 {
                RTO_MIN
            } else {
                TIMEOUT_MIN
            };
            jiffies(2 * self.rtt.smoothed()) + extra
        } else {
            RTO_INIT
        };
        let rto_delta = if advancing_rto {
            self.rto as i128
        } else {
            (self.segs[0].sent_at + self.rto) as i128 - now as i128
        };
        if rto_delta > 0 {
            timeout = timeout.min(jiffies(rto_delta as Nanos));
        }
        self.timer = Some((now + timeout, Timer::Tlp));
        true
    }

    /// After an ACK that acknowledged data (`tcp_set_xmit_timer`).
    fn set_xmit_timer(&mut self, now: Nanos) {
        if !self.schedule_tlp(now, true) {
            self.rearm_rto(now);
        }
    }

    fn transmit(&mut self, now: Nanos, idx: u64, probe: bool) -> (Segment, usize) {
        let prior_packets_out = self.packets_out();
        let is_new = idx == self.next_new;
        if prior_packets_out == 0 {
            self.first_tx = now;
            self.delivered_time = now;
        }
        if is_new {
            self.segs.push_back(Seg::default());
            self.next_new += 1;
        } else {
            self.retx.remove(&idx);
            let old = self.seg(idx).sent_at;
            self.tsorted.remove(&(old, idx));
            self.seg(idx).retrans = true;
            self.seg(idx).lost = false;
            self.lost += 1;
        }
        let (delivered, delivered_time, first_tx) =
            (self.delivered, self.delivered_time, self.first_tx);
        let app_limited = self.app_limited_until > 0;
        let s = self.seg(idx);
        s.sent_at = now;
        s.delivered = delivered;
        s.delivered_time = delivered_time;
        s.first_tx = first_tx;
        s.app_limited = app_limited;
        let was_in_flight = s.in_flight;
        s.in_flight = true;
        if !was_in_flight {
            self.pipe += 1;
        }
        self.tsorted.insert((now, idx));
        self.sent += 1;
        if self.in_cwnd_reduction() {
            self.prr_out += 1;
        }
        let len = self.seg_end(idx) - self.seg_start(idx);
        self.cc.on_sent(now, self.mss, self.pipe * self.mss);
        if let Some(rate) = self.cc.pacing_rate() {
            let gap = ((len as usize + HEADERS) as f64 * NS_PER_S as f64 / rate.max(1.0)) as Nanos;
            self.next_pace = self.next_pace.max(now) + gap;
        }
        if is_new {
            if prior_packets_out == 0 {
                self.rearm_rto(now);
            }
            if !probe {
                self.schedule_tlp(now, false);
            }
        }
        self.cwnd_validate();
        // `tcp_ecn_send`: new data is ECT(0), the first after a reduction carries CWR; a
        // retransmission is not ECN-capable (RFC 3168 §6.1.5).
        let ect = self.cfg.ecn && is_new;
        let cwr = ect && std::mem::take(&mut self.queue_cwr);
        (
            Segment::TcpData {
                flow: self.cfg.flow,
                seq: self.seg_start(idx),
                len: len as u32,
                tsval: ts_of(now),
                ecn: if ect { ECT0 } else { NOT_ECT },
                cwr,
            },
            len as usize + HEADERS,
        )
    }

    /// `tcp_cwnd_validate`: whether the window, not the application or the receiver,
    /// limited the last round.
    fn cwnd_validate(&mut self) {
        let limited = self.pipe >= self.cwnd();
        let packets_out = self.packets_out();
        if self.snd_una >= self.cwnd_usage_seq
            || limited
            || (!self.is_cwnd_limited && packets_out > self.max_packets_out)
        {
            self.is_cwnd_limited = limited;
            self.max_packets_out = packets_out;
            self.cwnd_usage_seq = self.snd_nxt();
        }
    }

    /// `tcp_is_cwnd_limited`.
    fn cwnd_limited(&self) -> bool {
        if self.cc.in_slow_start() {
            self.cwnd() < 2 * self.max_packets_out
        } else {
            self.is_cwnd_limited
        }
    }

    /// A segment newly ACKed or SACKed: delivery-rate bookkeeping and the record for the
    /// controller.
    fn delivered_one(&mut self, seg: &Seg) {
        self.delivered += self.mss;
        if seg.sent_at >= self.first_tx {
            self.first_tx = seg.sent_at;
        }
        self.acked_scratch.push(Acked {
            sent_at: seg.sent_at,
            bytes: self.mss,
            delivered_at_send: seg.delivered,
            delivered_time_at_send: seg.delivered_time,
            first_sent_time_at_send: seg.first_tx,
            app_limited: seg.app_limited,
            delivered_now: self.delivered,
        });
    }

    /// `tcp_rack_detect_loss`: marks what is lost; returns how many, and the longest wait
    /// for the segments not yet lost.
    fn rack_detect(&mut self, now: Nanos) -> (u64, Option<Nanos>) {
        let reo = self.reo_wnd();
        let mut lost = Vec::new();
        let mut wait: Option<Nanos> = None;
        for &(t, idx) in &self.tsorted {
            if !sent_after(self.rack.mstamp, self.rack.end_seq, t, self.seg_end(idx)) {
                break;
            }
            let deadline = t + self.rack.rtt + reo;
            if deadline <= now {
                lost.push((t, idx));
            } else {
                wait = Some(wait.unwrap_or(0).max(deadline - now));
            }
        }
        for &(t, idx) in &lost {
            self.tsorted.remove(&(t, idx));
            let s = self.seg(idx);
            s.lost = true;
            if s.in_flight {
                s.in_flight = false;
                self.pipe -= 1;
            }
            self.retx.insert(idx);
            self.newest_lost_sent = self.newest_lost_sent.max(t);
        }
        (lost.len() as u64, wait)
    }

    /// Recovery or CWR: the window follows PRR.
    fn in_cwnd_reduction(&self) -> bool {
        matches!(self.state, CaState::Recovery | CaState::Cwr)
    }

    /// `tcp_enter_cwr` with `tcp_init_cwnd_reduction`: the controller's reduction for an
    /// ECN echo, as for a loss, with nothing to retransmit.
    fn enter_cwr(&mut self, now: Nanos) {
        self.ecn_reductions += 1;
        self.init_cwnd_reduction();
        self.state = CaState::Cwr;
        self.cc.on_lost(now, now, 0, self.pipe * self.mss);
    }

    fn init_cwnd_reduction(&mut self) {
        self.prior_cwnd = self.cwnd();
        self.high_seq = self.snd_nxt();
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.prr_cwnd = self.prior_cwnd;
        self.queue_cwr = self.cfg.ecn;
    }

    /// `tcp_enter_recovery` with `tcp_init_cwnd_reduction` (not again when a CWR
    /// reduction is under way).
    fn enter_recovery(&mut self, now: Nanos, lost: u64) {
        if self.state == CaState::Cwr {
            self.state = CaState::Recovery;
            self.high_seq = self.snd_nxt();
            self.tlp_high_seq = None;
            return;
        }
        self.prior_cwnd = self.cwnd();
        self.state = CaState::Recovery;
        self.high_seq = self.snd_nxt();
        self.tlp_high_seq = None;
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.prr_cwnd = self.prior_cwnd;
        self.queue_cwr = self.cfg.ecn;
        self.cc.on_lost(
            now,
            self.newest_lost_sent,
            lost * self.mss,
            self.pipe * self.mss,
        );
    }

    /// `tcp_cwnd_reduction` (PRR, RFC 6937).
    fn prr(&mut self, newly: u64, newly_lost: u64, una_advanced: bool) {
        if newly == 0 || self.prior_cwnd == 0 {
            return;
        }
        let ssthresh = (self.cc.window() / self.mss).max(1) as i64;
        let pipe = self.pipe as i64;
        self.prr_delivered += newly;
        let (delivered, out) = (self.prr_delivered as i64, self.prr_out as i64);
        let delta = ssthresh - pipe;
        let mut sndcnt = if delta < 0 {
            (ssthresh * delivered + self.prior_cwnd as i64 - 1) / self.prior_cwnd as i64 - out
        } else {
            let mut s = (delivered - out).max(newly as i64);
            if una_advanced && newly_lost == 0 {
                s += 1;
            }
            delta.min(s)
        };
        sndcnt = sndcnt.max(if out > 0 { 0 } else { 1 });
        self.prr_cwnd = (pipe + sndcnt.max(0)) as u64;
    }

    fn end_recovery(&mut self) {
        if self.state != CaState::Cwr {
            self.rack.on_recovery_end();
        }
        self.state = CaState::Open;
    }

    /// One ACK, in the kernel's order (`tcp_ack`): D-SACK, the cumulative ACK, new SACK
    /// blocks, the RTT sample, a tail loss probe's fate, loss detection and recovery, then
    /// the congestion controller.
    fn on_ack(
        &mut self,
        now: Nanos,
        ack: u64,
        window: u32,
        tsecr: u32,
        sack: &[(u64, u64)],
        ece: bool,
    ) {
        let tsecr_ns = (tsecr != 0).then(|| {
            let ago = ts_of(now).wrapping_sub(tsecr) as Nanos * NS_PER_US;
            now.saturating_sub(ago)
        });
        let prior_delivered = self.delivered;
        let prior_una = self.snd_una;
        let ack = ack.clamp(self.snd_una, self.snd_nxt());
        self.snd_wnd_right = ack + window as u64;
        self.acked_scratch.clear();
        self.rack.advanced = false;

        let (blocks, dsack_tlp) = self.split_dsack(ack, sack);
        let mut step = AckStep {
            now,
            tsecr_ns,
            prior_highest_sack: self.highest_sack_end,
            min_rtt: self.min_rtt,
            newly: 0,
            seq_rtt: None,
            sack_rtt: None,
            ca_sent: None,
        };
        self.ack_cumulative(&mut step, ack);
        self.snd_una = ack;
        let una_advanced = self.snd_una > prior_una;
        self.ack_sacked(&mut step, blocks);
        let newly = step.newly;
        if newly > 0 {
            self.delivered_time = now;
            if self.app_limited_until > 0 && self.delivered > self.app_limited_until {
                self.app_limited_until = 0;
            }
        }
        self.update_rtt(&step, una_advanced);
        self.rack.update_reo_wnd(prior_delivered, self.delivered);
        self.process_tlp_ack(now, ack, dsack_tlp, una_advanced, newly);
        let newly_lost = self.fastretrans_alert(now, ece && self.cfg.ecn);
        self.cong_control(now, newly, newly_lost, una_advanced);

        if una_advanced {
            self.set_xmit_timer(now);
        }
        if self.done() {
            self.timer = None;
            self.done_at.get_or_insert(now);
        }
    }

    /// RFC 2883 / `tcp_check_dsack`: a first block below the ACK or inside the second is a
    /// D-SACK. Returns the blocks that SACK new data, and whether the D-SACK covers the
    /// tail loss probe's retransmission (the probe was not needed).
    fn split_dsack<'a>(&mut self, ack: u64, sack: &'a [(u64, u64)]) -> (&'a [(u64, u64)], bool) {
        let Some(&(s, e)) = sack.first() else {
            return (sack, false);
        };
        let inside_second = sack.get(1).is_some_and(|&(s2, e2)| s >= s2 && e <= e2);
        if !(s < ack || inside_second) {
            return (sack, false);
        }
        let probe_seq = self.seg_start(self.tlp_idx);
        let dsack_tlp =
            self.tlp_high_seq.is_some() && self.tlp_retrans && s <= probe_seq && probe_seq < e;
        if !dsack_tlp && self.lost > 0 {
            self.rack.on_dsack();
        }
        (&sack[1..], dsack_tlp)
    }

    /// The segments the cumulative ACK covers leave the scoreboard.
    fn ack_cumulative(&mut self, st: &mut AckStep, ack: u64) {
        while self.base < self.next_new && self.seg_end(self.base) <= ack {
            let idx = self.base;
            let seg = self.segs.pop_front().expect("scoreboard covers base");
            self.base += 1;
            self.tsorted.remove(&(seg.sent_at, idx));
            self.retx.remove(&idx);
            if seg.in_flight {
                self.pipe -= 1;
            }
            if seg.sacked {
                self.sacked_out -= 1;
                continue;
            }
            if let Some(rtt) = self.newly_delivered(st, idx, &seg) {
                st.seq_rtt.get_or_insert(rtt);
            }
        }
    }

    /// Segments newly covered by a SACK block are marked and counted delivered.
    fn ack_sacked(&mut self, st: &mut AckStep, blocks: &[(u64, u64)]) {
        for &(s, e) in blocks {
            let mut idx = s.div_ceil(self.mss).max(self.base);
            while idx < self.next_new && self.seg_end(idx) <= e {
                let seg = *self.seg(idx);
                if !seg.sacked {
                    let end = self.seg_end(idx);
                    {
                        let m = self.seg(idx);
                        m.sacked = true;
                        m.lost = false;
                        m.in_flight = false;
                    }
                    self.sacked_out += 1;
                    if seg.in_flight {
                        self.pipe -= 1;
                    }
                    self.tsorted.remove(&(seg.sent_at, idx));
                    self.retx.remove(&idx);
                    if let Some(rtt) = self.newly_delivered(st, idx, &seg) {
                        st.sack_rtt = Some(st.sack_rtt.unwrap_or(0).max(rtt));
                    }
                    self.highest_sack_end = self.highest_sack_end.max(end);
                }
                idx += 1;
            }
        }
    }

    /// What a segment newly delivered (cumulatively or by SACK) counts for, once its
    /// scoreboard entry is settled: the step's tally, reordering, RACK and the delivery
    /// rate. Returns its RTT sample, if it was never sent again.
    fn newly_delivered(&mut self, st: &mut AckStep, idx: u64, seg: &Seg) -> Option<Nanos> {
        st.newly += 1;
        let end = self.seg_end(idx);
        let rtt = (!seg.retrans).then(|| {
            st.ca_sent = Some(st.ca_sent.unwrap_or(0).max(seg.sent_at));
            if end <= st.prior_highest_sack {
                self.rack.reord_seen = true;
            }
            st.now - seg.sent_at
        });
        self.rack.advance(
            st.now,
            seg.sent_at,
            end,
            seg.retrans,
            st.min_rtt,
            st.tsecr_ns,
        );
        self.delivered_one(seg);
        rtt
    }

    /// `tcp_ack_update_rtt`: a sample from new data (the cumulative ACK's first, else the
    /// newest SACKed), else from the timestamp echo when the ACK moved.
    fn update_rtt(&mut self, st: &AckStep, una_advanced: bool) {
        let now = st.now;
        let mut ca_rtt = st.ca_sent.map(|t| now - t);
        let mut sample = st.seq_rtt.or(st.sack_rtt);
        if sample.is_none() && una_advanced {
            if let Some(t) = st.tsecr_ns {
                sample = Some(now - t);
                ca_rtt = sample;
            }
        }
        if let Some(r) = sample {
            self.min_rtt = self.min_rtt.min(ca_rtt.unwrap_or(r));
            self.rtt.update(r, 0);
            self.cc.on_rtt_sample(now, &self.rtt);
            self.set_rto();
            self.backoffs = 0;
        }
    }

    /// `tcp_process_tlp_ack`: an ACK past the probe ends the episode; if the probe was a
    /// retransmission nobody reported as a duplicate, the original was lost.
    fn process_tlp_ack(
        &mut self,
        now: Nanos,
        ack: u64,
        dsack_tlp: bool,
        una_advanced: bool,
        newly: u64,
    ) {
        let Some(h) = self.tlp_high_seq else {
            return;
        };
        if ack < h {
            return;
        }
        if !self.tlp_retrans || dsack_tlp {
            self.tlp_high_seq = None;
        } else if ack > h {
            self.tlp_high_seq = None;
            self.cc
                .on_lost(now, self.tlp_sent_at, self.mss, self.pipe * self.mss);
        } else if !una_advanced && newly == 0 {
            self.tlp_high_seq = None;
        }
    }

    /// `tcp_fastretrans_alert`: leave a finished recovery, detect losses (RACK), enter one;
    /// else, with an ECN echo, reduce the window (`tcp_try_to_open`). Returns the segments
    /// newly marked lost.
    fn fastretrans_alert(&mut self, now: Nanos, ece: bool) -> u64 {
        // CWR holds until something above high_seq is ACKed: the segment that carried CWR
        // to the receiver, so the ACKs still echoing the mark do not reduce again.
        let ended = match self.state {
            CaState::Open => false,
            CaState::Cwr => self.snd_una > self.high_seq,
            _ => self.snd_una >= self.high_seq,
        };
        if ended {
            self.end_recovery();
        }
        let mut newly_lost = 0;
        if self.rack.advanced {
            let (lost, wait) = self.rack_detect(now);
            newly_lost = lost;
            if let Some(w) = wait {
                self.timer = Some((now + jiffies(w) + TIMEOUT_MIN, Timer::Reo));
            }
        }
        if !self.retx.is_empty() && matches!(self.state, CaState::Open | CaState::Cwr) {
            self.enter_recovery(now, newly_lost);
        } else if ece && self.state == CaState::Open {
            self.enter_cwr(now);
        }
        newly_lost
    }

    /// `tcp_cong_control`: PRR in recovery, else the controller sees each ACKed segment
    /// when the window (or pacing) limited the sender.
    fn cong_control(&mut self, now: Nanos, newly: u64, newly_lost: u64, una_advanced: bool) {
        if self.in_cwnd_reduction() && !self.paced() {
            self.prr(newly, newly_lost, una_advanced);
        } else if newly > 0 && (self.paced() || self.cwnd_limited()) {
            let acked = std::mem::take(&mut self.acked_scratch);
            let in_flight = self.pipe * self.mss;
            for a in &acked {
                self.cc.on_acked(now, a, &self.rtt, in_flight);
            }
            self.cc.on_ack_end(now, &self.rtt, in_flight);
            self.acked_scratch = acked;
        }
    }

    fn on_rto(&mut self, now: Nanos) {
        if self.packets_out() == 0 {
            self.timer = None;
            return;
        }
        // `tcp_enter_loss`: a new reduction unless this continues a loss episode.
        let newest = self.segs.iter().map(|s| s.sent_at).max().unwrap_or(now);
        if self.state != CaState::Loss {
            self.cc
                .on_lost(now, newest, self.pipe * self.mss, self.pipe * self.mss);
        }
        self.cc.on_persistent_congestion(now);
        for i in 0..self.segs.len() {
            let idx = self.base + i as u64;
            let s = self.segs[i];
            if s.sacked {
                continue;
            }
            self.tsorted.remove(&(s.sent_at, idx));
            self.segs[i].lost = true;
            self.segs[i].in_flight = false;
            self.retx.insert(idx);
        }
        self.pipe = 0;
        if self.state == CaState::Recovery {
            self.rack.on_recovery_end();
        }
        self.state = CaState::Loss;
        self.high_seq = self.snd_nxt();
        self.tlp_high_seq = None;
        self.backoffs += 1;
        self.rto = (2 * self.rto).min(RTO_MAX);
        self.timer = Some((now + self.rto, Timer::Rto));
    }

    fn on_reo_timeout(&mut self, now: Nanos) {
        let (lost, _) = self.rack_detect(now);
        if lost > 0 && self.state != CaState::Recovery {
            self.enter_recovery(now, lost);
            if !self.paced() {
                self.prr(1, lost, false);
            }
        }
        self.rearm_rto(now);
    }

    /// `tcp_send_loss_probe`: chooses the probe; `poll_transmit` sends it.
    fn on_tlp_timeout(&mut self, now: Nanos) {
        if self.new_data_sendable() {
            self.probe = Some(Probe::New);
            self.tlp_retrans = false;
            self.tlp_high_seq = Some(self.seg_end(self.next_new));
        } else if self.tlp_high_seq.is_none() && self.next_new > self.base {
            let last = self.next_new - 1;
            self.probe = Some(Probe::Retrans(last));
            self.tlp_retrans = true;
            self.tlp_idx = last;
            self.tlp_high_seq = Some(self.snd_nxt());
        } else {
            self.rearm_rto(now);
            return;
        }
        self.tlp_sent_at = now;
        self.timer = Some((now + self.rto, Timer::Rto));
    }
}

impl Endpoint for TcpSender {
    fn poll_transmit(&mut self, now: Nanos) -> Option<(Segment, usize)> {
        if now < self.cfg.start || self.done() {
            return None;
        }
        if let Some(p) = self.probe.take() {
            let idx = match p {
                Probe::New => self.next_new,
                Probe::Retrans(i) => i,
            };
            if idx < self.next_new || self.new_data_sendable() {
                return Some(self.transmit(now, idx, true));
            }
        }
        if self.paced() && now < self.next_pace {
            return None;
        }
        let cwnd = self.cwnd();
        if self.pipe >= cwnd {
            return None;
        }
        if let Some(&idx) = self.retx.first() {
            return Some(self.transmit(now, idx, false));
        }
        if self.new_data_sendable() {
            return Some(self.transmit(now, self.next_new, false));
        }
        if self.next_new == self.nsegs && self.app_limited_until == 0 {
            // `tcp_rate_check_app_limited`: nothing left to send below the window.
            self.app_limited_until = (self.delivered + self.pipe * self.mss).max(1);
        }
        None
    }

    fn on_segment(&mut self, now: Nanos, seg: &Segment) {
        if let Segment::TcpAck {
            flow,
            ack,
            window,
            tsecr,
            ref sack,
            ece,
        } = *seg
        {
            if flow == self.cfg.flow && self.next_new > 0 {
                self.on_ack(now, ack, window, tsecr, sack.as_slice(), ece);
            }
        }
    }

    fn next_deadline(&self) -> Option<Nanos> {
        if self.done() {
            return None;
        }
        if self.sent == 0 {
            return Some(self.cfg.start);
        }
        let mut d = self.timer.map(|(t, _)| t);
        if self.paced()
            && self.pipe < self.cwnd()
            && (!self.retx.is_empty() || self.new_data_sendable())
        {
            d = Some(d.map_or(self.next_pace, |t| t.min(self.next_pace)));
        }
        d
    }

    fn on_timeout(&mut self, now: Nanos) {
        let Some((t, kind)) = self.timer else {
            return;
        };
        if t > now || self.done() {
            return;
        }
        // The handlers replace the timer; RACK's and TLP's see their own kind still set,
        // as Linux's `icsk_pending` (the RTO then counts from the head's transmission).
        match kind {
            Timer::Rto => self.on_rto(now),
            Timer::Tlp => self.on_tlp_timeout(now),
            Timer::Reo => self.on_reo_timeout(now),
        }
    }

    fn progress(&self) -> Progress {
        Progress {
            bytes: self.snd_una,
            done_at: self.done_at,
            lost: self.lost,
            sent: self.sent,
            ce_marks: 0,
            ecn_reductions: self.ecn_reductions,
        }
    }
}
/// What one ACK's steps learn as they go (`Sender::on_ack`).
struct AckStep {
    now: Nanos,
    tsecr_ns: Option<Nanos>,
    /// The highest SACKed sequence before this ACK: a segment below it delivered now was
    /// reordered.
    prior_highest_sack: u64,
    min_rtt: Nanos,
    /// Segments newly delivered (cumulatively or by SACK).
    newly: u64,
    /// RTT from the first never-retransmitted segment the cumulative ACK covers, and the
    /// largest from the SACKed ones; the newest send time among them.
    seq_rtt: Option<Nanos>,
    sack_rtt: Option<Nanos>,
    ca_sent: Option<Nanos>,
}
