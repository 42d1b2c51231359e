#include "discovery/discovery_output.h"

#include <map>
#include <string>

#include "discovery/text_lines.h"

namespace hvd::discovery {

Result<std::vector<HostSlots>> ParseDiscoveryOutput(std::string_view text,
                                                    std::optional<int> default_slots) {
  if (default_slots.has_value() && *default_slots < 1) {
    return Status::InvalidArgument("--slots-per-host must be at least 1, got " +
                                   std::to_string(*default_slots));
  }
  std::vector<HostSlots> hosts;
  std::map<std::string, std::pair<size_t, int>, std::less<>> seen;  // host -> (index, line)
  for (const TextLine& line : SplitLines(text)) {
    std::string_view item = Trim(line.text);
    if (item.empty()) continue;
    std::string where = "discovery script output line " + std::to_string(line.number);
    std::string quoted_line = "; line: " + Quote(line.text);
    Result<HostItem> parsed = ParseHostItem(item);
    if (!parsed.ok()) {
      return Status::InvalidArgument(where + ": " + parsed.status().message() + quoted_line);
    }
    if (!parsed->slots.has_value() && !default_slots.has_value()) {
      return Status::InvalidArgument(where + ": host " + Quote(parsed->host) +
                                     " has no ':slots' and --slots-per-host is not set" +
                                     quoted_line);
    }
    int slots = parsed->slots.value_or(default_slots.value_or(1));
    auto [it, inserted] = seen.emplace(parsed->host, std::make_pair(hosts.size(), line.number));
    if (inserted) {
      hosts.push_back({parsed->host, slots, std::nullopt});
    } else if (hosts[it->second.first].slots != slots) {
      return Status::InvalidArgument(where + ": host " + Quote(parsed->host) + " has " +
                                     std::to_string(slots) + " slots but line " +
                                     std::to_string(it->second.second) + " gave it " +
                                     std::to_string(hosts[it->second.first].slots) + quoted_line);
    }
  }
  return hosts;
}

}  // namespace hvd::discovery
