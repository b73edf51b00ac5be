//! TUN offloads (IFF_VNET_HDR), sans-IO: every read and write on such a device starts with
//! a 10-byte virtio-net header. With TSO/USO offered (TUNSETOFFLOAD), one read can carry a
//! TCP or UDP "super-packet" of up to 64 kB that the sending stack did not segment, and one
//! write can hand a run of segments to the receiving stack at once, as a NIC's GRO does.
//!
//! - [`Segments`] splits what was read into the wire packets the sender would otherwise
//!   have put on the wire (headers copied and fixed up: lengths, IPv4 ID, TCP sequence
//!   numbers and flags, checksums completed), so the legs, PDCP and the rate stage still
//!   see every wire packet with its exact size and checksum.
//! - [`Batch`] joins consecutive wire packets of one flow, with identical headers apart
//!   from what segmentation changes, into one super-packet for a single write. The rules
//!   are the kernel's GRO rules (`net/ipv4/tcp_offload.c` in Linux): same addresses, ports,
//!   ACK number, window, options (TCP timestamps included) and flags (ACK, PSH only on the
//!   last), contiguous sequence numbers, equal segment sizes but a shorter last one.
//!
//! Layout of the header (`include/uapi/linux/virtio_net.h`): flags, gso_type, hdr_len,
//! gso_size, csum_start, csum_offset; 16-bit fields little-endian (x86, and the TUN default
//! on little-endian hosts).

/// Bytes of the virtio-net header before every packet.
pub const HDR_LEN: usize = 10;
/// The checksum at csum_start + csum_offset is partial (pseudo-header sum only).
pub const F_NEEDS_CSUM: u8 = 1;
pub const GSO_NONE: u8 = 0;
pub const GSO_TCPV4: u8 = 1;
pub const GSO_TCPV6: u8 = 4;
pub const GSO_UDP_L4: u8 = 5;
/// Set with a TCP gso_type when the first segment carries CWR (only offered with TSO_ECN,
/// which dcemu does not ask for).
pub const GSO_ECN: u8 = 0x80;
/// The largest IP packet one write or read can carry.
pub const MAX_SUPER: usize = 65535;

const PROTO_TCP: u8 = 6;
const PROTO_UDP: u8 = 17;
const TCP_FIN: u8 = 0x01;
const TCP_SYN: u8 = 0x02;
const TCP_RST: u8 = 0x04;
const TCP_PSH: u8 = 0x08;
const TCP_ACK: u8 = 0x10;
const TCP_URG: u8 = 0x20;
const TCP_CWR: u8 = 0x80;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VnetHdr {
    pub flags: u8,
    pub gso_type: u8,
    pub hdr_len: u16,
    pub gso_size: u16,
    pub csum_start: u16,
    pub csum_offset: u16,
}

impl VnetHdr {
    pub fn parse(b: &[u8]) -> Option<VnetHdr> {
        let h = b.get(..HDR_LEN)?;
        let le = |i: usize| u16::from_le_bytes([h[i], h[i + 1]]);
        Some(VnetHdr {
            flags: h[0],
            gso_type: h[1],
            hdr_len: le(2),
            gso_size: le(4),
            csum_start: le(6),
            csum_offset: le(8),
        })
    }

    pub fn encode(&self) -> [u8; HDR_LEN] {
        let mut h = [0u8; HDR_LEN];
        h[0] = self.flags;
        h[1] = self.gso_type;
        h[2..4].copy_from_slice(&self.hdr_len.to_le_bytes());
        h[4..6].copy_from_slice(&self.gso_size.to_le_bytes());
        h[6..8].copy_from_slice(&self.csum_start.to_le_bytes());
        h[8..10].copy_from_slice(&self.csum_offset.to_le_bytes());
        h
    }
}

/// One's-complement sum of `data` as big-endian 16-bit words, added to `acc` (unfolded).
pub fn sum(data: &[u8], mut acc: u64) -> u64 {
    let mut words = data.chunks_exact(4);
    for w in &mut words {
        acc += u32::from_be_bytes([w[0], w[1], w[2], w[3]]) as u64;
    }
    let rest = words.remainder();
    let mut tail = [0u8; 4];
    tail[..rest.len()].copy_from_slice(rest);
    acc + u32::from_be_bytes(tail) as u64
}

