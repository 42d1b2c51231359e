#include "common/kv_store.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace hvd::control {
namespace {

TEST(KvStore, NamespacesAreIsolated) {
  KvStore store;
  store.Set("a", "k", "1");
  EXPECT_EQ(store.Get("a", "k"), "1");
  EXPECT_EQ(store.Get("b", "k"), std::nullopt);
  EXPECT_TRUE(store.Delete("a", "k"));
  EXPECT_FALSE(store.Delete("a", "k"));
  EXPECT_EQ(store.KeyCount("a"), 0u);
}

TEST(KvStore, AddParsesAndRejects) {
  KvStore store;
  EXPECT_EQ(*store.Add("a", "n", 3), 3);
  EXPECT_EQ(*store.Add("a", "n", -10), -7);
  store.Set("a", "s", "3x");
  EXPECT_EQ(store.Add("a", "s", 1).status().code(), StatusCode::kInvalidArgument);
  store.Set("a", "max", std::to_string(INT64_MAX));
  EXPECT_FALSE(store.Add("a", "max", 1).ok());
}

TEST(KvStore, WaitersRunOnceOnSetAndCanBeCancelled) {
  KvStore store;
  std::vector<std::string> seen;
  uint64_t id = 0;
  EXPECT_FALSE(store.GetOrWait(
      "a", "k", [&](const std::string& v) { seen.push_back(v); }, &id));
  uint64_t cancelled = 0;
  EXPECT_FALSE(store.GetOrWait(
      "a", "k", [&](const std::string&) { ADD_FAILURE(); }, &cancelled));
  EXPECT_TRUE(store.CancelWait(cancelled));
  EXPECT_FALSE(store.CancelWait(cancelled));
  store.Set("b", "k", "other namespace");
  EXPECT_TRUE(seen.empty());
  store.Set("a", "k", "v1");
  store.Set("a", "k", "v2");
  EXPECT_EQ(seen, std::vector<std::string>{"v1"});
  EXPECT_FALSE(store.CancelWait(id));  // already ran
  EXPECT_EQ(store.GetOrWait(
                "a", "k", [](const std::string&) {}, &id),
            "v2");
}

TEST(KvStore, AddWakesWaiters) {
  KvStore store;
  std::string seen;
  uint64_t id = 0;
  store.GetOrWait(
      "a", "n", [&](const std::string& v) { seen = v; }, &id);
  ASSERT_TRUE(store.Add("a", "n", 2).ok());
  EXPECT_EQ(seen, "2");
}

TEST(KvStore, FinishScopeNeedsDistinctCallers) {
  KvStore store;
  store.Set("a", "g/0", "x");
  store.Set("a", "g/1", "y");
  store.Set("a", "h/0", "z");
  store.Set("b", "g/0", "other job");
  EXPECT_FALSE(*store.FinishScope("a", "g/", 2, 1));
  EXPECT_FALSE(*store.FinishScope("a", "g/", 2, 1));
  EXPECT_TRUE(*store.FinishScope("a", "g/", 2, 2));
  EXPECT_EQ(store.Get("a", "g/0"), std::nullopt);
  EXPECT_EQ(store.Get("a", "h/0"), "z");
  EXPECT_EQ(store.Get("b", "g/0"), "other job");
  // The scope is forgotten: a new round starts counting again.
  EXPECT_FALSE(*store.FinishScope("a", "g/", 3, 1));
  EXPECT_EQ(store.FinishScope("a", "g/", 2, 2).status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(store.FinishScope("a", "x", 0, 1).ok());
}

TEST(KvStore, ConcurrentAddsAreAtomic) {
  KvStore store;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) ASSERT_TRUE(store.Add("a", "n", 1).ok());
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(store.Get("a", "n"), "4000");
}

}  // namespace
}  // namespace hvd::control
