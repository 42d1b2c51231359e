#!/usr/bin/env bash
# Training throughput, side by side in one run: examples/torch_synthetic_benchmark.py under
# `hvdrun -np N` against the same model under torch DDP (Gloo) launched by torchrun, plus one
# process alone for the scaling efficiency and N processes alone at once for the bound.
# Usage: bench/compare_ddp.sh [hvdrun] [model] [N]
#
# ROUNDS (default 3) rounds, each: N processes alone at once, hvdrun, torchrun + DDP; the medians
# are compared (this VM's speed moves by +-20 % from minute to minute, so one pair of runs
# settles nothing) and every round's numbers are printed.
#
# The bound: N independent processes at once (no communication at all) give what the machine
# gives N ranks; a synchronous step goes at the slowest rank's pace, so N x the slowest of them
# is the most any data-parallel library can reach (bound / DDP is the most it can beat DDP by).
#
# Every side gets the same torch intra-op threads per process: THREADS (default: the CPUs
# divided by N, at least 1) as OMP_NUM_THREADS. torchrun would set 1 for its ranks and leave
# hvd's at torch's default (every core on a many-core machine), which is no comparison.
# PYTHON: the interpreter with torch (default /usr/bin/python3, Debian's, where it exists).
# HVDRUN_ARGS: extra hvdrun flags (word-split), e.g. "--bind-to core" to measure the placement
# rule: the other sides stay unbound, so run it with and without and compare hvd's rows.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
hvdrun=${1:-$(command -v hvdrun || echo "$root/build/cmd/hvdrun")}
model=${2:-convnet}
n=${3:-2}
rounds=${ROUNDS:-3}
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
bench=("$py" "$root/examples/torch_synthetic_benchmark.py" "${args[@]}")
total() { grep -o 'Total img/sec on [0-9]* CPU(s): [0-9.]*' | awk '{print $NF}' | tail -1; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

single=$("${bench[@]}" 2>&1 | total)
results=()
for ((r = 0; r < rounds; ++r)); do
  for ((i = 0; i < n; ++i)); do "${bench[@]}" > "$scratch/$i.txt" 2>&1 & done
  wait
  alone=$(for ((i = 0; i < n; ++i)); do total < "$scratch/$i.txt"; done | paste -sd,)
  # shellcheck disable=SC2086
  hvd=$("$hvdrun" -np "$n" ${HVDRUN_ARGS:-} "${bench[@]}" 2>&1 | total)
  ddp=$("$py" -m torch.distributed.run --standalone --nproc_per_node "$n" --monitor_interval 0.1 \
    --redirects 9:1 --tee 9:1 "$root/bench/ddp_synthetic.py" "${args[@]}" 2>&1 | total)
  results+=("$alone/$hvd/$ddp")
done
"$py" - "$model" "$n" "$threads" "$single" "${results[@]}" <<'PY'
import os
import statistics
import sys
model, n, threads, single = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
rounds = []
for arg in sys.argv[5:]:
    alone, hvd, ddp = arg.split("/")
    alone = [float(a) for a in alone.split(",")]
    rounds.append((sum(alone), n * min(alone), float(hvd), float(ddp)))
med = [statistics.median(r[k] for r in rounds) for k in range(4)]
eff = lambda v: f"{v / (n * single):.0%}"
print(f"model {model}, {n} ranks, {threads} torch thread(s) per process, {os.cpu_count()} CPUs,"
      f" hvdrun args '{os.environ.get('HVDRUN_ARGS', '')}',"
      f" load {os.getloadavg()[0]:.1f}; img/s total, median of {len(rounds)} rounds (scaling"
      f" efficiency vs {n} x one process)")
print(f"  one process          {single:8.1f}")
print(f"  {n} alone at once      {med[0]:8.1f}  ({eff(med[0])})")
print(f"  bound                {med[1]:8.1f}  ({eff(med[1])}; {n} x the slowest alone)")
print(f"  hvdrun               {med[2]:8.1f}  ({eff(med[2])})")
print(f"  torchrun + DDP       {med[3]:8.1f}  ({eff(med[3])})")
print(f"  hvd / DDP            {med[2] / med[3]:8.2f}  (bound / DDP {med[1] / med[3]:.2f}: the"
      " most any library could reach here)")
for i, (alone, bound, hvd, ddp) in enumerate(rounds):
    print(f"  round {i + 1}: alone {alone:.1f}, bound {bound:.1f}, hvd {hvd:.1f}, DDP {ddp:.1f},"
          f" hvd / DDP {hvd / ddp:.2f}, bound / DDP {bound / ddp:.2f}")
PY
