#!/usr/bin/env bash
# Autotune: time per training step (hvd-step-bench: 32 allreduces of 16 KiB per step, n=2) for
#   bad     fusion threshold 0, cycle time 100 ms
#   default the runtime's defaults (128 MiB, 1 ms)
#   tuning  --autotune from the bad start (Horovod's default schedule), whole run and the
#           steps after tuning ended
#   tuned   the best parameters from that run's CSV log, set explicitly
# Usage: bench/autotune_bench.sh [build dir] [reps]   (default build, 3). Medians over reps.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
reps=${2:-3}
hvdrun=$build/cmd/hvdrun
bench=$build/bench/hvd-step-bench
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A signal runs the EXIT trap too (sh runs it only on exit, not when a signal kills it).
trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 143' TERM
work=(--tensors 32 --bytes 16K)

run() {  # run <name> <steps> <last> [env assignments] -- [hvdrun flags]: appends "<mean> <last>"
  local name=$1 steps=$2 last=$3
  shift 3
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" "$hvdrun" -np 2 "$@" "$bench" "${work[@]}" --steps "$steps" --last "$last" \
    >"$tmp/out" 2>&1 || { cat "$tmp/out"; exit 1; }
  awk '/mean_step_us/ {print $(NF-2), $NF}' "$tmp/out" >>"$tmp/$name"
}

for ((i = 0; i < reps; i++)); do
  run bad 400 300 -- --fusion-threshold-mb 0 --cycle-time-ms 100
  run default 400 300 --
  rm -f "$tmp/tune.csv"
  run tuning 2000 300 HVD_AUTOTUNE_TUNE_SET_KNOBS=1 -- --autotune \
    --autotune-log-file "$tmp/tune.csv" --fusion-threshold-mb 0 --cycle-time-ms 100
  best=$(tail -1 "$tmp/tune.csv")
  echo "run $i best: $best" >>"$tmp/best"
  IFS=, read -r _ _ _ cache cycle_ms fusion_mb _ <<<"$best"
  fusion_bytes=$(/usr/bin/python3 -c "print(round($fusion_mb * 1048576))")
  cache_env=()
  [ "$cache" = 0 ] && cache_env=(HVD_CACHE_CAPACITY=0)
  run tuned 400 300 HVD_FUSION_THRESHOLD="$fusion_bytes" HVD_CYCLE_TIME="$cycle_ms" \
    "${cache_env[@]}" --
done

cat "$tmp/best"
/usr/bin/python3 - "$tmp" "$reps" <<'PY'
import statistics, sys
tmp, reps = sys.argv[1], sys.argv[2]
med = {}
for name in ("bad", "default", "tuning", "tuned"):
    rows = [list(map(float, l.split())) for l in open(f"{tmp}/{name}") if l.strip()]
    med[name] = [statistics.median(c) for c in zip(*rows)]
print(f"# hvd-step-bench 32 x 16 KiB allreduce per step, n=2, median of {reps} runs")
print(f"{'configuration':<44} {'us/step':>9} {'vs bad':>7} {'vs default':>10}")
def row(label, us):
    print(f"{label:<44} {us:>9.1f} {med['bad'][1] / us:>6.2f}x {med['default'][1] / us:>9.2f}x")
row("bad start (fusion 0, cycle 100 ms)", med["bad"][1])
row("defaults (128 MiB, 1 ms)", med["default"][1])
row("--autotune from bad start, all 2000 steps", med["tuning"][0])
row("--autotune, last 300 steps (tuned)", med["tuning"][1])
row("tuned params set explicitly", med["tuned"][1])
PY
