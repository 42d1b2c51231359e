#include "runtime/transports/gloo/gloo_collectives.h"

#include <gloo/common/error.h>

#include <algorithm>
#include <cstring>

namespace hvd::runtime {
namespace {

// Longest control string a peer may announce; anything larger is a corrupt stream.
constexpr uint64_t kMaxControlBytes = uint64_t{1} << 30;

void PrefixSums(const std::vector<int64_t>& sizes, std::vector<int64_t>* offsets) {
  offsets->resize(sizes.size());
  int64_t running = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    (*offsets)[i] = running;
    running += sizes[i];
  }
}

uint64_t ReadLength(const char* block) {
  uint64_t length = 0;
  std::memcpy(&length, block, sizeof(length));
  if (length > kMaxControlBytes) {
    throw gloo::IoException("corrupt control block: announced length " + std::to_string(length));
  }
  return length;
}

}  // namespace

GlooCollectives::GlooCollectives(GlooTransfers* transfers)
    : transfers_(transfers), rank_(transfers->rank()), size_(transfers->size()) {
  block_.resize(kBlockBytes);
  offsets_.reserve(size_);
  counts_.reserve(size_);
  slots_.reserve(size_);
}

char* GlooCollectives::Scratch(size_t bytes) {
  if (scratch_.size() < bytes) scratch_.resize(std::max(bytes, scratch_.size() * 3 / 2));
  return scratch_.data();
}

void GlooCollectives::Allgatherv(const void* in, void* out,
                                 const std::vector<int64_t>& bytes_per_rank) {
  transfers_->StartOp();
  const uint64_t tag = transfers_->NextTag();
  PrefixSums(bytes_per_rank, &offsets_);
  const size_t total = static_cast<size_t>(offsets_.back() + bytes_per_rank.back());
  const size_t mine = static_cast<size_t>(bytes_per_rank[rank_]);
  char* out_bytes = static_cast<char*>(out);
  int expected = 0;
  gloo::transport::UnboundBuffer* out_buf = total > 0 ? transfers_->Buffer(out, total) : nullptr;
  for (int k = 1; k < size_; ++k) {
    const int peer = (rank_ + size_ - k) % size_;
    if (bytes_per_rank[peer] == 0) continue;
    transfers_->Recv(out_buf, peer, tag, offsets_[peer], bytes_per_rank[peer]);
    ++expected;
  }
  if (mine > 0) {
    gloo::transport::UnboundBuffer* in_buf = transfers_->Buffer(in, mine);
    for (int k = 1; k < size_; ++k) transfers_->Send(in_buf, (rank_ + k) % size_, tag, 0, mine);
    if (in != out_bytes + offsets_[rank_]) std::memmove(out_bytes + offsets_[rank_], in, mine);
  }
  for (; expected > 0; --expected) transfers_->WaitRecv(out_buf);
  transfers_->WaitSends();
}

// Small broadcasts go down a binomial tree from the root, as gloo::broadcast (what Horovod's
// and torch's Gloo broadcasts call): ceil(log2 n) rounds, the root sending that many copies.
// Large ones go down a chain in rank order from the root, in pieces, each rank passing a piece
// on as soon as it has it: every rank sends the message at most once, so it takes about one
// message's transfer plus a piece per hop, where the tree's root sends log2 n whole copies one
// after another (before 2026-11-30 the root sent every other rank its copy: n - 1).
// A chain rank posts every piece's receive at once: when the op fails, the live rank before it
// may still be sending, and only GlooCommunicator's close of every pair on failure
// (DetachPostedTransfers) keeps those pieces out of the caller's buffer after it returns.
void GlooCollectives::Broadcast(void* buffer, size_t bytes, int root) {
  transfers_->StartOp();
  const uint64_t tag = transfers_->NextTag();
  if (bytes == 0 || size_ == 1) return;
  gloo::transport::UnboundBuffer* buf = transfers_->Buffer(buffer, bytes);
  const int vrank = (rank_ - root + size_) % size_;  // the root is 0
  const auto real = [&](int v) { return (v + root) % size_; };
  // The chain pays a piece per hop, the tree log2 n copies at the root: with at least n
  // pieces the chain is ahead for every n >= 3 (chain ~ (P + n - 2) pieces, tree ~ P log2 n).
  const size_t piece =
      std::max(kBroadcastPieceBytes, (bytes + kMaxBroadcastPieces - 1) / kMaxBroadcastPieces);
  const size_t pieces = (bytes + piece - 1) / piece;
  if (size_ >= 3 && pieces >= static_cast<size_t>(size_)) {
    const auto length = [&](size_t i) { return std::min(piece, bytes - i * piece); };
    const bool last = vrank == size_ - 1;
    if (vrank == 0) {
      for (size_t i = 0; i < pieces; ++i) transfers_->Send(buf, real(1), tag, i * piece, length(i));
    } else {
      // Receives from one peer on one buffer complete in the order they were posted.
      for (size_t i = 0; i < pieces; ++i) {
        transfers_->Recv(buf, real(vrank - 1), tag, i * piece, length(i));
      }
      for (size_t i = 0; i < pieces; ++i) {
        transfers_->WaitRecv(buf);
        if (!last) transfers_->Send(buf, real(vrank + 1), tag, i * piece, length(i));
      }
    }
    transfers_->WaitSends();
    return;
  }
  // Binomial tree: the parent clears vrank's lowest set bit; the children set a lower bit.
  int low = 1;
  while (low < size_ && (vrank & low) == 0) low <<= 1;
  if (vrank != 0) {
    transfers_->Recv(buf, real(vrank - low), tag, 0, bytes);
    transfers_->WaitRecv(buf);
  }
  for (int mask = low >> 1; mask > 0; mask >>= 1) {  // the largest subtree first
    if (vrank + mask < size_) transfers_->Send(buf, real(vrank + mask), tag, 0, bytes);
  }
  transfers_->WaitSends();
}

