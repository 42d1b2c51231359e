#ifndef HVD_LAUNCHER_RUN_H_
#define HVD_LAUNCHER_RUN_H_

#include "common/env_registry.h"
#include "launcher/plan/launch_spec.h"

namespace hvd::launcher {

// Runs the job described by `spec` to completion: resolves where ranks go, plans them, starts
// the rendezvous server, spawns and watches every rank, forwards output and ends the job on
// the first failure or a signal. `env` is hvdrun's own environment (workers inherit it).
// With spec.dry_run it prints the plan and commands instead. Returns hvdrun's exit code
// (launcher/outcome/exit_codes.h); errors have already been printed to stderr.
int Run(const LaunchSpec& spec, const env::Environment& env);

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_RUN_H_
