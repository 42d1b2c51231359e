#include "discovery/allocation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/support/temp_file.h"

namespace hvd::discovery {
namespace {

using ::testing::HasSubstr;

const std::map<std::string, std::string> kSlurm = {
    {"SLURM_JOB_NODELIST", "s[1-2]"}, {"SLURM_TASKS_PER_NODE", "4(x2)"}, {"SLURM_NTASKS", "6"}};
const std::map<std::string, std::string> kLsf = {{"LSB_JOBID", "3"},
                                                 {"LSB_MCPU_HOSTS", "l1 2 l2 2"}};

std::map<std::string, std::string> Merge(std::map<std::string, std::string> a,
                                         const std::map<std::string, std::string>& b) {
  a.insert(b.begin(), b.end());
  return a;
}

struct Case {
  std::string name;
  std::string hosts_text;
  bool use_hostfile;
  std::optional<int> num_proc;
  std::map<std::string, std::string> vars;
  std::vector<HostSlots> want_hosts;
  int want_num_proc;
  std::string want_source;  // "--hostfile" means "--hostfile <temp path>"
};

TEST(ResolveAllocationTest, FollowsPrecedenceAndNumProcRules) {
  hvd::testing::TempFile hostfile("alloc_hosts", "f1 slots=3\nf2 slots=1\n");
  const std::vector<Case> cases = {
      {"-H sums slots", "a:2,b:1", false, {}, {}, {{"a", 2, {}}, {"b", 1, {}}}, 3, "-H"},
      {"-H with -np", "a:2,b:1", false, 2, {}, {{"a", 2, {}}, {"b", 1, {}}}, 2, "-H"},
      {"-H beats Slurm and LSF", "a:2", false, {}, Merge(kSlurm, kLsf), {{"a", 2, {}}}, 2, "-H"},
      {"hostfile beats Slurm",
       "",
       true,
       {},
       kSlurm,
       {{"f1", 3, {}}, {"f2", 1, {}}},
       4,
       "--hostfile"},
      {"Slurm ntasks",
       "",
       false,
       {},
       kSlurm,
       {{"s1", 4, {}}, {"s2", 4, {}}},
       6,
       "Slurm allocation (SLURM_JOB_NODELIST=s[1-2])"},
      {"explicit np beats Slurm ntasks",
       "",
       false,
       8,
       kSlurm,
       {{"s1", 4, {}}, {"s2", 4, {}}},
       8,
       "Slurm allocation (SLURM_JOB_NODELIST=s[1-2])"},
      {"Slurm beats LSF",
       "",
       false,
       {},
       Merge(kSlurm, kLsf),
       {{"s1", 4, {}}, {"s2", 4, {}}},
       6,
       "Slurm allocation (SLURM_JOB_NODELIST=s[1-2])"},
      {"LSF sums slots",
       "",
       false,
       {},
       kLsf,
       {{"l1", 2, {}}, {"l2", 2, {}}},
       4,
       "LSF allocation (LSB_MCPU_HOSTS)"},
      {"default localhost",
       "",
       false,
       3,
       {{"PATH", "/bin"}},
       {{"localhost", 3, {}}},
       3,
       "default (localhost)"},
  };
  for (const Case& c : cases) {
    std::string path = c.use_hostfile ? hostfile.path() : "";
    Result<Allocation> got =
        ResolveAllocation(c.hosts_text, path, c.num_proc, env::Environment::FromMap(c.vars));
    ASSERT_TRUE(got.ok()) << c.name << ": " << got.status().ToString();
    EXPECT_EQ(got->hosts, c.want_hosts) << c.name;
    EXPECT_EQ(got->num_proc, c.want_num_proc) << c.name;
    std::string source = c.want_source == "--hostfile" ? "--hostfile " + path : c.want_source;
    EXPECT_EQ(got->source, source) << c.name;
  }
}

TEST(ResolveAllocationTest, RejectsConflictsAndMissingInformation) {
  hvd::testing::TempFile hostfile("alloc_conflict", "f1\n");
  struct Bad {
    std::string hosts_text;
    std::string hostfile_path;
    std::optional<int> num_proc;
    std::map<std::string, std::string> vars;
    std::vector<std::string> fragments;
  };
  const std::vector<Bad> cases = {
      {"a:1", hostfile.path(), {}, {}, {"mutually exclusive", "'a:1'", hostfile.path()}},
      {"", "", {}, {}, {"-np is required when no hosts are given"}},
      {"a:1", "", 0, {}, {"-np must be at least 1, got 0"}},
      {"", "", -2, {}, {"-np must be at least 1, got -2"}},
      {"a:0", "", {}, {}, {"'a:0'", "slot count '0'"}},
      {"",
       hvd::testing::MissingPath(),
       {},
       {},
       {"cannot read hostfile", hvd::testing::MissingPath()}},
      {"", "", 2, {{"SLURM_JOB_NODELIST", "n[1-"}}, {"SLURM_JOB_NODELIST", "unmatched"}},
      {"", "", 2, {{"LSB_JOBID", "1"}}, {"LSB_JOBID is set"}},
  };
  for (const Bad& c : cases) {
    Result<Allocation> got = ResolveAllocation(c.hosts_text, c.hostfile_path, c.num_proc,
                                               env::Environment::FromMap(c.vars));
    ASSERT_FALSE(got.ok()) << c.fragments.front();
    for (const std::string& fragment : c.fragments) {
      EXPECT_THAT(got.status().message(), HasSubstr(fragment));
    }
  }
}

TEST(ResolveAllocationTest, LocalDefaultStandsInForAMissingNumProcOnlyWithoutHosts) {
  // hvdrun --check with no hosts checks this machine; with hosts, all of them.
  Result<Allocation> local = ResolveAllocation("", "", {}, env::Environment::FromMap({}), 1);
  ASSERT_TRUE(local.ok()) << local.status().message();
  EXPECT_EQ(local->hosts, (std::vector<HostSlots>{{"localhost", 1, {}}}));
  EXPECT_EQ(local->num_proc, 1);
  Result<Allocation> hosts = ResolveAllocation("a:2,b:2", "", {}, env::Environment::FromMap({}), 1);
  ASSERT_TRUE(hosts.ok()) << hosts.status().message();
  EXPECT_EQ(hosts->num_proc, 4);
  EXPECT_EQ(ResolveAllocation("", "", 3, env::Environment::FromMap({}), 1)->num_proc, 3);
}

}  // namespace
}  // namespace hvd::discovery
