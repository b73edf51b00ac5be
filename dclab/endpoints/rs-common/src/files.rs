//! Files a run keeps: the TLS key log, and the qlog files (one per connection), flushed
//! before the process exits.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// Appends TLS secrets in the NSS key log format (SSLKEYLOGFILE's); unbuffered, so the
/// secrets are on disk even if the process is killed.
#[derive(Debug)]
pub struct FileKeyLog(Mutex<File>);

impl FileKeyLog {
    pub fn open(path: &Path) -> io::Result<Arc<FileKeyLog>> {
        let f = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Arc::new(FileKeyLog(Mutex::new(f))))
    }
}

impl rustls::KeyLog for FileKeyLog {
    fn log(&self, label: &str, client_random: &[u8], secret: &[u8]) {
        let line = format!("{label} {} {}\n", hex(client_random), hex(secret));
        if let Ok(mut f) = self.0.lock() {
            let _ = f.write_all(line.as_bytes());
        }
    }
}

/// Bytes in lower-case hex (a key log's fields, a connection id in a qlog file's name).
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

type SharedFile = Mutex<BufWriter<File>>;

/// Every qlog file still open, to flush before the process exits (a connection the library
/// still holds would otherwise lose its buffered tail).
fn open_qlogs() -> &'static Mutex<Vec<Weak<SharedFile>>> {
    static QLOGS: OnceLock<Mutex<Vec<Weak<SharedFile>>>> = OnceLock::new();
    QLOGS.get_or_init(|| Mutex::new(Vec::new()))
}

/// A qlog file the library writes into (through `Write`); `flush_qlogs` reaches it.
pub struct QlogFile(Arc<SharedFile>);

impl QlogFile {
    /// Creates `dir/name`, buffered, and remembers it for `flush_qlogs`.
    pub fn create(dir: &Path, name: &str) -> io::Result<QlogFile> {
        let file = File::create(dir.join(name))?;
        let shared = Arc::new(Mutex::new(BufWriter::with_capacity(256 * 1024, file)));
        let mut open = open_qlogs().lock().unwrap();
        open.retain(|w| w.strong_count() > 0);
        open.push(Arc::downgrade(&shared));
        Ok(QlogFile(shared))
    }
}

impl Write for QlogFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .map_err(|_| io::Error::other("poisoned"))?
            .write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0
            .lock()
            .map_err(|_| io::Error::other("poisoned"))?
            .flush()
    }
}

/// Flushes every qlog file still open.
pub fn flush_qlogs() {
    let open = open_qlogs().lock().unwrap();
    for w in open.iter().filter_map(Weak::upgrade) {
        if let Ok(mut f) = w.lock() {
            let _ = f.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_qlog_file_is_on_disk_after_flush_qlogs_and_hex_is_lower_case() {
        let dir = std::env::temp_dir().join(format!("dclab-common-qlog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut f = QlogFile::create(&dir, "a.sqlog").unwrap();
        f.write_all(b"\x1e{}\n").unwrap();
        assert_eq!(std::fs::read(dir.join("a.sqlog")).unwrap(), b""); // still buffered
        flush_qlogs();
        assert_eq!(std::fs::read(dir.join("a.sqlog")).unwrap(), b"\x1e{}\n");
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(hex(&[0, 0xab, 0x10]), "00ab10");
    }
}
