//! What both ends share that is noq's own: the congestion controllers, the transport
//! settings (multipath included), the qlog files per connection and the UDP socket (sending
//! from a chosen address); what both programs share is dclab-common's.

use std::io::{self, IoSliceMut};
use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use dclab_common::files::{QlogFile, hex};
use dclab_common::report::SocketFacts;
use dclab_common::{checks, sys};

use noq::congestion::{Bbr3Config, ControllerFactory, CubicConfig, NewRenoConfig};
use noq::udp::{RecvMeta, Transmit};
use noq::{
    AsyncUdpSocket, ConnectionId, EndpointConfig, QlogConfig, QlogFactory, Side, TransportConfig,
    UdpSender, VarInt,
};

/// Names `--cc` accepts; the first is noq's own default (TransportConfig::default()).
pub const CCS: [&str; 3] = ["cubic", "reno", "bbr"];
/// Paths allowed at once by default: noq's own choice where it turns multipath on by itself
/// (TransportConfig::max_remote_nat_traversal_addresses).
pub const DEFAULT_MAX_PATHS: u32 = 8;
/// The most paths --max-paths takes (path ids are 32 bits; far more than a testbed has legs).
const MAX_PATHS: u32 = 64;

/// Flow control per stream: not quinn's 64 MiB. noq-proto 1.4.0 ends a connection ("too
/// many gaps in stream buffer") once a stream holds more than 2048 received frames not yet
/// read, in order or not (it lacks quinn-proto 0.11.19's merging of contiguous chunks),
/// which a reader lagging or a loss on a fast path reach well within 64 MiB. 2 MiB is
/// fewer than 2048 frames of even 1200-byte datagrams; it caps a stream at 2 MiB per round
/// trip (about 16 Mbit/s at 1 s, 170 at 100 ms).
const STREAM_WINDOW: u32 = 2 * 1024 * 1024;
/// What a sender keeps unacknowledged (in flight plus written ahead) per connection, over
/// all its paths.
const SEND_WINDOW: u64 = 16 * 1024 * 1024;
/// The contract asks for at least 128 concurrent request streams per connection.
pub const MAX_BIDI_STREAMS: u32 = 128;
/// noq's own bounds on a UDP payload (EndpointConfig::max_udp_payload_size).
const MAX_UDP_PAYLOAD: u32 = 65_527;

pub fn version_line() -> String {
    format!(
        "noq {} (noq-proto {}, noq-udp {}, rustls {} with ring; multipath, HTTP/0.9-style streams)",
        env!("DCLAB_V_NOQ"),
        env!("DCLAB_V_NOQ_PROTO"),
        env!("DCLAB_V_NOQ_UDP"),
        env!("DCLAB_V_RUSTLS"),
    )
}

pub fn versions_json() -> serde_json::Value {
    serde_json::json!({
        "library": format!("noq {}", env!("DCLAB_V_NOQ")),
        "noq_proto": env!("DCLAB_V_NOQ_PROTO"),
        "noq_udp": env!("DCLAB_V_NOQ_UDP"),
        "rustls": format!("{} (ring)", env!("DCLAB_V_RUSTLS")),
        "application": "HTTP/0.9-style (hq-interop ALPN): GET /<n> [bytes=A-B] per stream",
    })
}

/// The controller factory for a `--cc` name; None for a name noq does not offer here.
pub fn controller(name: &str) -> Option<Arc<dyn ControllerFactory + Send + Sync>> {
    match name {
        "cubic" => Some(Arc::new(CubicConfig::default())),
        "reno" => Some(Arc::new(NewRenoConfig::default())),
        "bbr" => Some(Arc::new(Bbr3Config::default())),
        _ => None,
    }
}

fn seconds(name: &str, v: Option<f64>) -> Result<Option<Duration>, String> {
    match v {
        None => Ok(None),
        Some(s) if s.is_finite() && s > 0.0 && s < 1e6 => Ok(Some(Duration::from_secs_f64(s))),
        Some(s) => Err(format!("{name}: must be > 0 seconds (got {s})")),
    }
}

/// What the common options ask for, checked before anything binds: the error is a
/// sentence for stderr (exit 2).
#[derive(Clone)]
pub struct Settings {
    pub cc: String,
    pub datagram: Option<u16>,
    /// Paths allowed at once (0: multipath off).
    pub max_paths: u32,
    pub path_idle_timeout: Option<Duration>,
    pub path_keep_alive: Option<Duration>,
}

