#include "runtime/transports/gpu_path.h"

#include <algorithm>
#include <map>
#include <string_view>

#include "common/printable.h"

namespace hvd::runtime {
namespace {

constexpr std::string_view kKernelLine = "\nscale-kernel";

// An identity's parts: "<mode>\n<machine>\n<bus>", the kernel line taken off before.
struct Identity {
  std::string mode;
  std::string where;  // "<machine>\n<bus>"
};

bool Split(const std::string& id, Identity* out) {
  const size_t first = id.find('\n');
  if (first == std::string::npos || first == 0) return false;
  const size_t second = id.find('\n', first + 1);
  if (second == std::string::npos || second == first + 1 || second + 1 == id.size() ||
      id.find('\n', second + 1) != std::string::npos) {
    return false;
  }
  out->mode = id.substr(0, first);
  out->where = id.substr(first + 1);
  return true;
}

}  // namespace

std::string DecideGpuPath(const std::vector<std::string>& identities) {
  std::string mode0;
  std::map<std::string, size_t> owner;  // "<host>\n<bus>" -> first rank using it
  std::string shared;
  bool every_kernel = true;
  for (size_t r = 0; r < identities.size(); ++r) {
    std::string id = identities[r];
    if (id.ends_with(kKernelLine)) {
      id.resize(id.size() - kKernelLine.size());
    } else {
      every_kernel = false;
    }
    Identity parts;
    if (!Split(id, &parts)) {
      return "Eset rank " + std::to_string(r) + " sent a malformed GPU identity '" +
             Printable(identities[r], 200) +
             "' (expected mode, machine and PCI bus id, a line each)";
    }
    if (r == 0) mode0 = parts.mode;
    if (parts.mode != mode0) {
      return "EHVD_GPU_OPERATIONS differs between ranks: set rank 0 has '" + Printable(mode0, 64) +
             "', set rank " + std::to_string(r) + " has '" + Printable(parts.mode, 64) + "'";
    }
    auto [it, fresh] = owner.emplace(parts.where, r);
    if (!fresh && shared.empty()) {
      std::string gpu = parts.where;
      std::replace(gpu.begin(), gpu.end(), '\n', ' ');
      shared = "set ranks " + std::to_string(it->second) + " and " + std::to_string(r) +
               " share the GPU " + Printable(gpu, 200);
    }
  }
  if (mode0 == "cpu") return "S";
  if (shared.empty()) return every_kernel ? "NK" : "N-";
  if (mode0 == "nccl") {
    return "EHVD_GPU_OPERATIONS=nccl needs a GPU per rank, but " + shared +
           " (NCCL refuses two ranks on one device); use HVD_GPU_OPERATIONS=auto or cpu to "
           "stage through host memory";
  }
  return "S";
}

Result<GpuDecision> ReadGpuDecision(const std::string& decision) {
  if (decision.empty()) return Status::InvalidArgument("no GPU path decision");
  if (decision[0] == 'E') return Status::InvalidArgument(decision.substr(1));
  if (decision == "S") return GpuDecision{};
  if (decision.size() != 2 + kNcclUniqueIdBytes || decision[0] != 'N' ||
      (decision[1] != 'K' && decision[1] != '-')) {
    return Status::Internal("malformed GPU path decision from set rank 0 (" +
                            std::to_string(decision.size()) + " bytes: '" +
                            Printable(decision.substr(0, 2), 8) + "...')");
  }
  return GpuDecision{true, decision[1] == 'K', decision.substr(2)};
}

}  // namespace hvd::runtime
