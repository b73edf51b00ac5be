#!/usr/bin/env bash
# Checks that every room of emu/src imports only from rooms on lower levels (the order is
# documented in src/lib.rs). Prints each offending file and import; exits 1 if any.
#
# Looks at `crate::<room>` paths (also inside `use crate::{...}` groups) and at `super::`
# chains that climb to the crate root, in code with `//` comments removed. Files of a room:
# src/<room>.rs and everything under src/<room>/. main.rs and src/bin/ are the top and
# are not checked. Run from anywhere: bash emu/check-levels.sh
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/src"

# Bottom to top; rooms on one level may not import each other either.
declare -A level=([base]=0 [qdisc]=1 [link]=2 [pdcp]=2 [cell]=2 [model]=2 [config]=3 [engine]=4 [io]=5 [replay]=5 [sim]=5)

fail=0

# Every room must have a level, or a new one would go unchecked.
for p in */ *.rs; do
    room=${p%/}
    room=${room%.rs}
    case $room in lib | main | bin) continue ;; esac
    if [[ -z ${level[$room]+x} ]]; then
        echo "check-levels: src/$p: room '$room' has no level; add it to check-levels.sh and src/lib.rs"
        fail=1
    fi
done

# Prints "<name> <path as written>" for every crate-root name a file refers to.
# $1: the file's module depth below the crate root (src/x.rs and src/x/mod.rs: 1).
refs() {
    sed 's://.*$::' | tr '\n' ' ' | awk -v depth="$1" '
    {
        s = $0
        while (match(s, /crate::/)) {
            s = substr(s, RSTART + 7)
            if (substr(s, 1, 1) == "{") {
                # use crate::{a::X, b::{Y, Z}}: the names right inside the outer braces.
                d = 0; expect = 0; n = length(s)
                for (i = 1; i <= n; i++) {
                    c = substr(s, i, 1)
                    if (c == "{") { d++; expect = (d == 1); continue }
                    if (c == "}") { if (--d == 0) break; continue }
                    if (d == 1 && c == ",") { expect = 1; continue }
                    if (expect && c ~ /[a-z_]/) {
                        match(substr(s, i), /^[A-Za-z0-9_]+/)
                        name = substr(s, i, RLENGTH)
                        print name, "crate::{" name "...}"
                        expect = 0; i += RLENGTH - 1
                    }
                }
            } else if (match(s, /^[A-Za-z0-9_]+/)) {
                print substr(s, 1, RLENGTH), "crate::" substr(s, 1, RLENGTH)
            }
        }
        s = $0
        while (match(s, /(super::)+[A-Za-z_][A-Za-z0-9_]*/)) {
            m = substr(s, RSTART, RLENGTH)
            s = substr(s, RSTART + RLENGTH)
            path = m
            if (gsub(/super::/, "", m) >= depth) print m, path
        }
    }'
}

while IFS= read -r f; do
    room=${f%%/*}
    room=${room%.rs}
    [[ -n ${level[$room]+x} ]] || continue
    slashes=${f//[^\/]/}
    depth=$((${#slashes} + 1))
    [[ $f == */mod.rs ]] && depth=$((depth - 1))
    while read -r name path; do
        [[ -n ${level[$name]+x} && $name != "$room" ]] || continue
        if ((level[$name] >= level[$room])); then
            echo "check-levels: src/$f: $path (level ${level[$name]}) from $room (level ${level[$room]}); a room imports only from lower levels"
            fail=1
        fi
    done < <(refs "$depth" <"$f")
done < <(find . -name '*.rs' ! -path './bin/*' ! -name lib.rs ! -name main.rs | sed 's|^\./||' | sort)

if ((fail)); then
    exit 1
fi
echo "check-levels: ok (base < qdisc < link, pdcp, cell, model < config < engine < io, replay, sim)"
