# compare_common.sh - sourced by compare_allreduce.sh and compare_collectives.sh (POSIX sh):
# the settings both take and check, and mpirun's placement flags. Expects `here` (bench/) and
# the script's arguments [HVDRUN] [ROUNDS]; sets root, hvdrun, rounds, placement, nps, repeats,
# PYTHON, build, bench, cpus and out (made), or exits 2 naming the bad setting.
root=$(dirname "$here")
hvdrun=${1:-${HVD_BUILD_DIR:-$root/build}/cmd/hvdrun}
rounds=${2:-5}
placement=${PLACEMENT:-none}
nps=${NPS:-2 4}
repeats=${REPEATS:-1}
if [ -z "${PYTHON:-}" ]; then
  if [ -x /usr/bin/python3 ]; then PYTHON=/usr/bin/python3; else PYTHON=python3; fi
fi
for n in $nps; do
  case "$n" in ''|*[!0-9]*) echo "NPS must list rank counts, got '$nps'" >&2; exit 2 ;; esac
done
case "$placement" in none|core) ;; *) echo "PLACEMENT must be none or core" >&2; exit 2 ;; esac
case "$repeats" in ''|*[!0-9]*|0) echo "REPEATS must be a positive count, got '$repeats'" >&2; exit 2 ;; esac
case "$rounds" in ''|*[!0-9]*|0) echo "ROUNDS must be a positive count, got '$rounds'" >&2; exit 2 ;; esac
[ -x "$hvdrun" ] || { echo "no hvdrun at $hvdrun (build it, or pass its path)" >&2; exit 2; }
build=$(cd "$(dirname "$hvdrun")/.." && pwd)
bench="$build/bench/hvd-bench"
[ -x "$bench" ] || { echo "no hvd-bench at $bench (cmake --build ... --target hvd-bench)" >&2; exit 2; }
cpus=$(nproc)
# mpi_bind N: mpirun's placement flags for N ranks under $placement (hvdrun's rule: nobody
# binds with more ranks than CPUs).
mpi_bind() {
  if [ "$placement" = core ] && [ "$1" -le "$cpus" ]; then
    echo "--bind-to core --map-by core"
  else
    echo "--bind-to none"
  fi
}
# note_passes: the header's last line, how the cells were taken ($out/header.txt).
note_passes() {
  if [ "$repeats" -gt 1 ]; then
    echo "# every cell: the median of $repeats runs (the sides taking turns size by size)" | tee -a "$out/header.txt"
  else
    echo "# the sides taking turns size by size" | tee -a "$out/header.txt"
  fi
}
