//! The scenario file as written: the serde `*File` structs and their defaults, which are
//! the reference testbed's. Unknown fields are rejected; ranges are checked later by
//! `validate.rs`.

use std::net::Ipv4Addr;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    /// Seed for every random stage (delay jitter, loss); runs with the same seed and the
    /// same arrivals make the same decisions.
    #[serde(default = "d_seed")]
    pub seed: u64,
    #[serde(default)]
    pub topology: TopologyFile,
    #[serde(default)]
    pub pdcp: PdcpFile,
    #[serde(default)]
    pub split: SplitFile,
    #[serde(default)]
    pub stats: StatsFile,
    #[serde(default = "d_legs")]
    pub legs: Vec<LegFile>,
    #[serde(default)]
    pub bearers: Vec<BearerFile>,
    /// Bearer for packets no rule matches (default: the first bearer).
    #[serde(default)]
    pub default_bearer: Option<String>,
    #[serde(default)]
    pub schedule: Vec<ChangeFile>,
}

fn d_seed() -> u64 {
    1
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TopologyFile {
    #[serde(default = "d_server_ns")]
    pub server_netns: String,
    #[serde(default = "d_client_ns")]
    pub client_netns: String,
    #[serde(default = "d_server_addr")]
    pub server_addr: Ipv4Addr,
    #[serde(default = "d_client_addr")]
    pub client_addr: Ipv4Addr,
    /// More addresses of the client, one per extra path of a multipath transport (each
    /// matched to its leg by a `path` bearer's `client_addr` rule); the server routes them
    /// into its device.
    #[serde(default)]
    pub client_extra_addrs: Vec<Ipv4Addr>,
    #[serde(default = "d_mtu")]
    pub mtu: u32,
    #[serde(default = "d_server_tun")]
    pub server_tun: String,
    #[serde(default = "d_client_tun")]
    pub client_tun: String,
}

fn d_server_ns() -> String {
    "dclab-server".into()
}
fn d_client_ns() -> String {
    "dclab-client".into()
}
fn d_server_addr() -> Ipv4Addr {
    Ipv4Addr::new(198, 18, 0, 1)
}
fn d_client_addr() -> Ipv4Addr {
    Ipv4Addr::new(198, 18, 0, 2)
}
fn d_mtu() -> u32 {
    1500
}
fn d_server_tun() -> String {
    "dcemu-s".into()
}
fn d_client_tun() -> String {
    "dcemu-c".into()
}

impl Default for TopologyFile {
    fn default() -> Self {
        TopologyFile {
            server_netns: d_server_ns(),
            client_netns: d_client_ns(),
            server_addr: d_server_addr(),
            client_addr: d_client_addr(),
            client_extra_addrs: vec![],
            mtu: d_mtu(),
            server_tun: d_server_tun(),
            client_tun: d_client_tun(),
        }
    }
}

/// A duration in ms, or the string "inf".
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq)]
#[serde(untagged, expecting = "must be a number of ms or \"inf\"")]
pub enum MsOrInf {
    Ms(f64),
    Word(InfWord),
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "lowercase")]
pub enum InfWord {
    Inf,
    Infinity,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PdcpFile {
    #[serde(default = "d_sn_bits")]
    pub sn_bits: u8,
    #[serde(default = "d_header")]
    pub header_bytes: u32,
    #[serde(default = "d_t_reord")]
    pub t_reordering_ms: MsOrInf,
    #[serde(default = "d_true")]
    pub reordering: bool,
    #[serde(default)]
    pub out_of_order: bool,
    #[serde(default)]
    pub initial_count: u32,
    /// Processing time of each PDCP entity, ms (the reference study's NFQUEUE proxies took
    /// about 1): every packet, each way, waits this long at the entity where it enters the
    /// emulated network and again at the one where it leaves. 0 (default) adds nothing.
    #[serde(default)]
    pub processing_ms: f64,
}

fn d_sn_bits() -> u8 {
    16
}
fn d_header() -> u32 {
    2
}
fn d_t_reord() -> MsOrInf {
    MsOrInf::Ms(200.0)
}
fn d_true() -> bool {
    true
}

impl Default for PdcpFile {
    fn default() -> Self {
        PdcpFile {
            sn_bits: d_sn_bits(),
            header_bytes: d_header(),
            t_reordering_ms: d_t_reord(),
            reordering: true,
            out_of_order: false,
            initial_count: 0,
            processing_ms: 0.0,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SplitFile {
    #[serde(default = "d_batch")]
    pub batch: u32,
    /// Share per leg; default: equal shares over the bearer's legs.
    #[serde(default)]
    pub ratio: Option<Vec<f64>>,
    /// How PDUs are placed on the legs: `static` (batch and ratio), `ddds`, `delay-aware`
    /// or `delay-target` (flow-controlled by the secondary legs' reports; the bearer's
    /// first leg is the master's).
    #[serde(default)]
    pub policy: SplitPolicyName,
    /// Flow control: the secondary legs report every `period_ms`.
    #[serde(default = "d_period")]
    pub period_ms: f64,
    /// `ddds`: the queue delay the secondary asks for beyond its feedback loop;
    /// `delay-target`: the queue delay no leg's queue may exceed.
    #[serde(default = "d_target_delay")]
    pub target_delay_ms: f64,
    /// Flow control: the least a secondary asks for, and what it may get before its
    /// first report.
    #[serde(default = "d_min_bytes")]
    pub min_bytes: u64,
    /// `delay-target`: what the master's PDCP may hold unnumbered while every leg is at
    /// its target, in bytes, and how long an SDU may wait there (TS 38.323's discard
    /// timer) before it is discarded.
    #[serde(default = "d_hold_bytes")]
    pub hold_bytes: u64,
    #[serde(default = "d_discard_ms")]
    pub discard_ms: f64,
    /// Flow control: a secondary that holds the bearer's PDUs and serves none for
    /// `fallback_ms` reports a radio link outage, and the master sends its copies of what
    /// it sent there again on its own leg; 0: off.
    #[serde(default)]
    pub fallback_ms: f64,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum SplitPolicyName {
    #[default]
    Static,
    Ddds,
    DelayAware,
    DelayTarget,
}

fn d_period() -> f64 {
    10.0
}
fn d_target_delay() -> f64 {
    10.0
}
fn d_min_bytes() -> u64 {
    15_000
}
fn d_hold_bytes() -> u64 {
    4_000_000
}
fn d_discard_ms() -> f64 {
    100.0
}

fn d_batch() -> u32 {
    100
}
impl Default for SplitFile {
    fn default() -> Self {
        SplitFile {
            batch: d_batch(),
            ratio: None,
            policy: SplitPolicyName::Static,
            period_ms: d_period(),
            target_delay_ms: d_target_delay(),
            min_bytes: d_min_bytes(),
            hold_bytes: d_hold_bytes(),
            discard_ms: d_discard_ms(),
            fallback_ms: 0.0,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StatsFile {
    #[serde(default = "d_interval")]
    pub interval_ms: f64,
    /// JSON-lines output; "-" is standard output.
    #[serde(default)]
    pub path: Option<PathBuf>,
    /// pcap at the client's end: what dcemu delivers to the client and what the client sends.
    #[serde(default)]
    pub pcap: Option<PathBuf>,
}

fn d_interval() -> f64 {
    100.0
}

impl Default for StatsFile {
    fn default() -> Self {
        StatsFile {
            interval_ms: d_interval(),
            path: None,
            pcap: None,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LegFile {
    pub name: String,
    #[serde(default)]
    pub downlink: DirectionFile,
    #[serde(default)]
    pub uplink: Option<DirectionFile>,
    /// The X2/Xn hop from the master's PDCP to this leg (a secondary node's), crossed by the
    /// downlink PDUs of `dc` and `dup` bearers before the leg's own stages: its rate,
    /// delay and loss (no cell). Absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x2: Option<DirectionFile>,
}

fn d_legs() -> Vec<LegFile> {
    let uplink = DirectionFile {
        queue_packets: Some(10_000),
        ..DirectionFile::default()
    };
    vec![
        LegFile {
            name: "leg1".into(),
            downlink: DirectionFile::default(),
            uplink: Some(uplink),
            x2: None,
        },
        LegFile {
            name: "leg2".into(),
            downlink: DirectionFile::default(),
            uplink: None,
            x2: None,
        },
    ]
}

/// A rate: bit/s as a number, a string with a unit ("20mbit", "1.5 Gbit/s"), or "unlimited".
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(
    untagged,
    expecting = "must be a number of bit/s, a string like \"20mbit\" or \"1.5 Gbit/s\", or \"unlimited\""
)]
pub enum RateValue {
    Bps(f64),
    Text(String),
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TraceFile {
    pub path: PathBuf,
    /// "mahimahi" or "csv"; default from the extension (.csv is csv, anything else mahimahi).
    #[serde(default)]
    pub format: Option<String>,
    /// CSV column with kbit/s values.
    #[serde(default = "d_column")]
    pub column: String,
    /// CSV row duration.
    #[serde(default = "d_row_ms")]
    pub row_ms: u64,
    #[serde(default = "d_true")]
    pub looping: bool,
}

fn d_column() -> String {
    "DL_bitrate".into()
}
fn d_row_ms() -> u64 {
    1000
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(tag = "distribution", rename_all = "kebab-case", deny_unknown_fields)]
pub enum DelayFile {
    Constant { ms: f64 },
    Normal { mean_ms: f64, std_ms: f64 },
    Uniform { min_ms: f64, max_ms: f64 },
    Pareto { mean_ms: f64, std_ms: f64 },
    ParetoNormal { mean_ms: f64, std_ms: f64 },
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(tag = "model", rename_all = "kebab-case", deny_unknown_fields)]
pub enum LossFile {
    None,
    Bernoulli {
        percent: f64,
    },
    GilbertElliott {
        /// Good to bad transition probability per packet.
        p_percent: f64,
        /// Bad to good transition probability per packet.
        r_percent: f64,
        #[serde(default)]
        loss_good_percent: f64,
        #[serde(default = "d_hundred")]
        loss_bad_percent: f64,
    },
}

#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum LossAt {
    #[default]
    AfterRate,
    BeforeRate,
}

fn d_hundred() -> f64 {
    100.0
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DirectionFile {
    #[serde(default = "d_rate")]
    pub rate: RateValue,
    /// A bandwidth trace instead of a fixed rate.
    #[serde(default)]
    pub trace: Option<TraceFile>,
    /// Rate-stage queue limit in packets (the reference: 100 downlink, 10000 uplink).
    #[serde(default = "d_queue")]
    pub queue_packets: Option<u32>,
    #[serde(default)]
    pub queue_bytes: Option<u64>,
    #[serde(default = "d_delay")]
    pub delay: DelayFile,
    /// Delay-stage limit in packets (netem's `limit`).
    #[serde(default = "d_delay_limit")]
    pub delay_limit: Option<u32>,
    #[serde(default = "d_true")]
    pub jitter_reorders: bool,
    #[serde(default = "d_loss")]
    pub loss: LossFile,
    /// Where `loss` judges packets: after the rate stage (default; a lost packet has used
    /// its transmission time, as a loss in the second of two stacked netem qdiscs) or
    /// before it (a lost packet never reaches the queue, as netem's loss on the rate qdisc).
    #[serde(default)]
    pub loss_at: LossAt,
    /// An LTE cell instead of the rate stage (downlink only): per-device queues and a TTI
    /// scheduler; loss and delay follow it. Every bearer on the leg is one device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cell: Option<CellFile>,
    /// Active queue management of the rate stage's queue (`[legs.downlink.aqm]`); none:
    /// tail drop at the queue's limits alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aqm: Option<AqmFile>,
}

/// `[legs.<direction>.aqm]`: CoDel (RFC 8289), PIE (RFC 8033) or FQ-CoDel (RFC 8290) on the
/// rate stage's queue, with the RFCs' defaults where a field is not given.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AqmFile {
    /// "codel", "pie" or "fq-codel" (the queue's limits are FQ-CoDel's).
    pub kind: String,
    /// The delay it aims at (CoDel's and FQ-CoDel's target, 5 ms; PIE's QDELAY_REF, 15 ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_ms: Option<f64>,
    /// CoDel's and FQ-CoDel's interval (100 ms); PIE's update period, T_UPDATE (15 ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_ms: Option<f64>,
    /// Mark an ECN-capable packet CE instead of dropping it (default true).
    #[serde(default = "d_true")]
    pub ecn: bool,
}

/// `[legs.downlink.cell]`: an LTE or NR cell's downlink. Device `k` is the `k`-th bearer
/// (in file order) whose downlink legs include this leg.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CellFile {
    /// "lte" (default) or "nr".
    #[serde(default = "d_rat")]
    pub rat: String,
    /// LTE: 1.4, 3, 5, 10, 15 or 20 MHz (6 to 100 resource blocks). NR: a bandwidth of the
    /// numerology (TS 38.101-1/-2), e.g. 100 MHz at numerology 1 (273 PRBs).
    #[serde(default = "d_bandwidth")]
    pub bandwidth_mhz: f64,
    /// NR only: the carrier (`[legs.downlink.cell.nr]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nr: Option<NrFile>,
    /// HARQ (`[legs.downlink.cell.harq]`): NR has it by default, LTE only when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harq: Option<HarqFile>,
    /// RLC (`[legs.downlink.cell.rlc]`): what a block HARQ gave up on becomes (default AM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rlc: Option<RlcFile>,
    /// "rr" (round robin) or "pf" (proportional fair).
    #[serde(default = "d_scheduler")]
    pub scheduler: String,
    /// PF: time constant of the average throughput, in TTIs (>= 1).
    #[serde(default = "d_tc")]
    pub tc_ttis: f64,
    /// One entry per device (per bearer on the leg, in bearer order).
    pub devices: Vec<CellDeviceFile>,
}

fn d_bandwidth() -> f64 {
    20.0
}
fn d_rat() -> String {
    "lte".into()
}

/// `[legs.downlink.cell.nr]`: an NR carrier (see `cell::nr`).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NrFile {
    /// µ, 0 to 3: subcarrier spacing 15·2^µ kHz, slots of 1 ms / 2^µ. Read as any integer
    /// so that a value out of range is refused with the range (validation), not the type's.
    #[serde(default = "d_numerology")]
    pub numerology: i64,
    /// "qam256" (TS 38.214 Tables 5.1.3.1-2 and 5.2.2.1-3) or "qam64" (-1 and -2).
    #[serde(default = "d_mcs_table")]
    pub mcs_table: String,
    /// MIMO layers, 1 to 4 (read as any integer, as `numerology`).
    #[serde(default = "d_layers")]
    pub layers: i64,
    /// PDSCH symbols of a downlink slot (1 to 14) and of a special slot (0 to 14).
    #[serde(default = "d_pdsch")]
    pub pdsch_symbols: u32,
    #[serde(default = "d_special")]
    pub special_pdsch_symbols: u32,
    /// DMRS REs per PRB (0 to 48) and xOverhead (0, 6, 12 or 18).
    #[serde(default = "d_dmrs")]
    pub dmrs_re: u32,
    #[serde(default)]
    pub overhead_re: u32,
    /// A TDD pattern of D, S and U slots such as "DDDSU"; absent = FDD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tdd: Option<String>,
}

fn d_numerology() -> i64 {
    1
}
fn d_mcs_table() -> String {
    "qam256".into()
}
fn d_layers() -> i64 {
    2
}
fn d_pdsch() -> u32 {
    12
}
fn d_special() -> u32 {
    8
}
fn d_dmrs() -> u32 {
    12
}

/// `[legs.downlink.cell.harq]`: block errors and retransmissions (see `cell::harq`).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HarqFile {
    /// Probability that a transmission fails, 0 to 0.5 (the CQI's target is 0.1).
    #[serde(default = "d_bler")]
    pub bler: f64,
    /// Slots from a transmission to its retransmission, 1 to 1000.
    #[serde(default = "d_harq_rtt")]
    pub rtt_slots: u32,
    /// Transmissions of a block at most, 1 to 8.
    #[serde(default = "d_max_tx")]
    pub max_tx: u8,
}

fn d_bler() -> f64 {
    0.1
}
/// 5G-LENA's defaults: 2 slots from the data to its HARQ feedback (N1) and 2 more until
/// the retransmission is scheduled (N2).
pub fn d_harq_rtt() -> u32 {
    4
}
fn d_max_tx() -> u8 {
    4
}

/// `[legs.downlink.cell.rlc]`: RLC AM or UM (see `cell::rlc`); the defaults are srsRAN
/// Project's for a 5QI 9 data bearer.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RlcFile {
    /// "am" (a block HARQ gave up on is sent again) or "um" (it is lost).
    #[serde(default = "d_rlc_mode")]
    pub mode: String,
    /// AM: ms from the block's last failed transmission to the receiver's STATUS report,
    /// 0 to 200 (TS 38.331's range).
    #[serde(default = "d_t_reassembly")]
    pub t_reassembly_ms: f64,
    /// AM: retransmissions of a block at most, 1 to 32 (`maxRetxThreshold`).
    #[serde(default = "d_max_retx")]
    pub max_retx: u8,
}

fn d_rlc_mode() -> String {
    "am".into()
}
fn d_t_reassembly() -> f64 {
    20.0
}
fn d_max_retx() -> u8 {
    32
}

impl Default for RlcFile {
    fn default() -> Self {
        RlcFile {
            mode: d_rlc_mode(),
            t_reassembly_ms: d_t_reassembly(),
            max_retx: d_max_retx(),
        }
    }
}

impl Default for HarqFile {
    fn default() -> Self {
        HarqFile {
            bler: d_bler(),
            rtt_slots: d_harq_rtt(),
            max_tx: d_max_tx(),
        }
    }
}

/// A device's line-of-sight blockage: `{ mean_clear_ms, mean_blocked_ms, loss_db }` (a
/// two-state process) or `{ periods = [[START_S, DURATION_S], ...], loss_db }`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(
    untagged,
    deny_unknown_fields,
    expecting = "must be { periods = [[START_S, DURATION_S], ...] } or { mean_clear_ms = MS, mean_blocked_ms = MS }, either with an optional loss_db"
)]
pub enum BlockageFile {
    Markov {
        mean_clear_ms: f64,
        mean_blocked_ms: f64,
        #[serde(default = "d_blockage_loss")]
        loss_db: f64,
    },
    Periods {
        periods: Vec<[f64; 2]>,
        #[serde(default = "d_blockage_loss")]
        loss_db: f64,
    },
}

/// 30 dB: about what a human body in the way costs a link at mmWave frequencies.
fn d_blockage_loss() -> f64 {
    30.0
}
fn d_scheduler() -> String {
    "pf".into()
}
fn d_tc() -> f64 {
    100.0
}

/// `[[legs.downlink.cell.devices]]`: one device (UE).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CellDeviceFile {
    /// Mean downlink SINR in dB (without fading), -20 to 60.
    pub mean_sinr_db: f64,
    /// Maximum Doppler shift in Hz (0 to 2000); 5 Hz is a pedestrian at 2 GHz.
    #[serde(default = "d_doppler")]
    pub doppler_hz: f64,
    /// "rayleigh" or "none".
    #[serde(default = "d_fading")]
    pub fading: String,
    /// Queue limit at the base station in bytes (the study's 512 kB).
    #[serde(default = "d_cell_queue")]
    pub queue_bytes: Option<u64>,
    #[serde(default)]
    pub queue_packets: Option<u32>,
    /// Line-of-sight blockage (absent: never blocked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blockage: Option<BlockageFile>,
}

fn d_doppler() -> f64 {
    5.0
}
fn d_fading() -> String {
    "rayleigh".into()
}
fn d_cell_queue() -> Option<u64> {
    Some(512_000)
}

fn d_rate() -> RateValue {
    RateValue::Text("20mbit".into())
}
fn d_queue() -> Option<u32> {
    Some(100)
}
fn d_delay() -> DelayFile {
    DelayFile::Normal {
        mean_ms: 10.0,
        std_ms: 1.0,
    }
}
fn d_delay_limit() -> Option<u32> {
    Some(10_000)
}
fn d_loss() -> LossFile {
    LossFile::None
}

impl Default for DirectionFile {
    fn default() -> Self {
        DirectionFile {
            rate: d_rate(),
            trace: None,
            queue_packets: d_queue(),
            queue_bytes: None,
            delay: d_delay(),
            delay_limit: d_delay_limit(),
            jitter_reorders: true,
            loss: d_loss(),
            loss_at: LossAt::AfterRate,
            cell: None,
            aqm: None,
        }
    }
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum BearerMode {
    /// Split over the bearer's legs by the split pattern.
    Dc,
    /// Pinned to one leg.
    Sc,
    /// Every packet on every leg of the bearer.
    Dup,
    /// One path of a multipath transport: pinned to one leg both ways (its uplink on that
    /// leg's uplink), with no PDCP reordering, so the transport sees the leg as it is.
    Path,
}

impl BearerMode {
    /// The name a scenario file and a record give it.
    pub fn as_str(self) -> &'static str {
        match self {
            BearerMode::Dc => "dc",
            BearerMode::Sc => "sc",
            BearerMode::Dup => "dup",
            BearerMode::Path => "path",
        }
    }
}

/// A port or an inclusive range "lo-hi".
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(
    untagged,
    expecting = "must be a port 0-65535 or a range \"lo-hi\" as a string"
)]
pub enum PortValue {
    One(u16),
    Range(String),
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MatchFile {
    /// "tcp", "udp", "icmp" or an IP protocol number.
    #[serde(default)]
    pub protocol: Option<String>,
    #[serde(default)]
    pub server_port: Option<PortValue>,
    #[serde(default)]
    pub client_port: Option<PortValue>,
    /// Address or CIDR prefix.
    #[serde(default)]
    pub server_addr: Option<String>,
    #[serde(default)]
    pub client_addr: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BearerFile {
    pub name: String,
    pub mode: BearerMode,
    /// Downlink legs by name (one for `sc`); default: all legs.
    #[serde(default)]
    pub legs: Option<Vec<String>>,
    /// Leg whose uplink carries this bearer's uplink; default: the first leg with an uplink.
    #[serde(default)]
    pub uplink_leg: Option<String>,
    /// A packet belongs to the bearer if any rule matches (all given fields must match).
    #[serde(default, rename = "match")]
    pub rules: Vec<MatchFile>,
    /// Overrides the global split for this bearer.
    #[serde(default)]
    pub split: Option<SplitFile>,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum DirectionName {
    #[default]
    Downlink,
    Uplink,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChangeFile {
    pub at_ms: f64,
    /// Leg to change (with `direction`), for rate/trace/delay/loss.
    #[serde(default)]
    pub leg: Option<String>,
    #[serde(default)]
    pub direction: DirectionName,
    #[serde(default)]
    pub rate: Option<RateValue>,
    #[serde(default)]
    pub trace: Option<TraceFile>,
    #[serde(default)]
    pub delay: Option<DelayFile>,
    #[serde(default)]
    pub loss: Option<LossFile>,
    /// New split (batch and/or ratio) for `bearer`, or every split bearer.
    #[serde(default)]
    pub split: Option<SplitChangeFile>,
    /// A secondary node event on `leg`: the split bearers' leg other than their first.
    #[serde(default)]
    pub secondary: Option<SecondaryFile>,
    #[serde(default)]
    pub bearer: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SplitChangeFile {
    #[serde(default)]
    pub batch: Option<u32>,
    #[serde(default)]
    pub ratio: Option<Vec<f64>>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SecondaryFile {
    pub event: SecondaryEventName,
    /// `change`: how long the leg carries nothing before the new secondary serves it.
    #[serde(default = "d_interruption")]
    pub interruption_ms: f64,
    /// `release`, `change`: what becomes of the split bearers' packets the secondary
    /// holds (and those reaching it meanwhile): forwarded (to the master's leg on a
    /// release, to the new secondary after a change) or lost.
    #[serde(default)]
    pub buffered: BufferedName,
}

fn d_interruption() -> f64 {
    50.0
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SecondaryEventName {
    Release,
    Add,
    Change,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum BufferedName {
    #[default]
    Forward,
    Lose,
}

/// The built-in default scenario (the reference testbed) as TOML text.
pub fn default_toml() -> String {
    let file: ScenarioFile = toml::from_str("").expect("empty scenario parses");
    toml::to_string_pretty(&file).expect("serializable")
}
