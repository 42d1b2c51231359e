#!/usr/bin/env bash
# Runs hvd's tests under a sanitizer (docs/fuzzing.md "Sanitizers"):
#   bash scripts/sanitize.sh address [--ci]     ASan + UBSan, build-asan/
#   bash scripts/sanitize.sh thread [--ci]      ThreadSanitizer, build-tsan/
#   bash scripts/sanitize.sh build address|thread TARGET...   configure and build only
#
# Both builds use clang with line tables only (the stacks name file:line; far faster to compile
# than -g), without Python, MPI and NCCL (the full runs build the GPU path for the emulated GPU,
# whose preloaded library answers every CUDA and NCCL call). ThreadSanitizer needs every library
# that runs threads instrumented, so build-tsan/ also leaves out Gloo (Debian's is not); ASan
# checks hvd's own accesses beside an uninstrumented library, so build-asan/ has Gloo (since
# 2026-11-30). build-asan/ also holds the libFuzzer targets (HVD_FUZZ=ON), so scripts/fuzz.sh
# and this share one build.
#   address: every C++ unit test (ctest -L unit, the fuzz corpus test included), the attacks
#            on a live job (security_e2e, docs/threat-model.md) and the worker
#            scenario groups of test/worker_e2e under the built hvdrun: 2 and 3 ranks, shared
#            memory (the default) and hvd's TCP transport, shared memory's single-copy path and
#            its allreduce without the direct round; Gloo's communicator (gloo_multiproc_test:
#            every collective, dead and stopped peers, aborts) and the worker scenarios on Gloo.
#            --ci: the unit tests, gloo_multiproc_test and every scenario ("all") once at 2
#            ranks on shared memory, once at 3 on TCP and once at 3 on Gloo.
#   thread:  runtime_test (ranks as threads over the in-process communicator: the controller,
#            background thread, callers driving cycles, aborts, timeline, autotune); without
#            --ci also launcher_rendezvous_test (the server's I/O thread against client threads)
#            and the worker groups as above.
#   Both without --ci, where CUDA and NCCL are found: the GPU worker (test/gpu_e2e) on the
#   emulated GPU (test/gpu_emulator) at 2-4 ranks, NCCL, staged and the hierarchy.
# Exit 1 when a test fails or a sanitizer reports anything; the last line is the summary
# ("sanitize <mode>: ..."), the reports are in <build>/sanitize-logs/. Run scripts/setup.sh
# first on a fresh machine. BUILD_DIR overrides the build folder; SANITIZE_FLAGS the compile
# flags. address: "-O0 -gline-tables-only", with HVD_HOT_FLAGS=-O1 on the sources that compile
# Eigen (CMakeLists.txt; at -O0 autotune_test ran past its 120 s): the build took 349 s where
# all at -O1 took 555. The runs take about as long as at -O1: the unit tests 91-129 s two at a
# time, runtime_test's 77-105 s of it mostly page faults of its large buffers, whatever the
# -O. thread: "-O1 -gline-tables-only" (one test, whose run TSan slows most). Give
# scripts/fuzz.sh the same, or it rebuilds the folder.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

configure() {  # configure MODE BUILD [NCCL]
  local extra=() flags=${SANITIZE_FLAGS:--O1 -gline-tables-only} gloo=OFF
  if [ "$1" = address ]; then
    flags=${SANITIZE_FLAGS:--O0 -gline-tables-only}
    extra=(-DHVD_FUZZ=ON -DHVD_HOT_FLAGS=-O1)
    gloo=ON
  fi
  CC=clang-14 CXX=clang++-14 cmake -S "$root" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=None \
    -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
    -DHVD_SANITIZE="$1" -DHVD_WERROR=OFF -DHVD_WITH_GLOO="$gloo" -DHVD_WITH_MPI=OFF \
    -DHVD_WITH_NCCL="${3:-OFF}" -DHVD_BUILD_PYTHON=OFF "${extra[@]}" > /dev/null
}

default_build() {
  case "$1" in
    address) echo "${BUILD_DIR:-$root/build-asan}" ;;
    thread) echo "${BUILD_DIR:-$root/build-tsan}" ;;
    *) echo "usage: $0 address|thread [--ci] | build address|thread TARGET..." >&2; exit 2 ;;
  esac
}

if [ "${1:-}" = build ]; then
  mode=${2:-}
  build=$(default_build "$mode")
  shift 2
  configure "$mode" "$build"
  cmake --build "$build" -j "$(nproc)" --target "$@"
  exit 0
