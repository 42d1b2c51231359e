#include "launcher/rendezvous/rendezvous_server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "common/kv_client.h"
#include "common/tcp_kv_client.h"
#include "test/unit/launcher/rendezvous/rendezvous_test_util.h"

namespace hvd::launcher {
namespace {

using std::chrono::milliseconds;
using testing::Clock;

control::JobKey TestKey(uint8_t seed) {
  control::JobKey key{};
  for (size_t i = 0; i < key.size(); ++i) key[i] = static_cast<uint8_t>(seed + i * 7 + 1);
  return key;
}

class RendezvousServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RendezvousServerOptions options;
    options.key = TestKey(1);
    options.job_id = "job-1";
    auto server = RendezvousServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).value();
  }

  std::unique_ptr<control::KvClient> Connect(const std::string& job = "job-1") {
    auto client = control::KvClient::Connect("127.0.0.1", server_->port(), TestKey(1), job,
                                             milliseconds(5000));
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    return client.ok() ? std::move(client).value() : nullptr;
  }

  std::unique_ptr<RendezvousServer> server_;
};

TEST_F(RendezvousServerTest, BindsOnlyTheRequestedAddress) {
  EXPECT_EQ(server_->address(), "127.0.0.1");
  EXPECT_NE(server_->port(), 0);
}

TEST_F(RendezvousServerTest, SetGetDeleteRoundTrip) {
  auto client = Connect();
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Set("r0/global/0", std::string("addr\0blob", 9)).ok());
  auto value = client->Get("r0/global/0");
  ASSERT_TRUE(value.ok()) << value.status().ToString();
  EXPECT_EQ(*value, std::string("addr\0blob", 9));
  EXPECT_EQ(server_->Get("r0/global/0"), std::string("addr\0blob", 9));

  ASSERT_TRUE(client->Delete("r0/global/0").ok());
  auto missing = client->Get("r0/global/0");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("r0/global/0"), std::string::npos);
  EXPECT_NE(missing.status().message().find("127.0.0.1:" + std::to_string(server_->port())),
            std::string::npos);
  EXPECT_GE(server_->stats().requests, 4u);
}

TEST_F(RendezvousServerTest, LauncherSideSetIsVisibleToClients) {
  server_->Set("rank_and_size/host:0", "0,2,0,1,0,2");
  auto client = Connect();
  auto value = client->Get("rank_and_size/host:0");
  ASSERT_TRUE(value.ok());
  EXPECT_EQ(*value, "0,2,0,1,0,2");
}

TEST_F(RendezvousServerTest, AddIsAtomicAndTyped) {
  auto client = Connect();
  EXPECT_EQ(*client->Add("counter", 5), 5);
  EXPECT_EQ(*client->Add("counter", -2), 3);
  ASSERT_TRUE(client->Set("text", "abc").ok());
  auto bad = client->Add("text", 1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("text"), std::string::npos);
  EXPECT_EQ(*client->Add("counter", 0), 3);  // the connection is still fine
}

