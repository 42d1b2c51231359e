#!/bin/bash
# One device call, prepared: build, the GPU tests, the GPU benchmarks, CUDA training, then the
# 16-core CPU rows of the performance issue with whatever time is left. Run on the lent GPU
# machine from the repository root with `.devkit` carried (docs/gpu-machine.md):
#
#   bash scripts/device/check.sh            # BUDGET=540 seconds for the whole script
#
# Every step runs under `timeout` with what is left of BUDGET, so the call returns inside the
# device tool's 10-minute limit with every log written so far. Logs go to $OUT (at most 8
# files come back): build.log, tests.log, gpu_bench.log, train.log, allreduce.md,
# allreduce_raw.tgz, ddp.log, e2e.log, summary.txt. STEPS picks steps (default "tests bench train cpu";
# also "ddp": bench/compare_ddp.sh at 8 ranks for DDP_MODELS, default "mlp convnet", each
# followed by a timeline summary of the same job; and
# "e2e": the C API's scenarios by value at E2E_NPS ranks, default "8 16", e2e.log;
# "direct": HVD_SHM_DIRECT_BYTES auto against 65536 at DIRECT_NPS, default "4 8 16", direct.log;
# "placement": the placement rule on many cores, hvd unbound against --bind-to core taking
# turns, allreduce at PLACEMENT_NPS (default "4 16") ranks and the convnet at 8, placement.log;
# "knobs": HVD_EAGER_ALLREDUCE_BYTES, HVD_SHM_SINGLE_COPY, dtypes and ops at 4-16 ranks, knobs.log;
# "threads": --worker-threads share (the default) against system (torch's own pool size), the
# convnet and the mlp at 8 ranks taking turns, threads.log;
# "nccl": 2 and 4 NCCL ranks on the one GPU against torch.distributed's NCCL, then ResNet-50
# training against plain PyTorch (1 rank) and DDP on NCCL (2 NCCL ranks), nccl_bench.log;
# "resnet": those ResNet-50 rows alone; "repeat": the tests that crashed intermittently, REPEAT
# times each, faults symbolized, repeat.log);
# Steps run in this file's order whatever the order in STEPS (the direct-size A/B before the
# table, which takes what time is left). SKIP_BUILD=1 reuses a build-gpu/ left by an earlier
# call on the same warm machine; NPS and SIDES pass to bench/compare_allreduce.sh (default
# "8 16" and "hvd torch vader").
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1
out=${OUT:-/tmp/hvd-device-out}
mkdir -p "$out"
start=$(date +%s)
budget=${BUDGET:-540}
steps=" ${STEPS:-tests bench train cpu} "
summary=$out/summary.txt
: >"$summary"
# A misspelt step would be skipped without a word, after a start and a build.
for s in $steps; do
  case " tests repeat bench train nccl resnet e2e direct cpu placement threads knobs ddp " in
    *" $s "*) ;;
    *) echo "check.sh: unknown step '$s' in STEPS" | tee -a "$summary" >&2; exit 2 ;;
  esac
done

left() { echo $((budget - ($(date +%s) - start))); }
note() { echo "[$(($(date +%s) - start)) s] $*" | tee -a "$summary"; }
# step NAME MIN_SECONDS LOG COMMAND...: run COMMAND under the time left (minus a 15 s reserve
# for packing up), appending to LOG; skipped when less than MIN_SECONDS are left. An hvdrun in
# COMMAND gets HVD_TIMEOUT 10 s short of that (hvdrun --timeout): a hang prints every rank's
# Python stacks into LOG before `timeout` would kill it with nothing said.
step() {
  local name=$1 min=$2 log=$3 t rc
  shift 3
  t=$(($(left) - 15))
  if [ "$t" -lt "$min" ]; then
    note "$name: skipped, ${t} s left"
    return 0
  fi
  echo "=== $name ($(date -u +%H:%M:%S) UTC, limit ${t} s): $*" >>"$log"
  HVD_TIMEOUT=$((t > 20 ? t - 10 : t)) timeout -k 5 "$t" "$@" >>"$log" 2>&1
  rc=$?
  note "$name: exit $rc"
  return 0
}
has() { case "$steps" in *" $1 "*) return 0 ;; esac; return 1; }
# timeline_summary DIR LOG: appends hvd-timeline's summary of DIR/t.json (a step's --timeline)
# to LOG, when the step wrote one, and removes DIR.
timeline_summary() {
  [ -s "$1/t.json" ] && build-gpu/timeline/hvd-timeline summary "$1/t.json" >>"$2" 2>&1
  rm -rf "$1"
}

