//! Socket and clock facts the client reports: a socket's receive buffer, sysctls, the CPU
//! this process used, and the two clocks dclab's Python side reads.

use std::fs;
use std::os::fd::RawFd;

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
