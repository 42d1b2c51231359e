#include "runtime/transports/tcp/tcp_algorithms.h"

#include <algorithm>
#include <cstring>

#include "runtime/transports/allreduce_pieces.h"

namespace hvd::runtime {
namespace {

// (*off)[i] = bytes[0] + ... + bytes[i-1], for i in [0, bytes.size()]; reuses *off's capacity.
const std::vector<size_t>& Offsets(const std::vector<size_t>& bytes, std::vector<size_t>* off) {
  off->assign(bytes.size() + 1, 0);
  for (size_t i = 0; i < bytes.size(); ++i) (*off)[i + 1] = (*off)[i] + bytes[i];
  return *off;
}

// Leaves lower op higher in `mine`, the peer's part having arrived in `theirs`
// (`peer_is_lower`: whose part comes first). Both partners of an exchange call red.fn with the
// same operands in the same order, so they form the same bits.
void Combine(const TcpReducer& red, char* mine, char* theirs, size_t bytes, bool peer_is_lower) {
  const int64_t count = static_cast<int64_t>(bytes / red.elem);
  if (peer_is_lower) {
    red.fn(theirs, mine, count);
    std::memcpy(mine, theirs, bytes);
  } else {
    red.fn(mine, theirs, count);
  }
}

void EncodeLength(uint64_t v, uint8_t out[8]) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(v >> (8 * i));
}

}  // namespace

TcpAlgorithms::TcpAlgorithms(TcpTransport* transport, int rank, int size)
    : t_(transport),
      rank_(rank),
      size_(size),
      streams_(static_cast<size_t>(2 * std::max(size - 1, 1))) {
  offsets_.reserve(size + 1);
  offsets2_.reserve(size + 1);
}

TcpStream& TcpAlgorithms::AddStream(int peer, bool send) {
  HVD_CHECK(used_ < streams_.size()) << "a plan of more than " << streams_.size() << " streams";
  TcpStream& s = streams_[used_++];
  s.Reset(peer, send);
  return s;
}

TcpStream& TcpAlgorithms::AddStream(int peer, bool send, TcpPiece piece) {
  TcpStream& s = AddStream(peer, send);
  s.pieces.push_back(piece);
  return s;
}

Status TcpAlgorithms::Run(const TcpReducer* red, const TcpWhat& what) {
  const size_t n = used_;
  used_ = 0;
  return t_->Run(std::span<TcpStream>(streams_.data(), n), red, timeout_, what);
}

char* TcpAlgorithms::Scratch(size_t bytes) {
  if (scratch_.size() < bytes) scratch_.resize(std::max(bytes, scratch_floor_));
  return scratch_.data();
}

Status TcpAlgorithms::DirectAllreduce(char* buf, size_t bytes, const TcpReducer& red,
                                      const TcpWhat& what) {
  char* slots = Scratch(bytes * size_);
  for (int j = 0; j < size_; ++j) {
    if (j == rank_) continue;
    AddStream(j, true, {buf, bytes, false});
    AddStream(j, false, {slots + j * bytes, bytes, false});
  }
  HVD_RETURN_IF_ERROR(Run(nullptr, what));
  // a0 op a1 op ... in rank order, accumulated in rank 0's slot (or in place on rank 0).
  const int64_t count = static_cast<int64_t>(bytes / red.elem);
  char* acc = rank_ == 0 ? buf : slots;
  for (int j = 1; j < size_; ++j) red.fn(acc, j == rank_ ? buf : slots + j * bytes, count);
  if (acc != buf) std::memcpy(buf, acc, bytes);
  return Status::OK();
}

Status TcpAlgorithms::DoublingAllreduce(char* buf, size_t bytes, const TcpReducer& red,
                                        const TcpWhat& what) {
  char* other = Scratch(bytes);
  auto exchange = [&](int peer, bool peer_is_lower) -> Status {
    AddStream(peer, true, {buf, bytes, false});
    AddStream(peer, false, {other, bytes, false});
    HVD_RETURN_IF_ERROR(Run(nullptr, what));
    Combine(red, buf, other, bytes, peer_is_lower);
    return Status::OK();
  };
  int pof2, vrank;
  HVD_RETURN_IF_ERROR(FoldIn(buf, bytes, other, red, what, &pof2, &vrank));
  if (vrank < 0) return Status::OK();
  const int rem = size_ - pof2;
  // Virtual rank v stands for ranks 2v, 2v+1 (v < rem) or v + rem: ascending with v.
  for (int mask = 1; mask < pof2; mask <<= 1) {
    const int vpeer = vrank ^ mask;
    const int peer = vpeer < rem ? 2 * vpeer + 1 : vpeer + rem;
    HVD_RETURN_IF_ERROR(exchange(peer, vpeer < vrank));
  }
  return FoldOut(buf, bytes, pof2, what);
}

