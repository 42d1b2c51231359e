#include "timeline/trace_record.h"

#include <charconv>
#include <nlohmann/json.hpp>

namespace hvd::timeline {
namespace {

// Appends `s` as a JSON string. Plain printable ASCII (the usual tensor and event names) is
// copied as is; anything else goes through nlohmann, which escapes and replaces invalid UTF-8.
void AppendQuoted(std::string* out, std::string_view s) {
  bool plain = true;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f || c == '"' || c == '\\') {
      plain = false;
      break;
    }
  }
  if (plain) {
    out->push_back('"');
    out->append(s);
    out->push_back('"');
    return;
  }
  out->append(nlohmann::json(std::string(s))
                  .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void AppendInt(std::string* out, int64_t value) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  out->append(buf, end);
}

}  // namespace

// Written by hand rather than through a JSON library: this runs for every record on the
// writer thread, and its cost is what the timeline costs a job (bench/timeline_cost.sh,
// bench/timeline_micro.cc).
void AppendJson(std::string* out, const TraceRecord& r) {
  *out += R"({"ph":")";
  out->push_back(r.phase);
  *out += R"(","name":)";
  AppendQuoted(out, r.Name());
  *out += R"(,"pid":)";
  AppendInt(out, r.pid);
  *out += R"(,"tid":)";
  AppendInt(out, r.tid);
  if (r.phase != 'M') {
    *out += R"(,"ts":)";
    AppendInt(out, r.ts_us);
  }
  if (r.phase == 'X') {
    *out += R"(,"dur":)";
    AppendInt(out, r.dur_us);
  }
  if (r.phase == 'i') *out += R"(,"s":"g")";
  if (!r.args.empty()) {
    *out += R"(,"args":{)";
    for (size_t i = 0; i < r.args.size(); ++i) {
      const auto& [key, value] = r.args[i];
      if (i > 0) out->push_back(',');
      AppendQuoted(out, key);
      out->push_back(':');
      if (const auto* n = std::get_if<int64_t>(&value)) {
        AppendInt(out, *n);
      } else {
        AppendQuoted(out, std::get<std::string>(value));
      }
    }
    out->push_back('}');
  }
  out->push_back('}');
}

std::string ToJson(const TraceRecord& r) {
  std::string out;
  out.reserve(96 + r.Name().size());
  AppendJson(&out, r);
  return out;
}

}  // namespace hvd::timeline
