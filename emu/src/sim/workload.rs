//! The workload of a simulation, as a TOML file: one `[[flow]]` table per connection.
//!
//! ```toml
//! duration_s = 60          # optional: stop then even if flows are not done
//! [[flow]]
//! name = "dc"
//! transport = "quic"       # "quic" (aioquic's behaviour) or "tcp" (Linux's)
//! cc = "reno"              # reno, cubic, bbr
//! server_port = 4433       # the bearer rules see it
//! client_port = 40000      # optional: 40000 + the flow's index
//! size = 100000000         # bytes of the object
//! start_s = 0.0            # when the client starts (at most 3600)
//! datagram = 1252          # QUIC: UDP payload of a full packet (aioquic's max_datagram_size)
//! quic = "aioquic-1.7"     # QUIC: whose behaviour, "aioquic-1.7" or "aioquic-0.8" (draft 27)
//! mss = 1448               # TCP: payload of a full segment
//! ecn = false              # TCP: ECN negotiated (tcp_ecn = 1 both ends): ECT(0) data, ECE/CWR
//! rmem = 212992            # client receive buffer, bytes (UDP: rmem_default; TCP: tcp_rmem's max)
//! truesize = 2304         # bytes the kernel charges per packet into the UDP buffer
//! app_packet_us = 0.0      # client time per packet (a CPU-bound receiver); 0: none
//! # or drawn per packet: points (probability, µs) of the measured quantile function
//! app_packet_quantiles_us = [[0.0, 60.0], [0.5, 140.0], [0.99, 420.0]]
//! send_packet_us = 0.0     # server CPU per packet; 0: none
//! ```

use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::Deserialize;

use crate::base::time::{from_ms, Nanos, MAX_TIME_S};
use crate::config::input::{clip, read_toml_input};
use crate::config::parse_toml;
use crate::config::validate::{fmt_num, is_name, NAME_RULE};
use crate::model::cc::CcKind;

/// Most flows in a workload: each is a pair of modelled endpoints and a host, and its
/// default client port (40000 + index) must stay a port; the experiments run up to 32.
pub const MAX_FLOWS: usize = 10_000;
/// Latest start of a flow, s: the simulation runs through the idle time before it, a
/// record per stats interval (ten years' start ran for days).
pub const MAX_START_S: f64 = 3_600.0;
/// Most points of `app_packet_quantiles_us`: a measured distribution needs dozens.
pub const MAX_QUANTILE_POINTS: usize = 1_000;
/// Largest object, bytes (1 TB): hours at 1 Gbit/s, and every byte count of the models
/// stays far from overflowing.
pub const MAX_SIZE: u64 = 1_000_000_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    Quic,
    Tcp,
}