Status TcpAlgorithms::FoldIn(char* buf, size_t bytes, char* other, const TcpReducer& red,
                             const TcpWhat& what, int* pof2, int* vrank) {
  *pof2 = 1;
  while (*pof2 * 2 <= size_) *pof2 *= 2;
  const int rem = size_ - *pof2;
  if (rank_ >= 2 * rem) {
    *vrank = rank_ - rem;
    return Status::OK();
  }
  if (rank_ % 2 == 0) {
    *vrank = -1;
    AddStream(rank_ + 1, true, {buf, bytes, false});
    HVD_RETURN_IF_ERROR(Run(nullptr, what));
    AddStream(rank_ + 1, false, {buf, bytes, false});
    return Run(nullptr, what);
  }
  AddStream(rank_ - 1, false, {other, bytes, false});
  HVD_RETURN_IF_ERROR(Run(nullptr, what));
  Combine(red, buf, other, bytes, /*peer_is_lower=*/true);
  *vrank = rank_ / 2;
  return Status::OK();
}

Status TcpAlgorithms::FoldOut(char* buf, size_t bytes, int pof2, const TcpWhat& what) {
  if (rank_ >= 2 * (size_ - pof2)) return Status::OK();
  AddStream(rank_ - 1, true, {buf, bytes, false});
  return Run(nullptr, what);
}

Status TcpAlgorithms::HalvingDoublingAllreduce(char* buf, size_t bytes, const TcpReducer& red,
                                               const TcpWhat& what) {
  const size_t elem = red.elem;
  const int64_t count = static_cast<int64_t>(bytes / elem);
  char* other = Scratch(bytes);
  int pof2, vrank;
  HVD_RETURN_IF_ERROR(FoldIn(buf, bytes, other, red, what, &pof2, &vrank));
  if (vrank < 0) return Status::OK();
  const int rem = size_ - pof2;
  HVD_CHECK(count >= pof2) << "halving-doubling allreduce of " << count << " elements over " << pof2
                           << " ranks";
  auto real = [&](int v) { return v < rem ? 2 * v + 1 : v + rem; };
  // Segment i of p: elements [i * count / p, (i + 1) * count / p), as bytes.
  auto at = [&](int i) { return static_cast<size_t>(i * count / pof2) * elem; };
  // Reduce-scatter: the window of segments [lo, hi) halves each round; the lower partner keeps
  // the lower half. What arrives (the peer's copy of the kept half) lands at the same offset in
  // `other`.
  int lo = 0, hi = pof2;
  for (int mask = pof2 / 2; mask >= 1; mask >>= 1) {
    const int vpeer = vrank ^ mask;
    const int mid = lo + (hi - lo) / 2;
    const bool lower = (vrank & mask) == 0;
    const int keep_lo = lower ? lo : mid, keep_hi = lower ? mid : hi;
    const int send_lo = lower ? mid : lo, send_hi = lower ? hi : mid;
    AddStream(real(vpeer), true, {buf + at(send_lo), at(send_hi) - at(send_lo), false});
    AddStream(real(vpeer), false, {other + at(keep_lo), at(keep_hi) - at(keep_lo), false});
    HVD_RETURN_IF_ERROR(Run(nullptr, what));
    Combine(red, buf + at(keep_lo), other + at(keep_lo), at(keep_hi) - at(keep_lo), !lower);
    lo = keep_lo;
    hi = keep_hi;
  }
  // This member's window is complete: the reducer's finish (a scale) runs on it once, before
  // the allgather copies it to the others.
  if (red.finish && hi > lo)
    red.finish(buf + at(lo), static_cast<int64_t>((at(hi) - at(lo)) / elem));
  // Allgather: the window doubles each round, the peer's adjacent window arriving in place.
  for (int mask = 1; mask < pof2; mask <<= 1) {
    const int vpeer = vrank ^ mask;
    const int width = hi - lo;
    const int peer_lo = (vrank & mask) == 0 ? hi : lo - width;
    AddStream(real(vpeer), true, {buf + at(lo), at(hi) - at(lo), false});
    AddStream(real(vpeer), false, {buf + at(peer_lo), at(peer_lo + width) - at(peer_lo), false});
    HVD_RETURN_IF_ERROR(Run(nullptr, what));
    lo = std::min(lo, peer_lo);
    hi = lo + 2 * width;
  }
  return FoldOut(buf, bytes, pof2, what);
}

Status TcpAlgorithms::Ring(char* buf, const std::vector<size_t>& seg_bytes, const TcpReducer& red,
                           bool allgather, const TcpWhat& what) {
  size_t total = 0;
  for (size_t b : seg_bytes) total += b;
  const TcpPiece whole{buf, total, false};
  return Ring(std::span<const TcpPiece>(&whole, 1), seg_bytes, red, allgather, what);
}

