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
                          "3 2 1 ", "3 2 1 1", "3\t2", "3 2\t1",
                          // counts a reader could overflow (cursor + 1)
                          "9223372036854775807", "4611686018427387904", "3 4611686018427387904"}) {
    EXPECT_FALSE(DecodeReady(bad, &r)) << "'" << bad << "'";
  }
}

// An assignment's topology must be one a runtime can start with, as the launchers' variables
// must (runtime_config.cc LoadTopology): a worker indexes per-local-rank tables with it.
TEST(ElasticMessagesTest, AssignmentsOutsideTheirTopologyAreRefused) {
  Message m;
  m.assignment = {3, 1, 4, 1, 2, 1, 2, false, 7, "h2"};
  const std::string good = EncodeMessage(m);
  EXPECT_EQ(good, "assign 3 1 4 1 2 1 2 0 7 h2");
  ASSERT_TRUE(DecodeMessage(good).ok());
  for (const char* bad : {"assign 3 1 4 -1 2 1 2 0 7 h2", "assign 3 1 4 2 2 1 2 0 7 h2",
                          "assign 3 1 4 0 0 1 2 0 7 h2", "assign 3 1 4 0 5 1 2 0 7 h2",
                          "assign 3 1 4 1 2 -1 2 0 7 h2", "assign 3 1 4 1 2 2 2 0 7 h2",
                          "assign 3 1 4 1 2 0 0 0 7 h2", "assign 3 1 4 1 2 0 5 0 7 h2",
                          "assign 3 1 4 1 2 1 2 2 7 h2", "assign 3 1 4 1 2 1 2 -1 7 h2",
                          "assign 3 4 4 1 2 1 2 0 7 h2", "assign 0 1 4 1 2 1 2 0 7 h2"}) {
    const auto decoded = DecodeMessage(bad);
    ASSERT_FALSE(decoded.ok()) << bad;
    EXPECT_NE(decoded.status().message().find(bad), std::string::npos)
        << decoded.status().message();
  }
}

}  // namespace
}  // namespace hvd::control::elastic