/// Folds a sum to 16 bits (not inverted).
pub fn fold(mut acc: u64) -> u16 {
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

fn get16(p: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([p[i], p[i + 1]])
}

fn put16(p: &mut [u8], i: usize, v: u16) {
    p[i..i + 2].copy_from_slice(&v.to_be_bytes());
}

fn get32(p: &[u8], i: usize) -> u32 {
    u32::from_be_bytes([p[i], p[i + 1], p[i + 2], p[i + 3]])
}

/// The IP header's facts offloads need: where the transport header starts and what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ip {
    v6: bool,
    /// Offset of the transport header (IPv6: only without extension headers).
    l4: usize,
    proto: u8,
}

fn parse_ip(p: &[u8]) -> Option<Ip> {
    match p.first()? >> 4 {
        4 if p.len() >= 20 => {
            let l4 = (p[0] & 0x0f) as usize * 4;
            // Fragments are never offloaded or joined.
            let frag = get16(p, 6) & 0x3fff != 0;
            (l4 >= 20 && p.len() >= l4 && !frag).then_some(Ip {
                v6: false,
                l4,
                proto: p[9],
            })
        }
        6 if p.len() >= 40 => Some(Ip {
            v6: true,
            l4: 40,
            proto: p[6],
        }),
        _ => None,
    }
}

/// Sum of the pseudo-header for a transport segment of `l4_len` bytes.
fn pseudo_sum(p: &[u8], ip: Ip, l4_len: usize) -> u64 {
    let addrs = if ip.v6 { &p[8..40] } else { &p[12..20] };
    sum(addrs, ip.proto as u64 + l4_len as u64)
}

/// Writes the complete transport checksum of `p` (whose transport header is at `ip.l4`).
fn complete_l4_csum(p: &mut [u8], ip: Ip, field: usize) {
    let l4_len = p.len() - ip.l4;
    p[field..field + 2].fill(0);
    let c = !fold(sum(&p[ip.l4..], pseudo_sum(p, ip, l4_len)));
    // A UDP checksum of 0 means "none"; its one's-complement twin 0xffff is sent instead.
    let c = if c == 0 && ip.proto == PROTO_UDP {
        0xffff
    } else {
        c
    };
    put16(p, field, c);
}

fn set_ip_len(p: &mut [u8], ip: Ip, total: usize) {
    if ip.v6 {
        put16(p, 4, (total - 40) as u16);
    } else {
        put16(p, 2, total as u16);
    }
}

fn ipv4_header_csum(p: &mut [u8], ihl: usize) {
    put16(p, 10, 0);
    let c = !fold(sum(&p[..ihl], 0));
    put16(p, 10, c);
}

/// The wire packets of one read, produced one at a time into the caller's buffers.
#[derive(Debug)]
pub struct Segments<'a> {
    pkt: &'a [u8],
    hdr: VnetHdr,
    ip: Option<Ip>,
    /// Bytes of IP + transport headers copied into every segment.
    headers: usize,
    /// Payload bytes per segment (the last may be shorter).
    seg: usize,
    count: usize,
    next: usize,
}

impl<'a> Segments<'a> {
    /// `pkt` is what followed the header. A packet without offload is one segment (with
    /// its checksum completed if the kernel left it partial). Err: a super-packet dcemu
    /// cannot split (the reason), which should not happen with the offloads it offers.
    pub fn new(hdr: VnetHdr, pkt: &'a [u8]) -> Result<Segments<'a>, &'static str> {
        let mut s = Segments {
            pkt,
            hdr,
            ip: None,
            headers: 0,
            seg: pkt.len(),
            count: 1,
            next: 0,
        };
        if hdr.flags & F_NEEDS_CSUM != 0 {
            let end = hdr.csum_start as usize + hdr.csum_offset as usize + 2;
            if end > pkt.len() {
                return Err("checksum offset beyond the packet");
            }
        }
        if hdr.gso_type == GSO_NONE {
            return Ok(s);
        }
        let ip = parse_ip(pkt).ok_or("super-packet that is not IPv4/IPv6")?;
        let want = match hdr.gso_type & !GSO_ECN {
            GSO_TCPV4 if !ip.v6 => PROTO_TCP,
            GSO_TCPV6 if ip.v6 => PROTO_TCP,
            GSO_UDP_L4 => PROTO_UDP,
            _ => return Err("unsupported gso_type"),
        };
        if ip.proto != want {
            return Err("gso_type does not match the transport protocol");
        }
        let l4_hdr = if want == PROTO_TCP {
            let off = *pkt.get(ip.l4 + 12).ok_or("truncated TCP header")? as usize >> 4;
            off * 4
        } else {
            8
        };
        s.headers = ip.l4 + l4_hdr;
        if l4_hdr < 8 || s.headers > pkt.len() || hdr.gso_size == 0 {
            return Err("truncated super-packet");
        }
        let payload = pkt.len() - s.headers;
        s.seg = hdr.gso_size as usize;
        s.count = payload.div_ceil(s.seg).max(1);
        s.ip = Some(ip);
        Ok(s)
    }

