//! What both ends share: the congestion controllers, the transport settings, TLS (ring),
//! the key log, qlog files and the socket facts reported.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::fd::RawFd;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Instant;

use quinn::congestion::{BbrConfig, ControllerFactory, CubicConfig, NewRenoConfig};
use quinn::{EndpointConfig, QlogConfig, QlogStream, TransportConfig, VarInt};

/// Names `--cc` accepts; the first is quinn's own default (TransportConfig::default()).
pub const CCS: [&str; 3] = ["cubic", "reno", "bbr"];

/// Flow-control windows far above any bandwidth-delay product of the study, so that only
/// the congestion controller limits a transfer (the aioquic stack uses the same 64 MiB,
/// dclab/endpoints/aioquic/h3_server.py FLOW_WINDOW).
const STREAM_WINDOW: u32 = 64 * 1024 * 1024;
/// What a sender keeps unacknowledged (in flight plus written ahead) per connection.
/// quinn fills it whatever the cwnd, so it is memory per connection: 16 MiB carries
/// 130 Mbit/s at 1 s of RTT, 64 connections cost at most 1 GiB.
const SEND_WINDOW: u64 = 16 * 1024 * 1024;
/// The contract asks for at least 128 concurrent request streams per connection.
pub const MAX_BIDI_STREAMS: u32 = 128;
/// quinn's own upper bound on a UDP payload (EndpointConfig::max_udp_payload_size).
const MAX_UDP_PAYLOAD: u32 = 65_527;
const MIN_UDP_PAYLOAD: u32 = 1200;

pub fn version_line() -> String {
    format!(
        "quinn {} (quinn-proto {}, h3 {}, h3-quinn {}, rustls {} with ring)",
        env!("DCLAB_V_QUINN"),
        env!("DCLAB_V_QUINN_PROTO"),
        env!("DCLAB_V_H3"),
        env!("DCLAB_V_H3_QUINN"),
        env!("DCLAB_V_RUSTLS"),
    )
}

pub fn versions_json() -> serde_json::Value {
    serde_json::json!({
        "library": format!("quinn {}", env!("DCLAB_V_QUINN")),
        "quinn_proto": env!("DCLAB_V_QUINN_PROTO"),
        "h3": env!("DCLAB_V_H3"),
        "h3_quinn": env!("DCLAB_V_H3_QUINN"),
        "rustls": format!("{} (ring)", env!("DCLAB_V_RUSTLS")),
    })
}

/// The controller factory for a `--cc` name; None for a name quinn does not offer here.
pub fn controller(name: &str) -> Option<Arc<dyn ControllerFactory + Send + Sync>> {
    match name {
        "cubic" => Some(Arc::new(CubicConfig::default())),
        "reno" => Some(Arc::new(NewRenoConfig::default())),
        "bbr" => Some(Arc::new(BbrConfig::default())),
        _ => None,
    }
}

/// What `--cc`, `--max-datagram-size` and `--qlog-dir` ask for, checked before anything
/// binds: the error is a sentence for stderr (exit 2).
#[derive(Clone)]
pub struct Settings {
    pub cc: String,
    pub datagram: Option<u16>,
}

impl Settings {
    pub fn check(args: &crate::CommonArgs) -> Result<Settings, String> {
        if controller(&args.cc).is_none() {
            return Err(format!(
                "--cc: quinn offers {} (got {:?})",
                CCS.join(", "),
                args.cc
            ));
        }
        let datagram = match args.max_datagram_size {
            None => None,
            Some(n) if (MIN_UDP_PAYLOAD..=MAX_UDP_PAYLOAD).contains(&n) => Some(n as u16),
            Some(n) => {
                return Err(format!(
                    "--max-datagram-size: must be {MIN_UDP_PAYLOAD} to {MAX_UDP_PAYLOAD} bytes (got {n})"
                ));
            }
        };
        if let Some(dir) = &args.qlog_dir {
            fs::create_dir_all(dir)
                .map_err(|e| format!("--qlog-dir: cannot create {}: {e}", dir.display()))?;
        }
        if let Some(file) = &args.keylog {
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(file)
                .map_err(|e| format!("--keylog: cannot open {}: {e}", file.display()))?;
        }
        Ok(Settings {
            cc: args.cc.clone(),
            datagram,
        })
    }

    /// The transport of one connection (a qlog stream is per connection, hence per config).
    pub fn transport(&self, qlog: Option<QlogStream>) -> TransportConfig {
        let mut t = TransportConfig::default();
        t.congestion_controller_factory(controller(&self.cc).expect("checked"));
        t.stream_receive_window(VarInt::from_u32(STREAM_WINDOW));
        t.send_window(SEND_WINDOW);
        t.max_concurrent_bidi_streams(VarInt::from_u32(MAX_BIDI_STREAMS));
        if let Some(n) = self.datagram {
            // Fixed: start at N, never probe, never fall below it.
            t.initial_mtu(n);
            t.min_mtu(n);
            t.mtu_discovery_config(None);
        }
        t.qlog_stream(qlog);
        t
    }

