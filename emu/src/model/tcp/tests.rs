//! Sender and receiver against each other through a tiny link: a fixed one-way delay,
//! an optional per-packet serialization time, drops and extra delays for chosen
//! segments. Times in the comments are hand-computed from the rules in `sender.rs`.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use super::*;
use crate::base::packet::{CE, ECT0};
use crate::base::time::{Nanos, NS_PER_MS};
use crate::model::cc::{Acked, Controller};
use crate::model::rtt::RttEstimator;
use crate::model::wire::Segment;
use crate::model::Endpoint;

const MS: Nanos = NS_PER_MS;
const MSS: u64 = DEFAULT_MSS as u64;

/// A fixed window (segments), optionally paced: the pacing path is the one Linux takes
/// for BBR, without PRR.
struct Fixed {
    w: u64,
    pace: Option<f64>,
}

impl Controller for Fixed {
    fn on_sent(&mut self, _: Nanos, _: u64, _: u64) {}
    fn on_acked(&mut self, _: Nanos, _: &Acked, _: &RttEstimator, _: u64) {}
    fn on_lost(&mut self, _: Nanos, _: Nanos, _: u64, _: u64) {}
    fn on_persistent_congestion(&mut self, _: Nanos) {}
    fn window(&self) -> u64 {
        self.w * MSS
    }
    fn pacing_rate(&self) -> Option<f64> {
        self.pace
    }
    fn in_slow_start(&self) -> bool {
        false
    }
}

/// Linux Reno in bytes: slow start, +1 MSS per window in avoidance, half on loss once
/// per episode, 1 MSS after an RTO.
struct Reno {
    cwnd: u64,
    ssthresh: u64,
    recovery_start: Option<Nanos>,
    acked: u64,
}

impl Reno {
    fn new() -> Self {
        Reno {
            cwnd: INIT_CWND * MSS,
            ssthresh: u64::MAX,
            recovery_start: None,
            acked: 0,
        }
    }
}

impl Controller for Reno {
    fn on_sent(&mut self, _: Nanos, _: u64, _: u64) {}
    fn on_acked(&mut self, _: Nanos, a: &Acked, _: &RttEstimator, _: u64) {
        if self.cwnd < self.ssthresh {
            self.cwnd += a.bytes;
        } else {
            self.acked += a.bytes;
            if self.acked >= self.cwnd {
                self.acked -= self.cwnd;
                self.cwnd += MSS;
            }
        }
    }
    fn on_lost(&mut self, now: Nanos, newest_sent_at: Nanos, _: u64, _: u64) {
        if self.recovery_start.is_some_and(|t| newest_sent_at <= t) {
            return;
        }
        self.recovery_start = Some(now);
        self.ssthresh = (self.cwnd / 2).max(2 * MSS);
        self.cwnd = self.ssthresh;
    }
    fn on_persistent_congestion(&mut self, _: Nanos) {
        self.cwnd = MSS;
    }
    fn window(&self) -> u64 {
        self.cwnd
    }
    fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }
}

/// One direction: departs after the packets before it (serialization `gap`), arrives
/// `delay` later (plus any extra for the segment's first transmission).
#[derive(Default)]
struct Link {
    delay: Nanos,
    gap: Nanos,
    busy: Nanos,
    drop_until: Nanos,
    /// Drop-tail: packets waiting beyond this are dropped (0: no limit).
    queue: u64,
    drops: u64,
    drop_first: Vec<u64>,
    /// Sequence numbers whose first transmission an AQM marks CE, if ECN-capable.
    mark_first: Vec<u64>,
    extra_first: Vec<(u64, Nanos)>,
    seen: HashMap<u64, u32>,
}

impl Link {
    fn new(delay: Nanos) -> Self {
        Link {
            delay,
            ..Default::default()
        }
    }

