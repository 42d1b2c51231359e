#ifndef HVD_LAUNCHER_DRY_RUN_H_
#define HVD_LAUNCHER_DRY_RUN_H_

#include <map>
#include <string>
#include <vector>

#include "launcher/plan/job_plan.h"
#include "launcher/plan/launch_spec.h"
#include "launcher/worker/worker_env.h"

namespace hvd::launcher {

// --dry-run's report: where the allocation came from, the rank plan table (rank, host,
// local_rank, local_size, cross_rank, cross_size) and, per host, the exact command and each
// rank's variables: those hvdrun sets (flag/config knobs, the per-rank ones, the runtime
// library) and whatever else differs from `launcher_env` (hvdrun's own; the inherited rest is
// not repeated), as `rank_envs` (by rank: each rank's whole environment as the launch builds it,
// launcher/run.cc BuildRequests) has them. So the dry run shows what the ranks really get (the
// interfaces, OMP_NUM_THREADS, NCCL_HOSTID, a CPU_OPERATIONS exported to hvdrun; until
// 2026-12-01 only hvdrun's knob variables were). Values only known at launch come from `job`
// as placeholders; HVD_SECRET_FD is a descriptor number at most, never key material. Pure;
// thread-safe.
std::string FormatDryRun(const LaunchSpec& spec, const JobPlan& plan, const JobEnvContext& job,
                         const std::map<int, EnvMap>& rank_envs, const EnvMap& launcher_env);

// The rank plan as a table: rank, host, local_rank, local_size, cross_rank, cross_size.
std::string FormatPlanTable(const JobPlan& plan);

// POSIX-shell quoting of `argv`, so a printed command can be pasted back into a shell.
std::string ShellJoin(const std::vector<std::string>& argv);

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_DRY_RUN_H_
