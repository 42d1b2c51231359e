// Target "rank_messages": text lines a job's ranks send each other outside the negotiation,
// which cross hosts unauthenticated once a transport's handshake is done: the autotune line
// rank 0 broadcasts after each tuning step (autotune/params.h, the runtime's Autotuner::Sync)
// and a member's clock-sync reply (timeline/clock_reply.h, EstimateClockOffsets). The input is
// the line; each decoder gets it. What decodes re-encodes to a line that decodes to the same
// values, stays within the bounds the decoder promises, and the clock estimate's arithmetic on
// it (with rank 0's readings at both ends of their range) cannot overflow (UBSan).
#include <cmath>

#include "autotune/params.h"
#include "common/check.h"
#include "test/fuzz/fuzz_input.h"
#include "test/fuzz/fuzz_target.h"
#include "timeline/clock_reply.h"

namespace hvd::fuzz {

std::string FuzzRankMessages(std::string_view input) {
  std::string outcome;
  Result<autotune::SyncLine> line = autotune::DecodeSyncLine(input);
  Note(&outcome, line.status());
  if (line.ok()) {
    const autotune::Params& p = line->params;
    HVD_CHECK(std::isfinite(p.cycle_time_ms) && p.cycle_time_ms >= 0 &&
              p.cycle_time_ms <= autotune::kMaxSyncCycleTimeMs);
    HVD_CHECK(std::isfinite(p.fusion_threshold_mb) && p.fusion_threshold_mb >= 0 &&
              p.fusion_threshold_mb <= autotune::kMaxSyncFusionThresholdMb);
    // The runtime's conversions (Autotuner::ToKnobs) stay within int64
    HVD_CHECK(std::llround(p.fusion_threshold_mb * 1048576.0) >= 0);
    HVD_CHECK(std::llround(p.cycle_time_ms * 1000.0) >= 0);
    Result<autotune::SyncLine> again = autotune::DecodeSyncLine(autotune::EncodeSyncLine(*line));
    HVD_CHECK(again.ok()) << again.status().message();
    HVD_CHECK(*again == *line);
  }

  int64_t t2 = 0, t3 = 0;
  if (timeline::ParseClockReply(input, &t2, &t3)) {
    HVD_CHECK(t2 >= 0 && t2 <= t3 && t3 < timeline::kMaxClockUs);
    int64_t a = 0, b = 0;
    HVD_CHECK(timeline::ParseClockReply(timeline::EncodeClockReply(t2, t3), &a, &b));
    HVD_CHECK(a == t2 && b == t3);
    // EstimateClockOffsets' arithmetic, rank 0's readings t1 <= t4 at the range's ends
    for (int64_t t1 : {int64_t{0}, timeline::kMaxClockUs - 1}) {
      for (int64_t t4 : {t1, timeline::kMaxClockUs - 1}) {
        const int64_t rtt = (t4 - t1) - (t3 - t2);
        const int64_t offset = -(((t2 - t1) + (t3 - t4)) / 2);
        (void)rtt;
        (void)offset;
      }
    }
  } else {
    Note(&outcome, "not a clock reply");
  }
  return outcome;
}

}  // namespace hvd::fuzz
