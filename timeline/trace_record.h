#ifndef HVD_TIMELINE_TRACE_RECORD_H_
#define HVD_TIMELINE_TRACE_RECORD_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "common/check.h"

// One Chrome trace-event record
// (https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU), already
// resolved to a process/thread row, as it travels from the producer to the timeline's writer
// thread. Plain value type, built so that the usual record (a B/E/X of a tensor's row) moves
// through the writer's queue without touching the heap: the arguments live inline, keys are
// literals, and a name that outlives the writer (a literal, or a name the Timeline keeps) is
// passed as `stable_name` rather than copied.
namespace hvd::timeline {

using TraceArg = std::variant<int64_t, std::string>;

// At most kMax (key, value) arguments, stored inline. Keys must be string literals (or
// otherwise outlive the record).
class TraceArgs {
 public:
  static constexpr size_t kMax = 3;
  using Arg = std::pair<std::string_view, TraceArg>;

  TraceArgs() = default;
  TraceArgs(std::initializer_list<Arg> args) {
    for (const Arg& a : args) emplace_back(a.first, a.second);
  }
  void emplace_back(std::string_view key, TraceArg value) {
    HVD_CHECK_LT(size_, kMax) << "more than " << kMax << " trace record arguments";
    args_[size_++] = Arg(key, std::move(value));
  }
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  const Arg& operator[](size_t i) const { return args_[i]; }
  const Arg* begin() const { return args_.data(); }
  const Arg* end() const { return args_.data() + size_; }

 private:
  std::array<Arg, kMax> args_{};
  size_t size_ = 0;
};

struct TraceRecord {
  // 'B' begin, 'E' end, 'X' complete (with dur_us), 'i' instant (global scope),
  // 'M' metadata (no ts).
  char phase = 'M';
  std::string name;
  int pid = 0;
  int tid = 0;
  int64_t ts_us = 0;  // microseconds since the timeline started
  TraceArgs args;
  int64_t dur_us = 0;  // 'X' only
  // When not empty, the record's name instead of `name`: a string that outlives the writer.
  std::string_view stable_name = {};

  std::string_view Name() const {
    return stable_name.empty() ? std::string_view(name) : stable_name;
  }
};

// One JSON object, no trailing separator. Invalid UTF-8 in names is replaced, so the
// output is always valid JSON.
std::string ToJson(const TraceRecord& record);
// The same, appended to `out` (the writer's buffer: no allocation once it has grown).
void AppendJson(std::string* out, const TraceRecord& record);

}  // namespace hvd::timeline

#endif  // HVD_TIMELINE_TRACE_RECORD_H_