if [ -n "${SKIP_BUILD:-}" ] && [ -e build-gpu/device-env.sh ]; then
  note "SKIP_BUILD: using the build-gpu/ already there"
else
  HVD_BUILD_SET=${HVD_BUILD_SET:-device} bash scripts/device/build.sh >"$out/build.log" 2>&1 || {
    note "build failed"
    tail -40 "$out/build.log"
    exit 1
  }
  note "built"
  head -14 "$out/build.log" | tee -a "$summary"
  # hvd's CUDA kernel (scale_kernels.cu) is built only when CMake found nvcc.
  grep -o "scale kernel=[A-Z]*" "$out/build.log" | head -1 | tee -a "$summary"
fi
# shellcheck disable=SC1091
source build-gpu/device-env.sh
bench=build-gpu/bench/hvd-bench

if has tests; then
  # python_unit: test_elastic.py (TorchState, the optimizer's restore) on this machine's torch.
  step "gpu ctest" 60 "$out/tests.log" \
    bash -c 'cd build-gpu && HVD_TIMEOUT=185 ctest -R "gpu_path|nccl_group|gpu_worker|python_gpu|^python_unit$" -E emulated --output-on-failure --timeout 200; cp Testing/Temporary/LastTest.log "$0/tests_full.log"' "$out"
  grep -E "tests passed|tests failed|Passed|Failed|Not Run|Skipped" "$out/tests.log" | tail -16 >>"$summary"
  # A failed op whose stream work did not finish (docs/gpu.md "Failures"): logged, not failed,
  # so looked for in every test's output (ctest's log of the run).
  n=$(grep -c "did not finish the work queued" "$out/tests_full.log" 2>/dev/null)
  echo "'did not finish the work queued' lines: ${n:-no full log}" >>"$summary"
  echo "hvd files left in /dev/shm: $(ls /dev/shm | grep -ci hvd)" >>"$summary"
fi

# "repeat": the GPU tests that crashed intermittently (SIGSEGV, 1 run in 2-3 on 2026-11-29),
# REPEAT times each (default 5; REPEAT_TESTS, default the two), with a SIGSEGV handler preloaded
# into every process that prints the faulting thread's frames (after Python's faulthandler,
# which hands the signal on); each frame `lib(+0xOFFSET)` is then named with addr2line into
# repeat.log and the summary.
if has repeat; then
  r=$out/repeat.log
  printf '%s\n' '#include <execinfo.h>' '#include <signal.h>' \
    'static void h(int s){void*b[64];int n=backtrace(b,64);backtrace_symbols_fd(b,n,2);signal(s,SIG_DFL);raise(s);}' \
    '__attribute__((constructor)) static void i(void){signal(SIGSEGV,h);}' >/tmp/hvd-segv.c
  gcc -shared -fPIC -o /tmp/hvd-segv.so /tmp/hvd-segv.c
  for t in ${REPEAT_TESTS:-gpu_worker_async_nccl_np3 python_gpu_hierarchical_np4}; do
    for i in $(seq "${REPEAT:-5}"); do
      # HVD_TIMEOUT: a hang prints the ranks' stacks at 120 s (the tests' own TIMEOUT, 300 or
      # 600 s, is what ctest applies, not --timeout) and leaves time for the other runs.
      step "$t run $i" 40 "$r" env LD_PRELOAD=/tmp/hvd-segv.so HVD_TIMEOUT=120 \
        bash -c "cd build-gpu && ctest -R '^$t\$' --output-on-failure"
    done
  done
  grep -E "tests passed|Segmentation|SIGSEGV" "$r" | sort | uniq -c >>"$summary"
  # The frames of a caught fault as printed ("lib.so(symbol+0x12)[0x...]" names the function
  # already), then each "/path/lib.so(+0x1234)" named with addr2line: function, file:line.
  grep -E "\([^)]*\+0x[0-9a-f]+\)\[0x" "$r" | head -60 >>"$summary"
  grep -oE "/[^ ()]+\(\+0x[0-9a-f]+\)" "$r" | sort -u | head -60 | while IFS= read -r f; do
    echo "$f: $(addr2line -f -C -i -e "${f%%(*}" "$(echo "$f" | grep -oE '0x[0-9a-f]+')" 2>&1 |
      paste -sd' ')"
  done | tee -a "$r" >>"$summary"
fi

