#include "discovery/host_spec.h"

#include <map>

#include "discovery/text_lines.h"

namespace hvd::discovery {

Result<std::vector<HostSlots>> ParseHostSpec(std::string_view text) {
  if (Trim(text).empty()) {
    return Status::InvalidArgument("host spec " + Quote(text) +
                                   " is empty; expected 'host:slots,host2:slots'");
  }
  std::vector<HostSlots> hosts;
  std::map<std::string, size_t, std::less<>> first_column;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view raw = text.substr(start, end - start);
    std::string_view item = Trim(raw);
    size_t column = start + 1 + (item.empty() ? 0 : static_cast<size_t>(item.data() - raw.data()));
    // Built only for an error: quoting the whole spec at every item made a long spec
    // quadratic (a 128 KiB -H took 0.3 s; found by the fuzz target "host_spec").
    auto where = [&] { return "host spec " + Quote(text) + ", column " + std::to_string(column); };
    if (item.empty()) {
      return Status::InvalidArgument(where() + ": empty item (stray ',')");
    }
    Result<HostItem> parsed = ParseHostItem(item);
    if (!parsed.ok()) return parsed.status().WithContext(where() + ", item " + Quote(item));
    auto [it, inserted] = first_column.emplace(parsed->host, column);
    if (!inserted) {
      return Status::InvalidArgument(where() + ": duplicate host " + Quote(parsed->host) +
                                     " in item " + Quote(item) + " (first at column " +
                                     std::to_string(it->second) + ")");
    }
    hosts.push_back({parsed->host, parsed->slots.value_or(1), std::nullopt});
    start = end + 1;
  }
  return hosts;
}

std::string FormatHostSpec(const std::vector<HostSlots>& hosts) {
  std::string out;
  for (const HostSlots& host : hosts) {
    if (!out.empty()) out += ',';
    out += FormatHostSlots(host);
  }
  return out;
}

}  // namespace hvd::discovery
