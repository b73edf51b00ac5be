//! The client's TCP receiver of a bulk transfer, as Linux 6.x acknowledges it; the
//! application (curl) reads everything in order at once.
//!
//! - ACK timing (tcp_input.c `__tcp_ack_snd_check`, `tcp_event_data_recv`,
//!   `tcp_send_delayed_ack`): quickack for the first segments (`tcp_incr_quickack`:
//!   min(16, rcv_wnd / 2·MSS) immediate ACKs, one used per ACK sent; again after an idle
//!   gap longer than the RTO, and 16 more after a duplicate); otherwise an ACK once more
//!   than one full segment arrived since the last ACK (every second segment), else the
//!   delayed-ACK timer (ATO, 40 ms; sent at once if a pending timer is due within ATO/4;
//!   the ATO adapts to the arrival gaps and doubles when the timer fires, capped at the
//!   SRTT the handshake measured but not below 40 ms).
//! - Out of order (`tcp_data_queue_ofo`, SACK compression): an out-of-order segment gets
//!   an immediate ACK for the first 3 with the same cumulative point, later ones are
//!   compressed (one ACK after 44 or after min(1 ms, RTT/20)); the ACK that fills the
//!   last hole goes at once. SACK blocks: the newest-changed block first, up to 4 kept,
//!   3 sent with timestamps (a DSACK uses one of the 3); `tcp_sack_remove` drops blocks
//!   the cumulative ACK covers.
//! - Duplicates (`tcp_data_queue`): a segment entirely below rcv_nxt, or entirely inside
//!   the out-of-order queue, is reported once in a DSACK block and ACKed at once.
//! - Timestamps (RFC 7323 §4.3): the echoed value is the tsval of the segment that
//!   started at the last ACK's point (Linux's `ts_recent` with `rcv_wup`).
//! - Window (`__tcp_select_window`, `tcp_select_window`): the free buffer space less
//!   out-of-order data, at most `rcv_ssthresh` (grown by 2 MSS per data segment up to
//!   the window clamp, `tcp_grow_window`), aligned to the window scale (1024 bytes: scale
//!   10, from rmem_max 32 MiB), never moving the right edge left.
//!
//! Simplifications: the kernel's receive-space ratio (skb payload over truesize) is taken
//! as 1/2 (its initial value, and what tcp_adv_win_scale = 1 gave), so the window is half
//! the buffer. Autotuning (`tcp_rcv_space_adjust`) grows the buffer once per receiver
//! RTT to 2·copied + 16 MSS plus Linux's growth term, up to tcp_rmem[2]; the receiver RTT
//! is Linux's timestamp-less measurement (the time one window takes to arrive, minimum
//! kept, `tcp_rcv_rtt_measure`), seeded by the handshake RTT where Linux would take a
//! timestamp sample. No memory pressure or pruning.

use std::collections::BTreeMap;

use super::{jiffies, ATO_MIN, DEFAULT_MSS, HEADERS, RTO_MIN};
use crate::base::packet::CE;
use crate::base::time::{Nanos, NS_PER_MS};
use crate::model::wire::{Ranges, Segment};
use crate::model::{Endpoint, Progress};

/// TCP_MAX_QUICKACKS.
const MAX_QUICKACKS: u32 = 16;
/// net.ipv4.tcp_comp_sack_nr and tcp_comp_sack_delay_ns.
const COMP_SACK_NR: u32 = 44;
const COMP_SACK_DELAY: Nanos = NS_PER_MS;
/// TCP_FASTRETRANS_THRESH: out-of-order ACKs sent at once before compression.
const FASTRETRANS_THRESH: u32 = 3;
/// The window scale Linux picks for rmem_max 32 MiB: the window's granularity.
const WSCALE_UNIT: u64 = 1 << 10;
/// SACK blocks Linux remembers (TCP_NUM_SACKS) and sends with timestamps.
const NUM_SACKS: usize = 4;
const SACKS_SENT: usize = 3;

#[derive(Clone, Copy, Debug)]
pub struct RcvConfig {
    pub flow: u16,
    /// The object's size: done when all of it is delivered.
    pub bytes: u64,
    /// The sender's payload per segment (Linux's rcv_mss estimate).
    pub mss: u32,
    /// net.ipv4.tcp_rmem: min, default, max.
    pub rmem: [u64; 3],
    /// The handshake's RTT, if known (the client's SRTT).
    pub handshake_rtt: Option<Nanos>,
}

