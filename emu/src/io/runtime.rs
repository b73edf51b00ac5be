//! The real-time driver: creates the TUN devices, then loops reading packets, advancing
//! the engine to the monotonic clock, writing what it delivers, and sleeping until the
//! engine's next deadline. Ends on SIGINT/SIGTERM or after `duration`, writing a final
//! summary; the TUN devices go away with their `Drop`.

use std::fs::File;
use std::io::{BufWriter, ErrorKind, Write};
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};

use super::clock::Clock;
use super::idle::IdlePoll;
use super::pcap::PcapWriter;
use super::signals::Signals;
use super::timer::Waiter;
use super::tun::{preflight, Offload, Tun, TunConfig};
use super::vnet::{Batch, Segments, VnetHdr, HDR_LEN, MAX_SUPER};
use crate::base::time::Nanos;
use crate::base::Histogram;
use crate::base::PktId;
use crate::config::Scenario;
use crate::engine::{Dir, Engine, LegExit, Record, RuntimeRecord};

#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Stop after this long (None: until a signal).
    pub duration: Option<Duration>,
    /// Stats JSON lines; None or "-" is standard output.
    pub stats_path: Option<PathBuf>,
    /// Capture at the client's end: what dcemu delivers to the client and what the client
    /// sends, timed at the hand-over (the client's view of the path).
    pub pcap_path: Option<PathBuf>,
    /// Capture at the server's end: what the server sends and what dcemu delivers to it.
    /// Both captures together show each packet's delay, loss and reordering through dcemu.
    pub pcap_server_path: Option<PathBuf>,
    /// One capture per leg in this directory (`<leg name>.pcap`): every downlink packet as
    /// it leaves the leg, before the PDCP receiver reorders it.
    pub pcap_legs_dir: Option<PathBuf>,
    /// Written (with our PID) once the devices are up and forwarding starts.
    pub ready_file: Option<PathBuf>,
    /// Busy-wait this long before each deadline instead of sleeping (0: never).
    pub spin_us: u32,
    /// Run with SCHED_FIFO priority (cuts timer tails; takes CPU from the endpoints first).
    pub realtime: bool,
    /// Never sleep: poll the devices and the clock (one core, for latency studies).
    pub busy_poll: bool,
    /// Let idle CPUs halt instead of holding their wake-up latency at 0 (idle.rs).
    pub idle_halt: bool,
    /// TUN offloads (default: both halves).
    pub offload: Offload,
}

impl Default for RunOptions {
    fn default() -> RunOptions {
        RunOptions {
            duration: None,
            stats_path: None,
            pcap_path: None,
            pcap_server_path: None,
            pcap_legs_dir: None,
            ready_file: None,
            spin_us: 0,
            realtime: false,
            busy_poll: false,
            idle_halt: false,
            offload: Offload::ALL,
        }
    }
}

const TOK_SERVER: u64 = 1;
const TOK_CLIENT: u64 = 2;
const TOK_SIGNAL: u64 = 3;
/// Packets read from one device before looking at the other and the clock, so neither
/// direction starves and deadlines are not missed by much under load.
const READ_BURST: usize = 64;

#[derive(Default)]
struct Counters {
    lateness: Histogram,
    service_lateness: Histogram,
    write_cost: Histogram,
    reads: u64,
    read_calls: u64,
    super_reads: u64,
    writes: u64,
    write_calls: u64,
    joined_writes: u64,
    write_errors: u64,
    malformed: u64,
    wakeups: u64,
}

/// Runs the scenario until a signal or the duration ends; returns the summary record.
pub fn run(s: &Scenario, opts: &RunOptions) -> Result<Record> {
    preflight()?;
    // Before anything else, so a signal during setup still ends in a clean exit.
    let signals = Signals::new().context("installing signal handlers")?;
    let mut r = Forwarding::set_up(s, opts, signals)?;
    let stop = r.forward()?;
    r.finish(stop)
}

/// Why forwarding stopped: a signal, the duration, or a device that failed.
struct Stop {
    signal: Option<i32>,
    fatal: Option<anyhow::Error>,
}

/// One run's parts, from the devices being set up to the summary being written.
struct Forwarding {
    server: Tun,
    client: Tun,
    signals: Signals,
    waiter: Waiter,
    clock: Clock,
    engine: Engine,
    io: TunIo,
    stats: Box<dyn Write>,
    pcap: Captures,
    c: Counters,
    end: Option<Nanos>,
    /// Held for the whole run; the kernel ends the request when dcemu exits.
    _idle: Option<IdlePoll>,
}

