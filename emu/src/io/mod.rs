//! OS-facing I/O of the real-time runtime (Linux only).
//!
//! - [`clock`]: the monotonic [`Clock`] (`now()` in ns since start) and timespec conversion.
//! - [`timer`]: the [`Waiter`], which sleeps until a deadline with minimal lateness while
//!   waking on fd readiness (design and measurements in `TIMER.md`).
//! - [`tun`]: L3 TUN devices created in the root namespace and moved into a named network
//!   namespace, addressed point-to-point.
//! - [`signals`]: SIGINT/SIGTERM as a pollable signalfd.
//! - [`idle`]: idle CPUs kept polling (a PM QoS request) so that timer wake-ups come early.
//! - [`pcap`]: capture of what the client receives.
//! - [`vnet`]: TUN offloads: splitting super-packets read, joining runs to write (sans-IO).
//! - [`runtime`]: the real-time driver of the engine.

#[allow(unsafe_code)] // syscalls libc does not wrap safely
pub mod clock;
pub mod idle;
pub mod pcap;
pub mod runtime;
#[allow(unsafe_code)] // syscalls libc does not wrap safely
pub mod signals;
#[allow(unsafe_code)] // syscalls libc does not wrap safely
pub mod timer;
#[allow(unsafe_code)] // syscalls libc does not wrap safely
pub mod tun;
pub mod vnet;

pub use clock::Clock;
pub use signals::Signals;
pub use timer::{Waiter, DEFAULT_SPIN_US};
pub use tun::{preflight, Tun, TunConfig};
