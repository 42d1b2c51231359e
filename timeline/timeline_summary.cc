#include "timeline/timeline_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "timeline/timeline_repair.h"

namespace hvd::timeline {
namespace {

constexpr std::string_view kNegotiatePrefix = "NEGOTIATE_";
constexpr std::string_view kBackendPrefixes[] = {"MPI_", "NCCL_", "GLOO_", "CCL_", "SHM_", "DDL_"};

enum class ActivityKind { kTransfer, kMemcpy, kOther };

ActivityKind Classify(std::string_view name) {
  if (name.starts_with("MEMCPY_")) return ActivityKind::kMemcpy;
  for (std::string_view p : kBackendPrefixes) {
    if (name.starts_with(p)) return ActivityKind::kTransfer;
  }
  return ActivityKind::kOther;
}

struct OpenSpan {
  std::string name;
  double ts = 0.0;
};

struct Interval {
  double start = 0.0;
  double end = 0.0;
};

// GapStats of one rank's transfers and QUEUE spans (timeline_summary.h "Gaps between
// collectives"). Sorted sweeps, so a long run's trace (every tensor of every step) is read in
// n log n.
GapStats Gaps(std::vector<Interval> transfers, std::vector<Interval> queued) {
  auto by_start = [](const Interval& a, const Interval& b) { return a.start < b.start; };
  std::sort(transfers.begin(), transfers.end(), by_start);
  std::sort(queued.begin(), queued.end(), by_start);
  std::vector<Interval> merged;
  for (const Interval& t : transfers) {
    if (!merged.empty() && t.start <= merged.back().end) {
      merged.back().end = std::max(merged.back().end, t.end);
    } else {
      merged.push_back(t);
    }
  }
  GapStats g;
  g.transfers = static_cast<int64_t>(merged.size());
  std::vector<double> waits;
  size_t next_queued = 0;
  double latest_op_start = -std::numeric_limits<double>::infinity();  // of those enqueued so far
  for (size_t i = 1; i < merged.size(); ++i) {
    const double ended = merged[i - 1].end;  // increasing: the merged transfers do not overlap
    const double gap = merged[i].start - ended;
    ++g.gaps;
    for (; next_queued < queued.size() && queued[next_queued].start <= ended; ++next_queued) {
      latest_op_start = std::max(latest_op_start, queued[next_queued].end);
    }
    if (latest_op_start > ended) {  // a tensor enqueued by then still waited for its op
      waits.push_back(gap);
      g.queued_us += gap;
      g.queued_max_us = std::max(g.queued_max_us, gap);
    } else {
      g.idle_us += gap;
    }
  }
  g.queued_gaps = static_cast<int64_t>(waits.size());
  if (!waits.empty()) {
    auto mid = waits.begin() + static_cast<std::ptrdiff_t>(waits.size() / 2);
    std::nth_element(waits.begin(), mid, waits.end());
    g.queued_median_us = *mid;
  }
  return g;
}

// Elements described by a shape string such as "[2, 3]" or "torch.Size([2, 3])"; nullopt when
// there is none or it does not fit in 64 bits (checked: the file is anyone's input).
std::optional<int64_t> ShapeElements(std::string_view shape) {
  if (shape.find_first_of("[(") == std::string_view::npos) return std::nullopt;
  int64_t elements = 1;
  for (size_t i = 0; i < shape.size();) {
    if (!std::isdigit(static_cast<unsigned char>(shape[i]))) {
      ++i;
      continue;
    }
    int64_t dim = 0;
    while (i < shape.size() && std::isdigit(static_cast<unsigned char>(shape[i]))) {
      if (__builtin_mul_overflow(dim, 10, &dim) ||
          __builtin_add_overflow(dim, shape[i++] - '0', &dim)) {
        return std::nullopt;
      }
    }
    if (__builtin_mul_overflow(elements, dim, &elements)) return std::nullopt;
  }
  return elements;
}

// a + b, held at INT64_MAX / INT64_MIN instead of overflowing.
int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t sum;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

// The event's string field `key`; "" when absent or not a string.
std::string StringField(const nlohmann::json& e, const char* key) {
  auto it = e.find(key);
  return it != e.end() && it->is_string() ? it->get<std::string>() : "";
}

int64_t BytesFromArgs(const nlohmann::json& event) {
  auto args = event.find("args");
  if (args == event.end() || !args->is_object()) return 0;
  if (auto b = args->find("bytes"); b != args->end() && b->is_number_integer()) {
    return b->get<int64_t>();
  }
  auto dtype = args->find("dtype");
  auto shape = args->find("shape");
  if (dtype == args->end() || shape == args->end() || !dtype->is_string() || !shape->is_string()) {
    return 0;
  }
  std::optional<int64_t> elements = ShapeElements(shape->get<std::string>());
  int64_t bytes = 0;
  if (!elements ||
      __builtin_mul_overflow(*elements, DtypeSize(dtype->get<std::string>()), &bytes)) {
    return 0;
  }
  return bytes;
}

double Share(double part, const SpanStats& s) {
  const double total = s.negotiate_us + s.op_us;
  return total > 0.0 ? part / total : 0.0;
}

// Tracks names of rows and open spans while walking the events in file order.
class Walker {
 public:
  explicit Walker(TimelineSummary* out) : out_(out) {}

