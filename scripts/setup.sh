#!/usr/bin/env bash
# Installs the system packages and toolchain pieces dclab needs on Debian 12, only those
# that are missing, so running it again is quick and changes nothing.
set -euo pipefail
if [ "$(id -u)" != 0 ]; then
  echo "setup: run as root (sudo make ...): dclab creates network namespaces and TUN devices" >&2
  exit 1
fi
missing=()
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# Rust: the machine image ships rustup's toolchain in ~/.cargo. Debian 12's own rustc (1.63)
# is older than dcemu's locked crates allow (emu/Cargo.toml's rust-version), so it is no
# fallback: say what to install instead.
if ! command -v cargo >/dev/null && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
need_rust=$(sed -n 's/^rust-version = "\([0-9.]*\)".*/\1/p' "$(dirname "$0")/../emu/Cargo.toml")
have_rust=$( (rustc --version 2>/dev/null || true) | sed -n 's/^rustc \([0-9.]*\).*/\1/p')
if [ -z "$have_rust" ] || [ "$(printf '%s\n%s\n' "$need_rust" "$have_rust" | sort -V | head -1)" != "$need_rust" ]; then
  echo "setup: Rust ${need_rust} or newer is needed to build dcemu (found: ${have_rust:-none}); install it with" \
       "rustup (https://rustup.rs), then run make again. Debian 12's rustc is 1.63, too old." >&2
  exit 1
fi
[ -e /dev/net/tun ] || { echo "setup: /dev/net/tun is missing; dcemu needs the TUN driver" >&2; exit 1; }
exit 0
