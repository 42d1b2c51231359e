#ifndef HVD_CMD_CLI_APP_H_
#define HVD_CMD_CLI_APP_H_

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cmd/argv_normalizer.h"

// CLI11's model of hvdrun's options: every horovodrun flag with its spelling, help text and
// group, plus hvd's own. Values are not bound to variables: after parsing, callers read the
// raw text with LastValue/AllValues/FlagValue and convert it themselves, so every conversion
// error reads the same way. The app only ever sees tokens from NormalizeArgv. Not thread-safe.
namespace hvd::cmd {

std::unique_ptr<CLI::App> BuildApp();

// The shapes NormalizeArgv needs, derived from `app` plus horovodrun's single-dash
// multi-letter spellings (-np, -cb, -hostfile, -prefix-timestamp). Each negated spelling
// (--no-autotune) is a shape of its own.
std::vector<OptionShape> OptionShapes(const CLI::App& app);

// True when the option named `name` (any of its spellings) appeared on the command line.
bool Given(const CLI::App& app, const std::string& name);
// The value of the last occurrence; nullopt when not given.
std::optional<std::string> LastValue(const CLI::App& app, const std::string& name);
// Every value of every occurrence, in order.
std::vector<std::string> AllValues(const CLI::App& app, const std::string& name);
// For "--x,!--no-x" flags: true/false from the last occurrence; nullopt when not given.
std::optional<bool> FlagValue(const CLI::App& app, const std::string& name);

}  // namespace hvd::cmd

#endif  // HVD_CMD_CLI_APP_H_
