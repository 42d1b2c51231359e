#ifndef HVD_TEST_FUZZ_FUZZ_INPUT_H_
#define HVD_TEST_FUZZ_FUZZ_INPUT_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

// Helpers the fuzz entries share to cut one input into the pieces a decoder is given
// (a mode byte, several environment variables, a stream delivered in chunks). Deterministic:
// the same input always makes the same pieces, so every finding reproduces.
namespace hvd::fuzz {

class FuzzInput {
 public:
  explicit FuzzInput(std::string_view data) : data_(data) {}

  // The next byte, 0 once the input is exhausted.
  uint8_t Byte() {
    if (data_.empty()) return 0;
    uint8_t b = static_cast<uint8_t>(data_[0]);
    data_.remove_prefix(1);
    return b;
  }
  // Up to the next `separator` (consumed), or the rest.
  std::string_view Until(char separator) {
    size_t at = data_.find(separator);
    std::string_view piece = data_.substr(0, at);
    data_.remove_prefix(at == std::string_view::npos ? data_.size() : at + 1);
    return piece;
  }
  // At most `n` bytes.
  std::string_view Take(size_t n) {
    std::string_view piece = data_.substr(0, n);
    data_.remove_prefix(piece.size());
    return piece;
  }
  std::string_view Rest() { return Take(data_.size()); }
  bool empty() const { return data_.empty(); }

 private:
  std::string_view data_;
};

// Appends `status`'s message as one line of an entry's outcome (nothing when OK).
inline void Note(std::string* outcome, const Status& status) {
  if (status.ok()) return;
  outcome->append(status.message());
  outcome->push_back('\n');
}
inline void Note(std::string* outcome, std::string_view error) {
  if (error.empty()) return;
  outcome->append(error);
  outcome->push_back('\n');
}

}  // namespace hvd::fuzz

#endif  // HVD_TEST_FUZZ_FUZZ_INPUT_H_
