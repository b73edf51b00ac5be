//! The timed client workload: every connection (its own UDP socket and noq endpoint)
//! started at once, objects requested in parallel or one after another, bodies counted
//! and dropped; one JSON line at the end, always (a watchdog thread prints it and ends the
//! process if the workload outlives its timeout by WATCHDOG_GRACE).
//!
//! Multipath (--paths A1,A2,...): each connection's socket is bound to the wildcard
//! address (it receives on every path's address) and its first path leaves from A1; once
//! its handshake is confirmed it opens one further path from each other address to the
//! server (Connection::open_path with that local address), while the requests go on. The
//! `stack` object reports each path's addresses, status and counters.
//!
//! Times are seconds after t0, the request: when the connections start, or with
//! preconnect when every handshake ended and the requests go out (a connection's
//! handshake_s is then its handshake's duration). The timeout counts from the first
//! connection attempt (handshakes included).

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use noq::crypto::rustls::QuicClientConfig;
use noq::{FourTuple, PathError, PathId, PathStatus, ReadError};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, watch};

use crate::ClientArgs;
use crate::common::{self, Settings};
use crate::server::{REFUSED_MALFORMED, REFUSED_RANGE};
use crate::workload::Workload;

const WATCHDOG_GRACE: Duration = Duration::from_secs(5);
const CLOSE_WAIT: Duration = Duration::from_secs(1);
const NONE: u64 = u64::MAX; // an unset time
/// How often a path is tried again while the server has not yet issued connection ids
/// for it (they follow the handshake).
const PATH_RETRY: Duration = Duration::from_millis(5);

/// One object's progress; times in ns since Run::base (NONE: not yet).
struct Obj {
    index: usize,
    size: u64,
    connection: usize,
    path_size: u64,
    range: Option<(u64, u64)>,
    bytes: AtomicU64,
    request_ns: AtomicU64,
    first_ns: AtomicU64,
    last_ns: AtomicU64,
    done: AtomicBool,
    meta: Mutex<ObjMeta>,
}

#[derive(Default)]
struct ObjMeta {
    error: Option<String>,
}

impl Obj {
    fn fail(&self, why: String) {
        let mut m = self.meta.lock().unwrap();
        if m.error.is_none() && !self.done.load(Relaxed) {
            m.error = Some(why);
        }
    }
}

#[derive(Default)]
struct Conn {
    handshake_s: Option<f64>,
    handshake_done: bool,
    connection: Option<noq::Connection>,
    stats: Option<Value>,
    /// The further paths (from --paths' second address on), in order.
    paths: Vec<PathRec>,
}

/// One further path of a connection: asked from `local`, opened or not.
struct PathRec {
    local: IpAddr,
    path: Option<noq::Path>,
    established_s: Option<f64>,
    error: Option<String>,
}

/// The whole workload: what it saw so far, and printing it once.
struct Run {
    base: Instant,
    t0_ns: AtomicU64,
    request_wall: Mutex<Option<f64>>,
    ready_mono: Mutex<Option<f64>>,
    ready_cpu: Mutex<Option<f64>>,
    objects: Vec<Obj>,
    conns: Vec<Mutex<Conn>>,
    workload_error: Mutex<Option<String>>,
    stack: Mutex<Map<String, Value>>,
    printed: Mutex<bool>,
    exit_code: AtomicI32,
    timeout_s: f64,
}

impl Run {
    fn now_ns(&self) -> u64 {
        self.base.elapsed().as_nanos() as u64
    }

    /// ns since base to seconds after t0.
    fn rel(&self, ns: u64) -> Option<f64> {
        (ns != NONE).then(|| (ns as f64 - self.t0_ns.load(Relaxed) as f64) / 1e9)
    }

    /// Ready to send the first packet: the monotonic clock (the adapter's start-up ends
    /// here) and the CPU used so far (cpu_s counts from here). As in the aioquic client,
    /// this is when the connections start, before the handshakes even with preconnect.
    fn mark_ready(&self) {
        *self.ready_cpu.lock().unwrap() = Some(common::process_cpu());
        *self.ready_mono.lock().unwrap() = Some(common::monotonic());
    }

    /// The request moment t0, and its wall-clock time.
    fn mark_t0(&self) {
        *self.request_wall.lock().unwrap() = Some(common::unix_time());
        self.t0_ns.store(self.now_ns(), Relaxed);
    }

    fn timeout_reason(&self, handshake_done: bool) -> String {
        let mut why = format!("timeout after {} s", self.timeout_s);
        if !handshake_done {
            why += " before the handshake completed";
        }
        why
    }

    /// Fails every unfinished object with the timeout (naming a missing handshake).
    fn fail_unfinished(&self) {
        for o in &self.objects {
            if !o.done.load(Relaxed) {
                let hs = self.conns[o.connection].lock().unwrap().handshake_done;
                o.fail(self.timeout_reason(hs));
            }
        }
    }

