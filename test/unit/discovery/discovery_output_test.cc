#include "discovery/discovery_output.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace hvd::discovery {
namespace {

using ::testing::HasSubstr;

struct GoodOutputCase {
  std::string text;
  std::optional<int> default_slots;
  std::vector<HostSlots> want;
};

TEST(ParseDiscoveryOutputTest, ParsesHostsAndSlots) {
  const std::vector<GoodOutputCase> cases = {
      {"a:2\nb:4\n", {}, {{"a", 2, {}}, {"b", 4, {}}}},
      {"a\nb:3", 2, {{"a", 2, {}}, {"b", 3, {}}}},
      {"\n  a:2  \n\n\r\nb:1\r\n", {}, {{"a", 2, {}}, {"b", 1, {}}}},
      {"a:2\nb:1\na:2\n", {}, {{"a", 2, {}}, {"b", 1, {}}}},
      {"a\na:4\n", 4, {{"a", 4, {}}}},
      {"[fe80::1]:2\n", {}, {{"fe80::1", 2, {}}}},
      {"", {}, {}},
      {"\n\n", 1, {}},
  };
  for (const GoodOutputCase& c : cases) {
    Result<std::vector<HostSlots>> got = ParseDiscoveryOutput(c.text, c.default_slots);
    ASSERT_TRUE(got.ok()) << c.text << ": " << got.status().ToString();
    EXPECT_EQ(*got, c.want) << c.text;
  }
}

TEST(ParseDiscoveryOutputTest, RejectsBadLinesNamingThem) {
  struct Bad {
    std::string text;
    std::optional<int> default_slots;
    std::vector<std::string> fragments;
  };
  const std::vector<Bad> cases = {
      {"a:2\nb\n", {}, {"line 2", "host 'b' has no ':slots'", "--slots-per-host", "line: 'b'"}},
      {"a:2\nb:x\n", {}, {"line 2", "slot count 'x'", "line: 'b:x'"}},
      {"a:0", {}, {"line 1", "slot count '0'"}},
      {"a:2\n\nb c:1", {}, {"line 3", "'b c'"}},
      {"a:2\na:3\n", {}, {"line 2", "host 'a' has 3 slots but line 1 gave it 2"}},
      {"a", 0, {"--slots-per-host must be at least 1, got 0"}},
  };
  for (const Bad& c : cases) {
    Result<std::vector<HostSlots>> got = ParseDiscoveryOutput(c.text, c.default_slots);
    ASSERT_FALSE(got.ok()) << c.text;
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
    for (const std::string& fragment : c.fragments) {
      EXPECT_THAT(got.status().message(), HasSubstr(fragment)) << c.text;
    }
  }
}

}  // namespace
}  // namespace hvd::discovery