void GlooCollectives::Alltoallv(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                                const std::vector<int64_t>& recv_bytes) {
  transfers_->StartOp();
  const uint64_t tag = transfers_->NextTag();
  PrefixSums(send_bytes, &offsets_);  // send offsets
  PrefixSums(recv_bytes, &counts_);   // receive offsets
  const size_t send_total = static_cast<size_t>(offsets_.back() + send_bytes.back());
  const size_t recv_total = static_cast<size_t>(counts_.back() + recv_bytes.back());
  gloo::transport::UnboundBuffer* out_buf =
      recv_total > 0 ? transfers_->Buffer(out, recv_total) : nullptr;
  int expected = 0;
  for (int k = 1; k < size_; ++k) {
    const int peer = (rank_ + size_ - k) % size_;
    if (recv_bytes[peer] == 0) continue;
    transfers_->Recv(out_buf, peer, tag, counts_[peer], recv_bytes[peer]);
    ++expected;
  }
  if (send_total > 0) {
    gloo::transport::UnboundBuffer* in_buf = transfers_->Buffer(in, send_total);
    for (int k = 1; k < size_; ++k) {
      const int peer = (rank_ + k) % size_;
      if (send_bytes[peer] > 0)
        transfers_->Send(in_buf, peer, tag, offsets_[peer], send_bytes[peer]);
    }
  }
  const size_t self = static_cast<size_t>(std::min(send_bytes[rank_], recv_bytes[rank_]));
  if (self > 0) {
    std::memmove(static_cast<char*>(out) + counts_[rank_],
                 static_cast<const char*>(in) + offsets_[rank_], self);
  }
  for (; expected > 0; --expected) transfers_->WaitRecv(out_buf);
  transfers_->WaitSends();
}

void GlooCollectives::ReduceScatter(const void* in, void* out,
                                    const std::vector<int64_t>& counts_per_rank, size_t elem,
                                    ReduceFn reduce, const void* fn) {
  transfers_->StartOp();
  const uint64_t tag = transfers_->NextTag();
  PrefixSums(counts_per_rank, &offsets_);
  const size_t total = static_cast<size_t>(offsets_.back() + counts_per_rank.back()) * elem;
  const size_t count = static_cast<size_t>(counts_per_rank[rank_]);
  const size_t mine = count * elem;
  const char* in_bytes = static_cast<const char*>(in);
  // Slot k-1 of the scratch receives rank (rank - k)'s copy of this rank's slice.
  char* slots = mine > 0 ? Scratch((size_ - 1) * mine) : nullptr;
  slots_.clear();
  for (int k = 1; k < size_ && mine > 0; ++k) {
    slots_.push_back(transfers_->Buffer(slots + (k - 1) * mine, mine));
    transfers_->Recv(slots_.back(), (rank_ + size_ - k) % size_, tag, 0, mine);
  }
  if (total > 0) {
    gloo::transport::UnboundBuffer* in_buf = transfers_->Buffer(in, total);
    for (int k = 1; k < size_; ++k) {
      const int peer = (rank_ + k) % size_;
      if (counts_per_rank[peer] == 0) continue;
      transfers_->Send(in_buf, peer, tag, offsets_[peer] * elem, counts_per_rank[peer] * elem);
    }
  }
  if (mine == 0) {
    transfers_->WaitSends();
    return;
  }
  const char* own = in_bytes + offsets_[rank_] * elem;
  if (out != own) std::memmove(out, own, mine);
  // (The cache holds size() + 6 buffers: the size() - 1 slots and `in` stay in it.)
  for (int k = 1; k < size_; ++k) {
    transfers_->WaitRecv(slots_[k - 1]);
    reduce(fn, out, slots + (k - 1) * mine, count);
  }
  transfers_->WaitSends();
}

