#!/usr/bin/env bash
# Runs CI as CI runs it, several times: each run a fresh clone of this checkout's HEAD (the
# commit HEAD held when the script started, so commits made meanwhile change nothing) in
# DIR/run-N/main, with a `shared` beside it (a link to this checkout's ../shared, if any),
# then `bash .ci/run` in it. Prints per run its time, its result and, for a failure, the
# failing tests; the whole output of each run stays in DIR/run-N/ci.log. The clones are
# removed after their run (with --keep, kept); nothing is written outside DIR. Stops at the
# first failure with --stop.
#
#   scripts/fresh_clone_ci.sh [--runs N] [--keep] [--stop] DIR      (root, as CI)
#
# What it measures is the suite's false-failure rate on an unchanged tree: every run
# should pass (docs/explanation/testing.md).
set -uo pipefail
runs=5 keep=0 stop=0
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=${2:-}; shift 2;;
    --keep) keep=1; shift;;
    --stop) stop=1; shift;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0;;
    -*) echo "fresh_clone_ci: unknown option $1 (see --help)" >&2; exit 2;;
    *) break;;
  esac
done
case "$runs" in ''|*[!0-9]*) echo "--runs: a count from 1 to 20 (got '$runs')" >&2; exit 2;; esac
[ "$runs" -ge 1 ] && [ "$runs" -le 20 ] || { echo "--runs: a count from 1 to 20 (got $runs)" >&2; exit 2; }
[ $# -eq 1 ] || { echo "fresh_clone_ci: give the directory the clones go in (see --help)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "fresh_clone_ci: run as root, as CI does" >&2; exit 1; }
repo=$(cd "$(dirname "$0")/.." && pwd)
dir=$(realpath -m "$1")
case "$dir/" in "$repo"/*) echo "fresh_clone_ci: DIR must be outside the checkout ($repo)" >&2; exit 2;; esac
mkdir -p "$dir"
rev=$(git -C "$repo" rev-parse HEAD)
head=${rev:0:7}
[ -z "$(git -C "$repo" status --porcelain --untracked-files=no)" ] || \
  echo "fresh_clone_ci: the checkout has uncommitted changes; the clones hold HEAD ($head) only" >&2
passed=0 ran=0
for ((n = 1; n <= runs; n++)); do
  d="$dir/run-$n"
  rm -rf "$d" && mkdir -p "$d"
  [ -d "$repo/../shared" ] && ln -s "$(realpath "$repo/../shared")" "$d/shared"
  git clone -q "$repo" "$d/main" && git -C "$d/main" checkout -q "$rev" || { echo "clone of $head failed" >&2; exit 1; }
  t0=$(date +%s)
  (cd "$d/main" && bash .ci/run) > "$d/ci.log" 2>&1
  rc=$?
  ran=$((ran + 1))
  secs=$(($(date +%s) - t0))
  summary=$(grep -E '^[0-9]+ (passed|failed)|^=+ .*(passed|failed).* =+$' "$d/ci.log" | tail -n 1 | tr -d '=')
  if [ $rc -eq 0 ]; then
    passed=$((passed + 1))
    echo "run $n of $runs at $head: passed in $((secs / 60)) min $((secs % 60)) s ($summary)"
  else
    echo "run $n of $runs at $head: FAILED (exit $rc) after $((secs / 60)) min $((secs % 60)) s ($summary); log: $d/ci.log"
    grep -E '^(FAILED|ERROR) ' "$d/ci.log" | sed 's/^/  /'
  fi
  [ $keep -eq 1 ] || rm -rf "$d/main"
  [ $rc -eq 0 ] || [ $stop -eq 0 ] || break
done
echo "$passed of $ran passed"
[ "$passed" -eq "$ran" ]
