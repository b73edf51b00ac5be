//! The virtual-time event loop. At each instant, in this order: the endpoints' timers
//! fire, the receiving hosts hand finished packets to their clients, every endpoint with
//! something to do (a deadline due, a segment arrived) sends what it may, the engine
//! advances to the instant, and what it delivers goes to the server (uplink) or into the
//! client host's buffer (downlink); this repeats until the instant is quiet, then time
//! jumps to the earliest deadline of the engine, an endpoint or a host. Nothing reads a
//! clock, so a scenario and a workload always give the same records.

use std::io::Write;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::Serialize;

use super::workload::{AppPacket, FlowSpec, Transport, Workload};
use crate::base::time::{from_ms, to_ms, Nanos, NS_PER_MS, NS_PER_S};
use crate::config::Scenario;
use crate::engine::{Dir, Engine, Record};
use crate::model::cc::{CcKind, Controller};
use crate::model::host::{ReceiveBuffer, Service};
use crate::model::quic::receiver::QuicReceiver;
use crate::model::quic::sender::QuicSender;
use crate::model::quic::QuicConfig;
use crate::model::tcp::{RcvConfig, SndConfig, TcpReceiver, TcpSender};
use crate::model::wire::{Endpoints, Segment};
use crate::model::Endpoint;

/// Builds a flow's congestion controller: its kind, its stack (QUIC flows behave as
/// aioquic, TCP flows as Linux) and the full-size packet in bytes.
pub type Controllers<'a> = &'a dyn Fn(CcKind, Transport, u64) -> Box<dyn Controller>;

/// Without a duration (`--duration`, the workload's `duration_s`) a simulation stops this
/// long after the last flow's start, done or not, and says so: a flow that cannot complete
/// (every packet lost, a trace at rate 0) would otherwise keep it going forever. An hour
/// carries 100 MB at 250 kbit/s; a longer run gives a duration.
pub const DEFAULT_HORIZON_S: u64 = 3_600;

/// Steps within one instant before the driver gives up (a model that keeps asking to act
/// at the same instant is a bug, not a workload).
const MAX_STEPS_PER_INSTANT: u32 = 100_000;

struct Flow {
    spec: FlowSpec,
    server: Box<dyn Endpoint>,
    client: Box<dyn Endpoint>,
    host: ReceiveBuffer<Segment>,
    ep: Endpoints,
    /// The earliest deadline of its endpoints and host, as of the last time it was polled
    /// (nothing else changes them).
    deadline: Option<Nanos>,
    /// It has something to do in this instant (a deadline due, a segment arrived).
    touched: bool,
}

impl Flow {
    fn deadline_now(&self) -> Option<Nanos> {
        [
            self.server.next_deadline(),
            self.client.next_deadline(),
            self.host.next_deadline(),
        ]
        .into_iter()
        .flatten()
        .min()
    }
}