impl Transport {
    /// The name the workload file gives it.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Quic => "quic",
            Transport::Tcp => "tcp",
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FlowFile {
    name: String,
    transport: Transport,
    #[serde(default = "d_cc")]
    cc: String,
    server_port: u16,
    client_port: Option<u16>,
    size: u64,
    #[serde(default)]
    start_s: f64,
    #[serde(default = "d_datagram")]
    datagram: usize,
    #[serde(default = "d_quic")]
    quic: String,
    #[serde(default = "d_mss")]
    mss: usize,
    #[serde(default)]
    ecn: bool,
    #[serde(default = "d_rmem")]
    rmem: u64,
    #[serde(default = "d_truesize")]
    truesize: u64,
    #[serde(default)]
    app_packet_us: f64,
    app_packet_quantiles_us: Option<Vec<(f64, f64)>>,
    #[serde(default)]
    send_packet_us: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkloadFile {
    duration_s: Option<f64>,
    #[serde(default)]
    flow: Vec<FlowFile>,
}

fn d_cc() -> String {
    "reno".into()
}
fn d_datagram() -> usize {
    1252
}
fn d_quic() -> String {
    "aioquic-1.7".into()
}
fn d_mss() -> usize {
    1448
}
fn d_rmem() -> u64 {
    212_992
}
/// What Linux charges a datagram of 700 to 1472 bytes that dcemu writes into the client's
/// TUN device (measured: model/host.rs).
fn d_truesize() -> u64 {
    2304
}

/// The client application's time per packet.
#[derive(Clone, Debug, PartialEq)]
pub enum AppPacket {
    Fixed(Nanos),
    /// Points (probability, time) of a quantile function, probabilities rising from 0.
    Quantiles(Vec<(f64, Nanos)>),
}

/// One validated flow.
#[derive(Clone, Debug)]
pub struct FlowSpec {
    pub name: String,
    pub transport: Transport,
    pub cc: CcKind,
    pub server_port: u16,
    pub client_port: u16,
    pub size: u64,
    pub start: Nanos,
    pub datagram: usize,
    /// QUIC: aioquic 0.8's behaviour (PTO probes only, initial RTT 0.5 s) instead of 1.7's.
    pub aioquic08: bool,
    pub mss: usize,
    /// TCP: ECN negotiated (RFC 3168, Linux's `tcp_ecn = 1` at both ends).
    pub ecn: bool,
    pub rmem: u64,
    pub truesize: u64,
    pub app_packet: AppPacket,
    pub send_packet: Nanos,
}

#[derive(Clone, Debug)]
pub struct Workload {
    pub duration: Option<Nanos>,
    pub flows: Vec<FlowSpec>,
}

pub fn load_workload(path: &Path) -> Result<Workload> {
    let text = read_toml_input(path, "workload")?;
    parse_workload(&text).with_context(|| format!("workload {}", path.display()))
}

/// Parses and checks a workload; errors name the field and the allowed range.
pub fn parse_workload(text: &str) -> Result<Workload> {
    let file: WorkloadFile = parse_toml(text)?;
    let duration = match file.duration_s {
        None => None,
        Some(d) if d.is_finite() && d > 0.0 && d <= MAX_TIME_S as f64 => Some(from_ms(d * 1e3)),
        Some(d) => bail!(
            "duration_s: must be more than 0 and at most {MAX_TIME_S} (got {})",
            fmt_num(d)
        ),
    };
    if file.flow.is_empty() {
        bail!("flow: at least one [[flow]] is needed");
    }
    if file.flow.len() > MAX_FLOWS {
        bail!(
            "flow: must list at most {MAX_FLOWS} flows (got {})",
            file.flow.len()
        );
    }
    let mut flows = Vec::new();
    // Each flow's index by name and by (server, client) port: none may share either.
    let mut names = std::collections::HashMap::new();
    let mut ports_seen = std::collections::HashMap::new();
    for (i, f) in file.flow.into_iter().enumerate() {
        let at = |field: &str| format!("flow[{i}].{field}");
        if !is_name(&f.name) {
            bail!(
                "{}: must be {NAME_RULE} (got {})",
                at("name"),
                clip(&f.name)
            );
        }
        let cc = CcKind::parse(&f.cc).with_context(|| {
            format!(
                "{}: one of reno, cubic, bbr (got {})",
                at("cc"),
                clip(&f.cc)
            )
        })?;
        if !(1..=MAX_SIZE).contains(&f.size) {
            bail!(
                "{}: must be between 1 and {MAX_SIZE} bytes (got {})",
                at("size"),
                f.size
            );
        }
        if !(f.start_s.is_finite() && (0.0..=MAX_START_S).contains(&f.start_s)) {
            bail!(
                "{}: must be between 0 and {MAX_START_S} (got {})",
                at("start_s"),
                fmt_num(f.start_s)
            );
        }
        if !(200..=65_000).contains(&f.datagram) {
            bail!(
                "{}: must be between 200 and 65000 (got {})",
                at("datagram"),
                f.datagram
            );
        }
        let aioquic08 = match f.quic.as_str() {
            "aioquic-1.7" => false,
            "aioquic-0.8" => true,
            other => bail!(
                "{}: \"aioquic-1.7\" or \"aioquic-0.8\" (got {})",
                at("quic"),
                clip(other)
            ),
        };
        if f.ecn && f.transport != Transport::Tcp {
            bail!(
                "{}: TCP only (the QUIC model is aioquic's, which does not use ECN)",
                at("ecn")
            );
        }
        if !(88..=65_000).contains(&f.mss) {
            bail!(
                "{}: must be between 88 and 65000 (got {})",
                at("mss"),
                f.mss
            );
        }
        if !(1024..=1 << 31).contains(&f.rmem) {
            bail!(
                "{}: must be between 1024 and 2147483648 (got {})",
                at("rmem"),
                f.rmem
            );
        }
        if !(64..=1 << 20).contains(&f.truesize) {
            bail!(
                "{}: must be between 64 and 1048576 (got {})",
                at("truesize"),
                f.truesize
            );
        }
        let app_packet = match &f.app_packet_quantiles_us {
            None => AppPacket::Fixed(from_ms(f.app_packet_us / 1e3)),
            Some(_) if f.app_packet_us != 0.0 => bail!(
                "{}: give app_packet_us or app_packet_quantiles_us, not both",
                at("app_packet_quantiles_us")
            ),
            Some(points) => AppPacket::Quantiles(
                quantile_points(points)
                    .map_err(|e| anyhow::anyhow!("{}: {e}", at("app_packet_quantiles_us")))?,
            ),
        };
        for (name, v) in [
            ("app_packet_us", f.app_packet_us),
            ("send_packet_us", f.send_packet_us),
        ] {
            if !(v.is_finite() && (0.0..=1e6).contains(&v)) {
                bail!(
                    "{}: must be between 0 and 1000000 (got {})",
                    at(name),
                    fmt_num(v)
                );
            }
        }
        if f.server_port == 0 {
            bail!("{}: must be between 1 and 65535", at("server_port"));
        }
        if let Some(j) = names.insert(f.name.clone(), i) {
            bail!(
                "{}: flow[{j}] has the name {} too",
                at("name"),
                clip(&f.name)
            );
        }
        let client_port = f.client_port.unwrap_or(40_000 + i as u16);
        let ports = (f.server_port, client_port);
        if let Some(j) = ports_seen.insert(ports, i) {
            bail!(
                "{}: flow[{j}] has the same ports (server {}, client {}): their packets would mix",
                at("server_port"),
                ports.0,
                ports.1
            );
        }
        flows.push(FlowSpec {
            client_port,
            name: f.name,
            transport: f.transport,
            cc,
            server_port: f.server_port,
            size: f.size,
            start: from_ms(f.start_s * 1e3),
            datagram: f.datagram,
            aioquic08,
            mss: f.mss,
            ecn: f.ecn,
            rmem: f.rmem,
            truesize: f.truesize,
            app_packet,
            send_packet: from_ms(f.send_packet_us / 1e3),
        });
    }
    Ok(Workload { duration, flows })
}

/// Why a quantile function's points were refused (the caller names the field).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum QuantileError {
    #[error("must list at most {MAX_QUANTILE_POINTS} points (got {0})")]
    TooMany(usize),
    #[error("at least two [probability, µs] points, the first at probability 0")]
    TooFewOrNotFromZero,
    #[error("point {point}: probability must be between 0 and 1 (got {got})")]
    Probability { point: usize, got: String },
    #[error("point {point}: µs must be between 0 and 1000000 (got {got})")]
    Micros { point: usize, got: String },
    #[error("point {0}: probabilities must rise and times must not fall")]
    NotRising(usize),
}

/// Checks a quantile function's points: at least two, the first at probability 0,
/// probabilities rising up to at most 1, times (µs, 0 to 1000000) not falling.
fn quantile_points(points: &[(f64, f64)]) -> std::result::Result<Vec<(f64, Nanos)>, QuantileError> {
    if points.len() > MAX_QUANTILE_POINTS {
        return Err(QuantileError::TooMany(points.len()));
    }
    if points.len() < 2 || points[0].0 != 0.0 {
        return Err(QuantileError::TooFewOrNotFromZero);
    }
    let mut out: Vec<(f64, Nanos)> = Vec::with_capacity(points.len());
    for (i, &(p, us)) in points.iter().enumerate() {
        if !(p.is_finite() && (0.0..=1.0).contains(&p)) {
            let got = fmt_num(p);
            return Err(QuantileError::Probability { point: i, got });
        }
        if !(us.is_finite() && (0.0..=1e6).contains(&us)) {
            let got = fmt_num(us);
            return Err(QuantileError::Micros { point: i, got });
        }
        let t = from_ms(us / 1e3);
        if let Some(&(p0, t0)) = out.last() {
            if p <= p0 || t < t0 {
                return Err(QuantileError::NotRising(i));
            }
        }
        out.push((p, t));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_errors_name_the_field() {
        let w = parse_workload(
            "[[flow]]\nname = \"dc\"\ntransport = \"quic\"\nserver_port = 4433\nsize = 1000\n",
        )
        .unwrap();
        let f = &w.flows[0];
        assert_eq!(
            (f.cc, f.client_port, f.datagram, f.rmem),
            (CcKind::Reno, 40_000, 1252, 212_992)
        );
        for (text, needle) in [
            ("[[flow]]\nname=\"a\"\ntransport=\"quic\"\nserver_port=1\nsize=0\n", "flow[0].size"),
            ("[[flow]]\nname=\"a\"\ntransport=\"quic\"\nserver_port=1\nsize=1\ncc=\"vegas\"\n", "flow[0].cc"),
            ("[[flow]]\nname=\"a\"\ntransport=\"sctp\"\nserver_port=1\nsize=1\n", "transport"),
            ("[[flow]]\nname=\"a\"\ntransport=\"quic\"\nserver_port=1\nsize=1\nrmem=5\n", "flow[0].rmem"),
            ("[[flow]]\nname=\"a\"\ntransport=\"quic\"\nserver_port=1\nsize=1\necn=true\n", "flow[0].ecn: TCP only"),
            ("[[flow]]\nname=\"a\"\ntransport=\"quic\"\nserver_port=1\nsize=1\nbogus=1\n", "bogus"),
            ("[[flow]]\nname=\"a\"\ntransport=\"quic\"\nserver_port=1\nsize=1\napp_packet_quantiles_us=[[0.1,5.0],[1.0,9.0]]\n", "flow[0].app_packet_quantiles_us"),
            ("[[flow]]\nname=\"a\"\ntransport=\"quic\"\nserver_port=1\nsize=1\napp_packet_quantiles_us=[[0.0,5.0],[0.5,4.0]]\n", "must not fall"),
            ("[[flow]]\nname=\"a\"\ntransport=\"quic\"\nserver_port=1\nsize=1\ntruesize=8\n", "flow[0].truesize"),
            ("duration_s = -1\n[[flow]]\nname=\"a\"\ntransport=\"quic\"\nserver_port=1\nsize=1\n", "duration_s"),
            ("[[flow]]\nname=\"a\"\ntransport=\"quic\"\nserver_port=1\nsize=1\nstart_s=315360000\n", "flow[0].start_s: must be between 0 and 3600"),
            ("[[flow]]\nname=\"a\"\ntransport=\"quic\"\nserver_port=1\nsize=1\n[[flow]]\nname=\"a\"\ntransport=\"tcp\"\nserver_port=2\nsize=1\n", "flow[1].name: flow[0] has the name \"a\" too"),
            ("[[flow]]\nname=\"a\"\ntransport=\"quic\"\nserver_port=1\nsize=1\nclient_port=40001\n[[flow]]\nname=\"b\"\ntransport=\"tcp\"\nserver_port=1\nsize=1\n", "flow[1].server_port: flow[0] has the same ports (server 1, client 40001)"),
            ("", "at least one"),
        ] {
            let e = format!("{:#}", parse_workload(text).unwrap_err());
            assert!(e.contains(needle), "{e:?} should name {needle}");
        }
    }
}
