//! What both ends share that is quinn's own: the congestion controllers, the transport
//! settings, the qlog stream and the UDP socket (what both programs share is dclab-common's).

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use dclab_common::files::QlogFile;
use dclab_common::report::SocketFacts;
use dclab_common::{checks, sys};

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
        checks::cc(crate::STACK, &CCS, &args.cc)?;
        let datagram = checks::datagram(args.max_datagram_size, MAX_UDP_PAYLOAD)?;
        checks::files(args.qlog_dir.as_deref(), args.keylog.as_deref())?;
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

/// A qlog stream (quinn-proto's `qlog` feature: JSON-SEQ) into `dir/name`.
pub fn qlog_stream(dir: &Path, name: &str, title: &str) -> io::Result<QlogStream> {
    let mut cfg = QlogConfig::default();
    cfg.writer(Box::new(QlogFile::create(dir, name)?))
        .title(Some(title.to_string()))
        .start_time(Instant::now());
    cfg.into_stream()
        .ok_or_else(|| io::Error::other("quinn could not start the qlog stream"))
}

/// A UDP socket wrapped for quinn, with what the report tells of it.
pub struct Socket {
    pub socket: Arc<dyn quinn::AsyncUdpSocket>,
    pub facts: SocketFacts,
}

pub fn socket(bind: std::net::SocketAddr) -> io::Result<Socket> {
    use std::os::fd::AsRawFd;
    let std_sock = std::net::UdpSocket::bind(bind)?;
    let fd = std_sock.as_raw_fd();
    let rcvbuf_before = sys::rcvbuf(fd);
    // quinn-udp sets its options here (ECN, packet info, GRO); it leaves the buffers alone,
    // which rcvbuf_after checks rather than assumes.
    let local = std_sock.local_addr().ok();
    let socket = quinn::Runtime::wrap_udp_socket(&quinn::TokioRuntime, std_sock)?;
    Ok(Socket {
        facts: SocketFacts {
            fd,
            local,
            rcvbuf_before,
            rcvbuf_after: sys::rcvbuf(fd),
            gso_segments: socket.max_transmit_segments(),
            gro_segments: socket.max_receive_segments(),
        },
        socket,
    })
}
