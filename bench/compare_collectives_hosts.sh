#!/bin/sh
# compare_collectives_hosts.sh - broadcast, allgather, alltoall and reducescatter across hosts:
# hvd vs Open MPI over the same network, one table (the allreduce has
# compare_allreduce_hosts.sh, whose cluster, sides and settings this shares: hosts_common.sh).
#
#   bench/compare_collectives_hosts.sh [HVDRUN] [ROUNDS]
#
# For 2 hosts x 1 rank, 2 hosts x 2 ranks and 4 hosts x 1 rank of the netns test cluster (or
# LAYOUTS, e.g. "2x4 4x4": hosts_common.sh), each
# collective of OPS (default "broadcast allgather alltoall reducescatter") over SIZES (default
# 4 KiB, 16 KiB, 64 KiB, 1 MiB; hvd-bench's meaning of bytes, as compare_collectives.sh), float32:
#   hvd        hvdrun -H ... hvd-bench --op OP (auto: hvd's TCP across hosts; on 2x2 the
#              hierarchy, whose broadcast and alltoall are the flat TCP group's)
#   MPI tcp    mpirun -H ... --mca btl self,tcp mpi_collective OP reused (the output allocated
#              once: MPI's best case), TCP pinned to the cluster network, yielding when the
#              layout has more ranks than this machine has CPUs (compare_allreduce_hosts.sh)
# Time per op = median round, max over ranks; MPI/hvd > 1: hvd faster. A small broadcast is
# one-way: MPI's successive broadcasts overlap (the root starts the next as soon as its sends
# are out), while every hvd op negotiates first, a round trip. REPEATS=R runs the whole pass R
# times, the sides alternating op by op; every cell is then the median (a second table gives
# the ranges). TCP_CC and RATE as in compare_allreduce_hosts.sh. Raw outputs stay in $OUT.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
hvdrun=${1:-${HVD_BUILD_DIR:-$root/build}/cmd/hvdrun}
rounds=${2:-5}
repeats=${REPEATS:-1}
case "$repeats" in ''|*[!0-9]*|0) echo "REPEATS must be a positive count, got '$repeats'" >&2; exit 2 ;; esac
case "$rounds" in ''|*[!0-9]*|0) echo "ROUNDS must be a positive count, got '$rounds'" >&2; exit 2 ;; esac
ops=${OPS:-broadcast allgather alltoall reducescatter}
sizes=${SIZES:-4096,16384,65536,1048576}
for op in $ops; do
  case "$op" in broadcast|allgather|alltoall|reducescatter) ;;
    *) echo "OPS must list broadcast, allgather, alltoall or reducescatter, got '$op'" >&2; exit 2 ;;
  esac
done
case "$sizes" in ''|*[!0-9,]*) echo "SIZES must be bytes separated by commas, got '$sizes'" >&2; exit 2 ;; esac
case "$repeats" in ''|*[!0-9]*|0) echo "REPEATS must be a positive count, got '$repeats'" >&2; exit 2 ;; esac
[ -x "$hvdrun" ] || { echo "no hvdrun at $hvdrun" >&2; exit 2; }
build=$(cd "$(dirname "$hvdrun")/.." && pwd)
bench="$build/bench/hvd-bench"
[ -x "$bench" ] || { echo "no hvd-bench at $bench" >&2; exit 2; }
out=${OUT:-$(mktemp -d /tmp/hvd-collectives-hosts.XXXXXX)}
mkdir -p "$out"
. "$here/hosts_common.sh"

mpi="$out/mpi_collective"
mpicc -O2 -o "$mpi" "$here/mpi_collective.c"

run_all() {
  rep=$1
  for layout in $layouts; do
    layout_fields "$layout"
    for op in $ops; do
      echo "$key ($hosts) $op, run $rep" >&2
      # shellcheck disable=SC2086
      "$hvdrun" -np "$n" -H "$hosts" $ssh_args "$bench" --op "$op" --sizes "$sizes" --rounds "$rounds" > "$out/hvd_${key}_${op}_$rep.txt"
      mpi_side "$n" "$hosts" "$mpi" "$op" reused "$sizes" "$rounds" > "$out/mpi_${key}_${op}_$rep.txt"
    done
  done
}

with_cluster run_passes "$repeats" "op by op"

# shellcheck disable=SC2046
/usr/bin/python3 - "$out" "$here" "$repeats" "$sizes" "$ops" $(for l in $layouts; do echo "${l%%/*}"; done) <<'PY'
import sys
out, repeats = sys.argv[1], int(sys.argv[3])
sys.path.insert(0, sys.argv[2])
sizes = [int(s) for s in sys.argv[4].split(",")]
ops = sys.argv[5].split()
from allreduce_results import fmt_us, hvd, label, median_of, peer, print_ranges, ratio

runs = range(1, repeats + 1)
rows = []
for op in ops:
    for key in sys.argv[6:]:
        layout = key.replace("x", " x ")
        hs = [hvd(f"{out}/hvd_{key}_{op}_{r}.txt") for r in runs]
        ms = [peer(f"{out}/mpi_{key}_{op}_{r}.txt") for r in runs]
        rows.append((op, layout, hs, ms))

print("| op | hosts x ranks | size | hvd | MPI tcp | MPI/hvd |")
print("|---|---|---|---|---|---|")
for op, layout, hs, ms in rows:
    h, m = median_of(hs), median_of(ms)
    for k in sizes:
        print(f"| {op} | {layout} | {label(k)} | {fmt_us(h.get(k))} | {fmt_us(m.get(k))} | "
              f"{ratio(m.get(k), h.get(k))} |")
print(open(f"{out}/header.txt").read().strip())
if repeats > 1:
    print_ranges(["op", "hosts x ranks", "size", "hvd", "MPI tcp"],
                 (([op, layout, label(k)], [hs, ms], k) for op, layout, hs, ms in rows
                  for k in sizes))
print(f"\nraw outputs: {out}")
PY