impl RcvConfig {
    pub fn new(flow: u16, bytes: u64) -> Self {
        RcvConfig {
            flow,
            bytes,
            mss: DEFAULT_MSS,
            rmem: [4096, 131072, 6291456],
            handshake_rtt: None,
        }
    }
}

pub struct TcpReceiver {
    cfg: RcvConfig,
    mss: u64,
    rcv_nxt: u64,
    ooo: BTreeMap<u64, u64>,
    ooo_bytes: u64,
    sacks: Vec<(u64, u64)>,
    dsack: Option<(u64, u64)>,
    rcv_wup: u64,
    rcv_wnd: u64,
    ts_recent: u32,
    /// `TCP_ECN_DEMAND_CWR`: a CE mark arrived; every ACK echoes it (ECE) until a segment
    /// with CWR says the sender reduced (RFC 3168 §6.1.3).
    ece: bool,
    /// Data segments that arrived marked CE.
    ce_marks: u64,
    // ACK timing.
    ack_now: bool,
    quick: u32,
    ato: Nanos,
    lrcvtime: Option<Nanos>,
    delack: Option<Nanos>,
    comp: Option<Nanos>,
    compressed_ack: u32,
    dup_ack_counter: u32,
    compressed_ack_rcv_nxt: u64,
    // Buffer and autotuning.
    rcvbuf: u64,
    window_clamp: u64,
    rcv_ssthresh: u64,
    space: u64,
    space_seq: u64,
    space_time: Nanos,
    rcv_rtt: Nanos,
    rtt_seq: u64,
    rtt_time: Option<Nanos>,
    acks_sent: u64,
    done_at: Option<Nanos>,
}

/// Window from buffer space and back, at the ratio 1/2 (module docs).
fn win_from_space(space: u64) -> u64 {
    space / 2
}
fn space_from_win(win: u64) -> u64 {
    win * 2
}

impl TcpReceiver {
    pub fn new(cfg: RcvConfig) -> Self {
        let mss = cfg.mss.max(1) as u64;
        let rcvbuf = cfg.rmem[1];
        let window_clamp = win_from_space(rcvbuf);
        // `tcp_select_initial_window`: the space rounded down to whole segments.
        let mut rcv_wnd = window_clamp;
        if rcv_wnd > mss {
            rcv_wnd = rcv_wnd / mss * mss;
        }
        TcpReceiver {
            cfg,
            mss,
            rcv_nxt: 0,
            ooo: BTreeMap::new(),
            ooo_bytes: 0,
            sacks: Vec::new(),
            dsack: None,
            rcv_wup: 0,
            rcv_wnd,
            ts_recent: 0,
            ece: false,
            ce_marks: 0,
            ack_now: false,
            quick: 0,
            ato: 0,
            lrcvtime: None,
            delack: None,
            comp: None,
            compressed_ack: 0,
            dup_ack_counter: 0,
            compressed_ack_rcv_nxt: 0,
            rcvbuf,
            window_clamp,
            rcv_ssthresh: rcv_wnd,
            space: rcv_wnd.min(10 * mss),
            space_seq: 0,
            space_time: 0,
            rcv_rtt: cfg.handshake_rtt.unwrap_or(0),
            rtt_seq: 0,
            rtt_time: None,
            acks_sent: 0,
            done_at: None,
        }
    }

    /// The window the next ACK would announce.
    pub fn window(&self) -> u64 {
        self.select_window()
    }
    pub fn acks_sent(&self) -> u64 {
        self.acks_sent
    }
    /// The receive buffer autotuning has reached.
    pub fn rcvbuf(&self) -> u64 {
        self.rcvbuf
    }

    fn rto(&self) -> Nanos {
        self.cfg.handshake_rtt.unwrap_or(0) + RTO_MIN
    }

    /// Data segments that arrived marked CE so far.
    pub fn ce_marks(&self) -> u64 {
        self.ce_marks
    }

    /// `tcp_ecn_accept_cwr`, then `__tcp_ecn_check_ce`: CWR ends the echo, CE starts it
    /// (the first mark of an echo with quickacks, not to hold a sender on a small window).
    fn ecn_check(&mut self, ecn: u8, cwr: bool) {
        if cwr {
            self.ece = false;
        }
        if ecn == CE {
            self.ce_marks += 1;
            if !self.ece {
                self.incr_quickack(2);
                self.ato = ATO_MIN;
                self.ece = true;
            }
        }
    }

