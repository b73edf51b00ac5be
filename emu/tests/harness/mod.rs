//! The engine in virtual time for integration tests: UDP packets built by hand, injected
//! at given instants, the clock jumping from deadline to deadline.
#![allow(dead_code)]

use std::path::Path;

use dcemu::base::time::Nanos;
use dcemu::config::parse;
use dcemu::engine::{Dir, Engine, Output};

pub fn udp(sport: u16, dport: u16, seq: u32, total: usize, down: bool) -> Vec<u8> {
    let (src, dst) = if down {
        ([198, 18, 0, 1], [198, 18, 0, 2])
    } else {
        ([198, 18, 0, 2], [198, 18, 0, 1])
    };
    let mut p = vec![0u8; total];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    p[9] = 17;
    p[12..16].copy_from_slice(&src);
    p[16..20].copy_from_slice(&dst);
    p[20..22].copy_from_slice(&sport.to_be_bytes());
    p[22..24].copy_from_slice(&dport.to_be_bytes());
    p[28..32].copy_from_slice(&seq.to_be_bytes());
    p
}

/// Drives the engine like the runtime: packets arrive at given instants, the clock jumps
/// from deadline to deadline. Returns what was written: (dir, at, seq, bytes).
pub struct Harness {
    pub e: Engine,
    pub now: Nanos,
    pub written: Vec<(Dir, Nanos, u32, usize)>,
}

impl Harness {
    pub fn new(text: &str) -> Harness {
        let s = parse(text, Path::new(".")).unwrap();
        Harness {
            e: Engine::new(&s, 2048).unwrap(),
            now: 0,
            written: vec![],
        }
    }

    pub fn inject(&mut self, at: Nanos, dir: Dir, pkt: &[u8]) {
        self.run_until(at);
        let id = self.e.alloc_buffer().unwrap();
        self.e.pool_mut().slot_mut(id)[..pkt.len()].copy_from_slice(pkt);
        self.e.ingress(at, dir, id, pkt.len());
        self.drain();
    }

    /// Offers `n` downlink UDP packets of 1500 bytes, one every `gap`, from time 0.
    pub fn offer_udp(&mut self, n: u32, gap: Nanos) {
        for i in 0..n {
            self.inject(i as Nanos * gap, Dir::Down, &udp(4433, 5000, i, 1500, true));
        }
    }

    pub fn run_until(&mut self, t: Nanos) {
        while let Some(d) = self.e.next_deadline() {
            if d > t {
                break;
            }
            self.now = d;
            self.e.advance(d);
            self.drain();
        }
        self.now = t;
        self.e.advance(t);
        self.drain();
    }

    pub fn drain(&mut self) {
        while let Some(Output { dir, id, at }) = self.e.outputs().pop_front() {
            let b = self.e.pool().get(id);
            let seq = u32::from_be_bytes(b[28..32].try_into().unwrap());
            self.written.push((dir, at, seq, b.len()));
            self.e.release(id);
        }
    }
}

/// A leg's NR cell tables: 40 MHz at numerology 1 (106 PRBs), 2 layers, DDDSU, round
/// robin, one device at 31 dB without fading (CQI 15) with a 3 MB queue; `extra` goes
/// into `[legs.downlink.cell]` (e.g. its HARQ).
pub fn nr40_cell(extra: &str) -> String {
    format!(
        r#"[legs.downlink.cell]
rat = "nr"
bandwidth_mhz = 40
scheduler = "rr"
{extra}
[legs.downlink.cell.nr]
layers = 2
tdd = "DDDSU"
[[legs.downlink.cell.devices]]
mean_sinr_db = 31
fading = "none"
queue_bytes = 3000000"#
    )
}
