//! A modelled segment written into the bytes of an IPv4 packet, and read back.
//!
//! The engine sees a real packet: an IPv4 header with the scenario's addresses, a UDP
//! (QUIC) or TCP header with the flow's ports (so the classifier picks its bearer), and a
//! total length the rate stage charges. The model's own fields follow the transport
//! header; they always fit inside the packet's length (a packet is sized at least as
//! large as its encoding), so a copy the engine makes for PDCP duplication carries them.
//!
//! After the transport header: `kind: u8`, `flow: u16`, then per kind (big-endian):
//! - QUIC data: `pn: u64`, `offset: u64`, `len: u32` (stream bytes), `fin: u8`
//! - QUIC ACK: `largest: u64`, `delay_us: u32`, `max_data: u64`, `n: u8`, then `n` ranges
//!   `(first: u64, last: u64)`, highest first
//! - TCP data: `seq: u64` (byte offset), `len: u32`, `tsval: u32` (µs)
//! - TCP ACK: `ack: u64` (next byte expected), `window: u32`, `tsecr: u32`, `n: u8`, then
//!   `n` SACK blocks `(start: u64, end: u64)`, a DSACK block first when there is one
//! - QUIC handshake: `step: u8` (see [`Handshake`])

/// IPv4 + UDP header bytes.
pub const UDP_HEADERS: usize = 28;
/// IPv4 + TCP header bytes (without options).
pub const TCP_HEADERS: usize = 40;
/// The most ACK ranges (QUIC) or SACK blocks (TCP) a segment carries.
pub const MAX_RANGES: usize = 32;

/// The TCP header's flags byte (IP header 20 + 13), and its ECN flags (RFC 3168 §6.1).
const TCP_FLAGS: usize = 33;
const FLAG_CWR: u8 = 0x80;
const FLAG_ECE: u8 = 0x40;

const KIND_QUIC_DATA: u8 = 1;
const KIND_QUIC_ACK: u8 = 2;
const KIND_TCP_DATA: u8 = 3;
const KIND_TCP_ACK: u8 = 4;
const KIND_QUIC_HANDSHAKE: u8 = 5;

/// The steps of a modelled QUIC handshake and request: the client's Initial, the server's
/// first flight (Initial + Handshake: certificate and Finished), the client's Finished
/// with the HTTP/3 request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handshake {
    ClientInitial = 1,
    ServerFlight = 2,
    ClientRequest = 3,
}

/// Inclusive ranges (QUIC packet numbers) or half-open byte ranges (TCP SACK), fixed
/// capacity so segments need no allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ranges {
    n: u8,
    r: [(u64, u64); MAX_RANGES],
}

impl Default for Ranges {
    fn default() -> Self {
        Ranges {
            n: 0,
            r: [(0, 0); MAX_RANGES],
        }
    }
}

impl Ranges {
    /// Adds a range; false (and nothing added) when full.
    pub fn push(&mut self, a: u64, b: u64) -> bool {
        if (self.n as usize) == MAX_RANGES {
            return false;
        }
        self.r[self.n as usize] = (a, b);
        self.n += 1;
        true
    }
    pub fn as_slice(&self) -> &[(u64, u64)] {
        &self.r[..self.n as usize]
    }
    pub fn len(&self) -> usize {
        self.n as usize
    }
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
}

/// An ACK's ranges sit behind a box: inline they made every segment about 530 bytes, moved
/// several times per data packet (the simulation's largest cost after the engine).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Segment {
    QuicData {
        flow: u16,
        pn: u64,
        offset: u64,
        len: u32,
        fin: bool,
    },
    QuicAck {
        flow: u16,
        largest: u64,
        delay_us: u32,
        max_data: u64,
        ranges: Box<Ranges>,
    },
    /// `ecn`: the IP header's ECN field (`base::packet`'s NOT_ECT, ECT0, CE: the network
    /// may have marked it); `cwr`: the TCP flag.
    TcpData {
        flow: u16,
        seq: u64,
        len: u32,
        tsval: u32,
        ecn: u8,
        cwr: bool,
    },
    /// `ece`: the TCP flag echoing a CE mark.
    TcpAck {
        flow: u16,
        ack: u64,
        window: u32,
        tsecr: u32,
        sack: Box<Ranges>,
        ece: bool,
    },
    QuicHandshake {
        flow: u16,
        step: Handshake,
    },
}

