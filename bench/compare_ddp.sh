#!/usr/bin/env bash
# Training throughput, side by side in one run: examples/torch_synthetic_benchmark.py under
# `hvdrun -np N` against the same model under torch DDP (Gloo) launched by torchrun, plus one
# process alone for the scaling efficiency and N processes alone at once for the bound.
# Usage: bench/compare_ddp.sh [hvdrun] [model] [N]
#
# ROUNDS (default 3) rounds, each: N processes alone at once, then hvdrun, torchrun + DDP, and
# torchrun + DDP with hvdrun's allocator settings (hvdrun first in even rounds, last in odd ones); the medians are compared (this VM's speed moves
# by +-20 % from minute to minute, so one pair of runs settles nothing) and every round's numbers
# are printed.
#
# hvdrun gives its workers glibc allocator settings (`--worker-malloc tuned`, the default;
# launcher/worker/worker_malloc.h) that torchrun does not: a convnet's step re-faulted its
# temporaries' pages every step without them. So DDP runs twice per round: as torchrun runs it
# (what a user gets: "hvd / DDP"), and with the same MALLOC_* variables hvdrun sets, read from
# its --dry-run ("hvd / DDP, same allocator": the libraries alone). The processes alone (one
# process, the bound) run with those variables too, so the bound is hvd's.
# HVDRUN_ARGS="--worker-malloc system" compares with glibc's defaults everywhere.
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
# A signal runs the EXIT trap too (sh runs it only on exit, not when a signal kills it).
trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 143' TERM
# The allocator variables hvdrun adds for its workers (none under --worker-malloc system).
# shellcheck disable=SC2086
malloc=$("$hvdrun" --dry-run -np 1 ${HVDRUN_ARGS:-} true | sed -n 's/^ *\(MALLOC_[A-Z_]*=[0-9]*\)$/\1/p' | sort -u | paste -sd' ')
read -r -a alloc <<< "env $malloc"

single=$("${alloc[@]}" "${bench[@]}" 2>&1 | total)
results=()
for ((r = 0; r < rounds; ++r)); do
  for ((i = 0; i < n; ++i)); do "${alloc[@]}" "${bench[@]}" > "$scratch/$i.txt" 2>&1 & done
  wait
  alone=$(for ((i = 0; i < n; ++i)); do total < "$scratch/$i.txt"; done | paste -sd,)
  ddp_cmd=("$py" -m torch.distributed.run --standalone --nproc_per_node "$n" --monitor_interval 0.1
    --redirects 9:1 --tee 9:1 "$root/bench/ddp_synthetic.py" "${args[@]}")
  # The sides take turns going first (this VM's speed drifts within a round; until 2026-12-01
  # hvd always ran first).
  if ((r % 2 == 0)); then
    # shellcheck disable=SC2086
    hvd=$("$hvdrun" -np "$n" ${HVDRUN_ARGS:-} "${bench[@]}" 2>&1 | total)
    ddp=$("${ddp_cmd[@]}" 2>&1 | total)
    ddp_same=$("${alloc[@]}" "${ddp_cmd[@]}" 2>&1 | total)
  else
    ddp=$("${ddp_cmd[@]}" 2>&1 | total)
    ddp_same=$("${alloc[@]}" "${ddp_cmd[@]}" 2>&1 | total)
    # shellcheck disable=SC2086
    hvd=$("$hvdrun" -np "$n" ${HVDRUN_ARGS:-} "${bench[@]}" 2>&1 | total)
  fi
  results+=("$alone/$hvd/$ddp/$ddp_same")
done
MALLOC="$malloc" "$py" - "$model" "$n" "$threads" "$single" "${results[@]}" <<'PY'
import os
import statistics
import sys
model, n, threads, single = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
rounds = []
for arg in sys.argv[5:]:
    alone, hvd, ddp, same = arg.split("/")
    alone = [float(a) for a in alone.split(",")]
    rounds.append((sum(alone), n * min(alone), float(hvd), float(ddp), float(same)))
med = [statistics.median(r[k] for r in rounds) for k in range(5)]
eff = lambda v: f"{v / (n * single):.0%}"
malloc = os.environ.get("MALLOC") or "none"
print(f"model {model}, {n} ranks, {threads} torch thread(s) per process, {os.cpu_count()} CPUs,"
      f" hvdrun args '{os.environ.get('HVDRUN_ARGS', '')}', hvdrun's allocator variables: {malloc},"
      f" load {os.getloadavg()[0]:.1f}; img/s total, median of {len(rounds)} rounds (scaling"
      f" efficiency vs {n} x one process)")
print(f"  one process            {single:8.1f}  (hvdrun's allocator variables, as below but DDP)")
print(f"  {n} alone at once        {med[0]:8.1f}  ({eff(med[0])})")
print(f"  bound                  {med[1]:8.1f}  ({eff(med[1])}; {n} x the slowest alone)")
print(f"  hvdrun                 {med[2]:8.1f}  ({eff(med[2])})")
print(f"  torchrun + DDP         {med[3]:8.1f}  ({eff(med[3])}; as torchrun runs it)")
print(f"  DDP, same allocator    {med[4]:8.1f}  ({eff(med[4])}; with hvdrun's allocator variables)")
print(f"  hvd / DDP              {med[2] / med[3]:8.2f}  (what a user gets)")
print(f"  hvd / DDP same alloc.  {med[2] / med[4]:8.2f}  (the libraries alone; bound / DDP same"
      f" {med[1] / med[4]:.2f}: the most any library could reach here)")
for i, (alone, bound, hvd, ddp, same) in enumerate(rounds):
    print(f"  round {i + 1}: alone {alone:.1f}, bound {bound:.1f}, hvd {hvd:.1f}, DDP {ddp:.1f},"
          f" DDP same alloc. {same:.1f}, hvd / DDP {hvd / ddp:.2f}, hvd / DDP same"
          f" {hvd / same:.2f}, bound / DDP same {bound / same:.2f}")
PY
