//! RACK's state (RFC 8985) as Linux keeps it: the newest delivered transmission, the RTT
//! it measured, and the reordering window with its DSACK-driven growth.
//!
//! Follows Linux's net/ipv4/tcp_recovery.c (`tcp_rack_advance`, `tcp_rack_reo_wnd`,
//! `tcp_rack_update_reo_wnd`) and the bits of net/ipv4/tcp_input.c that feed it
//! (`tcp_dsack_seen`: a DSACK counts only once reordering was seen; `tcp_try_undo_recovery`:
//! each recovery that ends without undo uses up one of the 16 "persist" recoveries). The
//! loss walk itself (`tcp_rack_detect_loss`) is in the sender, which owns the segments.

use crate::base::time::Nanos;

/// Linux's TCP_RACK_RECOVERY_THRESH: recoveries a grown window survives without DSACKs.
pub const RECOVERY_THRESH: u32 = 16;
/// net.ipv4.tcp_reordering's default: SACKed segments that start a recovery while no
/// reordering was seen (the DupThresh rule RACK keeps, RFC 8985 §6.2 step 4).
pub const DUPTHRESH: u64 = 3;

#[derive(Clone, Debug)]
pub struct Rack {
    /// Send time and end sequence of the most recently sent segment known delivered.
    pub mstamp: Nanos,
    pub end_seq: u64,
    /// The RTT that segment measured.
    pub rtt: Nanos,
    /// Set when an ACK moved the state on; loss detection runs only then.
    pub advanced: bool,
    /// The window is `steps` quarters of min_rtt; grown by one per round with a DSACK.
    pub steps: u32,
    pub persist: u32,
    pub dsack_seen: bool,
    pub last_delivered: u64,
    /// Linux's `reord_seen`: a never-retransmitted segment was delivered below the highest
    /// SACKed one.
    pub reord_seen: bool,
}

impl Default for Rack {
    fn default() -> Self {
        Rack {
            mstamp: 0,
            end_seq: 0,
            rtt: 0,
            advanced: false,
            steps: 1,
            persist: 0,
            dsack_seen: false,
            last_delivered: 0,
            reord_seen: false,
        }
    }
}

/// RFC 8985's "sent after": later send time, or the same time and a higher end.
pub fn sent_after(t1: Nanos, seq1: u64, t2: Nanos, seq2: u64) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}

impl Rack {
    /// A segment sent at `xmit` (ending at `end_seq`) was newly ACKed or SACKed at `now`.
    /// A retransmitted one is skipped when the ACK may be for an earlier transmission:
    /// the RTT would be below min_rtt, or the echoed timestamp predates this transmission.
    pub fn advance(
        &mut self,
        now: Nanos,
        xmit: Nanos,
        end_seq: u64,
        retrans: bool,
        min_rtt: Nanos,
        tsecr_ns: Option<Nanos>,
    ) {
        let rtt = now.saturating_sub(xmit);
        if retrans && (rtt < min_rtt || tsecr_ns.is_some_and(|t| t < xmit)) {
            return;
        }
        self.advanced = true;
        self.rtt = rtt;
        if sent_after(xmit, end_seq, self.mstamp, self.end_seq) {
            self.mstamp = xmit;
            self.end_seq = end_seq;
        }
    }

    /// `tcp_rack_reo_wnd`: zero while no reordering was seen and either a recovery runs or
    /// DupThresh segments are SACKed; else `steps` × min_rtt/4, at most the smoothed RTT.
    pub fn reo_wnd(
        &self,
        in_recovery: bool,
        sacked_out: u64,
        min_rtt: Nanos,
        srtt: Nanos,
    ) -> Nanos {
        if !self.reord_seen && (in_recovery || sacked_out >= DUPTHRESH) {
            return 0;
        }
        ((min_rtt / 4) * self.steps as Nanos).min(srtt)
    }

    /// A DSACK arrived (not for a loss probe): it widens the window only once reordering
    /// was seen, since otherwise it says nothing about RACK's own spurious recoveries.
    pub fn on_dsack(&mut self) {
        if self.reord_seen {
            self.dsack_seen = true;
        }
    }

    /// `tcp_rack_update_reo_wnd`, after every ACK: `prior_delivered` is the delivered count
    /// before the ACK. One step per round trip with DSACKs; back to one step when the
    /// persist count has run out.
    pub fn update_reo_wnd(&mut self, prior_delivered: u64, delivered: u64) {
        if prior_delivered == 0 {
            return;
        }
        if prior_delivered < self.last_delivered {
            self.dsack_seen = false;
        }
        if self.dsack_seen {
            self.steps = (self.steps + 1).min(0xFF);
            self.dsack_seen = false;
            self.last_delivered = delivered;
            self.persist = RECOVERY_THRESH;
        } else if self.persist == 0 {
            self.steps = 1;
        }
    }

    /// A recovery (fast or after RTO) ended without undo.
    pub fn on_recovery_end(&mut self) {
        self.persist = self.persist.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::time::NS_PER_MS;

    const MS: Nanos = NS_PER_MS;

    #[test]
    fn the_window_is_zero_under_dupthresh_until_reordering_is_seen() {
        let mut r = Rack::default();
        assert_eq!(r.reo_wnd(false, 2, 100 * MS, 150 * MS), 25 * MS);
        assert_eq!(r.reo_wnd(false, 3, 100 * MS, 150 * MS), 0);
        assert_eq!(r.reo_wnd(true, 0, 100 * MS, 150 * MS), 0);
        r.reord_seen = true;
        assert_eq!(r.reo_wnd(true, 5, 100 * MS, 150 * MS), 25 * MS);
        // Capped at the smoothed RTT.
        r.steps = 8;
        assert_eq!(r.reo_wnd(true, 5, 100 * MS, 150 * MS), 150 * MS);
    }

    #[test]
    fn dsack_grows_once_per_round_and_16_recoveries_reset_it() {
        let mut r = Rack::default();
        r.on_dsack();
        assert!(!r.dsack_seen, "no reordering seen yet: ignored");
        r.reord_seen = true;
        r.on_dsack();
        r.update_reo_wnd(10, 12);
        assert_eq!((r.steps, r.persist, r.last_delivered), (2, 16, 12));
        // A DSACK for data delivered before the last adjustment: ignored.
        r.on_dsack();
        r.update_reo_wnd(11, 13);
        assert_eq!(r.steps, 2);
        for _ in 0..15 {
            r.on_recovery_end();
            r.update_reo_wnd(20, 21);
        }
        assert_eq!(r.steps, 2);
        r.on_recovery_end();
        r.update_reo_wnd(20, 21);
        assert_eq!(r.steps, 1);
    }

    #[test]
    fn an_ambiguous_retransmission_does_not_advance() {
        let mut r = Rack::default();
        r.advance(100 * MS, 90 * MS, 10, true, 50 * MS, None);
        assert!(!r.advanced, "10 ms < min_rtt: the original was ACKed");
        r.advance(200 * MS, 90 * MS, 10, true, 50 * MS, Some(20 * MS));
        assert!(!r.advanced, "the echo predates the retransmission");
        r.advance(200 * MS, 90 * MS, 10, true, 50 * MS, Some(90 * MS));
        assert!(r.advanced);
        assert_eq!((r.mstamp, r.end_seq, r.rtt), (90 * MS, 10, 110 * MS));
    }
}
