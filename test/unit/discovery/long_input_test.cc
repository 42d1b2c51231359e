// Regression tests named after what broke: every parser quoted the whole input again at every
// item, so a long -H value, Slurm or LSF variable took time quadratic in its length (a 128 KiB
// value, the most one argument or variable can hold, took 0.2 to 0.6 s; these 512 KiB inputs
// took seconds). Found while fuzzing (docs/fuzzing.md); now each is linear, milliseconds.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>

#include "common/env_registry.h"
#include "discovery/host_spec.h"
#include "discovery/lsf.h"
#include "discovery/slurm.h"

namespace hvd::discovery {
namespace {

constexpr size_t kLong = 512 << 10;
// Far above the linear parsers' time (milliseconds), far below the quadratic ones' (seconds).
// In a sanitizer build (HVD_SANITIZED, CMakeLists.txt) 10 s: those runs check memory, not
// speed, and under ASan at -O0 (scripts/sanitize.sh) the host spec took 1.15 s beside another
// test. Comparing the times of 128 and 512 KiB inputs instead was tried: even the linear
// parsers' times grew 8 to 18 times at -O2 (a third of it page faults), as a quadratic one's
// would (16).
constexpr double kMaxSeconds = HVD_SANITIZED ? 10.0 : 1.0;

double Seconds(const std::function<void()>& parse) {
  auto start = std::chrono::steady_clock::now();
  parse();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// "<prefix>0,<prefix>1,..." of about kLong bytes.
std::string Numbered(const std::string& prefix, const std::string& separator) {
  std::string text;
  for (int i = 0; text.size() < kLong; ++i)
    text += (i ? separator : "") + prefix + std::to_string(i);
  return text;
}

std::string Repeated(const std::string& piece) {
  std::string text;
  while (text.size() < kLong) text += piece;
  return text;
}

TEST(LongInputTest, HostSpecParsesInLinearTime) {
  const std::string spec = Numbered("h", ",");
  const double took = Seconds([&] { EXPECT_TRUE(ParseHostSpec(spec).ok()); });
  EXPECT_LT(took, kMaxSeconds);
}

TEST(LongInputTest, SlurmNodeListExpandsInLinearTime) {
  // Given a list of 65,536 single names, the most a list may expand to
  std::string nodes = Numbered("n", ",");
  nodes.resize(nodes.rfind(','));
  const double nodes_took = Seconds([&] { ExpandSlurmHostlist(nodes).status(); });
  EXPECT_LT(nodes_took, kMaxSeconds);
  const std::string tasks = Repeated("1,") + "1";
  const double tasks_took = Seconds([&] { ParseSlurmTasksPerNode(tasks).status(); });
  EXPECT_LT(tasks_took, kMaxSeconds);
}

TEST(LongInputTest, SlurmNamesLongerThanAHostNameAreRefusedBeforeTheyAreBuilt) {
  // 65,536 names of 240 characters each took 200 MB and seconds to build before the error
  Result<std::vector<std::string>> names = ExpandSlurmHostlist(std::string(300, 'x') + "[0-65535]");
  ASSERT_FALSE(names.ok());
  EXPECT_NE(names.status().message().find("longer than 253 characters"), std::string::npos)
      << names.status().message();
  names = ExpandSlurmHostlist("n[" + std::string(300, '0') + "1-5]");
  ASSERT_FALSE(names.ok());
  EXPECT_NE(names.status().message().find("longer than a host name"), std::string::npos);
}

TEST(LongInputTest, LsfVariablesParseInLinearTime) {
  const std::pair<std::string, std::string> variables[] = {{"LSB_HOSTS", Repeated("a ")},
                                                           {"LSB_MCPU_HOSTS", Repeated("a 1 ")}};
  for (const auto& variable : variables) {
    env::Environment env =
        env::Environment::FromMap({{"LSB_JOBID", "1"}, {variable.first, variable.second}});
    const double took = Seconds([&env] { EXPECT_TRUE(LsfAllocation(env).ok()); });
    EXPECT_LT(took, kMaxSeconds) << variable.first;
  }
}

}  // namespace
}  // namespace hvd::discovery