    /// How many wire packets this read holds.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Size of the largest wire packet (what a buffer must hold).
    pub fn max_len(&self) -> usize {
        if self.ip.is_some() {
            self.headers + self.seg
        } else {
            self.pkt.len()
        }
    }

    /// Writes the next wire packet into `out` (at least [`Self::max_len`] bytes) and
    /// returns its length; None when all have been produced.
    pub fn next_into(&mut self, out: &mut [u8]) -> Option<usize> {
        if self.next >= self.count {
            return None;
        }
        let i = self.next;
        self.next += 1;
        let Some(ip) = self.ip else {
            let n = self.pkt.len();
            out[..n].copy_from_slice(self.pkt);
            if self.hdr.flags & F_NEEDS_CSUM != 0 {
                let start = self.hdr.csum_start as usize;
                let field = start + self.hdr.csum_offset as usize;
                out[field..field + 2].fill(0);
                // The field held the pseudo-header sum; add the rest and invert.
                let partial = get16(self.pkt, field) as u64;
                put16(out, field, !fold(sum(&out[start..n], partial)));
            }
            return Some(n);
        };
        let h = self.headers;
        let from = h + i * self.seg;
        let len = self.seg.min(self.pkt.len() - from);
        let total = h + len;
        let p = &mut out[..total];
        p[..h].copy_from_slice(&self.pkt[..h]);
        p[h..].copy_from_slice(&self.pkt[from..from + len]);
        set_ip_len(p, ip, total);
        if !ip.v6 {
            put16(p, 4, get16(self.pkt, 4).wrapping_add(i as u16));
            ipv4_header_csum(p, ip.l4);
        }
        let t = ip.l4;
        if ip.proto == PROTO_TCP {
            let seq = get32(self.pkt, t + 4).wrapping_add((i * self.seg) as u32);
            p[t + 4..t + 8].copy_from_slice(&seq.to_be_bytes());
            let mut flags = p[t + 13];
            if i + 1 < self.count {
                flags &= !(TCP_FIN | TCP_PSH);
            }
            if i > 0 {
                flags &= !TCP_CWR;
            }
            p[t + 13] = flags;
            complete_l4_csum(p, ip, t + 16);
        } else {
            put16(p, t + 4, (8 + len) as u16);
            complete_l4_csum(p, ip, t + 6);
        }
        Some(total)
    }
}

/// What a packet is for joining: only TCP and UDP segments with a payload join.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Tcp,
    Udp,
}

/// Consecutive wire packets of one flow joined into one super-packet for one write.
#[derive(Debug)]
pub struct Batch {
    /// Virtio header space, then the super-packet.
    buf: Vec<u8>,
    kind: Option<Kind>,
    ip: Option<Ip>,
    headers: usize,
    seg: usize,
    count: usize,
    /// A short segment or a PSH ended the run.
    closed: bool,
    next_seq: u32,
    allow_udp: bool,
}

impl Batch {
    /// `allow_udp`: join UDP datagrams too (the receiving kernel must accept UDP GSO writes).
    pub fn new(allow_udp: bool) -> Batch {
        Batch {
            buf: Vec::with_capacity(HDR_LEN + MAX_SUPER),
            kind: None,
            ip: None,
            headers: 0,
            seg: 0,
            count: 0,
            closed: false,
            next_seq: 0,
            allow_udp,
        }
    }

