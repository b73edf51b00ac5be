//! The timed client workload: every connection (its own UDP socket and noq endpoint)
//! started at once, objects requested in parallel or one after another, bodies counted
//! and dropped; one JSON line at the end, always (dclab-common's `report`: a watchdog
//! thread prints it and ends the process if the workload outlives its timeout).
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

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use dclab_common::report::{self, Answer, Obj};
use dclab_common::workload::Workload;
use dclab_common::{checks, files, tls};
use noq::crypto::rustls::QuicClientConfig;
use noq::{FourTuple, PathError, PathId, PathStatus, ReadError};
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, watch};

use crate::ClientArgs;
use crate::common::{self, Settings};
use crate::server::{REFUSED_MALFORMED, REFUSED_RANGE};

const PROGRAM: &str = "dclab-noq client";
const CLOSE_WAIT: Duration = Duration::from_secs(1);
/// How often a path is tried again while the server has not yet issued connection ids
/// for it (they follow the handshake).
const PATH_RETRY: Duration = Duration::from_millis(5);

/// A connection's further paths (from --paths' second address on), in order.
type Paths = Vec<PathRec>;
type Run = report::Run<noq::Connection, Paths>;
type Conn = report::Conn<noq::Connection, Paths>;

/// One further path of a connection: asked from `local`, opened or not.
struct PathRec {
    local: IpAddr,
    path: Option<noq::Path>,
    established_s: Option<f64>,
    error: Option<String>,
}

/// The JSON line of a client that did not run (bad arguments): ok false and why.
pub fn print_refusal(why: &str) {
    report::print_refusal(PROGRAM, common::versions_json(), why);
}

fn tls_config(args: &ClientArgs) -> Result<Arc<QuicClientConfig>, String> {
    let tls = tls::client(&args.ca, common::ALPN, args.common.keylog.as_deref())?;
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
    let workload = Workload::parse(&text, crate::STACK).map_err(|e| format!("workload: {e}"))?;
    let addr = checks::address(&args.common.host, args.common.port)?;
    let paths = match &args.own.paths {
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
    let path_status = path_status(&args.own.path_status)?;
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
    for rec in &c.extra {
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
    let extra: Vec<IpAddr> = p.paths.iter().skip(1).copied().collect();
    let paths = || {
        extra
            .iter()
            .map(|&local| PathRec {
                local,
                path: None,
                established_s: None,
                error: None,
            })
            .collect()
    };
    let run = Arc::new(Run::new(Answer::Plain, &wl, paths, args.timeout));
    let settings = &p.settings;
    let first = p.paths.first().copied();
    let multipath = first.is_some();

    // One socket and endpoint per connection, before t0 (set-up is not network time). With
    // --paths the wildcard address, to receive on every path's.
    let bind = report::wildcard(&p.addr);
    let mut endpoints = Vec::with_capacity(wl.connections);
    let mut sockets = Vec::with_capacity(wl.connections);
    for c in 0..wl.connections {
        let made = common::socket(bind, first).and_then(|s| {
            let info = (s.facts.json(c, true), s.facts.fd);
            noq::Endpoint::new_with_abstract_socket(
                settings.endpoint_config(),
                None,
                s.socket,
                Arc::new(noq::TokioRuntime),
            )
            .map(|e| (e, info))
        });
        match made {
            Ok((e, info)) => {
                endpoints.push(e);
                sockets.push(info);
            }
            Err(e) => return run.failed_to_start(format!("socket of connection {c}: {e}")),
        }
    }
    run.describe(
        common::versions_json(),
        &settings.cc,
        workers,
        &sockets,
        settings.datagram,
        settings.mtu_discovery(),
    );
    run.stack.lock().unwrap().insert(
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

    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(args.timeout);
    run.mark_ready();
    if !wl.preconnect {
        run.mark_t0();
    }
    run.start_watchdog(deadline);

    let (hs_tx, mut hs_rx) = mpsc::unbounded_channel::<()>();
    let (go_tx, go_rx) = watch::channel(false);
    let mut tasks = Vec::with_capacity(wl.connections);
    for (c, endpoint) in endpoints.iter().enumerate() {
        let qlog = args.common.qlog_dir.clone().map(|dir| {
            Arc::new(common::Qlogs {
                dir,
                name: Some(format!("client-conn{c}.sqlog")),
                title: PROGRAM.into(),
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
    run.sockets_at_end("noq", &mut sockets);
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
    files::flush_qlogs();
    code
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
            run.established(self.c, conn.clone(), self.preconnect, started);
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
                run.fail_all(&self.objects, &why);
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
        let rec = &mut c.extra[self.i];
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
                    o.received(run.now_ns(), n);
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
    o.finished(run.now_ns());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_statuses() {
        let obj = |range| Obj::new(0, 10, 0, 100, range);
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
