//! The engine's deadlines over EN-DC cells (an LTE master and an NR secondary with HARQ
//! and fading, a static split, reordering, an uplink): a driver that wakes only at
//! `next_deadline()` finds every output due exactly then, never earlier. So lateness the
//! real-time runtime records over cells is its own (waking, writing), not the engine's.
mod harness;
use dcemu::base::time::Nanos;
use dcemu::engine::{Dir, Output};
use harness::{udp, Harness};

const SC: &str = r#"[topology]
server_netns = "srv"
client_netns = "cli"
server_tun = "dcemu-xs"
client_tun = "dcemu-xc"
[pdcp]
t_reordering_ms = 20
[split]
batch = 100
ratio = [64, 1398]
[[legs]]
name = "lte"
[legs.downlink]
delay = { distribution = "constant", ms = 5.0 }
[legs.downlink.cell]
bandwidth_mhz = 20.0
scheduler = "pf"
[[legs.downlink.cell.devices]]
mean_sinr_db = 32.5
doppler_hz = 5.0
queue_bytes = 512000
[legs.uplink]
rate = "unlimited"
queue_packets = 10000
delay = { distribution = "constant", ms = 5.0 }
[[legs]]
name = "nr"
[legs.downlink]
delay = { distribution = "constant", ms = 5.0 }
[legs.downlink.cell]
rat = "nr"
bandwidth_mhz = 100.0
scheduler = "pf"
[legs.downlink.cell.nr]
numerology = 1
layers = 4
tdd = "DDDSU"
[[legs.downlink.cell.devices]]
mean_sinr_db = 44.1
doppler_hz = 10.0
queue_bytes = 3000000
"#;

/// Advances to `t` and takes what is due: how long before `t` each output was due.
fn advance_and_take(h: &mut Harness, t: Nanos, late: &mut Vec<Nanos>) {
    h.e.advance(t);
    while let Some(Output { at, id, .. }) = h.e.outputs().pop_front() {
        late.push(t.saturating_sub(at));
        h.e.release(id);
    }
}

fn inject(h: &mut Harness, at: Nanos, dir: Dir, p: &[u8]) {
    let id = h.e.alloc_buffer().unwrap();
    h.e.pool_mut().slot_mut(id)[..p.len()].copy_from_slice(p);
    h.e.ingress(at, dir, id, p.len());
}

#[test]
fn every_output_is_due_at_a_deadline_over_endc_cells() {
    let mut h = Harness::new(SC);
    let mut late = vec![];
    let gap: Nanos = 280_000; // 40 Mbit/s of 1400-byte packets
    for i in 0..20_000u32 {
        let at = i as Nanos * gap;
        while let Some(d) = h.e.next_deadline().filter(|&d| d <= at) {
            advance_and_take(&mut h, d, &mut late);
        }
        advance_and_take(&mut h, at, &mut late);
        inject(&mut h, at, Dir::Down, &udp(1, 2, i, 1400, true));
        if i % 2 == 0 {
            inject(&mut h, at, Dir::Up, &udp(2, 1, i, 60, false));
        }
    }
    // 20,000 down and 10,000 up, but for the few still in flight at the end.
    assert!(late.len() > 29_900, "{} outputs", late.len());
    assert_eq!(
        late.iter().filter(|&&x| x > 0).count(),
        0,
        "outputs due before a deadline"
    );
}
