#include "discovery/rank_plan.h"

#include <algorithm>

#include "discovery/host_spec.h"
#include "discovery/text_lines.h"

namespace hvd::discovery {
namespace {

Status CheckRequest(const std::vector<HostSlots>& hosts, int num_proc) {
  if (num_proc <= 0) {
    return Status::InvalidArgument("the number of processes must be at least 1, got " +
                                   std::to_string(num_proc));
  }
  if (hosts.empty()) return Status::InvalidArgument("no hosts to place processes on");
  long long total = 0;
  for (const HostSlots& host : hosts) {
    if (host.slots < 1) {
      return Status::InvalidArgument("host " + Quote(host.host) + " has " +
                                     std::to_string(host.slots) + " slots; at least 1 is needed");
    }
    total += host.slots;
  }
  if (num_proc > total) {
    return Status::InvalidArgument(
        "requested " + std::to_string(num_proc) + " processes but the hosts provide only " +
        std::to_string(total) + " slots (" + FormatHostSpec(hosts) + ")");
  }
  return Status::OK();
}

}  // namespace

Result<std::vector<RankInfo>> PlanRanks(const std::vector<HostSlots>& hosts, int num_proc) {
  HVD_RETURN_IF_ERROR(CheckRequest(hosts, num_proc));
  // placed[h]: ranks on host h; the first hosts fill up, the rest may get fewer or none.
  std::vector<int> placed;
  int remaining = num_proc;
  for (const HostSlots& host : hosts) {
    placed.push_back(std::min(host.slots, remaining));
    remaining -= placed.back();
  }
  // column_size[l]: hosts that have a rank with local rank l.
  std::vector<int> column_size(static_cast<size_t>(*std::max_element(placed.begin(), placed.end())),
                               0);
  for (int count : placed) {
    for (int l = 0; l < count; ++l) ++column_size[static_cast<size_t>(l)];
  }
  std::vector<int> column_seen(column_size.size(), 0);
  // The hosts that get ranks are a prefix of `hosts` (each fills up before the next).
  const int host_count =
      static_cast<int>(std::count_if(placed.begin(), placed.end(), [](int n) { return n > 0; }));
  std::vector<RankInfo> ranks;
  ranks.reserve(static_cast<size_t>(num_proc));
  for (size_t h = 0; h < hosts.size(); ++h) {
    for (int l = 0; l < placed[h]; ++l) {
      size_t column = static_cast<size_t>(l);
      ranks.push_back({static_cast<int>(ranks.size()), l, placed[h], column_seen[column]++,
                       column_size[column], hosts[h].host, static_cast<int>(h), host_count});
    }
  }
  return ranks;
}

}  // namespace hvd::discovery