    /// When the segment arrives, or None if dropped.
    fn carry(&mut self, now: Nanos, seg: &Segment) -> Option<Nanos> {
        if self.queue > 0 && self.busy > now && (self.busy - now) / self.gap >= self.queue {
            self.drops += 1;
            return None;
        }
        let depart = self.busy.max(now) + self.gap;
        self.busy = depart;
        let mut extra = 0;
        if let Segment::TcpData { seq, .. } = *seg {
            let n = self.seen.entry(seq).or_insert(0);
            *n += 1;
            let first = *n == 1;
            if now < self.drop_until || (first && self.drop_first.contains(&seq)) {
                return None;
            }
            if first {
                extra = self
                    .extra_first
                    .iter()
                    .find(|(s, _)| *s == seq)
                    .map_or(0, |e| e.1);
            }
        }
        Some(depart + self.delay + extra)
    }
}

#[derive(Default, Debug)]
struct Trace {
    /// (time, segment index) of every data transmission.
    sends: Vec<(Nanos, u64)>,
    /// The most bytes sent but not cumulatively ACKed at any time.
    max_outstanding: u64,
    /// Data segments sent ECN-capable, and with CWR; ACKs with ECE; each ACK's ECE flag in
    /// order.
    ect: u64,
    cwr: u64,
    ece_acks: u64,
    ece_seq: Vec<bool>,
}

impl Trace {
    fn times_of(&self, idx: u64) -> Vec<Nanos> {
        self.sends
            .iter()
            .filter(|s| s.1 == idx)
            .map(|s| s.0)
            .collect()
    }
}

fn run(
    snd: &mut TcpSender,
    rcv: &mut TcpReceiver,
    down: &mut Link,
    up: &mut Link,
    until: Nanos,
) -> Trace {
    let mut trace = Trace::default();
    let mut heap: BinaryHeap<Reverse<(Nanos, u64, bool)>> = BinaryHeap::new();
    let mut segs: HashMap<u64, Segment> = HashMap::new();
    let mut order = 0u64;
    let mut now = 0;
    let mut highest_end = 0u64;
    for _ in 0..1_000_000 {
        while let Some((mut seg, _)) = snd.poll_transmit(now) {
            if let Segment::TcpData {
                seq,
                ref mut ecn,
                cwr,
                ..
            } = seg
            {
                trace.ect += (*ecn == ECT0) as u64;
                trace.cwr += cwr as u64;
                let first = !down.seen.contains_key(&seq);
                if *ecn == ECT0 && first && down.mark_first.contains(&seq) {
                    *ecn = CE;
                }
            }
            if let Segment::TcpData { seq, len, .. } = seg {
                trace.sends.push((now, seq / MSS));
                highest_end = highest_end.max(seq + len as u64);
                let out = highest_end - snd.progress().bytes;
                trace.max_outstanding = trace.max_outstanding.max(out);
            }
            if let Some(t) = down.carry(now, &seg) {
                heap.push(Reverse((t, order, true)));
                segs.insert(order, seg);
                order += 1;
            }
        }
        while let Some((seg, _)) = rcv.poll_transmit(now) {
            if let Some(t) = up.carry(now, &seg) {
                heap.push(Reverse((t, order, false)));
                segs.insert(order, seg);
                order += 1;
            }
        }
        let next = [
            heap.peek().map(|r| r.0 .0),
            snd.next_deadline(),
            rcv.next_deadline(),
        ]
        .into_iter()
        .flatten()
        .min();
        let Some(next) = next else { break };
        if next > until {
            break;
        }
        now = now.max(next);
        while heap.peek().is_some_and(|r| r.0 .0 <= now) {
            let Reverse((_, o, to_rcv)) = heap.pop().unwrap();
            let seg = segs.remove(&o).unwrap();
            if to_rcv {
                rcv.on_segment(now, &seg);
                while let Some((ack, _)) = rcv.poll_transmit(now) {
                    if let Segment::TcpAck { ece, .. } = ack {
                        trace.ece_acks += ece as u64;
                        trace.ece_seq.push(ece);
                    }
                    if let Some(t) = up.carry(now, &ack) {
                        heap.push(Reverse((t, order, false)));
                        segs.insert(order, ack);
                        order += 1;
                    }
                }
            } else {
                snd.on_segment(now, &seg);
            }
        }
        snd.on_timeout(now);
        rcv.on_timeout(now);
    }
    trace
}

