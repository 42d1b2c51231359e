# hosts_common.sh - sourced by compare_allreduce_hosts.sh and compare_collectives_hosts.sh (POSIX
# sh): the netns test cluster those benchmarks run on, and how each side reaches it. Expects
# `root` (the repository) and `out` (the raw outputs' folder); sets state, ssh_args (hvdrun's),
# mpi_net and mpi_rsh (mpirun's), layouts (layout_fields), and defines
#   with_cluster CMD...   runs CMD under /tmp/hvd-global.lock (the cluster is machine-wide)
#                         with scripts/cluster/up.sh 4 brought up and torn down around it, the
#                         hosts' TCP congestion control set to $TCP_CC and their links shaped to
#                         $RATE for the run when given, and the header's first line written to
#                         $out/header.txt
#   mpi_yield N           mpirun's flags for N ranks on this machine's CPUs
#   mpi_side N HOSTS CMD...  runs CMD's N ranks on HOSTS with mpirun, as the MPI side of every
#                         layout runs (TCP on the cluster network, unbound, yielding as needed)
#   run_passes R ORDER    runs the sourcing script's `run_all PASS` for passes 1..R, noting in
#                         the header, when R > 1, that cells are medians (the sides alternating
#                         ORDER)
state=/run/hvd-cluster
ssh_args="-i $state/id_ed25519 --ssh-known-hosts $state/known_hosts"
mpi_net="--mca btl self,tcp --mca oob_tcp_if_include 10.77.0.0/24 --mca btl_tcp_if_include 10.77.0.0/24"
mpi_rsh="-i $state/id_ed25519 -o UserKnownHostsFile=$state/known_hosts"
# KEY/RANKS/HOSTS, one per layout (layout_fields splits one). LAYOUTS overrides them, in the
# same form or as plain HOSTSxRANKS keys (e.g. LAYOUTS="2x4 4x2 4x4": 8 and 16 ranks; at most 4
# hosts, the cluster's).
layouts=${LAYOUTS:-"2x1 2x2 4x1"}

# layout_spec KEY: KEY (HOSTSxRANKS) as KEY/RANKS/HOSTS; a full spec is printed as it is.
layout_spec() {
  case "$1" in
    */*) echo "$1"; return ;;
  esac
  h=${1%%x*} r=${1#*x}
  case "$h$r" in *[!0-9]* | "") echo "bad layout '$1' (want HOSTSxRANKS, e.g. 2x4)" >&2; exit 2 ;; esac
  [ "$h" -ge 1 ] && [ "$h" -le 4 ] || { echo "bad layout '$1': 1 to 4 hosts" >&2; exit 2; }
  spec="" i=1
  while [ "$i" -le "$h" ]; do spec="$spec${spec:+,}hvd-h$i:$r"; i=$((i + 1)); done
  echo "$1/$((h * r))/$spec"
}
layouts=$(for l in $layouts; do layout_spec "$l"; done)

# layout_fields LAYOUT: sets key, n and hosts.
layout_fields() {
  key=${1%%/*}
  n=${1#*/}
  hosts=${n#*/}
  n=${n%%/*}
}

# When the layout has more ranks than this machine has CPUs (the namespace hosts share its
# CPUs, which mpirun cannot see), MPI runs with --mca mpi_yield_when_idle 1, what mpirun sets
# itself when it knows it is oversubscribed: its busy polling otherwise stalls the ranks sharing
# a CPU (4x1, 4 KiB allreduce: 6.1 ms spinning against 93-97 us yielding, 2026-11-23). hvd
# counts the ranks per machine by boot id and yields too (docs/transports.md).
mpi_yield() {
  if [ "$1" -gt "$(nproc)" ]; then echo "--mca mpi_yield_when_idle 1"; fi
}

with_cluster() {
  (
    flock 9
    "$root/scripts/cluster/up.sh" 4 > "$out/cluster.log"
    allowed=$(cat /proc/sys/net/ipv4/tcp_allowed_congestion_control)
    trap '"$root/scripts/cluster/down.sh" >> "$out/cluster.log" 2>&1; sysctl -q -w net.ipv4.tcp_allowed_congestion_control="$allowed"' EXIT
    # A signal runs the EXIT trap too (sh runs it only on exit, not when a signal kills it).
    trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 143' TERM
    if [ -n "${TCP_CC:-}" ]; then
      sysctl -q -w net.ipv4.tcp_allowed_congestion_control="$allowed $TCP_CC"
      for ns in hvd-h1 hvd-h2 hvd-h3 hvd-h4; do ip netns exec "$ns" sysctl -q -w net.ipv4.tcp_congestion_control="$TCP_CC"; done
    fi
    link="unlimited veths"
    if [ -n "${RATE:-}" ]; then
      # The hosts' own ends (their egress) and the bridge's ends (their ingress); the links go
      # with the cluster at exit.
      for i in 1 2 3 4; do
        ip netns exec "hvd-h$i" tc qdisc replace dev eth0 root tbf rate "$RATE" burst "${RATE_BURST:-32kb}" latency 20ms
        tc qdisc replace dev "hvd-v$i" root tbf rate "$RATE" burst "${RATE_BURST:-32kb}" latency 20ms
      done
      link="links shaped to $RATE each way (tc tbf, burst ${RATE_BURST:-32kb})"
    fi
    cc=$(ip netns exec hvd-h1 cat /proc/sys/net/ipv4/tcp_congestion_control)
    echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -n), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), 4 netns hosts, $link, unbound, hosts' TCP congestion control $cc" > "$out/header.txt"
    "$@"
  ) 9> /tmp/hvd-global.lock
}

mpi_side() {
  side_n=$1
  side_hosts=$2
  shift 2
  # shellcheck disable=SC2046,SC2086
  mpirun --allow-run-as-root -np "$side_n" -H "$side_hosts" --bind-to none --map-by slot --mca pml ob1 \
    --mca plm_rsh_args "$mpi_rsh" $mpi_net $(mpi_yield "$side_n") "$@"
}

run_passes() {
  pass=1
  while [ "$pass" -le "$1" ]; do
    run_all "$pass"
    pass=$((pass + 1))
  done
  if [ "$1" -gt 1 ]; then
    echo "# every cell: the median of $1 runs of the whole pass (sides alternating${2:+ $2})" >> "$out/header.txt"
  fi
}
