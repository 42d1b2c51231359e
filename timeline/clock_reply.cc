#include "timeline/clock_reply.h"

#include <charconv>
#include <system_error>

namespace hvd::timeline {

bool ParseClockReading(std::string_view text, int64_t* us) {
  // from_chars takes a leading '-'; the range check below refuses it.
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *us);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size() && *us >= 0 &&
         *us < kMaxClockUs;
}

bool ParseClockReply(std::string_view reply, int64_t* t2, int64_t* t3) {
  const size_t space = reply.find(' ');
  return space != std::string_view::npos && ParseClockReading(reply.substr(0, space), t2) &&
         ParseClockReading(reply.substr(space + 1), t3) && *t2 <= *t3;
}

std::string EncodeClockReply(int64_t t2, int64_t t3) {
  return std::to_string(t2) + " " + std::to_string(t3);
}

}  // namespace hvd::timeline
