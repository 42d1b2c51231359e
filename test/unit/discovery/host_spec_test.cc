#include "discovery/host_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace hvd::discovery {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

struct GoodSpecCase {
  std::string text;
  std::vector<HostSlots> want;
};

TEST(ParseHostSpecTest, AcceptsValidSpecs) {
  const std::vector<GoodSpecCase> cases = {
      {"localhost:4", {{"localhost", 4, std::nullopt}}},
      {"a:2,b:1,c:2", {{"a", 2, {}}, {"b", 1, {}}, {"c", 2, {}}}},
      {"host", {{"host", 1, {}}}},
      {"a,b:3", {{"a", 1, {}}, {"b", 3, {}}}},
      {" a:2 , b:1 ", {{"a", 2, {}}, {"b", 1, {}}}},
      {"\ta:2,\tb", {{"a", 2, {}}, {"b", 1, {}}}},
      {"[fe80::1]:4", {{"fe80::1", 4, {}}}},
      {"[::1]", {{"::1", 1, {}}}},
      {"[fe80::1%eth0]:2", {{"fe80::1%eth0", 2, {}}}},
      {"10.0.0.1:8,10.0.0.2:8", {{"10.0.0.1", 8, {}}, {"10.0.0.2", 8, {}}}},
      {"node-01.cluster_a:007", {{"node-01.cluster_a", 7, {}}}},
  };
  for (const GoodSpecCase& c : cases) {
    Result<std::vector<HostSlots>> got = ParseHostSpec(c.text);
    ASSERT_TRUE(got.ok()) << c.text << ": " << got.status().ToString();
    EXPECT_EQ(*got, c.want) << c.text;
  }
}

struct BadSpecCase {
  std::string text;
  std::vector<std::string> fragments;  // every one must appear in the message
};

TEST(ParseHostSpecTest, RejectsBadSpecsQuotingItemAndColumn) {
  const std::vector<BadSpecCase> cases = {
      {"", {"host spec ''", "empty"}},
      {"   ", {"host spec '   '", "empty"}},
      {"a:1,,b:1", {"'a:1,,b:1'", "column 5", "empty item"}},
      {"a:1,", {"column 5", "empty item"}},
      {",a", {"column 1", "empty item"}},
      {"a:1,a:2", {"column 5", "duplicate host 'a'", "'a:2'", "first at column 1"}},
      {"a:0", {"column 1", "item 'a:0'", "slot count '0'", "at least 1"}},
      {"b:1, a:-1", {"column 6", "item 'a:-1'", "'-1'", "not a positive integer"}},
      {"a:x", {"item 'a:x'", "slot count 'x'", "not a positive integer"}},
      {"a:", {"item 'a:'", "slot count is empty"}},
      {"a:99999999999", {"'99999999999'", "too large"}},
      {"a:1.5", {"'1.5'", "not a positive integer"}},
      {":4", {"item ':4'", "empty host name"}},
      {"a b:2", {"item 'a b:2'", "host name 'a b'", "contains ' '"}},
      {"ho$t:2", {"'ho$t'", "contains '$'"}},
      {"-a:2", {"'-a'", "starts with '-'"}},
      {"fe80::1:4", {"too many ':'", "brackets"}},
      {"[fe80::1:4", {"unmatched '['"}},
      {"[fe80::1]4", {"expected ':slots' after ']'"}},
      {"[host]:2", {"brackets are only for IPv6"}},
      {"[fe80::g]:2", {"IPv6 address 'fe80::g'", "contains 'g'"}},
      {"x:1,y:2,z:q", {"column 9", "'z:q'", "'q'"}},
  };
  for (const BadSpecCase& c : cases) {
    Result<std::vector<HostSlots>> got = ParseHostSpec(c.text);
    ASSERT_FALSE(got.ok()) << c.text;
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument) << c.text;
    for (const std::string& fragment : c.fragments) {
      EXPECT_THAT(got.status().message(), HasSubstr(fragment)) << c.text;
    }
  }
}

TEST(ParseHostSpecTest, ErrorQuotesWholeSpec) {
  Result<std::vector<HostSlots>> got = ParseHostSpec("good:2,bad:0");
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(),
              AllOf(HasSubstr("'good:2,bad:0'"), HasSubstr("column 8"), HasSubstr("'bad:0'")));
}

TEST(FormatHostSpecTest, RoundTripsThroughParse) {
  std::vector<HostSlots> hosts = {{"a", 2, {}}, {"fe80::1", 4, {}}, {"b", 1, {}}};
  std::string text = FormatHostSpec(hosts);
  EXPECT_EQ(text, "a:2,[fe80::1]:4,b:1");
  Result<std::vector<HostSlots>> parsed = ParseHostSpec(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(*parsed, hosts);
}

}  // namespace
}  // namespace hvd::discovery
