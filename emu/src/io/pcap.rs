//! A minimal pcap writer (raw IPv4 link type) for what the client receives; buffered so
//! the hot path only copies into memory.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

pub struct PcapWriter {
    out: BufWriter<File>,
}

const LINKTYPE_RAW: u32 = 101;

impl PcapWriter {
    pub fn create(path: &Path, snaplen: u32) -> std::io::Result<Self> {
        let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
        out.write_all(&0xa1b2_3c4du32.to_le_bytes())?; // nanosecond-resolution magic
        out.write_all(&2u16.to_le_bytes())?;
        out.write_all(&4u16.to_le_bytes())?;
        out.write_all(&0i32.to_le_bytes())?;
        out.write_all(&0u32.to_le_bytes())?;
        out.write_all(&snaplen.to_le_bytes())?;
        out.write_all(&LINKTYPE_RAW.to_le_bytes())?;
        Ok(PcapWriter { out })
    }

    /// `unix_ns`: capture time in nanoseconds since the Unix epoch.
    pub fn write(&mut self, unix_ns: u64, pkt: &[u8]) -> std::io::Result<()> {
        let (s, ns) = (
            (unix_ns / 1_000_000_000) as u32,
            (unix_ns % 1_000_000_000) as u32,
        );
        let mut hdr = [0u8; 16];
        hdr[0..4].copy_from_slice(&s.to_le_bytes());
        hdr[4..8].copy_from_slice(&ns.to_le_bytes());
        hdr[8..12].copy_from_slice(&(pkt.len() as u32).to_le_bytes());
        hdr[12..16].copy_from_slice(&(pkt.len() as u32).to_le_bytes());
        self.out.write_all(&hdr)?;
        self.out.write_all(pkt)
    }

    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_header_and_records() {
        let dir = std::env::temp_dir().join(format!("dcemu-pcap-{}", std::process::id()));
        let mut w = PcapWriter::create(&dir, 2048).unwrap();
        w.write(1_500_000_000_123, &[0x45, 0, 0, 20]).unwrap();
        w.flush().unwrap();
        drop(w);
        let b = std::fs::read(&dir).unwrap();
        std::fs::remove_file(&dir).ok();
        assert_eq!(b.len(), 24 + 16 + 4);
        assert_eq!(&b[0..4], &0xa1b2_3c4du32.to_le_bytes());
        assert_eq!(u32::from_le_bytes(b[20..24].try_into().unwrap()), 101);
        assert_eq!(u32::from_le_bytes(b[24..28].try_into().unwrap()), 1500);
        assert_eq!(u32::from_le_bytes(b[28..32].try_into().unwrap()), 123);
        assert_eq!(&b[40..44], &[0x45, 0, 0, 20]);
    }
}