/// One flow's outcome, as the summary line reports it.
#[derive(Clone, Debug, Serialize)]
pub struct FlowResult {
    pub name: String,
    pub transport: &'static str,
    pub cc: &'static str,
    pub server_port: u16,
    pub client_port: u16,
    pub size: u64,
    /// Bytes the client application got in order.
    pub bytes: u64,
    pub start_ms: f64,
    /// When the last byte reached the client application (None: not done at the end).
    pub done_ms: Option<f64>,
    /// bytes × 8 / (done, or the end, − start).
    pub goodput_mbps: f64,
    pub packets_sent: u64,
    pub packets_lost: u64,
    pub host_drops: u64,
    pub host_max_used: u64,
    /// Data packets the client received marked CE, and the sender's window reductions for
    /// their echo (TCP with `ecn`; 0 otherwise).
    pub ce_marks: u64,
    pub ecn_reductions: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct SimSummary {
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Virtual time at the end.
    pub t_ms: f64,
    /// Why it ended: "done" (every flow), "duration" (the one given), "horizon" (none
    /// given: [`DEFAULT_HORIZON_S`] after the last start, with a flow not done).
    pub ended: &'static str,
    pub flows: Vec<FlowResult>,
    /// Packets the endpoints sent into the engine, and what the loop did.
    pub packets: u64,
    pub instants: u64,
    pub wall_s: f64,
    pub events_per_s: f64,
}

fn flow_endpoints(s: &Scenario, f: &FlowSpec) -> Endpoints {
    Endpoints {
        server_addr: s.topology.server_addr.octets(),
        client_addr: s.topology.client_addr.octets(),
        server_port: f.server_port,
        client_port: f.client_port,
    }
}

fn build_flow(s: &Scenario, index: usize, f: &FlowSpec, controllers: Controllers) -> Result<Flow> {
    let (server, client): (Box<dyn Endpoint>, Box<dyn Endpoint>) = match f.transport {
        Transport::Quic => {
            let cfg = QuicConfig {
                flow: index as u16,
                datagram: f.datagram,
                size: f.size,
                send_gap: f.send_packet,
                start: f.start,
                pto_probe_only: f.aioquic08,
                // aioquic 0.8's K_INITIAL_RTT; 1.7's QuicConfiguration.initial_rtt
                initial_rtt: if f.aioquic08 {
                    500 * NS_PER_MS
                } else {
                    100 * NS_PER_MS
                },
                ..QuicConfig::default()
            };
            let cc = controllers(f.cc, Transport::Quic, f.datagram as u64);
            (
                Box::new(QuicSender::new(cfg.clone(), cc)),
                Box::new(QuicReceiver::new(cfg)),
            )
        }
        Transport::Tcp => {
            // The handshake measured the path's nominal RTT (leg 1 down and up): Linux's
            // first RTT sample, which sets the first RTO.
            let leg = &s.legs[0];
            let up = leg.uplink.as_ref().map_or(0.0, |u| u.delay.mean_ms());
            let rtt = from_ms(leg.downlink.delay.mean_ms() + up).max(NS_PER_MS);
            let mut rcv = RcvConfig::new(index as u16, f.size);
            rcv.mss = f.mss as u32;
            rcv.rmem[2] = f.rmem.max(rcv.rmem[1]);
            rcv.handshake_rtt = Some(rtt);
            let mut snd = SndConfig::new(index as u16, f.size, f.start);
            snd.mss = f.mss as u32;
            snd.handshake_rtt = Some(rtt);
            snd.ecn = f.ecn;
            snd.peer_window = TcpReceiver::new(rcv).window();
            let cc = controllers(f.cc, Transport::Tcp, f.mss as u64);
            (
                Box::new(TcpSender::new(snd, cc)),
                Box::new(TcpReceiver::new(rcv)),
            )
        }
    };
    // TCP's own window keeps the socket buffer from overflowing: no drops modelled there.
    let capacity = if f.transport == Transport::Tcp {
        0
    } else {
        f.rmem
    };
    // Each flow's host draws from its own stream: flows stay independent of each other.
    let service = match &f.app_packet {
        AppPacket::Fixed(t) => Service::Fixed(*t),
        AppPacket::Quantiles(points) => Service::quantiles(
            points.clone(),
            s.seed ^ (index as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
        ),
    };
    let mtu = s.topology.mtu as usize;
    if f.datagram + 28 > mtu && f.transport == Transport::Quic {
        bail!(
            "flow {:?}: datagram {} + 28 exceeds the scenario's MTU {mtu}",
            f.name,
            f.datagram
        );
    }
    let tcp_headers = crate::model::tcp::HEADERS;
    if f.mss + tcp_headers > mtu && f.transport == Transport::Tcp {
        bail!(
            "flow {:?}: mss {} + {tcp_headers} (IP, TCP and timestamps) exceeds the scenario's MTU {mtu}",
            f.name,
            f.mss
        );
    }
    Ok(Flow {
        spec: f.clone(),
        server,
        client,
        host: ReceiveBuffer::new(capacity, f.truesize, service),
        ep: flow_endpoints(s, f),
        deadline: None,
        touched: true,
    })
}

fn inject(
    engine: &mut Engine,
    now: Nanos,
    seg: &Segment,
    len: usize,
    down: bool,
    ep: &Endpoints,
) -> Result<()> {
    let id = engine
        .alloc_buffer()
        .context("the engine's packet pool is exhausted")?;
    let n = seg.write(engine.pool_mut().slot_mut(id), len, down, ep);
    engine.ingress(now, if down { Dir::Down } else { Dir::Up }, id, n);
    Ok(())
}

fn write_line<T: Serialize>(out: &mut dyn Write, v: &T) -> Result<()> {
    serde_json::to_writer(&mut *out, v)?;
    out.write_all(b"\n")?;
    Ok(())
}

/// Runs the workload over the scenario until every flow is done or the duration ends;
/// writes the engine's records and the summary to `stats` and returns the summary.
pub fn run(
    s: &Scenario,
    w: &Workload,
    controllers: Controllers,
    stats: &mut dyn Write,
) -> Result<SimSummary> {
    let wall = Instant::now();
    let slot = s.topology.mtu as usize + 64;
    let mut engine = Engine::new(s, slot)?;
    let mut flows = w
        .flows
        .iter()
        .enumerate()
        .map(|(i, f)| build_flow(s, i, f, controllers))
        .collect::<Result<Vec<_>>>()?;
    let last_start = w.flows.iter().map(|f| f.start).max().unwrap_or(0);
    let (end, end_kind) = match w.duration {
        Some(d) => (d, "duration"),
        None => (
            last_start.saturating_add(DEFAULT_HORIZON_S * NS_PER_S),
            "horizon",
        ),
    };
    let mut ended = "done";
    let mut now: Nanos = 0;
    let mut packets = 0u64;
    let mut instants = 0u64;
    // A flow is polled only when it has something to do: a deadline of its own due, or a
    // segment that reached it in this instant. So a stack acts on its own events, as
    // aioquic does (it transmits after a datagram or its timer, the pacer's included), and
    // never because another flow or the engine had an event at that instant.
    loop {
        instants += 1;
        for f in flows.iter_mut() {
            f.touched |= f.deadline.is_some_and(|d| d <= now);
        }
        let mut any = false;
        let mut steps = 0;
        loop {
            steps += 1;
            if steps > MAX_STEPS_PER_INSTANT {
                bail!("the simulation does not advance at {} ms (a model keeps acting at the same instant)", to_ms(now));
            }
            let mut acted = false;
            for f in flows.iter_mut() {
                if !f.touched {
                    continue;
                }
                any = true;
                if f.server.next_deadline().is_some_and(|t| t <= now) {
                    f.server.on_timeout(now);
                }
                if f.client.next_deadline().is_some_and(|t| t <= now) {
                    f.client.on_timeout(now);
                }
                while let Some(seg) = f.host.take(now) {
                    f.client.on_segment(now, &seg);
                }
                while let Some((seg, len)) = f.server.poll_transmit(now) {
                    inject(&mut engine, now, &seg, len, true, &f.ep)?;
                    packets += 1;
                    acted = true;
                }
                while let Some((seg, len)) = f.client.poll_transmit(now) {
                    inject(&mut engine, now, &seg, len, false, &f.ep)?;
                    packets += 1;
                    acted = true;
                }
                f.deadline = f.deadline_now();
                // A timer now due runs in the next round of this instant, as any other would.
                f.touched = f.deadline.is_some_and(|d| d <= now);
            }
            engine.advance(now);
            while let Some(o) = engine.outputs().pop_front() {
                let seg = Segment::read(engine.pool().get(o.id));
                engine.release(o.id);
                let Some(seg) = seg else { continue };
                let Some(f) = flows.get_mut(seg.flow() as usize) else {
                    continue;
                };
                acted = true;
                f.touched = true;
                match o.dir {
                    Dir::Up => f.server.on_segment(now, &seg),
                    Dir::Down => {
                        f.host.offer(now, seg);
                    }
                }
            }
            for rec in engine.take_records() {
                write_line(stats, &rec)?;
            }
            if !acted {
                break;
            }
        }
        if any
            && flows.iter().all(|f| {
                f.client.progress().done_at.is_some() && f.server.progress().done_at.is_some()
            })
        {
            break;
        }
        let next = flows
            .iter()
            .map(|f| f.deadline)
            .chain([engine.next_deadline()])
            .flatten()
            .min();
        let Some(next) = next else {
            bail!(
                "the simulation has nothing left to do at {} ms with flows unfinished",
                to_ms(now)
            );
        };
        let next = next.max(now + 1);
        if next > end {
            ended = end_kind;
            now = end;
            engine.advance(now);
            for rec in engine.take_records() {
                write_line(stats, &rec)?;
            }
            break;
        }
        now = next;
    }
    let summary_rec: Record = engine.summary(now);
    write_line(stats, &summary_rec)?;
    let results = flows.iter().map(|f| result(f, now)).collect();
    let wall_s = wall.elapsed().as_secs_f64();
    let summary = SimSummary {
        kind: "sim",
        t_ms: to_ms(now),
        ended,
        flows: results,
        packets,
        instants,
        wall_s,
        events_per_s: (packets + instants) as f64 / wall_s.max(1e-9),
    };
    write_line(stats, &summary)?;
    stats.flush()?;
    Ok(summary)
}

fn result(f: &Flow, end: Nanos) -> FlowResult {
    let c = f.client.progress();
    let s = f.server.progress();
    let stop = c.done_at.unwrap_or(end);
    let span = stop.saturating_sub(f.spec.start).max(1);
    FlowResult {
        name: f.spec.name.clone(),
        transport: f.spec.transport.name(),
        cc: f.spec.cc.name(),
        server_port: f.spec.server_port,
        client_port: f.spec.client_port,
        size: f.spec.size,
        bytes: c.bytes,
        start_ms: to_ms(f.spec.start),
        done_ms: c.done_at.map(to_ms),
        goodput_mbps: c.bytes as f64 * 8.0 / (span as f64 / NS_PER_S as f64) / 1e6,
        packets_sent: s.sent,
        packets_lost: s.lost,
        host_drops: f.host.drops,
        host_max_used: f.host.max_used,
        ce_marks: c.ce_marks,
        ecn_reductions: s.ecn_reductions,
    }
}
