#!/bin/sh
# compare_allreduce.sh - float32 SUM allreduce, hvd vs its peers on this machine, one table.
#
#   bench/compare_allreduce.sh [HVDRUN] [ROUNDS]
#
# HVDRUN: the built hvdrun (default: build/cmd/hvdrun, or $HVD_BUILD_DIR/cmd/hvdrun); hvd-bench
# is taken from the same build folder (bench/hvd-bench). For n = 2 and 4 it runs
#   hvd        hvdrun -np N hvd-bench --op allreduce            (default CPU backend: Gloo TCP)
#   hvd tcp    HVD_CPU_OPERATIONS=tcp hvdrun ...                (hvd's own TCP transport)
#   hvd shm    HVD_CPU_OPERATIONS=shm hvdrun ...                (hvd's shared-memory transport)
#   torch      /usr/bin/python3 bench/torch_gloo_allreduce.py   (torch.distributed Gloo)
#   MPI vader  mpirun ... --mca pml ob1 --mca btl self,vader    (shared memory)
#   MPI tcp    mpirun ... --mca btl self,tcp --mca btl_tcp_if_include lo
# over 4 KiB .. 64 MiB, then the 100 x 16 KiB fusion case, and prints time per op (median
# round, max over ranks) and the peer/hvd ratios (> 1: hvd is faster). Raw outputs stay in
# $OUT (default: a fresh folder under /tmp). Takes about 5 minutes.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
hvdrun=${1:-${HVD_BUILD_DIR:-$root/build}/cmd/hvdrun}
rounds=${2:-5}
build=$(cd "$(dirname "$hvdrun")/.." && pwd)
bench="$build/bench/hvd-bench"
sizes=4096,65536,1048576,16777216,67108864
many=100x16384
out=${OUT:-$(mktemp -d /tmp/hvd-compare.XXXXXX)}
[ -x "$hvdrun" ] || { echo "no hvdrun at $hvdrun (build it, or pass its path)" >&2; exit 2; }
[ -x "$bench" ] || { echo "no hvd-bench at $bench (cmake --build ... --target hvd-bench)" >&2; exit 2; }

mpi="$out/mpi_allreduce"
mpicc -O2 -o "$mpi" "$here/mpi_allreduce.c"
mpirun_base="mpirun --allow-run-as-root --oversubscribe --bind-to none --mca pml ob1"
vader="--mca btl self,vader"
tcp="--mca btl self,tcp --mca btl_tcp_if_include lo"

for n in 2 4; do
  echo "n=$n: hvd" >&2
  "$hvdrun" -np "$n" "$bench" --op allreduce --sizes "$sizes" --rounds "$rounds" > "$out/hvd_$n.txt"
  "$hvdrun" -np "$n" "$bench" --many "$many" --rounds "$rounds" > "$out/hvd_many_$n.txt"
  echo "n=$n: hvd tcp" >&2
  HVD_CPU_OPERATIONS=tcp "$hvdrun" -np "$n" "$bench" --op allreduce --sizes "$sizes" --rounds "$rounds" > "$out/hvdtcp_$n.txt"
  HVD_CPU_OPERATIONS=tcp "$hvdrun" -np "$n" "$bench" --many "$many" --rounds "$rounds" > "$out/hvdtcp_many_$n.txt"
  echo "n=$n: hvd shm" >&2
  HVD_CPU_OPERATIONS=shm "$hvdrun" -np "$n" "$bench" --op allreduce --sizes "$sizes" --rounds "$rounds" > "$out/hvdshm_$n.txt"
  HVD_CPU_OPERATIONS=shm "$hvdrun" -np "$n" "$bench" --many "$many" --rounds "$rounds" > "$out/hvdshm_many_$n.txt"
  echo "n=$n: torch" >&2
  /usr/bin/python3 "$here/torch_gloo_allreduce.py" -n "$n" --sizes "$sizes" --rounds "$rounds" > "$out/torch_$n.txt"
  /usr/bin/python3 "$here/torch_gloo_allreduce.py" -n "$n" --many "$many" --rounds "$rounds" > "$out/torch_many_$n.txt"
  echo "n=$n: MPI" >&2
  # shellcheck disable=SC2086
  $mpirun_base $vader -np "$n" "$mpi" "$rounds" "$sizes" > "$out/vader_$n.txt"
  $mpirun_base $vader -np "$n" "$mpi" "$rounds" many "$many" > "$out/vader_many_$n.txt"
  $mpirun_base $tcp -np "$n" "$mpi" "$rounds" "$sizes" > "$out/tcp_$n.txt"
  $mpirun_base $tcp -np "$n" "$mpi" "$rounds" many "$many" > "$out/tcp_many_$n.txt"