impl Forwarding {
    fn set_up(s: &Scenario, opts: &RunOptions, signals: Signals) -> Result<Forwarding> {
        let t = &s.topology;
        let device = |name: &str, netns: &str, local: Ipv4Addr, peer: Ipv4Addr| TunConfig {
            name: name.to_string(),
            netns: netns.to_string(),
            mtu: t.mtu,
            local,
            peer,
            routes: vec![],
            extra_local: vec![],
            offload: opts.offload,
        };
        // The client's extra addresses (its other paths) are its own on its device and
        // routed into the server's.
        let server = Tun::create(&TunConfig {
            routes: t
                .client_extra_addrs
                .iter()
                .map(|a| format!("{a}/32"))
                .collect(),
            ..device(&t.server_tun, &t.server_netns, t.server_addr, t.client_addr)
        })
        .context("setting up the server side")?;
        let client = Tun::create(&TunConfig {
            extra_local: t.client_extra_addrs.clone(),
            ..device(&t.client_tun, &t.client_netns, t.client_addr, t.server_addr)
        })
        .context("setting up the client side")?;

        let mut waiter = Waiter::new(opts.spin_us)?;
        waiter.set_busy_poll(opts.busy_poll);
        waiter.add_fd(server.fd(), TOK_SERVER)?;
        waiter.add_fd(client.fd(), TOK_CLIENT)?;
        waiter.add_fd(signals.fd(), TOK_SIGNAL)?;
        if opts.realtime {
            super::timer::set_sched_fifo(10).context("--realtime: cannot get SCHED_FIFO")?;
        }
        let idle = if opts.idle_halt {
            None
        } else {
            match IdlePoll::hold() {
                Ok(held) => {
                    eprintln!(
                        "dcemu: idle CPUs poll while it runs (wake-up latency 0 us held on {})",
                        super::idle::CPU_DMA_LATENCY
                    );
                    Some(held)
                }
                Err(e) => {
                    eprintln!("dcemu: warning: {e}: idle CPUs may halt, and timer wake-ups after long sleeps come later");
                    None
                }
            }
        };
        let stats = open_stats(s, opts)?;
        let mut pcap = open_captures(s, opts)?;

        let mut engine = Engine::new(s, t.mtu as usize + 64)?;
        if !pcap.legs.is_empty() {
            engine.tap_legs();
        }
        let clock = Clock::new();
        pcap.unix_at_start = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos() as u64;
        if let Some(p) = &opts.ready_file {
            // PID and the Unix time (ns) of emulator time 0, to line stats up with endpoints;
            // written whole (rename) so a watcher never reads half of it.
            let tmp = p.with_extension("tmp");
            std::fs::write(
                &tmp,
                format!("{} {}\n", std::process::id(), pcap.unix_at_start),
            )
            .and_then(|_| std::fs::rename(&tmp, p))
            .with_context(|| format!("cannot write ready file {}", p.display()))?;
        }
        let io = TunIo::new(&server, opts.offload);
        announce(s, opts, &io);
        Ok(Forwarding {
            server,
            client,
            signals,
            waiter,
            clock,
            engine,
            io,
            stats,
            pcap,
            c: Counters::default(),
            end: opts.duration.map(|d| d.as_nanos() as Nanos),
            _idle: idle,
        })
    }

    /// What the engine has for now: its outputs written, its records out.
    fn drain(&mut self) -> Result<()> {
        self.pcap.leg_exits(self.engine.take_leg_exits());
        self.io.flush_outputs(
            &mut self.engine,
            &self.server,
            &self.client,
            &self.clock,
            &mut self.pcap,
            &mut self.c,
        );
        for rec in self.engine.take_records() {
            write_record(&mut self.stats, rec, &self.c, &self.io)?;
        }
        Ok(())
    }

