#!/usr/bin/env bash
# Cost of the timeline: `hvdrun -np 2 hvd-bench --many 100x16K` (100 small allreduces enqueued
# together, then one by one) without a timeline, with `--timeline`, and with
# `--timeline --timeline-all-ranks`, interleaved, REPS times each. Prints the median time per
# configuration and the ratio to "off" (target: < 3 % loss, ratio < 1.03).
# Usage: bench/timeline_cost.sh [build dir] [reps]   (default build, 5)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
reps=${2:-5}
hvdrun=$build/cmd/hvdrun
bench=$build/bench/hvd-bench
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A signal runs the EXIT trap too (sh runs it only on exit, not when a signal kills it).
trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 143' TERM

run() {  # run <name> [hvdrun flags...]: appends "<async_us> <one_by_one_us>" to $tmp/<name>
  local name=$1
  shift
  "$hvdrun" -np 2 "$@" "$bench" --many 100x16K --rounds 5 >"$tmp/out" 2>&1 ||
    { cat "$tmp/out"; exit 1; }
  awk '/async \(enqueue/ {sub(/^.*\)/, ""); a=$1} /one by one \(/ {sub(/^.*\)/, ""); o=$1}
       END {print a, o}' "$tmp/out" >>"$tmp/$name"
  rm -f "$tmp"/*.json
}

for ((i = 0; i < reps; i++)); do
  run off
  run on --timeline "$tmp/t.json"
  run all --timeline "$tmp/t.json" --timeline-all-ranks
done

/usr/bin/python3 - "$tmp" "$reps" <<'PY'
import statistics, sys
tmp, reps = sys.argv[1], sys.argv[2]
data = {}
for name in ("off", "on", "all"):
    rows = [list(map(float, l.split())) for l in open(f"{tmp}/{name}") if l.strip()]
    data[name] = [statistics.median(c) for c in zip(*rows)]
print(f"# hvd-bench --many 100x16K, n=2, median of {reps} runs (each the median of 5 rounds)")
print(f"{'timeline':<22} {'async_us':>10} {'ratio':>7} {'one_by_one_us':>14} {'ratio':>7}")
labels = {"off": "off", "on": "--timeline", "all": "--timeline-all-ranks"}
for name in ("off", "on", "all"):
    a, o = data[name]
    print(f"{labels[name]:<22} {a:>10.1f} {a / data['off'][0]:>7.3f} {o:>14.1f} "
          f"{o / data['off'][1]:>7.3f}")
PY
