#include "runtime/runtime_timeline.h"

#include <cctype>

namespace hvd::runtime {

Status RuntimeTimeline::Start(const std::string& path, bool mark_cycles) {
  std::lock_guard<std::mutex> lock(mu_);
  on_.store(false, std::memory_order_relaxed);
  timeline::TimelineOptions options;
  options.mark_cycles = mark_cycles;
  Status s = timeline_.Start(path, options);
  if (!s.ok()) return s;
  mark_cycles_.store(mark_cycles, std::memory_order_relaxed);
  on_.store(true, std::memory_order_relaxed);
  return Status::OK();
}

void RuntimeTimeline::Stop() {
  std::lock_guard<std::mutex> lock(mu_);
  on_.store(false, std::memory_order_relaxed);
  timeline_.Stop();
}

void RuntimeTimeline::MarkCycleStart() {
  if (on() && mark_cycles_.load(std::memory_order_relaxed)) timeline_.MarkCycleStart();
}

std::string TimelineOpName(OpType type) {
  std::string name = OpTypeName(type);
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

}  // namespace hvd::runtime
