//! The server of a modelled QUIC download: aioquic 1.7.2's loss recovery
//! (aioquic/quic/recovery.py) and packet writing (aioquic/quic/connection.py,
//! `_write_application`; packet_builder.py).
//!
//! What it reproduces, because each changes what goes on the wire:
//! - loss detection after every ACK: a packet is lost when 3 later packets were
//!   acknowledged or when it was sent 9/8 × max(latest, smoothed RTT) before now; the loss
//!   timer fires for the earliest packet that may still become lost;
//! - the PTO (smoothed + max(4 × variation, 1 ms) + max_ack_delay, doubled per
//!   consecutive PTO) declares the oldest unacknowledged packet lost *without* a congestion
//!   event and sends a probe carrying its data, beyond the window (`reschedule_data`);
//!   aioquic 0.8 (`QuicConfig::pto_probe_only`) only sends the probe, so the ACKs after it
//!   declare the loss and the controller reduces its window;
//! - persistent congestion over 3 PTOs of consecutive lost packets;
//! - the pacer's token bucket (`QuicPacketPacer`), its rate updated on each RTT sample and
//!   after each congestion event; a controller with its own rate (BBR) paces at that rate;
//! - a packet as large as the window leaves room for: the last packet of a window is
//!   smaller (packet_builder's flight capacity);
//! - lost stream data is sent again before new data; the peer's MAX_DATA bounds new data.

use std::collections::VecDeque;

use super::{stream_frame_overhead, QuicConfig, IP_UDP, PACKET_OVERHEAD};
use crate::base::time::Nanos;
use crate::model::cc::{Acked, Controller};
use crate::model::rtt::{RttEstimator, GRANULARITY};
use crate::model::wire::{Handshake, Segment};
use crate::model::{Endpoint, Progress};

const PACKET_THRESHOLD: u64 = 3;
const PERSISTENT_CONGESTION_THRESHOLD: u64 = 3;
/// Packets of the server's first flight (Initial + Handshake with the certificate).
const FLIGHT_PACKETS: u8 = 2;

#[derive(Clone, Copy, Debug)]
struct Sent {
    sent_at: Nanos,
    bytes: u64,
    /// Stream bytes `[offset, offset + len)` it carried.
    offset: u64,
    len: u64,
    delivered: u64,
    delivered_time: Nanos,
    first_sent_time: Nanos,
    app_limited: bool,
}

/// aioquic's QuicPacketPacer, in nanoseconds.
#[derive(Clone, Debug, Default)]
struct Pacer {
    bucket_max: f64,
    bucket_time: f64,
    evaluation_time: Nanos,
    packet_time: Option<f64>,
}

impl Pacer {
    fn next_send_time(&mut self, now: Nanos) -> Option<Nanos> {
        let pt = self.packet_time?;
        self.update_bucket(now);
        (self.bucket_time <= 0.0).then(|| now + pt as Nanos)
    }
    fn update_after_send(&mut self, now: Nanos) {
        if let Some(pt) = self.packet_time {
            self.update_bucket(now);
            self.bucket_time = if self.bucket_time < pt {
                0.0
            } else {
                self.bucket_time - pt
            };
        }
    }
    fn update_bucket(&mut self, now: Nanos) {
        if now > self.evaluation_time {
            self.bucket_time =
                (self.bucket_time + (now - self.evaluation_time) as f64).min(self.bucket_max);
            self.evaluation_time = now;
        }
    }
    /// `rate` in bytes per second.
    fn update_rate(&mut self, rate: f64, window: u64, datagram: u64) {
        let rate = rate.max(1e-9);
        let ns_per_byte = 1e9 / rate;
        self.packet_time = Some((datagram as f64 * ns_per_byte).clamp(1_000.0, 1e9));
        let burst = (2 * datagram).max((window / 4).min(16 * datagram));
        self.bucket_max = burst as f64 * ns_per_byte;
        self.bucket_time = self.bucket_time.min(self.bucket_max);
    }
}

