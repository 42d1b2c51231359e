#!/usr/bin/env bash
# Usage: scripts/cluster/up.sh [N]   (default 2; as root)
#
# Brings up a local "cluster" of N SSH hosts hvd-h1..hvd-hN, each a network namespace with its
# own sshd, so multi-host launches can be tested on one machine. Leftovers of a previous run
# (live or dead) are torn down first, so it is safe to run again at any time.
# scripts/cluster/down.sh removes everything. See scripts/cluster/README.md.
#
# Prints (and writes to $HVD_CLUSTER_STATE/cluster.env) the shell variables a test needs:
# HVD_CLUSTER_HOSTS, HVD_CLUSTER_ADDRS, HVD_CLUSTER_KEY, HVD_CLUSTER_KNOWN_HOSTS, ...
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=common.sh
. "$here/common.sh"

n="${1:-2}"
[[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 200 ] ||
  hvd_cluster_die "host count must be 1..200, got '$n'"
# Exit 77 (CTest's "skipped") when the machine cannot host the cluster at all.
hvd_cluster_require_root 77
if [ ! -x /usr/sbin/sshd ] || ! command -v ssh-keygen >/dev/null; then
  hvd_cluster_log "sshd/ssh-keygen not found: apt-get install openssh-server openssh-client"
  exit 77
fi

exec 9>"$HVD_CLUSTER_LOCK"
flock -w 60 9 || hvd_cluster_die "another up.sh/down.sh holds $HVD_CLUSTER_LOCK"

hvd_cluster_teardown
# On any failure below, leave nothing half-built behind.
trap 'rc=$?; [ $rc -ne 0 ] && { hvd_cluster_log "up failed (exit $rc); tearing down"; HVD_CLUSTER_KEEP_STATE=1 hvd_cluster_teardown; }; exit $rc' EXIT
# An interruption tears down too: inside the EXIT trap of a signalled script $? reads 0, so each
# signal exits with its own code first (Ctrl-C left namespaces and daemons behind until
# 2026-12-01).
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

state="$HVD_CLUSTER_STATE"
mkdir -p "$state"
chmod 0755 "$state"
mkdir -p /run/sshd && chmod 0755 /run/sshd  # sshd's privilege-separation directory

# The client key the tests log in with (root, public key only).
ssh-keygen -q -t ed25519 -N '' -C "hvd-cluster test key" -f "$state/id_ed25519"
cp "$state/id_ed25519.pub" "$state/authorized_keys"
chmod 0600 "$state/authorized_keys"
: >"$state/known_hosts"

ip link add "$HVD_CLUSTER_BRIDGE" type bridge
ip addr add "$HVD_CLUSTER_BRIDGE_ADDR/24" dev "$HVD_CLUSTER_BRIDGE"
ip link set "$HVD_CLUSTER_BRIDGE" up

hosts_block="$HVD_CLUSTER_HOSTS_BEGIN"$'\n'
names=()
addrs=()
for k in $(seq 1 "$n"); do
  name="${HVD_CLUSTER_PREFIX}$k"
  addr="$(hvd_cluster_addr "$k")"
  dir="$state/$name"
  mkdir -p "$dir"

  ip netns add "$name"
  ip link add "hvd-v$k" type veth peer name "hvd-p$k"
  ip link set "hvd-v$k" master "$HVD_CLUSTER_BRIDGE"
  ip link set "hvd-v$k" up
  ip link set "hvd-p$k" netns "$name"
  ip -n "$name" link set "hvd-p$k" name eth0
  ip -n "$name" addr add "$addr/24" dev eth0
  ip -n "$name" link set eth0 up
  ip -n "$name" link set lo up

  ssh-keygen -q -t ed25519 -N '' -C "$name host key" -f "$dir/ssh_host_ed25519_key"
  # StrictModes is off because the state directory may be put anywhere (HVD_CLUSTER_STATE),
  # e.g. under a world-writable /tmp; the files themselves are root-owned and private.
  cat >"$dir/sshd_config" <<EOF
ListenAddress $addr:22
HostKey $dir/ssh_host_ed25519_key
PidFile $dir/sshd.pid
PermitRootLogin prohibit-password
AuthorizedKeysFile $state/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
UseDNS no
PrintMotd no
PrintLastLog no
X11Forwarding no
AllowTcpForwarding no
MaxStartups 200
MaxSessions 200
LogLevel VERBOSE
EOF
  ip netns exec "$name" /usr/sbin/sshd -f "$dir/sshd_config" -E "$dir/sshd.log"
  echo "$name,$addr $(cut -d' ' -f1,2 "$dir/ssh_host_ed25519_key.pub")" >>"$state/known_hosts"
  hosts_block+="$addr $name"$'\n'
  names+=("$name")
  addrs+=("$addr")
done
hosts_block+="$HVD_CLUSTER_HOSTS_END"
hvd_cluster_remove_hosts_block
printf '%s\n' "$hosts_block" >>/etc/hosts

# Ready when every sshd accepts TCP connections (bounded: 10 s).
for addr in "${addrs[@]}"; do
  ok=0
  for _ in $(seq 1 100); do
    if timeout 1 bash -c "exec 3<>/dev/tcp/$addr/22" 2>/dev/null; then
      ok=1
      break
    fi
    sleep 0.1
  done
  [ "$ok" = 1 ] || hvd_cluster_die "sshd on $addr:22 did not come up (see $state/hvd-h*/sshd.log)"
done

cat >"$state/cluster.env" <<EOF
HVD_CLUSTER_STATE=$state
HVD_CLUSTER_HOSTS="${names[*]}"
HVD_CLUSTER_ADDRS="${addrs[*]}"
HVD_CLUSTER_BRIDGE_ADDR=$HVD_CLUSTER_BRIDGE_ADDR
HVD_CLUSTER_KEY=$state/id_ed25519
HVD_CLUSTER_KNOWN_HOSTS=$state/known_hosts
HVD_CLUSTER_USER=root
EOF
trap - EXIT
cat "$state/cluster.env"
hvd_cluster_log "up: ${names[*]}; try: ssh -i $state/id_ed25519 -o UserKnownHostsFile=$state/known_hosts root@${names[0]} true"