    /// Packets in the batch.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Starts a batch with `pkt` (any packet; one that cannot join others stays alone).
    pub fn start(&mut self, pkt: &[u8]) {
        self.buf.clear();
        self.buf.extend_from_slice(&[0u8; HDR_LEN]);
        self.buf.extend_from_slice(pkt);
        self.count = 1;
        self.closed = false;
        self.kind = None;
        self.ip = parse_ip(pkt);
        let Some(ip) = self.ip else { return };
        match ip.proto {
            PROTO_TCP if pkt.len() >= ip.l4 + 20 => {
                let thl = (pkt[ip.l4 + 12] >> 4) as usize * 4;
                let flags = pkt[ip.l4 + 13];
                let plain = flags & (TCP_SYN | TCP_FIN | TCP_RST | TCP_URG | TCP_CWR) == 0
                    && flags & TCP_ACK != 0;
                if thl >= 20 && pkt.len() > ip.l4 + thl && plain {
                    self.kind = Some(Kind::Tcp);
                    self.headers = ip.l4 + thl;
                    self.closed = flags & TCP_PSH != 0;
                }
            }
            PROTO_UDP if self.allow_udp && pkt.len() > ip.l4 + 8 => {
                self.kind = Some(Kind::Udp);
                self.headers = ip.l4 + 8;
            }
            _ => {}
        }
        if self.kind.is_some() {
            self.seg = pkt.len() - self.headers;
            self.next_seq = get32(pkt, ip.l4 + 4).wrapping_add(self.seg as u32);
        }
    }

    /// Appends `pkt` if it continues the batch's flow as GRO would join it; false (and the
    /// batch unchanged) otherwise.
    pub fn try_push(&mut self, pkt: &[u8]) -> bool {
        let (Some(kind), Some(ip)) = (self.kind, self.ip) else {
            return false;
        };
        if self.closed || pkt.len() <= self.headers || parse_ip(pkt) != Some(ip) {
            return false;
        }
        let payload = pkt.len() - self.headers;
        if payload > self.seg || self.buf.len() - HDR_LEN + payload > MAX_SUPER {
            return false;
        }
        let first = &self.buf[HDR_LEN..HDR_LEN + self.headers];
        let head = &pkt[..self.headers];
        // IP: everything but the length, the IPv4 ID and the header checksum.
        let ip_same = if ip.v6 {
            first[..4] == head[..4] && first[6..40] == head[6..40]
        } else {
            first[..2] == head[..2]
                && first[6..10] == head[6..10]
                && first[12..ip.l4] == head[12..ip.l4]
        };
        if !ip_same {
            return false;
        }
        let t = ip.l4;
        match kind {
            Kind::Tcp => {
                let flags = head[t + 13];
                // Ports; then ACK number, data offset, flags but PSH, window; then options.
                if first[t..t + 4] != head[t..t + 4]
                    || get32(head, t + 4) != self.next_seq
                    || first[t + 8..t + 13] != head[t + 8..t + 13]
                    || first[t + 13] != flags & !TCP_PSH
                    || first[t + 14..t + 16] != head[t + 14..t + 16]
                    || first[t + 20..] != head[t + 20..]
                {
                    return false;
                }
                self.closed = flags & TCP_PSH != 0;
                self.next_seq = self.next_seq.wrapping_add(payload as u32);
            }
            Kind::Udp => {
                if first[t..t + 4] != head[t..t + 4] {
                    return false;
                }
            }
        }
        if payload < self.seg {
            self.closed = true;
        }
        self.buf.extend_from_slice(&pkt[self.headers..]);
        if kind == Kind::Tcp && self.closed && pkt[t + 13] & TCP_PSH != 0 {
            self.buf[HDR_LEN + t + 13] |= TCP_PSH;
        }
        self.count += 1;
        true
    }

