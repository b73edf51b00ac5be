//! Maps a packet to a bearer by its IPv4 5-tuple. Rules are written from the server's
//! point of view (server/client port and address), so one rule covers both directions.

use crate::config::Rule;

/// Which way a packet travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// Server to client (through PDCP).
    Down,
    /// Client to server.
    Up,
}

/// The fields rules look at. Ports are 0 for protocols without them and for fragments
/// after the first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FiveTuple {
    pub protocol: u8,
    pub server_addr: u32,
    pub client_addr: u32,
    pub server_port: u16,
    pub client_port: u16,
}

/// Reads the 5-tuple of an IPv4 packet; None for anything else (IPv6, truncated).
pub fn five_tuple(pkt: &[u8], dir: Dir) -> Option<FiveTuple> {
    if pkt.len() < 20 || pkt[0] >> 4 != 4 {
        return None;
    }
    let ihl = ((pkt[0] & 0x0f) as usize) * 4;
    let protocol = pkt[9];
    let src = u32::from_be_bytes([pkt[12], pkt[13], pkt[14], pkt[15]]);
    let dst = u32::from_be_bytes([pkt[16], pkt[17], pkt[18], pkt[19]]);
    let frag_offset = u16::from_be_bytes([pkt[6], pkt[7]]) & 0x1fff;
    let (mut sport, mut dport) = (0, 0);
    if (protocol == 6 || protocol == 17) && frag_offset == 0 && pkt.len() >= ihl + 4 {
        sport = u16::from_be_bytes([pkt[ihl], pkt[ihl + 1]]);
        dport = u16::from_be_bytes([pkt[ihl + 2], pkt[ihl + 3]]);
    }
    Some(match dir {
        Dir::Down => FiveTuple {
            protocol,
            server_addr: src,
            client_addr: dst,
            server_port: sport,
            client_port: dport,
        },
        Dir::Up => FiveTuple {
            protocol,
            server_addr: dst,
            client_addr: src,
            server_port: dport,
            client_port: sport,
        },
    })
}

impl Rule {
    pub fn matches(&self, t: &FiveTuple) -> bool {
        let port = |r: Option<(u16, u16)>, p: u16| r.is_none_or(|(lo, hi)| lo <= p && p <= hi);
        let net = |n: Option<(u32, u32)>, a: u32| n.is_none_or(|(net, mask)| a & mask == net);
        self.protocol.is_none_or(|p| p == t.protocol)
            && port(self.server_ports, t.server_port)
            && port(self.client_ports, t.client_port)
            && net(self.server_net, t.server_addr)
            && net(self.client_net, t.client_addr)
    }
}

/// Bearer lookup: the first bearer with a matching rule, else the default bearer.
pub struct Classifier {
    /// (bearer index, rule) in bearer order.
    rules: Vec<(usize, Rule)>,
    default: usize,
}

impl Classifier {
    pub fn new(bearer_rules: &[Vec<Rule>], default: usize) -> Self {
        let rules = bearer_rules
            .iter()
            .enumerate()
            .flat_map(|(b, rs)| rs.iter().map(move |r| (b, r.clone())))
            .collect();
        Classifier { rules, default }
    }

    pub fn classify(&self, pkt: &[u8], dir: Dir) -> usize {
        self.classify_flow(pkt, dir).0
    }

    /// The bearer of `pkt` and its flow hash ([`flow_hash`]; 0 for a packet without an
    /// IPv4 5-tuple).
    pub fn classify_flow(&self, pkt: &[u8], dir: Dir) -> (usize, u16) {
        match five_tuple(pkt, dir) {
            Some(t) => (
                self.rules
                    .iter()
                    .find(|(_, r)| r.matches(&t))
                    .map_or(self.default, |(b, _)| *b),
                flow_hash(&t),
            ),
            None => (self.default, 0),
        }
    }
}

