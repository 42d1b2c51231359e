#include "discovery/lsf.h"

#include <map>
#include <string>
#include <vector>

#include "discovery/host_slots.h"
#include "discovery/text_file.h"
#include "discovery/text_lines.h"

namespace hvd::discovery {
namespace {

// Accumulates slots per host, keeping first-appearance order. `where` says where the host came
// from; it is called only for an error (quoting the whole variable at every word made a long
// LSB_HOSTS quadratic: 128 KiB took 0.6 s; found by the fuzz target "lsf").
class SlotCounter {
 public:
  template <typename Where>
  Status Add(std::string_view host, int slots, const Where& where) {
    Status valid = ValidateHostName(host);
    if (!valid.ok()) return valid.WithContext(where());
    auto [it, inserted] = index_.emplace(std::string(host), hosts_.size());
    if (inserted) {
      hosts_.push_back({std::string(host), slots, std::nullopt});
    } else if (hosts_[it->second].slots > kMaxSlots - slots) {
      return Status::InvalidArgument(where() + ": too many slots for host " + Quote(host));
    } else {
      hosts_[it->second].slots += slots;
    }
    return Status::OK();
  }
  std::vector<HostSlots> Take() { return std::move(hosts_); }

 private:
  std::vector<HostSlots> hosts_;
  std::map<std::string, size_t, std::less<>> index_;
};

Result<std::vector<HostSlots>> FromHostfile(const std::string& path) {
  HVD_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path, "LSB_DJOB_HOSTFILE"));
  SlotCounter counter;
  for (const TextLine& line : SplitLines(text)) {
    std::string_view host = Trim(line.text);
    if (host.empty()) continue;
    auto where = [&] {
      return path + ":" + std::to_string(line.number) + ": line " + Quote(line.text);
    };
    HVD_RETURN_IF_ERROR(counter.Add(host, 1, where));
  }
  return counter.Take();
}

Result<std::vector<HostSlots>> FromMcpuHosts(const std::string& value) {
  std::vector<Token> tokens = SplitWhitespace(value);
  if (tokens.size() % 2 != 0) {
    return Status::InvalidArgument("LSB_MCPU_HOSTS=" + Quote(value) +
                                   ": expected 'host count' pairs, got " +
                                   std::to_string(tokens.size()) + " words");
  }
  SlotCounter counter;
  for (size_t i = 0; i < tokens.size(); i += 2) {
    auto at = [&] {
      return "LSB_MCPU_HOSTS=" + Quote(value) + ", column " + std::to_string(tokens[i].offset + 1);
    };
    Result<int> slots = ParseSlotCount(tokens[i + 1].text, "slot count");
    if (!slots.ok()) return slots.status().WithContext(at());
    HVD_RETURN_IF_ERROR(counter.Add(tokens[i].text, *slots, at));
  }
  return counter.Take();
}

Result<std::vector<HostSlots>> FromHosts(const std::string& value) {
  SlotCounter counter;
  for (const Token& token : SplitWhitespace(value)) {
    auto at = [&] {
      return "LSB_HOSTS=" + Quote(value) + ", column " + std::to_string(token.offset + 1);
    };
    HVD_RETURN_IF_ERROR(counter.Add(token.text, 1, at));
  }
  return counter.Take();
}

}  // namespace

Result<std::optional<Allocation>> LsfAllocation(const env::Environment& env) {
  if (!env.Raw("LSB_JOBID").has_value()) return std::optional<Allocation>();
  Allocation allocation;
  if (std::optional<std::string> path = env.Raw("LSB_DJOB_HOSTFILE")) {
    HVD_ASSIGN_OR_RETURN(allocation.hosts, FromHostfile(*path));
    allocation.source = "LSF allocation (LSB_DJOB_HOSTFILE=" + *path + ")";
  } else if (std::optional<std::string> mcpu = env.Raw("LSB_MCPU_HOSTS")) {
    HVD_ASSIGN_OR_RETURN(allocation.hosts, FromMcpuHosts(*mcpu));
    allocation.source = "LSF allocation (LSB_MCPU_HOSTS)";
  } else if (std::optional<std::string> hosts = env.Raw("LSB_HOSTS")) {
    HVD_ASSIGN_OR_RETURN(allocation.hosts, FromHosts(*hosts));
    allocation.source = "LSF allocation (LSB_HOSTS)";
  } else {
    return Status::InvalidArgument(
        "LSB_JOBID is set but none of LSB_DJOB_HOSTFILE, LSB_MCPU_HOSTS, LSB_HOSTS is; cannot "
        "tell which hosts the LSF job has (give -H or --hostfile)");
  }
  if (allocation.hosts.empty()) {
    return Status::InvalidArgument(allocation.source + " lists no hosts");
  }
  return std::optional<Allocation>(std::move(allocation));
}

}  // namespace hvd::discovery
