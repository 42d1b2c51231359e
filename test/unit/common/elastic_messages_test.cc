#include "common/elastic_messages.h"

#include <gtest/gtest.h>

namespace hvd::control::elastic {
namespace {

// The ready report: "<cursor>" (workers before 2026-11-27, and those that never synced),
// "<cursor> <synced round>", or with a round it could not join "<cursor> <synced> <failed>".
TEST(ElasticMessagesTest, ReadyReportsRoundTripAndRefuseAnythingElse) {
  ReadyReport r;
  EXPECT_EQ(EncodeReady({3, 0, 0}), "3");
  EXPECT_EQ(EncodeReady({3, 2, 0}), "3 2");
  EXPECT_EQ(EncodeReady({3, 0, 5}), "3 0 5");
  EXPECT_EQ(EncodeReady({3, 2, 5}), "3 2 5");
  ASSERT_TRUE(DecodeReady("3", &r));
  EXPECT_EQ(r, (ReadyReport{3, 0, 0}));
  ASSERT_TRUE(DecodeReady("7 4", &r));
  EXPECT_EQ(r, (ReadyReport{7, 4, 0}));
  ASSERT_TRUE(DecodeReady("7 0 6", &r));
  EXPECT_EQ(r, (ReadyReport{7, 0, 6}));
  ASSERT_TRUE(DecodeReady("7 4 6", &r));
  EXPECT_EQ(r, (ReadyReport{7, 4, 6}));
  for (const char* bad : {"", "-1", "3 ", "3 0", "3 -2", "3 x", "3  2", "x", "3 2 0", "3 2 -1",
                          "3 2 1 ", "3 2 1 1", "3\t2", "3 2\t1"}) {
    EXPECT_FALSE(DecodeReady(bad, &r)) << "'" << bad << "'";
  }
}

}  // namespace
}  // namespace hvd::control::elastic
