#include "runtime/core/negotiation/response_cache.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace hvd::runtime
