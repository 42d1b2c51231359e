#include "launcher/preflight_answers.h"

#include "common/printable.h"

namespace hvd::launcher {

void KeepTail(std::string* out, std::string_view more) {
  if (more.size() >= kMaxRemoteOutput) {
    out->assign(more.substr(more.size() - kMaxRemoteOutput));
    return;
  }
  out->append(more);
  if (out->size() > kMaxRemoteOutput) out->erase(0, out->size() - kMaxRemoteOutput);
}

std::string VersionAnswer(std::string_view out) {
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.remove_suffix(1);
  if (size_t newline = out.rfind('\n'); newline != std::string_view::npos) {
    out.remove_prefix(newline + 1);
  }
  return Printable(out, kMaxAnswerBytes);
}

ProbeAnswer ReadProbeAnswer(std::string_view out) {
  ProbeAnswer answer;
  while (!out.empty()) {
    const size_t end = out.find('\n');
    std::string_view line = out.substr(0, end);
    out.remove_prefix(end == std::string_view::npos ? out.size() : end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.starts_with("interface ")) {
      answer.interface = Printable(line.substr(10), kMaxAnswerBytes);
    } else if (line.starts_with("reach ")) {
      answer.reach = Printable(line.substr(6), kMaxAnswerBytes);
    }
  }
  return answer;
}

}  // namespace hvd::launcher
