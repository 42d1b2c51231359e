#ifndef HVD_CMD_FLAGS_H_
#define HVD_CMD_FLAGS_H_

#include <map>
#include <string>
#include <vector>

#include "common/env_registry.h"
#include "common/status.h"
#include "launcher/plan/launch_spec.h"

// hvdrun's command line: every horovodrun flag (same spellings, same meaning, same YAML config
// file) plus hvd's own, turned into a LaunchSpec. Precedence: command line > --config-file >
// environment > default. See docs/cli.md for the full reference.
namespace hvd::cmd {

// A value hvdrun sets for a registered variable and where it came from.
struct Setting {
  std::string value;
  std::string source;  // "command line" or "config file <path>"
};

struct ParsedCommandLine {
  launcher::LaunchSpec spec;
  bool show_help = false;     // -h/--help: print help_text, exit 0
  bool show_version = false;  // -v/--version
  bool check_build = false;   // -cb/--check-build
  bool print_config = false;  // --print-config
  std::string help_text;
  std::vector<std::string> warnings;  // deprecated spellings used; print before running
  // By canonical variable name: every registered variable the command line or config file
  // sets (for the workers, or for hvdrun itself such as HVD_START_TIMEOUT). What
  // --print-config shows in place of the environment.
  std::map<std::string, Setting> settings;
};

// Parses hvdrun's arguments (`argv` without the program name). `env` is hvdrun's environment:
// it supplies defaults such as HVD_START_TIMEOUT. Any error is a usage error whose message
// names the flag, key or value at fault. With --help, --version or --check-build the spec is
// left empty and nothing else is checked.
Result<ParsedCommandLine> ParseCommandLine(const std::vector<std::string>& argv,
                                           const env::Environment& env);

}  // namespace hvd::cmd

#endif  // HVD_CMD_FLAGS_H_