pub struct QuicSender {
    cfg: QuicConfig,
    cc: Box<dyn Controller>,
    rtt: RttEstimator,
    rtt_first_sample_time: Nanos,
    /// Server flight packets still to send (an Initial came).
    flight_pending: u8,
    /// The request arrived: the stream is open.
    sending: bool,
    next_pn: u64,
    /// Sent packets not yet acknowledged or lost, by packet number from `base`.
    sent: VecDeque<Option<Sent>>,
    base: u64,
    largest_acked: Option<u64>,
    loss_time: Option<Nanos>,
    pto_count: u32,
    last_ack_eliciting_sent: Nanos,
    in_flight: u64,
    ack_eliciting_in_flight: u64,
    /// Stream data: new data starts at `next_offset`; lost ranges wait in `resend`.
    next_offset: u64,
    resend: VecDeque<(u64, u64)>,
    acked: super::RangeSet,
    peer_max_data: u64,
    pacer: Pacer,
    /// When a packet the pacer or the CPU ceiling held back may go.
    held_until: Option<Nanos>,
    probe_pending: bool,
    cpu_free_at: Nanos,
    delivered: u64,
    delivered_time: Nanos,
    first_sent_time: Nanos,
    sent_packets: u64,
    lost_packets: u64,
    done_at: Option<Nanos>,
}

impl QuicSender {
    pub fn new(cfg: QuicConfig, cc: Box<dyn Controller>) -> Self {
        let rtt = RttEstimator::aioquic(cfg.initial_rtt);
        let mut sender = QuicSender {
            peer_max_data: cfg.flow_window,
            cfg,
            cc,
            rtt,
            rtt_first_sample_time: 0,
            flight_pending: 0,
            sending: false,
            next_pn: 0,
            sent: VecDeque::new(),
            base: 0,
            largest_acked: None,
            loss_time: None,
            pto_count: 0,
            last_ack_eliciting_sent: 0,
            in_flight: 0,
            ack_eliciting_in_flight: 0,
            next_offset: 0,
            resend: VecDeque::new(),
            acked: super::RangeSet::default(),
            pacer: Pacer::default(),
            held_until: None,
            probe_pending: false,
            cpu_free_at: 0,
            delivered: 0,
            delivered_time: 0,
            first_sent_time: 0,
            sent_packets: 0,
            lost_packets: 0,
            done_at: None,
        };
        if sender.cc.pacing_rate().is_some() {
            sender.update_pacer(); // BBR paces from its first packet
        }
        sender
    }

