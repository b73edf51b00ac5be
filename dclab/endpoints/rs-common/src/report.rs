//! The client's run: each object's progress and each connection's facts as the workload
//! goes, and the one JSON line at the end (what dclab/endpoints/json_client.py reads; the
//! contract is in dclab/endpoints/aioquic/h3_client.py's docstring), printed once whatever
//! happens: at the end, by the watchdog, or as a refusal before anything ran.
//!
//! Times are seconds after t0, the request: when the connections start, or with
//! preconnect when every handshake ended and the requests go out (a connection's
//! handshake_s is then its handshake's duration).

use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::files::flush_qlogs;
use crate::sys;
use crate::workload::Workload;

/// An unset time.
pub const NONE: u64 = u64::MAX;
/// How long past --timeout the watchdog lets a workload run before it prints and exits.
pub const WATCHDOG_GRACE: Duration = Duration::from_secs(5);

/// What the line reports of a connection's UDP socket (`stack.sockets`): the receive
/// buffer before and after the library took it, and its segmentation offloads.
pub struct SocketFacts {
    pub fd: RawFd,
    /// The address it is bound to, reported when `bound` is asked for.
    pub local: Option<SocketAddr>,
    pub rcvbuf_before: Option<i64>,
    pub rcvbuf_after: Option<i64>,
    pub gso_segments: usize,
    pub gro_segments: usize,
}

impl SocketFacts {
    /// The facts of connection `connection`'s socket, with its address when `bound`.
    pub fn json(&self, connection: usize, bound: bool) -> Value {
        let mut v = json!({
            "connection": connection, "rcvbuf_before": self.rcvbuf_before, "rcvbuf": self.rcvbuf_after,
            "gso_segments": self.gso_segments, "gro_segments": self.gro_segments,
        });
        if bound {
            v["bound"] = json!(self.local.map(|a| a.to_string()));
        }
        v
    }
}

/// The wildcard address of `server`'s family, for a client's socket.
pub fn wildcard(server: &SocketAddr) -> SocketAddr {
    if server.is_ipv4() {
        SocketAddr::from(([0, 0, 0, 0], 0))
    } else {
        SocketAddr::from(([0u16; 8], 0))
    }
}

/// One object's progress; times in ns since the run's base (NONE: not yet).
pub struct Obj {
    pub index: usize,
    pub size: u64,
    pub connection: usize,
    /// The n of `GET /<n>`: the size, or the whole body a range is cut from.
    pub path_size: u64,
    pub range: Option<(u64, u64)>,
    pub bytes: AtomicU64,
    pub request_ns: AtomicU64,
    pub first_ns: AtomicU64,
    pub last_ns: AtomicU64,
    pub done: AtomicBool,
    pub meta: Mutex<ObjMeta>,
}

/// What an object's answer said (HTTP only: its status and content-range) or why it failed.
#[derive(Default)]
pub struct ObjMeta {
    pub status: Option<u16>,
    pub content_range: Option<String>,
    pub error: Option<String>,
}

impl Obj {
    pub fn new(
        index: usize,
        size: u64,
        connection: usize,
        path_size: u64,
        range: Option<(u64, u64)>,
    ) -> Obj {
        Obj {
            index,
            size,
            connection,
            path_size,
            range,
            bytes: AtomicU64::new(0),
            request_ns: AtomicU64::new(NONE),
            first_ns: AtomicU64::new(NONE),
            last_ns: AtomicU64::new(NONE),
            done: AtomicBool::new(false),
            meta: Mutex::new(ObjMeta::default()),
        }
    }

    /// The object failed for `why` (the first reason stays; a finished object cannot fail).
    pub fn fail(&self, why: String) {
        let mut m = self.meta.lock().unwrap();
        if m.error.is_none() && !self.done.load(Relaxed) {
            m.error = Some(why);
        }
    }

    /// `n` bytes of the body arrived at `t`: counted, their time noted, the bytes dropped.
    pub fn received(&self, t: u64, n: u64) {
        if n == 0 {
            return;
        }
        if self.first_ns.load(Relaxed) == NONE {
            self.first_ns.store(t, Relaxed);
        }
        self.last_ns.store(t, Relaxed);
        self.bytes.fetch_add(n, Relaxed);
    }