    /// `tcp_incr_quickack`.
    fn incr_quickack(&mut self, max: u32) {
        let q = ((self.rcv_wnd / (2 * self.mss)) as u32).max(2).min(max);
        self.quick = self.quick.max(q);
    }

    /// `tcp_event_data_recv`: quickack on the first data and after idling, ATO tracking.
    fn event_data_recv(&mut self, now: Nanos) {
        match self.lrcvtime {
            None => {
                self.incr_quickack(MAX_QUICKACKS);
                self.ato = ATO_MIN;
            }
            Some(last) => {
                let m = now - last;
                if m <= ATO_MIN / 2 {
                    self.ato = self.ato / 2 + ATO_MIN / 2;
                } else if m < self.ato {
                    self.ato = (self.ato / 2 + m).min(self.rto());
                } else if m > self.rto() {
                    self.incr_quickack(MAX_QUICKACKS);
                }
            }
        }
        self.lrcvtime = Some(now);
    }

    /// `__tcp_select_window` then `tcp_select_window`'s no-shrink rule.
    fn select_window(&self) -> u64 {
        let full = self.window_clamp.min(win_from_space(self.rcvbuf));
        let free = win_from_space(self.rcvbuf)
            .saturating_sub(self.ooo_bytes)
            .min(full)
            .min(self.rcv_ssthresh);
        let new = free.div_ceil(WSCALE_UNIT) * WSCALE_UNIT;
        let cur = (self.rcv_wup + self.rcv_wnd).saturating_sub(self.rcv_nxt);
        new.max(cur.div_ceil(WSCALE_UNIT) * WSCALE_UNIT)
    }

    /// `tcp_grow_window`: in-order and out-of-order data grow rcv_ssthresh by 2 MSS.
    fn grow_window(&mut self) {
        if self.rcv_ssthresh < self.window_clamp {
            self.rcv_ssthresh = (self.rcv_ssthresh + 2 * self.mss).min(self.window_clamp);
        }
    }

    /// `tcp_rcv_rtt_measure`: the time one window takes to arrive; the minimum is kept.
    fn rcv_rtt_measure(&mut self, now: Nanos) {
        if let Some(t) = self.rtt_time {
            if self.rcv_nxt < self.rtt_seq {
                return;
            }
            let sample = (now - t).max(1);
            self.rcv_rtt = if self.rcv_rtt == 0 {
                sample
            } else {
                self.rcv_rtt.min(sample)
            };
        }
        self.rtt_seq = self.rcv_nxt + self.rcv_wnd;
        self.rtt_time = Some(now);
    }

    /// `tcp_rcv_space_adjust`, after the application read what arrived in order.
    fn rcv_space_adjust(&mut self, now: Nanos) {
        if self.rcv_rtt == 0 || now - self.space_time < self.rcv_rtt {
            return;
        }
        let copied = self.rcv_nxt - self.space_seq;
        if copied > self.space {
            let mut rcvwin = 2 * copied + 16 * self.mss;
            let grow = rcvwin * (copied - self.space) / self.space;
            rcvwin += 2 * grow;
            let rcvbuf = space_from_win(rcvwin).min(self.cfg.rmem[2]);
            if rcvbuf > self.rcvbuf {
                self.rcvbuf = rcvbuf;
                self.window_clamp = win_from_space(rcvbuf);
            }
            self.space = copied;
        }
        self.space_seq = self.rcv_nxt;
        self.space_time = now;
    }

    /// `tcp_dsack_set`: one DSACK block, the first one reported.
    fn dsack_set(&mut self, s: u64, e: u64) {
        if self.dsack.is_none() {
            self.dsack = Some((s, e));
        }
    }

    /// A new out-of-order range: the block it touches is extended and moved to the
    /// front (merging others it now reaches), else a new block goes in front.
    fn sack_add(&mut self, s: u64, e: u64) {
        let (mut s, mut e) = (s, e);
        self.sacks.retain(|&(a, b)| {
            if a <= e && s <= b {
                s = s.min(a);
                e = e.max(b);
                false
            } else {
                true
            }
        });
        self.sacks.insert(0, (s, e));
        self.sacks.truncate(NUM_SACKS);
    }

