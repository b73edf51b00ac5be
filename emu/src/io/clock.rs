//! The real-time clock of the runtime: nanoseconds since the `Clock` was created, on
//! `CLOCK_MONOTONIC` (never jumps with wall-clock changes; the same clock the timers use).

use crate::base::time::{Nanos, NS_PER_S};

/// Raw `CLOCK_MONOTONIC` in nanoseconds (vDSO, no syscall).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a timespec; CLOCK_MONOTONIC always exists on Linux.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    debug_assert_eq!(rc, 0);
    ts.tv_sec as u64 * NS_PER_S + ts.tv_nsec as u64
}

/// Converts absolute `CLOCK_MONOTONIC` nanoseconds into a `timespec`.
pub fn ns_to_timespec(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / NS_PER_S) as libc::time_t,
        tv_nsec: (ns % NS_PER_S) as libc::c_long,
    }
}

/// Monotonic clock with its epoch at creation: `now()` starts at (about) 0.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    origin: u64,
}

impl Default for Clock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock {
    pub fn new() -> Clock {
        Clock {
            origin: monotonic_ns(),
        }
    }

    /// Nanoseconds since this clock was created.
    #[inline]
    pub fn now(&self) -> Nanos {
        monotonic_ns().saturating_sub(self.origin)
    }

    /// The `CLOCK_MONOTONIC` value (ns) that corresponds to `now() == 0`.
    pub fn origin_monotonic_ns(&self) -> u64 {
        self.origin
    }

    /// Clock time `t` as absolute `CLOCK_MONOTONIC` nanoseconds.
    #[inline]
    pub fn to_monotonic_ns(&self, t: Nanos) -> u64 {
        self.origin.saturating_add(t)
    }

    /// Clock time `t` as an absolute `CLOCK_MONOTONIC` `timespec`, e.g. for
    /// `timerfd_settime(.., TFD_TIMER_ABSTIME, ..)` or `clock_nanosleep(TIMER_ABSTIME)`.
    pub fn to_abs_timespec(&self, t: Nanos) -> libc::timespec {
        ns_to_timespec(self.to_monotonic_ns(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_is_monotonic_and_starts_near_zero() {
        let c = Clock::new();
        let a = c.now();
        assert!(a < NS_PER_S, "fresh clock reads {a} ns");
        let b = c.now();
        assert!(b >= a);
        let ts = c.to_abs_timespec(1_500_000_000);
        let back = ts.tv_sec as u64 * NS_PER_S + ts.tv_nsec as u64;
        assert_eq!(back, c.origin_monotonic_ns() + 1_500_000_000);
        assert!(ts.tv_nsec < NS_PER_S as libc::c_long);
    }
}