  void Metadata(const nlohmann::json& e, int pid, int tid) {
    const std::string name = StringField(e, "name");
    auto args = e.find("args");
    if (name == "hvd_dropped_events" && args != e.end() && args->is_object() &&
        args->contains("dropped_events") && (*args)["dropped_events"].is_number_integer()) {
      out_->dropped_events += (*args)["dropped_events"].get<int64_t>();
      return;
    }
    if (args == e.end() || !args->contains("name") || !(*args)["name"].is_string()) return;
    if (name == "process_name") process_names_[pid] = (*args)["name"].get<std::string>();
    if (name == "thread_name") thread_names_[{pid, tid}] = (*args)["name"].get<std::string>();
  }

  // A complete event; only QUEUE spans count.
  void Complete(const nlohmann::json& e, int pid, int tid, double ts) {
    if (StringField(e, "name") != "QUEUE") return;
    auto args = e.find("args");
    if (args == e.end() || !args->is_object() || !args->contains("op")) return;
    const std::string op = (*args)["op"].is_string() ? (*args)["op"].get<std::string>() : "";
    const double dur = e.contains("dur") && e["dur"].is_number() ? e["dur"].get<double>() : 0.0;
    std::string tensor = TensorName(pid, tid);
    constexpr std::string_view kQueueSuffix = " QUEUE";
    if (tensor == "QUEUE") {
      auto p = process_names_.find(pid);
      tensor = p == process_names_.end() ? fmt::format("pid {}", pid) : p->second;
    } else if (tensor.ends_with(kQueueSuffix)) {
      tensor.resize(tensor.size() - kQueueSuffix.size());
    }
    for (SpanStats* s : Stats(pid, tid, tensor, op)) {
      ++s->queued;
      s->queue_us += std::max(0.0, dur);
    }
    queued_[RankRow(pid, tid)].push_back({ts, ts + std::max(0.0, dur)});
  }

  void Begin(const nlohmann::json& e, int pid, int tid, double ts) {
    stacks_[{pid, tid}].push_back({StringField(e, "name"), ts});
  }

