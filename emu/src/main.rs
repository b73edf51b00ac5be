//! The `dcemu` command.

use std::io::{BufReader, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};

use dcemu::base::time::from_ms;
use dcemu::config;
use dcemu::io::runtime::{run, RunOptions};
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

#[derive(Subcommand)]
enum Cmd {
    /// Forward packets between the server and client namespaces of a scenario (root).
    ///
    /// Creates one TUN device in each namespace, forwards until SIGINT/SIGTERM or
    /// --duration, writes a stats record per interval and a final summary, and removes
    /// the devices on exit.
    Run {
        /// Scenario file (TOML); see the README for every field.
        scenario: PathBuf,
        /// Stop after this many seconds.
        #[arg(long)]
        duration: Option<f64>,
        /// Stats output (JSON lines; "-" for stdout). Overrides stats.path.
        #[arg(long)]
        stats: Option<PathBuf>,
        /// Write a pcap of what the client receives. Overrides stats.pcap.
        #[arg(long)]
        pcap: Option<PathBuf>,
        /// Write "PID UNIX_NS" to this file once forwarding has started (UNIX_NS: Unix
        /// time in ns of emulator time 0, the origin of the stats' t_ms).
        #[arg(long)]
        ready_file: Option<PathBuf>,
        /// Busy-wait the last N microseconds before each deadline (costs CPU, cuts lateness).
        #[arg(long, default_value_t = dcemu::io::DEFAULT_SPIN_US)]
        spin_us: u32,
        /// Run with real-time (SCHED_FIFO) priority: shorter timer tails when the CPU is
        /// contended (emu/src/io/TIMER.md), but dcemu then wins every contest for CPU
        /// against the endpoints; off by default.
        #[arg(long)]
        realtime: bool,
    },
    /// Validate a scenario and print it with every default filled in.
    Check { scenario: PathBuf },
    /// Print the default scenario (the reference testbed) as TOML.
    Defaults,
    /// Run the PDCP receiver offline on arrivals read from stdin.
    ///
    /// Input: one arrival per line, "<time_ms> <sn>", times non-decreasing. Output: one
    /// line per event, "deliver <time_ms> <count>" or "discard <time_ms> <sn>
    /// <late|duplicate|hfn>". Final counters as JSON on stderr.
    PdcpReplay {
        /// SN length in bits.
        #[arg(long, default_value_t = 12, value_parser = parse_sn_bits)]
        sn_bits: u8,
        /// t-Reordering in ms, or "inf".
        #[arg(long, default_value = "100")]
        t_reordering: String,
        /// Initial COUNT (RX_NEXT = RX_DELIV = this).
        #[arg(long, default_value_t = 0)]
        initial_count: u32,
        /// Out-of-order delivery mode.
        #[arg(long)]
        out_of_order: bool,
    },
}

fn parse_sn_bits(s: &str) -> Result<u8, String> {
    match s {
        "12" | "16" | "18" => Ok(s.parse().unwrap()),
        _ => Err(format!("must be 12, 16 or 18 (got {s:?})")),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match real_main(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dcemu: error: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn real_main(cli: Cli) -> anyhow::Result<()> {
    match cli.cmd {
        Cmd::Run {
            scenario,
            duration,
            stats,
            pcap,
            ready_file,
            spin_us,
            realtime,
        } => {
            let s = config::load(&scenario)?;
            if let Some(d) = duration {
                anyhow::ensure!(
                    d > 0.0 && d.is_finite(),
                    "--duration: must be a positive number of seconds (got {d})"
                );
            }
            anyhow::ensure!(
                spin_us <= 10_000,
                "--spin-us: must be between 0 and 10000 (got {spin_us})"
            );
            let opts = RunOptions {
                duration: duration.map(Duration::from_secs_f64),
                stats_path: stats,
                pcap_path: pcap,
                ready_file,
                spin_us,
                realtime,
            };
            run(&s, &opts)?;
        }
        Cmd::Check { scenario } => {
            let s = config::load(&scenario)?;
            let text = toml::to_string_pretty(&s.file)?;
            std::io::stdout().write_all(text.as_bytes())?;
        }
        Cmd::Defaults => print!("{}", config::default_toml()),
        Cmd::PdcpReplay {
            sn_bits,
            t_reordering,
            initial_count,
            out_of_order,
        } => {
            let t = match t_reordering.as_str() {
                "inf" | "infinity" => None,
                v => match v.parse::<f64>() {
                    Ok(ms) if ms >= 0.0 && ms.is_finite() => Some(from_ms(ms)),
                    _ => anyhow::bail!(
                        "--t-reordering: must be a number of ms >= 0 or \"inf\" (got {v:?})"
                    ),
                },
            };
            let opts = ReplayOptions {
                sn_bits,
                t_reordering: t,
                initial_count,
                out_of_order,
            };
            let stdin = std::io::stdin();
            let stdout = std::io::stdout();
            run_replay(
                &opts,
                BufReader::new(stdin.lock()),
                std::io::BufWriter::new(stdout.lock()),
                std::io::stderr(),
            )?;
        }
    }
    Ok(())
}