/// Addresses and ports of the packet a segment travels in: the server's and the client's,
/// whichever way it goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Endpoints {
    pub server_addr: [u8; 4],
    pub client_addr: [u8; 4],
    pub server_port: u16,
    pub client_port: u16,
}

impl Segment {
    pub fn flow(&self) -> u16 {
        match *self {
            Segment::QuicData { flow, .. }
            | Segment::QuicAck { flow, .. }
            | Segment::TcpData { flow, .. }
            | Segment::TcpAck { flow, .. }
            | Segment::QuicHandshake { flow, .. } => flow,
        }
    }

    fn is_tcp(&self) -> bool {
        matches!(self, Segment::TcpData { .. } | Segment::TcpAck { .. })
    }

    /// Bytes the encoding needs: the smallest total length the packet may have.
    pub fn encoded_len(&self) -> usize {
        let (hdr, body) = match self {
            Segment::QuicData { .. } => (UDP_HEADERS, 8 + 8 + 4 + 1),
            Segment::QuicAck { ranges, .. } => (UDP_HEADERS, 8 + 4 + 8 + 1 + 16 * ranges.len()),
            Segment::TcpData { .. } => (TCP_HEADERS, 8 + 4 + 4),
            Segment::TcpAck { sack, .. } => (TCP_HEADERS, 8 + 4 + 4 + 1 + 16 * sack.len()),
            Segment::QuicHandshake { .. } => (UDP_HEADERS, 1),
        };
        hdr + 3 + body
    }

    /// Writes the packet (IPv4 total length `total`, at least `encoded_len`) into `buf`,
    /// downlink (`down`: server to client) or uplink. Returns `total`. Panics when `buf`
    /// is shorter than the encoding (a driver's slot is sized for the MTU).
    pub fn write(&self, buf: &mut [u8], total: usize, down: bool, ep: &Endpoints) -> usize {
        let total = total.max(self.encoded_len());
        let tcp = self.is_tcp();
        let (src, dst, sport, dport) = if down {
            (
                ep.server_addr,
                ep.client_addr,
                ep.server_port,
                ep.client_port,
            )
        } else {
            (
                ep.client_addr,
                ep.server_addr,
                ep.client_port,
                ep.server_port,
            )
        };
        buf[0] = 0x45;
        buf[1] = 0;
        buf[2..4].copy_from_slice(&(total.min(u16::MAX as usize) as u16).to_be_bytes());
        buf[4..8].copy_from_slice(&[0, 0, 0x40, 0]); // id 0, DF
        buf[8] = 64;
        buf[9] = if tcp { 6 } else { 17 };
        buf[10..12].copy_from_slice(&[0, 0]);
        buf[12..16].copy_from_slice(&src);
        buf[16..20].copy_from_slice(&dst);
        buf[20..22].copy_from_slice(&sport.to_be_bytes());
        buf[22..24].copy_from_slice(&dport.to_be_bytes());
        let mut w = if tcp {
            buf[24..40].fill(0);
            buf[32] = 5 << 4;
            Writer {
                buf,
                at: TCP_HEADERS,
            }
        } else {
            buf[24..26]
                .copy_from_slice(&((total - 20).min(u16::MAX as usize) as u16).to_be_bytes());
            buf[26..28].fill(0);
            Writer {
                buf,
                at: UDP_HEADERS,
            }
        };
        match *self {
            Segment::QuicData {
                flow,
                pn,
                offset,
                len,
                fin,
            } => {
                w.u8(KIND_QUIC_DATA);
                w.u16(flow);
                w.u64(pn);
                w.u64(offset);
                w.u32(len);
                w.u8(fin as u8);
            }
            Segment::QuicAck {
                flow,
                largest,
                delay_us,
                max_data,
                ref ranges,
            } => {
                w.u8(KIND_QUIC_ACK);
                w.u16(flow);
                w.u64(largest);
                w.u32(delay_us);
                w.u64(max_data);
                w.ranges(ranges);
            }
            Segment::TcpData {
                flow,
                seq,
                len,
                tsval,
                ecn,
                cwr,
            } => {
                w.buf[1] = ecn & 3;
                w.buf[TCP_FLAGS] = if cwr { FLAG_CWR } else { 0 };
                w.u8(KIND_TCP_DATA);
                w.u16(flow);
                w.u64(seq);
                w.u32(len);
                w.u32(tsval);
            }
            Segment::TcpAck {
                flow,
                ack,
                window,
                tsecr,
                ref sack,
                ece,
            } => {
                w.buf[TCP_FLAGS] = if ece { FLAG_ECE } else { 0 };
                w.u8(KIND_TCP_ACK);
                w.u16(flow);
                w.u64(ack);
                w.u32(window);
                w.u32(tsecr);
                w.ranges(sack);
            }
            Segment::QuicHandshake { flow, step } => {
                w.u8(KIND_QUIC_HANDSHAKE);
                w.u16(flow);
                w.u8(step as u8);
            }
        }
        total
    }

