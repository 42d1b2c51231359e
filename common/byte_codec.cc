#include "common/byte_codec.h"

namespace hvd::control {

void ByteWriter::PutU8(uint8_t v) { out_.push_back(static_cast<char>(v)); }

void ByteWriter::PutU32(uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out_.push_back(static_cast<char>(v >> shift));
}

void ByteWriter::PutU64(uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) out_.push_back(static_cast<char>(v >> shift));
}

void ByteWriter::PutBytes(std::string_view bytes) {
  PutU32(static_cast<uint32_t>(bytes.size()));
  out_.append(bytes);
}

void ByteWriter::PutRaw(std::string_view bytes) { out_.append(bytes); }

std::optional<std::string_view> ByteReader::Take(size_t n) {
  if (failed_ || in_.size() - pos_ < n) {
    failed_ = true;
    return std::nullopt;
  }
  std::string_view piece = in_.substr(pos_, n);
  pos_ += n;
  return piece;
}

std::optional<uint8_t> ByteReader::GetU8() {
  auto piece = Take(1);
  if (!piece) return std::nullopt;
  return static_cast<uint8_t>((*piece)[0]);
}

std::optional<uint32_t> ByteReader::GetU32() {
  auto piece = Take(4);
  if (!piece) return std::nullopt;
  uint32_t v = 0;
  for (char c : *piece) v = (v << 8) | static_cast<uint8_t>(c);
  return v;
}

std::optional<uint64_t> ByteReader::GetU64() {
  auto piece = Take(8);
  if (!piece) return std::nullopt;
  uint64_t v = 0;
  for (char c : *piece) v = (v << 8) | static_cast<uint8_t>(c);
  return v;
}

std::optional<int64_t> ByteReader::GetI64() {
  auto v = GetU64();
  if (!v) return std::nullopt;
  return static_cast<int64_t>(*v);
}

std::optional<std::string> ByteReader::GetBytes() {
  auto length = GetU32();
  if (!length) return std::nullopt;
  auto piece = Take(*length);
  if (!piece) return std::nullopt;
  return std::string(*piece);
}

std::optional<std::string> ByteReader::GetRaw(size_t n) {
  auto piece = Take(n);
  if (!piece) return std::nullopt;
  return std::string(*piece);
}

}  // namespace hvd::control