    /// The loop: advance the engine, write what it delivers, sleep until its next
    /// deadline or a packet, read the packets.
    fn forward(&mut self) -> Result<Stop> {
        let mut ready = Vec::with_capacity(4);
        loop {
            let now = self.clock.now();
            self.engine.advance(now);
            self.drain()?;
            if let Some(sig) = self.signals.take() {
                return Ok(Stop {
                    signal: Some(sig),
                    fatal: None,
                });
            }
            if self.end.is_some_and(|e| now >= e) {
                return Ok(Stop {
                    signal: None,
                    fatal: None,
                });
            }
            let deadline = match (self.engine.next_deadline(), self.end) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            ready.clear();
            self.waiter.wait(&self.clock, deadline, &mut ready)?;
            self.c.wakeups += 1;
            for &tok in &ready {
                let (tun, dir) = match tok {
                    TOK_SERVER => (&self.server, Dir::Down),
                    TOK_CLIENT => (&self.client, Dir::Up),
                    _ => continue,
                };
                let read = self.io.read_burst(
                    &mut self.engine,
                    tun,
                    dir,
                    &self.clock,
                    &mut self.pcap,
                    &mut self.c,
                );
                if let Err(e) = read {
                    return Ok(Stop {
                        signal: None,
                        fatal: Some(e),
                    });
                }
            }
        }
    }

    /// The summary record (with the runtime's figures) written last, the captures flushed.
    fn finish(mut self, stop: Stop) -> Result<Record> {
        let now = self.clock.now();
        let mut summary = self.engine.summary(now);
        self.drain()?;
        let mut rt = runtime_record(&self.c, &self.io);
        rt.tun_kernel_drops = [&self.server, &self.client]
            .iter()
            .map(|t| t.kernel_tx_dropped().unwrap_or(0))
            .sum();
        summary.runtime = Some(rt);
        serde_json::to_writer(&mut self.stats, &summary)?;
        self.stats.write_all(b"\n")?;
        self.stats.flush()?;
        self.pcap.flush()?;
        if let Some(sig) = stop.signal {
            eprintln!("dcemu: stopped by signal {sig}, devices removed");
        }
        match stop.fatal {
            Some(e) => Err(e.context("forwarding stopped (final summary written)")),
            None => Ok(summary),
        }
    }
}

/// The stats file (standard output without one, or "-").
fn open_stats(s: &Scenario, opts: &RunOptions) -> Result<Box<dyn Write>> {
    let stats_path = opts.stats_path.clone().or_else(|| s.stats_path.clone());
    Ok(match &stats_path {
        Some(p) if p.as_os_str() != "-" => {
            Box::new(BufWriter::new(File::create(p).with_context(|| {
                format!("cannot create stats file {}", p.display())
            })?))
        }
        _ => Box::new(BufWriter::new(std::io::stdout())),
    })
}

/// The captures asked for: at the client's end, at the server's, and per leg.
fn open_captures(s: &Scenario, opts: &RunOptions) -> Result<Captures> {
    let snaplen = s.topology.mtu + 64;
    let open = |path: &Option<PathBuf>| -> Result<Option<PcapWriter>> {
        path.as_ref()
            .map(|p| {
                PcapWriter::create(p, snaplen)
                    .with_context(|| format!("cannot create pcap {}", p.display()))
            })
            .transpose()
    };
    let pcap_path = opts.pcap_path.clone().or_else(|| s.pcap_path.clone());
    let mut pcap = Captures {
        client: open(&pcap_path)?,
        server: open(&opts.pcap_server_path)?,
        legs: vec![],
        unix_at_start: 0,
    };
    if let Some(dir) = &opts.pcap_legs_dir {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create --pcap-legs {}", dir.display()))?;
        for leg in &s.legs {
            pcap.legs
                .push(open(&Some(dir.join(format!("{}.pcap", leg.name))))?);
        }
    }
    Ok(pcap)
}

/// What the run does, on standard error before forwarding starts.
fn announce(s: &Scenario, opts: &RunOptions, io: &TunIo) {
    let t = &s.topology;
    eprintln!(
        "dcemu: forwarding {} ({}) <-> {} ({}), {} legs, {} bearers",
        t.server_netns,
        t.server_addr,
        t.client_netns,
        t.client_addr,
        s.legs.len(),
        s.bearers.len()
    );
    eprintln!("dcemu: TUN offload {}", io.describe());
    if opts.busy_poll {
        eprintln!("dcemu: busy polling (never sleeps; one core)");
    } else {
        eprintln!(
            "dcemu: sleeps until a deadline, then spins its last {} us",
            opts.spin_us
        );
    }
    if opts.realtime {
        eprintln!("dcemu: real-time priority (SCHED_FIFO)");
    }
}

