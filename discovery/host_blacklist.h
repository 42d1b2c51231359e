#ifndef HVD_DISCOVERY_HOST_BLACKLIST_H_
#define HVD_DISCOVERY_HOST_BLACKLIST_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace hvd::discovery {

// The hosts an elastic job no longer places ranks on because a rank there failed.
//
// Without a cooldown range (--blacklist-cooldown-range) a host stays blacklisted for the rest
// of the job, as in horovodrun. With [lo, hi] seconds, the n-th blacklisting of a host
// (n = 0, 1, ...) lasts lo * 2^n + U(0,1) * lo seconds, clamped to [lo, hi]: Horovod's
// exponential backoff, except that Horovod starts at n = 1 (a first period of about 2 * lo
// while its docs say lo); here the first period is between lo and 2 * lo. Once the period is
// over the host is usable again if discovery still lists it ("resurrected").
//
// Time is passed in, so tests need no clock; the jitter comes from a seeded generator. Not
// synchronized.
class HostBlacklist {
 public:
  using Clock = std::chrono::steady_clock;

  HostBlacklist(std::optional<std::pair<int, int>> cooldown_range_s, uint64_t seed);

  // Blacklists `host` from `now`; returns how long (nullopt = for good).
  std::optional<Clock::duration> Add(const std::string& host, Clock::time_point now);
  bool Contains(const std::string& host, Clock::time_point now) const;
  // How many times `host` was blacklisted.
  int Count(const std::string& host) const;
  // The earliest moment after `now` a blacklisted host becomes usable again, if any.
  std::optional<Clock::time_point> NextExpiry(Clock::time_point now) const;
  // Blacklisted hosts at `now` (for messages).
  std::vector<std::string> Hosts(Clock::time_point now) const;

 private:
  struct Entry {
    int count = 0;
    std::optional<Clock::time_point> until;  // nullopt = for good
  };

  std::optional<std::pair<int, int>> range_;
  std::mt19937_64 rng_;
  std::map<std::string, Entry> entries_;
};

}  // namespace hvd::discovery

#endif  // HVD_DISCOVERY_HOST_BLACKLIST_H_
