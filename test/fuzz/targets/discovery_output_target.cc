// Target "discovery_output": what an elastic --host-discovery-script prints
// (discovery/discovery_output.h). Input: a byte for --slots-per-host (0: not given; else its
// value as a signed byte, so bad values are tried too), then the script's output.
#include "common/check.h"
#include "discovery/discovery_output.h"
#include "test/fuzz/fuzz_input.h"
#include "test/fuzz/fuzz_target.h"

namespace hvd::fuzz {

std::string FuzzDiscoveryOutput(std::string_view input) {
  FuzzInput in(input);
  const auto slots_byte = static_cast<int8_t>(in.Byte());
  std::optional<int> default_slots;
  if (slots_byte != 0) default_slots = slots_byte;
  std::string outcome;
  Result<std::vector<discovery::HostSlots>> hosts =
      discovery::ParseDiscoveryOutput(in.Rest(), default_slots);
  Note(&outcome, hosts.status());
  if (hosts.ok()) {
    for (const discovery::HostSlots& host : *hosts) HVD_CHECK_GE(host.slots, 1);
  }
  return outcome;
}

}  // namespace hvd::fuzz