/// Reading and writing the devices, with the offloads asked for: the buffers a super-packet
/// is read into and a run is joined in live here, allocated once.
struct TunIo {
    /// Reads carry a virtio-net header (both devices are set up alike).
    vnet: bool,
    /// Join runs of one flow into one write.
    join: bool,
    /// What the kernel accepted for reading ("" when read offload is off).
    accepted: String,
    read_buf: Vec<u8>,
    batch: Batch,
    ids: Vec<PktId>,
}

impl TunIo {
    fn new(tun: &Tun, offload: Offload) -> TunIo {
        TunIo {
            vnet: tun.has_vnet_hdr(),
            join: offload.write,
            accepted: tun.offloads().to_string(),
            read_buf: vec![0u8; HDR_LEN + MAX_SUPER + 1],
            // UDP runs too: the receiving kernel splits them again for a socket without
            // UDP_GRO, so a QUIC receiver sees the same datagrams either way.
            batch: Batch::new(true),
            ids: Vec::with_capacity(64),
        }
    }

    fn describe(&self) -> String {
        match (self.accepted.as_str(), self.join) {
            ("", false) => "none".into(),
            ("", true) => "write: join".into(),
            (r, false) => format!("read: {r}"),
            (r, true) => format!("read: {r}; write: join"),
        }
    }

    /// Reads what one device has (up to a burst). An error other than "nothing to read"
    /// means the device is gone (its namespace was deleted): fatal, or the loop would spin.
    fn read_burst(
        &mut self,
        engine: &mut Engine,
        tun: &Tun,
        dir: Dir,
        clock: &Clock,
        pcap: &mut Captures,
        c: &mut Counters,
    ) -> Result<()> {
        for _ in 0..READ_BURST {
            let n = match tun.read(&mut self.read_buf) {
                Ok(n) => n,
                Err(e)
                    if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted =>
                {
                    return Ok(())
                }
                Err(e) => anyhow::bail!(
                    "device {} in namespace {} failed ({e}); was the namespace deleted?",
                    tun.name(),
                    tun.netns()
                ),
            };
            c.read_calls += 1;
            let (hdr, pkt) = if self.vnet {
                match VnetHdr::parse(&self.read_buf[..n]) {
                    Some(h) => (h, &self.read_buf[HDR_LEN..n]),
                    None => {
                        c.malformed += 1;
                        continue;
                    }
                }
            } else {
                (VnetHdr::default(), &self.read_buf[..n])
            };
            let mut segs = match Segments::new(hdr, pkt) {
                Ok(s) if pkt.len() >= 20 && matches!(pkt[0] >> 4, 4 | 6) => s,
                _ => {
                    c.reads += 1;
                    c.malformed += 1;
                    continue;
                }
            };
            if segs.count() > 1 {
                c.super_reads += 1;
            }
            // Every wire packet of a read arrived at the same instant.
            let now = clock.now();
            // Every buffer in use: the rest of this read is lost (dropped_no_buffer).
            while let Some(id) = engine.alloc_buffer() {
                let slot = engine.pool_mut().slot_mut(id);
                if slot.len() < segs.max_len() {
                    // Segments larger than the MTU: not what the device was set up for.
                    engine.release(id);
                    c.malformed += 1;
                    break;
                }
                let Some(len) = segs.next_into(slot) else {
                    engine.release(id);
                    break;
                };
                c.reads += 1;
                pcap.ingress(dir, now, &engine.pool_mut().slot_mut(id)[..len]);
                engine.ingress(now, dir, id, len);
            }
        }
        Ok(())
    }

    /// Writes every packet due. With joining, a run of consecutive packets of one flow
    /// (all due now, so all handed over at this instant either way) goes in one write.
    fn flush_outputs(
        &mut self,
        engine: &mut Engine,
        server: &Tun,
        client: &Tun,
        clock: &Clock,
        pcap: &mut Captures,
        c: &mut Counters,
    ) {
        // One clock read per write: the end of one write is the start of the next.
        let mut now = clock.now();
        if let Some(first) = engine.outputs().front() {
            // The earliest packet due: how late the loop got to it (timer precision), as
            // opposed to the per-packet lateness, which also counts writing a burst.
            c.service_lateness.record(now.saturating_sub(first.at));
        }
        while let Some(o) = engine.outputs().pop_front() {
            let tun = match o.dir {
                Dir::Down => client,
                Dir::Up => server,
            };
            self.ids.clear();
            self.ids.push(o.id);
            // Departure is the hand-over to the kernel; the write itself also runs the
            // receiving namespace's stack inline (IP, TCP, its ACK), counted apart.
            c.lateness.record(now.saturating_sub(o.at));
            pcap.egress(o.dir, now, engine.pool().get(o.id));
            let result = if self.vnet {
                self.batch.start(engine.pool().get(o.id));
                while self.join {
                    let Some(&next) = engine.outputs().front() else {
                        break;
                    };
                    if next.dir != o.dir || !self.batch.try_push(engine.pool().get(next.id)) {
                        break;
                    }
                    engine.outputs().pop_front();
                    self.ids.push(next.id);
                    c.lateness.record(now.saturating_sub(next.at));
                    pcap.egress(next.dir, now, engine.pool().get(next.id));
                }
                tun.write(self.batch.finish())
            } else {
                tun.write(engine.pool().get(o.id))
            };
            c.write_calls += 1;
            if self.ids.len() > 1 {
                c.joined_writes += 1;
            }
            match result {
                Ok(_) => c.writes += self.ids.len() as u64,
                Err(_) => c.write_errors += self.ids.len() as u64,
            }
            let done = clock.now();
            c.write_cost.record(done - now);
            for &id in &self.ids {
                engine.release(id);
            }
            now = done;
        }
    }
}

