# Shared by up.sh and down.sh (sourced, not run). Everything the local test cluster creates is
# named here, so teardown can find leftovers of a run that died half-way.
#
# Layout: host K (1-based) is network namespace hvd-hK with interface eth0 = 10.77.0.(10+K)/24,
# joined through veth hvd-vK to bridge hvd-br0 (10.77.0.1 on this machine). Nothing outside
# these namespaces and the bridge is touched, except a marked block in /etc/hosts.

HVD_CLUSTER_PREFIX="hvd-h"
HVD_CLUSTER_BRIDGE="hvd-br0"
HVD_CLUSTER_NET="10.77.0"
HVD_CLUSTER_BRIDGE_ADDR="${HVD_CLUSTER_NET}.1"
HVD_CLUSTER_STATE="${HVD_CLUSTER_STATE:-/run/hvd-cluster}"
HVD_CLUSTER_LOCK="/run/hvd-cluster.lock"
HVD_CLUSTER_HOSTS_BEGIN="# BEGIN hvd-cluster (scripts/cluster/up.sh; removed by down.sh)"
HVD_CLUSTER_HOSTS_END="# END hvd-cluster"

hvd_cluster_log() { echo "hvd-cluster: $*" >&2; }
hvd_cluster_die() {
  hvd_cluster_log "error: $*"
  exit 1
}

hvd_cluster_addr() { echo "${HVD_CLUSTER_NET}.$((10 + $1))"; }

# The Slurm layer (slurm-up.sh) lives in the same state directory; teardown stops it too.
# shellcheck source=slurm-common.sh
. "$(dirname "${BASH_SOURCE[0]}")/slurm-common.sh"

# Namespaces of this cluster that exist now (from a live or a dead run).
hvd_cluster_namespaces() {
  ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${HVD_CLUSTER_PREFIX}[0-9]+$" || true
}

# Sends TERM, then KILL after a short grace, to every process in namespace $1 (sshd, sessions
# and anything a test left running there).
hvd_cluster_kill_namespace_pids() {
  local ns="$1" pids
  pids="$(ip netns pids "$ns" 2>/dev/null || true)"
  [ -z "$pids" ] && return 0
  kill -TERM $pids 2>/dev/null || true
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    pids="$(ip netns pids "$ns" 2>/dev/null || true)"
    [ -z "$pids" ] && return 0
    sleep 0.1
  done
  kill -KILL $pids 2>/dev/null || true
  sleep 0.1
}

# Rewrites /etc/hosts without our block. Written in place rather than renamed, because
# /etc/hosts is often a bind mount in containers; over the old bytes, then cut to length, so that
# it is never empty: a test resolving "localhost" beside this (ctest -j2) would fail then.
hvd_cluster_remove_hosts_block() {
  grep -qF "$HVD_CLUSTER_HOSTS_BEGIN" /etc/hosts 2>/dev/null || return 0
  local tmp
  tmp="$(mktemp)"
  awk -v b="$HVD_CLUSTER_HOSTS_BEGIN" -v e="$HVD_CLUSTER_HOSTS_END" '
    $0 == b {skip = 1; next}
    skip && $0 == e {skip = 0; next}
    !skip {print}' /etc/hosts >"$tmp"
  dd if="$tmp" of=/etc/hosts conv=notrunc status=none
  truncate -s "$(stat -c %s "$tmp")" /etc/hosts
  rm -f "$tmp"
}

# Removes everything a previous up.sh created. Never fails when things are already gone.
hvd_cluster_teardown() {
  local ns pidfile link
  hvd_slurm_teardown
  for pidfile in "$HVD_CLUSTER_STATE"/${HVD_CLUSTER_PREFIX}*/sshd.pid; do
    [ -f "$pidfile" ] || continue
    kill -TERM "$(cat "$pidfile")" 2>/dev/null || true
  done
  for ns in $(hvd_cluster_namespaces); do
    hvd_cluster_kill_namespace_pids "$ns"
    ip netns del "$ns" 2>/dev/null || true
  done
  for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 |
    grep -E '^hvd-v[0-9]+$' || true); do
    ip link del "$link" 2>/dev/null || true
  done
  if ip link show "$HVD_CLUSTER_BRIDGE" >/dev/null 2>&1; then
    ip link del "$HVD_CLUSTER_BRIDGE" 2>/dev/null || true
  fi
  hvd_cluster_remove_hosts_block
  if [ "${HVD_CLUSTER_KEEP_STATE:-0}" != "1" ]; then
    rm -rf "$HVD_CLUSTER_STATE"
  fi
}

# Exits with $1 (77 = "skipped" for CTest) when this machine cannot host the cluster.
hvd_cluster_require_root() {
  local code="${1:-1}"
  if [ "$(id -u)" != "0" ]; then
    hvd_cluster_log "must run as root (creates network namespaces); skipping"
    exit "$code"
  fi
  if ! command -v ip >/dev/null; then
    hvd_cluster_log "'ip' not found: apt-get install iproute2"
    exit "$code"
  fi
}
