#include "discovery/host_blacklist.h"

#include <algorithm>
#include <cmath>

namespace hvd::discovery {

HostBlacklist::HostBlacklist(std::optional<std::pair<int, int>> cooldown_range_s, uint64_t seed)
    : range_(cooldown_range_s), rng_(seed) {}

std::optional<HostBlacklist::Clock::duration> HostBlacklist::Add(const std::string& host,
                                                                 Clock::time_point now) {
  Entry& entry = entries_[host];
  const int n = entry.count++;
  if (!range_) {
    entry.until.reset();
    return std::nullopt;
  }
  const double lo = range_->first;
  const double hi = range_->second;
  const double jitter = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
  const double seconds = std::clamp(lo * std::ldexp(1.0, std::min(n, 30)) + jitter * lo, lo, hi);
  auto period = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  entry.until = now + period;
  return period;
}

bool HostBlacklist::Contains(const std::string& host, Clock::time_point now) const {
  auto it = entries_.find(host);
  if (it == entries_.end() || it->second.count == 0) return false;
  return !it->second.until || now < *it->second.until;
}

int HostBlacklist::Count(const std::string& host) const {
  auto it = entries_.find(host);
  return it == entries_.end() ? 0 : it->second.count;
}

std::optional<HostBlacklist::Clock::time_point> HostBlacklist::NextExpiry(
    Clock::time_point now) const {
  std::optional<Clock::time_point> next;
  for (const auto& [host, entry] : entries_) {
    if (entry.until && *entry.until > now && (!next || *entry.until < *next)) next = entry.until;
  }
  return next;
}

std::vector<std::string> HostBlacklist::Hosts(Clock::time_point now) const {
  std::vector<std::string> hosts;
  for (const auto& [host, entry] : entries_) {
    if (Contains(host, now)) hosts.push_back(host);
  }
  return hosts;
}

}  // namespace hvd::discovery