fi

mode=${1:-}
ci=0
[ "${2:-}" = --ci ] && ci=1
build=$(default_build "$mode")
logs=$build/sanitize-logs
# The full runs also build the GPU path where CUDA and NCCL are found, for the GPU worker on the
# emulated GPU (test/gpu_emulator: the real CUDA and NCCL libraries are never called).
nccl=OFF
[ "$ci" = 0 ] && nccl=ON
configure "$mode" "$build" "$nccl"
gpu=$(ninja -C "$build" -t targets all | grep -c '^hvd_gpu_emulator:' || true)
gloo=$(ninja -C "$build" -t targets all | grep -c '^gloo_multiproc_test:' || true)
if [ "$mode" = address ]; then
  # Every unit test binary: ctest -L unit's tests are named after their gtest targets, but for
  # the benchmarks' command-line checks (not worth a sanitizer build of the benchmarks).
  # gpu_emulator_test: the emulator's own death test crashes on purpose (a report here).
  unit_exclude='^bench_bad_args_|^gpu_emulator_test$'
  # (Tests that are scripts, such as launcher_layout, have no target of that name: left out.)
  mapfile -t unit_targets < <(cd "$build" && ctest -N -L unit -E "$unit_exclude" |
    sed -n 's/^ *Test *#[0-9]*: //p' |
    grep -Fxf <(ninja -C "$build" -t targets all | sed -n 's/: .*//p'))
  targets=(hvdrun hvd-agent hvd_e2e_worker hvd_attack_probe "${unit_targets[@]}")
  [ "$gloo" = 1 ] && targets+=(gloo_multiproc_test)
  # nccl_group_emulated_test (unit) runs nccl_group_test's binary on the emulated GPU.
  [ "$gpu" = 1 ] && targets+=(nccl_group_test hvd_gpu_worker hvd_gpu_emulator)
elif [ "$ci" = 1 ]; then
  targets=(runtime_test)
else
  targets=(hvdrun hvd_e2e_worker runtime_test launcher_rendezvous_test)
  [ "$gpu" = 1 ] && targets+=(hvd_gpu_worker hvd_gpu_emulator)
fi
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"
rm -rf "$logs" && mkdir -p "$logs"
# halt_on_error=0: report every finding of a run, not just the first. detect_leaks=0: the
# tests' deliberate kills and aborts leave allocations behind that are not leaks of a run.
export TSAN_OPTIONS="halt_on_error=0 history_size=4 log_path=$logs/tsan"
export ASAN_OPTIONS="detect_leaks=0 log_path=$logs/asan"
export UBSAN_OPTIONS="print_stacktrace=1 log_path=$logs/ubsan"
failed=0
runs=0
run() {  # run NAME COMMAND...: a failing command is named, the run goes on
  local name=$1 start=$SECONDS
  shift
  runs=$((runs + 1))
  if timeout 900 "$@" > "$logs/$name.out" 2>&1; then
    echo "ok      $name ($((SECONDS - start)) s)"
  else
    echo "FAILED  $name (exit $?; $logs/$name.out)"
    failed=1
  fi
}
worker() {  # worker NAME NP ENV... -- SCENARIO...
  local name=$1 np=$2
  shift 2
  local env=()
  while [ "$1" != -- ]; do env+=("$1"); shift; done
  shift
  run "$name" env HVD_GLOO_TIMEOUT_SECONDS=60 "${env[@]}" "$build/cmd/hvdrun" -np "$np" \
    --start-timeout 120 "$build/test/worker_e2e/hvd_e2e_worker" "$@"
}
if [ "$mode" = address ]; then
  # Two at a time: runtime_test and autotune_test, the long ones, side by side (172 -> 88 s).
  run unit_tests ctest --test-dir "$build" -L unit -E "$unit_exclude" --output-on-failure \
    --timeout 900 -j "$(nproc)"
  run security_e2e ctest --test-dir "$build" -R '^security_e2e$' --output-on-failure
  [ "$gloo" = 1 ] && run gloo_multiproc_test "$build/test/multiproc/gloo_multiproc_test"
