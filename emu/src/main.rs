//! The `dcemu` command.

#![deny(unsafe_code)]

use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};

use dcemu::base::time::{from_ms, MAX_TIME_S, NS_PER_MS};
use dcemu::config::{self, clip, fmt_num, MAX_T_REORDERING_MS};
use dcemu::io::runtime::{run, RunOptions};
use dcemu::io::tun::Offload;
use dcemu::replay::{run_replay, ReplayOptions};

#[derive(Parser)]
#[command(
    name = "dcemu",
    version,
    about = "Dual Connectivity emulator: PDCP split/duplication over emulated radio legs, with 3GPP reordering"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum TunOffload {
    All,
    Read,
    Write,
    None,
}

#[derive(Subcommand)]
enum Cmd {
    /// Forward packets between the server and client namespaces of a scenario (root).
    ///
    /// Creates one TUN device in each namespace, forwards until SIGINT/SIGTERM or
    /// --duration, writes a stats record per interval and a final summary, and removes
    /// the devices on exit.
    Run {
        /// Scenario file (TOML); see docs/reference/dcemu-scenario.md for every field.
        scenario: PathBuf,
        /// Stop after this many seconds (more than 0, at most 10 years).
        #[arg(long, allow_negative_numbers = true)]
        duration: Option<f64>,
        /// Stats output (JSON lines; "-" for stdout). Overrides stats.path.
        #[arg(long)]
        stats: Option<PathBuf>,
        /// Capture at the client's end (what dcemu delivers to the client and what the
        /// client sends) into this pcap. Overrides stats.pcap.
        #[arg(long)]
        pcap: Option<PathBuf>,
        /// Capture at the server's end (what the server sends and what dcemu delivers to
        /// it) into this pcap.
        #[arg(long)]
        pcap_server: Option<PathBuf>,
        /// One capture per leg in this directory (<leg name>.pcap): every downlink packet
        /// as it leaves its leg, before the PDCP receiver reorders it.
        #[arg(long)]
        pcap_legs: Option<PathBuf>,
        /// Write "PID UNIX_NS" to this file once forwarding has started (UNIX_NS: Unix
        /// time in ns of emulator time 0, the origin of the stats' t_ms).
        #[arg(long)]
        ready_file: Option<PathBuf>,
        /// Busy-wait the last N microseconds before each deadline (costs CPU, cuts lateness);
        /// 0 to 10000.
        #[arg(long, default_value_t = dcemu::io::DEFAULT_SPIN_US, value_parser = parse_spin_us,
              allow_negative_numbers = true)]
        spin_us: u32,
        /// Run with real-time (SCHED_FIFO) priority: shorter timer tails when the CPU is
        /// contended (emu/src/io/TIMER.md), but dcemu then wins every contest for CPU
        /// against the endpoints; off by default.
        #[arg(long)]
        realtime: bool,
        /// Never sleep: poll the devices until a packet or a deadline. An arriving packet
        /// is then seen within microseconds instead of one wake-up (25-60 us at the median
        /// on a VM), which cuts the RTT dcemu adds, at the cost of a whole core even when
        /// idle; for latency studies. Off by default.
        #[arg(long)]
        busy_poll: bool,
        /// Let idle CPUs halt. By default dcemu holds the CPUs' wake-up latency at 0 us
        /// (/dev/cpu_dma_latency) while it runs, so an idle CPU polls instead of halting
        /// and a timer wakes dcemu tens of microseconds late rather than up to a
        /// millisecond after a long sleep on a VM (src/io/TIMER.md); the price is power
        /// (a host sees the VM's CPUs busy). The request ends when dcemu exits.
        #[arg(long)]
        idle_halt: bool,
        /// TUN offloads: `all` reads TCP/UDP super-packets the endpoints' stacks did not
        /// segment and splits them into wire packets, and writes a run of one flow's
        /// consecutive packets that are due at the same instant in one call (as a NIC's
        /// GRO joins them); `read` and `write` use one half; `none` moves one packet per
        /// system call each way. The emulated network sees wire packets in every mode.
        #[arg(long, value_enum, default_value_t = TunOffload::All)]
        tun_offload: TunOffload,
    },
    /// Simulate a scenario in virtual time with modelled endpoints (no root, no devices).
    ///
    /// The same engine as `run`, driven as fast as the CPU allows by modelled QUIC
    /// (aioquic's behaviour) and TCP (Linux's) endpoints and receiving hosts described in
    /// a workload file (see src/sim/workload.rs). Deterministic for the scenario's seed.
    /// Prints one JSON line per flow summary on stdout; --stats writes the same records as
    /// `run`, then the summary. Runs until every flow is done or the duration ends; without
    /// a duration, at most 1 hour of virtual time after the last flow starts (a flow that
    /// cannot complete would run forever), saying on stderr which flows were not done.
    Sim {
        /// Scenario file (TOML), as for `run`.
        scenario: PathBuf,
        /// Workload file (TOML): the flows.
        #[arg(long)]
        workload: PathBuf,
        /// Stats output (JSON lines; "-" for stdout; gzip-compressed when the name ends
        /// in .gz, a tenth of the size: a campaign keeps thousands); none if not given.
        #[arg(long)]
        stats: Option<PathBuf>,
        /// Stop after this many seconds of virtual time (overrides the workload's duration_s).
        /// Without either: 3600 s after the last flow's start, if flows are not done by then.
        #[arg(long, allow_negative_numbers = true)]
        duration: Option<f64>,
    },
    /// Validate a scenario and print it with every default filled in.
    Check { scenario: PathBuf },
    /// Print the default scenario (the reference testbed) as TOML.
    Defaults,
    /// Print every numeric bound of the scenario file as one JSON object, {"field": [lo,
    /// hi]} (a leg direction's fields as "direction.*", a cell device's as "device.*").
    Limits,
    /// Run the PDCP receiver offline on arrivals read from stdin.
    ///
    /// Input: one arrival per line, "<time_ms> <sn>", times non-decreasing, each line at
    /// most 65536 bytes (a file on stdin at most 64 MiB). Output: one line per event,
    /// "deliver <time_ms> <count>" or "discard <time_ms> <sn> <late|duplicate|hfn>". Final
    /// counters as JSON on stderr.
    PdcpReplay {
        /// SN length in bits.
        #[arg(long, default_value_t = 12, value_parser = parse_sn_bits)]
        sn_bits: u8,
        /// t-Reordering in ms (0 to 3600000), or "inf".
        #[arg(long, default_value = "100", allow_negative_numbers = true)]
        t_reordering: String,
        /// Initial COUNT (RX_NEXT = RX_DELIV = this), 0 to 2^32 - 1.
        #[arg(long, default_value_t = 0, value_parser = parse_initial_count,
              allow_negative_numbers = true)]
        initial_count: u32,
        /// Out-of-order delivery mode.
        #[arg(long)]
        out_of_order: bool,
    },
    /// The capacity of one LTE device given all resource blocks of a cell (its channel
    /// alone, no queue): mean, percentiles and outage in Mbit/s, as JSON.
    CellCapacity {
        #[command(flatten)]
        channel: ChannelArgs,
    },
    /// The same capacity as a bandwidth trace: one line per 1500-byte delivery
    /// opportunity, in ms (mahimahi's format; dcemu and mahimahi replay it).
    CellTrace {
        #[command(flatten)]
        channel: ChannelArgs,
        /// Trace format (only "mahimahi").
        #[arg(long, default_value = "mahimahi", value_parser = ["mahimahi"])]
        format: String,
        /// Output file ("-": standard output).
        #[arg(long)]
        out: PathBuf,
    },
}