impl Settings {
    pub fn check(args: &crate::CommonArgs) -> Result<Settings, String> {
        checks::cc(crate::STACK, &CCS, &args.cc)?;
        let datagram = checks::datagram(args.max_datagram_size, MAX_UDP_PAYLOAD)?;
        let mp = &args.own;
        if mp.max_paths > MAX_PATHS {
            return Err(format!(
                "--max-paths: must be 0 to {MAX_PATHS} (got {})",
                mp.max_paths
            ));
        }
        checks::files(args.qlog_dir.as_deref(), args.keylog.as_deref())?;
        Ok(Settings {
            cc: args.cc.clone(),
            datagram,
            max_paths: mp.max_paths,
            path_idle_timeout: seconds("--path-idle-timeout", mp.path_idle_timeout)?,
            path_keep_alive: seconds("--path-keep-alive", mp.path_keep_alive)?,
        })
    }

    /// The transport of a connection; `multipath` sends the initial_max_path_id transport
    /// parameter (both ends must, for the extension to be negotiated).
    pub fn transport(
        &self,
        qlog: Option<Arc<dyn QlogFactory>>,
        multipath: bool,
    ) -> TransportConfig {
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
        if multipath && self.max_paths > 0 {
            t.max_concurrent_multipath_paths(self.max_paths);
            t.default_path_max_idle_timeout(self.path_idle_timeout);
            t.default_path_keep_alive_interval(self.path_keep_alive);
        }
        if let Some(f) = qlog {
            t.qlog_factory(f);
        }
        t
    }

