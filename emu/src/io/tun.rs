//! L3 TUN devices (IFF_TUN | IFF_NO_PI, non-blocking) living in a named network namespace.
//!
//! The device is created in dcemu's (root) namespace through `/dev/net/tun`, then moved
//! into the endpoint's namespace with `ip link set dev NAME netns NS`. The fd keeps
//! working after the move: packets the endpoint routes into the device are read from the
//! fd, packets written to the fd are received by the endpoint's stack.
//!
//! Configuration done with `ip` (iproute2):
//! - `txqueuelen 10000` (kernel default for TUN: 500). The TUN "tx queue" is the ring of
//!   packets the endpoint's kernel has routed into the device and dcemu has not read yet.
//!   When it is full the kernel silently drops (counted as tx_dropped) — losses dcemu never
//!   sees and did not model. On this 2-core machine dcemu can be descheduled for a few ms
//!   while an endpoint bursts (TCP slow start, UDP blasts of ~1-10k pkt/s), so a deep ring
//!   makes the emulator's model the only source of loss. It adds no delay as long as dcemu
//!   keeps up (it drains the ring every wake-up).
//! - `addrgenmode none` (best effort): no IPv6 link-local address, so the endpoint does not
//!   emit router solicitations / MLD reports into the emulated link.
//! - MTU, up, `LOCAL/32 peer PEER/32`, and optional extra routes via the device.
//!
//! Offloads ([`Offload`]): with `read`, the device offers checksum, TSO and USO offload, so
//! the endpoint's stack hands over TCP/UDP super-packets of up to 64 kB (one read instead
//! of up to 45) that dcemu splits (`vnet.rs`); with `write`, dcemu may hand a run of one
//! flow's segments to the stack in one write, as a NIC's GRO does. Either one puts a
//! virtio-net header before every packet read and written (IFF_VNET_HDR).

use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{anyhow, bail, Context};

/// Linux IFNAMSIZ - 1.
pub const MAX_IFNAME_LEN: usize = 15;
/// Ring depth requested for the TUN device (see module docs).
pub const TUN_TXQUEUELEN: u32 = 10_000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TunConfig {
    /// Interface name (<= 15 bytes).
    pub name: String,
    /// Existing named network namespace (`/run/netns/NAME`).
    pub netns: String,
    pub mtu: u32,
    /// Address of the endpoint on this device.
    pub local: Ipv4Addr,
    /// Point-to-point peer address (the "other side" as seen by the endpoint).
    pub peer: Ipv4Addr,
    /// Extra prefixes routed into the device, e.g. "198.18.5.0/24".
    pub routes: Vec<String>,
    /// More addresses of the endpoint on this device (one per path of a multipath
    /// transport), each reaching the peer through the device.
    pub extra_local: Vec<Ipv4Addr>,
    pub offload: Offload,
}

/// Which TUN offloads to use (see the module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Offload {
    /// Read super-packets (TSO, and USO where the kernel has it) and split them.
    pub read: bool,
    /// Write runs of one flow as one super-packet.
    pub write: bool,
}

impl Offload {
    pub const ALL: Offload = Offload {
        read: true,
        write: true,
    };

    fn vnet_hdr(&self) -> bool {
        self.read || self.write
    }
}

// From include/uapi/linux/if_tun.h.
const IFF_VNET_HDR: libc::c_int = 0x4000;
const TUNSETOFFLOAD: libc::c_ulong = 0x4004_54d0;
const TUN_F_CSUM: libc::c_uint = 0x01;
const TUN_F_TSO4: libc::c_uint = 0x02;
const TUN_F_TSO6: libc::c_uint = 0x04;
const TUN_F_USO4: libc::c_uint = 0x20;
const TUN_F_USO6: libc::c_uint = 0x40;

/// An open TUN device. Dropping it closes the fd (which destroys the non-persistent
/// device) and then runs `ip -n NS link del NAME`, ignoring errors.
#[derive(Debug)]
pub struct Tun {
    fd: Option<OwnedFd>,
    name: String,
    netns: String,
    /// Every read and write carries a virtio-net header.
    vnet: bool,
    /// Offloads the kernel accepted, e.g. "csum tso4 tso6 uso4 uso6" (empty: none).
    offloads: String,
}