fn endpoints(
    segs: u64,
    cc: Box<dyn Controller>,
    rcv_cfg: impl FnOnce(&mut RcvConfig),
) -> (TcpSender, TcpReceiver) {
    endpoints_ecn(segs, cc, rcv_cfg, false)
}

fn endpoints_ecn(
    segs: u64,
    cc: Box<dyn Controller>,
    rcv_cfg: impl FnOnce(&mut RcvConfig),
    ecn: bool,
) -> (TcpSender, TcpReceiver) {
    let mut s = SndConfig::new(0, segs * MSS, 0);
    s.handshake_rtt = Some(100 * MS);
    s.ecn = ecn;
    let mut r = RcvConfig::new(0, segs * MSS);
    r.handshake_rtt = Some(100 * MS);
    rcv_cfg(&mut r);
    s.peer_window = TcpReceiver::new(r).window();
    (TcpSender::new(s, cc), TcpReceiver::new(r))
}

/// 150 kB/s pacing: one 1500-byte packet every 10 ms, so every segment's RTT is the
/// path's 100 ms and min_rtt/4 = 25 ms is RACK's window.
fn paced_run(segs: u64, extra: Vec<(u64, Nanos)>) -> (TcpSender, TcpReceiver, Trace) {
    let cc = Box::new(Fixed {
        w: 30,
        pace: Some(150_000.0),
    });
    let (mut snd, mut rcv) = endpoints(segs, cc, |_| {});
    let mut down = Link::new(50 * MS);
    down.extra_first = extra.into_iter().map(|(i, d)| (i * MSS, d)).collect();
    let mut up = Link::new(50 * MS);
    let tr = run(&mut snd, &mut rcv, &mut down, &mut up, 10_000 * MS);
    (snd, rcv, tr)
}

#[test]
fn a_clean_paced_transfer_has_no_loss_and_ends_one_rtt_after_the_last_send() {
    let (snd, rcv, tr) = paced_run(40, vec![]);
    assert_eq!(snd.progress().lost, 0);
    assert_eq!(snd.progress().sent, 40);
    assert_eq!(tr.times_of(39), vec![390 * MS]);
    // The last segment arrives at 440 ms; it is the 40th, past quickack, but the 2nd
    // since the last ACK: ACKed at once, back at 490 ms.
    assert_eq!(rcv.progress().done_at, Some(440 * MS));
    assert_eq!(snd.progress().done_at, Some(490 * MS));
    assert_eq!(snd.reo_wnd(), 25 * MS);
}

#[test]
fn reordering_within_the_rack_window_is_no_loss_and_beyond_it_is() {
    // Segment 5 15 ms late: segment 6 overtakes it (one SACK); its ACK comes at
    // 50 + 100 + 15 = 165 ms, before 5's deadline 50 + 100 + 25 = 175 ms.
    let (snd, _, tr) = paced_run(100, vec![(5, 15 * MS)]);
    assert_eq!(snd.progress().lost, 0);
    assert_eq!(tr.times_of(5).len(), 1);
    // Also segment 30 45 ms late: reordering was seen (5), so the 25 ms window applies
    // even with 3+ SACKs; the SACK of 33 at 430 ms is past 30's deadline 425 ms.
    let (snd, _, tr) = paced_run(100, vec![(5, 15 * MS), (30, 45 * MS)]);
    assert_eq!(snd.progress().lost, 1);
    assert_eq!(tr.times_of(30), vec![300 * MS, 430 * MS]);
    // 18 ms late (segment 31 overtakes, 30's ACK at 418 ms) stays within the window.
    let (snd, _, _) = paced_run(100, vec![(5, 15 * MS), (30, 18 * MS)]);
    assert_eq!(snd.progress().lost, 0);
    // Without earlier reordering, DupThresh: three SACKs (31-33, the third at 430 ms)
    // make 30 lost at once, here at the same time as the window would.
    let (snd, _, tr) = paced_run(100, vec![(30, 45 * MS)]);
    assert_eq!(snd.progress().lost, 1);
    assert_eq!(tr.times_of(30), vec![300 * MS, 430 * MS]);
}

