#ifndef HVD_CMD_PRINT_CONFIG_H_
#define HVD_CMD_PRINT_CONFIG_H_

#include <map>
#include <string>

#include "cmd/flags.h"
#include "common/env_registry.h"

namespace hvd::cmd {

// The table `hvdrun --print-config` prints: one row per registered variable (env::AllVars()
// order) with its Horovod alias, the value in effect and where that value came from:
// "command line", "config file <path>", "environment variable <NAME>" or "default".
// `settings` (from ParseCommandLine) wins over `env`. Columns are aligned; the help text is
// last.
std::string FormatConfigTable(const std::map<std::string, Setting>& settings,
                              const env::Environment& env);

}  // namespace hvd::cmd

#endif  // HVD_CMD_PRINT_CONFIG_H_
