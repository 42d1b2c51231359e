#!/usr/bin/env bash
# Runs COMMAND in a network namespace of its own whose loopback is shaped to RATE (tc's token
# bucket), so that a job of local ranks talks over a slow link without touching this machine's
# own network: the namespace and its shaping end with COMMAND.
#   bash scripts/cluster/shaped-loopback.sh RATE COMMAND [ARG...]     (RATE: e.g. 300mbit)
# Needs root, unshare (util-linux) and tc (iproute2); exits 77 (a skipped test) without them.
# Used by the test of Gloo's per-wait timeout (worker_e2e_gloo_slow_link_np3).
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 RATE COMMAND [ARG...]" >&2
  exit 2
fi
if [ "$(id -u)" != 0 ] || ! command -v unshare > /dev/null || ! command -v tc > /dev/null; then
  echo "shaped-loopback: needs root, unshare and tc; skipped" >&2
  exit 77
fi
rate=$1
shift
# lo's segments are up to 64 KiB (GSO): the bucket holds several; a queue of 200 ms.
exec unshare --net bash -c 'set -e; ip link set lo up
  tc qdisc add dev lo root tbf rate "$0" burst 256kb latency 200ms
  exec "$@"' "$rate" "$@"