/// One device's channel, for `cell-capacity` and `cell-trace`.
#[derive(clap::Args)]
struct ChannelArgs {
    /// Mean SINR in dB (-30 to 60).
    #[arg(long, allow_negative_numbers = true)]
    sinr_db: f64,
    /// Cell bandwidth in MHz: LTE 1.4, 3, 5, 10, 15 or 20; NR one of the numerology's
    /// (TS 38.101-1/-2: up to 50 at numerology 0, 100 at 1 and 2, 400 at 3).
    #[arg(long, default_value_t = 20.0, allow_negative_numbers = true)]
    bandwidth_mhz: f64,
    /// Radio: "lte" (1 ms TTIs, 120 data REs per RB) or "nr" (TS 38.214 TBS per slot).
    #[arg(long, default_value = "lte", value_parser = ["lte", "nr"])]
    rat: String,
    /// NR: numerology µ, 0 to 3 (slots of 1 ms / 2^µ) [default: 1].
    #[arg(long)]
    numerology: Option<u8>,
    /// NR: MIMO layers, 1 to 4 [default: 2].
    #[arg(long)]
    layers: Option<u8>,
    /// NR: "qam256" or "qam64" (the MCS and CQI tables of TS 38.214) [default: qam256].
    #[arg(long, value_parser = ["qam256", "qam64"])]
    mcs_table: Option<String>,
    /// NR: a TDD pattern of D, S and U slots such as DDDSU (default: FDD).
    #[arg(long)]
    tdd: Option<String>,
    /// Maximum Doppler shift in Hz (0 to 2000); 5 is a pedestrian at 2 GHz.
    #[arg(long, default_value_t = 5.0, allow_negative_numbers = true)]
    doppler: f64,
    /// Fading: "rayleigh" or "none".
    #[arg(long, default_value = "rayleigh", value_parser = ["rayleigh", "none"])]
    fading: String,
    /// Length in seconds (more than 0, at most 86400).
    #[arg(long, default_value_t = 60.0, allow_negative_numbers = true)]
    seconds: f64,
    /// Seed: the channel of device 0 of a cell with this seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

impl ChannelArgs {
    /// The channel the options describe (errors: a value out of range, naming its option).
    fn channel(&self) -> anyhow::Result<Channel> {
        use dcemu::cell::{
            device_seed, rbs_for_bandwidth, DeviceSpec, FadingModel, McsTable, NrCarrier, NrSpec,
            Phy, TddPattern,
        };
        let check = |name: &str, v: f64, lo: f64, hi: f64| {
            anyhow::ensure!(
                v.is_finite() && (lo..=hi).contains(&v),
                "--{name}: must be between {} and {} (got {})",
                fmt_num(lo),
                fmt_num(hi),
                fmt_num(v)
            );
            Ok(())
        };
        check("sinr-db", self.sinr_db, -30.0, 60.0)?;
        check("doppler", self.doppler, 0.0, 2000.0)?;
        anyhow::ensure!(
            self.seconds.is_finite() && self.seconds > 0.0 && self.seconds <= 86_400.0,
            "--seconds: must be above 0 and at most 86400 (got {})",
            fmt_num(self.seconds)
        );
        let phy = if self.rat == "nr" {
            let numerology = self.numerology.unwrap_or(1);
            let layers = self.layers.unwrap_or(2);
            anyhow::ensure!(
                numerology <= 3,
                "--numerology: must be 0 to 3 (got {numerology})"
            );
            anyhow::ensure!(
                dcemu::cell::nr::numerology::prbs_for_bandwidth(numerology, self.bandwidth_mhz)
                    .is_some(),
                "--bandwidth-mhz: numerology {numerology} has {:?} MHz (got {})",
                dcemu::cell::nr::numerology::bandwidths(numerology),
                fmt_num(self.bandwidth_mhz)
            );
            anyhow::ensure!(
                (1..=4).contains(&layers),
                "--layers: must be 1 to 4 (got {layers})"
            );
            let mut spec = NrSpec::new(numerology, self.bandwidth_mhz, layers);
            if self.mcs_table.as_deref() == Some("qam64") {
                spec.mcs_table = McsTable::Qam64;
            }
            if let Some(t) = &self.tdd {
                spec.tdd = Some(TddPattern::parse(t).map_err(|e| anyhow::anyhow!("--tdd: {e}"))?);
            }
            Phy::Nr(NrCarrier::new(&spec)?)
        } else {
            // An LTE cell has none of these: given, they would be ignored.
            let nr_only = [
                ("--numerology", self.numerology.is_some()),
                ("--layers", self.layers.is_some()),
                ("--mcs-table", self.mcs_table.is_some()),
                ("--tdd", self.tdd.is_some()),
            ];
            if let Some((name, _)) = nr_only.iter().find(|(_, given)| *given) {
                anyhow::bail!("{name}: an NR option; give --rat nr (an LTE cell has 1 ms TTIs, one layer, its own CQI table and FDD)");
            }
            let n_rb = rbs_for_bandwidth(self.bandwidth_mhz).ok_or_else(|| {
                anyhow::anyhow!(
                    "--bandwidth-mhz: must be 1.4, 3, 5, 10, 15 or 20 (got {})",
                    fmt_num(self.bandwidth_mhz)
                )
            })?;
            Phy::Lte { n_rb }
        };
        let tti = match &phy {
            Phy::Nr(c) => c.slot(),
            Phy::Lte { .. } => NS_PER_MS,
        };
        let fading = match self.fading.as_str() {
            "none" => FadingModel::None,
            _ => FadingModel::Rayleigh,
        };
        let d = DeviceSpec::new(self.sinr_db, self.doppler, fading);
        d.validate()?;
        Ok(Channel {
            phy,
            device: d,
            tti,
            ttis: (self.seconds * 1e9 / tti as f64).round().max(1.0) as u64,
            seed: device_seed(self.seed, 0),
        })
    }
}

/// One device's channel over `ttis` TTIs of `tti`.
struct Channel {
    phy: dcemu::cell::Phy,
    device: dcemu::cell::DeviceSpec,
    tti: u64,
    ttis: u64,
    seed: u64,
}

impl Channel {
    /// The bits of every TTI (NR: slot) in turn, made as they are read: a day of TTIs as a
    /// trace would not fit in memory.
    fn bits(&self) -> anyhow::Result<impl Iterator<Item = u64> + '_> {
        dcemu::cell::phy_capacity_iter(&self.phy, &self.device, self.tti, self.seed, self.ttis)
    }
}