    fn object_json(&self, o: &Obj) -> (Value, bool, u64, Option<String>) {
        let m = o.meta.lock().unwrap();
        let bytes = o.bytes.load(Relaxed);
        let done = o.done.load(Relaxed);
        // No status line in HTTP/0.9: a body is right when it ended (FIN) with exactly its
        // size, every chunk starting with the byte of its offset (fetch checks).
        let ok = m.error.is_none() && done && bytes == o.size;
        let error = if ok {
            None
        } else if let Some(e) = &m.error {
            Some(e.clone())
        } else if o.request_ns.load(Relaxed) == NONE {
            Some("never requested".into())
        } else {
            Some(format!("got {bytes} of {} bytes", o.size))
        };
        let v = json!({
            "index": o.index, "size": o.size, "connection": o.connection, "bytes": bytes, "ok": ok,
            "request_s": self.rel(o.request_ns.load(Relaxed)),
            "first_byte_s": self.rel(o.first_ns.load(Relaxed)),
            "last_byte_s": self.rel(o.last_ns.load(Relaxed)),
            "error": error,
        });
        (v, ok, bytes, error)
    }

    /// The JSON line: base.TransferResult.from_parts's totals over the objects and
    /// connections, and what the contract adds.
    fn to_json(&self) -> Value {
        let mut objects = Vec::with_capacity(self.objects.len());
        let mut failed: Vec<(usize, Option<String>)> = Vec::new();
        let mut total = 0;
        let (mut first, mut last): (Option<f64>, Option<f64>) = (None, None);
        let mut per_conn: Vec<(u64, Option<f64>, Option<f64>)> =
            vec![(0, None, None); self.conns.len()];
        for o in &self.objects {
            let (v, ok, bytes, error) = self.object_json(o);
            total += bytes;
            let fb = v["first_byte_s"].as_f64();
            let lb = v["last_byte_s"].as_f64();
            first = min_opt(first, fb);
            last = max_opt(last, lb);
            let pc = &mut per_conn[o.connection];
            pc.0 += bytes;
            pc.1 = min_opt(pc.1, fb);
            pc.2 = max_opt(pc.2, lb);
            if !ok {
                failed.push((o.index, error));
            }
            objects.push(v);
        }
        let connections: Vec<Value> = self
            .conns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let c = c.lock().unwrap();
                json!({
                    "index": i, "handshake_s": c.handshake_s,
                    "first_byte_s": per_conn[i].1, "last_byte_s": per_conn[i].2, "bytes": per_conn[i].0,
                    // This client keeps no session cache (rustls resumption off): never resumed.
                    "resumed": c.handshake_done.then_some(false), "early_data": null,
                })
            })
            .collect();
        let workload_error = self.workload_error.lock().unwrap().clone();
        let mut errs: Vec<String> = workload_error.iter().cloned().collect();
        if let Some((i, why)) = failed.first() {
            let o = &self.objects[*i];
            let why = why
                .clone()
                .unwrap_or_else(|| format!("got {} of {} bytes", o.bytes.load(Relaxed), o.size));
            let what = format!(
                "object {i} (/{} on connection {}): {why}",
                o.size, o.connection
            );
            errs.push(if failed.len() == 1 {
                what
            } else {
                format!(
                    "{} of {} objects failed, first {what}",
                    failed.len(),
                    self.objects.len()
                )
            });
        }
        if self.objects.is_empty() {
            errs.push("no objects".into());
        }
        let ready_cpu = *self.ready_cpu.lock().unwrap();
        let mut stack = self.stack.lock().unwrap().clone();
        stack.insert(
            "connections".into(),
            Value::Array(
                self.conns
                    .iter()
                    .map(|c| c.lock().unwrap().stats.clone().unwrap_or(Value::Null))
                    .collect(),
            ),
        );
        json!({
            "ok": errs.is_empty(),
            "bytes": total,
            "request_s": 0.0,
            "handshake_s": self.conns.first().and_then(|c| c.lock().unwrap().handshake_s),
            "first_byte_s": first,
            "last_byte_s": last,
            "error": if errs.is_empty() { None } else { Some(errs.join("; ")) },
            "request_wall": *self.request_wall.lock().unwrap(),
            "objects": objects,
            "connections": connections,
            "warmup": null,
            "ready_mono": *self.ready_mono.lock().unwrap(),
            "cpu_s": ready_cpu.map(|c| common::process_cpu() - c),
            "workload_error": workload_error,
            "stack": stack,
        })
    }

    /// Prints the JSON line once; returns the exit code it implies (0 ok, 1 failed).
    fn emit(&self) -> i32 {
        let mut printed = self.printed.lock().unwrap();
        if !*printed {
            let d = self.to_json();
            let code = if d["ok"] == Value::Bool(true) { 0 } else { 1 };
            self.exit_code.store(code, Relaxed);
            println_flush(&d.to_string());
            *printed = true;
        }
        self.exit_code.load(Relaxed)
    }
}

