// Target "config_file": a --config-file's YAML (cmd/config_file.h), parsed by yaml-cpp and
// read against horovodrun's schema.
#include "cmd/config_file.h"
#include "test/fuzz/fuzz_input.h"
#include "test/fuzz/fuzz_target.h"

namespace hvd::fuzz {

std::string FuzzConfigFile(std::string_view input) {
  std::string outcome;
  Note(&outcome, cmd::ParseConfigYaml(std::string(input), "fuzz.yaml").status());
  return outcome;
}

}  // namespace hvd::fuzz