    pub fn window(&self) -> u64 {
        self.cc.window()
    }
    pub fn in_flight(&self) -> u64 {
        self.in_flight
    }
    pub fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }

    fn pto(&self) -> Nanos {
        if !self.rtt.has_sample() {
            return 2 * self.cfg.initial_rtt;
        }
        self.rtt.smoothed() + (4 * self.rtt.var()).max(GRANULARITY) + self.cfg.max_ack_delay
    }

    fn loss_detection_time(&self) -> Option<Nanos> {
        if let Some(t) = self.loss_time {
            return Some(t);
        }
        (self.ack_eliciting_in_flight > 0)
            .then(|| self.last_ack_eliciting_sent + self.pto() * (1u64 << self.pto_count.min(20)))
    }

    fn update_pacer(&mut self) {
        let datagram = self.cfg.datagram as u64;
        let rate = match self.cc.pacing_rate() {
            Some(r) => r,
            None => self.cc.window() as f64 / (self.rtt.smoothed().max(1_000) as f64 / 1e9),
        };
        self.pacer.update_rate(rate, self.cc.window(), datagram);
    }

    /// Stream bytes acknowledged from the start, without a gap.
    fn acked_bytes(&self) -> u64 {
        self.acked.prefix_end(0)
    }

    fn all_acked(&self) -> bool {
        self.acked_bytes() >= self.cfg.size
    }

    /// The next stream bytes to send: lost data first, else new data within flow control;
    /// (offset, bytes available there).
    fn next_data(&self) -> Option<(u64, u64)> {
        if let Some(&(a, b)) = self.resend.front() {
            return Some((a, b - a));
        }
        let limit = self.cfg.size.min(self.peer_max_data);
        (self.next_offset < limit).then(|| (self.next_offset, limit - self.next_offset))
    }

    fn take_data(&mut self, offset: u64, len: u64) {
        if let Some(front) = self.resend.front_mut() {
            if front.0 == offset {
                front.0 += len;
                if front.0 >= front.1 {
                    self.resend.pop_front();
                }
                return;
            }
        }
        self.next_offset = offset + len;
    }

    fn requeue(&mut self, offset: u64, len: u64) {
        if len == 0 {
            return;
        }
        // Already acknowledged by another copy (inside the lowest acknowledged range): nothing
        // to send again.
        let (a, b) = (offset, offset + len);
        if self.acked.prefix_end(a) >= b {
            return;
        }
        let i = self.resend.partition_point(|&(x, _)| x < a);
        self.resend.insert(i, (a, b));
    }

    fn on_ack(
        &mut self,
        now: Nanos,
        largest: u64,
        delay_us: u32,
        max_data: u64,
        ranges: &[(u64, u64)],
    ) {
        self.peer_max_data = self.peer_max_data.max(max_data);
        if self.largest_acked.is_none_or(|l| largest > l) {
            self.largest_acked = Some(largest);
        }
        let mut newest: Option<(u64, Sent)> = None;
        // aioquic visits the ranges lowest first.
        for &(lo, hi) in ranges.iter().rev() {
            let lo = lo.max(self.base);
            let hi = hi.min(self.next_pn.saturating_sub(1));
            if self.next_pn == 0 || lo > hi {
                continue;
            }
            for pn in lo..=hi {
                let Some(p) = self.sent[(pn - self.base) as usize].take() else {
                    continue;
                };
                self.ack_eliciting_in_flight -= 1;
                self.in_flight -= p.bytes;
                // The delivery-rate sample's state (draft-cheng-iccrg-delivery-rate-estimation,
                // as dclab's bbr.py keeps it): the send time of the newest delivered packet
                // starts the next sample's send interval.
                self.delivered += p.bytes;
                self.delivered_time = now;
                self.first_sent_time = p.sent_at;
                if p.len > 0 {
                    self.acked.insert(p.offset, p.offset + p.len - 1);
                }
                let acked = Acked {
                    sent_at: p.sent_at,
                    bytes: p.bytes,
                    delivered_at_send: p.delivered,
                    delivered_time_at_send: p.delivered_time,
                    first_sent_time_at_send: p.first_sent_time,
                    app_limited: p.app_limited,
                    delivered_now: self.delivered,
                };
                self.cc.on_acked(now, &acked, &self.rtt, self.in_flight);
                newest = Some((pn, p));
            }
        }
        let Some((newest_pn, newest_p)) = newest else {
            return;
        };
        if newest_pn == largest {
            let ack_delay = (delay_us as Nanos * 1_000).min(self.cfg.max_ack_delay);
            if !self.rtt.has_sample() {
                self.rtt_first_sample_time = now;
            }
            self.rtt.update(now - newest_p.sent_at, ack_delay);
            self.cc.on_rtt_sample(now, &self.rtt);
            self.update_pacer();
        }
        self.cc.on_ack_end(now, &self.rtt, self.in_flight);
        if self.cc.pacing_rate().is_some() {
            self.update_pacer(); // dclab's BBR pacer refreshes after every ACK (bbr.py, BbrPacketPacer)
        }
        self.detect_loss(now);
        self.pto_count = 0;
        if self.all_acked() && self.done_at.is_none() {
            self.done_at = Some(now);
        }
        self.trim();
    }

    fn trim(&mut self) {
        while let Some(None) = self.sent.front() {
            self.sent.pop_front();
            self.base += 1;
        }
    }

    fn detect_loss(&mut self, now: Nanos) {
        let Some(largest) = self.largest_acked else {
            return;
        };
        let base_rtt = if self.rtt.has_sample() {
            self.rtt.latest().max(self.rtt.smoothed())
        } else {
            self.cfg.initial_rtt
        };
        let loss_delay = base_rtt * 9 / 8;
        let time_threshold = now.saturating_sub(loss_delay);
        self.loss_time = None;
        let mut lost: Vec<(u64, Sent)> = Vec::new();
        let end = (largest + 1).min(self.next_pn);
        for pn in self.base..end {
            let Some(p) = self.sent[(pn - self.base) as usize] else {
                continue;
            };
            if pn + PACKET_THRESHOLD <= largest || p.sent_at <= time_threshold {
                lost.push((pn, p));
            } else {
                let t = p.sent_at + loss_delay;
                self.loss_time = Some(self.loss_time.map_or(t, |l| l.min(t)));
            }
        }
        if !lost.is_empty() {
            let persistent = self.in_persistent_congestion(&lost);
            self.on_lost(now, &lost, true, persistent);
        }
    }

    fn in_persistent_congestion(&self, lost: &[(u64, Sent)]) -> bool {
        if !self.rtt.has_sample() {
            return false;
        }
        let duration = self.pto() * PERSISTENT_CONGESTION_THRESHOLD;
        let mut prev: Option<u64> = None;
        let mut start: Option<Nanos> = None;
        for &(pn, p) in lost {
            if prev.is_some_and(|q| pn != q + 1) {
                start = None;
            }
            prev = Some(pn);
            if p.sent_at > self.rtt_first_sample_time {
                match start {
                    None => start = Some(p.sent_at),
                    Some(s) if p.sent_at - s > duration => return true,
                    _ => {}
                }
            }
        }
        false
    }

    fn on_lost(
        &mut self,
        now: Nanos,
        lost: &[(u64, Sent)],
        congestion_event: bool,
        persistent: bool,
    ) {
        let mut bytes = 0;
        for &(pn, p) in lost {
            self.sent[(pn - self.base) as usize] = None;
            self.ack_eliciting_in_flight -= 1;
            self.in_flight -= p.bytes;
            bytes += p.bytes;
            self.lost_packets += 1;
            self.requeue(p.offset, p.len);
        }
        if congestion_event {
            let newest = lost.last().map_or(0, |&(_, p)| p.sent_at);
            self.cc.on_lost(now, newest, bytes, self.in_flight);
            if persistent {
                self.cc.on_persistent_congestion(now);
            }
            self.update_pacer();
        }
        self.trim();
    }

    fn on_loss_detection_timeout(&mut self, now: Nanos) {
        if self.loss_time.is_some() {
            self.detect_loss(now);
            return;
        }
        self.pto_count += 1;
        if self.cfg.pto_probe_only {
            self.probe_pending = true; // aioquic 0.8: a probe, nothing declared lost
            return;
        }
        // reschedule_data: the oldest ack-eliciting packet, declared lost without a
        // congestion event; then a probe.
        if let Some((i, p)) = self
            .sent
            .iter()
            .enumerate()
            .find_map(|(i, s)| s.map(|p| (i, p)))
        {
            let pn = self.base + i as u64;
            self.on_lost(now, &[(pn, p)], false, false);
        }
        self.probe_pending = true;
    }
}

