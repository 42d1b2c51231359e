#include "discovery/hostfile.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/support/temp_file.h"

namespace hvd::discovery {
namespace {

using ::testing::HasSubstr;

struct GoodHostfileCase {
  std::string name;
  std::string text;
  std::vector<HostSlots> want;
};

TEST(ParseHostfileTest, AcceptsValidFiles) {
  const std::vector<GoodHostfileCase> cases = {
      {"slots", "a slots=2\nb slots=4\n", {{"a", 2, {}}, {"b", 4, {}}}},
      {"bare host", "a\nb slots=3", {{"a", 1, {}}, {"b", 3, {}}}},
      {"max_slots", "a slots=2 max_slots=8\nb max-slots=3", {{"a", 2, 8}, {"b", 1, 3}}},
      {"comments and blanks",
       "# cluster\n\n  \na slots=2   # fast node\n#b slots=9\nc\n",
       {{"a", 2, {}}, {"c", 1, {}}}},
      {"crlf", "a slots=2\r\nb slots=1\r\n", {{"a", 2, {}}, {"b", 1, {}}}},
      {"tabs and indent", "\ta\tslots=2\n  b  slots=1  ", {{"a", 2, {}}, {"b", 1, {}}}},
      {"ipv6", "fe80::1 slots=2\n[fe80::2] slots=3", {{"fe80::1", 2, {}}, {"fe80::2", 3, {}}}},
      {"comment right after host", "a#x\n", {{"a", 1, {}}}},
      // Spaces around '=' (Horovod takes what follows it; refused until 2026-12-01)
      {"spaced equals",
       "a slots = 2\nb slots= 3 max_slots =4\nc slots =1",
       {{"a", 2, {}}, {"b", 3, 4}, {"c", 1, {}}}},
  };
  for (const GoodHostfileCase& c : cases) {
    Result<std::vector<HostSlots>> got = ParseHostfile(c.text, "hosts.txt");
    ASSERT_TRUE(got.ok()) << c.name << ": " << got.status().ToString();
    EXPECT_EQ(*got, c.want) << c.name;
  }
}

struct BadHostfileCase {
  std::string text;
  std::vector<std::string> fragments;
};

TEST(ParseHostfileTest, RejectsBadLinesNamingFileLineAndColumn) {
  const std::vector<BadHostfileCase> cases = {
      {"a slots=2\nb slots=x\n", {"hosts.txt:2:9:", "slots 'x'", "line: 'b slots=x'"}},
      {"a slots=0", {"hosts.txt:1:9:", "slots '0'", "at least 1"}},
      {"a slots=", {"hosts.txt:1:9:", "slots is empty"}},
      {"a slots = x", {"hosts.txt:1:11:", "slots 'x'"}},
      {"a slots=-2", {"hosts.txt:1:9:", "'-2'", "not a positive integer"}},
      {"a\n\n  a slots=2", {"hosts.txt:3:3:", "duplicate host 'a'", "first on line 1"}},
      {"a slot=2", {"hosts.txt:1:3:", "unknown key 'slot'"}},
      {"a 4", {"hosts.txt:1:3:", "expected key=value", "'4'"}},
      {"a slots=2 slots=3", {"hosts.txt:1:11:", "repeated key 'slots'"}},
      {"a slots=4 max_slots=2", {"hosts.txt:1:1:", "max_slots=2 is less than slots=4"}},
      {"# x\r\nb@c slots=1\r\n", {"hosts.txt:2:1:", "'b@c'", "line: 'b@c slots=1'"}},
      {"  -bad", {"hosts.txt:1:3:", "starts with '-'"}},
      // -H's syntax in a hostfile: the line it meant is named.
      {"localhost:2\n",
       {"hosts.txt:1:1:",
        "(a hostfile line is 'localhost slots=2'; 'host:N' is "
        "-H's syntax)"}},
      {"", {"hostfile 'hosts.txt' lists no hosts"}},
      {"# only comments\n\n", {"lists no hosts"}},
  };
  for (const BadHostfileCase& c : cases) {
    Result<std::vector<HostSlots>> got = ParseHostfile(c.text, "hosts.txt");
    ASSERT_FALSE(got.ok()) << c.text;
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument) << c.text;
    for (const std::string& fragment : c.fragments) {
      EXPECT_THAT(got.status().message(), HasSubstr(fragment)) << c.text;
    }
  }
}

TEST(ReadHostfileTest, ReadsFileAndNamesItInErrors) {
  hvd::testing::TempFile good("good_hosts", "a slots=2\nb\n");
  Result<std::vector<HostSlots>> got = ReadHostfile(good.path());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, (std::vector<HostSlots>{{"a", 2, {}}, {"b", 1, {}}}));

  hvd::testing::TempFile bad("bad_hosts", "a slots=2\nb slots=q\n");
  got = ReadHostfile(bad.path());
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(), HasSubstr(bad.path() + ":2:9:"));
}

TEST(ReadHostfileTest, MissingFileIsIoErrorNamingPath) {
  std::string path = hvd::testing::MissingPath();
  Result<std::vector<HostSlots>> got = ReadHostfile(path);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kIoError);
  EXPECT_THAT(got.status().message(), HasSubstr("'" + path + "'"));
  EXPECT_THAT(got.status().message(), HasSubstr("No such file"));
}

TEST(ReadHostfileTest, DirectoryIsIoError) {
  Result<std::vector<HostSlots>> got = ReadHostfile(::testing::TempDir());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kIoError);
}

}  // namespace
}  // namespace hvd::discovery