    /// The bytes to write: virtio header and packet. A single packet goes as it is; a run
    /// becomes one super-packet with a partial checksum the receiving kernel trusts as
    /// verified (as for GRO; every segment's own checksum was checked or made on the way in).
    pub fn finish(&mut self) -> &[u8] {
        let mut hdr = VnetHdr::default();
        if self.count > 1 {
            let ip = self.ip.expect("a run has an IP header");
            let total = self.buf.len() - HDR_LEN;
            let p = &mut self.buf[HDR_LEN..];
            set_ip_len(p, ip, total);
            if !ip.v6 {
                ipv4_header_csum(p, ip.l4);
            }
            let t = ip.l4;
            let (gso_type, field) = match self.kind {
                Some(Kind::Tcp) => (if ip.v6 { GSO_TCPV6 } else { GSO_TCPV4 }, 16),
                _ => {
                    put16(p, t + 4, (total - t) as u16);
                    (GSO_UDP_L4, 6)
                }
            };
            let partial = fold(pseudo_sum(p, ip, total - t));
            put16(p, t + field, partial);
            hdr = VnetHdr {
                flags: F_NEEDS_CSUM,
                gso_type,
                hdr_len: self.headers as u16,
                gso_size: self.seg as u16,
                csum_start: t as u16,
                csum_offset: field as u16,
            };
        }
        self.buf[..HDR_LEN].copy_from_slice(&hdr.encode());
        &self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csum_ok(p: &[u8]) -> bool {
        let ip = parse_ip(p).unwrap();
        let l4_len = p.len() - ip.l4;
        let transport = fold(sum(&p[ip.l4..], pseudo_sum(p, ip, l4_len))) == 0xffff;
        let header = ip.v6 || fold(sum(&p[..ip.l4], 0)) == 0xffff;
        transport && header
    }

    /// An IPv4/TCP packet with timestamps (32-byte TCP header), complete checksums.
    fn tcp4(seq: u32, flags: u8, tsval: u32, payload: &[u8]) -> Vec<u8> {
        let mut p = vec![0u8; 20 + 32 + payload.len()];
        p[0] = 0x45;
        let n = p.len() as u16;
        put16(&mut p, 2, n);
        put16(&mut p, 4, 0x1000);
        p[6] = 0x40;
        p[8] = 64;
        p[9] = PROTO_TCP;
        p[12..16].copy_from_slice(&[198, 18, 0, 1]);
        p[16..20].copy_from_slice(&[198, 18, 0, 2]);
        put16(&mut p, 20, 5201);
        put16(&mut p, 22, 40000);
        p[24..28].copy_from_slice(&seq.to_be_bytes());
        p[28..32].copy_from_slice(&77u32.to_be_bytes());
        p[32] = 8 << 4;
        p[33] = flags;
        put16(&mut p, 34, 502);
        p[40..44].copy_from_slice(&[1, 1, 8, 10]);
        p[44..48].copy_from_slice(&tsval.to_be_bytes());
        p[48..52].copy_from_slice(&9u32.to_be_bytes());
        p[52..].copy_from_slice(payload);
        ipv4_header_csum(&mut p, 20);
        let ip = parse_ip(&p).unwrap();
        complete_l4_csum(&mut p, ip, 36);
        p
    }

    fn udp6(payload: &[u8]) -> Vec<u8> {
        let mut p = vec![0u8; 48 + payload.len()];
        p[0] = 0x60;
        put16(&mut p, 4, (8 + payload.len()) as u16);
        p[6] = PROTO_UDP;
        p[7] = 64;
        p[8] = 0xfe;
        p[23] = 1;
        p[24] = 0xfe;
        p[39] = 2;
        put16(&mut p, 40, 4433);
        put16(&mut p, 42, 5000);
        put16(&mut p, 44, (8 + payload.len()) as u16);
        p[48..].copy_from_slice(payload);
        let ip = parse_ip(&p).unwrap();
        complete_l4_csum(&mut p, ip, 46);
        p
    }

    fn bytes(n: usize, salt: u8) -> Vec<u8> {
        (0..n).map(|i| (i as u8).wrapping_mul(31) ^ salt).collect()
    }

    /// What the kernel hands over with TSO: one header, the whole payload, the TCP
    /// checksum field holding the pseudo-header sum only.
    fn as_super(mut whole: Vec<u8>, gso_type: u8, mss: usize, field: usize) -> (VnetHdr, Vec<u8>) {
        let ip = parse_ip(&whole).unwrap();
        let l4_len = whole.len() - ip.l4;
        let partial = fold(pseudo_sum(&whole, ip, l4_len));
        put16(&mut whole, ip.l4 + field, partial);
        let hdr = VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type,
            hdr_len: 0,
            gso_size: mss as u16,
            csum_start: ip.l4 as u16,
            csum_offset: field as u16,
        };
        (hdr, whole)
    }

    fn split(hdr: VnetHdr, pkt: &[u8]) -> Vec<Vec<u8>> {
        let mut s = Segments::new(hdr, pkt).unwrap();
        let mut out = vec![];
        let mut buf = vec![0u8; s.max_len()];
        while let Some(n) = s.next_into(&mut buf) {
            out.push(buf[..n].to_vec());
        }
        assert_eq!(out.len(), s.count());
        out
    }