/// `struct ifreq` as used by TUNSETIFF: name + flags, padded to the kernel's 40 bytes.
#[repr(C)]
struct IfReqFlags {
    name: [u8; 16],
    flags: libc::c_short,
    _pad: [u8; 22],
}

const MSG_NOT_ROOT: &str = "dcemu must run as root (CAP_NET_ADMIN) to create TUN devices";

fn has_caps_for_tun() -> bool {
    // CapEff bit 12 = CAP_NET_ADMIN, bit 21 = CAP_SYS_ADMIN (setns for `ip -n`).
    if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
        if let Some(hex) = status.lines().find_map(|l| l.strip_prefix("CapEff:")) {
            if let Ok(caps) = u64::from_str_radix(hex.trim(), 16) {
                return caps & (1 << 12) != 0 && caps & (1 << 21) != 0;
            }
        }
    }
    // SAFETY: trivial getter.
    unsafe { libc::geteuid() == 0 }
}

/// Checks that TUN devices can be created here: privileges and `/dev/net/tun`.
pub fn preflight() -> anyhow::Result<()> {
    if !has_caps_for_tun() {
        bail!(MSG_NOT_ROOT);
    }
    if !Path::new("/dev/net/tun").exists() {
        bail!(
            "/dev/net/tun does not exist: the kernel needs TUN support (CONFIG_TUN; try \
             `modprobe tun`), or create the node with `mkdir -p /dev/net && mknod /dev/net/tun c 10 200`"
        );
    }
    Ok(())
}

fn validate_name(what: &str, name: &str, max: usize) -> anyhow::Result<()> {
    if name.is_empty() || name.len() > max {
        bail!("{what} '{name}' must be 1 to {max} bytes long");
    }
    if name == "."
        || name == ".."
        || name
            .bytes()
            .any(|b| b == b'/' || b == b':' || b.is_ascii_whitespace() || !b.is_ascii_graphic())
    {
        bail!("{what} '{name}' contains characters not allowed in an interface/namespace name");
    }
    Ok(())
}