TEST_F(RendezvousServerTest, FinishScopeDeletesAfterDistinctCallers) {
  auto a = Connect();
  auto b = Connect();
  ASSERT_TRUE(a->Set("global/0", "x").ok());
  ASSERT_TRUE(a->Set("global/1", "y").ok());
  ASSERT_TRUE(a->Set("local/0", "z").ok());
  ASSERT_TRUE(a->FinishScope("global/", 2).ok());
  ASSERT_TRUE(a->FinishScope("global/", 2).ok());  // the same caller twice counts once
  EXPECT_TRUE(a->Get("global/0").ok());
  ASSERT_TRUE(b->FinishScope("global/", 2).ok());
  EXPECT_EQ(a->Get("global/0").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(a->Get("global/1").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(a->Get("local/0").ok());

  ASSERT_TRUE(a->FinishScope("local/", 3).ok());
  Status mismatch = b->FinishScope("local/", 2);
  EXPECT_EQ(mismatch.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(b->FinishScope("x/", 0).code(), StatusCode::kInvalidArgument);
}

TEST_F(RendezvousServerTest, WaitTimesOutNamingTheKeyWithinItsDeadline) {
  auto client = Connect();
  auto start = Clock::now();
  auto value = client->Wait("never/set", milliseconds(200));
  auto elapsed = Clock::now() - start;
  ASSERT_FALSE(value.ok());
  EXPECT_EQ(value.status().code(), StatusCode::kTimeout);
  EXPECT_NE(value.status().message().find("never/set"), std::string::npos);
  EXPECT_GE(elapsed, milliseconds(190));
  EXPECT_LT(elapsed, milliseconds(3000));
  // A server-side timeout leaves the connection usable.
  EXPECT_TRUE(client->Set("after", "1").ok());
}

TEST_F(RendezvousServerTest, WaitReturnsAtOnceWhenTheKeyExists) {
  auto client = Connect();
  ASSERT_TRUE(client->Set("k", "v").ok());
  auto value = client->Wait("k", milliseconds(0));
  ASSERT_TRUE(value.ok()) << value.status().ToString();
  EXPECT_EQ(*value, "v");
}

TEST_F(RendezvousServerTest, WaitIsWokenBySetFromAnotherClient) {
  auto waiter = Connect();
  auto setter = Connect();
  auto start = Clock::now();
  auto pending =
      std::async(std::launch::async, [&] { return waiter->Wait("late", milliseconds(10000)); });
  // Whether the set lands before or after the wait is registered, the wait must return the
  // value well before its 10 s timeout.
  ASSERT_TRUE(setter->Set("late", "here").ok());
  auto value = pending.get();
  ASSERT_TRUE(value.ok()) << value.status().ToString();
  EXPECT_EQ(*value, "here");
  EXPECT_LT(Clock::now() - start, milliseconds(5000));
}

TEST_F(RendezvousServerTest, WaitIsWokenByLauncherSideSet) {
  auto waiter = Connect();
  auto pending = std::async(std::launch::async,
                            [&] { return waiter->Wait("from-driver", milliseconds(10000)); });
  server_->Set("from-driver", "go");
  auto value = pending.get();
  ASSERT_TRUE(value.ok()) << value.status().ToString();
  EXPECT_EQ(*value, "go");
}

TEST_F(RendezvousServerTest, ConcurrentClientsFromThreads) {
  constexpr int kClients = 8;
  constexpr int kAdds = 50;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      auto client = control::KvClient::Connect("127.0.0.1", server_->port(), TestKey(1), "job-1",
                                               milliseconds(5000));
      if (!client.ok()) return (void)++failures;
      for (int n = 0; n < kAdds; ++n) {
        if (!(*client)->Add("counter", 1).ok()) ++failures;
      }
      if (!(*client)->Set("ready/" + std::to_string(i), "1").ok()) ++failures;
      // A barrier: every client waits for every other client's key.
      for (int peer = 0; peer < kClients; ++peer) {
        if (!(*client)->Wait("ready/" + std::to_string(peer), milliseconds(10000)).ok()) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(server_->Get("counter"), std::to_string(kClients * kAdds));
}

TEST_F(RendezvousServerTest, OneClientSharedByThreadsSerializesCalls) {
  auto client = Connect();
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      for (int n = 0; n < 25; ++n) EXPECT_TRUE(client->Add("shared", 1).ok());
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(server_->Get("shared"), "100");
}

TEST_F(RendezvousServerTest, StopFailsPendingWaitsPromptly) {
  auto client = Connect();
  auto start = Clock::now();
  auto pending =
      std::async(std::launch::async, [&] { return client->Wait("never", milliseconds(30000)); });
  server_->Stop();
  server_->Stop();  // idempotent
  auto value = pending.get();
  ASSERT_FALSE(value.ok());
  EXPECT_TRUE(value.status().code() == StatusCode::kAborted ||
              value.status().code() == StatusCode::kIoError)
      << value.status().ToString();
  EXPECT_LT(Clock::now() - start, milliseconds(5000));
}

TEST_F(RendezvousServerTest, OversizedValueIsRefusedByTheClientBeforeSending) {
  auto client = control::TcpKvClient::Connect("127.0.0.1", server_->port(), TestKey(1), "job-1",
                                              milliseconds(5000), /*max_frame_bytes=*/4096);
  ASSERT_TRUE(client.ok());
  Status s = (*client)->Set("big", std::string(8192, 'x'));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("big"), std::string::npos);
  EXPECT_TRUE((*client)->Set("small", "x").ok());
}

TEST(RendezvousServerNamespaces, TwoJobsNeverSeeEachOthersKeys) {
  RendezvousServerOptions options;
  options.key = TestKey(1);
  options.job_id = "";  // admit any job id, each in its own namespace
  auto server = RendezvousServer::Start(options);
  ASSERT_TRUE(server.ok());
  auto connect = [&](const std::string& job) {
    return std::move(control::KvClient::Connect("127.0.0.1", (*server)->port(), TestKey(1), job,
                                                milliseconds(5000)))
        .value();
  };
  auto a = connect("job-a");
  auto b = connect("job-b");
  ASSERT_TRUE(a->Set("global/0", "a's").ok());
  EXPECT_EQ(b->Get("global/0").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(b->Wait("global/0", milliseconds(100)).status().code(), StatusCode::kTimeout);
  ASSERT_TRUE(b->Set("global/0", "b's").ok());
  EXPECT_EQ(*a->Get("global/0"), "a's");
  EXPECT_EQ(*b->Get("global/0"), "b's");
}

TEST(RendezvousServerStart, RefusesAZeroKey) {
  auto server = RendezvousServer::Start(RendezvousServerOptions{});
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), StatusCode::kInvalidArgument);
}

TEST(RendezvousServerStart, BusyPortIsAnIoErrorNamingTheAddress) {
  RendezvousServerOptions options;
  options.key = TestKey(1);
  auto first = RendezvousServer::Start(options);
  ASSERT_TRUE(first.ok());
  options.port = (*first)->port();
  auto second = RendezvousServer::Start(options);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kIoError);
  EXPECT_NE(second.status().message().find("127.0.0.1:" + std::to_string(options.port)),
            std::string::npos);
}

// The elastic driver gives up on a round that never formed: whoever waits on its keys, or
// touches them later, hears why at once instead of waiting out the timeout.
TEST_F(RendezvousServerTest, AbortPrefixAnswersPendingAndLaterRequests) {
  auto waiter = Connect();
  auto other = Connect();
  ASSERT_NE(waiter, nullptr);
  ASSERT_NE(other, nullptr);
  ASSERT_TRUE(other->Set("3/global/a", "x").ok());
  ASSERT_TRUE(other->Set("4/global/a", "y").ok());
  auto pending = std::async(std::launch::async,
                            [&] { return waiter->Wait("3/global/b", milliseconds(30000)); });
  // The wait must be parked before the abort for this test to mean anything.
  auto deadline = Clock::now() + milliseconds(5000);
  while (server_->stats().requests < 3 && Clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  const auto started = Clock::now();
  server_->AbortPrefix("3/", "round 3 was superseded");
  Result<std::string> woken = pending.get();
  EXPECT_LT(Clock::now() - started, milliseconds(2000));
  ASSERT_FALSE(woken.ok());
  EXPECT_EQ(woken.status().code(), StatusCode::kAborted);
  EXPECT_NE(woken.status().message().find("round 3 was superseded (key '3/global/b')"),
            std::string::npos)
      << woken.status().message();
  Result<std::string> later = other->Wait("3/global/c", milliseconds(30000));
  EXPECT_EQ(later.status().code(), StatusCode::kAborted);
  EXPECT_EQ(other->Set("3/global/d", "z").code(), StatusCode::kAborted);
  EXPECT_EQ(other->Get("3/global/a").status().code(), StatusCode::kAborted);
  EXPECT_FALSE(server_->Get("3/global/a").has_value()) << "the round's keys are deleted";
  Result<std::string> kept = other->Get("4/global/a");
  ASSERT_TRUE(kept.ok()) << "other rounds are untouched";
  EXPECT_EQ(*kept, "y");
  EXPECT_TRUE(waiter->Set("4/global/b", "w").ok()) << "the waiter's connection is still usable";
}

TEST(RendezvousServerObserverTest, ReportsClientSetsUnderThePrefix) {
  std::mutex mu;
  std::vector<std::pair<std::string, std::string>> seen;
  RendezvousServerOptions options;
  options.key = TestKey(1);
  options.job_id = "job-1";
  // Two observers, each told of its own prefix only.
  for (const char* prefix : {"elastic/ready/", "stacks"}) {
    options.observers.push_back({prefix, [&](const std::string& key, const std::string& value) {
                                   std::lock_guard<std::mutex> lock(mu);
                                   seen.emplace_back(key, value);
                                 }});
  }
  auto server = RendezvousServer::Start(options);
  ASSERT_TRUE(server.ok());
  auto client = control::KvClient::Connect("127.0.0.1", (*server)->port(), TestKey(1), "job-1",
                                           milliseconds(5000));
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->Set("elastic/ready/3", "2").ok());
  ASSERT_TRUE((*client)->Set("elastic/mail/3/1", "x").ok());
  ASSERT_TRUE((*client)->Set("stacks", "1,3").ok());
  (*server)->Set("elastic/ready/4", "launcher sets are not reported");
  (*server)->Stop();
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(seen, (std::vector<std::pair<std::string, std::string>>{{"elastic/ready/3", "2"},
                                                                    {"stacks", "1,3"}}));
}

}  // namespace
}  // namespace hvd::launcher
