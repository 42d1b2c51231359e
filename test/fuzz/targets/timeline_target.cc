// Target "timeline": a timeline file given to `hvd-timeline repair` and `hvd-timeline summary`
// (timeline/timeline_repair.h, timeline_summary.h): the shape check, the in-memory repairs,
// and the summary of the text. A repaired text is a complete timeline.
#include "common/check.h"
#include "test/fuzz/fuzz_input.h"
#include "test/fuzz/fuzz_target.h"
#include "timeline/timeline_repair.h"
#include "timeline/timeline_summary.h"

namespace hvd::fuzz {

std::string FuzzTimeline(std::string_view input) {
  using timeline::TimelineShape;
  std::string outcome;
  timeline::TimelineCheck check = timeline::CheckTimelineText(input);
  HVD_CHECK_LE(check.complete_end, static_cast<int64_t>(input.size()));
  Note(&outcome, check.detail);
  std::string repaired(input);
  if (timeline::Repairable(check)) {
    HVD_CHECK(timeline::RepairTimelineText(check, &repaired));
    timeline::TimelineCheck after = timeline::CheckTimelineText(repaired);
    HVD_CHECK(after.shape == TimelineShape::kComplete)
        << "a repaired timeline is not complete: shape " << static_cast<int>(after.shape) << ", "
        << after.detail;
  }
  std::string torn(input);
  timeline::RepairTornTimelineText(&torn);

  Result<timeline::TimelineSummary> summary = timeline::SummarizeText(std::string(input), "fuzz");
  Note(&outcome, summary.status());
  if (summary.ok()) timeline::FormatSummary(*summary);
  return outcome;
}

}  // namespace hvd::fuzz