else
  # --ci leaves out the hierarchy's two data-volume checks (pieces against the packed
  # collectives, every dtype, op and layout, buffers up to 0.9 MB): 40 s of TSan's run, twice
  # the rest (125 s before their largest layout went, 2026-11-29), mostly page faults of TSan's
  # shadow memory. Their ranks are threads that share nothing but
  # the fake transport, as in the hierarchy's other tests, which stay; and the hierarchical
  # communicator starts no thread. They run in ctest and under ASan.
  filter=()
  [ "$ci" = 1 ] && filter=(--gtest_filter=-HierarchicalTest.*PiecesEqualPacked*)
  run runtime_test "$build/test/unit/runtime/runtime_test" "${filter[@]}"
  [ "$ci" = 1 ] || run launcher_rendezvous_test "$build/test/unit/launcher/launcher_rendezvous_test"
fi
if [ "$ci" = 1 ]; then
  [ "$mode" = address ] && worker worker_np2_shm_all 2 -- all
  [ "$mode" = address ] && worker worker_np3_tcp_all 3 HVD_CPU_OPERATIONS=tcp -- all
  [ "$gloo" = 1 ] && worker worker_np3_gloo_all 3 HVD_CPU_OPERATIONS=gloo -- all
else
  groups=("allreduce adasum lone lone_collectives allgather broadcast alltoall reducescatter barrier"
    "grouped fused fused_allgather" "process_sets_static process_sets_dynamic"
    "mismatch duplicate_name" "join reinit")
  backends=(auto tcp)
  [ "$gloo" = 1 ] && backends+=(gloo)
  for np in 2 3; do
    for backend in "${backends[@]}"; do
      for i in "${!groups[@]}"; do
        # shellcheck disable=SC2086
        worker "worker_np${np}_${backend}_$i" "$np" HVD_CPU_OPERATIONS=$backend -- ${groups[$i]}
      done
    done
  done
  # Shared memory's two-round allreduce at every size and a lone posted one sliced
  # (HVD_SHM_DIRECT_BYTES=0: what groups of many ranks with a CPU each get past a few KiB).
  worker worker_no_direct 3 HVD_SHM_DIRECT_BYTES=0 HVD_CPU_OPERATIONS=shm -- \
    allreduce lone lone_collectives fused join
  worker worker_single_copy 2 HVD_SHM_SINGLE_COPY_BYTES=1 HVD_SHM_SINGLE_COPY=always -- \
    allreduce grouped fused join
  if [ "$gpu" = 1 ]; then
    # The GPU path on the emulated GPU: NCCL between ranks with a device each, the staged path
    # of ranks sharing one, the hierarchy over two hosts, with stream work delayed. (A rank
    # that dies leaves its threads running: not a finding, so no dying rank here.)
    gpu_worker() {  # gpu_worker NAME DEVICES HVDRUN-ARGS...
      local name=$1 devices=$2
      shift 2
      run "$name" env HVD_GLOO_TIMEOUT_SECONDS=60 HVD_GPU_EMU_DEVICES="$devices" \
        HVD_GPU_EMU_DELAY_US=100 HVD_GPU_EMU_IN_PROGRESS=2 \
        LD_PRELOAD="$build/test/gpu_emulator/libhvd_gpu_emulator.so" "$build/cmd/hvdrun" "$@" \
        --start-timeout 120 "$build/test/gpu_e2e/hvd_gpu_worker" all
    }
    gpu_worker gpu_worker_np3_nccl 4 -np 3
    # NCCL allreduces completed on each group's completion thread (docs/gpu.md "Completion off
    # the cycle"): that thread against the cycle's, the handles and the group's end.
    HVD_GPU_ASYNC_COMPLETION=1 gpu_worker gpu_worker_np3_nccl_async 4 -np 3
    gpu_worker gpu_worker_np2_staged 1 -np 2
    gpu_worker gpu_worker_np4_hierarchical 2 -np 4 -H localhost:2,127.0.0.1:2 \
      --hierarchical-allreduce
  fi
fi
reports=$({
  find "$logs" -name 'tsan.*' -o -name 'asan.*' -o -name 'ubsan.*'
  grep -l -E "runtime error:|WARNING: ThreadSanitizer|ERROR: AddressSanitizer" "$logs"/*.out || true
} | sort)
if [ -n "$reports" ]; then
  echo "sanitizer reports:"
  echo "$reports"
  failed=1
fi
if [ "$failed" = 0 ]; then
  echo "sanitize $mode: $runs runs passed, no sanitizer reports"
else
  echo "sanitize $mode: FAILED ($runs runs; see above and $logs/)"
fi
exit "$failed"
