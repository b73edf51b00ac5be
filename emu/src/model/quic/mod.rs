//! A QUIC connection downloading one object, modelled on aioquic 1.7.2 (the QUIC stack of
//! dclab's `aioquic` endpoints) and RFC 9000/9002: the server ([`sender::QuicSender`])
//! numbers packets in one space, detects loss by packet and time thresholds, probes on
//! PTO, paces with aioquic's token bucket and fills the window with a last smaller packet
//! as aioquic's packet builder does; the client ([`receiver::QuicReceiver`]) acknowledges
//! with aioquic's ACK policy and raises the flow-control limit as aioquic does.
//!
//! The handshake is three modelled packets ([`crate::model::wire::Handshake`]): the
//! client's Initial, the server's first flight, and the client's Finished with the
//! request, after which the server sends the object on one stream. What is left out:
//! the handshake's own loss recovery beyond resending on a timer, key updates, and the
//! HTTP/3 framing's few bytes.

pub mod receiver;
pub mod sender;
#[cfg(test)]
mod tests_link;

use crate::base::time::{Nanos, NS_PER_MS};

/// aioquic's short header (1 byte, 8-byte connection ID, 2-byte packet number) and AEAD
/// tag: what a 1-RTT packet spends before its frames.
pub const PACKET_OVERHEAD: usize = 1 + 8 + 2 + 16;
/// IPv4 + UDP.
pub const IP_UDP: usize = 28;

/// A STREAM frame's header at `offset`: type, stream ID, offset, length (aioquic writes
/// the length as 2 bytes).
pub fn stream_frame_overhead(offset: u64) -> usize {
    1 + 1 + varint_len(offset) + 2
}

/// Bytes of a QUIC variable-length integer (RFC 9000 §16).
pub fn varint_len(v: u64) -> usize {
    match v {
        0..=63 => 1,
        64..=16_383 => 2,
        16_384..=1_073_741_823 => 4,
        _ => 8,
    }
}

/// What both ends of a modelled QUIC connection are configured with.
#[derive(Clone, Debug)]
pub struct QuicConfig {
    pub flow: u16,
    /// aioquic's max_datagram_size: UDP payload bytes of a full packet (dclab: 1252).
    pub datagram: usize,
    /// The object's size.
    pub size: u64,
    /// aioquic's initial_rtt (QuicConfiguration default 0.1 s).
    pub initial_rtt: Nanos,
    /// The client's max_ack_delay transport parameter (aioquic: 25 ms).
    pub max_ack_delay: Nanos,
    /// The client's initial max_data and max_stream_data (dclab: 64 MiB).
    pub flow_window: u64,
    /// The sender's CPU ceiling: at least this long between two packets (0: none).
    pub send_gap: Nanos,
    /// When the client sends its Initial.
    pub start: Nanos,
    /// aioquic 0.8 (draft 27, dclab's `aioquic-2020`): a PTO only sends a probe; aioquic
    /// 1.7 also declares the oldest packet lost, without a congestion event.
    pub pto_probe_only: bool,
}

impl Default for QuicConfig {
    fn default() -> Self {
        QuicConfig {
            flow: 0,
            datagram: 1252,
            size: 0,
            initial_rtt: 100 * NS_PER_MS,
            max_ack_delay: 25 * NS_PER_MS,
            flow_window: 64 << 20,
            send_gap: 0,
            start: 0,
            pto_probe_only: false,
        }
    }
}

/// Sorted, disjoint, inclusive ranges of u64 (received packet numbers, stream bytes),
/// kept small by merging neighbours.
#[derive(Clone, Debug, Default)]
pub struct RangeSet {
    r: Vec<(u64, u64)>,
}

impl RangeSet {
    /// Adds `[a, b]`; true if any of it was new.
    pub fn insert(&mut self, a: u64, b: u64) -> bool {
        // The common case: appending at or just past the top.
        if let Some(last) = self.r.last_mut() {
            if a > last.1 {
                if a == last.1 + 1 {
                    last.1 = b;
                } else {
                    self.r.push((a, b));
                }
                return true;
            }
        } else {
            self.r.push((a, b));
            return true;
        }
        let i = self.r.partition_point(|&(_, hi)| hi + 1 < a);
        let mut j = i;
        let (mut lo, mut hi) = (a, b);
        let mut covered = false;
        while j < self.r.len() && self.r[j].0 <= b.saturating_add(1) {
            if self.r[j].0 <= a && self.r[j].1 >= b {
                covered = true;
            }
            lo = lo.min(self.r[j].0);
            hi = hi.max(self.r[j].1);
            j += 1;
        }
        self.r.splice(i..j, [(lo, hi)]);
        !covered
    }

    pub fn contains(&self, v: u64) -> bool {
        let i = self.r.partition_point(|&(_, hi)| hi < v);
        i < self.r.len() && self.r[i].0 <= v
    }

    /// The ranges, lowest first.
    pub fn ranges(&self) -> &[(u64, u64)] {
        &self.r
    }

    /// Drops the lowest range (aioquic keeps at most 64 ACK ranges).
    pub fn shift(&mut self) {
        if !self.r.is_empty() {
            self.r.remove(0);
        }
    }

    pub fn len(&self) -> usize {
        self.r.len()
    }
    pub fn is_empty(&self) -> bool {
        self.r.is_empty()
    }
    /// The end (exclusive) of the lowest range if it holds `from`, else `from`: with
    /// `from` 0, how far the set runs without a gap from the start.
    pub fn prefix_end(&self, from: u64) -> u64 {
        match self.r.first() {
            Some(&(lo, hi)) if lo <= from && hi >= from => hi + 1,
            _ => from,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_merge_and_report_news() {
        let mut s = RangeSet::default();
        assert!(s.insert(0, 9));
        assert!(s.insert(20, 29));
        assert!(s.insert(10, 12)); // joins the first
        assert_eq!(s.ranges(), &[(0, 12), (20, 29)]);
        assert!(!s.insert(3, 5), "all seen");
        assert!(s.insert(13, 19)); // closes the gap
        assert_eq!(s.ranges(), &[(0, 29)]);
        assert!(s.insert(40, 40) && s.insert(35, 36));
        assert_eq!(s.ranges(), &[(0, 29), (35, 36), (40, 40)]);
        assert!(s.contains(36) && !s.contains(37) && s.contains(0));
        assert_eq!(s.prefix_end(0), 30);
        s.shift();
        assert_eq!(s.ranges(), &[(35, 36), (40, 40)]);
    }

    #[test]
    fn varints_and_overheads() {
        assert_eq!(
            (
                varint_len(63),
                varint_len(64),
                varint_len(16_384),
                varint_len(1 << 30)
            ),
            (1, 2, 4, 8)
        );
        assert_eq!(stream_frame_overhead(100_000), 8);
    }
}