if has bench; then
  g=$out/gpu_bench.log
  step "gpu_allreduce np1" 30 "$g" hvdrun -np 1 python3 bench/gpu_allreduce.py --iters 200
  step "hvd-bench cuda np1" 20 "$g" hvdrun -np 1 "$bench" --device cuda --sizes 4K,64K,1M,16M,64M
  step "gpu_allreduce np2" 40 "$g" hvdrun -np 2 python3 bench/gpu_allreduce.py
  step "gpu_allreduce np4" 40 "$g" hvdrun -np 4 python3 bench/gpu_allreduce.py
  step "adasum cuda np2" 20 "$g" hvdrun -np 2 "$bench" --device cuda --reduce-op adasum --sizes 1M,16M,64M
  step "sum cuda np2" 20 "$g" hvdrun -np 2 "$bench" --device cuda --sizes 1M,16M,64M
fi

if has train; then
  step "torch_train --cuda np2" 60 "$out/train.log" \
    hvdrun -np 2 python3 examples/torch_train.py --cuda --epochs 3 --min-accuracy 0.9
  # the same on 2 NCCL ranks (each its own host, so its own NCCL_HOSTID)
  step "torch_train --cuda 2 NCCL ranks" 60 "$out/train.log" \
    hvdrun -np 2 -H localhost:1,127.0.0.1:1 python3 examples/torch_train.py --cuda --epochs 3 \
    --min-accuracy 0.9
  grep -iE "accuracy" "$out/train.log" | tail -8 >>"$summary"
  # A plain DDP script's 2 NCCL ranks on the one GPU as one host: NCCL refuses them (Duplicate
  # GPU detected), and hvdrun's hint must say why (launcher/outcome/failure_hints.cc; ~15 s)
  step "plain DDP, 2 NCCL ranks on one GPU (fails, with a hint)" 30 "$out/train.log" \
    hvdrun -np 2 python3 -c 'import torch, torch.distributed as d
d.init_process_group("nccl"); t = torch.ones(4, device="cuda"); d.all_reduce(t); print(t)'
  echo "duplicate-GPU hints: $(grep -c "NCCL found two ranks on one GPU" "$out/train.log")" \
    >>"$summary"
fi

# NCCL ranks sharing the one GPU (each its own host): hvd's NCCL path against torch.distributed's
# NCCL backend on the same tensors, allreduce / allgather / reducescatter, 4 KiB-64 MiB.
if has nccl; then
  step "nccl ranks np2" 60 "$out/nccl_bench.log" \
    hvdrun -np 2 -H localhost:1,127.0.0.1:1 python3 bench/gpu_allreduce.py
  step "nccl ranks np4" 60 "$out/nccl_bench.log" \
    hvdrun -np 4 -H localhost:1,127.0.0.1:1,127.0.0.2:1,127.0.0.3:1 python3 bench/gpu_allreduce.py
  grep -E "torch/hvd|allreduce|allgather|reducescatter" "$out/nccl_bench.log" | tail -32 >>"$summary"
  # Where hvd's extra time per op goes at 4 ranks (negotiation, the NCCL call, the wait): the
  # timeline's per-activity summary of a short run of the two sizes furthest behind, and each
  # NCCL group's call statistics at debug level (how many calls NCCL answered ncclInProgress
  # and what settling them cost; the waits for the device), copied into summary.txt.
  tl4=$(mktemp -d)
  HVD_LOG_LEVEL=debug step "nccl ranks np4, timeline" 40 "$out/nccl_bench.log" \
    hvdrun -np 4 -H localhost:1,127.0.0.1:1,127.0.0.2:1,127.0.0.3:1 --timeline "$tl4/t.json" \
    python3 bench/gpu_allreduce.py --ops allreduce,reducescatter --sizes 4096,16777216 --iters 10
  timeline_summary "$tl4" "$out/nccl_bench.log"
  grep "NCCL group of" "$out/nccl_bench.log" | tail -8 >>"$summary"