    /// The body ended at `t`; an empty body's first and last byte are its end.
    pub fn finished(&self, t: u64) {
        if self.bytes.load(Relaxed) == 0 {
            self.first_ns.store(t, Relaxed);
            self.last_ns.store(t, Relaxed);
        }
        self.done.store(true, Relaxed);
    }
}

/// One connection: its handshake, the library's connection `C` once established, its
/// counters at the end, and what the program keeps besides (`X`).
pub struct Conn<C, X> {
    pub handshake_s: Option<f64>,
    pub handshake_done: bool,
    pub connection: Option<C>,
    pub stats: Option<Value>,
    pub extra: X,
}

/// How a body is judged besides its size: as an HTTP response (status 200, or 206 with
/// the content-range asked) or as a plain stream that ended.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Http,
    Plain,
}

/// The whole workload: what it saw so far, and printing it once.
pub struct Run<C, X> {
    answer: Answer,
    base: Instant,
    t0_ns: AtomicU64,
    request_wall: Mutex<Option<f64>>,
    ready_mono: Mutex<Option<f64>>,
    ready_cpu: Mutex<Option<f64>>,
    pub objects: Vec<Obj>,
    pub conns: Vec<Mutex<Conn<C, X>>>,
    pub workload_error: Mutex<Option<String>>,
    /// The `stack` object of the line: the library, its settings, the sockets.
    pub stack: Mutex<Map<String, Value>>,
    printed: Mutex<bool>,
    exit_code: AtomicI32,
    pub timeout_s: f64,
}

impl<C, X> Run<C, X> {
    /// The run of `wl`, each connection with `extra()`.
    pub fn new(answer: Answer, wl: &Workload, extra: impl Fn() -> X, timeout_s: f64) -> Run<C, X> {
        let ranges = wl.byte_ranges();
        Run {
            answer,
            base: Instant::now(),
            t0_ns: AtomicU64::new(0),
            request_wall: Mutex::new(None),
            ready_mono: Mutex::new(None),
            ready_cpu: Mutex::new(None),
            objects: (0..wl.objects.len())
                .map(|i| {
                    Obj::new(
                        i,
                        wl.objects[i],
                        wl.assignment[i],
                        wl.path_size(i),
                        ranges[i],
                    )
                })
                .collect(),
            conns: (0..wl.connections)
                .map(|_| {
                    Mutex::new(Conn {
                        handshake_s: None,
                        handshake_done: false,
                        connection: None,
                        stats: None,
                        extra: extra(),
                    })
                })
                .collect(),
            workload_error: Mutex::new(None),
            stack: Mutex::new(Map::new()),
            printed: Mutex::new(false),
            exit_code: AtomicI32::new(1),
            timeout_s,
        }
    }

    pub fn now_ns(&self) -> u64 {
        self.base.elapsed().as_nanos() as u64
    }

    /// ns since base to seconds after t0.
    pub fn rel(&self, ns: u64) -> Option<f64> {
        (ns != NONE).then(|| (ns as f64 - self.t0_ns.load(Relaxed) as f64) / 1e9)
    }

    /// Ready to send the first packet: the monotonic clock (the adapter's start-up ends
    /// here) and the CPU used so far (cpu_s counts from here). As in the aioquic client,
    /// this is when the connections start, before the handshakes even with preconnect.
    pub fn mark_ready(&self) {
        *self.ready_cpu.lock().unwrap() = Some(sys::process_cpu());
        *self.ready_mono.lock().unwrap() = Some(sys::monotonic());
    }

    /// The request moment t0, and its wall-clock time.
    pub fn mark_t0(&self) {
        *self.request_wall.lock().unwrap() = Some(sys::unix_time());
        self.t0_ns.store(self.now_ns(), Relaxed);
    }

    /// Nothing can run (a socket could not be made): `why` is the workload's error, and the
    /// line is printed now; the exit code.
    pub fn failed_to_start(&self, why: String) -> i32 {
        *self.workload_error.lock().unwrap() = Some(why);
        self.mark_ready();
        self.mark_t0();
        self.emit()
    }

