#!/bin/sh
# compare_collectives.sh - broadcast, allgather, alltoall and reducescatter, hvd against its
# peers on this machine, one table (the allreduce has compare_allreduce.sh).
#
#   bench/compare_collectives.sh [HVDRUN] [ROUNDS]
#
# HVDRUN: the built hvdrun (default: build/cmd/hvdrun, or $HVD_BUILD_DIR/cmd/hvdrun); hvd-bench
# is taken from the same build folder. For each collective of OPS (default "broadcast
# allgather alltoall reducescatter") and each n of NPS (default "2 4") it runs, float32,
#   hvd          hvdrun -np N hvd-bench --op OP                (auto = shared memory here)
#   torch        $PYTHON bench/torch_gloo_bench.py --op OP     (torch.distributed Gloo)
#   MPI reused   mpirun ... --mca btl self,vader mpi_collective OP reused   (Open MPI, shared
#                memory; the output buffer allocated once: MPI's best case)
#   MPI fresh    the same with the output malloc'ed every op, as hvd and torch return new
#                tensors (a broadcast is in place: no such column)
# over 4 KiB .. 64 MiB (SIZES), with hvd-bench's meaning of bytes: the broadcast buffer, the
# gathered output of an allgather, the per-rank input of an alltoall (even splits) and of a
# reducescatter (sum). Time per op = median round, max over ranks; ratios peer/hvd (> 1: hvd
# is faster). The sides take turns size by size (a row's cells are seconds apart: this VM's
# speed moves for minutes at a time), REPEATS=R does it all R times and every cell is the
# median (a second table gives the ranges). PLACEMENT none (default) or core, as in
# compare_allreduce.sh. torch 1.13's Gloo has no reduce_scatter: its column says "n/a".
# Raw outputs stay in $OUT (default: a fresh folder under /tmp). About 8 minutes here.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
. "$here/compare_common.sh"
ops=${OPS:-broadcast allgather alltoall reducescatter}
sizes=${SIZES:-4096,65536,1048576,16777216,67108864}
for op in $ops; do
  case "$op" in broadcast|allgather|alltoall|reducescatter) ;;
    *) echo "OPS must list broadcast, allgather, alltoall or reducescatter, got '$op'" >&2; exit 2 ;;
  esac
done
case "$sizes" in ''|*[!0-9,]*) echo "SIZES must be bytes separated by commas, got '$sizes'" >&2; exit 2 ;; esac
out=${OUT:-$(mktemp -d /tmp/hvd-collectives.XXXXXX)}
mkdir -p "$out"

mpi="$out/mpi_collective"
mpicc -O2 -o "$mpi" "$here/mpi_collective.c"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -n), $cpus CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), placement $placement" | tee "$out/header.txt"

# run_side SIDE OP N BYTES: one side's run of one size into $out/SIDE_OP_N_REP_BYTES.txt.
run_side() {
  side=$1 op=$2 n=$3 bytes=$4
  file="$out/${side}_${op}_${n}_${rep}_${bytes}.txt"
  case "$side" in
    hvd)
      "$hvdrun" -np "$n" --bind-to "$placement" "$bench" --op "$op" --sizes "$bytes" --rounds "$rounds" > "$file" ;;
    torch)
      "$PYTHON" "$here/torch_gloo_bench.py" -n "$n" --op "$op" --bind "$placement" --sizes "$bytes" --rounds "$rounds" > "$file" ;;
    reused|fresh)
      [ "$op" = broadcast ] && [ "$side" = fresh ] && return 0
      # shellcheck disable=SC2046
      mpirun --allow-run-as-root --oversubscribe $(mpi_bind "$n") --mca pml ob1 --mca btl self,vader -np "$n" "$mpi" "$op" "$side" "$bytes" "$rounds" > "$file" ;;
  esac
}

rep=1
while [ "$rep" -le "$repeats" ]; do
  for op in $ops; do
    for n in $nps; do
      for bytes in $(echo "$sizes" | tr , ' '); do
        echo "$op n=$n, run $rep: $bytes" >&2
        for side in hvd torch reused fresh; do run_side "$side" "$op" "$n" "$bytes"; done
      done
    done
  done
  rep=$((rep + 1))
done
note_passes

"$PYTHON" - "$out" "$here" "$repeats" "$sizes" "$ops" "$nps" <<'PY'
import glob
import statistics
import sys
out, repeats = sys.argv[1], int(sys.argv[3])
sys.path.insert(0, sys.argv[2])
sizes = [int(s) for s in sys.argv[4].split(",")]
ops, nps = sys.argv[5].split(), [int(n) for n in sys.argv[6].split()]
from allreduce_results import fmt_us, hvd, label, peer, print_ranges, ratio

SIDES = ("hvd", "torch", "reused", "fresh")


def cell(results, k):
    vals = [r[k] for r in results if k in r]
    if not vals:
        return None, "-"
    if any(v is None for v in vals):
        return None, "n/a"
    value = statistics.median(vals)
    return value, fmt_us(value)


results = {}
for op in ops:
    for n in nps:
        for x in SIDES:
            parse = hvd if x == "hvd" else peer
            results[x, op, n] = [
                {k: v for f in sorted(glob.glob(f"{out}/{x}_{op}_{n}_{r}_*.txt"))
                 for k, v in parse(f).items()}
                for r in range(1, repeats + 1)]
print("| op | n | size | hvd | torch gloo | MPI vader, reused output | MPI vader, fresh output |"
      " torch/hvd | MPI reused/hvd | MPI fresh/hvd |")
print("|---|---|---|---|---|---|---|---|---|---|")
for op in ops:
    for n in nps:
        for k in sizes:
            cells = [cell(results[x, op, n], k) for x in SIDES]
            h = cells[0][0]
            print(f"| {op} | {n} | {label(k)} | " + " | ".join(c[1] for c in cells) + " | " +
                  " | ".join(ratio(c[0], h) for c in cells[1:]) + " |")
print(open(f"{out}/header.txt").read().strip())
if repeats > 1:
    print_ranges(["op", "n", "size", "hvd", "torch gloo", "MPI reused", "MPI fresh"],
                 (([op, n, label(k)],
                   [[r for r in results[x, op, n] if r.get(k) is not None] for x in SIDES], k)
                  for op in ops for n in nps for k in sizes))
print(f"\nraw outputs: {out}")
PY