fi
# "resnet" (also part of "nccl"): the ResNet-50 rows alone.
if has nccl || has resnet; then
  # ResNet-50 training: hvd against plain PyTorch at one rank, against DDP on NCCL at two.
  step "resnet50 np1" 60 "$out/nccl_bench.log" hvdrun -np 1 python3 bench/gpu_train.py
  step "resnet50 2 NCCL ranks" 90 "$out/nccl_bench.log" \
    hvdrun -np 2 -H localhost:1,127.0.0.1:1 python3 bench/gpu_train.py
  # The same with NCCL allreduces completed off the cycle (HVD_GPU_ASYNC_COMPLETION=1, off by
  # default until this row says it pays: docs/gpu.md "Completion off the cycle"), against DDP
  # in its own run; the bench prints the knob's value on its line.
  HVD_GPU_ASYNC_COMPLETION=1 step "resnet50 2 NCCL ranks, async completion" 90 \
    "$out/nccl_bench.log" hvdrun -np 2 -H localhost:1,127.0.0.1:1 python3 bench/gpu_train.py
  grep -E "hvd/peer" "$out/nccl_bench.log" | tail -6 >>"$summary"
  # Where the 2-rank gap to DDP goes: the same job, one short round, with hvd's timeline of both
  # ranks (its NCCL_ALLREDUCE count and sizes per step, against DDP's 25 MiB buckets; and the
  # gaps between NCCL calls that are queued on both ranks: what completing GPU ops off the cycle,
  # as Horovod's finalizer threads do, could gain, docs/timeline.md). The gaps go to summary.txt.
  tl=$(mktemp -d)
  step "resnet50 2 NCCL ranks, timeline" 45 "$out/nccl_bench.log" \
    hvdrun -np 2 -H localhost:1,127.0.0.1:1 --timeline "$tl/t.json" --timeline-all-ranks \
    python3 bench/gpu_train.py --rounds 1 --iters 2
  timeline_summary "$tl" "$out/nccl_bench.log"
  awk '/^gaps between collectives/ { n = 4 } n-- > 0' "$out/nccl_bench.log" | tail -4 >>"$summary"
fi

# The C API's scenarios checked by value (test/worker_e2e) at 8 and 16 ranks, each with a CPU of
# its own: shared memory with its default direct size there (a few KiB: most allreduces take
# the two-round and sliced paths), and hvd's TCP, about 10 s each on 16 cores; then the Python
# tests at 8 ranks.
if has e2e; then
  w=build-gpu/test/worker_e2e/hvd_e2e_worker
  for n in ${E2E_NPS:-8 16}; do
    step "e2e shm np$n" 30 "$out/e2e.log" hvdrun -np "$n" --start-timeout 60 "$w" all
    step "e2e tcp np$n" 30 "$out/e2e.log" env HVD_CPU_OPERATIONS=tcp \
      hvdrun -np "$n" --start-timeout 60 "$w" all
  done
  # hvd.torch / hvd.numpy and Horovod's own expectations at 8 ranks, under that image's torch.
  step "pytest np8" 60 "$out/e2e.log" env OMP_NUM_THREADS=1 \
    hvdrun -np 8 --start-timeout 60 python3 -m pytest -q test/python/test_torch.py \
    test/python/test_torch_optimizer.py \
    test/python/test_torch_sixteen_bit.py test/python/test_numpy.py test/python/test_horovod_parity.py \
    test/python/test_dlpack.py
  grep -E "FAILED|difference|job failed|^\[0\].*(passed|failed)" "$out/e2e.log" | head -20 >>"$summary"
fi

# The shared-memory direct size (HVD_SHM_DIRECT_BYTES, docs/shared-memory.md "Direct size"): the
# rule by group size (auto) against 64 KiB for every group (the rule before 2026-11-26), taking
# turns, at 4, 8 and 16 ranks, 4-64 KiB and 100 x 16 KiB one by one.
if has direct; then
  for n in ${DIRECT_NPS:-4 8 16}; do
    for d in auto 65536 auto 65536; do
      step "direct $d np$n" 20 "$out/direct.log" env HVD_SHM_DIRECT_BYTES=$d \
        hvdrun -np "$n" "$bench" --sizes 4K,8K,16K,32K,64K --rounds 5
      step "direct $d np$n many" 20 "$out/direct.log" env HVD_SHM_DIRECT_BYTES=$d \
        hvdrun -np "$n" "$bench" --many 100x16K --rounds 5
    done
  done
fi

if has cpu; then
  raw=$out/allreduce_raw
  step "compare_allreduce ${NPS:-8 16}" 60 "$out/allreduce.md" \
    env OUT="$raw" NPS="${NPS:-8 16}" SIDES="${SIDES:-hvd torch vader}" PYTHON=python3 \
    bench/compare_allreduce.sh build-gpu/cmd/hvdrun 3
  tar -C "$out" -czf "$out/allreduce_raw.tgz" allreduce_raw 2>/dev/null && rm -rf "$raw"