    /// Connection `c` finished its handshake with `conn`: its handshake_s is its duration
    /// from `started` with preconnect, else its end after t0.
    pub fn established(&self, c: usize, conn: C, preconnect: bool, started: Instant) {
        let mut k = self.conns[c].lock().unwrap();
        k.handshake_s = Some(if preconnect {
            started.elapsed().as_secs_f64()
        } else {
            self.rel(self.now_ns()).unwrap_or(0.0)
        });
        k.handshake_done = true;
        k.connection = Some(conn);
    }

    /// Fails each of `objects` for `why`.
    pub fn fail_all(&self, objects: &[usize], why: &str) {
        for &i in objects {
            self.objects[i].fail(why.to_string());
        }
    }

    fn timeout_reason(&self, handshake_done: bool) -> String {
        let mut why = format!("timeout after {} s", self.timeout_s);
        if !handshake_done {
            why += " before the handshake completed";
        }
        why
    }

    /// Fails every unfinished object with the timeout (naming a missing handshake).
    pub fn fail_unfinished(&self) {
        for o in &self.objects {
            if !o.done.load(Relaxed) {
                let hs = self.conns[o.connection].lock().unwrap().handshake_done;
                o.fail(self.timeout_reason(hs));
            }
        }
    }

    /// The `stack` facts both programs give: the library's versions, the controller, the
    /// runtime, the host's buffers, each socket (`(facts, fd)`), GSO and the datagram size.
    pub fn describe(
        &self,
        versions: Value,
        cc: &str,
        workers: usize,
        sockets: &[(Value, RawFd)],
        datagram: Option<u16>,
        mtu_discovery: bool,
    ) {
        let mut st = self.stack.lock().unwrap();
        if let Value::Object(v) = versions {
            st.extend(v);
        }
        st.insert("cc".into(), json!(cc));
        st.insert(
            "runtime".into(),
            json!(format!("tokio multi-thread, {workers} workers")),
        );
        st.insert(
            "rmem_default".into(),
            json!(sys::sysctl("net.core.rmem_default")),
        );
        st.insert("rmem_max".into(), json!(sys::sysctl("net.core.rmem_max")));
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
            json!({"max_datagram_size": datagram, "mtu_discovery": mtu_discovery,
                   "initial": datagram.unwrap_or(1200)}),
        );
        st.insert(
            "sockets".into(),
            Value::Array(sockets.iter().map(|(s, _)| s.clone()).collect()),
        );
    }

    /// Each socket's SO_RCVBUF again after the workload, and whether the library (`library`,
    /// as the key names it) changed it at any point (taking the socket, or later).
    pub fn sockets_at_end(&self, library: &str, sockets: &mut [(Value, RawFd)]) {
        for (s, fd) in sockets.iter_mut() {
            s["rcvbuf_end"] = json!(sys::rcvbuf(*fd));
        }
        let changed = sockets.iter().any(|(s, _)| {
            s["rcvbuf_before"] != s["rcvbuf"] || s["rcvbuf_before"] != s["rcvbuf_end"]
        });
        let mut st = self.stack.lock().unwrap();
        st.insert(format!("{library}_changed_rcvbuf"), json!(changed));
        st.insert(
            "sockets".into(),
            Value::Array(sockets.iter().map(|(s, _)| s.clone()).collect()),
        );
    }

    fn object_json(&self, o: &Obj) -> (Value, bool, u64, Option<String>) {
        let m = o.meta.lock().unwrap();
        let bytes = o.bytes.load(Relaxed);
        let done = o.done.load(Relaxed);
        let http = self.answer == Answer::Http;
        let want = if o.range.is_some() { 206 } else { 200 };
        let wrong_range = match (o.range, &m.content_range) {
            (Some((a, b)), Some(cr)) if http => {
                let expected = format!("bytes {a}-{b}/{}", o.path_size);
                (cr.trim() != expected).then(|| format!("content-range {cr:?}, asked {expected:?}"))
            }
            _ => None,
        };
        // A plain stream has no status line: its body is right when it ended (FIN) with
        // exactly its size (the program checks each chunk's bytes as they come).
        let ok = m.error.is_none()
            && done
            && (!http || m.status == Some(want))
            && bytes == o.size
            && wrong_range.is_none();
        let error = if ok {
            None
        } else if let Some(e) = &m.error {
            Some(e.clone())
        } else if let Some(s) = m.status.filter(|&s| http && s != want) {
            Some(format!("HTTP status {s} (wanted {want})"))
        } else if let Some(w) = wrong_range {
            Some(w)
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
                    // These clients keep no session cache (rustls resumption off): never resumed.
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
            "cpu_s": ready_cpu.map(|c| sys::process_cpu() - c),
            "workload_error": workload_error,
            "stack": stack,
        })
    }

    /// Prints the JSON line once; returns the exit code it implies (0 ok, 1 failed).
    pub fn emit(&self) -> i32 {
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

    /// Whatever the library does, the process ends: WATCHDOG_GRACE after `deadline` a
    /// thread prints the line (once) and exits.
    pub fn start_watchdog(self: &Arc<Self>, deadline: Instant)
    where
        C: Send + 'static,
        X: Send + 'static,
    {
        let run = self.clone();
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
            flush_qlogs();
            std::process::exit(code);
        });
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