    #[test]
    fn header_roundtrip() {
        let h = VnetHdr {
            flags: 1,
            gso_type: GSO_TCPV4,
            hdr_len: 66,
            gso_size: 1448,
            csum_start: 20,
            csum_offset: 16,
        };
        assert_eq!(VnetHdr::parse(&h.encode()), Some(h));
        assert_eq!(h.encode()[4..6], 1448u16.to_le_bytes());
        assert_eq!(VnetHdr::parse(&[0; 9]), None);
    }

    #[test]
    fn tso_split_matches_what_the_sender_would_send() {
        let payload = bytes(3 * 1000 + 345, 7);
        let whole = tcp4(1_000_000, TCP_ACK | TCP_PSH | TCP_FIN, 555, &payload);
        let (hdr, pkt) = as_super(whole, GSO_TCPV4, 1000, 16);
        let segs = split(hdr, &pkt);
        assert_eq!(segs.len(), 4);
        for (i, s) in segs.iter().enumerate() {
            let chunk = &payload[i * 1000..(i * 1000 + 1000).min(payload.len())];
            let last = i == 3;
            let flags = if last {
                TCP_ACK | TCP_PSH | TCP_FIN
            } else {
                TCP_ACK
            };
            // Exactly the packet a stack without TSO would have built.
            let mut want = tcp4(1_000_000 + (i * 1000) as u32, flags, 555, chunk);
            put16(&mut want, 4, 0x1000 + i as u16);
            ipv4_header_csum(&mut want, 20);
            assert_eq!(s, &want, "segment {i}");
            assert!(csum_ok(s));
        }
    }

    #[test]
    fn uso_split_gives_datagrams() {
        let payload = bytes(2 * 1200 + 10, 3);
        let whole = udp6(&payload);
        let (hdr, pkt) = as_super(whole, GSO_UDP_L4, 1200, 6);
        let segs = split(hdr, &pkt);
        assert_eq!(
            segs.iter().map(|s| s.len()).collect::<Vec<_>>(),
            [1248, 1248, 58]
        );
        for (i, s) in segs.iter().enumerate() {
            assert_eq!(
                s,
                &udp6(&payload[i * 1200..(i * 1200 + 1200).min(payload.len())])
            );
            assert!(csum_ok(s));
        }
    }

    #[test]
    fn plain_packet_with_partial_checksum_is_completed() {
        let whole = tcp4(5, TCP_ACK, 1, b"hello");
        let want = whole.clone();
        let (mut hdr, pkt) = as_super(whole, GSO_NONE, 0, 16);
        hdr.gso_size = 0;
        assert_eq!(split(hdr, &pkt), vec![want.clone()]);
        // No offload at all: the packet as read.
        assert_eq!(split(VnetHdr::default(), &want), vec![want]);
    }

    #[test]
    fn bad_super_packets_are_refused() {
        let whole = tcp4(5, TCP_ACK, 1, &[0; 3000]);
        let (hdr, pkt) = as_super(whole.clone(), GSO_TCPV4, 1000, 16);
        let wrong = VnetHdr {
            gso_type: GSO_UDP_L4,
            ..hdr
        };
        assert!(Segments::new(wrong, &pkt).is_err());
        let v6 = VnetHdr {
            gso_type: GSO_TCPV6,
            ..hdr
        };
        assert!(Segments::new(v6, &pkt).is_err());
        assert!(Segments::new(hdr, &pkt[..30]).is_err());
        let beyond = VnetHdr {
            csum_offset: 9000,
            ..hdr
        };
        assert!(Segments::new(beyond, &pkt).is_err());
    }

    /// Splits a batch's super-packet back as the kernel would: the round trip must give
    /// back exactly the packets that were joined.
    fn unjoin(out: &[u8]) -> Vec<Vec<u8>> {
        let hdr = VnetHdr::parse(out).unwrap();
        split(hdr, &out[HDR_LEN..])
    }

