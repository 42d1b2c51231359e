#ifndef HVD_LAUNCHER_MPIRUN_LAUNCH_H_
#define HVD_LAUNCHER_MPIRUN_LAUNCH_H_

#include "common/env_registry.h"
#include "launcher/plan/job_plan.h"
#include "launcher/plan/launch_spec.h"

namespace hvd::launcher {

// hvdrun --mpi: detects the MPI from `mpirun --version`, builds the command
// (BuildMpirunCommand), prints it with --verbose / --dry-run, then runs it as a child in its
// own process group and returns its exit code (128+N when it died of signal N). SIGINT /
// SIGTERM / SIGHUP to hvdrun are forwarded to mpirun (which stops its ranks); a second one
// SIGKILLs mpirun's process group; hvdrun then exits 128+signal. mpirun tags the output
// itself (--tag-output), so hvdrun passes it through untouched.
int RunMpirunMode(const LaunchSpec& spec, const env::Environment& env, const JobPlan& plan);

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_MPIRUN_LAUNCH_H_
