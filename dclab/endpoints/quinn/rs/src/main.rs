//! dclab's quinn stack: an HTTP/3 server of generated bodies and a timed client workload
//! that prints one JSON line, as dclab/endpoints/json_client.py expects (the contract of
//! every compiled stack; dclab/endpoints/aioquic/h3_client.py's docstring has the line).
//!
//!     dclab-quinn server --host A --port P --cert F --key F --cc CC [--qlog-dir D]
//!                        [--keylog F] [--max-datagram-size N]
//!     dclab-quinn client --host A --port P --workload F --cc CC --ca F --timeout S
//!                        [--qlog-dir D] [--keylog F] [--max-datagram-size N]
//!     dclab-quinn version

mod client;
mod common;
mod server;

/// The stack this program is, as its messages name it.
pub const STACK: &str = "quinn";

use dclab_common::cli::{self, Cmd, Nothing};

pub type CommonArgs = cli::CommonArgs<Nothing>;
pub type ServerArgs = cli::ServerArgs<Nothing, Nothing>;
pub type ClientArgs = cli::ClientArgs<Nothing, Nothing>;

fn main() {
    let cmd = cli::parse_or_refuse::<Nothing, Nothing, Nothing>(
        "dclab-quinn",
        "quinn HTTP/3 server and client workload for dclab",
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
