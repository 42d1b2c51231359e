#!/usr/bin/env bash
# Usage: scripts/cluster/down.sh   (as root)
#
# Removes the local test cluster made by up.sh: kills its sshds (pid files, then every process
# left in each namespace), deletes the namespaces, veths, the bridge, the /etc/hosts block and
# the state directory (keep it with HVD_CLUSTER_KEEP_STATE=1, e.g. to read sshd logs).
# Succeeds when there is nothing to remove.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=common.sh
. "$here/common.sh"

hvd_cluster_require_root 0  # nothing of ours can exist without root
exec 9>"$HVD_CLUSTER_LOCK"
flock -w 60 9 || hvd_cluster_log "warning: $HVD_CLUSTER_LOCK is held; tearing down anyway"
hvd_cluster_teardown
hvd_cluster_log "down"
exit 0
