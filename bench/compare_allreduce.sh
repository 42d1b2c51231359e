#!/bin/sh
# compare_allreduce.sh - float32 SUM allreduce, hvd vs its peers on this machine, one table.
#
#   bench/compare_allreduce.sh [HVDRUN] [ROUNDS]
#
# HVDRUN: the built hvdrun (default: build/cmd/hvdrun, or $HVD_BUILD_DIR/cmd/hvdrun); hvd-bench
# is taken from the same build folder (bench/hvd-bench). For each n of NPS (default "2 4"; the
# 16-core GPU machine: NPS="2 4 8 16", docs/gpu-machine.md) it runs
#   hvd        hvdrun -np N hvd-bench --op allreduce            (auto = shared memory here)
#   hvd tcp    HVD_CPU_OPERATIONS=tcp hvdrun ...                (hvd's TCP transport, used across hosts)
#   hvd gloo   HVD_CPU_OPERATIONS=gloo hvdrun ...               (libgloo, Horovod's transport)
#   torch      $PYTHON bench/torch_gloo_bench.py            (torch.distributed Gloo)
#   MPI vader  mpirun ... --mca pml ob1 --mca btl self,vader    (shared memory)
#   MPI tcp    mpirun ... --mca btl self,tcp --mca btl_tcp_if_include lo
# over 4 KiB .. 64 MiB, then the 100 x 16 KiB fusion case, and prints time per op (median
# round, max over ranks) and the peer/hvd ratios (> 1: hvd is faster). The sides take turns
# size by size (every side runs one size, then every side the next), so the cells of a row are
# seconds apart: this VM's speed moves for minutes at a time (docs/benchmarks.md). Raw outputs
# stay in $OUT (default: a fresh folder under /tmp). Takes about 8 minutes for n = 2 and 4 here.
# SIDES (default "hvd hvdtcp hvdgloo torch vader tcp") picks the columns to run (a skipped
# one prints "-"); PYTHON is the interpreter with torch (default /usr/bin/python3, Debian's,
# where it exists, else python3). REPEATS=R (default 1) does it all R times; every cell is
# then the median of the R runs, and a second table gives their ranges.
#
# Every side runs with the same placement, PLACEMENT (default none, each launcher's default):
#   none  hvdrun --bind-to none, mpirun --bind-to none, torch ranks unbound
#   core  local rank r of n bound to CPUs [r*C/n, (r+1)*C/n) by each launcher: hvdrun
#         --bind-to core, mpirun --bind-to core --map-by core, torch ranks sched_setaffinity;
#         with more ranks than CPUs nobody binds (as hvdrun's rule).
# The header line records the date, the machine, the load, the placement and the kernel's TCP
# congestion control. hvd's TCP data connections replace a BBR default by cubic
# (HVD_TCP_CONGESTION=auto, docs/transports.md); torch's Gloo and Open MPI keep the default.
# TCP_CC=cubic (any name the kernel has) makes it this machine's default for the run, so every
# side uses it (the previous default and allowed list are restored at exit).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
. "$here/compare_common.sh"
sides=" ${SIDES:-hvd hvdtcp hvdgloo torch vader tcp} "
# has SIDE: whether SIDES names it.
has() { case "$sides" in *" $1 "*) return 0 ;; esac; return 1; }
sizes=4096,65536,1048576,16777216,67108864
many=100x16384
out=${OUT:-$(mktemp -d /tmp/hvd-compare.XXXXXX)}
mkdir -p "$out"

mpi="$out/mpi_allreduce"
if has vader || has tcp; then mpicc -O2 -o "$mpi" "$here/mpi_allreduce.c"; fi
if [ -n "${TCP_CC:-}" ]; then
  cc_was=$(cat /proc/sys/net/ipv4/tcp_congestion_control)
  allowed_was=$(cat /proc/sys/net/ipv4/tcp_allowed_congestion_control)
  trap 'sysctl -q -w net.ipv4.tcp_congestion_control="$cc_was"; sysctl -q -w net.ipv4.tcp_allowed_congestion_control="$allowed_was"' EXIT
  # A signal runs the EXIT trap too (sh runs it only on exit, not when a signal kills it).
  trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 143' TERM
  sysctl -q -w net.ipv4.tcp_congestion_control="$TCP_CC"
fi
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -n), $cpus CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), placement $placement, TCP congestion control $(cat /proc/sys/net/ipv4/tcp_congestion_control)" | tee "$out/header.txt"
vader="--mca btl self,vader"
tcp="--mca btl self,tcp --mca btl_tcp_if_include lo"

