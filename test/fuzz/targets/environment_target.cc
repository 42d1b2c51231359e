// Target "environment": the HVD_* and HOROVOD_* variables a user, a job script or a scheduler
// sets (common/env_registry.h), as libhvd reads them at init (LoadRuntimeConfig), as hvdrun
// checks them before it starts any rank (CheckRankIndependentKnobs) and as hvdrun's own command
// line reads its defaults from them (ParseCommandLine of `-np 2 true`).
//
// The input is records, each a byte (the variable: AllVars()[b % count]; bit 7 sets its
// Horovod alias where it has one) and its value up to a newline.
//
// Invariants: a value libhvd accepts, hvdrun's check accepts too (else hvdrun would refuse a
// launch whose ranks would run), and every refusal names a variable the input set.
#include <map>
#include <string>

#include "cmd/flags.h"
#include "common/check.h"
#include "common/env_registry.h"
#include "runtime/runtime_config.h"
#include "test/fuzz/fuzz_input.h"
#include "test/fuzz/fuzz_target.h"

namespace hvd::fuzz {
namespace {

// Whether `message` names one of the variables of `vars`.
bool NamesOneOf(const std::string& message, const std::map<std::string, std::string>& vars) {
  for (const auto& [name, value] : vars) {
    if (message.find(name) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

std::string FuzzEnvironment(std::string_view input) {
  const std::vector<env::VarSpec>& specs = env::AllVars();
  FuzzInput in(input);
  std::map<std::string, std::string> vars;
  while (!in.empty()) {
    const uint8_t pick = in.Byte();
    const env::VarSpec& spec = specs[(pick & 0x7f) % specs.size()];
    const bool alias = (pick & 0x80) != 0 && spec.horovod_alias[0] != '\0';
    vars[alias ? spec.horovod_alias : spec.name] = std::string(in.Until('\n'));
  }
  const env::Environment env = env::Environment::FromMap(vars);

  std::string outcome;
  Result<runtime::RuntimeConfig> config = runtime::LoadRuntimeConfig(env);
  Note(&outcome, config.status());
  const Status checked = runtime::CheckRankIndependentKnobs(env);
  Note(&outcome, checked);
  if (config.ok()) {
    HVD_CHECK(checked.ok()) << "hvdrun refuses what libhvd runs: " << checked.message();
  } else {
    HVD_CHECK(NamesOneOf(config.status().message(), vars)) << config.status().message();
  }
  if (!checked.ok()) HVD_CHECK(NamesOneOf(checked.message(), vars)) << checked.message();

  Result<cmd::ParsedCommandLine> parsed = cmd::ParseCommandLine({"-np", "2", "true"}, env);
  Note(&outcome, parsed.status());
  return outcome;
}

}  // namespace hvd::fuzz