  void End(const nlohmann::json& e, int pid, int tid, double ts) {
    std::vector<OpenSpan>& stack = stacks_[{pid, tid}];
    if (stack.empty()) {
      ++out_->unmatched_ends;
      return;
    }
    OpenSpan span = std::move(stack.back());
    stack.pop_back();
    const double us = std::max(0.0, ts - span.ts);
    const std::string tensor = TensorName(pid, tid);
    if (stack.empty() && span.name.starts_with(kNegotiatePrefix)) {
      const std::string op = span.name.substr(kNegotiatePrefix.size());
      for (SpanStats* s : Stats(pid, tid, tensor, op)) {
        ++s->negotiations;
        s->negotiate_us += us;
      }
    } else if (stack.empty()) {
      const int64_t bytes = BytesFromArgs(e);
      for (SpanStats* s : Stats(pid, tid, tensor, span.name)) {
        ++s->count;
        s->op_us += us;
        s->bytes = SaturatingAdd(s->bytes, bytes);
      }
    } else if (stack.size() == 1) {
      const ActivityKind kind = Classify(span.name);
      if (kind == ActivityKind::kTransfer) transfers_[RankRow(pid, tid)].push_back({span.ts, ts});
      for (SpanStats* s : Stats(pid, tid, tensor, stack.front().name)) {
        (kind == ActivityKind::kTransfer ? s->transfer_us
         : kind == ActivityKind::kMemcpy ? s->memcpy_us
                                         : s->other_activity_us) += us;
      }
    }
  }

  void Finish() {
    for (const auto& [row, stack] : stacks_) out_->open_spans += static_cast<int64_t>(stack.size());
    for (auto& [rank, transfers] : transfers_) {
      auto q = queued_.find(rank);
      out_->gaps[rank] = Gaps(std::move(transfers),
                              q == queued_.end() ? std::vector<Interval>() : std::move(q->second));
    }
  }

 private:
  // "rank N" for a rank's process row of an all-ranks trace, else "" (the trace's one rank). An
  // all-ranks trace names each of a rank's threads after a tensor; a one-rank trace gives each
  // tensor a process, its op on an unnamed thread and its QUEUE row on one named "QUEUE", so a
  // tensor named "rank 3" there is no rank (until 2026-12-01 it was counted as one).
  std::string RankRow(int pid, int tid) const {
    auto t = thread_names_.find({pid, tid});
    if (t == thread_names_.end() || t->second == "QUEUE") return "";
    auto p = process_names_.find(pid);
    return p != process_names_.end() && p->second.starts_with("rank ") ? p->second : "";
  }
  std::string TensorName(int pid, int tid) const {
    if (auto t = thread_names_.find({pid, tid}); t != thread_names_.end()) return t->second;
    if (auto p = process_names_.find(pid); p != process_names_.end()) return p->second;
    return fmt::format("pid {} tid {}", pid, tid);
  }
  std::vector<SpanStats*> Stats(int pid, int tid, const std::string& tensor,
                                const std::string& op) {
    std::vector<SpanStats*> stats = {&out_->by_op[op], &out_->by_tensor[{tensor, op}]};
    if (std::string rank = RankRow(pid, tid); !rank.empty()) {
      stats.push_back(&out_->by_rank[{std::move(rank), op}]);
    }
    return stats;
  }

