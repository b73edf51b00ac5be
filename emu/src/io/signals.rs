//! SIGINT/SIGTERM as a readable fd (signalfd) for the [`Waiter`](super::Waiter).
//!
//! `Signals::new()` blocks SIGINT and SIGTERM in the calling thread and opens a
//! non-blocking signalfd for them. The signal mask is inherited by threads created
//! afterwards, so create `Signals` in `main` **before spawning any thread** (otherwise the
//! kernel may deliver the signal to a thread that has it unblocked, with the default
//! action: terminate). Add `fd()` to the Waiter with a token; when that token is ready,
//! call `take()` and shut down cleanly.
//!
//! The signals stay blocked after `Signals` is dropped (unblocking with a signal pending
//! would kill the process at an arbitrary point); the runtime is exiting by then anyway.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use anyhow::Context;

pub struct Signals {
    fd: OwnedFd,
}

impl Signals {
    pub fn new() -> anyhow::Result<Signals> {
        // SAFETY: sigset manipulation on a local, then sigmask/signalfd syscalls; checked.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGINT);
            libc::sigaddset(&mut set, libc::SIGTERM);
            let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            if rc != 0 {
                return Err(io::Error::from_raw_os_error(rc)).context("pthread_sigmask(SIG_BLOCK)");
            }
            let fd = libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC);
            if fd < 0 {
                return Err(io::Error::last_os_error()).context("signalfd");
            }
            Ok(Signals {
                fd: OwnedFd::from_raw_fd(fd),
            })
        }
    }

    /// The signalfd: readable while a SIGINT/SIGTERM is pending.
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Consumes one pending signal and returns its number (`libc::SIGINT`/`SIGTERM`), or
    /// `None` if none is pending.
    pub fn take(&self) -> Option<i32> {
        // SAFETY: reading one signalfd_siginfo (128 bytes) into a zeroed local.
        unsafe {
            let mut info: libc::signalfd_siginfo = std::mem::zeroed();
            let n = std::mem::size_of::<libc::signalfd_siginfo>();
            let r = libc::read(
                self.fd.as_raw_fd(),
                (&mut info as *mut libc::signalfd_siginfo).cast(),
                n,
            );
            if r as usize == n {
                Some(info.ssi_signo as i32)
            } else {
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{Clock, Waiter};

    #[test]
    fn sigterm_wakes_waiter_and_is_taken() {
        // Runs in its own thread so the blocked mask does not matter to other tests; the
        // signal is directed at that thread (pthread_kill), never at the process.
        std::thread::spawn(|| {
            let sig = Signals::new().unwrap();
            assert_eq!(sig.take(), None);
            let mut w = Waiter::new(0).unwrap();
            w.add_fd(sig.fd(), 42).unwrap();
            let clock = Clock::new();
            let mut ready = Vec::new();
            w.wait(&clock, Some(clock.now() + 1_000_000), &mut ready)
                .unwrap();
            assert!(ready.is_empty());
            unsafe { libc::pthread_kill(libc::pthread_self(), libc::SIGTERM) };
            w.wait(&clock, Some(clock.now() + 2_000_000_000), &mut ready)
                .unwrap();
            assert_eq!(ready, vec![42]);
            assert_eq!(sig.take(), Some(libc::SIGTERM));
            assert_eq!(sig.take(), None);
            unsafe { libc::pthread_kill(libc::pthread_self(), libc::SIGINT) };
            assert_eq!(sig.take(), Some(libc::SIGINT));
        })
        .join()
        .unwrap();
    }
}