    fn on_data(&mut self, now: Nanos, seq: u64, len: u32, tsval: u32) {
        let end = seq + len as u64;
        if len == 0 {
            return;
        }
        if seq <= self.rcv_wup {
            self.ts_recent = tsval;
        }
        if end <= self.rcv_nxt {
            // A retransmission of delivered data: DSACK and quickack.
            self.dsack_set(seq, end);
            self.incr_quickack(MAX_QUICKACKS);
            self.ack_now = true;
            return;
        }
        if seq <= self.rcv_nxt {
            if seq < self.rcv_nxt {
                self.dsack_set(seq, self.rcv_nxt);
            }
            self.event_data_recv(now);
            self.rcv_nxt = end;
            self.rcv_rtt_measure(now);
            let had_ooo = !self.ooo.is_empty();
            while let Some((&a, &b)) = self.ooo.first_key_value() {
                if a > self.rcv_nxt {
                    break;
                }
                self.ooo.remove(&a);
                self.ooo_bytes -= b - a;
                if b > self.rcv_nxt {
                    self.rcv_nxt = b;
                }
            }
            let nxt = self.rcv_nxt;
            self.sacks.retain(|&(a, _)| a > nxt);
            if had_ooo && self.ooo.is_empty() {
                // RFC 5681 §4.2: the ACK that fills the gap goes at once.
                self.ack_now = true;
            }
            self.grow_window();
            self.rcv_space_adjust(now);
            if self.rcv_nxt >= self.cfg.bytes {
                self.done_at.get_or_insert(now);
            }
        } else {
            self.queue_ofo(seq, end);
        }
        self.ack_snd_check(now);
    }

    /// `tcp_data_queue_ofo`: queue (merging), or DSACK a segment already held.
    fn queue_ofo(&mut self, seq: u64, end: u64) {
        if let Some((_, &b)) = self.ooo.range(..=seq).next_back() {
            if b >= end {
                self.dsack_set(seq, end);
                return;
            }
        }
        let (mut s, mut e) = (seq, end);
        let overlapping: Vec<(u64, u64)> = self
            .ooo
            .range(..=end)
            .filter(|&(_, &b)| b >= seq)
            .map(|(&a, &b)| (a, b))
            .collect();
        for (a, b) in overlapping {
            self.ooo.remove(&a);
            self.ooo_bytes -= b - a;
            s = s.min(a);
            e = e.max(b);
        }
        self.ooo.insert(s, e);
        self.ooo_bytes += e - s;
        self.sack_add(seq, end);
        self.grow_window();
    }

    /// `__tcp_ack_snd_check`.
    fn ack_snd_check(&mut self, now: Nanos) {
        if self.rcv_nxt - self.rcv_wup > self.mss || self.quick > 0 || self.ack_now {
            self.ack_now = true;
            return;
        }
        if self.ooo.is_empty() {
            self.send_delayed_ack(now);
            return;
        }
        if self.compressed_ack >= COMP_SACK_NR {
            self.ack_now = true;
            return;
        }
        if self.compressed_ack_rcv_nxt != self.rcv_nxt {
            self.compressed_ack_rcv_nxt = self.rcv_nxt;
            self.dup_ack_counter = 0;
        }
        if self.dup_ack_counter < FASTRETRANS_THRESH {
            self.dup_ack_counter += 1;
            self.ack_now = true;
            return;
        }
        self.compressed_ack += 1;
        if self.comp.is_none() {
            // Linux: the receiver RTT, or the SRTT if smaller; none yet gives no delay.
            let mut rtt = self.rcv_rtt;
            if let Some(s) = self.cfg.handshake_rtt {
                if s > 0 && s < rtt {
                    rtt = s;
                }
            }
            self.comp = Some(now + COMP_SACK_DELAY.min(rtt / 20));
        }
    }

    /// `tcp_send_delayed_ack`.
    fn send_delayed_ack(&mut self, now: Nanos) {
        let mut ato = self.ato;
        if ato > ATO_MIN {
            let mut max_ato = 500 * NS_PER_MS;
            if let Some(s) = self.cfg.handshake_rtt {
                max_ato = max_ato.min(s.max(ATO_MIN));
            }
            ato = ato.min(max_ato);
        }
        let mut deadline = now + jiffies(ato);
        if let Some(t) = self.delack {
            if t <= now + ato / 4 {
                self.ack_now = true;
                return;
            }
            deadline = deadline.min(t);
        }
        self.delack = Some(deadline);
    }

