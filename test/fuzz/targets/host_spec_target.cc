// Target "host_spec": the -H / --hosts value (discovery/host_spec.h), which job scripts often
// build from scheduler output. What parses, formats back to a spec that parses to the same
// hosts.
#include "common/check.h"
#include "discovery/host_spec.h"
#include "test/fuzz/fuzz_input.h"
#include "test/fuzz/fuzz_target.h"

namespace hvd::fuzz {

std::string FuzzHostSpec(std::string_view input) {
  std::string outcome;
  Result<std::vector<discovery::HostSlots>> hosts = discovery::ParseHostSpec(input);
  Note(&outcome, hosts.status());
  if (hosts.ok()) {
    const std::string formatted = discovery::FormatHostSpec(*hosts);
    Result<std::vector<discovery::HostSlots>> again = discovery::ParseHostSpec(formatted);
    HVD_CHECK(again.ok()) << "'" << formatted << "': " << again.status().message();
    HVD_CHECK(*again == *hosts) << "'" << formatted << "' parses to other hosts";
  }
  return outcome;
}

}  // namespace hvd::fuzz
