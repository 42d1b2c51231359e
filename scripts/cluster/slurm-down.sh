#!/usr/bin/env bash
# Usage: scripts/cluster/slurm-down.sh   (as root)
#
# Stops the Slurm cluster of slurm-up.sh: every slurmd, the job steps and tasks they left in
# the host namespaces (the namespaces' sshds stay), slurmctld and munged, then removes
# $HVD_CLUSTER_STATE/slurm (kept with HVD_CLUSTER_KEEP_STATE=1). The network cluster of up.sh
# stays up. Succeeds when there is nothing to stop.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=common.sh
. "$here/common.sh"

hvd_cluster_require_root 0
exec 9>"$HVD_CLUSTER_LOCK"
flock -w 60 9 || hvd_cluster_log "warning: $HVD_CLUSTER_LOCK is held; stopping Slurm anyway"
hvd_slurm_teardown
hvd_cluster_log "slurm down"
exit 0