#[test]
fn after_a_dsack_the_window_grows_so_the_same_depth_is_no_loss() {
    // 30's spurious retransmission (430 ms) arrives at 480 ms; the receiver DSACKs it;
    // at 530 ms the window grows to 2 × 25 = 50 ms. Segment 60, 45 ms late, is then
    // within it: no second retransmission.
    let (snd, _, tr) = paced_run(100, vec![(5, 15 * MS), (30, 45 * MS), (60, 45 * MS)]);
    assert_eq!(snd.progress().lost, 1);
    assert_eq!(tr.times_of(60).len(), 1);
    assert_eq!(snd.reo_wnd(), 50 * MS);
    // The control: without the DSACK round (no loss at 30) 60 is lost.
    let (snd, _, tr) = paced_run(100, vec![(5, 15 * MS), (60, 45 * MS)]);
    assert_eq!(snd.progress().lost, 1);
    assert_eq!(tr.times_of(60).len(), 2);
}

#[test]
fn one_lost_segment_is_retransmitted_once_after_racks_timer() {
    // Ten segments at 0 ms, all arriving at 50 ms; 8 is dropped. ACKs of 0-7 at 100 ms,
    // then 9's SACK: 8's deadline is 0 + 100 + 25 = 125 ms, so the REO timer is set to
    // 100 + jiffies(25) + 2 jiffies = 136 ms. The retransmission arrives at 186 ms and
    // its ACK completes the transfer at 236 ms.
    let (mut snd, mut rcv) = endpoints(10, Box::new(Reno::new()), |_| {});
    let mut down = Link::new(50 * MS);
    down.drop_first = vec![8 * MSS];
    let mut up = Link::new(50 * MS);
    let tr = run(&mut snd, &mut rcv, &mut down, &mut up, 10_000 * MS);
    assert_eq!(tr.times_of(8), vec![0, 136 * MS]);
    assert_eq!(snd.progress().lost, 1);
    assert_eq!(snd.progress().sent, 11);
    assert_eq!(rcv.progress().done_at, Some(186 * MS));
    assert_eq!(snd.progress().done_at, Some(236 * MS));
    assert_eq!(snd.progress().bytes, 10 * MSS);
    assert_eq!(snd.state(), sender::CaState::Open);
}

#[test]
fn the_rto_fires_with_backoff_when_everything_is_lost() {
    // Handshake RTT 100 ms: RTO = 100 + max(4 × 50, 200) = 300 ms. The TLP fires at
    // jiffies(2 × 100) + 8 = 208 ms (new data: segment 10) and restarts the RTO from
    // there: 508 ms, then 600 ms later (1108), then 1200 ms later (2308), which gets
    // through (drops end at 1200 ms).
    let (mut snd, mut rcv) = endpoints(20, Box::new(Reno::new()), |_| {});
    let mut down = Link::new(50 * MS);
    down.drop_until = 1200 * MS;
    let mut up = Link::new(50 * MS);
    let tr = run(&mut snd, &mut rcv, &mut down, &mut up, 60_000 * MS);
    assert_eq!(tr.times_of(10)[0], 208 * MS, "the loss probe");
    assert_eq!(tr.times_of(0), vec![0, 508 * MS, 1108 * MS, 2308 * MS]);
    assert_eq!(rcv.progress().bytes, 20 * MSS);
    assert!(snd.progress().done_at.is_some());
    // The RTT sample from the echoed timestamp resets the backoff.
    assert_eq!(snd.rto(), (300 * MS, 0));
}