  TimelineSummary* out_;
  std::map<int, std::string> process_names_;
  std::map<std::pair<int, int>, std::string> thread_names_;
  std::map<std::pair<int, int>, std::vector<OpenSpan>> stacks_;
  std::map<std::string, std::vector<Interval>> transfers_, queued_;  // by RankRow
};

// The event's integer field `key` (pid, tid): 0 when absent or not a number, nullopt when a
// number that is no int (1e59 converted to int was undefined behaviour; found by the fuzz
// target "timeline").
std::optional<int> IntField(const nlohmann::json& e, const char* key) {
  auto it = e.find(key);
  if (it == e.end() || !it->is_number()) return 0;
  const double v = it->get<double>();
  if (!(v >= std::numeric_limits<int>::min() && v <= std::numeric_limits<int>::max()) ||
      v != std::trunc(v)) {
    return std::nullopt;
  }
  return static_cast<int>(v);
}

}  // namespace

double SpanStats::negotiate_share() const { return Share(negotiate_us, *this); }
double SpanStats::transfer_share() const { return Share(transfer_us, *this); }
double SpanStats::memcpy_share() const { return Share(memcpy_us, *this); }

int64_t DtypeSize(std::string_view dtype) {
  std::string d(dtype);
  std::transform(d.begin(), d.end(), d.begin(), [](unsigned char c) { return std::tolower(c); });
  for (std::string_view prefix : {"horovod_", "torch.", "hvd_"}) {
    if (d.starts_with(prefix)) d = d.substr(prefix.size());
  }
  static const std::map<std::string, int64_t> kSizes = {
      {"uint8", 1}, {"int8", 1},     {"bool", 1},  {"int16", 2},   {"float16", 2},
      {"half", 2},  {"bfloat16", 2}, {"int32", 4}, {"float32", 4}, {"float", 4},
      {"int", 4},   {"int64", 8},    {"long", 8},  {"float64", 8}, {"double", 8}};
  auto it = kSizes.find(d);
  return it == kSizes.end() ? 0 : it->second;
}

Result<TimelineSummary> Summarize(const nlohmann::json& trace) {
  const nlohmann::json* events = &trace;
  if (trace.is_object() && trace.contains("traceEvents")) events = &trace["traceEvents"];
  if (!events->is_array()) {
    return Status::InvalidArgument(
        "not a trace: expected a JSON array of events or {\"traceEvents\": [...]}");
  }
  TimelineSummary summary;
  Walker walker(&summary);
  int64_t index = -1;
  for (const nlohmann::json& e : *events) {
    ++index;
    if (!e.is_object()) continue;
    const std::string ph = StringField(e, "ph");
    const std::optional<int> pid = IntField(e, "pid");
    const std::optional<int> tid = IntField(e, "tid");
    if (!pid || !tid) {
      // The two fields, not the event: nlohmann's dump recurses once per level of nesting, and
      // an event nested a million deep (which its parser reads without recursing) overflowed
      // the stack here until 2026-12-01. A field IntField refused is a number, so flat.
      const auto shown = [&](const char* key) {
        auto it = e.find(key);
        return it == e.end()     ? std::string("absent")
               : it->is_number() ? it->dump()
                                 : "not a number";
      };
      return Status::InvalidArgument(
          fmt::format("event {}: its pid ({}) and tid ({}) must be integers", index, shown("pid"),
                      shown("tid")));
    }
    const double ts = e.contains("ts") && e["ts"].is_number() ? e["ts"].get<double>() : 0.0;
    if (ph == "M") {
      walker.Metadata(e, *pid, *tid);
    } else if (ph == "B") {
      walker.Begin(e, *pid, *tid, ts);
    } else if (ph == "E") {
      walker.End(e, *pid, *tid, ts);
    } else if (ph == "X") {
      walker.Complete(e, *pid, *tid, ts);
    }
  }
  walker.Finish();
  return summary;
}

Result<TimelineSummary> SummarizeFile(const std::string& path) {
  HVD_ASSIGN_OR_RETURN(std::string text, ReadTimelineFile(path));
  return SummarizeText(std::move(text), path);
}

Result<TimelineSummary> SummarizeText(std::string text, const std::string& path) {
  if (text.find('\0') != std::string::npos) {  // the parser would stop there (CheckTimelineText)
    return Status::InvalidArgument(
        fmt::format("'{}' is not a timeline: {}", path, CheckTimelineText(text).detail));
  }
  const bool torn = RepairTornTimelineText(&text);
  nlohmann::json trace = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  TimelineCheck damage;
  damage.shape = TimelineShape::kComplete;
  if (trace.is_discarded()) {
    damage = CheckTimelineText(text);
    if (damage.shape == TimelineShape::kEmpty) {
      return Status::InvalidArgument(
          fmt::format("'{}' is empty ({} bytes): not a timeline", path, damage.size));
    }
    if (Repairable(damage) && damage.events == 0) {
      return Status::InvalidArgument(
          fmt::format("'{}' is not a timeline: it ends at byte {} before its first complete event",
                      path, damage.size));
    }
    if (!RepairTimelineText(damage, &text)) {
      return Status::InvalidArgument(
          fmt::format("'{}' is not a timeline: {}", path, damage.detail));
    }
    trace = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  }
  Result<TimelineSummary> summary = Summarize(trace);
  if (!summary.ok()) return summary.status().WithContext("'" + path + "'");
  summary->torn_growth = torn;
  summary->unclosed = damage.shape == TimelineShape::kUnclosed;
  if (damage.shape == TimelineShape::kTruncated) summary->truncated_at = damage.size;
  summary->kept_events = damage.events;
  return summary;
}

std::string FormatSummary(const TimelineSummary& s) {
  auto line = [](const std::string& label, const SpanStats& st, size_t width) {
    return fmt::format(
        "{:<{}} {:>7} {:>12.3f} {:>10.3f} {:>14} {:>9.1f}% {:>9.1f}% {:>7.1f}% {:>10.3f}\n", label,
        width, st.count, st.op_us / 1000.0, st.mean_us() / 1000.0, st.bytes,
        100 * st.negotiate_share(), 100 * st.transfer_share(), 100 * st.memcpy_share(),
        st.queue_us / 1000.0);
  };
  auto header = [](const std::string& label, size_t width) {
    return fmt::format("{:<{}} {:>7} {:>12} {:>10} {:>14} {:>10} {:>10} {:>8} {:>10}\n", label,
                       width, "count", "total_ms", "mean_ms", "bytes", "negotiate", "transfer",
                       "memcpy", "queue_ms");
  };
  auto table = [&](const std::string& title,
                   const std::map<std::pair<std::string, std::string>, SpanStats>& rows) {
    size_t width = 20;
    for (const auto& [key, st] : rows)
      width = std::max(width, key.first.size() + key.second.size() + 3);
    std::string out = "\n" + header(title, width);
    for (const auto& [key, st] : rows) {
      out += line(fmt::format("{} ({})", key.first, key.second), st, width);
    }
    return out;
  };
  size_t op_width = 14;
  for (const auto& [op, st] : s.by_op) op_width = std::max(op_width, op.size());
  std::string out = header("op", op_width);
  for (const auto& [op, st] : s.by_op) out += line(op, st, op_width);
  out += table("tensor (op)", s.by_tensor);
  if (!s.by_rank.empty()) out += table("rank (op)", s.by_rank);
  if (!s.gaps.empty()) {
    out +=
        "\ngaps between collectives (a transfer's end to the next one's start; queued: a tensor "
        "was enqueued before the first ended, idle: none was)\n";
    out +=
        fmt::format("{:<12} {:>9} {:>7} {:>7} {:>10} {:>10} {:>10} {:>12}\n", "rank", "transfers",
                    "gaps", "queued", "queued_ms", "median_ms", "max_ms", "idle_ms");
    for (const auto& [rank, g] : s.gaps) {
      out += fmt::format("{:<12} {:>9} {:>7} {:>7} {:>10.3f} {:>10.3f} {:>10.3f} {:>12.3f}\n",
                         rank.empty() ? "trace" : rank, g.transfers, g.gaps, g.queued_gaps,
                         g.queued_us / 1000.0, g.queued_median_us / 1000.0,
                         g.queued_max_us / 1000.0, g.idle_us / 1000.0);
    }
  }
  if (s.unmatched_ends > 0 || s.open_spans > 0) {
    out += fmt::format("\n{} unmatched end events, {} spans never closed\n", s.unmatched_ends,
                       s.open_spans);
  }
  if (s.dropped_events > 0) {
    out += fmt::format(
        "\n{} events were dropped while recording (the writer's queue was full, or another "
        "rank's shipment was): the numbers above miss them\n",
        s.dropped_events);
  }
  if (s.unclosed) {
    out += fmt::format(
        "\nthe array was never closed (Horovod's writer leaves it so); read its {} events: "
        "`hvd-timeline repair FILE` closes it\n",
        s.kept_events);
  }
  if (s.truncated_at >= 0) {
    out += fmt::format(
        "\nthe file is cut at byte {} inside an event; read the {} complete events before it: "
        "`hvd-timeline repair FILE` drops the partial event and closes the array\n",
        s.truncated_at, s.kept_events);
  }
  if (s.torn_growth) {
    out +=
        "\nthe file was torn mid-growth by a killed writer (two closing brackets); read as "
        "repaired: `hvd-timeline repair FILE` fixes the file\n";
  }
  return out;
}

}  // namespace hvd::timeline
