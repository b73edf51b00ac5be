//! The ECN field of an IP packet (RFC 3168): read at ingress, set to CE on the way out when a
//! queue's AQM marked the packet. IPv4 keeps it in the low two bits of the TOS byte, whose
//! header checksum is then updated incrementally (RFC 1624, eqn. 3); IPv6 in the low two
//! bits of the traffic class, under no checksum. The transport checksums do not cover it.

use super::packet::{CE, NOT_ECT};

/// The packet's ECN field; `NOT_ECT` for anything that is not an IPv4 or IPv6 header.
pub fn ecn_of(ip: &[u8]) -> u8 {
    match ip.first().map(|b| b >> 4) {
        Some(4) if ip.len() >= 20 => ip[1] & 0b11,
        Some(6) if ip.len() >= 40 => (ip[1] >> 4) & 0b11,
        _ => NOT_ECT,
    }
}

/// Sets the packet's ECN field to CE (an IPv4 header's checksum updated with it); false
/// when it is no IP header this knows.
pub fn set_ce(ip: &mut [u8]) -> bool {
    match ip.first().map(|b| b >> 4) {
        Some(4) if ip.len() >= 20 => {
            let old = u16::from_be_bytes([ip[0], ip[1]]);
            ip[1] |= CE;
            let new = u16::from_be_bytes([ip[0], ip[1]]);
            let sum = u16::from_be_bytes([ip[10], ip[11]]);
            ip[10..12].copy_from_slice(&update_checksum(sum, old, new).to_be_bytes());
            true
        }
        Some(6) if ip.len() >= 40 => {
            ip[1] |= CE << 4;
            true
        }
        _ => false,
    }
}

/// RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), in one's complement.
fn update_checksum(hc: u16, m: u16, m_new: u16) -> u16 {
    let mut s = u32::from(!hc) + u32::from(!m) + u32::from(m_new);
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

#[cfg(test)]
mod tests {
    use super::super::packet::{ECT0, ECT1};
    use super::*;

    /// The IPv4 header checksum computed from scratch.
    fn checksum(h: &[u8]) -> u16 {
        let mut s: u32 = 0;
        for (i, w) in h[..20].chunks(2).enumerate() {
            if i != 5 {
                s += u32::from(u16::from_be_bytes([w[0], w[1]]));
            }
        }
        while s >> 16 != 0 {
            s = (s & 0xffff) + (s >> 16);
        }
        !(s as u16)
    }

    fn ipv4(tos: u8, id: u16) -> Vec<u8> {
        let mut h = vec![
            0x45,
            tos,
            0x05,
            0xdc,
            (id >> 8) as u8,
            id as u8,
            0x40,
            0x00,
            64,
            17,
            0,
            0,
            198,
            18,
            0,
            1,
            198,
            18,
            0,
            2,
        ];
        let c = checksum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        h.extend_from_slice(&[0u8; 8]);
        h
    }

    #[test]
    fn reads_the_field_of_ipv4_and_ipv6_and_nothing_else() {
        assert_eq!(ecn_of(&ipv4(0x00, 1)), NOT_ECT);
        assert_eq!(ecn_of(&ipv4(0x02, 1)), ECT0);
        assert_eq!(ecn_of(&ipv4(0xb9, 1)), ECT1); // DSCP bits around it
        let mut v6 = vec![0u8; 48];
        v6[0] = 0x60;
        v6[1] = 0x20; // traffic class 0x02: ECT(0)
        assert_eq!(ecn_of(&v6), ECT0);
        assert_eq!(ecn_of(&[0x45, 0x03]), NOT_ECT, "too short for a header");
        assert_eq!(ecn_of(&[]), NOT_ECT);
    }

    #[test]
    fn ce_keeps_the_ipv4_checksum_right_and_the_dscp_as_it_was() {
        for tos in [0x00u8, 0x01, 0x02, 0xb8, 0xb9, 0xba, 0xfe] {
            for id in [0u16, 1, 0x1234, 0xfffe, 0xffff] {
                let mut h = ipv4(tos, id);
                assert!(set_ce(&mut h));
                assert_eq!(ecn_of(&h), CE);
                assert_eq!(h[1] >> 2, tos >> 2, "DSCP unchanged");
                assert_eq!(
                    u16::from_be_bytes([h[10], h[11]]),
                    checksum(&h),
                    "tos {tos:#x}, id {id:#x}"
                );
                let again = h.clone();
                assert!(set_ce(&mut h));
                assert_eq!(h, again, "marking twice changes nothing");
            }
        }
    }

    #[test]
    fn ce_on_ipv6_sets_the_traffic_class_bits_only() {
        let mut v6 = vec![0u8; 48];
        v6[0] = 0x6b; // traffic class high nibble 0xb
        v6[1] = 0x91; // low nibble 0x9 (ECT(1)), flow label bits 0x1
        assert!(set_ce(&mut v6));
        assert_eq!((v6[0], v6[1]), (0x6b, 0xb1));
        assert_eq!(ecn_of(&v6), CE);
        assert!(!set_ce(&mut [0x00u8; 40]), "not IP");
    }
}