/// The JSON line of a client that did not run (bad arguments): ok false and why; `program`
/// says it on stderr too.
pub fn print_refusal(program: &str, versions: Value, why: &str) {
    let mut stack = Map::new();
    if let Value::Object(v) = versions {
        stack.extend(v);
    }
    let d = json!({
        "ok": false, "bytes": 0, "request_s": 0.0, "handshake_s": null, "first_byte_s": null,
        "last_byte_s": null, "error": why, "request_wall": null, "objects": [], "connections": [],
        "warmup": null, "ready_mono": null, "cpu_s": null, "workload_error": why, "stack": stack,
    });
    println_flush(&d.to_string());
    eprintln!("{program}: {why}");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(answer: Answer) -> Run<(), ()> {
        let wl = Workload::parse(r#"{"objects": [10, 20], "connections": 1}"#, "test").unwrap();
        Run::new(answer, &wl, || (), 60.0)
    }

    #[test]
    fn an_http_body_needs_its_status_and_a_plain_one_only_its_size() {
        for answer in [Answer::Http, Answer::Plain] {
            let r = run(answer);
            r.mark_t0();
            for o in &r.objects {
                o.request_ns.store(r.now_ns(), Relaxed);
                o.received(r.now_ns(), o.size);
                o.finished(r.now_ns());
            }
            let d = r.to_json();
            // No status was recorded: HTTP fails the object, a plain stream does not.
            assert_eq!(d["ok"], json!(answer == Answer::Plain), "{d}");
            if answer == Answer::Http {
                assert_eq!(d["objects"][0]["error"], json!("got 10 of 10 bytes"));
                r.objects[0].meta.lock().unwrap().status = Some(404);
                assert_eq!(
                    r.to_json()["objects"][0]["error"],
                    json!("HTTP status 404 (wanted 200)")
                );
            }
            assert_eq!(d["bytes"], json!(30));
        }
    }

    #[test]
    fn unfinished_objects_fail_with_the_timeout_and_the_first_reason_stays() {
        let r = run(Answer::Plain);
        r.objects[1].fail("reset".into());
        r.fail_unfinished();
        let d = r.to_json();
        assert_eq!(
            d["objects"][0]["error"],
            json!("timeout after 60 s before the handshake completed")
        );
        assert_eq!(d["objects"][1]["error"], json!("reset"));
        assert_eq!(
            d["error"],
            json!(
                "2 of 2 objects failed, first object 0 (/10 on connection 0): timeout after 60 s before the handshake completed"
            )
        );
        r.objects[0].received(5, 3);
        r.objects[0].received(9, 4);
        r.objects[0].finished(12);
        assert_eq!(
            (
                r.objects[0].first_ns.load(Relaxed),
                r.objects[0].last_ns.load(Relaxed)
            ),
            (5, 9)
        );
    }
}