#[test]
fn the_receive_window_limits_the_sender() {
    // tcp_rmem 16 KiB: the window is 8 KiB, five segments; the window (100 segments)
    // would allow far more.
    let small = |r: &mut RcvConfig| r.rmem = [4096, 16384, 16384];
    let (mut snd, mut rcv) = endpoints(100, Box::new(Fixed { w: 100, pace: None }), small);
    assert_eq!(rcv.window(), 8192);
    let mut down = Link::new(50 * MS);
    let mut up = Link::new(50 * MS);
    let tr = run(&mut snd, &mut rcv, &mut down, &mut up, 60_000 * MS);
    assert_eq!(tr.max_outstanding, 5 * MSS);
    // At most five segments per 100 ms round trip: at least 20 rounds.
    let done = snd.progress().done_at.unwrap();
    assert!(done >= 2_000 * MS, "{done}");
    // With the default tcp_rmem the same transfer takes far fewer rounds.
    let (mut snd, mut rcv) = endpoints(100, Box::new(Fixed { w: 100, pace: None }), |_| {});
    let mut down = Link::new(50 * MS);
    let mut up = Link::new(50 * MS);
    let tr = run(&mut snd, &mut rcv, &mut down, &mut up, 60_000 * MS);
    assert!(tr.max_outstanding > 40 * MSS);
    assert!(snd.progress().done_at.unwrap() < 400 * MS);
}

#[test]
fn reno_through_a_drop_tail_bottleneck_completes_near_the_link_rate() {
    // 1 ms per packet (1.5 MB/s), 20 ms each way, a 30-packet queue: slow start
    // overflows it, RACK and PRR repair the burst of losses, later ones too.
    let segs = 3000;
    let (mut snd, mut rcv) = endpoints(segs, Box::new(Reno::new()), |_| {});
    let mut down = Link::new(20 * MS);
    down.gap = MS;
    down.queue = 30;
    down.extra_first = vec![(500 * MSS, 3 * MS), (1500 * MSS, 30 * MS)];
    let mut up = Link::new(20 * MS);
    let tr = run(&mut snd, &mut rcv, &mut down, &mut up, 60_000 * MS);
    let p = snd.progress();
    assert_eq!(rcv.progress().bytes, segs * MSS);
    assert_eq!(p.bytes, segs * MSS);
    assert!(
        down.drops > 0 && p.lost >= down.drops,
        "{} {}",
        down.drops,
        p.lost
    );
    assert_eq!(p.sent, segs + p.lost);
    // Every segment once plus the retransmissions, at 1 ms each, is the least time.
    let done = p.done_at.unwrap();
    assert!(done >= (segs + p.lost) * MS, "{done}");
    assert!(done < (segs * MS) * 10 / 8, "goodput under 80 %: {done}");
    assert_eq!(tr.sends.len() as u64, p.sent);
    assert_eq!(snd.state(), sender::CaState::Open);
}

#[test]
fn a_lost_last_segment_is_repaired_by_the_loss_probe() {
    // Segment 9 of 10 is dropped. At 100 ms the ACK of 8 leaves one segment out and no
    // new data: the probe is due at min(jiffies(2 × 100) + 200, RTO 300) = 300 ms later,
    // and retransmits the last segment; no recovery, no window reduction (the ACK only
    // reaches the probe's end).
    let (mut snd, mut rcv) = endpoints(10, Box::new(Reno::new()), |_| {});
    let mut down = Link::new(50 * MS);
    down.drop_first = vec![9 * MSS];
    let mut up = Link::new(50 * MS);
    let tr = run(&mut snd, &mut rcv, &mut down, &mut up, 10_000 * MS);
    assert_eq!(tr.times_of(9), vec![0, 400 * MS]);
    assert_eq!(snd.progress().lost, 1);
    assert_eq!(snd.progress().done_at, Some(500 * MS));
    assert_eq!(snd.state(), sender::CaState::Open);
}

