#include "discovery/host_blacklist.h"

#include <gtest/gtest.h>

namespace hvd::discovery {
namespace {

using Clock = HostBlacklist::Clock;
using std::chrono::seconds;

TEST(HostBlacklistTest, WithoutARangeAHostStaysForGood) {
  HostBlacklist blacklist(std::nullopt, 1);
  Clock::time_point t0{};
  EXPECT_FALSE(blacklist.Contains("a", t0));
  EXPECT_FALSE(blacklist.Add("a", t0).has_value());
  EXPECT_TRUE(blacklist.Contains("a", t0 + seconds(100000)));
  EXPECT_FALSE(blacklist.Contains("b", t0));
  EXPECT_FALSE(blacklist.NextExpiry(t0).has_value());
  EXPECT_EQ(blacklist.Hosts(t0), std::vector<std::string>{"a"});
}

TEST(HostBlacklistTest, CooldownGrowsExponentiallyWithinTheRange) {
  HostBlacklist blacklist(std::make_pair(2, 10), 7);
  Clock::time_point now{};
  // n-th period: 2 * 2^n + U(0,1) * 2, clamped to [2, 10].
  const double lows[] = {2, 4, 8, 10, 10};
  const double highs[] = {4, 6, 10, 10, 10};
  for (int n = 0; n < 5; ++n) {
    std::optional<Clock::duration> period = blacklist.Add("a", now);
    ASSERT_TRUE(period.has_value());
    double s = std::chrono::duration<double>(*period).count();
    EXPECT_GE(s, lows[n]) << n;
    EXPECT_LE(s, highs[n]) << n;
    EXPECT_TRUE(blacklist.Contains("a", now + *period - std::chrono::milliseconds(1)));
    EXPECT_EQ(blacklist.NextExpiry(now), now + *period);
    EXPECT_FALSE(blacklist.Contains("a", now + *period)) << "resurrected after the period";
    now += *period;
  }
  EXPECT_EQ(blacklist.Count("a"), 5);
}

}  // namespace
}  // namespace hvd::discovery