fn min_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

fn max_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

fn println_flush(line: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// The JSON line of a client that did not run (bad arguments): ok false and why.
pub fn print_refusal(why: &str) {
    let mut stack = Map::new();
    if let Value::Object(v) = common::versions_json() {
        stack.extend(v);
    }
    let d = json!({
        "ok": false, "bytes": 0, "request_s": 0.0, "handshake_s": null, "first_byte_s": null,
        "last_byte_s": null, "error": why, "request_wall": null, "objects": [], "connections": [],
        "warmup": null, "ready_mono": null, "cpu_s": null, "workload_error": why, "stack": stack,
    });
    println_flush(&d.to_string());
    eprintln!("dclab-noq client: {why}");
}

/// Trusts exactly what --ca holds: a chain to it as a root (webpki), or the very
/// certificate as the server's. The second is needed for dclab's certificates
/// (dclab/testbed/certs.py): self-signed with CA:TRUE, which webpki refuses as an end
/// entity (CaUsedAsEndEntity). The handshake signature is checked either way.
#[derive(Debug)]
struct PinnedVerifier {
    pinned: Vec<CertificateDer<'static>>,
    webpki: Option<Arc<rustls::client::WebPkiServerVerifier>>,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl ServerCertVerifier for PinnedVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let chain = match &self.webpki {
            Some(v) => {
                v.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
            }
            None => Err(rustls::Error::General("no usable root in --ca".into())),
        };
        match chain {
            Ok(ok) => Ok(ok),
            Err(_)
                if self
                    .pinned
                    .iter()
                    .any(|c| c.as_ref() == end_entity.as_ref()) =>
            {
                Ok(ServerCertVerified::assertion())
            }
            Err(e) => Err(e),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

fn tls_config(args: &ClientArgs) -> Result<Arc<QuicClientConfig>, String> {
    let provider = common::crypto_provider();
    let pinned: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&args.ca)
        .and_then(|it| it.collect::<Result<_, _>>())
        .map_err(|e| format!("--ca {}: {e}", args.ca.display()))?;
    if pinned.is_empty() {
        return Err(format!("--ca {}: no certificate", args.ca.display()));
    }
    let mut roots = rustls::RootCertStore::empty();
    for c in &pinned {
        let _ = roots.add(c.clone()); // one unusable as a root is still pinned
    }
    let webpki = rustls::client::WebPkiServerVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .build()
    .ok();
    let verifier = Arc::new(PinnedVerifier {
        pinned,
        webpki,
        provider: provider.clone(),
    });
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| format!("tls: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    tls.alpn_protocols = vec![common::ALPN.to_vec()];
    // Every connection a full handshake: no session cache shared between them.
    tls.resumption = rustls::client::Resumption::disabled();
    if let Some(path) = &args.common.keylog {
        tls.key_log = common::FileKeyLog::open(path)
            .map_err(|e| format!("--keylog {}: {e}", path.display()))?;
    }
    QuicClientConfig::try_from(tls)
        .map(Arc::new)
        .map_err(|e| format!("tls: {e}"))
}

/// What a client needs before it may start, or the refusal (exit 2).
struct Prepared {
    workload: Workload,
    settings: Settings,
    tls: Arc<QuicClientConfig>,
    addr: SocketAddr,
    /// --paths: this client's address on each path (empty: single path).
    paths: Vec<IpAddr>,
    path_status: PathStatus,
}

fn path_status(name: &str) -> Result<PathStatus, String> {
    match name {
        "available" => Ok(PathStatus::Available),
        "backup" => Ok(PathStatus::Backup),
        _ => Err(format!(
            "--path-status: must be available or backup (got {name:?})"
        )),
    }
}

fn status_name(s: PathStatus) -> &'static str {
    match s {
        PathStatus::Available => "available",
        PathStatus::Backup => "backup",
    }
}

fn prepare(args: &ClientArgs) -> Result<Prepared, String> {
    let settings = Settings::check(&args.common)?;
    if !(args.timeout.is_finite() && args.timeout > 0.0) {
        return Err(format!(
            "--timeout: must be > 0 seconds (got {})",
            args.timeout
        ));
    }
    let text = std::fs::read_to_string(&args.workload)
        .map_err(|e| format!("--workload {}: {e}", args.workload.display()))?;
    let workload = Workload::parse(&text).map_err(|e| format!("workload: {e}"))?;
    let addr = (args.common.host.as_str(), args.common.port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| format!("--host: not an address: {}", args.common.host))?;
    let paths = match &args.paths {
        None => Vec::new(),
        Some(text) => common::parse_paths(text, &addr)?,
    };
    if !paths.is_empty() && (settings.max_paths as usize) < paths.len() {
        return Err(format!(
            "--max-paths: {} allows fewer paths than --paths gives ({})",
            settings.max_paths,
            paths.len()
        ));
    }
    let path_status = path_status(&args.path_status)?;
    let tls = tls_config(args)?;
    Ok(Prepared {
        workload,
        settings,
        tls,
        addr,
        paths,
        path_status,
    })
}

pub fn main(args: ClientArgs) -> i32 {
    let p = match prepare(&args) {
        Ok(p) => p,
        Err(e) => {
            print_refusal(&e);
            return 2;
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let workers = rt.metrics().num_workers();
    rt.block_on(run(args, p, workers))
}

/// A path's counters as noq keeps them (rx: what this client received on it).
fn path_json(s: &noq::PathStats) -> Value {
    json!({
        "rtt_ms": s.rtt.as_secs_f64() * 1e3,
        "cwnd": s.cwnd,
        "current_mtu": s.current_mtu,
        "sent_packets": s.sent_packets,
        "sent_bytes": s.sent_bytes,
        "lost_packets": s.lost_packets,
        "lost_bytes": s.lost_bytes,
        "congestion_events": s.congestion_events,
        "udp_rx_bytes": s.udp_rx.bytes,
        "udp_rx_datagrams": s.udp_rx.datagrams,
        "udp_tx_bytes": s.udp_tx.bytes,
        "udp_tx_datagrams": s.udp_tx.datagrams,
    })
}

/// One path of a connection: its id, addresses, status, when it opened, its counters.
fn one_path(path: &noq::Path, local: Option<IpAddr>, port: Option<u16>) -> Map<String, Value> {
    let mut d = Map::new();
    d.insert(
        "id".into(),
        json!(path.id().to_string().parse::<u32>().ok()),
    );
    // The address asked for, with the socket's port; noq's own view of it (learnt from
    // the packets received on the path) as local_ip.
    let seen = path.network_path().ok().and_then(|t| t.local_ip());
    let local = local.or(seen);
    d.insert(
        "local".into(),
        json!(
            local
                .zip(port)
                .map(|(ip, p)| SocketAddr::new(ip, p).to_string())
        ),
    );
    d.insert("local_ip".into(), json!(seen.map(|ip| ip.to_string())));
    d.insert(
        "remote".into(),
        json!(path.remote_address().ok().map(|a| a.to_string())),
    );
    d.insert(
        "status".into(),
        json!(path.status().ok().map_or("closed", status_name)),
    );
    if let Value::Object(s) = path_json(&path.stats()) {
        d.extend(s);
    }
    d
}

/// How often `stats_json` reads the counters again when a datagram arrived while it read them.
const SNAPSHOT_TRIES: usize = 20;

/// The counters `stats_json` prints of a connection, equal when nothing was sent, received
/// or declared lost between two reads.
fn same_counters(a: &noq::ConnectionStats, b: &noq::ConnectionStats) -> bool {
    a.udp_rx == b.udp_rx
        && a.udp_tx == b.udp_tx
        && a.sent_packets == b.sent_packets
        && a.lost_packets == b.lost_packets
        && a.lost_bytes == b.lost_bytes
}

/// The connection's totals and its paths (path 0 first); `first` is --paths' first address.
/// One snapshot: noq reads the connection and each path under a lock of its own, and the
/// connection stays open while this runs, so a datagram arriving between two reads (an ACK
/// of the server's, 36 bytes) would count in a path and not in the totals. Every counter
/// only grows, so when the totals read before and after the paths agree nothing changed in
/// between; `consistent` says whether that was reached within `SNAPSHOT_TRIES` reads.
fn stats_json(c: &Conn, first: Option<IpAddr>, port: Option<u16>) -> Option<Value> {
    let conn = c.connection.as_ref()?;
    let mut tries = 0;
    loop {
        tries += 1;
        let before = conn.stats();
        let paths = paths_json(c, conn, first, port);
        let p0 = conn.path_stats(PathId::ZERO);
        let s = conn.stats();
        let consistent = same_counters(&before, &s);
        if consistent || tries == SNAPSHOT_TRIES {
            return Some(json!({
                "multipath": conn.is_multipath_enabled(),
                "rtt_ms": p0.map(|p| p.rtt.as_secs_f64() * 1e3),
                "current_mtu": p0.map(|p| p.current_mtu),
                "sent_packets": s.sent_packets,
                "lost_packets": s.lost_packets,
                "lost_bytes": s.lost_bytes,
                "udp_rx_bytes": s.udp_rx.bytes,
                "udp_rx_datagrams": s.udp_rx.datagrams,
                "udp_tx_bytes": s.udp_tx.bytes,
                "udp_tx_datagrams": s.udp_tx.datagrams,
                "consistent": consistent,
                "paths": paths,
            }));
        }
    }
}

/// Each path of the connection as `one_path` reads it, with its state, path 0 first.
fn paths_json(
    c: &Conn,
    conn: &noq::Connection,
    first: Option<IpAddr>,
    port: Option<u16>,
) -> Vec<Value> {
    let mut paths = Vec::new();
    if let Some(p0) = conn.path(PathId::ZERO) {
        let mut d = one_path(&p0, first, port);
        d.insert("state".into(), json!("open"));
        d.insert("established_s".into(), json!(c.handshake_s));
        d.insert("error".into(), Value::Null);
        paths.push(Value::Object(d));
    }
    for rec in &c.paths {
        let mut d = match &rec.path {
            Some(p) => one_path(p, Some(rec.local), port),
            None => Map::new(),
        };
        d.insert(
            "local".into(),
            json!(port.map(|p| SocketAddr::new(rec.local, p).to_string())),
        );
        let state = match (&rec.path, &rec.error) {
            (Some(_), _) => "open",
            (None, Some(_)) => "failed",
            (None, None) => "opening", // not yet validated when the workload ended
        };
        d.insert("state".into(), json!(state));
        d.insert("established_s".into(), json!(rec.established_s));
        d.insert("error".into(), json!(rec.error));
        paths.push(Value::Object(d));
    }
    paths
}

async fn run(args: ClientArgs, p: Prepared, workers: usize) -> i32 {
    let wl = p.workload;
    let ranges = wl.byte_ranges();
    let objects = (0..wl.objects.len())
        .map(|i| Obj {
            index: i,
            size: wl.objects[i],
            connection: wl.assignment[i],
            path_size: wl.path_size(i),
            range: ranges[i],
            bytes: AtomicU64::new(0),
            request_ns: AtomicU64::new(NONE),
            first_ns: AtomicU64::new(NONE),
            last_ns: AtomicU64::new(NONE),
            done: AtomicBool::new(false),
            meta: Mutex::new(ObjMeta::default()),
        })
        .collect();
    let extra: Vec<IpAddr> = p.paths.iter().skip(1).copied().collect();
    let run = Arc::new(Run {
        base: Instant::now(),
        t0_ns: AtomicU64::new(0),
        request_wall: Mutex::new(None),
        ready_mono: Mutex::new(None),
        ready_cpu: Mutex::new(None),
        objects,
        conns: (0..wl.connections)
            .map(|_| {
                Mutex::new(Conn {
                    paths: extra
                        .iter()
                        .map(|&local| PathRec {
                            local,
                            path: None,
                            established_s: None,
                            error: None,
                        })
                        .collect(),
                    ..Conn::default()
                })
            })
            .collect(),
        workload_error: Mutex::new(None),
        stack: Mutex::new(Map::new()),
        printed: Mutex::new(false),
        exit_code: AtomicI32::new(1),
        timeout_s: args.timeout,
    });
    let settings = &p.settings;
    let first = p.paths.first().copied();
    let multipath = first.is_some();

    // One socket and endpoint per connection, before t0 (set-up is not network time). With
    // --paths the wildcard address, to receive on every path's.
    let bind: SocketAddr = if p.addr.is_ipv4() {
        "0.0.0.0:0".parse().unwrap()
    } else {
        "[::]:0".parse().unwrap()
    };
    let mut endpoints = Vec::with_capacity(wl.connections);
    let mut sockets = Vec::with_capacity(wl.connections);
    for c in 0..wl.connections {
        let made = common::socket(bind, first).and_then(|s| {
            let info = json!({
                "connection": c, "bound": s.local.map(|a| a.to_string()),
                "rcvbuf_before": s.rcvbuf_before, "rcvbuf": s.rcvbuf_after,
                "gso_segments": s.gso_segments, "gro_segments": s.gro_segments,
            });
            let fd = s.fd;
            noq::Endpoint::new_with_abstract_socket(
                settings.endpoint_config(),
                None,
                s.socket,
                Arc::new(noq::TokioRuntime),
            )
            .map(|e| (e, info, fd))
        });
        match made {
            Ok((e, info, fd)) => {
                endpoints.push(e);
                sockets.push((info, fd));
            }
            Err(e) => {
                *run.workload_error.lock().unwrap() =
                    Some(format!("socket of connection {c}: {e}"));
                run.mark_ready();
                run.mark_t0();
                return run.emit();
            }
        }
    }
    {
        let mut st = run.stack.lock().unwrap();
        if let Value::Object(v) = common::versions_json() {
            st.extend(v);
        }
        st.insert("cc".into(), json!(settings.cc));
        st.insert(
            "runtime".into(),
            json!(format!("tokio multi-thread, {workers} workers")),
        );
        st.insert(
            "rmem_default".into(),
            json!(common::sysctl("net.core.rmem_default")),
        );
        st.insert(
            "rmem_max".into(),
            json!(common::sysctl("net.core.rmem_max")),
        );
        st.insert(
            "gso".into(),
            json!(
                sockets
                    .iter()
                    .all(|(s, _)| s["gso_segments"].as_u64() > Some(1))
            ),
        );
        st.insert(
            "datagram".into(),
            json!({"max_datagram_size": settings.datagram, "mtu_discovery": settings.mtu_discovery(),
                   "initial": settings.datagram.unwrap_or(1200)}),
        );
        st.insert(
            "multipath".into(),
            json!({
                "paths": p.paths.iter().map(|ip| ip.to_string()).collect::<Vec<_>>(),
                "enabled": multipath,
                "max_paths": multipath.then_some(settings.max_paths),
                "path_status": status_name(p.path_status),
                "path_idle_timeout_s": settings.path_idle_timeout.map(|d| d.as_secs_f64()),
                "path_keep_alive_s": settings.path_keep_alive.map(|d| d.as_secs_f64()),
            }),
        );
    }

    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(args.timeout);
    run.mark_ready();
    if !wl.preconnect {
        run.mark_t0();
    }
    {
        // Whatever the library does, the process ends: print (once) and exit.
        let run = run.clone();
        std::thread::spawn(move || {
            std::thread::sleep(
                (deadline + WATCHDOG_GRACE).saturating_duration_since(Instant::now()),
            );
            // One lock at a time: emit takes `printed`, then `workload_error`.
            let printed = *run.printed.lock().unwrap();
            if !printed {
                run.workload_error.lock().unwrap().get_or_insert_with(|| {
                    format!(
                        "watchdog: the workload outlived --timeout {} s by {} s",
                        run.timeout_s,
                        WATCHDOG_GRACE.as_secs()
                    )
                });
            }
            run.fail_unfinished();
            let code = run.emit();
            common::flush_qlogs();
            std::process::exit(code);
        });
    }

    let (hs_tx, mut hs_rx) = mpsc::unbounded_channel::<()>();
    let (go_tx, go_rx) = watch::channel(false);
    let mut tasks = Vec::with_capacity(wl.connections);
    for (c, endpoint) in endpoints.iter().enumerate() {
        let qlog = args.common.qlog_dir.clone().map(|dir| {
            Arc::new(common::Qlogs {
                dir,
                name: Some(format!("client-conn{c}.sqlog")),
                title: "dclab-noq client".into(),
            }) as Arc<dyn noq::QlogFactory>
        });
        let mut cfg = noq::ClientConfig::new(p.tls.clone());
        cfg.transport_config(Arc::new(settings.transport(qlog, multipath)));
        let job = ConnJob {
            run: run.clone(),
            c,
            endpoint: endpoint.clone(),
            cfg,
            addr: p.addr,
            server_name: args.common.host.clone(),
            objects: wl.objects_of(c),
            sequential: wl.sequential,
            preconnect: wl.preconnect,
            extra: extra.clone(),
            path_status: p.path_status,
            deadline,
            hs_tx: hs_tx.clone(),
            go_rx: go_rx.clone(),
        };
        tasks.push(tokio::spawn(job.run()));
    }
    drop(hs_tx);

    if wl.preconnect {
        // Every handshake ended (completed or failed), or the deadline: the request is now.
        let all = async {
            for _ in 0..wl.connections {
                if hs_rx.recv().await.is_none() {
                    break;
                }
            }
        };
        let _ = tokio::time::timeout_at(deadline.into(), all).await;
        run.mark_t0();
        let _ = go_tx.send(true);
    }
    let finished = tokio::time::timeout_at(deadline.into(), async {
        for t in tasks.iter_mut() {
            let _ = t.await;
        }
    })
    .await;
    if finished.is_err() {
        run.fail_unfinished();
    }
    for (c, (s, _)) in run.conns.iter().zip(&sockets) {
        let mut c = c.lock().unwrap();
        let port = s["bound"]
            .as_str()
            .and_then(|a| a.parse::<SocketAddr>().ok())
            .map(|a| a.port());
        c.stats = stats_json(&c, first, port);
    }
    sockets_at_end(&run, &mut sockets);
    // Measurement done: print now; closing only frees state and ends the qlogs.
    let code = run.emit();
    for t in &tasks {
        t.abort();
    }
    for c in &run.conns {
        if let Some(conn) = &c.lock().unwrap().connection {
            conn.close(0u32.into(), b"done");
        }
    }
    // Only where a connection was established: a handshake cut short has nothing to say.
    let idle = async {
        for (e, c) in endpoints.iter().zip(&run.conns) {
            let established = c.lock().unwrap().connection.is_some();
            if established {
                e.wait_idle().await;
            }
        }
    };
    let _ = tokio::time::timeout(CLOSE_WAIT, idle).await;
    common::flush_qlogs();
    code
}

/// Each socket's SO_RCVBUF again after the workload, and whether noq changed it at any
/// point (taking the socket, or later).
fn sockets_at_end(run: &Run, sockets: &mut [(Value, std::os::fd::RawFd)]) {
    for (s, fd) in sockets.iter_mut() {
        s["rcvbuf_end"] = json!(common::rcvbuf(*fd));
    }
    let changed = sockets
        .iter()
        .any(|(s, _)| s["rcvbuf_before"] != s["rcvbuf"] || s["rcvbuf_before"] != s["rcvbuf_end"]);
    let mut st = run.stack.lock().unwrap();
    st.insert("noq_changed_rcvbuf".into(), json!(changed));
    st.insert(
        "sockets".into(),
        Value::Array(sockets.iter().map(|(s, _)| s.clone()).collect()),
    );
}

/// One connection's part of the workload.
struct ConnJob {
    run: Arc<Run>,
    c: usize,
    endpoint: noq::Endpoint,
    cfg: noq::ClientConfig,
    addr: SocketAddr,
    server_name: String,
    objects: Vec<usize>,
    sequential: bool,
    preconnect: bool,
    /// Local addresses of the further paths to open (--paths after the first).
    extra: Vec<IpAddr>,
    path_status: PathStatus,
    deadline: Instant,
    hs_tx: mpsc::UnboundedSender<()>,
    go_rx: watch::Receiver<bool>,
}

impl ConnJob {
    fn fail_all(&self, why: &str) {
        for &i in &self.objects {
            self.run.objects[i].fail(why.to_string());
        }
    }

    async fn run(mut self) {
        let run = self.run.clone();
        let started = Instant::now();
        let handshake = async {
            let connecting = self
                .endpoint
                .connect_with(self.cfg.clone(), self.addr, &self.server_name)
                .map_err(|e| format!("connect: {e}"))?;
            let conn = connecting
                .await
                .map_err(|e| format!("handshake failed: {e}"))?;
            let mut c = run.conns[self.c].lock().unwrap();
            c.handshake_s = Some(if self.preconnect {
                started.elapsed().as_secs_f64()
            } else {
                run.rel(run.now_ns()).unwrap_or(0.0)
            });
            c.handshake_done = true;
            c.connection = Some(conn.clone());
            Ok::<noq::Connection, String>(conn)
        };
        let conn = handshake.await;
        let _ = self.hs_tx.send(());
        let conn = match conn {
            Ok(c) => c,
            Err(e) => {
                let why = if self.preconnect {
                    format!("preconnect: {e}")
                } else {
                    e
                };
                self.fail_all(&why);
                return;
            }
        };
        for (i, &local) in self.extra.iter().enumerate() {
            let job = PathJob {
                run: run.clone(),
                c: self.c,
                i,
                conn: conn.clone(),
                remote: self.addr,
                local,
                status: self.path_status,
                deadline: self.deadline,
            };
            tokio::spawn(job.open());
        }
        if self.preconnect {
            let _ = self.go_rx.wait_for(|go| *go).await;
        }
        let objects = std::mem::take(&mut self.objects);
        if self.sequential {
            for i in objects {
                fetch(&run, &conn, i).await;
            }
        } else {
            let mut set = tokio::task::JoinSet::new();
            for i in objects {
                let (run, conn) = (run.clone(), conn.clone());
                set.spawn(async move { fetch(&run, &conn, i).await });
            }
            while set.join_next().await.is_some() {}
        }
    }
}

/// Opening one further path of a connection, recorded in its PathRec.
struct PathJob {
    run: Arc<Run>,
    c: usize,
    i: usize,
    conn: noq::Connection,
    remote: SocketAddr,
    local: IpAddr,
    status: PathStatus,
    deadline: Instant,
}

impl PathJob {
    async fn open(self) {
        let result = self.try_open().await;
        let mut c = self.run.conns[self.c].lock().unwrap();
        let rec = &mut c.paths[self.i];
        match result {
            Ok(path) => {
                rec.established_s = self.run.rel(self.run.now_ns());
                rec.path = Some(path);
            }
            Err(e) => rec.error = Some(e),
        }
    }

    async fn try_open(&self) -> Result<noq::Path, String> {
        // A path needs the confirmed handshake (multipath negotiated) and connection ids the
        // server issues for its path id just after: until they came, try again.
        self.conn
            .handshake_confirmed()
            .await
            .map_err(|e| format!("handshake: {e}"))?;
        if !self.conn.is_multipath_enabled() {
            return Err("multipath not negotiated (the server did not enable it)".into());
        }
        let tuple = FourTuple::new(self.remote, Some(self.local));
        loop {
            // Opened available, then given its status: noq 1.4.0 never announces the status
            // open_path is given (the PATH_STATUS frame is queued only while a challenge is
            // pending, just after clearing it), so the server would not learn of a backup.
            match self.conn.open_path(tuple, PathStatus::Available).await {
                Ok(p) => {
                    if self.status != PathStatus::Available {
                        p.set_status(self.status)
                            .map_err(|e| format!("path status: {e}"))?;
                    }
                    return Ok(p);
                }
                Err(PathError::RemoteCidsExhausted) if Instant::now() < self.deadline => {
                    tokio::time::sleep(PATH_RETRY).await;
                }
                Err(PathError::MaxPathIdReached) => {
                    return Err("the server allows fewer paths (max_path_id reached)".into());
                }
                Err(e) => return Err(format!("open_path from {}: {e}", self.local)),
            }
        }
    }
}

/// The request line of object i: `GET /<n>`, with its byte range when ranged.
fn request_line(o: &Obj) -> String {
    match o.range {
        None => format!("GET /{}\r\n", o.path_size),
        Some((a, b)) => format!("GET /{} bytes={a}-{b}\r\n", o.path_size),
    }
}

/// Requests object i on a stream of its own and counts its body (never stored).
async fn fetch(run: &Run, conn: &noq::Connection, i: usize) {
    let o = &run.objects[i];
    o.request_ns.store(run.now_ns(), Relaxed);
    let (mut send, mut recv) = match conn.open_bi().await {
        Ok(s) => s,
        Err(e) => return o.fail(format!("request: {e}")),
    };
    if let Err(e) = send.write_all(request_line(o).as_bytes()).await {
        return o.fail(format!("request: {e}"));
    }
    let _ = send.finish();
    // Byte k of a body is k % 256: each chunk must start with its offset's byte.
    let mut offset = o.range.map_or(0, |(a, _)| a);
    loop {
        match recv.read_chunk(usize::MAX).await {
            Ok(Some(chunk)) => {
                // The receive path: count, note the time, drop the chunk.
                let n = chunk.len() as u64;
                if n > 0 {
                    if chunk[0] != (offset % 256) as u8 {
                        return o.fail(format!(
                            "body: byte {offset} is {}, not {}",
                            chunk[0],
                            offset % 256
                        ));
                    }
                    let t = run.now_ns();
                    if o.first_ns.load(Relaxed) == NONE {
                        o.first_ns.store(t, Relaxed);
                    }
                    o.last_ns.store(t, Relaxed);
                    o.bytes.fetch_add(n, Relaxed);
                    offset += n;
                }
            }
            Ok(None) => break,
            Err(ReadError::Reset(code)) => {
                let why = match code.into_inner() {
                    c if c == u64::from(REFUSED_MALFORMED) => "not GET /<n> [bytes=A-B]",
                    c if c == u64::from(REFUSED_RANGE) => "range not satisfiable",
                    _ => "unknown code",
                };
                return o.fail(format!("the server refused the request ({code}: {why})"));
            }
            Err(ReadError::ConnectionLost(e)) => {
                return o.fail(format!("body: connection lost: {e}"));
            }
            Err(e) => return o.fail(format!("body: {e}")),
        }
    }
    if o.bytes.load(Relaxed) == 0 {
        // An empty body: its first and last byte are its end.
        let t = run.now_ns();
        o.first_ns.store(t, Relaxed);
        o.last_ns.store(t, Relaxed);
    }
    o.done.store(true, Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_statuses() {
        let obj = |range| Obj {
            index: 0,
            size: 10,
            connection: 0,
            path_size: 100,
            range,
            bytes: AtomicU64::new(0),
            request_ns: AtomicU64::new(NONE),
            first_ns: AtomicU64::new(NONE),
            last_ns: AtomicU64::new(NONE),
            done: AtomicBool::new(false),
            meta: Mutex::new(ObjMeta::default()),
        };
        assert_eq!(request_line(&obj(None)), "GET /100\r\n");
        assert_eq!(
            request_line(&obj(Some((10, 19)))),
            "GET /100 bytes=10-19\r\n"
        );
        // What the server parses back.
        assert_eq!(
            crate::server::request(request_line(&obj(Some((10, 19)))).as_bytes()),
            Ok((10, 20))
        );
        assert_eq!(path_status("backup"), Ok(PathStatus::Backup));
        assert_eq!(status_name(path_status("available").unwrap()), "available");
        assert!(
            path_status("standby")
                .unwrap_err()
                .contains("available or backup")
        );
    }
}
