#include "common/elastic_messages.h"

#include <gtest/gtest.h>

namespace hvd::control::elastic {
namespace {

// The ready report: "<cursor>" (workers before 2026-11-27, and those that never synced) or
// "<cursor> <synced round>".
TEST(ElasticMessagesTest, ReadyReportsRoundTripAndRefuseAnythingElse) {
  int64_t cursor = -1, synced = -1;
  EXPECT_EQ(EncodeReady(3, 0), "3");
  EXPECT_EQ(EncodeReady(3, 2), "3 2");
  ASSERT_TRUE(DecodeReady("3", &cursor, &synced));
  EXPECT_EQ(cursor, 3);
  EXPECT_EQ(synced, 0);
  ASSERT_TRUE(DecodeReady("7 4", &cursor, &synced));
  EXPECT_EQ(cursor, 7);
  EXPECT_EQ(synced, 4);
  for (const char* bad : {"", "-1", "3 ", "3 0", "3 -2", "3 x", "3  2", "x", "3 2 1", "3\t2"}) {
    EXPECT_FALSE(DecodeReady(bad, &cursor, &synced)) << "'" << bad << "'";
  }
}

}  // namespace
}  // namespace hvd::control::elastic
