//! dclab's noq stack: a server of generated bodies over QUIC streams (HTTP/0.9 style: no
//! h3 binding exists for noq) and a timed client workload that prints one JSON line, as
//! dclab/endpoints/json_client.py expects; with --paths the client opens a multipath QUIC
//! connection (draft-ietf-quic-multipath), one path from each of its addresses.
//!
//!     dclab-noq server --host A --port P --cert F --key F --cc CC [--qlog-dir D]
//!                      [--keylog F] [--max-datagram-size N] [--max-paths N]
//!                      [--path-idle-timeout S] [--path-keep-alive S] [--ignore-peer-status]
//!     dclab-noq client --host A --port P --workload F --cc CC --ca F --timeout S
//!                      [--paths A1,A2,...] [--path-status available|backup] [--max-paths N]
//!                      [--qlog-dir D] [--keylog F] [--max-datagram-size N] ...
//!     dclab-noq version

mod client;
mod common;
mod server;

/// The stack this program is, as its messages name it.
pub const STACK: &str = "noq";

use clap::Args;
use dclab_common::cli::{self, Cmd};

pub type CommonArgs = cli::CommonArgs<Multipath>;
pub type ServerArgs = cli::ServerArgs<Multipath, ServerOwn>;
pub type ClientArgs = cli::ClientArgs<Multipath, ClientOwn>;

/// Multipath options both ends take.
#[derive(Args, Clone)]
pub struct Multipath {
    /// Multipath: the most paths (the first included) this end allows at once, sent as the
    /// initial_max_path_id transport parameter (N - 1). Server: 0 turns multipath off.
    /// Client: used only with --paths, and at least as many as it has addresses
    #[arg(long, default_value_t = common::DEFAULT_MAX_PATHS)]
    pub max_paths: u32,
    /// Multipath: seconds a path may stay idle before it is abandoned (noq's default: none,
    /// the connection's idle timeout alone)
    #[arg(long)]
    pub path_idle_timeout: Option<f64>,
    /// Multipath: a PING on each idle path this often, in seconds (noq's default: none)
    #[arg(long)]
    pub path_keep_alive: Option<f64>,
}

#[derive(Args)]
pub struct ServerOwn {
    /// Keep every path "available" for sending even when the client marks it backup (by
    /// default the server takes over the status the client gives each path)
    #[arg(long)]
    pub ignore_peer_status: bool,
}

#[derive(Args)]
pub struct ClientOwn {
    /// Multipath: this client's own address on each path, comma-separated: every
    /// connection starts from the first, then opens one further path from each other
    #[arg(long)]
    pub paths: Option<String>,
    /// Multipath: the status the further paths are opened with: available (data on every
    /// available path) or backup (used only while no available path is left)
    #[arg(long, default_value = "available")]
    pub path_status: String,
}

fn main() {
    let cmd = cli::parse_or_refuse::<Multipath, ServerOwn, ClientOwn>(
        "dclab-noq",
        "noq (multipath QUIC) server and client workload for dclab: requests are HTTP/0.9-style \
         streams (GET /<n> [bytes=A-B]); one congestion controller per path, bbr being noq's BBRv3",
        client::print_refusal,
    );
    let code = match cmd {
        Cmd::Server(a) => server::main(a),
        Cmd::Client(a) => client::main(a),
        Cmd::Version => {
            println!("{}", common::version_line());
            0
        }
    };
    std::process::exit(code);
}
