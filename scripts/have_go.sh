#!/usr/bin/env bash
# Whether the Go toolchain the quic-go stack needs (go.mod's `go` line) is on PATH: exits 0
# if so, else 1 with the reason on standard output (`make build` prints it and skips that
# one stack; `make test` and the quic-go program's own target stop on it).
set -uo pipefail
need=$(sed -n 's/^go \([0-9.]*\).*/\1/p' "$(dirname "$0")/../dclab/endpoints/quicgo/go/go.mod")
have=$( (go env GOVERSION 2>/dev/null || true) | sed -n 's/^go\([0-9.]*\).*/\1/p')
if [ -n "$have" ] && [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1)" = "$need" ]; then
  exit 0
fi
echo "Go ${need} or newer is needed (found: ${have:-none}); install it from go.dev/dl (Debian 12's golang-go is 1.19, too old)"
exit 1
