//! A Linux-like TCP bulk transfer for the simulation mode: the server's sender
//! ([`TcpSender`]) and the client's receiver ([`TcpReceiver`]), as the kernel TCP of
//! dclab's `tcp` stack (dclab/endpoints/tcp/) behaves once its connection is up.
//!
//! What is modelled, and from where (Linux 6.x, net/ipv4/):
//! - sender (`sender.rs`): initial window 10, a SACK scoreboard, RACK-TLP loss detection
//!   (RFC 8985; tcp_recovery.c, `rack.rs`), tail loss probes (tcp_output.c
//!   `tcp_schedule_loss_probe`, `tcp_send_loss_probe`), the RTO of RFC 6298 with Linux's
//!   200 ms floor and exponential backoff (tcp_input.c `tcp_set_rto`, tcp_timer.c),
//!   PRR during recovery (RFC 6937; tcp_input.c `tcp_cwnd_reduction`), the peer's receive
//!   window, pacing only when the controller sets a rate (BBR: Linux's internal pacing
//!   without fq);
//! - receiver (`receiver.rs`): in-order delivery and an out-of-order queue, delayed ACKs
//!   with quickack and the 40 ms timer, SACK (at most 3 blocks with timestamps, newest
//!   first) and DSACK, SACK compression, timestamps echoed, receive-buffer autotuning
//!   (tcp_input.c `__tcp_ack_snd_check`, `tcp_event_data_recv`, `tcp_rcv_space_adjust`;
//!   tcp_output.c `__tcp_select_window`).
//!
//! Not modelled: the handshake (the transfer starts on an established connection; its
//! SYN RTT may seed the estimators), TLS and HTTP/2 framing (the bytes are the object's),
//! undo of spurious recoveries (the [`Controller`](super::cc::Controller) trait has no way
//! to restore a window), F-RTO, TSO/GSO segment sizes, TCP small queues, the persist timer.
//!
//! Sequence numbers are 64-bit byte offsets from 0; segment boundaries are multiples of
//! the MSS (Linux sends full segments while the window allows). Timestamps are in µs.
//! Linux counts its window in segments: the controller sees every segment as `mss` bytes,
//! so build it with the same MSS (`cc::build(kind, Flavor::Linux, mss)`).

pub mod rack;
pub mod receiver;
pub mod sender;

#[cfg(test)]
mod tests;

pub use receiver::{RcvConfig, TcpReceiver};
pub use sender::{SndConfig, TcpSender};

use crate::base::time::{Nanos, NS_PER_MS, NS_PER_US};

/// IPv4 (20) + TCP (20) + the timestamp option (12, padded): every segment's headers.
pub const HEADERS: usize = 52;
/// Bytes of the timestamp option: the MSS a peer announces less this is the payload.
pub const TS_OPTION: u32 = 12;
/// The payload per segment on a 1500-byte MTU with timestamps (MSS 1460 - 12).
pub const DEFAULT_MSS: u32 = 1448;
/// Linux's initial congestion window (TCP_INIT_CWND), segments.
pub const INIT_CWND: u64 = 10;
/// Debian's kernels tick at HZ = 250: timers are whole jiffies.
pub const JIFFY: Nanos = 4 * NS_PER_MS;
/// TCP_TIMEOUT_MIN: 2 jiffies, added to the RACK and TLP timers.
pub const TIMEOUT_MIN: Nanos = 2 * JIFFY;
/// TCP_RTO_MIN, TCP_RTO_MAX and TCP_TIMEOUT_INIT.
pub const RTO_MIN: Nanos = 200 * NS_PER_MS;
pub const RTO_MAX: Nanos = 120_000 * NS_PER_MS;
pub const RTO_INIT: Nanos = 1_000 * NS_PER_MS;
/// TCP_DELACK_MIN = TCP_ATO_MIN: HZ/25, the delayed-ACK timer.
pub const ATO_MIN: Nanos = 40 * NS_PER_MS;

/// The payload per segment when a middlebox clamps the MSS option to `clamp` (dclab's
/// testbed clamps to 1280, `FlowPlan.tcp_mss`): Linux takes the timestamp option off it.
pub fn mss_from_clamp(clamp: u32) -> u32 {
    clamp.min(DEFAULT_MSS + TS_OPTION) - TS_OPTION
}

/// A time rounded up to whole jiffies, as `usecs_to_jiffies` does.
pub fn jiffies(t: Nanos) -> Nanos {
    t.div_ceil(JIFFY) * JIFFY
}

/// A time as a timestamp option value (µs, wrapping as the option does).
pub fn ts_of(now: Nanos) -> u32 {
    (now / NS_PER_US) as u32
}