    fn build_ack(&mut self) -> (Segment, usize) {
        let window = self.select_window();
        let mut sack = Ranges::default();
        if let Some((s, e)) = self.dsack.take() {
            sack.push(s, e);
        }
        for &(s, e) in &self.sacks {
            if sack.len() == SACKS_SENT {
                break;
            }
            sack.push(s, e);
        }
        self.rcv_wup = self.rcv_nxt;
        self.rcv_wnd = window;
        self.ack_now = false;
        self.delack = None;
        self.comp = None;
        self.compressed_ack = 0;
        if self.quick > 0 {
            self.quick -= 1;
            if self.quick == 0 {
                self.ato = ATO_MIN;
            }
        }
        self.acks_sent += 1;
        let opt = if sack.is_empty() {
            0
        } else {
            4 + 8 * sack.len()
        };
        (
            Segment::TcpAck {
                flow: self.cfg.flow,
                ack: self.rcv_nxt,
                window: window.min(u32::MAX as u64) as u32,
                tsecr: self.ts_recent,
                sack: Box::new(sack),
                ece: self.ece,
            },
            HEADERS + opt,
        )
    }
}

impl Endpoint for TcpReceiver {
    fn poll_transmit(&mut self, _now: Nanos) -> Option<(Segment, usize)> {
        if self.ack_now {
            Some(self.build_ack())
        } else {
            None
        }
    }

    fn on_segment(&mut self, now: Nanos, seg: &Segment) {
        if let Segment::TcpData {
            flow,
            seq,
            len,
            tsval,
            ecn,
            cwr,
        } = *seg
        {
            if flow == self.cfg.flow {
                self.ecn_check(ecn, cwr);
                self.on_data(now, seq, len, tsval);
            }
        }
    }

