//! What dclab's two Rust QUIC programs (`dclab/endpoints/quinn/rs`, `dclab/endpoints/noq/rs`)
//! share, written once: the bodies the servers send (`body`), the workload file and its checks (`workload`), the client's run
//! and its one JSON line (`report`), TLS with a pinned certificate (`tls`), the key log and
//! qlog files (`files`), the checks of the options both ends take (`checks`), the command line's refusal (`cli`), socket and
//! clock facts (`sys`), and the locked crate versions their build scripts put into the
//! binaries (`lockfile`). Each program keeps only what its library makes different.

#![deny(unsafe_code)]

pub mod lockfile;

#[cfg(feature = "runtime")]
pub mod body;
#[cfg(feature = "runtime")]
pub mod checks;
#[cfg(feature = "runtime")]
pub mod cli;
#[cfg(feature = "runtime")]
pub mod files;
#[cfg(feature = "runtime")]
pub mod report;
#[cfg(feature = "runtime")]
#[allow(unsafe_code)] // getsockopt, getrusage, clock_gettime
pub mod sys;
#[cfg(feature = "runtime")]
pub mod tls;
#[cfg(feature = "runtime")]
pub mod workload;
