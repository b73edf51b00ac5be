//! What dcemu reads, read safely, and what it echoes, cut short.
//!
//! Every file dcemu is given by path (the scenario, `dcemu sim --workload`, bandwidth
//! traces) goes through [`read_input`]: it must be a regular file of at most
//! [`INPUT_LIMIT`] bytes, UTF-8 text. A device (`/dev/zero`), a FIFO (opened without
//! blocking), a directory or a socket is refused before anything is read, a file over the
//! limit too. Standard input (`pdcp-replay`) is streamed: [`check_stdin`] refuses what
//! cannot be input and [`read_line`] bounds each line.
//!
//! A message never echoes a whole input: [`clip`] and [`clip_echoes`] cut an echoed value
//! to about [`ECHO_LIMIT`] characters and say how long it was. The limits are the Python
//! side's (`dclab/files.py`).

use std::fs::{File, Metadata};
use std::io::{BufRead, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use anyhow::{bail, Result};

/// Largest input file, bytes (64 MiB). Scenario and workload files are a few kB and the
/// largest bandwidth traces a few MB: far above both, far below memory.
pub const INPUT_LIMIT: u64 = 64 * 1024 * 1024;

/// Largest TOML input (a scenario, a workload), bytes: parsing takes about 27 times its
/// size (11 MB of match rules peaked at 300 MB), so 16 MiB stays under half a gigabyte;
/// the largest scenario the limits allow otherwise (10,000 schedule entries, a day of
/// blockage periods per device) is a few MB.
pub const TOML_LIMIT: u64 = 16 * 1024 * 1024;

/// Characters of an input value a message echoes before cutting it.
pub const ECHO_LIMIT: usize = 120;

/// Longest line read from a stream (standard input), bytes: a `pdcp-replay` line is a time,
/// an SN and perhaps a comment; this is a thousand times that, and stops `/dev/zero` at once.
pub const LINE_LIMIT: usize = 64 * 1024;

/// `limit` in words for a message: "67108864 bytes (64 MiB)".
fn bytes_words(limit: u64) -> String {
    if limit >= 1 << 20 && limit % (1 << 20) == 0 {
        format!("{limit} bytes ({} MiB)", limit >> 20)
    } else {
        format!("{limit} bytes")
    }
}

/// What a non-regular file is, in words ("a FIFO").
fn kind(m: &Metadata) -> &'static str {
    let t = m.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_symlink() {
        "a symlink"
    } else {
        "not a regular file"
    }
}

/// The UTF-8 text of the regular file at `path` (symlinks to one are followed), at most
/// [`INPUT_LIMIT`] bytes. Errors are one line naming `what`, the path and the reason:
/// "scenario: /dev/zero is a character device, not a regular file".
pub fn read_input(path: &Path, what: &str) -> Result<String> {
    read_input_within(path, what, INPUT_LIMIT)
}

/// [`read_input`] for a TOML file: at most [`TOML_LIMIT`] bytes.
pub fn read_toml_input(path: &Path, what: &str) -> Result<String> {
    read_input_within(path, what, TOML_LIMIT)
}

fn read_input_within(path: &Path, what: &str, limit: u64) -> Result<String> {
    let p = path.display();
    // O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting for one.
    let file = File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path);
    let file = match file {
        Ok(f) => f,
        Err(e) => {
            // A socket cannot be opened (ENXIO): say what it is rather than why open failed.
            if let Some(m) = std::fs::metadata(path)
                .ok()
                .filter(|m| m.file_type().is_socket())
            {
                bail!("{what}: {p} is {}, not a regular file", kind(&m));
            }
            bail!("{what}: cannot read {p}: {e}");
        }
    };
    let meta = file
        .metadata()
        .map_err(|e| anyhow::anyhow!("{what}: cannot read {p}: {e}"))?;
    if !meta.is_file() {
        bail!("{what}: {p} is {}, not a regular file", kind(&meta));
    }
    if meta.len() > limit {
        bail!(
            "{what}: {p} is {} bytes; at most {} are read",
            meta.len(),
            bytes_words(limit)
        );
    }
    let mut data = Vec::with_capacity(meta.len() as usize);
    // One byte more than the limit: a file that grew since fstat is caught, not read on.
    file.take(limit + 1)
        .read_to_end(&mut data)
        .map_err(|e| anyhow::anyhow!("{what}: cannot read {p}: {e}"))?;
    if data.len() as u64 > limit {
        bail!(
            "{what}: {p} grew over {} while it was read",
            bytes_words(limit)
        );
    }
    String::from_utf8(data).map_err(|e| {
        anyhow::anyhow!(
            "{what}: {p} is not UTF-8 text (byte {})",
            e.utf8_error().valid_up_to()
        )
    })
}

