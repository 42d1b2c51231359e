// The elastic driver's unit-test harness: a recorder of what the driver asks for, and a fixture
// that makes a driver, feeds it hosts and ready reports and starts round 1. Shared by
// elastic_driver_test.cc and elastic_rounds_test.cc.
#ifndef HVD_TEST_UNIT_LAUNCHER_ELASTIC_ELASTIC_DRIVER_HARNESS_H_
#define HVD_TEST_UNIT_LAUNCHER_ELASTIC_ELASTIC_DRIVER_HARNESS_H_

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launcher/elastic/elastic_driver.h"

namespace hvd::launcher::testing {

using std::chrono::seconds;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
namespace elastic = control::elastic;

constexpr int kExit0 = 0;
constexpr int kExit1 = 1 << 8;
constexpr int kKilled = SIGKILL;

// Records what the driver asks for; a worker's mailbox is the list of messages it got.
class Recorder : public ElasticActions {
 public:
  struct Spawned {
    std::string host;
    int slot;
  };
  void Spawn(int id, const std::string& host, int slot, int host_slots, int rank,
             int size) override {
    EXPECT_LT(slot, host_slots) << "worker " << id;
    spawned[id] = {host, slot};
    spawn_order.push_back(id);
  }
  void Send(int id, int64_t n, const elastic::Message& message) override {
    EXPECT_EQ(static_cast<int64_t>(mail[id].size()) + 1, n) << "worker " << id;
    mail[id].push_back(message);
  }
  void NotifyHosts(int64_t timestamp, int flags) override {
    notified.emplace_back(timestamp, flags);
  }
  void AbortRound(int64_t round) override { aborted.push_back(round); }
  void Terminate(int id) override { terminated.push_back(id); }
  void ReleaseHost(const std::string& host) override { released.push_back(host); }
  void Step(const std::string& message) override { steps.push_back(message); }
  void Warn(const std::string& message) override { warnings.push_back(message); }

  // The last message of `id`, which must be an assignment.
  elastic::Assignment Assigned(int id) {
    EXPECT_FALSE(mail[id].empty()) << "worker " << id;
    if (mail[id].empty()) return {};
    EXPECT_FALSE(mail[id].back().removed) << "worker " << id << ": " << mail[id].back().reason;
    return mail[id].back().assignment;
  }
  bool Removed(int id) { return !mail[id].empty() && mail[id].back().removed; }

  std::map<int, Spawned> spawned;
  std::vector<int> spawn_order;
  std::map<int, std::vector<elastic::Message>> mail;
  std::vector<std::pair<int64_t, int>> notified;
  std::vector<int64_t> aborted;
  std::vector<int> terminated;
  std::vector<std::string> released;
  std::vector<std::string> steps, warnings;
};

class ElasticDriverTest : public ::testing::Test {
 protected:
  void Make(ElasticDriverOptions options) {
    driver_ = std::make_unique<ElasticDriver>(options, &rec_);
  }
  ElasticDriverOptions Options(int np, int min, std::optional<int> max = {}) {
    ElasticDriverOptions o;
    o.start_np = np;
    o.min_np = min;
    o.max_np = max;
    return o;
  }
  // Every listed worker reports it has read all its mail and waits for more.
  void Ready(std::initializer_list<int> ids) {
    for (int id : ids) driver_->OnReady(id, static_cast<int64_t>(rec_.mail[id].size()), now_);
  }
  void Hosts(std::vector<discovery::HostSlots> hosts) { driver_->OnHosts(hosts, now_); }
  std::vector<int> Ranks(std::initializer_list<int> ids) {
    std::vector<int> ranks;
    for (int id : ids) ranks.push_back(rec_.Assigned(id).rank);
    return ranks;
  }
  // Starts a job of `ids` workers on the given hosts and forms round 1.
  void StartRound1(std::vector<discovery::HostSlots> hosts, int np, int min,
                   std::optional<int> max = {}) {
    Make(Options(np, min, max));
    Hosts(hosts);
    for (const auto& [id, s] : rec_.spawned) driver_->OnReady(id, 0, now_);
    ASSERT_EQ(driver_->round(), 1);
  }

  Recorder rec_;
  std::unique_ptr<ElasticDriver> driver_;
  ElasticDriver::TimePoint now_{};
};

}  // namespace hvd::launcher::testing

#endif  // HVD_TEST_UNIT_LAUNCHER_ELASTIC_ELASTIC_DRIVER_HARNESS_H_
