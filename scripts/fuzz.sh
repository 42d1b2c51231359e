#!/usr/bin/env bash
# Fuzzes every decoder of outside input (test/fuzz/, docs/fuzzing.md):
#   bash scripts/fuzz.sh [SECONDS] [TARGET...]      (default: 60 seconds, every target)
# Builds the libFuzzer targets in build-asan/ (clang, ASan + UBSan; scripts/sanitize.sh
# configures it), then runs each target for SECONDS (FUZZ_JOBS at a time), starting from the
# committed corpus (test/fuzz/corpus/<target>/) plus what earlier runs found
# (build-asan/fuzz-corpus/<target>/). Prints per target: executions, final corpus size,
# coverage (libFuzzer's cov and ft), the slowest input's time and findings; exit 1 when any
# target found something (the inputs are in build-asan/fuzz-findings/<target>/, the logs in
# build-asan/fuzz-logs/). A finding is a crash, a sanitizer report, a leak, an input taking
# over FUZZ_TIMEOUT seconds (default 1; wall-clock, so raise it on a loaded machine and judge
# by the "slowest" column), an allocation over 256 MiB or a process over 2 GiB.
#   BUILD_DIR (default build-asan)   FUZZ_TIMEOUT (1)   NO_BUILD=1: use the built targets as they are
#   FUZZ_JOBS (default 1): targets fuzzed at once, each a single process (CI: 2, one per core)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
shift || true
build=${BUILD_DIR:-$root/build-asan}
fuzz_dir=$root/test/fuzz
if [ "${NO_BUILD:-0}" != 1 ]; then
  BUILD_DIR="$build" bash "$root/scripts/sanitize.sh" build address fuzz_targets > /dev/null
fi
targets=("$@")
if [ ${#targets[@]} = 0 ]; then
  # fuzz_target.h's order.
  mapfile -t targets < <(sed -n 's/^ *{"\([a-z_]*\)", Fuzz[A-Za-z]*},$/\1/p' "$fuzz_dir/fuzz_target.h")
  # A reformatted fuzz_target.h must not turn this into a run of nothing that passes.
  if [ ${#targets[@]} = 0 ]; then
    echo "fuzz.sh: no targets found in $fuzz_dir/fuzz_target.h" >&2
    exit 2
  fi
fi
logs=$build/fuzz-logs
mkdir -p "$logs"
# halt_on_error: a UBSan report is a crash the fuzzer stops at (UBSan alone would go on).
export UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1"
export ASAN_OPTIONS="detect_leaks=1"
failed=0
# fuzz_one TARGET: one target's run, its output in its log.
fuzz_one() {
  local t=$1 bin=$build/test/fuzz/fuzz_$1 corpus=$build/fuzz-corpus/$1
  local findings=$build/fuzz-findings/$1 dict=()
  [ -f "$fuzz_dir/dict/$t.dict" ] && dict=(-dict="$fuzz_dir/dict/$t.dict")
  # The first folder takes the new inputs; the committed corpus is only read. -max_len: libFuzzer
  # grows inputs only to 4 KiB by default (the seeds are small), short of deep nesting and of
  # counts that cost quadratic time; 64 KiB reaches them (FUZZ_MAX_LEN).
  "$bin" "$corpus" "$fuzz_dir/corpus/$t" "${dict[@]}" -max_total_time="$seconds" \
    -max_len="${FUZZ_MAX_LEN:-65536}" \
    -timeout="${FUZZ_TIMEOUT:-1}" -rss_limit_mb=2048 -malloc_limit_mb=256 -print_final_stats=1 \
    -artifact_prefix="$findings/" > "$logs/$t.log" 2>&1 || true
}
for t in "${targets[@]}"; do
  [ -x "$build/test/fuzz/fuzz_$t" ] || { echo "fuzz.sh: no target $t ($build/test/fuzz/fuzz_$t)" >&2; exit 2; }
  rm -rf "$build/fuzz-findings/$t"  # this run's findings only
  mkdir -p "$build/fuzz-corpus/$t" "$build/fuzz-findings/$t"
done
# FUZZ_JOBS targets at a time (each target's files are its own), then the table in order.
jobs=${FUZZ_JOBS:-1}
running=0
for t in "${targets[@]}"; do
  fuzz_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait || true
printf '%-22s %12s %8s %8s %8s %9s  %s\n' target executions corpus cov ft slowest findings
for t in "${targets[@]}"; do
  findings=$build/fuzz-findings/$t
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$logs/$t.log" | tail -1)
  status=$(grep -E '^#[0-9]+' "$logs/$t.log" | grep 'cov:' | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<< "$status")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<< "$status")
  found=$(find "$findings" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
    -o -name 'oom-*' -o -name 'slow-unit-*' \) | wc -l)
  size=$(sed -n 's/.* corp: \([0-9]*\)\/.*/\1/p' <<< "$status")
  slowest=$(sed -n 's/^stat::slowest_unit_time_sec: *//p' "$logs/$t.log" | tail -1)
  note=$found
  if [ "$found" != 0 ] || [ -z "$runs" ]; then
    failed=1
    note="$found (log: $logs/$t.log)"
  fi
  printf '%-22s %12s %8s %8s %8s %8ss  %s\n' "$t" "${runs:-?}" "${size:-?}" "${cov:-?}" "${ft:-?}" \
    "${slowest:-?}" "$note"
done
[ "$failed" = 0 ] && echo "fuzz: every target ran ${seconds}s, no findings"
exit "$failed"
