//! Keeping idle CPUs out of halt while dcemu runs (a PM QoS request on
//! `/dev/cpu_dma_latency`, as cyclictest makes).
//!
//! Why: on a VM an idle vCPU halts, and the host must schedule it again before a timer
//! interrupt reaches dcemu. After a sleep of a millisecond that costs up to a millisecond
//! (the cells' slots leave dcemu such sleeps); with the request at 0 µs the kernel's idle
//! loop polls instead, and the same wake-up is tens of microseconds late (TIMER.md, "Idle
//! CPUs"). The request lasts while the file stays open, so the kernel drops it when dcemu
//! exits in any way, a crash included: nothing is left to restore.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The kernel's PM QoS interface for the CPUs' wake-up latency.
pub const CPU_DMA_LATENCY: &str = "/dev/cpu_dma_latency";

/// Why the request could not be made; the runtime carries on without it.
#[derive(Debug, thiserror::Error)]
pub enum IdleError {
    #[error("cannot open {path}: {source}")]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write a wake-up latency of 0 us to {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// A held request for a wake-up latency of 0 µs; dropping it (closing the file) ends it.
#[derive(Debug)]
pub struct IdlePoll {
    _file: File,
}

impl IdlePoll {
    /// Asks that idle CPUs poll rather than halt, for as long as the value lives.
    pub fn hold() -> Result<IdlePoll, IdleError> {
        IdlePoll::hold_at(Path::new(CPU_DMA_LATENCY))
    }

    /// As [`IdlePoll::hold`] through another file (tests).
    pub fn hold_at(path: &Path) -> Result<IdlePoll, IdleError> {
        let mut file = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|source| IdleError::Open {
                path: path.to_path_buf(),
                source,
            })?;
        // The interface takes a binary s32 in microseconds (or its text in hex).
        file.write_all(&0i32.to_ne_bytes())
            .map_err(|source| IdleError::Write {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(IdlePoll { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_a_zero_latency_as_a_binary_s32() {
        let dir = std::env::temp_dir().join(format!("dcemu-idle-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("cpu_dma_latency");
        std::fs::write(&path, b"").unwrap();
        let held = IdlePoll::hold_at(&path).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), 0i32.to_ne_bytes());
        drop(held);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_interface_is_a_named_error() {
        let err = IdlePoll::hold_at(Path::new("/nonexistent/cpu_dma_latency")).unwrap_err();
        assert!(matches!(err, IdleError::Open { .. }));
        assert!(
            err.to_string().contains("/nonexistent/cpu_dma_latency"),
            "{err}"
        );
    }
}
