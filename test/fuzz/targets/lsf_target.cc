// Target "lsf": the LSF job's variables as hvdrun reads them (discovery/lsf.h). Input: a mode
// byte, then one value. Mode 0: LSB_MCPU_HOSTS; 1: LSB_HOSTS; 2: the content of the file
// LSB_DJOB_HOSTFILE names (an in-memory file, read through its /proc/self/fd path, so the
// production read runs too).
#include <sys/mman.h>
#include <unistd.h>

#include <map>

#include "common/check.h"
#include "common/env_registry.h"
#include "discovery/lsf.h"
#include "test/fuzz/fuzz_input.h"
#include "test/fuzz/fuzz_target.h"

namespace hvd::fuzz {
namespace {

// A memfd holding `text`; its path stays valid for the process's life.
std::string InMemoryFile(std::string_view text) {
  static const int fd = memfd_create("hvd-fuzz-lsf-hostfile", MFD_CLOEXEC);
  HVD_CHECK_GE(fd, 0);
  HVD_CHECK_EQ(ftruncate(fd, 0), 0);
  HVD_CHECK_EQ(pwrite(fd, text.data(), text.size(), 0), static_cast<ssize_t>(text.size()));
  return "/proc/self/fd/" + std::to_string(fd);
}

}  // namespace

std::string FuzzLsf(std::string_view input) {
  FuzzInput in(input);
  const uint8_t mode = in.Byte() % 3;
  std::string value(in.Rest());
  std::map<std::string, std::string> vars = {{"LSB_JOBID", "1"}};
  if (mode == 0) vars["LSB_MCPU_HOSTS"] = value;
  if (mode == 1) vars["LSB_HOSTS"] = value;
  if (mode == 2) vars["LSB_DJOB_HOSTFILE"] = InMemoryFile(value);
  std::string outcome;
  Result<std::optional<discovery::Allocation>> allocation =
      discovery::LsfAllocation(env::Environment::FromMap(std::move(vars)));
  Note(&outcome, allocation.status());
  if (allocation.ok()) {
    HVD_CHECK(allocation->has_value() && !(*allocation)->hosts.empty());
    for (const discovery::HostSlots& host : (*allocation)->hosts) HVD_CHECK_GE(host.slots, 1);
  }
  return outcome;
}

}  // namespace hvd::fuzz