    /// Reads a segment back from a packet `write` made; None for anything else.
    pub fn read(pkt: &[u8]) -> Option<Segment> {
        if pkt.len() < UDP_HEADERS + 3 || pkt[0] != 0x45 {
            return None;
        }
        let at = match pkt[9] {
            17 => UDP_HEADERS,
            6 => TCP_HEADERS,
            _ => return None,
        };
        let mut r = Reader { buf: pkt, at };
        let kind = r.u8()?;
        let flow = r.u16()?;
        Some(match (kind, pkt[9]) {
            (KIND_QUIC_DATA, 17) => Segment::QuicData {
                flow,
                pn: r.u64()?,
                offset: r.u64()?,
                len: r.u32()?,
                fin: r.u8()? != 0,
            },
            (KIND_QUIC_ACK, 17) => Segment::QuicAck {
                flow,
                largest: r.u64()?,
                delay_us: r.u32()?,
                max_data: r.u64()?,
                ranges: Box::new(r.ranges()?),
            },
            (KIND_TCP_DATA, 6) => Segment::TcpData {
                flow,
                seq: r.u64()?,
                len: r.u32()?,
                tsval: r.u32()?,
                ecn: pkt[1] & 3,
                cwr: pkt[TCP_FLAGS] & FLAG_CWR != 0,
            },
            (KIND_TCP_ACK, 6) => Segment::TcpAck {
                flow,
                ack: r.u64()?,
                window: r.u32()?,
                tsecr: r.u32()?,
                sack: Box::new(r.ranges()?),
                ece: pkt[TCP_FLAGS] & FLAG_ECE != 0,
            },
            (KIND_QUIC_HANDSHAKE, 17) => Segment::QuicHandshake {
                flow,
                step: match r.u8()? {
                    1 => Handshake::ClientInitial,
                    2 => Handshake::ServerFlight,
                    3 => Handshake::ClientRequest,
                    _ => return None,
                },
            },
            _ => return None,
        })
    }
}

struct Writer<'a> {
    buf: &'a mut [u8],
    at: usize,
}

impl Writer<'_> {
    fn put(&mut self, b: &[u8]) {
        self.buf[self.at..self.at + b.len()].copy_from_slice(b);
        self.at += b.len();
    }
    fn u8(&mut self, v: u8) {
        self.put(&[v]);
    }
    fn u16(&mut self, v: u16) {
        self.put(&v.to_be_bytes());
    }
    fn u32(&mut self, v: u32) {
        self.put(&v.to_be_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.put(&v.to_be_bytes());
    }
    fn ranges(&mut self, r: &Ranges) {
        self.u8(r.n);
        for &(a, b) in r.as_slice() {
            self.u64(a);
            self.u64(b);
        }
    }
}

struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let b = self.buf.get(self.at..self.at + N)?;
        self.at += N;
        b.try_into().ok()
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take::<1>()?[0])
    }
    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_be_bytes(self.take()?))
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_be_bytes(self.take()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_be_bytes(self.take()?))
    }
    fn ranges(&mut self) -> Option<Ranges> {
        let n = self.u8()? as usize;
        if n > MAX_RANGES {
            return None;
        }
        let mut out = Ranges::default();
        for _ in 0..n {
            out.push(self.u64()?, self.u64()?);
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EP: Endpoints = Endpoints {
        server_addr: [198, 18, 0, 1],
        client_addr: [198, 18, 0, 2],
        server_port: 4433,
        client_port: 50000,
    };

    fn round_trip(s: Segment, total: usize, down: bool) -> Vec<u8> {
        let mut buf = vec![0u8; 1600];
        let n = s.write(&mut buf, total, down, &EP);
        assert_eq!(n, total.max(s.encoded_len()));
        assert_eq!(u16::from_be_bytes([buf[2], buf[3]]) as usize, n);
        buf.truncate(n);
        assert_eq!(Segment::read(&buf), Some(s));
        buf
    }

    #[test]
    fn every_kind_reads_back_from_its_packet_length_alone() {
        let mut ranges = Ranges::default();
        ranges.push(10, 20);
        ranges.push(1, 7);
        round_trip(
            Segment::QuicData {
                flow: 3,
                pn: 77,
                offset: 1 << 40,
                len: 1200,
                fin: true,
            },
            1280,
            true,
        );
        let ack = round_trip(
            Segment::QuicAck {
                flow: 3,
                largest: 20,
                delay_us: 25_000,
                max_data: 9,
                ranges: Box::new(ranges),
            },
            40,
            false,
        );
        assert!(ack.len() > 40, "sized up to its encoding");
        round_trip(
            Segment::TcpData {
                flow: 1,
                seq: 5_000_000_000,
                len: 1448,
                tsval: 12,
                ecn: 3,
                cwr: true,
            },
            1500,
            true,
        );
        round_trip(
            Segment::TcpAck {
                flow: 1,
                ack: 99,
                window: 65535,
                tsecr: 12,
                sack: Box::new(ranges),
                ece: true,
            },
            52,
            false,
        );
        round_trip(
            Segment::QuicHandshake {
                flow: 2,
                step: Handshake::ServerFlight,
            },
            1280,
            true,
        );
    }

    #[test]
    fn the_packet_carries_the_flows_addresses_and_ports_both_ways() {
        let down = round_trip(
            Segment::QuicData {
                flow: 0,
                pn: 0,
                offset: 0,
                len: 1,
                fin: false,
            },
            1280,
            true,
        );
        assert_eq!(
            (down[9], &down[12..16], &down[16..20]),
            (17, &EP.server_addr[..], &EP.client_addr[..])
        );
        assert_eq!(
            (
                u16::from_be_bytes([down[20], down[21]]),
                u16::from_be_bytes([down[22], down[23]])
            ),
            (4433, 50000)
        );
        assert_eq!(u16::from_be_bytes([down[24], down[25]]), 1260, "UDP length");
        let up = round_trip(
            Segment::TcpAck {
                flow: 0,
                ack: 1,
                window: 1,
                tsecr: 0,
                sack: Box::default(),
                ece: false,
            },
            52,
            false,
        );
        assert_eq!((up[9], &up[12..16]), (6, &EP.client_addr[..]));
        assert_eq!(
            (
                u16::from_be_bytes([up[20], up[21]]),
                u16::from_be_bytes([up[22], up[23]])
            ),
            (50000, 4433)
        );
    }

    #[test]
    fn anything_else_is_not_a_segment() {
        assert_eq!(Segment::read(&[0u8; 10]), None);
        let mut buf = vec![0u8; 64];
        Segment::QuicData {
            flow: 0,
            pn: 0,
            offset: 0,
            len: 0,
            fin: false,
        }
        .write(&mut buf, 64, true, &EP);
        buf[28] = 99;
        assert_eq!(Segment::read(&buf), None);
        buf[28] = KIND_TCP_DATA; // a TCP kind in a UDP packet
        assert_eq!(Segment::read(&buf), None);
    }
}
