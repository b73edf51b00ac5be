"""What a machine needs before it can hold a testbed: root, TUN, namespaces, the tools,
dcemu, every stack, the kernel's congestion controllers and free space for the results.
`dclab doctor` prints these checks; `dclab worker` refuses to join a cluster when one fails."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..endpoints import STACKS, get_stack
from ..paths import DCEMU, ROOT, results_dir
from .hostconfig import read_sysctl

RUST_MIN = (1, 82)  # emu/Cargo.toml's rust-version
GO_MOD = ROOT / "dclab" / "endpoints" / "quicgo" / "go" / "go.mod"  # its `go` line is the Go the build needs


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    fix: str  # how to fix it, when it fails
    optional: bool = False  # a run works without it (only some commands or tests need it)


def checks() -> list[Check]:
    """Every check, in the order `dclab doctor` prints them."""
    out = [
        Check("root", os.geteuid() == 0, "run as root (sudo dclab ...)"),
        Check("/dev/net/tun", Path("/dev/net/tun").exists(), "the kernel needs the TUN driver"),
        Check("ip (iproute2)", shutil.which("ip") is not None, "apt-get install iproute2"),
        Check("network namespaces", _namespaces_work(), "needs root and a kernel with network namespaces"),
        Check("iptables (MSS clamp)", shutil.which("iptables") is not None, "apt-get install iptables"),
        rust_toolchain(),
        go_toolchain(),
        Check("dcemu built", DCEMU.exists(), "make build"),
        disk_space(results_dir()),
    ]
    for name in STACKS:
        try:
            missing = get_stack(name).missing()
        except Exception as e:  # noqa: BLE001 - a broken stack is a failed check, not a crash
            missing = [str(e)]
        out.append(Check(f"stack {name}", not missing, "; ".join(missing)))
    try:
        avail = read_sysctl("net.ipv4.tcp_available_congestion_control").split()
        ok = all(c in avail for c in ("reno", "cubic", "bbr"))
        out.append(Check(f"TCP congestion control ({' '.join(avail)})", ok, "the kernel lacks reno, cubic or bbr"))
    except (RuntimeError, OSError) as e:  # OSError: no `sysctl` on PATH
        out.append(Check("TCP congestion control", False, str(e)))
    out.append(Check("tshark (reads captures with --keylog)", shutil.which("tshark") is not None,
                     "apt-get install tshark (only the inspection tests and your own analysis need it)", optional=True))
    return out


# Free space below which runs are refused by the check: a long EN-DC run's records and a
# campaign's store take tens of MB, a run with --pcap hundreds.
MIN_FREE = 1 << 30


def disk_space(path: Path) -> Check:
    """Free space where the results go (the nearest existing directory of ``path``): a full
    disk stores nothing (a store is never damaged by one, but the run is lost)."""
    where = path
    while not where.exists() and where != where.parent:
        where = where.parent
    try:
        free = shutil.disk_usage(where).free
    except OSError as e:
        return Check(f"free space ({path})", False, f"cannot read it: {e.strerror or e}")
    return Check(f"free space ({path}: {free / (1 << 30):.1f} GiB)", free >= MIN_FREE,
                 f"free at least {MIN_FREE >> 30} GiB there, or point DCLAB_RESULTS elsewhere")


def failed(found: list[Check] | None = None) -> list[Check]:
    """The checks that fail and that a run needs."""
    return [c for c in (checks() if found is None else found) if not c.ok and not c.optional]


def _version(text: str) -> tuple[int, int]:
    m = re.search(r"(\d+)\.(\d+)", text)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def go_toolchain() -> Check:
    """Whether a Go new enough for the quic-go stack's go.mod is on PATH (make build needs it)."""
    lines = GO_MOD.read_text().splitlines() if GO_MOD.exists() else []
    need = _version(next((line for line in lines if line.startswith("go ")), "go 1.0"))
    go = shutil.which("go") or next((p for p in ("/usr/local/go/bin/go", "/usr/lib/go/bin/go") if Path(p).exists()), None)
    fix = f"install Go {need[0]}.{need[1]} or newer from go.dev/dl (Debian 12's golang-go is 1.19, too old)"
    if go is None:
        return Check("Go toolchain (quic-go stack)", False, fix)
    out = subprocess.run([go, "version"], capture_output=True, text=True).stdout
    ok = _version(out.replace("go version go", "")) >= need
    return Check(f"Go toolchain ({out.strip() or 'unknown'})", ok, "" if ok else fix)


def _namespaces_work() -> bool:
    if os.geteuid() != 0 or not shutil.which("ip"):
        return False
    from .netns import Namespaces

    try:
        with Namespaces():
            return True
    except Exception:  # noqa: BLE001 - any failure means the machine cannot make them
        return False


def rust_toolchain() -> Check:
    """Whether cargo and a new enough rustc are on PATH or in ~/.cargo/bin (make build needs them)."""
    paths = [shutil.which("rustc"), str(Path.home() / ".cargo" / "bin" / "rustc")]
    rustc = next((p for p in paths if p and Path(p).exists()), None)
    fix = "install Rust with rustup (https://rustup.rs); Debian 12's rustc (1.63) is too old"
    if rustc is None or (shutil.which("cargo") is None and not (Path.home() / ".cargo" / "bin" / "cargo").exists()):
        return Check("Rust toolchain (cargo, rustc)", False, fix)
    out = subprocess.run([rustc, "--version"], capture_output=True, text=True).stdout
    ok = _version(out) >= RUST_MIN
    return Check(f"Rust toolchain ({out.strip() or 'unknown'})", ok,
                 "" if ok else f"rustc {RUST_MIN[0]}.{RUST_MIN[1]} or newer is needed: rustup update")
