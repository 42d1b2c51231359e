#ifndef HVD_CMD_LAUNCH_SPEC_BUILDER_H_
#define HVD_CMD_LAUNCH_SPEC_BUILDER_H_

#include <CLI/CLI.hpp>
#include <optional>

#include "cmd/flags.h"
#include "cmd/knobs.h"
#include "common/env_registry.h"
#include "common/status.h"
#include "launcher/plan/launch_spec.h"

namespace hvd::cmd {

// Fills out->spec (all but the command) and out->settings from a parsed command line, the
// merged and validated knobs, the config file's controller and hvdrun's environment (for the
// launcher's own defaults: HVD_START_TIMEOUT, HVD_ELASTIC_TIMEOUT, HVD_GRACE_PERIOD_SECONDS,
// HVD_LOG_LEVEL, HVD_LOG_HIDE_TIME). Checks the launcher flags the way horovodrun does
// (-np >= 1, cooldown MIN >= 1, MAX <= 3600, MIN <= MAX, ...); errors name flag and value.
Status BuildLaunchSpec(const CLI::App& app, const env::Environment& env, const Knobs& knobs,
                       std::optional<launcher::Controller> config_controller,
                       ParsedCommandLine* out);

}  // namespace hvd::cmd

#endif  // HVD_CMD_LAUNCH_SPEC_BUILDER_H_
