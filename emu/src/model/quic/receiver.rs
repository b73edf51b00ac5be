//! The client of a modelled QUIC download, as aioquic 1.7.2 behaves
//! (aioquic/quic/connection.py): it opens the connection, sends the request once the
//! server's first flight is in, and acknowledges.
//!
//! What it reproduces: an ack-eliciting packet arms the ACK timer 1 ms ahead
//! (`_ack_delay = K_GRANULARITY`) unless it is armed already, so every packet within a
//! millisecond shares one ACK; the ACK reports every received range, highest first, the
//! time since the largest arrived as its delay, and at most 64 ranges (aioquic drops the
//! lowest, `MAX_ACK_RANGES`; the segment carries the newest 32, below which the server
//! has nothing left to learn); MAX_DATA doubles when more than half of it is used. The
//! Initial and the request are sent again after 2 × initial RTT, doubling, until the
//! server answers.

use super::{varint_len, QuicConfig, RangeSet, IP_UDP, PACKET_OVERHEAD};
use crate::base::time::{Nanos, NS_PER_MS};
use crate::model::wire::{Handshake, Ranges, Segment, MAX_RANGES};
use crate::model::{Endpoint, Progress};

/// aioquic's receiver-side ACK delay (K_GRANULARITY).
const ACK_DELAY: Nanos = NS_PER_MS;
/// aioquic's MAX_ACK_RANGES.
const MAX_ACK_RANGES: usize = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// Before `start`.
    Idle,
    /// Initial sent, waiting for the server's flight.
    Initial,
    /// Request sent, waiting for the first stream data.
    Request,
    Receiving,
}

pub struct QuicReceiver {
    cfg: QuicConfig,
    step: Step,
    /// When the Initial or the request goes (again).
    resend_at: Option<Nanos>,
    resend_backoff: u32,
    ack_queue: RangeSet,
    largest_received: Option<u64>,
    largest_received_time: Nanos,
    ack_at: Option<Nanos>,
    stream: RangeSet,
    highest_offset: u64,
    max_data: u64,
    done_at: Option<Nanos>,
    packets: u64,
}

impl QuicReceiver {
    pub fn new(cfg: QuicConfig) -> Self {
        QuicReceiver {
            max_data: cfg.flow_window,
            resend_at: Some(cfg.start),
            cfg,
            step: Step::Idle,
            resend_backoff: 0,
            ack_queue: RangeSet::default(),
            largest_received: None,
            largest_received_time: 0,
            ack_at: None,
            stream: RangeSet::default(),
            highest_offset: 0,
            done_at: None,
            packets: 0,
        }
    }

    fn delivered(&self) -> u64 {
        self.stream.prefix_end(0).min(self.cfg.size)
    }

    fn next_resend(&mut self, now: Nanos) {
        self.resend_at = Some(now + 2 * self.cfg.initial_rtt * (1 << self.resend_backoff.min(16)));
        self.resend_backoff += 1;
    }

    fn ack(&mut self, now: Nanos) -> (Segment, usize) {
        let mut ranges = Ranges::default();
        for &(lo, hi) in self.ack_queue.ranges().iter().rev().take(MAX_RANGES) {
            ranges.push(lo, hi);
        }
        let largest = self.largest_received.unwrap_or(0);
        let delay = now.saturating_sub(self.largest_received_time);
        // aioquic: ACK frame (type, largest, delay >> 3 in µs, range count, first range, then
        // gap and length per range) and a MAX_DATA frame.
        let mut frame = 1
            + varint_len(largest)
            + varint_len((delay / 1_000) >> 3)
            + varint_len(ranges.len() as u64)
            + 1;
        for w in ranges.as_slice().windows(2) {
            frame += varint_len(w[0].0 - w[1].1) + varint_len(w[1].1 - w[1].0);
        }
        frame += 1 + varint_len(self.max_data);
        self.ack_at = None;
        let seg = Segment::QuicAck {
            flow: self.cfg.flow,
            largest,
            delay_us: (delay / 1_000).min(u32::MAX as u64) as u32,
            max_data: self.max_data,
            ranges: Box::new(ranges),
        };
        (seg, IP_UDP + PACKET_OVERHEAD + frame)
    }

    fn on_data(&mut self, now: Nanos, pn: u64, offset: u64, len: u32) {
        if self.ack_queue.contains(pn) {
            return; // aioquic discards a duplicate packet
        }
        self.packets += 1;
        if self.largest_received.is_none_or(|l| pn > l) {
            self.largest_received = Some(pn);
            self.largest_received_time = now;
        }
        self.ack_queue.insert(pn, pn);
        if self.ack_queue.len() > MAX_ACK_RANGES {
            self.ack_queue.shift();
        }
        if self.ack_at.is_none() {
            self.ack_at = Some(now + ACK_DELAY);
        }
        if len > 0 {
            let end = offset + len as u64;
            self.stream.insert(offset, end - 1);
            self.highest_offset = self.highest_offset.max(end);
            if self.highest_offset * 2 > self.max_data {
                self.max_data *= 2;
            }
        }
        if self.step != Step::Receiving {
            self.step = Step::Receiving;
            self.resend_at = None;
        }
        if self.done_at.is_none() && self.delivered() >= self.cfg.size {
            self.done_at = Some(now);
        }
    }
}

impl Endpoint for QuicReceiver {
    fn poll_transmit(&mut self, now: Nanos) -> Option<(Segment, usize)> {
        let flow = self.cfg.flow;
        if self.resend_at.is_some_and(|t| t <= now) {
            match self.step {
                Step::Idle | Step::Initial => {
                    self.step = Step::Initial;
                    self.next_resend(now);
                    return Some((
                        Segment::QuicHandshake {
                            flow,
                            step: Handshake::ClientInitial,
                        },
                        self.cfg.datagram + IP_UDP,
                    ));
                }
                Step::Request => {
                    self.next_resend(now);
                    return Some((
                        Segment::QuicHandshake {
                            flow,
                            step: Handshake::ClientRequest,
                        },
                        IP_UDP + PACKET_OVERHEAD + 120,
                    ));
                }
                Step::Receiving => self.resend_at = None,
            }
        }
        if self.ack_at.is_some_and(|t| t <= now) {
            return Some(self.ack(now));
        }
        None
    }

    fn on_segment(&mut self, now: Nanos, seg: &Segment) {
        match *seg {
            Segment::QuicHandshake {
                step: Handshake::ServerFlight,
                ..
            } if self.step == Step::Initial => {
                self.step = Step::Request;
                self.resend_backoff = 0;
                self.resend_at = Some(now);
            }
            Segment::QuicData {
                pn, offset, len, ..
            } => self.on_data(now, pn, offset, len),
            _ => {}
        }
    }

    fn next_deadline(&self) -> Option<Nanos> {
        match (self.resend_at, self.ack_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn on_timeout(&mut self, _now: Nanos) {}

    fn progress(&self) -> Progress {
        Progress {
            bytes: self.delivered(),
            done_at: self.done_at,
            lost: 0,
            sent: self.packets,
            ..Progress::default()
        }
    }
}