    pub fn endpoint_config(&self) -> EndpointConfig {
        let mut e = EndpointConfig::default();
        if let Some(n) = self.datagram {
            // What this end accepts (a transport parameter); noq's default is 1472.
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

/// The addresses of `--paths A1,A2,...`: at least one, no repeats, all of the server's
/// address family (one UDP socket carries every path).
pub fn parse_paths(text: &str, server: &SocketAddr) -> Result<Vec<IpAddr>, String> {
    let mut out: Vec<IpAddr> = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        let ip: IpAddr = part
            .parse()
            .map_err(|_| format!("--paths: not an IP address: {part:?}"))?;
        if ip.is_unspecified() {
            return Err(format!("--paths: {ip} is no address of this host's"));
        }
        if ip.is_ipv4() != server.is_ipv4() {
            return Err(format!(
                "--paths: {ip} is not of the server's address family ({})",
                server.ip()
            ));
        }
        if out.contains(&ip) {
            return Err(format!("--paths: {ip} given twice"));
        }
        out.push(ip);
    }
    Ok(out)
}

/// The ALPN of both ends: the interop runner's HTTP/0.9 over QUIC, whose request line this
/// stack's is (plus an optional byte range).
pub const ALPN: &[u8] = b"hq-interop";

/// noq-proto's `qlog` feature (JSON-SEQ): one file per connection in `dir`, named `name`,
/// or (None) after the client's original destination connection id, as aioquic names its
/// files.
pub struct Qlogs {
    pub dir: PathBuf,
    pub name: Option<String>,
    pub title: String,
}

impl QlogFactory for Qlogs {
    fn for_connection(
        &self,
        _side: Side,
        _remote: SocketAddr,
        initial_dst_cid: ConnectionId,
        now: Instant,
    ) -> Option<QlogConfig> {
        let name = self
            .name
            .clone()
            .unwrap_or_else(|| format!("{}.sqlog", hex(&initial_dst_cid)));
        let file = QlogFile::create(&self.dir, &name)
            .map_err(|e| eprintln!("{}: qlog {name}: {e}", self.title))
            .ok()?;
        let mut cfg = QlogConfig::new(Box::new(file));
        cfg.title(Some(self.title.clone())).start_time(now);
        Some(cfg)
    }
}

/// A socket bound to the wildcard address (so that it receives on every path's address)
/// whose datagrams leave from `src` unless noq names a path's own source: the first path's
/// packets carry none (noq's connect takes no local address), so they leave from the
/// first of --paths rather than wherever the kernel's route points.
#[derive(Debug)]
struct FromAddress {
    inner: Box<dyn AsyncUdpSocket>,
    src: IpAddr,
}

#[derive(Debug)]
struct SenderFrom {
    inner: Pin<Box<dyn UdpSender>>,
    src: IpAddr,
}

impl AsyncUdpSocket for FromAddress {
    fn create_sender(&self) -> Pin<Box<dyn UdpSender>> {
        Box::pin(SenderFrom {
            inner: self.inner.create_sender(),
            src: self.src,
        })
    }
    fn poll_recv(
        &mut self,
        cx: &mut Context<'_>,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        self.inner.poll_recv(cx, bufs, meta)
    }
    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
    fn max_receive_segments(&self) -> NonZeroUsize {
        self.inner.max_receive_segments()
    }
    fn may_fragment(&self) -> bool {
        self.inner.may_fragment()
    }
}

impl UdpSender for SenderFrom {
    fn poll_send(
        mut self: Pin<&mut Self>,
        transmit: &Transmit<'_>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        if transmit.src_ip.is_some() {
            return self.inner.as_mut().poll_send(transmit, cx);
        }
        let t = Transmit {
            src_ip: Some(self.src),
            ..transmit.clone()
        };
        self.inner.as_mut().poll_send(&t, cx)
    }
    fn max_transmit_segments(&self) -> NonZeroUsize {
        self.inner.max_transmit_segments()
    }
}

/// A UDP socket wrapped for noq, with what the report tells of it.
pub struct Socket {
    pub socket: Box<dyn AsyncUdpSocket>,
    pub facts: SocketFacts,
}

/// A socket bound to `bind`; with `src`, datagrams without a source of their own leave
/// from it (see FromAddress).
pub fn socket(bind: SocketAddr, src: Option<IpAddr>) -> io::Result<Socket> {
    use noq::Runtime;
    use std::os::fd::AsRawFd;
    let std_sock = std::net::UdpSocket::bind(bind)?;
    let fd = std_sock.as_raw_fd();
    let local = std_sock.local_addr().ok();
    let rcvbuf_before = sys::rcvbuf(fd);
    // noq-udp sets its options here (ECN, packet info, GRO); it leaves the buffers alone,
    // which rcvbuf_after checks rather than assumes.
    let inner = noq::TokioRuntime.wrap_udp_socket(std_sock)?;
    let socket: Box<dyn AsyncUdpSocket> = match src {
        None => inner,
        Some(src) => Box::new(FromAddress { inner, src }),
    };
    Ok(Socket {
        facts: SocketFacts {
            fd,
            local,
            rcvbuf_before,
            rcvbuf_after: sys::rcvbuf(fd),
            gso_segments: socket.create_sender().max_transmit_segments().get(),
            gro_segments: socket.max_receive_segments().get(),
        },
        socket,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        let v4: SocketAddr = "198.18.0.1:4433".parse().unwrap();
        let ips = parse_paths("198.18.0.2, 198.18.0.3", &v4).unwrap();
        assert_eq!(ips, vec![ip("198.18.0.2"), ip("198.18.0.3")]);
        assert_eq!(parse_paths("198.18.0.2", &v4).unwrap().len(), 1);
        for (bad, why) in [
            ("", "not an IP address"),
            ("198.18.0.2,", "not an IP address"),
            ("198.18.0.2:5", "not an IP address"),
            ("198.18.0.2,198.18.0.2", "given twice"),
            ("0.0.0.0", "no address"),
            ("fd00::2", "address family"),
        ] {
            let e = parse_paths(bad, &v4).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
        let v6: SocketAddr = "[fd00::1]:4433".parse().unwrap();
        assert!(parse_paths("198.18.0.2", &v6).is_err());
        assert_eq!(parse_paths("fd00::2,fd00::3", &v6).unwrap().len(), 2);
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn settings() {
        let args = crate::CommonArgs {
            host: "198.18.0.1".into(),
            port: 1,
            cc: "vegas".into(),
            qlog_dir: None,
            keylog: None,
            max_datagram_size: None,
            own: crate::Multipath {
                max_paths: DEFAULT_MAX_PATHS,
                path_idle_timeout: None,
                path_keep_alive: None,
            },
        };
        let mp = |f: fn(&mut crate::Multipath)| {
            let mut m = args.own.clone();
            f(&mut m);
            m
        };
        let e = Settings::check(&args).err().unwrap();
        assert!(e.contains("vegas") && e.contains("cubic, reno, bbr"), "{e}");
        let ok = crate::CommonArgs {
            cc: "bbr".into(),
            own: mp(|m| m.path_idle_timeout = Some(2.5)),
            ..args.clone()
        };
        let s = Settings::check(&ok).unwrap();
        assert_eq!(s.path_idle_timeout, Some(Duration::from_millis(2500)));
        for bad in [
            crate::CommonArgs {
                cc: "cubic".into(),
                own: mp(|m| m.max_paths = 65),
                ..args.clone()
            },
            crate::CommonArgs {
                cc: "cubic".into(),
                own: mp(|m| m.path_keep_alive = Some(0.0)),
                ..args.clone()
            },
            crate::CommonArgs {
                cc: "cubic".into(),
                max_datagram_size: Some(1100),
                ..args.clone()
            },
        ] {
            assert!(Settings::check(&bad).is_err());
        }
    }
}