fn parse_sn_bits(s: &str) -> Result<u8, String> {
    match s {
        "12" | "16" | "18" => Ok(s.parse().unwrap()),
        _ => Err(format!("must be 12, 16 or 18 (got {})", clip(s))),
    }
}

/// Largest `--spin-us`: past 10 ms of busy-waiting per deadline dcemu would just spin.
const MAX_SPIN_US: u32 = 10_000;

fn parse_spin_us(s: &str) -> Result<u32, String> {
    s.parse().ok().filter(|v| *v <= MAX_SPIN_US).ok_or_else(|| {
        format!(
            "must be an integer between 0 and {MAX_SPIN_US} (got {})",
            clip(s)
        )
    })
}

fn parse_initial_count(s: &str) -> Result<u32, String> {
    s.parse().map_err(|_| {
        format!(
            "must be a COUNT between 0 and {} (2^32 - 1) (got {})",
            u32::MAX,
            clip(s)
        )
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match real_main(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dcemu: error: {}", one_line(&format!("{e:#}")));
            ExitCode::from(1)
        }
    }
}

/// Longest error message printed, characters. Every value a message echoes is cut to
/// about 120 characters where it is formatted; this only guards against one that is not.
const MAX_MESSAGE: usize = 2_000;

/// An error message as one line of at most [`MAX_MESSAGE`] characters.
fn one_line(msg: &str) -> String {
    let msg = msg.replace(['\n', '\r'], " ");
    match msg.char_indices().nth(MAX_MESSAGE) {
        None => msg,
        Some((at, _)) => format!(
            "{}... (message cut: {} characters)",
            &msg[..at],
            msg.chars().count()
        ),
    }
}

fn real_main(cli: Cli) -> anyhow::Result<()> {
    match cli.cmd {
        Cmd::Run {
            scenario,
            duration,
            stats,
            pcap,
            pcap_server,
            pcap_legs,
            ready_file,
            spin_us,
            realtime,
            busy_poll,
            idle_halt,
            tun_offload,
        } => {
            let s = config::load(&scenario)?;
            if let Some(d) = duration {
                // Also keeps Duration::from_secs_f64 from panicking on huge values.
                anyhow::ensure!(
                    d > 0.0 && d <= MAX_TIME_S as f64,
                    "--duration: must be a number of seconds above 0 and at most {MAX_TIME_S} \
                     (10 years) (got {})",
                    fmt_num(d)
                );
            }
            let opts = RunOptions {
                duration: duration.map(Duration::from_secs_f64),
                stats_path: stats,
                pcap_path: pcap,
                pcap_server_path: pcap_server,
                pcap_legs_dir: pcap_legs,
                ready_file,
                spin_us,
                realtime,
                busy_poll,
                idle_halt,
                offload: Offload {
                    read: matches!(tun_offload, TunOffload::All | TunOffload::Read),
                    write: matches!(tun_offload, TunOffload::All | TunOffload::Write),
                },
            };
            run(&s, &opts)?;
        }
        Cmd::Sim {
            scenario,
            workload,
            stats,
            duration,
        } => sim(&scenario, &workload, stats.as_deref(), duration)?,
        Cmd::Check { scenario } => {
            let s = config::load(&scenario)?;
            let text = toml::to_string_pretty(&s.file)?;
            std::io::stdout().write_all(text.as_bytes())?;
        }
        Cmd::Defaults => print!("{}", config::default_toml()),
        Cmd::Limits => {
            let limits: serde_json::Map<String, serde_json::Value> = config::LIMITS
                .iter()
                .map(|&(name, lo, hi)| (name.to_string(), serde_json::json!([lo, hi])))
                .collect();
            println!("{}", serde_json::Value::Object(limits));
        }
        Cmd::CellCapacity { channel } => {
            let c = channel.channel()?;
            let mut sum = dcemu::cell::Summary::default();
            c.bits()?.for_each(|b| sum.add(b));
            println!("{}", serde_json::to_string(&sum.finish(c.tti))?);
        }
        Cmd::CellTrace {
            channel,
            format: _,
            out,
        } => cell_trace(&channel, &out)?,
        Cmd::PdcpReplay {
            sn_bits,
            t_reordering,
            initial_count,
            out_of_order,
        } => pdcp_replay(sn_bits, &t_reordering, initial_count, out_of_order)?,
    }
    Ok(())
}

/// `dcemu sim`: the scenario and workload on the simulation driver, its summary on stdout.
fn sim(
    scenario: &Path,
    workload: &Path,
    stats: Option<&Path>,
    duration: Option<f64>,
) -> anyhow::Result<()> {
    let s = config::load(scenario)?;
    let mut w = dcemu::sim::load_workload(workload)?;
    if let Some(d) = duration {
        anyhow::ensure!(
            d.is_finite() && d > 0.0 && d <= MAX_TIME_S as f64,
            "--duration: must be more than 0 and at most {MAX_TIME_S} (got {})",
            fmt_num(d)
        );
        w.duration = Some(from_ms(d * 1e3));
    }
    let controllers = |kind, transport, mss| {
        let flavor = match transport {
            dcemu::sim::Transport::Quic => dcemu::model::cc::Flavor::Aioquic,
            dcemu::sim::Transport::Tcp => dcemu::model::cc::Flavor::Linux,
        };
        dcemu::model::cc::build(kind, flavor, mss)
    };
    let mut out = StatsOut::open(stats)?;
    let summary = dcemu::sim::run(&s, &w, &controllers, &mut out)?;
    out.close()?;
    if summary.ended == "horizon" {
        let open: Vec<_> = summary
            .flows
            .iter()
            .filter(|f| f.done_ms.is_none())
            .collect();
        let mut names: Vec<String> = open
            .iter()
            .take(10)
            .map(|f| format!("{} ({} of {} bytes)", f.name, f.bytes, f.size))
            .collect();
        if open.len() > names.len() {
            names.push(format!("and {} more", open.len() - names.len()));
        }
        eprintln!(
            "dcemu: sim: stopped at {} s of virtual time, {} s after the last flow's \
             start (no --duration or duration_s given); {} of {} flows not done: {}",
            fmt_num(summary.t_ms / 1e3),
            dcemu::sim::DEFAULT_HORIZON_S,
            open.len(),
            summary.flows.len(),
            names.join(", ")
        );
    }
    if stats.is_none_or(|p| p.as_os_str() != "-") {
        println!("{}", serde_json::to_string(&summary)?);
    }
    Ok(())
}

/// `dcemu cell-trace`: the channel's transmission opportunities as a mahimahi trace,
/// written as they are made; `out` is opened at the first (a channel with none writes
/// nothing).
fn cell_trace(channel: &ChannelArgs, out: &Path) -> anyhow::Result<()> {
    let c = channel.channel()?;
    let cannot = |e: std::io::Error| anyhow::anyhow!("--out: cannot write {}: {e}", out.display());
    let mut o = dcemu::cell::Opportunities::new(c.tti, 1500);
    let mut w: Option<std::io::BufWriter<Box<dyn Write>>> = None;
    for bits in c.bits()? {
        let (ms, k) = o.push(bits);
        if k == 0 {
            continue;
        }
        let w = match &mut w {
            Some(w) => w,
            None => {
                let sink: Box<dyn Write> = if out.as_os_str() == "-" {
                    Box::new(std::io::stdout())
                } else {
                    Box::new(std::fs::File::create(out).map_err(cannot)?)
                };
                w.insert(std::io::BufWriter::with_capacity(1 << 16, sink))
            }
        };
        for _ in 0..k {
            writeln!(w, "{ms}").map_err(cannot)?;
        }
    }
    match w {
        Some(mut w) => w.flush().map_err(cannot),
        None => anyhow::bail!(
            "--sinr-db: the channel carries not one 1500-byte packet in {} s; a trace \
             needs at least one",
            fmt_num(channel.seconds)
        ),
    }
}

/// `dcemu pdcp-replay`: PDCP reception of the SNs on stdin, its releases on stdout.
fn pdcp_replay(
    sn_bits: u8,
    t_reordering: &str,
    initial_count: u32,
    out_of_order: bool,
) -> anyhow::Result<()> {
    let t = match t_reordering {
        "inf" | "infinity" => None,
        v => match v.parse::<f64>() {
            Ok(ms) if (0.0..=MAX_T_REORDERING_MS).contains(&ms) => Some(from_ms(ms)),
            _ => anyhow::bail!(
                "--t-reordering: must be a number of ms between 0 and {MAX_T_REORDERING_MS} \
                 (1 hour), or \"inf\" (got {})",
                clip(v)
            ),
        },
    };
    let opts = ReplayOptions {
        sn_bits,
        t_reordering: t,
        initial_count,
        out_of_order,
    };
    config::input::check_stdin("pdcp-replay")?;
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    run_replay(
        &opts,
        BufReader::new(stdin.lock()),
        std::io::BufWriter::new(stdout.lock()),
        std::io::stderr(),
    )?;
    Ok(())
}

/// Where `dcemu sim` writes its records: stdout, a file, a gzip-compressed file, or nowhere.
enum StatsOut {
    Plain(std::io::BufWriter<Box<dyn Write>>),
    Gzip(std::io::BufWriter<flate2::write::GzEncoder<std::fs::File>>),
    None,
}

impl StatsOut {
    fn open(path: Option<&std::path::Path>) -> anyhow::Result<Self> {
        let Some(p) = path else {
            return Ok(StatsOut::None);
        };
        if p.as_os_str() == "-" {
            return Ok(StatsOut::Plain(std::io::BufWriter::new(Box::new(
                std::io::stdout(),
            ))));
        }
        let file = std::fs::File::create(p)
            .map_err(|e| anyhow::anyhow!("cannot create stats file {}: {e}", p.display()))?;
        Ok(if p.extension().is_some_and(|e| e == "gz") {
            // The fastest level: most of the gain (about 10:1 on the records) for little CPU.
            StatsOut::Gzip(std::io::BufWriter::new(flate2::write::GzEncoder::new(
                file,
                flate2::Compression::fast(),
            )))
        } else {
            StatsOut::Plain(std::io::BufWriter::new(Box::new(file)))
        })
    }

    /// Flushes everything, and ends a gzip stream (its trailer), reporting any error.
    fn close(self) -> anyhow::Result<()> {
        match self {
            StatsOut::Plain(mut w) => w.flush()?,
            StatsOut::Gzip(w) => {
                w.into_inner().map_err(|e| e.into_error())?.finish()?;
            }
            StatsOut::None => {}
        }
        Ok(())
    }
}

impl Write for StatsOut {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            StatsOut::Plain(w) => w.write(buf),
            StatsOut::Gzip(w) => w.write(buf),
            StatsOut::None => Ok(buf.len()),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            StatsOut::Plain(w) => w.flush(),
            StatsOut::Gzip(w) => w.flush(),
            StatsOut::None => Ok(()),
        }
    }
}
