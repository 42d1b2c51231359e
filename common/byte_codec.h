#ifndef HVD_COMMON_BYTE_CODEC_H_
#define HVD_COMMON_BYTE_CODEC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

// The control channel's body encoding: a flat sequence of fields, each either a fixed-width
// big-endian integer or a length-prefixed byte string (u32 big-endian length, then the bytes).
// No type tags, no nesting, nothing executable: a message's schema is fixed by its frame type
// (common/kv_messages.h). Both classes are plain values, not synchronized.
namespace hvd::control {

class ByteWriter {
 public:
  void PutU8(uint8_t v);
  void PutU32(uint32_t v);
  void PutU64(uint64_t v);
  void PutI64(int64_t v) { PutU64(static_cast<uint64_t>(v)); }
  void PutBytes(std::string_view bytes);  // u32 length + bytes
  void PutRaw(std::string_view bytes);    // no length prefix (fixed-size fields)

  const std::string& data() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

// Reads fields in order. Every getter returns nullopt once the input is exhausted or a length
// prefix overruns it; after that the reader stays failed. Done() says whether the whole input
// was consumed, so trailing bytes are detectable.
class ByteReader {
 public:
  explicit ByteReader(std::string_view in) : in_(in) {}

  std::optional<uint8_t> GetU8();
  std::optional<uint32_t> GetU32();
  std::optional<uint64_t> GetU64();
  std::optional<int64_t> GetI64();
  std::optional<std::string> GetBytes();
  std::optional<std::string> GetRaw(size_t n);

  bool Done() const { return !failed_ && pos_ == in_.size(); }
  bool failed() const { return failed_; }

 private:
  std::optional<std::string_view> Take(size_t n);

  std::string_view in_;
  size_t pos_ = 0;
  bool failed_ = false;
};

}  // namespace hvd::control

#endif  // HVD_COMMON_BYTE_CODEC_H_
