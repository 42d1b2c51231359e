#ifndef HVD_LAUNCHER_ELASTIC_RUN_H_
#define HVD_LAUNCHER_ELASTIC_RUN_H_

#include "common/env_registry.h"
#include "launcher/plan/launch_spec.h"

namespace hvd::launcher {

// Runs an elastic job (spec.elastic()) to completion: its hosts come from the discovery
// script or from the fixed host list, ranks that fail are dropped and their host
// blacklisted, hosts that appear are added up to --max-np, and the surviving ranks re-form
// in place (launcher/elastic/elastic_driver.h). With spec.dry_run it prints the elastic settings
// and the first rank plan instead. Returns hvdrun's exit code; errors are already printed.
int RunElastic(const LaunchSpec& spec, const env::Environment& env);

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_ELASTIC_RUN_H_