done

/usr/bin/python3 - "$out" <<'PY'
import re, sys
out = sys.argv[1]

def peer(path):
    res = {}
    for line in open(path):
        f = line.split()
        if len(f) == 3 and f[0] == "RESULT":
            res[int(f[1])] = float(f[2])
        elif len(f) == 4 and f[0] == "RESULT":
            res[f[1]] = float(f[3])
    return res

def lines(path):
    # hvdrun prefixes forwarded output with "[rank]<stdout>:".
    return [re.sub(r"^\[\d+\]<std(out|err)>:", "", l) for l in open(path)]

def hvd(path, many_path):
    res = {}
    for line in lines(path):
        f = line.split()
        if len(f) >= 6 and f[0].isdigit():
            res[int(f[0])] = float(f[2])
    for line in lines(many_path):
        m = re.match(r"(async|one by one).*?\)\s+([\d.]+)", line)
        if m:
            res["many-fused" if m.group(1) == "async" else "many-single"] = float(m.group(2))
    return res

def fmt_us(v):
    if v is None:
        return "-"
    return f"{v:.1f} us" if v < 1000 else f"{v / 1000:.2f} ms"

def label(k):
    if isinstance(k, int):
        return f"{k >> 20} MiB" if k >= 1 << 20 else f"{k >> 10} KiB"
    return "100x16K " + ("fused" if k == "many-fused" else "1-by-1")

print("| n | size | hvd | hvd tcp | torch gloo | MPI vader | MPI tcp | torch/hvd | vader/hvd | tcp/hvd |"
      " hvd/hvd-tcp | torch/hvd-tcp | MPI-tcp/hvd-tcp |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for n in (2, 4):
    h = hvd(f"{out}/hvd_{n}.txt", f"{out}/hvd_many_{n}.txt")
    t = hvd(f"{out}/hvdtcp_{n}.txt", f"{out}/hvdtcp_many_{n}.txt")
    cols = []
    for name in ("torch", "vader", "tcp"):
        d = peer(f"{out}/{name}_{n}.txt")
        d.update(peer(f"{out}/{name}_many_{n}.txt"))
        cols.append(d)
    for k in [4096, 65536, 1048576, 16777216, 67108864, "many-fused", "many-single"]:
        hv = h.get(k)
        tv = t.get(k)
        vals = [c.get(k) for c in cols]
        ratios = [f"{v / hv:.2f}" if v and hv else "-" for v in vals]
        tcp_ratios = [f"{v / tv:.2f}" if v and tv else "-" for v in (hv, vals[0], vals[2])]
        print(f"| {n} | {label(k)} | {fmt_us(hv)} | {fmt_us(tv)} | " +
              " | ".join(fmt_us(v) for v in vals) + " | " + " | ".join(ratios + tcp_ratios) + " |")
print("\n| n | size | hvd shm | MPI vader | torch gloo | vader/shm | torch/shm |")
print("|---|---|---|---|---|---|---|")
for n in (2, 4):
    m = hvd(f"{out}/hvdshm_{n}.txt", f"{out}/hvdshm_many_{n}.txt")
    v, t = peer(f"{out}/vader_{n}.txt"), peer(f"{out}/torch_{n}.txt")
    v.update(peer(f"{out}/vader_many_{n}.txt"))
    t.update(peer(f"{out}/torch_many_{n}.txt"))
    for k in [4096, 65536, 1048576, 16777216, 67108864, "many-fused", "many-single"]:
        mv, vv, tv = m.get(k), v.get(k), t.get(k)
        ratios = [f"{x / mv:.2f}" if x and mv else "-" for x in (vv, tv)]
        print(f"| {n} | {label(k)} | {fmt_us(mv)} | {fmt_us(vv)} | {fmt_us(tv)} | " + " | ".join(ratios) + " |")
print(f"\nraw outputs: {out}")
PY