Status TcpAlgorithms::Ring(std::span<const TcpPiece> parts, const std::vector<size_t>& seg_bytes,
                           const TcpReducer& red, bool allgather, const TcpWhat& what) {
  const int n = size_;
  parts_ = parts;  // used by AppendRange below, before this call returns
  part_starts_.assign(parts.size() + 1, 0);
  for (size_t i = 0; i < parts.size(); ++i) part_starts_[i + 1] = part_starts_[i] + parts[i].bytes;
  const std::vector<size_t>& off = Offsets(seg_bytes, &offsets_);
  auto seg = [&](TcpStream& s, int i, bool reduce, bool finish = false) {
    i = ((i % n) + n) % n;
    AppendRange(s, off[i], seg_bytes[i], reduce, finish);
  };
  // Reduce-scatter step i sends segment r-1-i and folds segment r-2-i arriving from the left
  // into the local copy; what arrives (reduced) is exactly what is sent next, so the send
  // stream may run ahead of the receive stream by its first segment only. The allgather then
  // forwards segment r (now complete) and every complete segment arriving from the left.
  TcpStream& out = AddStream((rank_ + 1) % n, true);
  TcpStream& in = AddStream((rank_ - 1 + n) % n, false);
  // The last step completes segment r: the reducer's finish (a scale) runs on it as it is
  // reduced, before the allgather forwards it, so the result takes no pass of its own.
  for (int i = 0; i < n - 1; ++i) {
    seg(out, rank_ - 1 - i, false);
    seg(in, rank_ - 2 - i, true, i == n - 2);
  }
  if (allgather) {
    for (int j = 0; j < n - 1; ++j) {
      seg(out, rank_ - j, false);
      seg(in, rank_ - 1 - j, false);
    }
  }
  out.ready = seg_bytes[(rank_ - 1 + n) % n];
  out.source = &in;
  return Run(&red, what);
}

void TcpAlgorithms::AppendRange(TcpStream& s, size_t lo, size_t n, bool reduce, bool finish) {
  ForEachOverlap(std::span<const size_t>(part_starts_), lo, n,
                 [&](size_t i, size_t in_part, size_t, size_t len) {
                   s.pieces.push_back({parts_[i].data + in_part, len, reduce, finish});
                 });
}

Status TcpAlgorithms::ExchangeSegments(const char* in, const std::vector<size_t>& seg_bytes,
                                       const char** slots_out, const TcpWhat& what) {
  const std::vector<size_t>& off = Offsets(seg_bytes, &offsets_);
  const size_t mine = seg_bytes[rank_];
  char* slots = Scratch(mine * size_);
  if (mine > 0) std::memcpy(slots + rank_ * mine, in + off[rank_], mine);
  for (int j = 0; j < size_; ++j) {
    if (j == rank_) continue;
    AddStream(j, true, {const_cast<char*>(in) + off[j], seg_bytes[j], false});
    AddStream(j, false, {slots + j * mine, mine, false});
  }
  HVD_RETURN_IF_ERROR(Run(nullptr, what));
  *slots_out = slots;
  return Status::OK();
}

Status TcpAlgorithms::Allgatherv(char* out, const std::vector<size_t>& part_bytes, bool ring,
                                 const TcpWhat& what) {
  const int n = size_;
  const std::vector<size_t>& off = Offsets(part_bytes, &offsets_);
  auto part = [&](int i) {
    i = ((i % n) + n) % n;
    return TcpPiece{out + off[i], part_bytes[i], false};
  };
  if (!ring) {
    for (int j = 0; j < n; ++j) {
      if (j == rank_) continue;
      AddStream(j, true, part(rank_));
      AddStream(j, false, part(j));
    }
    return Run(nullptr, what);
  }
  TcpStream& send = AddStream((rank_ + 1) % n, true);
  TcpStream& recv = AddStream((rank_ - 1 + n) % n, false);
  for (int j = 0; j < n - 1; ++j) {
    send.pieces.push_back(part(rank_ - j));
    recv.pieces.push_back(part(rank_ - 1 - j));
  }
  send.ready = part_bytes[rank_];
  send.source = &recv;
  return Run(nullptr, what);
}

Status TcpAlgorithms::DoublingAllgatherv(char* out, const std::vector<size_t>& part_bytes,
                                         const TcpWhat& what) {
  const std::vector<size_t>& off = Offsets(part_bytes, &offsets_);
  for (int mask = 1; mask < size_; mask <<= 1) {
    const int peer = rank_ ^ mask;
    const int mine = rank_ & ~(mask - 1), theirs = peer & ~(mask - 1);
    AddStream(peer, true, {out + off[mine], off[mine + mask] - off[mine], false});
    AddStream(peer, false, {out + off[theirs], off[theirs + mask] - off[theirs], false});
    HVD_RETURN_IF_ERROR(Run(nullptr, what));
  }
  return Status::OK();
}

