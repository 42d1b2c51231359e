#include "timeline/timeline_event.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace hvd::timeline {
namespace {

constexpr EventType kAllTypes[] = {EventType::kNegotiateStart,
                                   EventType::kNegotiateRankReady,
                                   EventType::kNegotiateEnd,
                                   EventType::kStart,
                                   EventType::kActivityStart,
                                   EventType::kActivityEnd,
                                   EventType::kEnd,
                                   EventType::kCycleStart};

}  // namespace

const char* EventTypeName(EventType type) {
  switch (type) {
    case EventType::kNegotiateStart:
      return "negotiate_start";
    case EventType::kNegotiateRankReady:
      return "negotiate_rank_ready";
    case EventType::kNegotiateEnd:
      return "negotiate_end";
    case EventType::kStart:
      return "start";
    case EventType::kActivityStart:
      return "activity_start";
    case EventType::kActivityEnd:
      return "activity_end";
    case EventType::kEnd:
      return "end";
    case EventType::kCycleStart:
      return "cycle_start";
  }
  return "unknown";
}

std::string EncodeEvents(const std::vector<TimelineEvent>& events) {
  nlohmann::json out = nlohmann::json::array();
  for (const TimelineEvent& e : events) {
    out.push_back({EventTypeName(e.type), e.rank, e.time_us, e.tensor, e.name, e.ready_rank,
                   e.dtype, e.shape, e.bytes});
  }
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<std::vector<TimelineEvent>> DecodeEvents(std::string_view text) {
  nlohmann::json in = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (in.is_discarded() || !in.is_array()) {
    return Status::InvalidArgument("timeline events are not a JSON array");
  }
  std::vector<TimelineEvent> events;
  events.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const nlohmann::json& item = in[i];
    try {
      if (!item.is_array() || item.size() != 9) throw std::invalid_argument("not a 9-tuple");
      TimelineEvent e;
      const std::string type = item[0].get<std::string>();
      bool known = false;
      for (EventType t : kAllTypes) {
        if (type == EventTypeName(t)) {
          e.type = t;
          known = true;
        }
      }
      if (!known) throw std::invalid_argument("unknown type '" + type + "'");
      e.rank = item[1].get<int>();
      e.time_us = item[2].get<int64_t>();
      e.tensor = item[3].get<std::string>();
      e.name = item[4].get<std::string>();
      e.ready_rank = item[5].get<int>();
      e.dtype = item[6].get<std::string>();
      e.shape = item[7].get<std::string>();
      e.bytes = item[8].get<int64_t>();
      events.push_back(std::move(e));
    } catch (const std::exception& ex) {
      return Status::InvalidArgument(
          fmt::format("timeline event {} is malformed: {}", i, ex.what()));
    }
  }
  return events;
}

}  // namespace hvd::timeline
