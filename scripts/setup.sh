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
# Rust: the machine image ships rustup's toolchain in ~/.cargo; fall back to Debian's.
if ! command -v cargo >/dev/null && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null; then
  echo "setup: installing Debian's cargo"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cargo rustc >/dev/null
fi
[ -e /dev/net/tun ] || { echo "setup: /dev/net/tun is missing; dcemu needs the TUN driver" >&2; exit 1; }
exit 0
