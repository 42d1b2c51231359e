#!/bin/sh
# compare_allreduce_hosts.sh - float32 SUM allreduce across hosts: hvd vs Open MPI over the same
# network, one table. The hosts are the netns test cluster (scripts/cluster/up.sh 4: four
# network namespaces joined by veths through a bridge), brought up and torn down here under
# /tmp/hvd-global.lock (the cluster is machine-wide).
#
#   bench/compare_allreduce_hosts.sh [HVDRUN] [ROUNDS]
#
# REPEATS=R (default 1) runs the whole pass R times, so each side's runs alternate with the
# others' over the whole benchmark (this VM's speed moves for minutes at a time); every cell is
# then the median of the R runs and a second table gives their ranges.
#
# For 2 hosts x 1 rank, 2 hosts x 2 ranks and 4 hosts x 1 rank (LAYOUTS="2x4 4x4" etc. for
# others, hosts_common.sh), every side unbound, same hosts:
#   hvd        hvdrun -H ... hvd-bench (auto: hvd's TCP across hosts; on 2x2 the hierarchy,
#              shared memory within a host and TCP between; 4x1: TCP, recursive doubling for
#              the small sizes, as MPI)
#   hvd flat   the same with --no-hierarchical-allreduce, where hosts have several ranks (2x2:
#              one TCP group of 4)
#   MPI tcp    mpirun -H ... --mca btl self,tcp, TCP pinned to the cluster network. Open MPI's
#              shared-memory BTL cannot run here (the namespace hosts share /dev/shm and one
#              kernel host name, so vader's segments collide), so within a host MPI uses TCP
#              over loopback: on 2x2 this favours hvd; 2x1 is network only, like for like.
#              With more ranks than this machine has CPUs (2x2 and 4x1 here) MPI yields
#              (hosts_common.sh, mpi_yield).
# Prints time per op (median round, max over ranks) and MPI/hvd ratios (> 1: hvd faster).
#
# TCP congestion control: hvd's data connections replace a BBR default by cubic
# (HVD_TCP_CONGESTION=auto, docs/transports.md); Open MPI keeps the kernel's default. TCP_CC=cubic (any
# name the kernel has) makes it the hosts' default for the run, so both sides use it (the
# name is added to net.ipv4.tcp_allowed_congestion_control meanwhile and that list restored;
# hosts_common.sh).
#
# Link speed: the veths move data at memory speed, so sending the same bytes twice costs little
# here. RATE=1gbit (any tc rate) shapes every host's link in both directions with a token
# bucket (tc tbf, burst RATE_BURST, default 32kb) for the run, as a real network would: the
# rows then show what the algorithms send across hosts, not only how many rounds they take.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
hvdrun=${1:-${HVD_BUILD_DIR:-$root/build}/cmd/hvdrun}
rounds=${2:-5}
repeats=${REPEATS:-1}
case "$repeats" in ''|*[!0-9]*|0) echo "REPEATS must be a positive count, got '$repeats'" >&2; exit 2 ;; esac
case "$rounds" in ''|*[!0-9]*|0) echo "ROUNDS must be a positive count, got '$rounds'" >&2; exit 2 ;; esac
build=$(cd "$(dirname "$hvdrun")/.." && pwd)
bench="$build/bench/hvd-bench"
sizes=4096,65536,1048576,16777216,67108864
many=100x16384
out=${OUT:-$(mktemp -d /tmp/hvd-compare-hosts.XXXXXX)}
mkdir -p "$out"
[ -x "$hvdrun" ] || { echo "no hvdrun at $hvdrun" >&2; exit 2; }
[ -x "$bench" ] || { echo "no hvd-bench at $bench" >&2; exit 2; }
. "$here/hosts_common.sh"

mpi="$out/mpi_allreduce"
mpicc -O2 -o "$mpi" "$here/mpi_allreduce.c"

run_all() {
  rep=$1
  for layout in $layouts; do
    layout_fields "$layout"
    echo "$key ($hosts), run $rep: hvd" >&2
    # shellcheck disable=SC2086
    "$hvdrun" -np "$n" -H "$hosts" $ssh_args "$bench" --sizes "$sizes" --rounds "$rounds" > "$out/hvd_${key}_$rep.txt"
    "$hvdrun" -np "$n" -H "$hosts" $ssh_args "$bench" --many "$many" --rounds "$rounds" > "$out/hvd_many_${key}_$rep.txt"
    if [ "${key#*x}" != 1 ]; then
      echo "$key: hvd flat" >&2
      "$hvdrun" -np "$n" -H "$hosts" $ssh_args --no-hierarchical-allreduce "$bench" --sizes "$sizes" --rounds "$rounds" > "$out/flat_${key}_$rep.txt"
      "$hvdrun" -np "$n" -H "$hosts" $ssh_args --no-hierarchical-allreduce "$bench" --many "$many" --rounds "$rounds" > "$out/flat_many_${key}_$rep.txt"
    fi
    echo "$key: MPI" >&2
    mpi_side "$n" "$hosts" "$mpi" "$rounds" "$sizes" > "$out/mpi_${key}_$rep.txt"
    mpi_side "$n" "$hosts" "$mpi" "$rounds" many "$many" > "$out/mpi_many_${key}_$rep.txt"
  done
}

with_cluster run_passes "$repeats" ""

# shellcheck disable=SC2046
/usr/bin/python3 - "$out" "$here" "$repeats" $(for l in $layouts; do echo "${l%%/*}"; done) <<'PY'
import sys
out, repeats = sys.argv[1], int(sys.argv[3])
sys.path.insert(0, sys.argv[2])
from allreduce_results import MANY, SIZES, fmt_us, hvd, label, median_of, peer, print_ranges, ratio

runs = range(1, repeats + 1)
rows = []
for key in sys.argv[4:]:
    layout = key.replace("x", " x ")
    hs = [hvd(f"{out}/hvd_{key}_{r}.txt", f"{out}/hvd_many_{key}_{r}.txt") for r in runs]
    fs = [hvd(f"{out}/flat_{key}_{r}.txt", f"{out}/flat_many_{key}_{r}.txt") for r in runs]
    ms = [{**peer(f"{out}/mpi_{key}_{r}.txt"), **peer(f"{out}/mpi_many_{key}_{r}.txt")} for r in runs]
    rows.append((layout, hs, fs, ms))

print("| hosts x ranks | size | hvd | hvd flat TCP | MPI tcp | MPI/hvd | MPI/hvd flat |")
print("|---|---|---|---|---|---|---|")
for layout, hs, fs, ms in rows:
    h, f, m = median_of(hs), median_of(fs), median_of(ms)
    for k in SIZES + MANY:
        print(f"| {layout} | {label(k)} | {fmt_us(h.get(k))} | {fmt_us(f.get(k))} | "
              f"{fmt_us(m.get(k))} | {ratio(m.get(k), h.get(k))} | {ratio(m.get(k), f.get(k))} |")
print(open(f"{out}/header.txt").read().strip())
if repeats > 1:
    print_ranges(["hosts x ranks", "size", "hvd", "hvd flat TCP", "MPI tcp"],
                 (([layout, label(k)], [hs, fs, ms], k)
                  for layout, hs, fs, ms in rows for k in SIZES + MANY))
print(f"\nraw outputs: {out}")
PY
