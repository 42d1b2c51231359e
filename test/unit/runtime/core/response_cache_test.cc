#include "runtime/core/negotiation/response_cache.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace hvd::runtime {
namespace {

Request Req(const std::string& name, std::vector<int64_t> shape = {4}) {
  Request r;
  r.name = name;
  r.shape = std::move(shape);
  return r;
}

Response Resp(const std::string& name) {
  Response r;
  r.names = {name};
  r.sizes = {4};
  return r;
}

TEST(ResponseCacheTest, MissThenHitThenInvalid) {
  ResponseCache cache(4);
  uint32_t bit = 99;
  EXPECT_EQ(cache.Lookup(Req("a"), &bit), ResponseCache::State::kMiss);
  cache.Put(Resp("a"), Req("a"));
  EXPECT_EQ(cache.Lookup(Req("a"), &bit), ResponseCache::State::kHit);
  EXPECT_EQ(bit, 0u);
  EXPECT_EQ(cache.Get(bit).names[0], "a");
  Request other_shape = Req("a", {5});
  EXPECT_EQ(cache.Lookup(other_shape, &bit), ResponseCache::State::kInvalid);
  Request other_op = Req("a");
  other_op.reduce_op = ReduceOp::kMax;
  EXPECT_EQ(cache.Lookup(other_op, &bit), ResponseCache::State::kInvalid);
}

TEST(ResponseCacheTest, EvictsLeastRecentlyUsedAndReusesItsBit) {
  ResponseCache cache(2);
  cache.Put(Resp("a"), Req("a"));  // bit 0
  cache.Put(Resp("b"), Req("b"));  // bit 1
  cache.Touch(0);                  // a is now most recent
  cache.Put(Resp("c"), Req("c"));  // evicts b
  uint32_t bit = 99;
  EXPECT_EQ(cache.Lookup(Req("b"), &bit), ResponseCache::State::kMiss);
  EXPECT_EQ(cache.Lookup(Req("c"), &bit), ResponseCache::State::kHit);
  EXPECT_EQ(bit, 1u);
  EXPECT_EQ(cache.evictions(), 1);
  EXPECT_EQ(cache.size(), 2u);
}

TEST(ResponseCacheTest, EraseFreesTheLowestBitFirst) {
  ResponseCache cache(3);
  cache.Put(Resp("a"), Req("a"));
  cache.Put(Resp("b"), Req("b"));
  cache.Put(Resp("c"), Req("c"));
  cache.Erase(1);
  cache.Erase(0);
  cache.Put(Resp("d"), Req("d"));
  uint32_t bit = 99;
  ASSERT_EQ(cache.Lookup(Req("d"), &bit), ResponseCache::State::kHit);
  EXPECT_EQ(bit, 0u);
}

TEST(ResponseCacheTest, ZeroCapacityCachesNothing) {
  ResponseCache cache(0);
  cache.Put(Resp("a"), Req("a"));
  uint32_t bit;
  EXPECT_EQ(cache.Lookup(Req("a"), &bit), ResponseCache::State::kMiss);
}

// A capacity as large as Horovod takes costs nothing until tensors are seen (the whole
// capacity's entries were allocated up front, ~400 B each, until 2026-12-02): bits are made as
// needed, a freed bit before a fresh one, and references to entries stay valid as it grows.
TEST(ResponseCacheTest, AHugeCapacityMakesEntriesOnlyAsBitsAreUsed) {
  ResponseCache cache(INT32_MAX);
  cache.Put(Resp("a"), Req("a"));
  const Response& a = cache.Get(0);
  for (int i = 0; i < 1000; ++i) cache.Put(Resp("t" + std::to_string(i)), Req("t"));
  EXPECT_EQ(a.names[0], "a");  // still the entry it was
  EXPECT_EQ(cache.size(), 1001u);
  EXPECT_EQ(cache.words_in_use(), 16);  // bits 0..1000
  cache.Erase(7);
  cache.Put(Resp("b"), Req("b"));
  uint32_t bit = 99;
  ASSERT_EQ(cache.Lookup(Req("b"), &bit), ResponseCache::State::kHit);
  EXPECT_EQ(bit, 7u);
  cache.Put(Resp("c"), Req("c"));
  ASSERT_EQ(cache.Lookup(Req("c"), &bit), ResponseCache::State::kHit);
  EXPECT_EQ(bit, 1001u);
  EXPECT_FALSE(cache.Has(1002));
  EXPECT_EQ(cache.evictions(), 0);
}

}  // namespace
}  // namespace hvd::runtime