/// Refuses a standard input that cannot be read as a stream of lines: a directory, or a
/// regular file over [`INPUT_LIMIT`]. Pipes, terminals and devices are streamed (each line
/// bounded by [`read_line`]).
pub fn check_stdin(what: &str) -> Result<()> {
    use std::os::fd::AsFd;
    // A duplicate of descriptor 0 as a File, for its fstat; dropping it closes the copy.
    let Ok(fd) = std::io::stdin().as_fd().try_clone_to_owned() else {
        return Ok(()); // no standard input: reading it reports the error
    };
    let Ok(meta) = File::from(fd).metadata() else {
        return Ok(());
    };
    if meta.is_dir() {
        bail!("{what}: standard input is a directory, not a file or a stream");
    }
    if meta.is_file() && meta.len() > INPUT_LIMIT {
        bail!(
            "{what}: standard input is a file of {} bytes; at most {} are read",
            meta.len(),
            bytes_words(INPUT_LIMIT)
        );
    }
    Ok(())
}

/// Reads one line (without its "\n" or "\r\n") into `line`, at most [`LINE_LIMIT`] bytes.
/// `Ok(false)` at the end of input; an error (without a line number: the caller adds it)
/// for a longer line or one that is not UTF-8.
pub fn read_line(input: &mut impl BufRead, line: &mut String) -> Result<bool> {
    read_line_limit(input, line, LINE_LIMIT)
}

fn read_line_limit(input: &mut impl BufRead, line: &mut String, limit: usize) -> Result<bool> {
    line.clear();
    let mut buf = Vec::new();
    let n = input
        .take(limit as u64 + 1)
        .read_until(b'\n', &mut buf)
        .map_err(|e| anyhow::anyhow!("read error: {e}"))?;
    if n == 0 {
        return Ok(false);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
    } else if n > limit {
        bail!("longer than {limit} bytes");
    }
    match String::from_utf8(buf) {
        Ok(s) => *line = s,
        Err(e) => bail!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
    }
    Ok(true)
}

/// `s` quoted as `{:?}` would, but cut after [`ECHO_LIMIT`] characters, with its length:
/// `"xxxx..." (1000000 characters)`. Only the kept part is formatted, so a huge value
/// costs nothing.
pub fn clip(s: &str) -> String {
    match s.char_indices().nth(ECHO_LIMIT) {
        None => format!("{s:?}"),
        Some((at, _)) => {
            let quoted = format!("{:?}", &s[..at]);
            let open = quoted.strip_suffix('"').unwrap_or(&quoted);
            format!("{open}...\" ({} characters)", s.chars().count())
        }
    }
}

/// `s` as it is (no quotes), cut like [`clip`]: `xxxx... (1000000 characters)`.
pub fn clip_plain(s: &str) -> String {
    match s.char_indices().nth(ECHO_LIMIT) {
        None => s.to_string(),
        Some((at, _)) => format!("{}... ({} characters)", &s[..at], s.chars().count()),
    }
}