fi
# The placement rule (docs/cli.md, --bind-to): unbound is hvdrun's default because bound ranks
# trained slower on the 2-vCPU VM; on 16 CPUs it is unmeasured.
if has placement; then
  p=$out/placement.log
  for n in ${PLACEMENT_NPS:-4 16}; do
    for b in none core none core; do
      step "placement $b np$n" 20 "$p" hvdrun -np "$n" --bind-to "$b" "$bench" \
        --sizes 4K,64K,1M,16M --rounds 5
    done
  done
  # The convnet at 8 ranks, 2 torch threads each (as compare_ddp.sh runs it on 16 CPUs), hvd
  # alone: the placement is hvd's choice, DDP's numbers are not needed for it (each run ~15 s).
  for b in none core none core; do
    step "placement $b convnet 8" 40 "$p" env OMP_NUM_THREADS=2 hvdrun -np 8 --bind-to "$b" \
      python3 examples/torch_synthetic_benchmark.py --model convnet --batch-size 32 \
      --num-warmup-batches 5 --num-batches-per-iter 5 --num-iters 5
  done
  grep -E "^=== placement|Total img/sec" "$p" | grep -B1 "Total img" | grep -v "^--" >>"$summary"
fi
# The threads' default (docs/cli.md "Workers' threads"): each rank's share of the CPUs (2 of 16
# at 8 ranks) against torch's own pool size in every rank, as a user runs them (no
# OMP_NUM_THREADS); measured only on the 2-vCPU VM by forcing 8 threads per rank. threads.log
if has threads; then
  t=$out/threads.log
  for m in convnet mlp; do
    for w in share system share system; do
      step "threads $w $m 8" 40 "$t" env -u OMP_NUM_THREADS hvdrun -np 8 --worker-threads "$w" \
        python3 examples/torch_synthetic_benchmark.py --model "$m" --batch-size 32 \
        --num-warmup-batches 5 --num-batches-per-iter 5 --num-iters 5
    done
  done
  grep -E "^=== threads|Total img/sec" "$t" | grep -B1 "Total img" | grep -v "^--" >>"$summary"
fi
# Knobs whose defaults on many cores were set from the 2-vCPU VM: a lone 64 KiB allreduce /
# reducescatter posted with the negotiation (HVD_EAGER_ALLREDUCE_BYTES=131072) against the
# default, and the shared-memory single copy (HVD_SHM_SINGLE_COPY) always/never/auto, taking
# turns; then readings of the N-input reduction passes (bfloat16), Average against Sum and the
# balanced reduce-scatter rounds at 8 and 16 ranks. knobs.log
if has knobs; then
  k=$out/knobs.log
  for n in ${KNOB_NPS:-4 8 16}; do
    for e in default 131072 default 131072; do
      [ "$e" = default ] && ev=() || ev=(HVD_EAGER_ALLREDUCE_BYTES=$e)
      step "eager $e np$n" 15 "$k" env "${ev[@]}" hvdrun -np "$n" "$bench" --sizes 32K,64K,128K
      step "eager $e np$n rs" 15 "$k" env "${ev[@]}" hvdrun -np "$n" "$bench" --op reducescatter \
        --sizes 32K,64K,128K
    done
  done
  for n in 8 16; do
    step "bfloat16 np$n" 20 "$k" hvdrun -np "$n" "$bench" --dtype bfloat16 --sizes 64K,1M,16M
    for op in sum average; do
      step "allreduce $op np$n" 20 "$k" hvdrun -np "$n" "$bench" --reduce-op "$op" --sizes 1M,16M,64M
      step "reducescatter $op np$n" 20 "$k" hvdrun -np "$n" "$bench" --op reducescatter \
        --reduce-op "$op" --sizes 1M,16M,64M
    done
  done
  for n in 2 16; do
    for m in auto always never; do
      step "single copy $m np$n" 20 "$k" env HVD_SHM_SINGLE_COPY=$m hvdrun -np "$n" "$bench" \
        --sizes 4M,16M,64M --rounds 3
    done
  done
fi
if has ddp; then
  for m in ${DDP_MODELS:-mlp convnet}; do
    step "compare_ddp $m 8" 60 "$out/ddp.log" env ROUNDS=2 PYTHON=python3 \
      bench/compare_ddp.sh build-gpu/cmd/hvdrun "$m" 8
    # Where a step's time goes (the mlp's gap to its bound, docs/benchmarks-16-core.md): the
    # timeline's per-tensor summary of the same job (2 torch threads per rank, as compare_ddp).
    tl=$(mktemp -d)
    step "timeline $m 8" 40 "$out/ddp.log" env OMP_NUM_THREADS=2 \
      hvdrun -np 8 --timeline "$tl/t.json" python3 examples/torch_synthetic_benchmark.py \
      --model "$m" --batch-size 32 --num-warmup-batches 5 --num-batches-per-iter 5 --num-iters 5
    timeline_summary "$tl" "$out/ddp.log"
  done
fi
note "done"
cat "$summary"
