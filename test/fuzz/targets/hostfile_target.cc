// Target "hostfile": a --hostfile's text (discovery/hostfile.h). Every host it yields has
// at least one slot and max_slots >= slots.
#include "common/check.h"
#include "discovery/hostfile.h"
#include "test/fuzz/fuzz_input.h"
#include "test/fuzz/fuzz_target.h"

namespace hvd::fuzz {

std::string FuzzHostfile(std::string_view input) {
  std::string outcome;
  Result<std::vector<discovery::HostSlots>> hosts = discovery::ParseHostfile(input, "fuzz-hosts");
  Note(&outcome, hosts.status());
  if (hosts.ok()) {
    HVD_CHECK(!hosts->empty());
    for (const discovery::HostSlots& host : *hosts) {
      HVD_CHECK_GE(host.slots, 1);
      if (host.max_slots) HVD_CHECK_GE(*host.max_slots, host.slots);
    }
  }
  return outcome;
}

}  // namespace hvd::fuzz
