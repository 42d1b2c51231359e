#include "cmd/flags.h"

#include <algorithm>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "cmd/argv_normalizer.h"
#include "cmd/cli_app.h"
#include "cmd/config_file.h"
#include "cmd/knobs.h"
#include "cmd/launch_spec_builder.h"
#include "runtime/runtime_config.h"

namespace hvd::cmd {
namespace {

// Returns true when help was asked for. CLI11's exceptions stop here.
Result<bool> RunCli11(CLI::App* app, std::vector<std::string> tokens) {
  std::reverse(tokens.begin(), tokens.end());  // CLI11 consumes from the back
  try {
    app->parse(tokens);
  } catch (const CLI::CallForHelp&) {
    return true;
  } catch (const CLI::ParseError& e) {
    return Status::InvalidArgument(e.what());
  }
  return false;
}

// argparse's mutually exclusive groups; the message names both flags.
Status CheckOneOf(const CLI::App& app, std::initializer_list<const char*> names) {
  const char* first = nullptr;
  for (const char* name : names) {
    if (!Given(app, name)) continue;
    if (first != nullptr) {
      return Status::InvalidArgument("argument " + std::string(name) +
                                     ": not allowed with argument " + first);
    }
    first = name;
  }
  return Status::OK();
}

template <typename T>
Status ReadKnob(const CLI::App& app, Knob<T>* knob) {
  if constexpr (std::is_same_v<T, bool>) {
    if (auto v = FlagValue(app, knob->flag)) knob->Set(*v, Origin::kCommandLine);
  } else {
    std::optional<std::string> text = LastValue(app, knob->flag);
    if (!text) return Status::OK();
    Result<T> v = ConvertKnobValue<T>(*text, knob->flag);
    if (!v.ok()) return v.status();
    knob->Set(std::move(*v), Origin::kCommandLine);
  }
  return Status::OK();
}

Result<Knobs> KnobsFromCommandLine(const CLI::App& app, std::vector<std::string>* warnings) {
  Knobs knobs;
  // The deprecated spelling first, so --log-with(out)-timestamp wins when both are given.
  if (std::optional<bool> hide = FlagValue(app, "--log-hide-timestamp")) {
    warnings->push_back(
        "--log-hide-timestamp and --no-log-hide-timestamp are deprecated; use "
        "--log-without-timestamp / --log-with-timestamp");
    knobs.log_with_timestamp.Set(!*hide, Origin::kCommandLine);
  }
  for (KnobPtr k : knobs.All()) {
    HVD_RETURN_IF_ERROR(std::visit([&](auto* knob) { return ReadKnob(app, knob); }, k));
  }
  return knobs;
}

// The command line first; the config file fills in what it left open.
Result<std::optional<launcher::Controller>> ApplyConfigFile(const CLI::App& app, Knobs* knobs) {
  std::optional<std::string> path = LastValue(app, "--config-file");
  if (!path) return std::optional<launcher::Controller>();
  HVD_ASSIGN_OR_RETURN(ConfigFile config, LoadConfigFile(*path));
  FillUnset(config.knobs, knobs);
  return config.controller;
}

// hvdrun's option spellings among the command's arguments ("-np", "--hosts=a:2" as --hosts).
std::vector<std::string> OptionsAmong(const std::vector<std::string>& command,
                                      const std::vector<OptionShape>& shapes) {
  std::vector<std::string> found;
  for (size_t i = 1; i < command.size(); ++i) {
    const std::string word = command[i].substr(0, command[i].find('='));
    for (const OptionShape& shape : shapes) {
      if (word == shape.canonical ||
          std::find(shape.aliases.begin(), shape.aliases.end(), word) != shape.aliases.end()) {
        found.push_back(word);
        break;
      }
    }
  }
  return found;
}

}  // namespace

Result<ParsedCommandLine> ParseCommandLine(const std::vector<std::string>& argv,
                                           const env::Environment& env) {
  std::unique_ptr<CLI::App> app = BuildApp();
  HVD_ASSIGN_OR_RETURN(NormalizedArgv normalized, NormalizeArgv(argv, OptionShapes(*app)));
  ParsedCommandLine out;
  HVD_ASSIGN_OR_RETURN(out.show_help, RunCli11(app.get(), normalized.options));
  if (out.show_help) {
    out.help_text = app->help();
    return out;
  }
  out.show_version = Given(*app, "--version");
  out.check_build = Given(*app, "--check-build");
  if (out.show_version || out.check_build) return out;
  out.print_config = Given(*app, "--print-config");
  out.spec.command = std::move(normalized.command);
  out.spec.options_after_command = OptionsAmong(out.spec.command, OptionShapes(*app));

  HVD_RETURN_IF_ERROR(CheckOneOf(*app, {"--hosts", "--hostfile", "--host-discovery-script"}));
  HVD_RETURN_IF_ERROR(CheckOneOf(*app, {"--gloo", "--mpi", "--jsrun"}));
  HVD_ASSIGN_OR_RETURN(Knobs knobs, KnobsFromCommandLine(*app, &out.warnings));
  HVD_ASSIGN_OR_RETURN(std::optional<launcher::Controller> config_controller,
                       ApplyConfigFile(*app, &knobs));
  HVD_RETURN_IF_ERROR(ValidateKnobs(&knobs));
  HVD_RETURN_IF_ERROR(BuildLaunchSpec(*app, env, knobs, config_controller, &out));
  if (out.spec.command.empty() && !out.print_config && !out.spec.check) {
    return Status::InvalidArgument(
        "no command given (usage: hvdrun [OPTIONS] [--] COMMAND [ARGS...], e.g. "
        "hvdrun -np 2 /usr/bin/python3 train.py)");
  }
  if (!out.spec.command.empty() && !out.print_config) {
    // The runtime's own variables as the ranks will see them (this environment, then what
    // the flags and the config file set): a bad one would fail every rank's hvd.init().
    std::map<std::string, std::string> ranks_env = env.all();
    for (const auto& [name, value] : out.spec.worker_env) ranks_env[name] = value;
    Status knobs_ok =
        runtime::CheckRankIndependentKnobs(env::Environment::FromMap(std::move(ranks_env)));
    if (!knobs_ok.ok()) {
      return Status::InvalidArgument(knobs_ok.message() +
                                     " (every rank's hvd.init() would refuse it; nothing started)");
    }
  }
  if (!out.spec.command.empty() && out.spec.command.front().empty()) {
    return Status::InvalidArgument(
        "the command's program is an empty string (hvdrun -np 2 '' ...): name the program to "
        "run, e.g. hvdrun -np 2 /usr/bin/python3 train.py");
  }
  return out;
}

}  // namespace hvd::cmd
