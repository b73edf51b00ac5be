//! Measures wake-up lateness of the Waiter back-ends (see src/io/TIMER.md).

#![deny(unsafe_code)]

use clap::Parser;
use dcemu::io::timer::{probe, pwait2_available, Backend, ProbeSpec};

/// Measures how late each timer configuration wakes (epoll ms timeout, timerfd,
/// epoll_pwait2; timer slack; SCHED_FIFO; spinning before the deadline; idle CPUs kept
/// polling, "idle-poll", as dcemu run holds them) and prints a
/// Markdown table. Each configuration sleeps SAMPLES times for a random 50..2000 us in a
/// fresh thread, bounded to 120 s of wall time. Results: src/io/TIMER.md.
#[derive(Parser)]
#[command(name = "timer-probe")]
struct Args {
    /// Sleeps per configuration.
    #[arg(default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    samples: u64,
    /// Only configurations whose label contains this (e.g. "pwait2 slack1").
    #[arg(default_value = "")]
    filter: String,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let (samples, filter) = (args.samples as usize, args.filter);

    let mut specs = Vec::new();
    let mut add = |label: &str, backend, slack: Option<u64>, fifo: bool, spin_us| {
        specs.push(ProbeSpec {
            label: label.to_string(),
            backend,
            slack_ns: slack,
            fifo_prio: fifo.then_some(10),
            spin_us,
            // "idle-poll" rows hold the CPUs' wake-up latency at 0 (dcemu's default).
            idle_poll: label.contains("idle-poll"),
            samples,
            min_us: 50,
            max_us: 2000,
            max_seconds: 120.0,
        })
    };
    use Backend::*;
    add("epoll-ms", EpollMs, None, false, 0);
    add("timerfd", Timerfd, None, false, 0);
    add("pwait2", Pwait2, None, false, 0);
    add("epoll-ms slack1", EpollMs, Some(1), false, 0);
    add("timerfd slack1", Timerfd, Some(1), false, 0);
    add("pwait2 slack1", Pwait2, Some(1), false, 0);
    add("epoll-ms fifo", EpollMs, None, true, 0);
    add("timerfd fifo", Timerfd, None, true, 0);
    add("pwait2 fifo", Pwait2, None, true, 0);
    add("timerfd slack1 spin20", Timerfd, Some(1), false, 20);
    add("timerfd slack1 spin50", Timerfd, Some(1), false, 50);
    add("pwait2 slack1 spin20", Pwait2, Some(1), false, 20);
    add("pwait2 slack1 spin50", Pwait2, Some(1), false, 50);
    add("timerfd slack1 spin100", Timerfd, Some(1), false, 100);
    add("pwait2 slack1 spin100", Pwait2, Some(1), false, 100);
    add("pwait2 fifo spin20", Pwait2, None, true, 20);
    add("pwait2 fifo spin50", Pwait2, None, true, 50);
    add("pwait2 slack1 idle-poll", Pwait2, Some(1), false, 0);
    add("pwait2 slack1 spin50 idle-poll", Pwait2, Some(1), false, 50);
    add("pwait2 fifo spin50 idle-poll", Pwait2, None, true, 50);

    println!("pwait2 available: {}", pwait2_available());
    println!(
        "| config | samples | p50 us | p99 us | p99.9 us | max us | mean us | CPU s/s | fifo |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---|");
    for s in specs.iter().filter(|s| s.label.contains(&filter)) {
        if s.backend == Pwait2 && !pwait2_available() {
            println!("| {} | - | n/a (epoll_pwait2 unavailable) |", s.label);
            continue;
        }
        let r = probe(s)?;
        let us = |ns: u64| format!("{:.1}", ns as f64 / 1000.0);
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {:.3} | {} |",
            r.label,
            r.samples,
            us(r.p50_ns),
            us(r.p99_ns),
            us(r.p999_ns),
            us(r.max_ns),
            us(r.mean_ns),
            r.cpu_per_s,
            if r.fifo { "yes" } else { "no" }
        );
    }
    Ok(())
}