/// Runs `ip ARGS`; on failure the error includes the command and ip's stderr.
fn ip(args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| anyhow!("failed to run `ip` (is iproute2 installed and in PATH?): {e}"))?;
    if !out.status.success() {
        bail!(
            "`ip {}` failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Whether `ip [-n NS] link show dev NAME` succeeds.
fn link_exists(netns: Option<&str>, name: &str) -> bool {
    let mut cmd = Command::new("ip");
    if let Some(ns) = netns {
        cmd.args(["-n", ns]);
    }
    cmd.args(["-o", "link", "show", "dev", name])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

impl Tun {
    pub fn create(cfg: &TunConfig) -> anyhow::Result<Tun> {
        preflight()?;
        validate_name("interface name", &cfg.name, MAX_IFNAME_LEN)?;
        validate_name("network namespace", &cfg.netns, 255)?;
        if !(68..=65535).contains(&cfg.mtu) {
            bail!(
                "MTU {} for '{}' is out of range (68..=65535)",
                cfg.mtu,
                cfg.name
            );
        }
        if !Path::new("/run/netns").join(&cfg.netns).exists() {
            bail!(
                "network namespace '{0}' does not exist; create it with `ip netns add {0}`",
                cfg.netns
            );
        }
        if link_exists(None, &cfg.name) {
            bail!(
                "a network device named '{}' already exists (in dcemu's namespace)",
                cfg.name
            );
        }
        if link_exists(Some(&cfg.netns), &cfg.name) {
            bail!(
                "a network device named '{}' already exists in namespace '{}'",
                cfg.name,
                cfg.netns
            );
        }

        // SAFETY: open(2) with a static C string; result checked.
        let raw = unsafe {
            libc::open(
                c"/dev/net/tun".as_ptr(),
                libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        if raw < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EPERM) || e.raw_os_error() == Some(libc::EACCES) {
                return Err(anyhow!(MSG_NOT_ROOT)).context(e);
            }
            return Err(e).context("cannot open /dev/net/tun");
        }
        // SAFETY: fresh fd we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };

        let mut req = IfReqFlags {
            name: [0; 16],
            flags: (libc::IFF_TUN
                | libc::IFF_NO_PI
                | if cfg.offload.vnet_hdr() {
                    IFF_VNET_HDR
                } else {
                    0
                }) as libc::c_short,
            _pad: [0; 22],
        };
        req.name[..cfg.name.len()].copy_from_slice(cfg.name.as_bytes());
        // SAFETY: TUNSETIFF reads/writes a struct ifreq (40 bytes), which IfReqFlags is.
        let rc = unsafe {
            libc::ioctl(
                fd.as_raw_fd(),
                libc::TUNSETIFF as _,
                &mut req as *mut IfReqFlags,
            )
        };
        if rc < 0 {
            let e = io::Error::last_os_error();
            return Err(match e.raw_os_error() {
                Some(libc::EPERM) => anyhow!(MSG_NOT_ROOT).context(e),
                Some(libc::EBUSY) | Some(libc::EEXIST) | Some(libc::EINVAL) => {
                    anyhow!(
                        "cannot create TUN '{}': a device of that name already exists ({e})",
                        cfg.name
                    )
                }
                _ => anyhow!("ioctl(TUNSETIFF, '{}') failed: {e}", cfg.name),
            });
        }
        let got = req
            .name
            .iter()
            .position(|&b| b == 0)
            .map_or(&req.name[..], |n| &req.name[..n]);
        if got != cfg.name.as_bytes() {
            bail!(
                "kernel named the TUN '{}' instead of '{}'",
                String::from_utf8_lossy(got),
                cfg.name
            );
        }

        let offloads = if cfg.offload.read {
            set_offload(&fd)
                .with_context(|| format!("TUNSETOFFLOAD on '{}'", cfg.name))?
                .to_string()
        } else {
            String::new()
        };
        // From here on, Drop cleans up whatever state we reach.
        let tun = Tun {
            fd: Some(fd),
            name: cfg.name.clone(),
            netns: cfg.netns.clone(),
            vnet: cfg.offload.vnet_hdr(),
            offloads,
        };
        tun.configure(cfg).with_context(|| {
            format!("setting up TUN '{}' in namespace '{}'", cfg.name, cfg.netns)
        })?;
        Ok(tun)
    }

    fn configure(&self, cfg: &TunConfig) -> anyhow::Result<()> {
        let name = cfg.name.as_str();
        let ns = cfg.netns.as_str();
        let qlen = TUN_TXQUEUELEN.to_string();
        let mtu = cfg.mtu.to_string();
        ip(&["link", "set", "dev", name, "txqueuelen", &qlen])?;
        ip(&["link", "set", "dev", name, "netns", ns])?;
        // Best effort: fails harmlessly when IPv6 is disabled in the kernel.
        let _ = ip(&["-n", ns, "link", "set", "dev", name, "addrgenmode", "none"]);
        ip(&["-n", ns, "link", "set", "dev", name, "mtu", &mtu, "up"])?;
        let local = format!("{}/32", cfg.local);
        let peer = format!("{}/32", cfg.peer);
        ip(&["-n", ns, "addr", "add", &local, "peer", &peer, "dev", name])?;
        for a in &cfg.extra_local {
            ip(&["-n", ns, "addr", "add", &format!("{a}/32"), "dev", name])?;
        }
        for r in &cfg.routes {
            ip(&["-n", ns, "route", "add", r, "dev", name])?;
        }
        Ok(())
    }

    pub fn fd(&self) -> RawFd {
        self.fd.as_ref().expect("fd present until drop").as_raw_fd()
    }

    /// Reads one packet (a bare IPv4/IPv6 datagram). `WouldBlock` when none is queued.
    /// A buffer shorter than the packet truncates it, so use >= MTU bytes.
    pub fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: buf is valid for buf.len() bytes.
        let n = unsafe { libc::read(self.fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n as usize)
    }

    /// Whether reads and writes carry a virtio-net header (`vnet.rs`).
    pub fn has_vnet_hdr(&self) -> bool {
        self.vnet
    }

    /// The offloads the kernel accepted for reading, e.g. "csum tso4 tso6 uso4 uso6".
    pub fn offloads(&self) -> &str {
        &self.offloads
    }

    /// Injects one packet (a bare IP datagram; with a virtio-net header first when
    /// [`Self::has_vnet_hdr`]) into the namespace's stack.
    pub fn write(&self, pkt: &[u8]) -> io::Result<usize> {
        // SAFETY: pkt is valid for pkt.len() bytes.
        let n = unsafe { libc::write(self.fd(), pkt.as_ptr().cast(), pkt.len()) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n as usize)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn netns(&self) -> &str {
        &self.netns
    }

    /// Packets the kernel dropped on their way into dcemu (the device's transmit queue
    /// overflowed because dcemu did not read fast enough). Asks `ip`, so not for the hot
    /// path; None if that fails.
    pub fn kernel_tx_dropped(&self) -> Option<u64> {
        let out = Command::new("ip")
            .args([
                "-s",
                "-j",
                "-n",
                &self.netns,
                "link",
                "show",
                "dev",
                &self.name,
            ])
            .output()
            .ok()?;
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        v.get(0)?
            .get("stats64")?
            .get("tx")?
            .get("dropped")?
            .as_u64()
    }
}

/// Offers checksum, TSO and USO offload (USO only since Linux 6.2: without it, TSO alone).
fn set_offload(fd: &OwnedFd) -> anyhow::Result<&'static str> {
    let tso = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6;
    for (flags, names) in [
        (tso | TUN_F_USO4 | TUN_F_USO6, "csum tso4 tso6 uso4 uso6"),
        (tso, "csum tso4 tso6"),
    ] {
        // SAFETY: TUNSETOFFLOAD takes an unsigned int by value.
        if unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETOFFLOAD as _, flags) } == 0 {
            return Ok(names);
        }
    }
    Err(io::Error::last_os_error().into())
}

impl AsRawFd for Tun {
    fn as_raw_fd(&self) -> RawFd {
        self.fd()
    }
}

impl Drop for Tun {
    fn drop(&mut self) {
        drop(self.fd.take());
        let _ = Command::new("ip")
            .args(["-n", &self.netns, "link", "del", &self.name])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{Clock, Waiter};
    use std::io::{BufRead, BufReader, Read};
    use std::time::{Duration, Instant};

    fn is_root() -> bool {
        has_caps_for_tun()
    }

    /// Fails a root-only test (they are `#[ignore]`d; `make test` runs them as root with
    /// `--include-ignored`) when run without root: a test that did nothing must not pass.
    fn require_root() {
        assert!(
            is_root(),
            "needs root (network namespaces and TUN devices): run as root, or without \
             --include-ignored"
        );
    }

    /// Under CI (`CI=true`) the root-only tests below must run, not be ignored: a CI job
    /// without root must not pass having skipped them.
    #[test]
    fn root_tests_run_in_ci() {
        if !matches!(std::env::var("CI").as_deref(), Ok("true" | "1")) {
            return;
        }
        let included = std::env::args().any(|a| a == "--include-ignored");
        assert!(
            is_root() && included,
            "CI is set, but the tests that need root (network namespaces and TUN devices) \
             would not run (root: {}, --include-ignored: {included}): run them as root with \
             `-- --include-ignored`, as `make test` does",
            is_root()
        );
    }

    /// Creates the namespaces and deletes them on drop (also on panic).
    struct NsGuard(Vec<String>);
    impl NsGuard {
        fn new(names: &[&str]) -> NsGuard {
            let mut g = NsGuard(Vec::new());
            for n in names {
                assert!(n.starts_with("dcemu-test-"));
                g.0.push(n.to_string());
                ip(&["netns", "add", n]).unwrap();
            }
            g
        }
    }
    impl Drop for NsGuard {
        fn drop(&mut self) {
            for n in &self.0 {
                let _ = ip(&["netns", "del", n]);
            }
        }
    }

    /// The Internet checksum of `data` (0 over a header whose checksum is right).
    fn checksum(data: &[u8]) -> u16 {
        !crate::io::vnet::fold(crate::io::vnet::sum(data, 0))
    }

    /// IPv4/UDP datagram with a valid header checksum and UDP checksum 0 (none).
    fn ipv4_udp(src: Ipv4Addr, dst: Ipv4Addr, sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
        let total = 20 + 8 + payload.len();
        let mut p = vec![0u8; total];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        p[4..6].copy_from_slice(&0x1234u16.to_be_bytes());
        p[6] = 0x40; // DF
        p[8] = 64;
        p[9] = 17;
        p[12..16].copy_from_slice(&src.octets());
        p[16..20].copy_from_slice(&dst.octets());
        let c = checksum(&p[..20]);
        p[10..12].copy_from_slice(&c.to_be_bytes());
        p[20..22].copy_from_slice(&sport.to_be_bytes());
        p[22..24].copy_from_slice(&dport.to_be_bytes());
        p[24..26].copy_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        p[28..].copy_from_slice(payload);
        p
    }

    fn python() -> &'static str {
        if Path::new("/usr/bin/python3").exists() {
            "/usr/bin/python3"
        } else {
            "python3"
        }
    }

    /// Waits (bounded) for a child; kills it on timeout.
    fn wait_child(mut c: std::process::Child, limit: Duration) -> (bool, String) {
        let t0 = Instant::now();
        loop {
            if let Some(st) = c.try_wait().unwrap() {
                let mut out = String::new();
                if let Some(mut o) = c.stdout.take() {
                    let _ = o.read_to_string(&mut out);
                }
                return (st.success(), out);
            }
            if t0.elapsed() > limit {
                let _ = c.kill();
                let _ = c.wait();
                return (false, String::from("timeout"));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Reads IPv4 packets from the TUN (bounded by `limit`) until `pred` matches one.
    fn read_until(tun: &Tun, limit: Duration, pred: impl Fn(&[u8]) -> bool) -> Option<Vec<u8>> {
        let mut w = Waiter::new(0).unwrap();
        w.add_fd(tun.fd(), 1).unwrap();
        let clock = Clock::new();
        let end = clock.now() + limit.as_nanos() as u64;
        let mut ready = Vec::new();
        let mut buf = vec![0u8; 65536];
        while clock.now() < end {
            w.wait(&clock, Some(end), &mut ready).unwrap();
            for _ in 0..64 {
                match tun.read(&mut buf) {
                    Ok(n) if pred(&buf[..n]) => return Some(buf[..n].to_vec()),
                    Ok(_) => continue, // unrelated packet (e.g. IPv6), skip
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => panic!("tun read: {e}"),
                }
            }
        }
        None
    }

    fn udp_to(pkt: &[u8], src: Ipv4Addr, dst: Ipv4Addr, dport: u16) -> bool {
        pkt.len() >= 28
            && pkt[0] >> 4 == 4
            && pkt[9] == 17
            && pkt[12..16] == src.octets()
            && pkt[16..20] == dst.octets()
            && u16::from_be_bytes([pkt[22], pkt[23]]) == dport
    }

    #[test]
    #[ignore = "needs root: network namespaces and TUN devices"]
    fn tun_roundtrip_between_namespaces() {
        require_root();
        let pid = std::process::id();
        let ns_a = format!("dcemu-test-a-{pid}");
        let ns_b = format!("dcemu-test-b-{pid}");
        let _guard = NsGuard::new(&[&ns_a, &ns_b]);
        let (a_local, a_peer) = (Ipv4Addr::new(198, 18, 0, 1), Ipv4Addr::new(198, 18, 0, 2));
        let (b_local, b_peer) = (Ipv4Addr::new(198, 18, 1, 1), Ipv4Addr::new(198, 18, 1, 2));
        let cfg_a = TunConfig {
            name: format!("dcemu-ta{}", pid % 10_000_000),
            netns: ns_a.clone(),
            mtu: 1400,
            local: a_local,
            peer: a_peer,
            routes: vec!["198.18.2.0/24".into()],
            extra_local: vec![],
            offload: Offload::default(),
        };
        let cfg_b = TunConfig {
            name: format!("dcemu-tb{}", pid % 10_000_000),
            netns: ns_b.clone(),
            mtu: 1500,
            local: b_local,
            peer: b_peer,
            routes: vec![],
            extra_local: vec![],
            offload: Offload::default(),
        };
        let ta = Tun::create(&cfg_a).unwrap();
        let tb = Tun::create(&cfg_b).unwrap();
        assert_eq!(ta.name(), cfg_a.name);
        assert_eq!(ta.netns(), ns_a);

        // Same name again in the same namespace: clear error, and ta is untouched.
        let dup = Tun::create(&cfg_a).unwrap_err();
        assert!(format!("{dup:#}").contains("already exists"), "{dup:#}");

        // Configuration is visible in the namespace.
        let show = Command::new("ip")
            .args(["-n", &ns_a, "-o", "link", "show", "dev", &cfg_a.name])
            .output()
            .unwrap();
        let show = String::from_utf8_lossy(&show.stdout).to_string();
        assert!(
            show.contains("mtu 1400") && show.contains("qlen 10000") && show.contains(",UP"),
            "{show}"
        );
        let routes = Command::new("ip")
            .args(["-n", &ns_a, "route", "show"])
            .output()
            .unwrap();
        let routes = String::from_utf8_lossy(&routes.stdout).to_string();
        assert!(
            routes.contains(&format!("198.18.2.0/24 dev {}", cfg_a.name)),
            "{routes}"
        );

        // a -> TUN: UDP datagrams to the peer and to the extra route.
        let send = format!(
            "import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); \
             s.sendto(b'hello-dcemu', ('{a_peer}', 5000)); s.sendto(b'via-route', ('198.18.2.7', 5002))"
        );
        let child = Command::new("ip")
            .args(["netns", "exec", &ns_a, python(), "-c", &send])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let (ok, out) = wait_child(child, Duration::from_secs(10));
        assert!(ok, "sender failed: {out}");
        let pkt = read_until(&ta, Duration::from_secs(3), |p| {
            udp_to(p, a_local, a_peer, 5000)
        })
        .expect("datagram read from TUN a");
        assert_eq!(&pkt[28..], b"hello-dcemu");
        assert_eq!(checksum(&pkt[..20]), 0, "kernel header checksum verifies");
        let routed = Ipv4Addr::new(198, 18, 2, 7);
        let pkt2 = read_until(&ta, Duration::from_secs(3), |p| {
            udp_to(p, a_local, routed, 5002)
        })
        .expect("routed datagram");
        assert_eq!(&pkt2[28..], b"via-route");

        // TUN -> b: a crafted datagram from b's peer is delivered to a socket in b.
        let recv = format!(
            "import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('{b_local}', 5001)); \
             s.settimeout(5); print('ready', flush=True); d, a = s.recvfrom(2048); print(d.decode(), a[0], a[1], flush=True)"
        );
        let mut child = Command::new("ip")
            .args(["netns", "exec", &ns_b, python(), "-c", &recv])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap(); // python exits within 5 s in any case
        assert_eq!(line.trim(), "ready");
        let reply = ipv4_udp(b_peer, b_local, 4000, 5001, b"reply-dcemu");
        assert_eq!(tb.write(&reply).unwrap(), reply.len());
        let mut rest = String::new();
        let reader = std::thread::spawn(move || {
            let _ = stdout.read_to_string(&mut rest);
            rest
        });
        let (ok, _) = wait_child(child, Duration::from_secs(10));
        let got = reader.join().unwrap();
        assert!(ok, "receiver failed: {got}");
        assert_eq!(got.trim(), format!("reply-dcemu {b_peer} 4000"));

        // Dropping the Tun removes the devices.
        let (na, nb) = (cfg_a.name.clone(), cfg_b.name.clone());
        drop(ta);
        drop(tb);
        let t0 = Instant::now();
        while (link_exists(Some(&ns_a), &na) || link_exists(Some(&ns_b), &nb))
            && t0.elapsed() < Duration::from_secs(3)
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            !link_exists(Some(&ns_a), &na),
            "{na} still exists in {ns_a}"
        );
        assert!(
            !link_exists(Some(&ns_b), &nb),
            "{nb} still exists in {ns_b}"
        );
        assert!(
            !link_exists(None, &na) && !link_exists(None, &nb),
            "device came back to the root namespace"
        );
    }

    /// A device in a namespace that does not exist.
    fn missing_namespace_config() -> TunConfig {
        let pid = std::process::id();
        TunConfig {
            name: format!("dcemu-tx{}", pid % 10_000_000),
            netns: format!("dcemu-test-missing-{pid}"),
            mtu: 1500,
            local: Ipv4Addr::new(198, 18, 3, 1),
            peer: Ipv4Addr::new(198, 18, 3, 2),
            routes: vec![],
            extra_local: vec![],
            offload: Offload::default(),
        }
    }

    #[test]
    #[ignore = "needs root: network namespaces and TUN devices"]
    fn clear_errors() {
        require_root();
        let pid = std::process::id();
        let cfg = missing_namespace_config();
        let err = format!("{:#}", Tun::create(&cfg).unwrap_err());
        assert!(
            err.contains(&format!(
                "network namespace '{0}' does not exist; create it with `ip netns add {0}`",
                cfg.netns
            )),
            "{err}"
        );
        assert!(!link_exists(None, &cfg.name), "nothing created on error");

        let long = TunConfig {
            name: "dcemu-way-too-long-name".into(),
            ..cfg.clone()
        };
        let err = format!("{:#}", Tun::create(&long).unwrap_err());
        assert!(err.contains("1 to 15 bytes"), "{err}");

        let mtu = TunConfig {
            mtu: 10,
            ..cfg.clone()
        };
        assert!(format!("{:#}", Tun::create(&mtu).unwrap_err()).contains("MTU"));

        // `ip` failure surfaces its stderr.
        let err = format!(
            "{:#}",
            ip(&["link", "show", "dev", "dcemu-nonexistent"]).unwrap_err()
        );
        assert!(
            err.contains("`ip link show dev dcemu-nonexistent` failed")
                && err.contains("does not exist"),
            "{err}"
        );

        // A bad route fails setup after creation; the device must be cleaned up.
        let ns = format!("dcemu-test-c-{pid}");
        let _g = NsGuard::new(&[&ns]);
        let bad = TunConfig {
            netns: ns.clone(),
            routes: vec!["not-a-prefix".into()],
            extra_local: vec![],
            ..cfg.clone()
        };
        let err = format!("{:#}", Tun::create(&bad).unwrap_err());
        assert!(
            err.contains("route add not-a-prefix")
                && err.contains(&format!("setting up TUN '{}'", cfg.name)),
            "{err}"
        );
        assert!(!link_exists(Some(&ns), &cfg.name) && !link_exists(None, &cfg.name));
    }

    /// Checks something either way: as root preflight passes; without root it and
    /// `Tun::create` refuse, saying that root is needed.
    #[test]
    fn preflight_follows_privileges() {
        if is_root() {
            preflight().unwrap();
            return;
        }
        assert_eq!(preflight().unwrap_err().to_string(), MSG_NOT_ROOT);
        let err = format!(
            "{:#}",
            Tun::create(&missing_namespace_config()).unwrap_err()
        );
        assert!(err.contains(MSG_NOT_ROOT), "{err}");
    }
}
