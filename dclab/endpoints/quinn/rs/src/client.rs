//! The timed client workload: every connection (its own UDP socket and quinn endpoint)
//! started at once, objects requested in parallel or one after another, bodies counted
//! and dropped; one JSON line at the end, always (dclab-common's `report`: a watchdog
//! thread prints it and ends the process if the workload outlives its timeout).
//!
//! Times are seconds after t0, the request: when the connections start, or with
//! preconnect when every handshake ended and the requests go out (a connection's
//! handshake_s is then its handshake's duration). The timeout counts from the first
//! connection attempt (handshakes included).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use dclab_common::report::{self, Answer};
use dclab_common::workload::Workload;
use dclab_common::{checks, files, tls};
use quinn::crypto::rustls::QuicClientConfig;
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};

use crate::ClientArgs;
use crate::common::{self, Settings};

const PROGRAM: &str = "dclab-quinn client";
const CLOSE_WAIT: Duration = Duration::from_secs(1);

type SendRequest = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;
type Run = report::Run<quinn::Connection, ()>;

/// The JSON line of a client that did not run (bad arguments): ok false and why.
pub fn print_refusal(why: &str) {
    report::print_refusal(PROGRAM, common::versions_json(), why);
}

fn tls_config(args: &ClientArgs) -> Result<Arc<QuicClientConfig>, String> {
    let tls = tls::client(&args.ca, b"h3", args.common.keylog.as_deref())?;
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
    let tls = tls_config(args)?;
    Ok(Prepared {
        workload,
        settings,
        tls,
        addr,
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

fn stats_json(c: &quinn::Connection) -> Value {
    let s = c.stats();
    json!({
        "rtt_ms": s.path.rtt.as_secs_f64() * 1e3,
        "cwnd": s.path.cwnd,
        "current_mtu": s.path.current_mtu,
        "sent_packets": s.path.sent_packets,
        "lost_packets": s.path.lost_packets,
        "lost_bytes": s.path.lost_bytes,
        "congestion_events": s.path.congestion_events,
        "udp_rx_datagrams": s.udp_rx.datagrams,
        "udp_rx_ios": s.udp_rx.ios,
        "udp_tx_datagrams": s.udp_tx.datagrams,
        "udp_tx_ios": s.udp_tx.ios,
    })
}

async fn run(args: ClientArgs, p: Prepared, workers: usize) -> i32 {
    let wl = p.workload;
    let run = Arc::new(Run::new(Answer::Http, &wl, || (), args.timeout));
    let settings = &p.settings;

    // One socket and endpoint per connection, before t0 (set-up is not network time).
    let bind = report::wildcard(&p.addr);
    let mut endpoints = Vec::with_capacity(wl.connections);
    let mut sockets = Vec::with_capacity(wl.connections);
    for c in 0..wl.connections {
        let made = common::socket(bind).and_then(|s| {
            let info = (s.facts.json(c, false), s.facts.fd);
            quinn::Endpoint::new_with_abstract_socket(
                settings.endpoint_config(),
                None,
                s.socket,
                Arc::new(quinn::TokioRuntime),
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

    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(args.timeout);
    run.mark_ready();
    if !wl.preconnect {
        run.mark_t0();
    }
    run.start_watchdog(deadline);

    if std::env::var_os("DCLAB_QUINN_TEST_STALL").is_some() {
        // tests/test_endpoint_quinn.py: a stalled library, which only the watchdog ends.
        std::thread::sleep(Duration::from_secs(3600));
    }
    let (hs_tx, mut hs_rx) = mpsc::unbounded_channel::<()>();
    let (go_tx, go_rx) = watch::channel(false);
    let authority = if p.addr.is_ipv6() {
        format!("[{}]:{}", p.addr.ip(), p.addr.port())
    } else {
        format!("{}:{}", p.addr.ip(), p.addr.port())
    };
    let mut tasks = Vec::with_capacity(wl.connections);
    for (c, endpoint) in endpoints.iter().enumerate() {
        let qlog = match &args.common.qlog_dir {
            None => None,
            Some(dir) => {
                match common::qlog_stream(dir, &format!("client-conn{c}.sqlog"), PROGRAM) {
                    Ok(s) => Some(s),
                    Err(e) => {
                        eprintln!("{PROGRAM}: qlog of connection {c}: {e}");
                        None
                    }
                }
            }
        };
        let mut cfg = quinn::ClientConfig::new(p.tls.clone());
        cfg.transport_config(Arc::new(settings.transport(qlog)));
        let job = ConnJob {
            run: run.clone(),
            c,
            endpoint: endpoint.clone(),
            cfg,
            addr: p.addr,
            server_name: args.common.host.clone(),
            authority: authority.clone(),
            objects: wl.objects_of(c),
            sequential: wl.sequential,
            preconnect: wl.preconnect,
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
    for c in &run.conns {
        let mut c = c.lock().unwrap();
        if let Some(conn) = &c.connection {
            c.stats = Some(stats_json(conn));
        }
    }
    run.sockets_at_end("quinn", &mut sockets);
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
            if c.lock().unwrap().connection.is_some() {
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
    endpoint: quinn::Endpoint,
    cfg: quinn::ClientConfig,
    addr: SocketAddr,
    server_name: String,
    authority: String,
    objects: Vec<usize>,
    sequential: bool,
    preconnect: bool,
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
            let (mut driver, send) = h3::client::builder()
                .send_grease(false)
                .build::<_, _, Bytes>(h3_quinn::Connection::new(conn))
                .await
                .map_err(|e| format!("h3: {e}"))?;
            tokio::spawn(async move {
                let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
            });
            Ok::<SendRequest, String>(send)
        };
        let send = handshake.await;
        let _ = self.hs_tx.send(());
        let send = match send {
            Ok(s) => s,
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
        if self.preconnect {
            let _ = self.go_rx.wait_for(|go| *go).await;
        }
        let objects = std::mem::take(&mut self.objects);
        if self.sequential {
            let mut send = send;
            for i in objects {
                fetch(&run, &mut send, &self.authority, i).await;
            }
        } else {
            let mut set = tokio::task::JoinSet::new();
            for i in objects {
                let (run, mut send, authority) =
                    (run.clone(), send.clone(), self.authority.clone());
                set.spawn(async move { fetch(&run, &mut send, &authority, i).await });
            }
            while set.join_next().await.is_some() {}
        }
    }
}

/// Requests object i and counts its body (never stored).
async fn fetch(run: &Run, send: &mut SendRequest, authority: &str, i: usize) {
    let o = &run.objects[i];
    let mut req = http::Request::get(format!("https://{authority}/{}", o.path_size))
        .header("user-agent", "dclab-quinn");
    if let Some((a, b)) = o.range {
        req = req.header("range", format!("bytes={a}-{b}"));
    }
    let req = req.body(()).expect("valid request");
    o.request_ns.store(run.now_ns(), Relaxed);
    let mut stream = match send.send_request(req).await {
        Ok(s) => s,
        Err(e) => return o.fail(format!("request: {e}")),
    };
    if let Err(e) = stream.finish().await {
        return o.fail(format!("request: {e}"));
    }
    let resp = match stream.recv_response().await {
        Ok(r) => r,
        Err(e) => return o.fail(format!("response: {e}")),
    };
    {
        let mut m = o.meta.lock().unwrap();
        m.status = Some(resp.status().as_u16());
        m.content_range = resp
            .headers()
            .get("content-range")
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    }
    loop {
        match stream.recv_data().await {
            Ok(Some(chunk)) => {
                // The receive path: count, note the time, drop the chunk.
                o.received(run.now_ns(), chunk.remaining() as u64);
            }
            Ok(None) => break,
            Err(e) => return o.fail(format!("body: {e}")),
        }
    }
    o.finished(run.now_ns());
}
