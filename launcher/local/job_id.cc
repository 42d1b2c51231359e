#include "launcher/local/job_id.h"

#include <cstdint>
#include <cstdio>
#include <random>

namespace hvd::launcher {

std::string NewJobId() {
  std::random_device device;
  std::uniform_int_distribution<uint32_t> word;
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%08x%08x", word(device), word(device));
  return buf;
}

}  // namespace hvd::launcher
