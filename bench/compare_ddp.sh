#!/usr/bin/env bash
# Training throughput, side by side in one run: examples/torch_synthetic_benchmark.py under
# `hvdrun -np N` against the same model under torch DDP (Gloo) launched by torchrun, plus one
# process alone for the scaling efficiency. Usage: bench/compare_ddp.sh [hvdrun] [model] [N]
#
# Every side gets the same torch intra-op threads per process: THREADS (default: the CPUs
# divided by N, at least 1) as OMP_NUM_THREADS. torchrun would set 1 for its ranks and leave
# hvd's at torch's default (every core on a many-core machine), which is no comparison.
# PYTHON: the interpreter with torch (default /usr/bin/python3, Debian's, where it exists).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
hvdrun=${1:-$(command -v hvdrun || echo "$root/build/cmd/hvdrun")}
model=${2:-convnet}
n=${3:-2}
if [ -n "${PYTHON:-}" ]; then
  py=$PYTHON
elif [ -x /usr/bin/python3 ]; then
  py=/usr/bin/python3
else
  py=python3
fi
threads=${THREADS:-$(($(nproc) / n))}
[ "$threads" -ge 1 ] || threads=1
export OMP_NUM_THREADS=$threads
build_python=$(cd "$(dirname "$hvdrun")/.." && pwd)/python
[ -d "$build_python/hvd" ] && export PYTHONPATH="$build_python${PYTHONPATH:+:$PYTHONPATH}"
args=(--model "$model" --batch-size 32 --num-warmup-batches 5 --num-batches-per-iter 5 --num-iters 5)
total() { grep -o 'Total img/sec on [0-9]* CPU(s): [0-9.]*' | awk '{print $NF}' | tail -1; }

single=$("$py" "$root/examples/torch_synthetic_benchmark.py" "${args[@]}" 2>&1 | total)
hvd=$("$hvdrun" -np "$n" "$py" "$root/examples/torch_synthetic_benchmark.py" "${args[@]}" 2>&1 | total)
ddp=$("$py" -m torch.distributed.run --standalone --nproc_per_node "$n" --monitor_interval 0.1 \
  --redirects 9:1 --tee 9:1 "$root/bench/ddp_synthetic.py" "${args[@]}" 2>&1 | total)
"$py" - "$model" "$n" "$threads" "$single" "$hvd" "$ddp" <<'PY'
import os
import sys
model, n, threads, single, hvd, ddp = (sys.argv[1], int(sys.argv[2]), int(sys.argv[3]),
                                       *map(float, sys.argv[4:]))
print(f"model {model}, {n} ranks, {threads} torch thread(s) per process, {os.cpu_count()} CPUs,"
      f" img/s total (scaling efficiency vs {n} x one process)")
print(f"  one process     {single:8.1f}")
print(f"  hvdrun          {hvd:8.1f}  ({hvd / (n * single):.0%})")
print(f"  torchrun + DDP  {ddp:8.1f}  ({ddp / (n * single):.0%})")
print(f"  hvd / DDP       {hvd / ddp:8.2f}")
PY