void GlooCollectives::GatherBytes(const std::string& in, int root, std::vector<std::string>* out) {
  transfers_->StartOp();
  const uint64_t tag = transfers_->NextTag();
  const uint64_t overflow_tag = transfers_->NextTag();
  // Slot k-1 of the root's scratch holds the block of rank root+k.
  char* blocks = nullptr;
  gloo::transport::UnboundBuffer* blocks_buf = nullptr;
  if (rank_ == root) {
    blocks = Scratch((size_ - 1) * kBlockBytes);
    blocks_buf = transfers_->Buffer(blocks, (size_ - 1) * kBlockBytes);
    for (int k = 1; k < size_; ++k) {
      transfers_->Recv(blocks_buf, (root + k) % size_, tag, (k - 1) * kBlockBytes, kBlockBytes);
    }
  }
  if (rank_ != root) {
    const uint64_t length = in.size();
    std::memcpy(block_.data(), &length, sizeof(length));
    std::memcpy(block_.data() + sizeof(length), in.data(), std::min<size_t>(length, kInlineBytes));
    transfers_->Send(transfers_->Buffer(block_.data(), kBlockBytes), root, tag, 0, kBlockBytes);
    if (length > kInlineBytes) {
      transfers_->Send(transfers_->Buffer(in.data(), length), root, overflow_tag, kInlineBytes,
                       length - kInlineBytes);
    }
    transfers_->WaitSends();
    return;
  }
  for (int k = 1; k < size_; ++k) transfers_->WaitRecv(blocks_buf);
  out->resize(size_);
  (*out)[root] = in;
  for (int k = 1; k < size_; ++k) {
    const char* block = blocks + (k - 1) * kBlockBytes;
    const uint64_t length = ReadLength(block);
    std::string& slot = (*out)[(root + k) % size_];
    slot.assign(block + sizeof(length), std::min<size_t>(length, kInlineBytes));
    if (length > kInlineBytes) {
      slot.resize(length);
      // Each overflow lands directly in its string; at most one buffer per peer is live, so
      // wait before the buffer cache could recycle it.
      gloo::transport::UnboundBuffer* buf = transfers_->Buffer(slot.data(), length);
      transfers_->Recv(buf, (root + k) % size_, overflow_tag, kInlineBytes, length - kInlineBytes);
      transfers_->WaitRecv(buf);
    }
  }
}

void GlooCollectives::BroadcastBytes(std::string* data, int root) {
  transfers_->StartOp();
  const uint64_t tag = transfers_->NextTag();
  const uint64_t overflow_tag = transfers_->NextTag();
  gloo::transport::UnboundBuffer* block_buf = transfers_->Buffer(block_.data(), kBlockBytes);
  if (rank_ != root) transfers_->Recv(block_buf, root, tag, 0, kBlockBytes);
  if (rank_ == root) {
    const uint64_t length = data->size();
    std::memcpy(block_.data(), &length, sizeof(length));
    std::memcpy(block_.data() + sizeof(length), data->data(),
                std::min<size_t>(length, kInlineBytes));
    for (int k = 1; k < size_; ++k) {
      transfers_->Send(block_buf, (root + k) % size_, tag, 0, kBlockBytes);
    }
    if (length > kInlineBytes) {
      gloo::transport::UnboundBuffer* buf = transfers_->Buffer(data->data(), length);
      for (int k = 1; k < size_; ++k) {
        transfers_->Send(buf, (root + k) % size_, overflow_tag, kInlineBytes,
                         length - kInlineBytes);
      }
    }
    transfers_->WaitSends();
    return;
  }
  transfers_->WaitRecv(block_buf);
  const uint64_t length = ReadLength(block_.data());
  data->assign(block_.data() + sizeof(length), std::min<size_t>(length, kInlineBytes));
  if (length > kInlineBytes) {
    data->resize(length);
    gloo::transport::UnboundBuffer* buf = transfers_->Buffer(data->data(), length);
    transfers_->Recv(buf, root, overflow_tag, kInlineBytes, length - kInlineBytes);
    transfers_->WaitRecv(buf);
  }
}

}  // namespace hvd::runtime
