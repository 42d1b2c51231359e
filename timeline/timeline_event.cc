#include "timeline/timeline_event.h"

#include <fmt/format.h>

#include <charconv>

namespace hvd::timeline {
namespace {

constexpr EventType kAllTypes[] = {EventType::kNegotiateStart,
                                   EventType::kNegotiateRankReady,
                                   EventType::kNegotiateEnd,
                                   EventType::kStart,
                                   EventType::kActivityStart,
                                   EventType::kActivityEnd,
                                   EventType::kEnd,
                                   EventType::kCycleStart,
                                   EventType::kQueue};

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
    case EventType::kQueue:
      return "queue";
  }
  return "unknown";
}

// One event per line, ten tab-separated fields; '\\', tab and newline inside strings are
// escaped. Hand-written rather than JSON: ranks ship every event they record through it.
namespace {

void AppendEscaped(std::string* out, std::string_view s) {
  for (char c : s) {
    if (c == '\\') {
      *out += "\\\\";
    } else if (c == '\t') {
      *out += "\\t";
    } else if (c == '\n') {
      *out += "\\n";
    } else {
      out->push_back(c);
    }
  }
}

bool Unescape(std::string_view s, std::string* out) {
  out->clear();
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      out->push_back(s[i]);
      continue;
    }
    if (++i == s.size()) return false;
    if (s[i] == '\\') {
      out->push_back('\\');
    } else if (s[i] == 't') {
      out->push_back('\t');
    } else if (s[i] == 'n') {
      out->push_back('\n');
    } else {
      return false;
    }
  }
  return true;
}

template <typename T>
bool ParseInt(std::string_view s, T* out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

std::string EncodeEvents(const std::vector<TimelineEvent>& events) {
  std::string out;
  out.reserve(events.size() * 64);
  for (const TimelineEvent& e : events) {
    out += EventTypeName(e.type);
    out += fmt::format("\t{}\t{}\t", e.rank, e.time_us);
    AppendEscaped(&out, e.tensor);
    out += '\t';
    AppendEscaped(&out, e.name);
    out += fmt::format("\t{}\t", e.ready_rank);
    AppendEscaped(&out, e.dtype);
    out += '\t';
    AppendEscaped(&out, e.shape);
    out += fmt::format("\t{}\t{}\n", e.bytes, e.dur_us);
  }
  return out;
}

Result<std::vector<TimelineEvent>> DecodeEvents(std::string_view text) {
  std::vector<TimelineEvent> events;
  size_t line_no = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    if (nl == std::string_view::npos) {
      return Status::InvalidArgument(
          fmt::format("timeline event {} is malformed: no end of line", line_no));
    }
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    std::vector<std::string_view> f;
    for (size_t pos = 0;;) {
      const size_t tab = line.find('\t', pos);
      f.push_back(
          line.substr(pos, tab == std::string_view::npos ? std::string_view::npos : tab - pos));
      if (tab == std::string_view::npos) break;
      pos = tab + 1;
    }
    auto bad = [&](const char* why) {
      return Status::InvalidArgument(
          fmt::format("timeline event {} is malformed: {}", line_no, why));
    };
    if (f.size() != 10) return bad("expected 10 tab-separated fields");
    TimelineEvent e;
    bool known = false;
    for (EventType t : kAllTypes) {
      if (f[0] == EventTypeName(t)) {
        e.type = t;
        known = true;
      }
    }
    if (!known) return bad("unknown event type");
    if (!ParseInt(f[1], &e.rank) || !ParseInt(f[2], &e.time_us) || !ParseInt(f[5], &e.ready_rank) ||
        !ParseInt(f[8], &e.bytes) || !ParseInt(f[9], &e.dur_us)) {
      return bad("a number field is not an integer");
    }
    if (!Unescape(f[3], &e.tensor) || !Unescape(f[4], &e.name) || !Unescape(f[6], &e.dtype) ||
        !Unescape(f[7], &e.shape)) {
      return bad("bad escape");
    }
    events.push_back(std::move(e));
    ++line_no;
  }
  return events;
}

std::string EncodeShipment(uint64_t dropped, const std::vector<TimelineEvent>& events) {
  return std::to_string(dropped) + "\n" + EncodeEvents(events);
}

Result<std::vector<TimelineEvent>> DecodeShipment(std::string_view text, uint64_t* dropped) {
  const size_t newline = text.find('\n');
  if (newline == std::string_view::npos || !ParseInt(text.substr(0, newline), dropped)) {
    return Status::InvalidArgument("an event shipment does not start with its dropped count");
  }
  return DecodeEvents(text.substr(newline + 1));
}

}  // namespace hvd::timeline
