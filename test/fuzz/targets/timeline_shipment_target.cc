// Target "timeline_shipment": the events a rank ships to rank 0 when every rank's timeline is
// recorded (`--timeline-all-ranks`; timeline/timeline_event.h). They cross hosts on the data
// connections, which nothing authenticates past the TCP transport's handshake
// (docs/threat-model.md). The first byte picks the sending rank (1 + b % 7), the next eight
// its clock offset (little-endian, as rank 0's clock sync would set it), the next the writer's
// options (bit 0: cycle marks); the rest is the shipment. It goes through what
// RuntimeTimeline::ReceiveShipment does: DecodeShipment, then every event recorded under the
// sender's rank into a timeline file (an in-memory file, written by the real writer thread).
//
// Invariants: what decodes re-encodes to a shipment that decodes to the same text; whatever
// was shipped, the file rank 0 closes is a complete timeline that `hvd-timeline summary` reads.
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "common/check.h"
#include "test/fuzz/fuzz_input.h"
#include "test/fuzz/fuzz_target.h"
#include "timeline/timeline.h"
#include "timeline/timeline_event.h"
#include "timeline/timeline_repair.h"
#include "timeline/timeline_summary.h"

namespace hvd::fuzz {
namespace {

// The in-memory file the timeline writes; its path stays valid for the process's life.
int TimelineFile() {
  static const int fd = memfd_create("hvd-fuzz-timeline", MFD_CLOEXEC);
  HVD_CHECK_GE(fd, 0);
  return fd;
}

std::string ReadAll(int fd) {
  std::string text;
  char buffer[1 << 16];
  for (off_t at = 0;;) {
    const ssize_t n = pread(fd, buffer, sizeof(buffer), at);
    HVD_CHECK_GE(n, 0);
    if (n == 0) return text;
    text.append(buffer, static_cast<size_t>(n));
    at += n;
  }
}

}  // namespace

std::string FuzzTimelineShipment(std::string_view input) {
  FuzzInput in(input);
  const int rank = 1 + in.Byte() % 7;
  uint64_t raw_offset = 0;
  for (int i = 0; i < 8; ++i) raw_offset |= static_cast<uint64_t>(in.Byte()) << (8 * i);
  int64_t offset;
  std::memcpy(&offset, &raw_offset, sizeof(offset));
  timeline::TimelineOptions options;
  options.all_ranks = true;
  options.mark_cycles = (in.Byte() & 1) != 0;
  const std::string_view shipment = in.Rest();

  std::string outcome;
  uint64_t dropped = 0;
  Result<std::vector<timeline::TimelineEvent>> events =
      timeline::DecodeShipment(shipment, &dropped);
  Note(&outcome, events.status());
  if (!events.ok()) return outcome;
  const std::string again = timeline::EncodeShipment(dropped, *events);
  uint64_t dropped_again = 0;
  Result<std::vector<timeline::TimelineEvent>> decoded =
      timeline::DecodeShipment(again, &dropped_again);
  HVD_CHECK(decoded.ok()) << decoded.status().message();
  HVD_CHECK_EQ(dropped_again, dropped);
  HVD_CHECK(timeline::EncodeShipment(dropped_again, *decoded) == again);

  // Rank 0's clock: a fixed time (2023-11-14), so every run of an input writes the same file.
  timeline::Timeline timeline([] { return int64_t{1700000000000000}; });
  const int fd = TimelineFile();
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  const Status started = timeline.Start(path, options);
  HVD_CHECK(started.ok()) << started.message();
  timeline.SetClockOffset(rank, offset);
  timeline.MarkCycleStart();
  for (timeline::TimelineEvent& e : *events) {
    e.rank = rank;  // as ReceiveShipment: the position, not the payload
    timeline.Record(e);
  }
  timeline.AddDropped(dropped);
  timeline.Stop();

  const std::string text = ReadAll(fd);
  const timeline::TimelineCheck check = timeline::CheckTimelineText(text);
  HVD_CHECK(check.shape == timeline::TimelineShape::kComplete)
      << "the timeline rank 0 wrote is not complete: " << check.detail;
  Result<timeline::TimelineSummary> summary = timeline::SummarizeText(text, "fuzz");
  HVD_CHECK(summary.ok()) << summary.status().message();
  return outcome;
}

}  // namespace hvd::fuzz
