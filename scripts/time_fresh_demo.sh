#!/usr/bin/env bash
# Times `make demo` on a fresh Debian 12: a debootstrap chroot holding only what a new
# machine of our kind starts with (git, make, gcc, python3, procps, Rust by rustup), a
# fresh clone of this checkout's HEAD, no Debian package the demo installs, no pip or
# cargo cache. Prints each line of make demo's output with the seconds since the start,
# then "elapsed". The chroot is kept (reset before every run) in DIR.
#
#   scripts/time_fresh_demo.sh [--runs N] [DIR]     (root; DIR defaults to build/fresh-machine)
#
# Downloads from Debian's mirror, PyPI and crates.io, as a new machine would.
set -euo pipefail
runs=1
if [ "${1:-}" = "--runs" ]; then runs=$2; shift 2; fi
case "$runs" in ''|*[!0-9]*) echo "--runs: a count from 1 to 20 (got '$runs')" >&2; exit 2;; esac
[ "$runs" -ge 1 ] && [ "$runs" -le 20 ] || { echo "--runs: a count from 1 to 20 (got $runs)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "time_fresh_demo: run as root (chroot, mounts)" >&2; exit 1; }
repo=$(cd "$(dirname "$0")/.." && pwd)
root=$(realpath -m "${1:-$repo/build/fresh-machine}")
demo_packages=$(sed -n 's/^DEMO_APT_PACKAGES := //p' "$repo/Makefile")
toolchain=$(rustup show active-toolchain 2>/dev/null | cut -d' ' -f1)
[ -n "$toolchain" ] || { echo "time_fresh_demo: no rustup toolchain here to give the chroot" >&2; exit 1; }
command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap >/dev/null

if [ ! -x "$root/usr/bin/python3" ]; then
  echo "time_fresh_demo: debootstrap bookworm into $root"
  debootstrap --variant=minbase --include=git,make,gcc,libc6-dev,python3,ca-certificates,procps \
    bookworm "$root" http://deb.debian.org/debian >/dev/null
fi
# What a new machine of this kind has besides: its CA certificates, apt's settings, DNS,
# and Rust by rustup (one toolchain, no registry cache).
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
fi
cp /etc/apt/apt.conf.d/* "$root/etc/apt/apt.conf.d/" 2>/dev/null || true
cp /etc/resolv.conf "$root/etc/resolv.conf"
chroot "$root" update-ca-certificates >/dev/null
mkdir -p "$root/root/.rustup/toolchains" "$root/root/.cargo/bin"
cp "$HOME/.rustup/settings.toml" "$root/root/.rustup/"
[ -e "$root/root/.rustup/toolchains/$toolchain" ] || cp -a "$HOME/.rustup/toolchains/$toolchain" "$root/root/.rustup/toolchains/"
for link in "$HOME"/.rustup/toolchains/*; do  # a version name pointing at the toolchain
  [ -L "$link" ] && [ "$(readlink "$link")" = "$HOME/.rustup/toolchains/$toolchain" ] && cp -a "$link" "$root/root/.rustup/toolchains/"
done
cp -a "$HOME/.cargo/bin/." "$root/root/.cargo/bin/"

mounted=()
unmount() {
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -R "${mounted[i]}" 2>/dev/null || umount -lR "${mounted[i]}" || true; done
}
trap unmount EXIT
mount_on() { mount "$@"; mounted+=("${@: -1}"); }
mountpoint -q "$root" || mount_on --bind "$root" "$root"  # ip netns needs / to be a mount
mount_on -t proc proc "$root/proc"
mount_on --rbind /sys "$root/sys" && mount --make-rslave "$root/sys"
mount_on --rbind /dev "$root/dev" && mount --make-rslave "$root/dev"
mount_on -t tmpfs tmpfs "$root/run"

in_root() { chroot "$root" /usr/bin/env -i HOME=/root TERM="${TERM:-xterm}" \
  PATH=/root/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"; }
for ((run = 1; run <= runs; run++)); do
  # Back to new: the demo's packages (those debootstrap did not give it) purged, no clone, no caches.
  # shellcheck disable=SC2086
  extra=$(for p in $demo_packages; do
            case " git make gcc libc6-dev python3 ca-certificates procps " in *" $p "*) ;; *) echo "$p";; esac
          done | sort -u)
  # shellcheck disable=SC2086
  in_root env DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq --autoremove $extra >/dev/null 2>&1 || true
  rm -rf "$root/root/dclab" "$root/root/.cargo/registry" "$root/root/.cargo/git" "$root/root/.cache" \
         "$root/var/lib/apt/lists/"* "$root/var/cache/apt/archives/"*.deb
  git clone -q "$repo" "$root/root/dclab"
  echo "time_fresh_demo: run $run of $runs, $(git -C "$root/root/dclab" log --oneline -1)"
  in_root /bin/bash -c '
    cd /root/dclab && start=$(date +%s.%N)
    make demo 2>&1 | while IFS= read -r line; do
      printf "%6.1f %s\n" "$(python3 -c "import time; print(time.time() - $start)")" "$line"
    done
    rc=${PIPESTATUS[0]}
    echo "elapsed $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s, make demo exited $rc"
    exit "$rc"'
done