    pub fn endpoint_config(&self) -> EndpointConfig {
        let mut e = EndpointConfig::default();
        if let Some(n) = self.datagram {
            // What this end accepts (a transport parameter); quinn's default is 1472.
            if n > 1472 {
                e.max_udp_payload_size(n).expect("checked range");
            }
        }
        e
    }

    pub fn mtu_discovery(&self) -> bool {
        self.datagram.is_none()
    }
}

pub fn crypto_provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Appends TLS secrets in the NSS key log format (SSLKEYLOGFILE's); unbuffered, so the
/// secrets are on disk even if the process is killed.
#[derive(Debug)]
pub struct FileKeyLog(Mutex<File>);

impl FileKeyLog {
    pub fn open(path: &Path) -> io::Result<Arc<FileKeyLog>> {
        let f = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Arc::new(FileKeyLog(Mutex::new(f))))
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

impl rustls::KeyLog for FileKeyLog {
    fn log(&self, label: &str, client_random: &[u8], secret: &[u8]) {
        let line = format!("{label} {} {}\n", hex(client_random), hex(secret));
        if let Ok(mut f) = self.0.lock() {
            let _ = f.write_all(line.as_bytes());
        }
    }
}

pub fn cid_hex(cid: &[u8]) -> String {
    hex(cid)
}

type SharedFile = Mutex<BufWriter<File>>;

/// Every qlog file still open, to flush before the process exits (a connection quinn still
/// holds would otherwise lose its buffered tail).
fn open_qlogs() -> &'static Mutex<Vec<Weak<SharedFile>>> {
    static QLOGS: OnceLock<Mutex<Vec<Weak<SharedFile>>>> = OnceLock::new();
    QLOGS.get_or_init(|| Mutex::new(Vec::new()))
}

struct QlogFile(Arc<SharedFile>);

impl Write for QlogFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .map_err(|_| io::Error::other("poisoned"))?
            .write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0
            .lock()
            .map_err(|_| io::Error::other("poisoned"))?
            .flush()
    }
}

/// A qlog stream (quinn-proto's `qlog` feature: JSON-SEQ) into `dir/name`.
pub fn qlog_stream(dir: &Path, name: &str, title: &str) -> io::Result<QlogStream> {
    let file = File::create(dir.join(name))?;
    let shared = Arc::new(Mutex::new(BufWriter::with_capacity(256 * 1024, file)));
    {
        let mut open = open_qlogs().lock().unwrap();
        open.retain(|w| w.strong_count() > 0);
        open.push(Arc::downgrade(&shared));
    }
    let mut cfg = QlogConfig::default();
    cfg.writer(Box::new(QlogFile(shared)))
        .title(Some(title.to_string()))
        .start_time(Instant::now());
    cfg.into_stream()
        .ok_or_else(|| io::Error::other("quinn could not start the qlog stream"))
}

pub fn flush_qlogs() {
    let open = open_qlogs().lock().unwrap();
    for w in open.iter().filter_map(Weak::upgrade) {
        if let Ok(mut f) = w.lock() {
            let _ = f.flush();
        }
    }
}

/// The socket's SO_RCVBUF as the kernel reports it: net.core.rmem_default for a socket
/// nobody changed (a value set with setsockopt would read back doubled).
pub fn rcvbuf(fd: RawFd) -> Option<i64> {
    let mut val: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `val`, a live c_int.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&mut val as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    (rc == 0).then_some(i64::from(val))
}

pub fn sysctl(name: &str) -> Option<i64> {
    fs::read_to_string(format!("/proc/sys/{}", name.replace('.', "/")))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// A UDP socket wrapped for quinn, with what the report tells of it.
pub struct Socket {
    pub socket: Arc<dyn quinn::AsyncUdpSocket>,
    pub fd: RawFd,
    pub rcvbuf_before: Option<i64>,
    pub rcvbuf_after: Option<i64>,
    pub gso_segments: usize,
    pub gro_segments: usize,
}

pub fn socket(bind: std::net::SocketAddr) -> io::Result<Socket> {
    use std::os::fd::AsRawFd;
    let std_sock = std::net::UdpSocket::bind(bind)?;
    let fd = std_sock.as_raw_fd();
    let rcvbuf_before = rcvbuf(fd);
    // quinn-udp sets its options here (ECN, packet info, GRO); it leaves the buffers alone,
    // which rcvbuf_after checks rather than assumes.
    let socket = quinn::Runtime::wrap_udp_socket(&quinn::TokioRuntime, std_sock)?;
    Ok(Socket {
        rcvbuf_after: rcvbuf(fd),
        gso_segments: socket.max_transmit_segments(),
        gro_segments: socket.max_receive_segments(),
        socket,
        fd,
        rcvbuf_before,
    })
}

/// CPU seconds (user + system) this process used so far.
pub fn process_cpu() -> f64 {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return f64::NAN;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// CLOCK_MONOTONIC in seconds: the clock of Python's time.monotonic().
pub fn monotonic() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime fills the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

pub fn unix_time() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