Status TcpAlgorithms::Broadcast(char* buf, size_t bytes, int root, bool chain,
                                const TcpWhat& what) {
  const int n = size_;
  if (!chain) {
    if (rank_ != root) {
      AddStream(root, false, {buf, bytes, false});
    } else {
      for (int j = 0; j < n; ++j) {
        if (j != root) AddStream(j, true, {buf, bytes, false});
      }
    }
    return Run(nullptr, what);
  }
  // A pipelined chain root -> root+1 -> ...: each rank forwards what has arrived.
  const int pos = (rank_ - root + n) % n;
  TcpStream* from_left = nullptr;
  if (pos > 0) from_left = &AddStream((rank_ - 1 + n) % n, false, {buf, bytes, false});
  if (pos < n - 1) {
    TcpStream& to_right = AddStream((rank_ + 1) % n, true, {buf, bytes, false});
    if (from_left != nullptr) {
      to_right.ready = 0;
      to_right.source = from_left;
    }
  }
  return Run(nullptr, what);
}

Status TcpAlgorithms::Alltoallv(const char* in, const std::vector<size_t>& send_bytes, char* out,
                                const std::vector<size_t>& recv_bytes, const TcpWhat& what) {
  const std::vector<size_t>& soff = Offsets(send_bytes, &offsets_);
  const std::vector<size_t>& roff = Offsets(recv_bytes, &offsets2_);
  const size_t self = std::min(send_bytes[rank_], recv_bytes[rank_]);
  if (self > 0 && out + roff[rank_] != in + soff[rank_]) {
    std::memmove(out + roff[rank_], in + soff[rank_], self);
  }
  for (int j = 0; j < size_; ++j) {
    if (j == rank_) continue;
    AddStream(j, true, {const_cast<char*>(in) + soff[j], send_bytes[j], false});
    AddStream(j, false, {out + roff[j], recv_bytes[j], false});
  }
  return Run(nullptr, what);
}

Status TcpAlgorithms::HeadedAlltoall(const char* head, size_t head_bytes, const char* in,
                                     std::span<const int64_t> piece_bytes, char* out,
                                     const std::vector<size_t>& out_offsets, const TcpWhat& what) {
  const size_t mine = static_cast<size_t>(piece_bytes[rank_]);
  size_t at = 0;
  for (int j = 0; j < size_; ++j) {
    const size_t piece = static_cast<size_t>(piece_bytes[j]);
    if (j != rank_) {
      TcpStream& send = AddStream(j, true, {const_cast<char*>(head), head_bytes, false});
      if (piece > 0) send.pieces.push_back({const_cast<char*>(in) + at, piece, false});
      AddStream(j, false, {out + out_offsets[j], head_bytes + mine, false});
    }
    at += piece;
  }
  return Run(nullptr, what);
}

Status TcpAlgorithms::GatherBytes(const std::string& in, int root, std::vector<std::string>* out,
                                  const TcpWhat& what) {
  uint8_t header[8];
  if (rank_ != root) {
    EncodeLength(in.size(), header);
    TcpStream& s = AddStream(root, true, {reinterpret_cast<char*>(header), 8, false});
    s.pieces.push_back({const_cast<char*>(in.data()), in.size(), false});
    return Run(nullptr, what);
  }
  // assign() keeps the strings' capacity: a repeated gather of similar sizes allocates nothing.
  out->assign(size_, std::string());
  (*out)[root] = in;
  for (int j = 0; j < size_; ++j) {
    if (j == root) continue;
    AddStream(j, false).grow = &(*out)[j];
  }
  return Run(nullptr, what);
}

Status TcpAlgorithms::BroadcastBytes(std::string* data, int root, const TcpWhat& what) {
  uint8_t header[8];
  if (rank_ != root) {
    AddStream(root, false).grow = data;
    return Run(nullptr, what);
  }
  EncodeLength(data->size(), header);
  for (int j = 0; j < size_; ++j) {
    if (j == root) continue;
    TcpStream& s = AddStream(j, true, {reinterpret_cast<char*>(header), 8, false});
    s.pieces.push_back({data->data(), data->size(), false});
  }
  return Run(nullptr, what);
}

Status TcpAlgorithms::Barrier(const TcpWhat& what) {
  char* slots = Scratch(size_);
  char token = 'b';
  for (int j = 0; j < size_; ++j) {
    if (j == rank_) continue;
    AddStream(j, true, {&token, 1, false});
    AddStream(j, false, {slots + j, 1, false});
  }
  return Run(nullptr, what);
}

}  // namespace hvd::runtime
