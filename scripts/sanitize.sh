#!/usr/bin/env bash
# Runs libhvd's threaded tests under a sanitizer: bash scripts/sanitize.sh thread|address
#
# Builds build-tsan/ or build-asan/ (HVD_SANITIZE=<mode>; no Python, Gloo, MPI or NCCL: the sanitizers need
# every library of the program instrumented) and runs, each with a time limit:
#   runtime_test      thread ranks over the in-process communicator: the controller, the
#                     background thread, callers driving cycles, aborts, timeline, autotune;
#   hvd_e2e_worker    every scenario group of test/worker_e2e under the built hvdrun, 2 and 3
#                     ranks, on shared memory (the default) and on hvd's TCP transport,
#                     shared memory's single-copy path and its allreduce without the direct
#                     round (sliced when posted).
# Exit 1 when a test fails or a sanitizer reports anything (its reports are in
# sanitize-logs/ of that folder). Not part of scripts/test.sh: about 20 minutes on 2 cores.
# Run scripts/setup.sh first on a fresh machine. docs/runtime.md "Sanitizer builds".
set -euo pipefail
mode=${1:-}
root=$(cd "$(dirname "$0")/.." && pwd)
case "$mode" in
  thread) build=$root/build-tsan ;;
  address) build=$root/build-asan ;;
  *) echo "usage: $0 thread|address" >&2; exit 2 ;;
esac
logs=$build/sanitize-logs
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHVD_SANITIZE="$mode" \
  -DHVD_WITH_GLOO=OFF -DHVD_WITH_MPI=OFF -DHVD_WITH_NCCL=OFF -DHVD_BUILD_PYTHON=OFF > /dev/null
cmake --build "$build" -j "$(nproc)" --target runtime_test hvdrun hvd_e2e_worker
rm -rf "$logs" && mkdir -p "$logs"
# halt_on_error=0: report every finding of a run, not just the first. detect_leaks=0: the
# tests' deliberate kills and aborts leave allocations behind that are not leaks of a run.
export TSAN_OPTIONS="halt_on_error=0 history_size=4 log_path=$logs/tsan"
export ASAN_OPTIONS="detect_leaks=0 log_path=$logs/asan"
export UBSAN_OPTIONS="print_stacktrace=1 log_path=$logs/ubsan"
failed=0
run() {  # run NAME COMMAND...: a failing command is named, the run goes on
  local name=$1
  shift
  if timeout 900 "$@" > "$logs/$name.out" 2>&1; then
    echo "ok      $name"
  else
    echo "FAILED  $name (exit $?; $logs/$name.out)"
    failed=1
  fi
}
run runtime_test "$build/test/unit/runtime/runtime_test"
groups=("allreduce adasum lone lone_collectives allgather broadcast alltoall reducescatter barrier"
  "grouped fused fused_allgather" "process_sets_static process_sets_dynamic"
  "mismatch duplicate_name" "join reinit")
for np in 2 3; do
  for backend in auto tcp; do
    for i in "${!groups[@]}"; do
      # shellcheck disable=SC2086
      run "worker_np${np}_${backend}_$i" env HVD_CPU_OPERATIONS=$backend HVD_GLOO_TIMEOUT_SECONDS=60 \
        "$build/cmd/hvdrun" -np "$np" --start-timeout 120 \
        "$build/test/worker_e2e/hvd_e2e_worker" ${groups[$i]}
    done
  done
done
# Shared memory's two-round allreduce at every size and a lone posted one sliced
# (HVD_SHM_DIRECT_BYTES=0: what groups of many ranks with a CPU each get past a few KiB).
run worker_no_direct env HVD_SHM_DIRECT_BYTES=0 HVD_CPU_OPERATIONS=shm \
  "$build/cmd/hvdrun" -np 3 --start-timeout 120 "$build/test/worker_e2e/hvd_e2e_worker" \
  allreduce lone lone_collectives fused join
run worker_single_copy env HVD_SHM_SINGLE_COPY_BYTES=1 HVD_SHM_SINGLE_COPY=always \
  "$build/cmd/hvdrun" -np 2 --start-timeout 120 "$build/test/worker_e2e/hvd_e2e_worker" \
  allreduce grouped fused join
reports=$({
  find "$logs" -name 'tsan.*' -o -name 'asan.*' -o -name 'ubsan.*'
  grep -l -E "runtime error:|WARNING: ThreadSanitizer|ERROR: AddressSanitizer" "$logs"/*.out || true
} | sort)
if [ -n "$reports" ]; then
  echo "sanitizer reports:"
  echo "$reports"
  failed=1
fi
[ "$failed" = 0 ] && echo "sanitize $mode: every run passed, no reports"
exit "$failed"
