#!/usr/bin/env bash
# Launcher start-up, side by side in one run (hyperfine):
#   1. no work:    hvdrun -np 8 -H localhost:8 true     vs  mpirun -np 8 --oversubscribe true
#   2. init + exit: hvdrun -np 4 python3 -c 'import hvd.torch as hvd; hvd.init()'
#                   vs torchrun --nproc_per_node 4 (init_process_group gloo + barrier),
#                   and what hvd adds over the same job that only imports torch
#                   (hvdrun -np 4 python3 -c 'import torch'; target: <= 100 ms)
# Prints hyperfine's tables and the ratios. Usage: bench/startup.sh [path/to/hvdrun]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
hvdrun=${1:-$(command -v hvdrun || echo "$root/build/cmd/hvdrun")}
py=/usr/bin/python3
# The Python package of the same build (build/cmd/hvdrun -> build/python), else the installed one.
build_python=$(cd "$(dirname "$hvdrun")/.." && pwd)/python
[ -d "$build_python/hvd" ] && export PYTHONPATH="$build_python${PYTHONPATH:+:$PYTHONPATH}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
runs=${RUNS:-20}

mean() { $py -c "import json,sys; print(json.load(open(sys.argv[1]))['results'][${2}]['mean'])" "$1"; }

echo "== launcher, no work (8 ranks) =="
hyperfine -N -w 2 -r "$runs" --export-json "$tmp/a.json" \
  "$hvdrun -np 8 -H localhost:8 true" \
  "mpirun -np 8 --oversubscribe --allow-run-as-root true"
a0=$(mean "$tmp/a.json" 0); a1=$(mean "$tmp/a.json" 1)

cat > "$tmp/torch_init.py" <<'PY'
import torch.distributed as dist
dist.init_process_group("gloo")
dist.barrier()
dist.destroy_process_group()
PY
echo "== init + exit, 4 ranks with torch imported =="
hyperfine -N -w 1 -r "$(( runs / 2 > 5 ? runs / 2 : 5 ))" --export-json "$tmp/b.json" \
  "$hvdrun -np 4 $py -c 'import hvd.torch as hvd; hvd.init(); hvd.shutdown()'" \
  "$py -m torch.distributed.run --standalone --nproc_per_node 4 --monitor_interval 0.1 --redirects 9:1 --tee 9:1 $tmp/torch_init.py" \
  "$hvdrun -np 4 $py -c 'import torch'"
b0=$(mean "$tmp/b.json" 0); b1=$(mean "$tmp/b.json" 1); b2=$(mean "$tmp/b.json" 2)

printf '\n%-40s %10s %10s %8s\n' "case" "hvdrun_s" "peer_s" "ratio"
printf '%-40s %10.3f %10.3f %8.2f  (peer: mpirun)\n' "8 ranks, no work" "$a0" "$a1" "$($py -c "print($a0/$a1)")"
printf '%-40s %10.3f %10.3f %8.2f  (peer: torchrun)\n' "4 ranks, import torch + init" "$b0" "$b1" "$($py -c "print($b0/$b1)")"
printf '%-40s %10.3f %10.3f %8s  (hvd.torch import + init + shutdown: %+.0f ms; target <= 100)\n' \
  "4 ranks, import torch only (hvdrun)" "$b2" "-" "-" "$($py -c "print(($b0-$b2)*1000)")"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