/// The captures asked for, at each end of dcemu; times are the hand-over to or from the
/// kernel. A failed write is ignored: a capture must never stop the forwarding.
struct Captures {
    client: Option<PcapWriter>,
    server: Option<PcapWriter>,
    /// Per leg, in the scenario's order (empty: no per-leg capture).
    legs: Vec<Option<PcapWriter>>,
    unix_at_start: u64,
}

impl Captures {
    /// A packet read from a device: the server sent it (Down) or the client did (Up).
    fn ingress(&mut self, dir: Dir, now: Nanos, pkt: &[u8]) {
        let end = match dir {
            Dir::Down => &mut self.server,
            Dir::Up => &mut self.client,
        };
        if let Some(p) = end.as_mut() {
            let _ = p.write(self.unix_at_start + now, pkt);
        }
    }

    /// A packet written to a device: delivered to the client (Down) or the server (Up).
    fn egress(&mut self, dir: Dir, now: Nanos, pkt: &[u8]) {
        let end = match dir {
            Dir::Down => &mut self.client,
            Dir::Up => &mut self.server,
        };
        if let Some(p) = end.as_mut() {
            let _ = p.write(self.unix_at_start + now, pkt);
        }
    }

    /// Downlink packets that left their leg, stamped with the instant they left it.
    fn leg_exits(&mut self, exits: Vec<LegExit>) {
        for e in exits {
            if let Some(Some(p)) = self.legs.get_mut(e.leg) {
                let _ = p.write(self.unix_at_start + e.at, &e.bytes);
            }
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let ends = [&mut self.client, &mut self.server].into_iter();
        for p in ends.chain(self.legs.iter_mut()).flatten() {
            p.flush()?;
        }
        Ok(())
    }
}

fn runtime_record(c: &Counters, io: &TunIo) -> RuntimeRecord {
    let ru = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF).ok();
    let secs = |tv: nix::sys::time::TimeVal| tv.tv_sec() as f64 + tv.tv_usec() as f64 / 1e6;
    RuntimeRecord {
        lateness: c.lateness.summary_us(),
        service_lateness: c.service_lateness.summary_us(),
        write_cost: c.write_cost.summary_us(),
        tun_read_packets: c.reads,
        tun_write_packets: c.writes,
        tun_write_errors: c.write_errors,
        malformed: c.malformed,
        cpu_user_s: ru.map_or(0.0, |r| secs(r.user_time())),
        cpu_sys_s: ru.map_or(0.0, |r| secs(r.system_time())),
        wakeups: c.wakeups,
        tun_kernel_drops: 0,
        tun_offload: io.describe(),
        tun_read_calls: c.read_calls,
        tun_super_reads: c.super_reads,
        tun_write_calls: c.write_calls,
        tun_joined_writes: c.joined_writes,
    }
}

fn write_record(out: &mut dyn Write, mut rec: Record, c: &Counters, io: &TunIo) -> Result<()> {
    let mut rt = runtime_record(c, io);
    // Interval lines stay small: the bucket lists go in the summary only.
    rt.lateness.buckets.clear();
    rt.service_lateness.buckets.clear();
    rt.write_cost.buckets.clear();
    rec.runtime = Some(rt);
    serde_json::to_writer(&mut *out, &rec)?;
    out.write_all(b"\n")?;
    out.flush()?;
    Ok(())
}