/// A 16-bit hash of a 5-tuple, written from the server's point of view so that both
/// directions of a connection hash alike; FQ-CoDel takes it modulo its number of flow
/// queues, as Linux's `sch_fq_codel` takes the packet's hash. Fixed (no per-run
/// perturbation), so a run's flow-to-queue mapping is reproducible.
pub fn flow_hash(t: &FiveTuple) -> u16 {
    let a = u64::from(t.server_addr) << 32 | u64::from(t.client_addr);
    let b = u64::from(t.server_port) << 24 | u64::from(t.client_port) << 8 | u64::from(t.protocol);
    let z = crate::link::sub_seed(a, b); // splitmix64: every input bit reaches every output bit
    (z ^ (z >> 16) ^ (z >> 32) ^ (z >> 48)) as u16
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A minimal IPv4 packet (no valid checksums; the classifier does not look).
    pub fn ipv4(
        protocol: u8,
        src: [u8; 4],
        dst: [u8; 4],
        sport: u16,
        dport: u16,
        total: usize,
    ) -> Vec<u8> {
        let mut p = vec![0u8; total.max(28)];
        p[0] = 0x45;
        let len = p.len() as u16;
        p[2..4].copy_from_slice(&len.to_be_bytes());
        p[8] = 64;
        p[9] = protocol;
        p[12..16].copy_from_slice(&src);
        p[16..20].copy_from_slice(&dst);
        p[20..22].copy_from_slice(&sport.to_be_bytes());
        p[22..24].copy_from_slice(&dport.to_be_bytes());
        p
    }

    #[test]
    fn rules_match_in_both_directions() {
        let rule = Rule {
            protocol: Some(17),
            server_ports: Some((4433, 4433)),
            ..Rule::default()
        };
        let c = Classifier::new(&[vec![], vec![rule]], 0);
        let down = ipv4(17, [198, 18, 0, 1], [198, 18, 0, 2], 4433, 50000, 100);
        let up = ipv4(17, [198, 18, 0, 2], [198, 18, 0, 1], 50000, 4433, 100);
        let tcp = ipv4(6, [198, 18, 0, 1], [198, 18, 0, 2], 4433, 50000, 100);
        assert_eq!(c.classify(&down, Dir::Down), 1);
        assert_eq!(c.classify(&up, Dir::Up), 1);
        assert_eq!(c.classify(&tcp, Dir::Down), 0, "protocol must match");
        assert_eq!(
            c.classify(&[0x60; 40], Dir::Down),
            0,
            "IPv6 goes to the default bearer"
        );
    }

    #[test]
    fn first_matching_bearer_wins_and_prefixes_work() {
        let a = Rule {
            server_ports: Some((8000, 8000)),
            ..Rule::default()
        };
        let b = Rule {
            client_net: Some((0xC612_0000, 0xFFFE_0000)),
            ..Rule::default()
        };
        let c = Classifier::new(&[vec![], vec![a], vec![b]], 0);
        let p = ipv4(6, [198, 18, 0, 1], [198, 19, 3, 4], 8000, 1234, 60);
        assert_eq!(c.classify(&p, Dir::Down), 1);
        let q = ipv4(6, [198, 18, 0, 1], [198, 19, 3, 4], 9000, 1234, 60);
        assert_eq!(c.classify(&q, Dir::Down), 2);
        let r = ipv4(6, [198, 18, 0, 1], [10, 0, 0, 1], 9000, 1234, 60);
        assert_eq!(c.classify(&r, Dir::Down), 0);
    }

    #[test]
    fn a_connections_packets_share_a_flow_hash_both_ways_and_others_spread() {
        let c = Classifier::new(&[vec![]], 0);
        let down = ipv4(6, [198, 18, 0, 1], [198, 18, 0, 2], 443, 50000, 100);
        let up = ipv4(6, [198, 18, 0, 2], [198, 18, 0, 1], 50000, 443, 100);
        let (_, f) = c.classify_flow(&down, Dir::Down);
        assert_eq!(c.classify_flow(&up, Dir::Up).1, f);
        // 1024 client ports: in 1024 flow queues (RFC 8290's default) as a uniform hash
        // would spread them, about 1024 (1 - 1/e) = 647 distinct queues.
        let queues: std::collections::HashSet<u16> = (0..1024u16)
            .map(|k| {
                let p = ipv4(6, [198, 18, 0, 1], [198, 18, 0, 2], 443, 40000 + k, 100);
                c.classify_flow(&p, Dir::Down).1 % 1024
            })
            .collect();
        assert!((600..=700).contains(&queues.len()), "{}", queues.len());
        assert_eq!(c.classify_flow(&[0x60; 40], Dir::Down), (0, 0));
    }
}