#[test]
fn the_mss_clamp_and_jiffies() {
    assert_eq!(mss_from_clamp(1280), 1268);
    assert_eq!(mss_from_clamp(1460), 1448);
    assert_eq!(mss_from_clamp(9000), 1448);
    assert_eq!(jiffies(25 * MS), 28 * MS);
    assert_eq!(jiffies(200 * MS), 200 * MS);
}

/// Reno over a 1 ms-per-packet link, 20 ms each way, with ECN negotiated or not, an AQM
/// marking the first transmissions of `marks` (segment indices).
fn ecn_run(ecn: bool, marks: &[u64]) -> (TcpSender, TcpReceiver, Trace) {
    ecn_run_with(Box::new(Reno::new()), ecn, marks)
}

fn ecn_run_with(
    cc: Box<dyn Controller>,
    ecn: bool,
    marks: &[u64],
) -> (TcpSender, TcpReceiver, Trace) {
    let segs = 600;
    let (mut snd, mut rcv) = endpoints_ecn(segs, cc, |_| {}, ecn);
    let mut down = Link::new(20 * MS);
    down.gap = MS;
    down.mark_first = marks.iter().map(|i| i * MSS).collect();
    let mut up = Link::new(20 * MS);
    let tr = run(&mut snd, &mut rcv, &mut down, &mut up, 60_000 * MS);
    assert_eq!(rcv.progress().bytes, segs * MSS);
    (snd, rcv, tr)
}

#[test]
fn a_ce_mark_reduces_the_window_once_without_a_retransmission() {
    let (snd, rcv, tr) = ecn_run(true, &[200]);
    let p = snd.progress();
    assert_eq!(tr.ect, p.sent, "every new segment ECT(0), none resent");
    assert_eq!(
        (p.lost, p.ecn_reductions, rcv.progress().ce_marks),
        (0, 1, 1)
    );
    // The echo lasts until the sender's CWR arrives: a run of ECE ACKs, then none.
    assert_eq!(tr.cwr, 1);
    let first = tr.ece_seq.iter().position(|&e| e).unwrap();
    let n = tr.ece_seq[first..].iter().take_while(|&&e| e).count();
    assert_eq!(n as u64, tr.ece_acks, "one echo episode");
    assert!(!tr.ece_seq[first + n..].is_empty());
    assert_eq!(snd.state(), sender::CaState::Open);
    // Reno halved its window: the run without the mark keeps a larger one.
    let (clean, _, _) = ecn_run(true, &[]);
    assert_eq!(clean.progress().ecn_reductions, 0);
    assert!(snd.cwnd() < clean.cwnd(), "{} {}", snd.cwnd(), clean.cwnd());
}

#[test]
fn marks_within_one_round_reduce_once_and_a_later_round_again() {
    let (snd, rcv, _) = ecn_run(true, &[200, 201, 205]);
    assert_eq!(
        (snd.progress().ecn_reductions, rcv.progress().ce_marks),
        (1, 3)
    );
    // A fixed 30-segment window: a round is 30 segments, so 400 is rounds after 200.
    let (snd, _, tr) = ecn_run_with(Box::new(Fixed { w: 30, pace: None }), true, &[200, 400]);
    assert_eq!(
        (snd.progress().ecn_reductions, tr.cwr, snd.progress().lost),
        (2, 2, 0)
    );
}

#[test]
fn without_ecn_nothing_is_ecn_capable_and_nothing_is_marked() {
    let (snd, rcv, tr) = ecn_run(false, &[200]);
    assert_eq!((tr.ect, tr.cwr, tr.ece_acks), (0, 0, 0));
    assert_eq!(
        (snd.progress().ecn_reductions, rcv.progress().ce_marks),
        (0, 0)
    );
}
