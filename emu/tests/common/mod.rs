//! Helpers for tests in real network namespaces: namespaces that remove themselves, a
//! dcemu process started on a scenario, and threads that run inside a namespace.
#![allow(dead_code)]

use std::fs::File;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Tests that measure time or rates run one at a time (2-core machine).
pub static SERIAL: Mutex<()> = Mutex::new(());

static COUNTER: AtomicU32 = AtomicU32::new(0);

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Fails a root-only test (they are `#[ignore]`d; `make test` runs them as root with
/// `--include-ignored`) when run without root: a test that did nothing must not pass.
pub fn require_root() {
    assert!(
        is_root(),
        "needs root (network namespaces and TUN devices): run as root, or without \
         --include-ignored"
    );
}

/// Under CI (`CI=true`), fails unless the ignored root-only tests of this binary run too,
/// so that a CI job without root cannot pass having skipped them.
pub fn fail_in_ci_unless_root_tests_run() {
    if !matches!(std::env::var("CI").as_deref(), Ok("true" | "1")) {
        return;
    }
    let included = std::env::args().any(|a| a == "--include-ignored");
    assert!(
        is_root() && included,
        "CI is set, but the tests that need root (network namespaces and TUN devices) would \
         not run (root: {}, --include-ignored: {included}): run them as root with \
         `-- --include-ignored`, as `make test` does",
        is_root()
    );
}

fn ip(args: &[&str]) -> std::process::Output {
    Command::new("ip")
        .args(args)
        .output()
        .expect("ip (iproute2) must be installed")
}

/// A network namespace named `dcemu-test-...`, deleted on drop.
pub struct Netns {
    pub name: String,
}

impl Netns {
    pub fn new(role: &str) -> Netns {
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let name = format!("dcemu-test-{role}-{}-{n}", std::process::id());
        let out = ip(&["netns", "add", &name]);
        assert!(
            out.status.success(),
            "ip netns add {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        ip(&["-n", &name, "link", "set", "lo", "up"]);
        Netns { name }
    }

    /// Runs `f` on a new thread that has entered this namespace (sockets it opens live
    /// there).
    pub fn spawn<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> std::thread::JoinHandle<T> {
        let path = format!("/run/netns/{}", self.name);
        std::thread::spawn(move || {
            let fd = File::open(&path).expect("namespace file");
            nix::sched::setns(fd.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET).expect("setns");
            f()
        })
    }

    pub fn links(&self) -> String {
        String::from_utf8_lossy(&ip(&["-n", &self.name, "-o", "link", "show"]).stdout).into_owned()
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        ip(&["netns", "del", &self.name]);
    }
}

/// Short unique TUN names (15 chars at most, unique in the root namespace).
pub fn tun_names() -> (String, String) {
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    let tag = format!("{}{}", std::process::id() % 100_000, n);
    (format!("dct{tag}s"), format!("dct{tag}c"))
}

pub struct Emu {
    pub child: Child,
    pub dir: PathBuf,
    pub stats: PathBuf,
    pub server_tun: String,
    pub client_tun: String,
}

/// The topology section for two test namespaces.
pub fn topology(server: &Netns, client: &Netns, tuns: &(String, String)) -> String {
    format!(
        "[topology]\nserver_netns = \"{}\"\nclient_netns = \"{}\"\nserver_tun = \"{}\"\nclient_tun = \"{}\"\n",
        server.name, client.name, tuns.0, tuns.1
    )
}

impl Emu {
    /// Starts dcemu on `scenario` (without a [topology] section: it is added here) and
    /// waits until it forwards.
    pub fn start(server: &Netns, client: &Netns, scenario: &str, extra: &[&str]) -> Emu {
        let tuns = tun_names();
        let dir =
            std::env::temp_dir().join(format!("dcemu-test-{}-{}", std::process::id(), tuns.0));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("scenario.toml");
        std::fs::write(
            &path,
            format!("{}\n{}", topology(server, client, &tuns), scenario),
        )
        .unwrap();
        let stats = dir.join("stats.jsonl");
        let ready = dir.join("ready");
        let child = Command::new(env!("CARGO_BIN_EXE_dcemu"))
            .arg("run")
            .arg(&path)
            .arg("--stats")
            .arg(&stats)
            .arg("--ready-file")
            .arg(&ready)
            .args(extra)
            .stderr(Stdio::piped())
            .spawn()
            .expect("start dcemu");
        let mut emu = Emu {
            child,
            dir,
            stats,
            server_tun: tuns.0,
            client_tun: tuns.1,
        };
        let t0 = Instant::now();
        while !ready.exists() {
            if let Some(st) = emu.child.try_wait().unwrap() {
                let mut err = String::new();
                use std::io::Read;
                emu.child
                    .stderr
                    .take()
                    .unwrap()
                    .read_to_string(&mut err)
                    .ok();
                panic!("dcemu exited early ({st}): {err}");
            }
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "dcemu not ready after 10 s"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        emu
    }

    /// SIGTERM, wait (bounded), and return the parsed stats lines.
    pub fn stop(mut self) -> Vec<serde_json::Value> {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::SIGTERM,
        )
        .ok();
        let t0 = Instant::now();
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                assert!(st.success(), "dcemu exit status {st}");
                break;
            }
            if t0.elapsed() > Duration::from_secs(10) {
                self.child.kill().ok();
                panic!("dcemu did not stop within 10 s of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.records()
    }

    pub fn records(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(&self.stats)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("stats line is JSON"))
            .collect()
    }
}

impl Drop for Emu {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.child.kill().ok();
            self.child.wait().ok();
        }
        std::fs::remove_dir_all(&self.dir).ok();
    }
}

pub const SERVER: &str = "198.18.0.1";
pub const CLIENT: &str = "198.18.0.2";
