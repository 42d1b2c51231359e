// EstimateClockOffsets (the all-ranks timeline's clock sync) against replies scripted for a
// member: well-formed ones give the NTP estimate; anything else, overflowing readings included,
// is an error naming the member, never undefined arithmetic or a thrown exception.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/core/runtime_timeline.h"
#include "runtime/transports/single_rank_communicator.h"

namespace hvd::runtime {
namespace {

// Rank 0 of 2 whose member 1 answers every ping with `reply`.
class ScriptedPeer : public SingleRankCommunicator {
 public:
  explicit ScriptedPeer(std::string reply) : reply_(std::move(reply)) {}
  int size() const override { return 2; }
  Status BroadcastBytes(std::string*, int) override { return Status::OK(); }
  Status GatherBytes(const std::string& in, int, std::vector<std::string>* out) override {
    *out = {in, reply_};
    return Status::OK();
  }

 private:
  std::string reply_;
};

Status Estimate(const std::string& reply, int64_t now_us, int64_t* offset, int64_t* rtt) {
  ScriptedPeer comm(reply);
  timeline::Timeline clock([now_us] { return now_us; }, 0);
  std::vector<int64_t> offsets, rtts;
  HVD_RETURN_IF_ERROR(EstimateClockOffsets(&comm, clock, 3, &offsets, &rtts));
  *offset = offsets.at(1);
  *rtt = rtts.at(1);
  return Status::OK();
}

TEST(ClockSyncTest, AWellFormedReplyGivesTheOffset) {
  // Given rank 0's clock at 1000 throughout and a member whose clock read 1500 and 1502
  int64_t offset = 0, rtt = 0;
  ASSERT_TRUE(Estimate("1500 1502", 1000, &offset, &rtt).ok());
  // Then its times are 501 ahead: -((1500 - 1000) + (1502 - 1000)) / 2
  EXPECT_EQ(offset, -501);
  EXPECT_EQ(rtt, -2);
}

TEST(ClockSyncTest, MalformedOrOverflowingRepliesAreAnErrorNamingTheMember) {
  for (const std::string reply :
       {"", "1500", "1500 ", " 1500 1502", "1500  1502", "1500 1502 7", "1502 1500", "-1 5",
        "abc def", "1500 1502x", "9223372036854775807 9223372036854775807",
        "4611686018427387904 4611686018427387904", "99999999999999999999 1",
        "0 9223372036854775807"}) {
    int64_t offset = 0, rtt = 0;
    const Status st = Estimate(reply, 1000, &offset, &rtt);
    EXPECT_EQ(st.code(), StatusCode::kInternal) << "'" << reply << "': " << st.ToString();
    EXPECT_NE(st.message().find("malformed reply from rank 1"), std::string::npos) << st.message();
  }
  // The largest readings allowed still compute without overflow
  int64_t offset = 0, rtt = 0;
  EXPECT_TRUE(Estimate("4611686018427387903 4611686018427387903", 1000, &offset, &rtt).ok());
}

}  // namespace
}  // namespace hvd::runtime
