#!/bin/bash
# Slurm batch script for an hvd job: submit with
#
#   sbatch configs/slurm_job.sh                                  # examples/torch_train.py
#   sbatch -N 4 --ntasks-per-node=8 configs/slurm_job.sh /usr/bin/python3 train.py --epochs 10
#
# hvdrun needs no -np or -H here: it plans one rank per Slurm task from SLURM_JOB_NODELIST and
# SLURM_TASKS_PER_NODE, runs the ranks of the node this script runs on itself, and on every
# other node starts one `srun` step running hvd-agent, which starts that node's ranks (argv,
# environment and the job key travel over srun's stdin, never on a command line). Output lines are prefixed
# "[rank]<stdout>:" as usual; the exit code is the first failing rank's. Any hvdrun flag can
# be added (e.g. --output-filename logs/ or --verbose, which prints each srun command).
#
#SBATCH --job-name=hvd-train
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=2
#SBATCH --time=00:30:00
#SBATCH --output=hvd-train-%j.out
set -euo pipefail

# HVDRUN names the hvdrun binary (default: the one on PATH).
hvdrun="${HVDRUN:-hvdrun}"
if [ "$#" -eq 0 ]; then
  set -- /usr/bin/python3 examples/torch_train.py --epochs 2
fi
exec "$hvdrun" ${HVDRUN_ARGS:-} "$@"
