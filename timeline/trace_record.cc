#include "timeline/trace_record.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace hvd::timeline {
namespace {

std::string Quote(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::string ToJson(const TraceRecord& r) {
  std::string out = fmt::format(R"({{"ph":"{}","name":{},"pid":{},"tid":{})", r.phase,
                                Quote(r.name), r.pid, r.tid);
  if (r.phase != 'M') out += fmt::format(R"(,"ts":{})", r.ts_us);
  if (r.phase == 'X') out += R"(,"dur":0)";
  if (r.phase == 'i') out += R"(,"s":"g")";
  if (!r.args.empty()) {
    out += R"(,"args":{)";
    for (size_t i = 0; i < r.args.size(); ++i) {
      const auto& [key, value] = r.args[i];
      if (i > 0) out += ',';
      out += Quote(key) + ':';
      if (const auto* n = std::get_if<int64_t>(&value)) {
        out += std::to_string(*n);
      } else {
        out += Quote(std::get<std::string>(value));
      }
    }
    out += '}';
  }
  out += '}';
  return out;
}

}  // namespace hvd::timeline
