"""`dclab clean` and `dclab doctor`: the host's side of things."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from ..endpoints import STACKS, get_stack
from .options import root_or_exit


@click.command()
@click.option("--no-wait", is_flag=True, help="If a run holds the host, say so and exit 1 instead of waiting for it.")
def clean(no_wait: bool) -> None:
    """Remove what killed runs left: processes, namespaces (and the TUN devices in them),
    private keys; restore the host's original sysctls.

    Takes the host lock first, so it never touches a live run: while one holds the host it
    waits (or, with --no-wait, exits 1). A new run does the same by itself before it starts."""
    from ..testbed.hostconfig import HostBusy, HostLock, recover

    root_or_exit()
    try:
        with HostLock(on_wait=lambda: click.echo("a dclab run holds the host; waiting for it to finish ...", err=True),
                      wait=not no_wait):
            actions = recover()
    except HostBusy as e:
        click.echo(f"{e}: nothing cleaned (run `dclab clean` again when it ends)", err=True)
        sys.exit(1)
    for line in actions:
        click.echo(line)
    click.echo("nothing to clean" if not actions else f"{len(actions)} action(s)")


@click.command()
def doctor() -> None:
    """Check root, TUN, namespaces, dcemu and every external tool; say how to fix gaps."""
    from ..paths import DCEMU
    from ..testbed.hostconfig import read_sysctl

    checks: list[tuple[str, bool, str]] = []
    checks.append(("root", os.geteuid() == 0, "run as root (sudo dclab ...)"))
    checks.append(("/dev/net/tun", Path("/dev/net/tun").exists(), "the kernel needs the TUN driver"))
    checks.append(("ip (iproute2)", shutil.which("ip") is not None, "apt-get install iproute2"))
    netns_ok = False
    if os.geteuid() == 0 and shutil.which("ip"):
        from ..testbed.netns import Namespaces

        try:
            with Namespaces():
                netns_ok = True
        except Exception:  # noqa: BLE001
            netns_ok = False
    checks.append(("network namespaces", netns_ok, "needs root and a kernel with network namespaces"))
    checks.append(("iptables (MSS clamp)", shutil.which("iptables") is not None, "apt-get install iptables"))
    checks.append(rust_toolchain())
    checks.append(("dcemu built", DCEMU.exists(), "make build"))
    for name in STACKS:
        try:
            missing = get_stack(name).missing()
        except Exception as e:  # noqa: BLE001
            missing = [str(e)]
        checks.append((f"stack {name}", not missing, "; ".join(missing)))
    try:
        avail = read_sysctl("net.ipv4.tcp_available_congestion_control").split()
        ok = all(c in avail for c in ("reno", "cubic", "bbr"))
        checks.append((f"TCP congestion control ({' '.join(avail)})", ok, "the kernel lacks reno, cubic or bbr"))
    except RuntimeError as e:
        checks.append(("TCP congestion control", False, str(e)))
    t = Table(show_header=True)
    t.add_column("check")
    t.add_column("status")
    t.add_column("how to fix")
    for name, ok, fix in checks:
        t.add_row(name, "[green]ok[/]" if ok else "[red]missing[/]", "" if ok else fix)
    Console().print(t)
    if not all(ok for _, ok, _ in checks):
        sys.exit(1)


RUST_MIN = (1, 82)  # emu/Cargo.toml's rust-version


def rust_toolchain() -> tuple[str, bool, str]:
    """Whether cargo and a new enough rustc are on PATH or in ~/.cargo/bin (make build needs them)."""
    import re
    import subprocess

    paths = [shutil.which("rustc"), str(Path.home() / ".cargo" / "bin" / "rustc")]
    rustc = next((p for p in paths if p and Path(p).exists()), None)
    fix = "install Rust (https://rustup.rs, or apt-get install cargo rustc if Debian's is new enough)"
    if rustc is None or (shutil.which("cargo") is None and not (Path.home() / ".cargo" / "bin" / "cargo").exists()):
        return ("Rust toolchain (cargo, rustc)", False, fix)
    out = subprocess.run([rustc, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"(\d+)\.(\d+)", out)
    version = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
    ok = version >= RUST_MIN
    return (f"Rust toolchain ({out.strip() or 'unknown'})", ok,
            "" if ok else f"rustc {RUST_MIN[0]}.{RUST_MIN[1]} or newer is needed: rustup update")

