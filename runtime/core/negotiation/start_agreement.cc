#include "runtime/core/negotiation/start_agreement.h"

#include <fmt/format.h>

#include <charconv>
#include <optional>
#include <string_view>

#include "common/printable.h"

namespace hvd::runtime {
namespace {

// The next number of `rest` and the space after it (every number of a line is followed by one:
// the process sets come last), written as EncodeStartLine writes it (no sign but a minus, no
// leading zero), or nullopt.
std::optional<int64_t> TakeNumber(std::string_view* rest) {
  const size_t end = rest->find(' ');
  if (end == std::string_view::npos) return std::nullopt;
  const std::string_view word = rest->substr(0, end);
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (word.empty() || ec != std::errc() || ptr != word.data() + word.size() ||
      std::to_string(value) != word) {
    return std::nullopt;
  }
  rest->remove_prefix(end + 1);
  return value;
}

}  // namespace

std::string EncodeStartLine(int64_t local_size, std::span<const StartKnob> knobs,
                            const std::string& sets) {
  std::string line = std::to_string(local_size);
  for (const StartKnob& k : knobs) line += " " + std::to_string(k.value);
  return line + " " + sets;
}

std::string JudgeStartLines(const std::vector<std::string>& lines, int64_t local_size,
                            std::span<const StartKnob> knobs, const std::string& sets) {
  bool homogeneous = true;
  for (size_t r = 0; r < lines.size(); ++r) {
    std::string_view rest = lines[r];
    const std::optional<int64_t> their_local_size = TakeNumber(&rest);
    if (!their_local_size) {
      return fmt::format("rank {} sent a malformed start-up line: '{}'", r,
                         Printable(lines[r], 200));
    }
    homogeneous = homogeneous && *their_local_size == local_size;
    for (const StartKnob& k : knobs) {
      const std::optional<int64_t> value = TakeNumber(&rest);
      if (!value) {
        return fmt::format("rank {} sent a malformed start-up line (at {}): '{}'", r, k.name,
                           Printable(lines[r], 200));
      }
      if (*value != k.value) {
        return fmt::format(
            "{} differs between ranks: rank 0 has {}, rank {} has {}; every rank of a job needs "
            "the same value (export it before hvdrun: its ranks inherit it)",
            k.name, k.value, r, *value);
      }
    }
    if (rest != sets) {
      return fmt::format(
          "the process sets given to init differ between ranks: rank 0 has {}, rank {} has {}; "
          "every rank must pass the same process_sets, in the same order",
          sets, r, Printable(rest, 512));
    }
  }
  return homogeneous ? "1" : "0";
}

}  // namespace hvd::runtime