impl Endpoint for QuicSender {
    fn poll_transmit(&mut self, now: Nanos) -> Option<(Segment, usize)> {
        let flow = self.cfg.flow;
        if self.flight_pending > 0 {
            self.flight_pending -= 1;
            return Some((
                Segment::QuicHandshake {
                    flow,
                    step: Handshake::ServerFlight,
                },
                self.cfg.datagram + IP_UDP,
            ));
        }
        self.held_until = None;
        if !self.sending || self.all_acked() {
            return None;
        }
        if now < self.cpu_free_at {
            self.held_until = Some(self.cpu_free_at);
            return None;
        }
        if let Some(t) = self.pacer.next_send_time(now) {
            self.held_until = Some(t);
            return None;
        }
        let datagram = self.cfg.datagram as u64;
        let room = if self.probe_pending {
            datagram.max(self.cc.window().saturating_sub(self.in_flight))
        } else {
            self.cc.window().saturating_sub(self.in_flight)
        };
        let capacity = datagram.min(room);
        let data = self.next_data();
        let (offset, len) = match data {
            Some((offset, avail)) => {
                let overhead = (PACKET_OVERHEAD + stream_frame_overhead(offset)) as u64;
                if capacity <= overhead {
                    return None;
                }
                (offset, avail.min(capacity - overhead))
            }
            // Nothing to send but a probe: a PING.
            None if self.probe_pending => (self.next_offset, 0),
            None => return None,
        };
        self.take_data(offset, len);
        let bytes = if len > 0 {
            PACKET_OVERHEAD as u64 + stream_frame_overhead(offset) as u64 + len
        } else {
            PACKET_OVERHEAD as u64 + 1
        };
        let pn = self.next_pn;
        self.next_pn += 1;
        if self.in_flight == 0 {
            self.first_sent_time = now;
            self.delivered_time = now;
        }
        self.in_flight += bytes;
        self.ack_eliciting_in_flight += 1;
        self.last_ack_eliciting_sent = now;
        self.cc.on_sent(now, bytes, self.in_flight);
        // The sender had less to send than the window allowed, or the controller marks
        // the packet itself (BBR: a packet leaving an empty pipe, PROBE_RTT).
        let app_limited = data.is_none()
            || (len < capacity.saturating_sub(64) && self.resend.is_empty())
            || self.cc.app_limited();
        self.sent.push_back(Some(Sent {
            sent_at: now,
            bytes,
            offset,
            len,
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            app_limited,
        }));
        self.pacer.update_after_send(now);
        self.probe_pending = false;
        self.sent_packets += 1;
        self.cpu_free_at = now + self.cfg.send_gap;
        let fin = offset + len == self.cfg.size;
        Some((
            Segment::QuicData {
                flow,
                pn,
                offset,
                len: len as u32,
                fin,
            },
            bytes as usize + IP_UDP,
        ))
    }

    fn on_segment(&mut self, now: Nanos, seg: &Segment) {
        match *seg {
            Segment::QuicHandshake {
                step: Handshake::ClientInitial,
                ..
            } => self.flight_pending = FLIGHT_PACKETS,
            Segment::QuicHandshake {
                step: Handshake::ClientRequest,
                ..
            } => self.sending = true,
            Segment::QuicAck {
                largest,
                delay_us,
                max_data,
                ref ranges,
                ..
            } => self.on_ack(now, largest, delay_us, max_data, ranges.as_slice()),
            _ => {}
        }
    }

    fn next_deadline(&self) -> Option<Nanos> {
        if !self.sending || self.all_acked() {
            return None;
        }
        let timer = self.loss_detection_time();
        let send = self.held_until;
        match (timer, send) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn on_timeout(&mut self, now: Nanos) {
        if self.sending && self.loss_detection_time().is_some_and(|t| t <= now) {
            self.on_loss_detection_timeout(now);
        }
    }

    fn progress(&self) -> Progress {
        Progress {
            bytes: self.acked_bytes().min(self.cfg.size),
            done_at: self.done_at,
            lost: self.lost_packets,
            sent: self.sent_packets,
            ..Progress::default()
        }
    }
}
