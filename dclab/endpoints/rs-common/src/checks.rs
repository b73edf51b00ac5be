//! The options both ends take, checked before anything binds: each error is a sentence for
//! stderr (the server exits 2) or the client's refusal line.

use std::fs::{self, OpenOptions};
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::Path;

/// The smallest UDP payload QUIC allows (RFC 9000, 14).
pub const MIN_UDP_PAYLOAD: u32 = 1200;

/// `--cc`: one of the controllers `stack` offers here.
pub fn cc(stack: &str, offered: &[&str], cc: &str) -> Result<(), String> {
    if offered.contains(&cc) {
        Ok(())
    } else {
        Err(format!(
            "--cc: {stack} offers {} (got {cc:?})",
            offered.join(", ")
        ))
    }
}

/// `--max-datagram-size`: MIN_UDP_PAYLOAD to the library's `max`.
pub fn datagram(n: Option<u32>, max: u32) -> Result<Option<u16>, String> {
    match n {
        None => Ok(None),
        Some(n) if (MIN_UDP_PAYLOAD..=max).contains(&n) => Ok(Some(n as u16)),
        Some(n) => Err(format!(
            "--max-datagram-size: must be {MIN_UDP_PAYLOAD} to {max} bytes (got {n})"
        )),
    }
}

/// `--qlog-dir` made (if missing) and `--keylog` opened for appending: both writable.
pub fn files(qlog_dir: Option<&Path>, keylog: Option<&Path>) -> Result<(), String> {
    if let Some(dir) = qlog_dir {
        fs::create_dir_all(dir)
            .map_err(|e| format!("--qlog-dir: cannot create {}: {e}", dir.display()))?;
    }
    if let Some(file) = keylog {
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(file)
            .map_err(|e| format!("--keylog: cannot open {}: {e}", file.display()))?;
    }
    Ok(())
}

/// `--host` and `--port` as one address (the first the name gives).
pub fn address(host: &str, port: u16) -> Result<SocketAddr, String> {
    (host, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| format!("--host: not an address: {host}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_check_names_its_option() {
        assert!(cc("quinn", &["cubic", "reno"], "cubic").is_ok());
        assert_eq!(
            cc("noq", &["cubic", "reno"], "vegas").unwrap_err(),
            "--cc: noq offers cubic, reno (got \"vegas\")"
        );
        assert_eq!(datagram(None, 65_527), Ok(None));
        assert_eq!(datagram(Some(1200), 65_527), Ok(Some(1200)));
        assert!(
            datagram(Some(1199), 65_527)
                .unwrap_err()
                .starts_with("--max-datagram-size: must be 1200 to 65527")
        );
        assert!(datagram(Some(65_528), 65_527).is_err());
        assert_eq!(
            address("198.18.0.1", 443).unwrap().to_string(),
            "198.18.0.1:443"
        );
        // (a name that is not an address would be looked up: no test sends a DNS query)
        assert!(
            files(None, Some(Path::new("/proc/no/such/keylog")))
                .unwrap_err()
                .starts_with("--keylog: cannot open")
        );
    }
}
