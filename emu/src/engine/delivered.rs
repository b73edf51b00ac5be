//! Per flow, what dcemu handed to the client: its packets, those ECN-capable and those
//! marked CE. A flow's CE count is the marks its receiver saw: an AQM's mark on a packet
//! that PDCP then discarded (late, duplicate) never reaches it, and one that does is
//! counted once, however many queues marked it.

use serde::Serialize;

use super::classifier::{five_tuple, Dir, FiveTuple};
use crate::base::ecn::ecn_of;
use crate::base::packet::{CE, ECT0, ECT1};

/// Flows counted one by one; later ones are summed in `DeliveredFlows::beyond` (a run's
/// flows are a few dozen connections; a port scan's are not worth a record each).
pub const MAX_FLOWS: usize = 256;

/// One flow's deliveries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FlowEcn {
    pub packets: u64,
    /// ECT(0) or ECT(1) as delivered (a packet marked CE on the way is not among them).
    pub ect_packets: u64,
    pub ce_packets: u64,
}

impl FlowEcn {
    fn add(&mut self, ecn: u8) {
        self.packets += 1;
        self.ect_packets += u64::from(ecn == ECT0 || ecn == ECT1);
        self.ce_packets += u64::from(ecn == CE);
    }
}

/// A flow in the summary record, from the server's point of view (`protocol` 1 is ICMP,
/// whose ports are 0).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FlowEcnRecord {
    pub protocol: u8,
    pub server_port: u16,
    pub client_port: u16,
    #[serde(flatten)]
    pub counts: FlowEcn,
}

/// The downlink's deliveries by flow, in the order the flows first delivered.
#[derive(Debug, Default)]
pub struct DeliveredFlows {
    flows: Vec<(FiveTuple, FlowEcn)>,
    /// The flow of the last delivery: a burst of one flow finds its entry at once.
    last: usize,
    /// Flows past `MAX_FLOWS`, and packets without an IPv4 header, together.
    beyond: FlowEcn,
}

impl DeliveredFlows {
    /// `ip`, a downlink packet handed to the client.
    pub fn delivered(&mut self, ip: &[u8]) {
        let ecn = ecn_of(ip);
        let Some(t) = five_tuple(ip, Dir::Down) else {
            self.beyond.add(ecn);
            return;
        };
        if self.flows.get(self.last).is_some_and(|(f, _)| *f == t) {
            self.flows[self.last].1.add(ecn);
            return;
        }
        if let Some(i) = self.flows.iter().position(|(f, _)| *f == t) {
            self.last = i;
        } else if self.flows.len() < MAX_FLOWS {
            self.flows.push((t, FlowEcn::default()));
            self.last = self.flows.len() - 1;
        } else {
            self.beyond.add(ecn);
            return;
        }
        self.flows[self.last].1.add(ecn);
    }

    pub fn records(&self) -> Vec<FlowEcnRecord> {
        self.flows
            .iter()
            .map(|(t, c)| FlowEcnRecord {
                protocol: t.protocol,
                server_port: t.server_port,
                client_port: t.client_port,
                counts: *c,
            })
            .collect()
    }

    pub fn beyond(&self) -> FlowEcn {
        self.beyond
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::ecn::set_ce;

    /// An IPv4 UDP packet 198.18.0.1:`sport` -> 198.18.0.2:`dport` with ECN bits `ecn`.
    fn udp(sport: u16, dport: u16, ecn: u8) -> Vec<u8> {
        let mut p = vec![0u8; 28];
        p[0] = 0x45;
        p[1] = ecn;
        p[9] = 17;
        p[12..16].copy_from_slice(&[198, 18, 0, 1]);
        p[16..20].copy_from_slice(&[198, 18, 0, 2]);
        p[20..22].copy_from_slice(&sport.to_be_bytes());
        p[22..24].copy_from_slice(&dport.to_be_bytes());
        p
    }

    #[test]
    fn counts_each_flows_packets_ect_and_ce_apart() {
        let mut d = DeliveredFlows::default();
        let mut marked = udp(4433, 5000, ECT0);
        assert!(set_ce(&mut marked));
        for p in [
            udp(4433, 5000, ECT0),
            marked.clone(),
            udp(4434, 6000, 0),
            udp(4433, 5000, ECT1),
            marked,
        ] {
            d.delivered(&p);
        }
        let r = d.records();
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].server_port, r[0].client_port), (4433, 5000));
        let want = FlowEcn {
            packets: 4,
            ect_packets: 2,
            ce_packets: 2,
        };
        assert_eq!(r[0].counts, want);
        assert_eq!(
            (
                r[1].server_port,
                r[1].counts.packets,
                r[1].counts.ce_packets
            ),
            (4434, 1, 0)
        );
        assert_eq!(d.beyond(), FlowEcn::default());
    }

    #[test]
    fn flows_past_the_limit_and_non_ipv4_packets_are_summed_apart() {
        let mut d = DeliveredFlows::default();
        for port in 0..MAX_FLOWS as u16 + 3 {
            d.delivered(&udp(4433, 10_000 + port, CE));
        }
        d.delivered(&[0x60; 40]); // IPv6: no 5-tuple here
        assert_eq!(d.records().len(), MAX_FLOWS);
        assert_eq!(d.beyond().packets, 4);
        assert_eq!(d.beyond().ce_packets, 3);
        // a known flow still finds its entry after others came between
        d.delivered(&udp(4433, 10_000, CE));
        assert_eq!(d.records()[0].counts.packets, 2);
    }
}
