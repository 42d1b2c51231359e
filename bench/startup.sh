#!/usr/bin/env bash
# Launcher start-up, side by side in one run (hyperfine):
#   1. no work:    hvdrun -np 8 -H localhost:8 true     vs  mpirun -np 8 --oversubscribe true
#   2. init + exit: hvdrun -np 4 python3 -c 'import hvd.torch as hvd; hvd.init()'
#                   vs torchrun --nproc_per_node 4 (init_process_group gloo + barrier),
#                   and what hvd adds over the same job that only imports torch
#                   (hvdrun -np 4 python3 -c 'import torch'; target: <= 100 ms)
#   3. multi-host, when the namespace cluster of scripts/cluster/up.sh is up with >= 8 hosts:
#      16 ranks of `true` on 2 hosts (8 each) and on 8 hosts (2 each), hvdrun vs Open MPI's
#      mpirun over the same sshds, key and known_hosts (mpirun's own ssh; orted per host)
# Prints hyperfine's tables and the ratios. Usage: bench/startup.sh [path/to/hvdrun]
# The cluster is machine-global; on a shared machine run the whole thing under its lock:
#   flock /tmp/hvd-global.lock sh -c 'scripts/cluster/up.sh 8 && bench/startup.sh; scripts/cluster/down.sh'
# SKIP_LOCAL=1 runs only the multi-host cases.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
hvdrun=${1:-$(command -v hvdrun || echo "$root/build/cmd/hvdrun")}
py=/usr/bin/python3
# The Python package of the same build (build/cmd/hvdrun -> build/python), else the installed one.
build_python=$(cd "$(dirname "$hvdrun")/.." && pwd)/python
[ -d "$build_python/hvd" ] && export PYTHONPATH="$build_python${PYTHONPATH:+:$PYTHONPATH}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A signal runs the EXIT trap too (sh runs it only on exit, not when a signal kills it).
trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 143' TERM
runs=${RUNS:-20}

mean() { $py -c "import json,sys; print(json.load(open(sys.argv[1]))['results'][${2}]['mean'])" "$1"; }

if [ "${SKIP_LOCAL:-0}" != 1 ]; then
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
printf '%-40s %10.3f %10s %8s  (hvd.torch import + init + shutdown: %+.0f ms; target <= 100)\n' \
  "4 ranks, import torch only (hvdrun)" "$b2" "-" "-" "$($py -c "print(($b0-$b2)*1000)")"
fi
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"

# ---- multi-host: hvdrun (one hvd-agent per host over libssh2) vs mpirun (one orted per host
# over ssh), same hosts, same sshd, same key and known_hosts.
state=${HVD_CLUSTER_STATE:-/run/hvd-cluster}
hosts_up=0
[ -f "$state/cluster.env" ] && hosts_up=$(. "$state/cluster.env"; set -- $HVD_CLUSTER_HOSTS; echo $#)
if [ "$hosts_up" -lt 8 ]; then
  echo "(multi-host cases skipped: bring up 8 hosts first, scripts/cluster/up.sh 8)"
  exit 0
fi
key=$state/id_ed25519
known=$state/known_hosts
ssh_args="-i $key --ssh-known-hosts $known"
mpi_args="--allow-run-as-root --mca plm_rsh_args '-i $key -o UserKnownHostsFile=$known -o BatchMode=yes' --mca oob_tcp_if_include 10.77.0.0/24 --mca btl self,tcp --mca btl_tcp_if_include 10.77.0.0/24"
two=hvd-h1:8,hvd-h2:8
eight=hvd-h1:2,hvd-h2:2,hvd-h3:2,hvd-h4:2,hvd-h5:2,hvd-h6:2,hvd-h7:2,hvd-h8:2
echo "== multi-host, 16 ranks of true: 2 hosts x 8, 8 hosts x 2 =="
hyperfine -N -w 2 -r "$runs" --export-json "$tmp/m.json" \
  "$hvdrun -np 16 -H $two $ssh_args true" \
  "mpirun -np 16 -H $two $mpi_args true" \
  "$hvdrun -np 16 -H $eight $ssh_args true" \
  "mpirun -np 16 -H $eight $mpi_args true"
m0=$(mean "$tmp/m.json" 0); m1=$(mean "$tmp/m.json" 1)
m2=$(mean "$tmp/m.json" 2); m3=$(mean "$tmp/m.json" 3)
printf '\n%-40s %10s %10s %8s\n' "case" "hvdrun_s" "mpirun_s" "ratio"
printf '%-40s %10.3f %10.3f %8.2f\n' "16 ranks on 2 hosts (8 each)" "$m0" "$m1" "$($py -c "print($m0/$m1)")"
printf '%-40s %10.3f %10.3f %8.2f\n' "16 ranks on 8 hosts (2 each)" "$m2" "$m3" "$($py -c "print($m2/$m3)")"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