# run_side SIDE N TAG: one side's run of one size (TAG: bytes, or "many" for the 100 x 16 KiB
# case) with N ranks, into $out/SIDE_N_REP_TAG.txt.
run_side() {
  side=$1 n=$2 tag=$3
  has "$side" || return 0
  file="$out/${side}_${n}_${rep}_$tag.txt"
  if [ "$tag" = many ]; then what="--many $many"; else what="--sizes $tag"; fi
  case "$side" in
    hvd|hvdtcp|hvdgloo)
      case "$side" in
        hvd) ops=auto ;;
        hvdtcp) ops=tcp ;;
        hvdgloo) ops=gloo ;;
      esac
      # shellcheck disable=SC2086
      HVD_CPU_OPERATIONS=$ops "$hvdrun" -np "$n" --bind-to "$placement" "$bench" --op allreduce $what --rounds "$rounds" > "$file" ;;
    torch)
      # shellcheck disable=SC2086
      "$PYTHON" "$here/torch_gloo_bench.py" -n "$n" --bind "$placement" $what --rounds "$rounds" > "$file" ;;
    vader|tcp)
      if [ "$side" = vader ]; then flags=$vader; else flags=$tcp; fi
      if [ "$tag" = many ]; then args="many $many"; else args=$tag; fi
      # shellcheck disable=SC2086
      mpirun --allow-run-as-root --oversubscribe $(mpi_bind "$n") --mca pml ob1 $flags -np "$n" "$mpi" "$rounds" $args > "$file" ;;
  esac
}

rep=1
while [ "$rep" -le "$repeats" ]; do
  for n in $nps; do
    for tag in $(echo "$sizes" | tr , ' ') many; do
      echo "n=$n, run $rep: $tag" >&2
      for side in hvd hvdtcp hvdgloo torch vader tcp; do run_side "$side" "$n" "$tag"; done
    done
  done
  rep=$((rep + 1))
done
note_passes

# shellcheck disable=SC2086
"$PYTHON" - "$out" "$here" "$repeats" "$sizes" $nps <<'PY'
import sys
out, repeats = sys.argv[1], int(sys.argv[3])
sys.path.insert(0, sys.argv[2])
tags = sys.argv[4].split(",") + ["many"]
nps = [int(n) for n in sys.argv[5:]]
from allreduce_results import MANY, SIZES, fmt_us, hvd, label, median_of, peer, print_ranges, ratio

# hvd = the default transport (shared memory here, all ranks on one host); hvd tcp = what
# ranks on different hosts use; hvd gloo = libgloo, Horovod's transport.
runs = range(1, repeats + 1)
SIDES = ("hvd", "hvdtcp", "hvdgloo", "torch", "vader", "tcp")
results = {}  # (side, n) -> one dict per run
for n in nps:
    for x in SIDES:
        parse = (lambda f: hvd(f, f)) if x.startswith("hvd") else peer
        results[x, n] = [{k: v for t in tags for k, v in parse(f"{out}/{x}_{n}_{r}_{t}.txt").items()}
                         for r in runs]
print("| n | size | hvd | hvd tcp | hvd gloo | torch gloo | MPI vader | MPI tcp |"
      " torch/hvd | vader/hvd | torch/hvd-tcp | MPI-tcp/hvd-tcp |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for n in nps:
    h, t, g, torch, vader, mtcp = (median_of(results[x, n]) for x in SIDES)
    for k in SIZES + MANY:
        vals = [h.get(k), t.get(k), g.get(k), torch.get(k), vader.get(k), mtcp.get(k)]
        ratios = [ratio(torch.get(k), h.get(k)), ratio(vader.get(k), h.get(k)),
                  ratio(torch.get(k), t.get(k)), ratio(mtcp.get(k), t.get(k))]
        print(f"| {n} | {label(k)} | " + " | ".join(fmt_us(v) for v in vals) + " | " +
              " | ".join(ratios) + " |")
print(open(f"{out}/header.txt").read().strip())
if repeats > 1:
    print_ranges(["n", "size", "hvd", "hvd tcp", "hvd gloo", "torch gloo", "MPI vader", "MPI tcp"],
                 (([n, label(k)], [results[x, n] for x in SIDES], k)
                  for n in nps for k in SIZES + MANY))
print(f"\nraw outputs: {out}")
PY