/// A message from a parser (TOML, serde) with every echoed value cut: each run of text
/// between backticks or double quotes (a `{:?}` string, backslash escapes honoured) longer
/// than [`ECHO_LIMIT`] characters keeps its start and says how long it was; an unclosed
/// one runs to the end. A message with no long value comes back unchanged.
pub fn clip_echoes(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len().min(4 * ECHO_LIMIT));
    let mut rest = msg;
    while let Some(open) = rest.find(['`', '"']) {
        let delim = rest.as_bytes()[open] as char; // ASCII
        out.push_str(&rest[..=open]);
        let body = &rest[open + 1..];
        // The closing delimiter; inside "...", a backslash escapes the next character.
        let mut close = None;
        let mut escaped = false;
        for (i, c) in body.char_indices() {
            if escaped {
                escaped = false;
            } else if c == '\\' && delim == '"' {
                escaped = true;
            } else if c == delim {
                close = Some(i);
                break;
            }
        }
        let inner = &body[..close.unwrap_or(body.len())];
        let cut = inner.char_indices().nth(ECHO_LIMIT).map(|(at, _)| at);
        out.push_str(&inner[..cut.unwrap_or(inner.len())]);
        if cut.is_some() {
            out.push_str("...");
        }
        if close.is_some() {
            out.push(delim);
        }
        if cut.is_some() {
            out.push_str(&format!(" ({} characters)", inner.chars().count()));
        }
        rest = close.map_or("", |i| &body[i + 1..]);
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_keeps_short_values_and_cuts_long_ones_on_characters() {
        assert_eq!(clip("20µbit"), "\"20µbit\"");
        assert_eq!(clip_plain("é€"), "é€");
        let long = "µ".repeat(1000);
        let c = clip(&long);
        assert_eq!(
            c,
            format!("\"{}...\" (1000 characters)", "µ".repeat(ECHO_LIMIT))
        );
        assert_eq!(
            clip_plain(&"😀".repeat(200)),
            format!("{}... (200 characters)", "😀".repeat(ECHO_LIMIT))
        );
        // Exactly the limit: not cut.
        assert_eq!(clip(&"a".repeat(ECHO_LIMIT)).len(), ECHO_LIMIT + 2);
    }

    #[test]
    fn clip_echoes_cuts_quoted_runs_only() {
        let short = "unknown field `bogus`, expected `a` or \"b\"";
        assert_eq!(clip_echoes(short), short);
        let long = "é".repeat(500);
        assert_eq!(
            clip_echoes(&format!("invalid type: string \"{long}\", expected u64")),
            format!(
                "invalid type: string \"{}...\" (500 characters), expected u64",
                "é".repeat(ECHO_LIMIT)
            )
        );
        assert_eq!(
            clip_echoes(&format!("unknown field `{long}`, expected `x`")),
            format!(
                "unknown field `{}...` (500 characters), expected `x`",
                "é".repeat(ECHO_LIMIT)
            )
        );
        // Escaped quotes stay inside; an unclosed run goes to the end.
        let esc = format!("got \"a\\\"{}\" ok", "b".repeat(300));
        assert!(
            clip_echoes(&esc).ends_with("...\" (303 characters) ok"),
            "{}",
            clip_echoes(&esc)
        );
        assert_eq!(
            clip_echoes(&format!("x `{}", "c".repeat(300))),
            format!("x `{}... (300 characters)", "c".repeat(ECHO_LIMIT))
        );
        assert_eq!(clip_echoes("a \" b"), "a \" b");
        assert_eq!(clip_echoes("`"), "`");
    }

    #[test]
    fn files_over_the_limit_are_refused_before_reading() {
        let p = std::env::temp_dir().join(format!("dcemu-input-{}", std::process::id()));
        std::fs::write(&p, "12345").unwrap();
        let e = read_input_within(&p, "x", 4).unwrap_err().to_string();
        assert_eq!(
            e,
            format!("x: {} is 5 bytes; at most 4 bytes are read", p.display())
        );
        assert_eq!(read_input_within(&p, "x", 5).unwrap(), "12345");
        std::fs::remove_file(&p).unwrap();
        assert_eq!(bytes_words(INPUT_LIMIT), "67108864 bytes (64 MiB)");
    }

    #[test]
    fn lines_are_bounded() {
        let mut line = String::new();
        let mut input: &[u8] = b"ab\r\ncd\n\nxyz";
        let mut got = vec![];
        while read_line_limit(&mut input, &mut line, 8).unwrap() {
            got.push(line.clone());
        }
        assert_eq!(got, ["ab", "cd", "", "xyz"]);
        let mut input: &[u8] = b"12345678\n123456789\n";
        assert!(read_line_limit(&mut input, &mut line, 8).unwrap());
        assert_eq!(line, "12345678");
        let e = read_line_limit(&mut input, &mut line, 8).unwrap_err();
        assert_eq!(e.to_string(), "longer than 8 bytes");
        let mut input: &[u8] = b"a\xffb\n";
        let e = read_line_limit(&mut input, &mut line, 8).unwrap_err();
        assert_eq!(e.to_string(), "not UTF-8 text (byte 1)");
    }
}