    #[test]
    fn a_run_of_one_flow_joins_and_splits_back_identically() {
        let pkts: Vec<Vec<u8>> = (0..5)
            .map(|i| {
                let flags = if i == 4 { TCP_ACK | TCP_PSH } else { TCP_ACK };
                let mut p = tcp4(100 + i * 1000, flags, 42, &bytes(1000, i as u8));
                put16(&mut p, 4, 0x1000 + i as u16);
                ipv4_header_csum(&mut p, 20);
                p
            })
            .collect();
        let mut b = Batch::new(true);
        b.start(&pkts[0]);
        for p in &pkts[1..] {
            assert!(b.try_push(p));
        }
        // PSH ended the run.
        assert!(!b.try_push(&tcp4(5100, TCP_ACK, 42, &[0; 1000])));
        assert_eq!(b.len(), 5);
        let out = b.finish().to_vec();
        let hdr = VnetHdr::parse(&out).unwrap();
        assert_eq!(
            (hdr.gso_type, hdr.gso_size, hdr.flags),
            (GSO_TCPV4, 1000, F_NEEDS_CSUM)
        );
        assert_eq!(get16(&out[HDR_LEN..], 2) as usize, out.len() - HDR_LEN);
        assert_eq!(unjoin(&out), pkts);
    }

    #[test]
    fn udp_datagrams_join_until_a_shorter_one() {
        let pkts = [udp6(&[1; 800]), udp6(&[2; 800]), udp6(&[3; 300])];
        let mut b = Batch::new(true);
        b.start(&pkts[0]);
        assert!(b.try_push(&pkts[1]) && b.try_push(&pkts[2]));
        assert!(
            !b.try_push(&udp6(&[4; 800])),
            "a short datagram ends the run"
        );
        assert_eq!(unjoin(b.finish()), pkts);
        // UDP joining can be turned off.
        let mut b = Batch::new(false);
        b.start(&pkts[0]);
        assert!(!b.try_push(&pkts[1]));
    }

    #[test]
    fn what_the_receiver_would_see_differently_does_not_join() {
        let base = tcp4(100, TCP_ACK, 42, &[0; 1000]);
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("a gap in sequence", tcp4(1200, TCP_ACK, 42, &[0; 1000])),
            ("another timestamp", tcp4(1100, TCP_ACK, 43, &[0; 1000])),
            ("a FIN", tcp4(1100, TCP_ACK | TCP_FIN, 42, &[0; 1000])),
            ("a larger segment", tcp4(1100, TCP_ACK, 42, &[0; 1001])),
            ("a pure ACK", tcp4(1100, TCP_ACK, 42, &[])),
            ("another ACK number", {
                let mut p = tcp4(1100, TCP_ACK, 42, &[0; 1000]);
                p[31] = 78;
                p
            }),
            ("another window", {
                let mut p = tcp4(1100, TCP_ACK, 42, &[0; 1000]);
                p[35] = 1;
                p
            }),
            ("another ECN mark", {
                let mut p = tcp4(1100, TCP_ACK, 42, &[0; 1000]);
                p[1] = 3;
                p
            }),
            ("another port", {
                let mut p = tcp4(1100, TCP_ACK, 42, &[0; 1000]);
                p[23] = 1;
                p
            }),
            ("UDP after TCP", udp6(&[0; 1000])),
        ];
        for (what, p) in cases {
            let mut b = Batch::new(true);
            b.start(&base);
            assert!(!b.try_push(&p), "{what} joined");
            assert_eq!(b.len(), 1);
        }
        // Alone, a packet goes out as it came with an empty header.
        let mut b = Batch::new(true);
        b.start(&base);
        let out = b.finish();
        assert_eq!(&out[..HDR_LEN], &[0; HDR_LEN]);
        assert_eq!(&out[HDR_LEN..], &base[..]);
        // A SYN never starts a run.
        let mut b = Batch::new(true);
        b.start(&tcp4(1, TCP_SYN | TCP_ACK, 1, &[0; 10]));
        assert!(!b.try_push(&tcp4(11, TCP_ACK, 1, &[0; 10])));
    }

    #[test]
    fn a_run_stops_below_64_kb() {
        let mut b = Batch::new(true);
        b.start(&tcp4(0, TCP_ACK, 1, &[0; 1400]));
        let mut n = 1;
        while b.try_push(&tcp4(n * 1400, TCP_ACK, 1, &[0; 1400])) {
            n += 1;
        }
        assert_eq!(n as usize, (MAX_SUPER - 52) / 1400);
        assert!(b.finish().len() - HDR_LEN <= MAX_SUPER);
    }
}
