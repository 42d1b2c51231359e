#include "common/shm_names.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

namespace hvd::control {
namespace {

// A pid that no process has: a child that exited and was reaped.
pid_t DeadPid() {
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

class ShmNamesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("hvd_shm_names_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  // Creates the entry a segment of (job, scope, pid) would have; returns its name.
  std::string Touch(const std::string& job, const std::string& scope, pid_t pid) {
    const std::string name = ShmSegmentName(job, scope, pid).substr(1);
    std::ofstream(dir_ / name) << "x";
    return name;
  }
  bool Exists(const std::string& name) const { return std::filesystem::exists(dir_ / name); }

  std::filesystem::path dir_;
};

TEST_F(ShmNamesTest, NamesCarryTheJobTheScopeAndTheCreator) {
  const std::string name = ShmSegmentName("job-a", "scope/x", 4242);
  EXPECT_EQ(name.rfind("/" + ShmSegmentPrefix("job-a"), 0), 0u) << name;
  EXPECT_EQ(name.substr(name.size() - 5), "-4242");
  EXPECT_EQ(name.size(), std::string("/hvd-").size() + 16 + 1 + 16 + 1 + 4) << name;
  EXPECT_NE(ShmSegmentPrefix("job-a"), ShmSegmentPrefix("job-b"));
  EXPECT_NE(ShmSegmentName("job-a", "s1", 1), ShmSegmentName("job-a", "s2", 1));
}

TEST_F(ShmNamesTest, OnlyThisJobsNamesWhoseCreatorIsGoneAreRemoved) {
  // Given this job's names from a dead creator (two scopes) and a live one (this process, still
  // gathering its group), another job's name from the dead creator, and unrelated entries
  const pid_t dead = DeadPid();
  const std::string orphan1 = Touch("job-a", "s1", dead);
  const std::string orphan2 = Touch("job-a", "s2", dead);
  const std::string live = Touch("job-a", "s3", ::getpid());
  const std::string other_job = Touch("job-b", "s1", dead);
  const std::string malformed = ShmSegmentPrefix("job-a") + "notahash-" + std::to_string(dead);
  std::ofstream(dir_ / malformed) << "x";
  std::ofstream(dir_ / "unrelated") << "x";
  // When the job's orphans are removed
  std::vector<std::string> removed = RemoveOrphanShmSegments("job-a", dir_.string());
  // Then exactly the dead creator's names of this job are gone
  std::sort(removed.begin(), removed.end());
  std::vector<std::string> expected = {orphan1, orphan2};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(removed, expected);
  EXPECT_FALSE(Exists(orphan1));
  EXPECT_FALSE(Exists(orphan2));
  EXPECT_TRUE(Exists(live));
  EXPECT_TRUE(Exists(other_job));
  EXPECT_TRUE(Exists(malformed));
  EXPECT_TRUE(Exists("unrelated"));
  // And a missing directory is no error
  EXPECT_TRUE(RemoveOrphanShmSegments("job-a", (dir_ / "absent").string()).empty());
}

}  // namespace
}  // namespace hvd::control