    fn next_deadline(&self) -> Option<Nanos> {
        match (self.delack, self.comp) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn on_timeout(&mut self, now: Nanos) {
        if self.delack.is_some_and(|t| t <= now) {
            // `tcp_delack_timer_handler`: the timer was needed, so ATO inflates.
            self.delack = None;
            self.ato = (2 * self.ato).min(self.rto());
            self.ack_now = true;
        }
        if self.comp.is_some_and(|t| t <= now) {
            self.comp = None;
            self.ack_now = true;
        }
    }

    fn progress(&self) -> Progress {
        Progress {
            bytes: self.rcv_nxt.min(self.cfg.bytes),
            done_at: self.done_at,
            lost: 0,
            sent: 0,
            ce_marks: self.ce_marks,
            ecn_reductions: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = NS_PER_MS;

    fn data(seq: u64, tsval: u32) -> Segment {
        Segment::TcpData {
            flow: 0,
            seq,
            len: 1448,
            tsval,
            ecn: 0,
            cwr: false,
        }
    }

    fn ack_of(s: &Segment) -> (u64, Vec<(u64, u64)>, u32) {
        match s {
            Segment::TcpAck {
                ack, sack, tsecr, ..
            } => (*ack, sack.as_slice().to_vec(), *tsecr),
            _ => panic!("not an ACK"),
        }
    }

    /// A receiver past its quickack phase (16 segments ACKed one by one).
    fn warmed(bytes: u64) -> (TcpReceiver, Nanos, u64) {
        let mut cfg = RcvConfig::new(0, bytes);
        cfg.handshake_rtt = Some(100 * MS);
        let mut r = TcpReceiver::new(cfg);
        let mut now = 0;
        let mut seq = 0;
        for i in 0..16 {
            r.on_segment(now, &data(seq, i));
            assert!(r.poll_transmit(now).is_some(), "quickack {i}");
            seq += 1448;
            now += MS;
        }
        (r, now, seq)
    }

    #[test]
    fn quickack_then_every_second_segment_then_the_40ms_timer() {
        let (mut r, mut now, mut seq) = warmed(1 << 30);
        assert_eq!(r.acks_sent(), 16);
        // Segment 17: no ACK; the timer is set 40 ms out.
        r.on_segment(now, &data(seq, 100));
        assert!(r.poll_transmit(now).is_none());
        assert_eq!(r.next_deadline(), Some(now + 40 * MS));
        seq += 1448;
        now += MS;
        // Segment 18: two full segments unacknowledged -> ACK now.
        r.on_segment(now, &data(seq, 101));
        let (ack, _, tsecr) = ack_of(&r.poll_transmit(now).expect("ACK every 2nd").0);
        assert_eq!(ack, 18 * 1448);
        assert_eq!(tsecr, 100, "the echo is the first unacknowledged segment's");
        assert_eq!(r.next_deadline(), None);
        // Segment 19 alone: ACKed by the timer 40 ms later.
        seq += 1448;
        now += MS;
        r.on_segment(now, &data(seq, 102));
        assert!(r.poll_transmit(now).is_none());
        let t = r.next_deadline().unwrap();
        assert_eq!(t, now + 40 * MS);
        r.on_timeout(t - 1);
        assert!(r.poll_transmit(t - 1).is_none());
        r.on_timeout(t);
        let (ack, _, _) = ack_of(&r.poll_transmit(t).unwrap().0);
        assert_eq!(ack, 19 * 1448);
    }

    #[test]
    fn out_of_order_gets_an_immediate_ack_with_the_newest_block_first() {
        let (mut r, now, seq) = warmed(1 << 30);
        // A hole at `seq`; segments 2 and 4 after it arrive.
        r.on_segment(now, &data(seq + 1448, 1));
        let (ack, sack, _) = ack_of(&r.poll_transmit(now).expect("immediate").0);
        assert_eq!(ack, seq);
        assert_eq!(sack, vec![(seq + 1448, seq + 2 * 1448)]);
        r.on_segment(now, &data(seq + 3 * 1448, 2));
        let (_, sack, _) = ack_of(&r.poll_transmit(now).expect("immediate").0);
        assert_eq!(
            sack,
            vec![
                (seq + 3 * 1448, seq + 4 * 1448),
                (seq + 1448, seq + 2 * 1448)
            ]
        );
        // Segment 3 joins both blocks: one block, in front.
        r.on_segment(now, &data(seq + 2 * 1448, 3));
        let (_, sack, _) = ack_of(&r.poll_transmit(now).expect("immediate").0);
        assert_eq!(sack, vec![(seq + 1448, seq + 4 * 1448)]);
        // The 4th out-of-order ACK at the same point is compressed (1 ms).
        r.on_segment(now, &data(seq + 5 * 1448, 4));
        assert!(r.poll_transmit(now).is_none());
        assert_eq!(r.next_deadline(), Some(now + MS));
        // The hole filled: ACK at once, no blocks left but the one beyond.
        r.on_segment(now, &data(seq, 5));
        let (ack, sack, _) = ack_of(&r.poll_transmit(now).expect("immediate").0);
        assert_eq!(ack, seq + 4 * 1448);
        assert_eq!(sack, vec![(seq + 5 * 1448, seq + 6 * 1448)]);
    }

    #[test]
    fn a_duplicate_gives_a_dsack_once() {
        let (mut r, now, seq) = warmed(1 << 30);
        r.on_segment(now, &data(seq - 2 * 1448, 1));
        let (ack, sack, _) = ack_of(&r.poll_transmit(now).expect("immediate").0);
        assert_eq!(ack, seq);
        assert_eq!(sack, vec![(seq - 2 * 1448, seq - 1448)]);
        // A duplicate of held out-of-order data: DSACK first, then the SACK block.
        r.on_segment(now, &data(seq + 1448, 2));
        r.poll_transmit(now).unwrap();
        r.on_segment(now, &data(seq + 1448, 3));
        let (_, sack, _) = ack_of(&r.poll_transmit(now).expect("immediate").0);
        assert_eq!(
            sack,
            vec![(seq + 1448, seq + 2 * 1448), (seq + 1448, seq + 2 * 1448)]
        );
        r.on_segment(now, &data(seq + 2 * 1448, 4));
        let (_, sack, _) = ack_of(&r.poll_transmit(now).expect("immediate").0);
        assert_eq!(sack, vec![(seq + 1448, seq + 3 * 1448)], "DSACK sent once");
    }

    #[test]
    fn the_window_starts_at_half_of_tcp_rmem_and_autotuning_grows_it() {
        let mut cfg = RcvConfig::new(0, 1 << 30);
        cfg.handshake_rtt = Some(50 * MS);
        let mut r = TcpReceiver::new(cfg);
        // 131072 / 2 = 65536 rounded down to segments (45 × 1448 = 65160), in 1024s.
        assert_eq!(r.window(), 65536);
        // 200 segments in 100 ms: more than 10 segments per receiver RTT (50 ms).
        let mut seq = 0;
        for i in 0..200u64 {
            r.on_segment(i * MS / 2, &data(seq, i as u32));
            r.poll_transmit(i * MS / 2);
            seq += 1448;
        }
        assert!(r.rcvbuf() > 131072, "grown: {}", r.rcvbuf());
        assert!(r.window() > 65536);
        assert!(r.rcvbuf() <= 6291456);
    }
}
