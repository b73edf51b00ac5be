//! A queue's limit in bytes when it may be given in bytes, in packets or both: the one
//! figure flow control asks a leg's room from (engine/flow_control.rs), whether the queue
//! is a link's rate stage (link/rate.rs) or a cell device's (cell/cell.rs).

/// The tighter of `bytes` and `packets` full-size packets of `mtu` bytes; None: unbounded.
pub fn limit_in_bytes(bytes: Option<u64>, packets: Option<u32>, mtu: u64) -> Option<u64> {
    let by_packets = packets.map(|p| p as u64 * mtu);
    match (bytes, by_packets) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::limit_in_bytes;

    #[test]
    fn the_tighter_limit_counts() {
        assert_eq!(limit_in_bytes(Some(10_000), Some(100), 1500), Some(10_000));
        assert_eq!(
            limit_in_bytes(Some(1_000_000), Some(100), 1500),
            Some(150_000)
        );
        assert_eq!(limit_in_bytes(None, Some(2), 1500), Some(3000));
        assert_eq!(limit_in_bytes(Some(7), None, 1500), Some(7));
        assert_eq!(limit_in_bytes(None, None, 1500), None);
    }
}
