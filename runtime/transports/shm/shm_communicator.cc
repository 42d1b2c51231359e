#include "runtime/transports/shm/shm_communicator.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "runtime/transports/host_layout.h"
#include "runtime/transports/posted_inputs.h"
#include "runtime/transports/reduction.h"
#include "runtime/transports/shm/shm_channel.h"
#include "runtime/transports/shm/shm_reductions.h"
#include "runtime/transports/shm/shm_segment.h"
#include "runtime/transports/shm/shm_single_copy.h"

namespace hvd::runtime {
namespace {

// A broadcast root's piece between Stream calls: small enough that a 64 KiB broadcast's reader
// starts after a sixteenth of it, large enough that the readers' polling is a small part.
constexpr size_t kBroadcastPiece = 16 * 1024;

size_t Min(size_t a, int64_t b) {
  return std::min(a, static_cast<size_t>(std::max<int64_t>(b, 0)));
}

// What ShmCommunicator::BitwiseAndPostingInput leaves readable (PostedInputs): each member's
// half of the held round holds its words, its input's length (one word) and its input.
class ShmPosted final : public PostedSource {
 public:
  ShmPosted(ShmChannel* ch, int64_t direct_bytes) : ch_(ch), direct_bytes_(direct_bytes) {}
  // The inputs follow `words` words in each member's half.
  void Open(size_t words) { offset_ = words * sizeof(uint64_t); }
  bool open() const override { return ch_->held(); }
  const char* block(int k) const override { return ch_->PeerHalf(k) + offset_; }
  // Past the direct size, reading all N inputs costs more than the round that exchanges slices
  // (the model in shm_reductions.h, with the reduce-scatter round saved on both sides).
  bool slices_allreduce(int64_t bytes) const override { return bytes > direct_bytes_; }
  Status AllreduceSliced(void* buffer, int64_t count, DataType dtype, ReduceOp op,
                         double scale) override {
    return ShmAllreducePostedSliced(*ch_, offset_ + sizeof(uint64_t), static_cast<char*>(buffer),
                                    count, dtype, op, scale);
  }
  void Abort() override { ch_->Abort(); }

 private:
  ShmChannel* const ch_;
  const int64_t direct_bytes_;
  size_t offset_ = 0;
};

// ShmCommunicator: see CreateShmCommunicator. Every collective is a sequence of ShmChannel
// rounds whose count depends only on arguments all members share (or on sizes exchanged in
// the first round), so every member counts rounds identically. A call with valid arguments
// makes no heap allocation (beyond growing the caller's output strings of the byte-string
// ops): per-member bookkeeping lives in vectors sized once here.
class ShmCommunicator final : public ScalingCommunicator {
 public:
  ShmCommunicator(std::unique_ptr<ShmChannel> channel, bool choose_single_copy,
                  bool single_copy_allreduce, int ranks_per_cpu, int64_t direct_bytes)
      : ch_(std::move(channel)),
        ranks_per_cpu_(ranks_per_cpu),
        direct_bytes_(direct_bytes),
        single_copy_bytes_(ch_->single_copy_bytes()),
        allreduce_single_copy_bytes_(single_copy_allreduce ? single_copy_bytes_ : 0),
        choose_(choose_single_copy && ch_->rank() == 0),
        rank_(ch_->rank()),
        size_(ch_->size()),
        half_(ch_->half_bytes()),
        lens_(size_),
        offsets_(size_),
        recv_offsets_(size_),
        theirs_(size_),
        posted_source_(ch_.get(), direct_bytes),
        posted_("SHM_EAGER", "shm", rank_, size_, &posted_source_) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* name() const override { return "SHM"; }

  Status GatherBytes(const std::string& in, int root, std::vector<std::string>* out) override;
  Status BroadcastBytes(std::string* data, int root) override;
  Status BitwiseAnd(std::vector<uint64_t>* bits) override;
  Status BitwiseOr(std::vector<uint64_t>* bits) override;
  // From 3 members: a round then waits for every member to arrive (with more ranks than CPUs,
  // to be scheduled), which posting saves; between 2 it is one cache line each way, and what
  // posting adds cost as much (2 ranks, 4 KiB, on against off: 2.4-2.9 against 2.8-3.3 us).
  bool posts_inputs() const override { return size_ > 2; }
  size_t max_posted_bytes(size_t words) const override {
    const size_t head = (words + 1) * sizeof(uint64_t);  // the words, then the input's length
    return half_ > head ? half_ - head : 0;
  }
  // A round saved is worth one scheduling turn per rank sharing a CPU: posted broadcasts at
  // 16 ranks on 2 vCPUs (2026-11-25, eager limit 32 KiB against 512 KiB, 2 passes) 64 KiB
  // 441-460 -> 266-336 us, 256 KiB 564-606 -> 407-468; 8 ranks 64 KiB 164-165 -> 108-129,
  // 256 KiB 185-205 -> 156-168; 4 ranks 64 KiB 37-47 -> 29-31 but 128 KiB level and 256 KiB
  // 62-65 -> 62-76; 3 ranks lost from 128 KiB (docs/eager.md, "Eager on shared memory").
  int posted_copy_factor() const override { return ranks_per_cpu_; }
  // Every op, since a member reads from the posted inputs only what the op's rounds would:
  // posted against the default limit (hvd-bench, interleaved, 2 vCPUs, 2026-11-26 12:20-12:35
  // UTC) allreduce 4 ranks 48 / 64 KiB 49-56 / 52-58 -> 36-40 / 45-47 us, 8 ranks 64 / 128 KiB
  // 215-248 / 233-302 -> 160-203 / 194-264, 16 ranks 64 / 128 KiB 617-630 / 665-693 -> 454-497
  // / 578-599 (256 KiB level); reducescatter 3 ranks 64 KiB 28-34 -> 19-24, 8 ranks 64 / 128
  // KiB 157-187 / 184-197 -> 103-152 / 164-173, 16 ranks 64 KiB 564-613 -> 343-391; alltoall
  // 4 ranks 64 KiB 41-52 -> 29-36, 8 ranks 128 KiB 184-230 -> 139-180; past the factor they
  // lose (3 ranks, allreduce 128 KiB 48-53 -> 64; docs/eager.md).
  bool posting_costs_a_copy() const override { return true; }
  Status BitwiseAndPostingInput(std::span<uint64_t> words, const void* input,
                                std::span<const int64_t> posted_bytes) override;
  Communicator* posted_inputs() override { return &posted_; }
  bool reduces_segments_in_rank_order(int64_t) const override { return true; }  // ShmReduceScatter
  Status Barrier() override;
  Status AllreduceScaled(void* buffer, int64_t count, DataType dtype, ReduceOp op,
                         double scale) override;
  bool allreduces_pieces() const override { return true; }
  Status AllreducePiecesScaled(std::span<const AllreducePiece> pieces, DataType dtype, ReduceOp op,
                               double scale) override;
  Status Allgatherv(const void* in, void* out, const std::vector<int64_t>& bytes_per_rank) override;
  Status Broadcast(void* buffer, int64_t bytes, int root) override;
  Status Alltoallv(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                   const std::vector<int64_t>& recv_bytes) override;
  // Without the size round: an even alltoall's sizes come from its response.
  Status AlltoallvAgreed(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                         const std::vector<int64_t>& recv_bytes, int64_t max_piece) override;
  // This member's slice is scaled as it is reduced (ShmReduceScatter).
  Status ReduceScatterScaled(const void* in, void* out, const std::vector<int64_t>& counts_per_rank,
                             DataType dtype, ReduceOp op, double scale) override;
  Status ReduceScatterPiecesScaled(std::span<const AllreducePiece> pieces, void* out,
                                   const std::vector<int64_t>& counts_per_rank, DataType dtype,
                                   ReduceOp op, double scale) override;
  Status AllgatherPieces(const void* in, std::span<const AllreducePiece> pieces,
                         const std::vector<int64_t>& counts_per_rank, DataType dtype) override;
  void Abort() override { ch_->Abort(); }
  Status CheckPeers() override { return ch_->CheckPeers(); }
  int lost_member() const override { return ch_->lost_member(); }
  int64_t single_copy_bytes() const { return single_copy_bytes_; }
  int64_t direct_bytes() const { return direct_bytes_; }
  // The reduce-scatter's balanced rounds (ShmReduceScatter) up to 2 ranks per CPU; with more, the
  // rounds of whole chunks, in which only the members reducing a chunk wait for the peers.
  // Measured against each other (hvd-bench --op reducescatter, the 2-vCPU VM, 2026-11-26,
  // interleaved): 2 ranks 1 / 16 / 64 MiB 77-79 / 1430-1850 / 6950-8300 us by chunks against
  // 45-47 / 980-1200 / 5420-6030 balanced; 4 ranks 4 / 16 / 64 MiB 1260-1310 / 5470-5960 /
  // 21400-22700 against 930-1120 / 4920-5340 / 18400-21700 (1 MiB level); 8 ranks mixed (16 MiB
  // balanced 9.5-13.8 against 11.6-15.1 ms, 256 KiB 278-290 against 200-352 us); 16 ranks 16 MiB
  // 28.8-32.3 against 38.8-46.5 ms, by chunks ahead.
  bool BalancedReduceScatter() const { return ranks_per_cpu_ <= 2; }

 private:
  // The shared checks (communicator.h); the message is built only when one fails.
  Status CheckRoot(int root) const {
    return CheckRootArg([this] { return ch_->What(); }, root, size_);
  }
  Status CheckPerRank(const std::vector<int64_t>& v) const {
    return CheckPerRankArg([this] { return ch_->What(); }, v, size_);
  }
  // A byte message's announced length over Communicator::kMaxByteMessage (memory corruption, or
  // a member of another build): refused before anything is allocated for it.
  Status TooLong(const char* op, int member, uint64_t bytes) const {
    return Status::RemoteError(ch_->What() + ": " + op + ": member " + std::to_string(member) +
                               " announced " + std::to_string(bytes) +
                               " bytes, more than a byte message may hold (1 GiB)");
  }
  Status CheckAllreduce(const void* buffer, int64_t count, ReduceOp op) const {
    return CheckAllreduceArgs([this] { return ch_->What(); }, buffer, count, op);
  }
  // The allreduce of `view`, scaled: single copy when it is large enough (and, with choose_,
  // member 0 picks it), else `staged()`, the allreduce through the halves.
  template <typename Staged>
  Status AllreduceView(const PieceView& view, DataType dtype, ReduceOp op, double scale,
                       Staged&& staged);
  // The choice both single-copy collectives make: from `threshold` bytes (0: never),
  // `single(want, &used)` runs the single-copy rounds, `want` false where this member may not
  // (`may`) or, with choose_, `chooser` picked the halves; `staged()` runs when no member used it.
  // With choose_, the way taken is timed for `chooser` (ops this member could not take directly
  // are not).
  template <typename Single, typename Staged>
  Status SingleOrStaged(int64_t bytes, int64_t threshold, bool may, ShmSingleCopyChooser& chooser,
                        Single&& single, Staged&& staged);
  // The checks both alltoalls start with (a call's sizes, the staging size).
  Status AlltoallStart(const std::vector<int64_t>& send_bytes,
                       const std::vector<int64_t>& recv_bytes);
  // Offsets and the data rounds of an alltoall once every member's largest piece is known.
  Status AlltoallData(const char* in, const std::vector<int64_t>& send_bytes, char* out,
                      const std::vector<int64_t>& recv_bytes, int64_t max_piece);
  // The per-destination sub-slot of a half in an alltoall's data rounds; 0 when too small.
  size_t AlltoallSub() const;
  // The data rounds of an alltoall, after the size exchange (see Alltoallv), this member's own
  // piece included (`apart`: the output does not overlap the input, so it may go first).
  Status AlltoallPieces(const char* in, const std::vector<int64_t>& send_off,
                        const std::vector<int64_t>& send_bytes, char* out,
                        const std::vector<int64_t>& recv_off,
                        const std::vector<int64_t>& recv_bytes, size_t sub, int64_t rounds,
                        bool apart);
  template <typename Combine>
  Status Bitwise(const char* op, std::vector<uint64_t>* bits, Combine combine);
  // The rounds of an allgather of bytes_per_rank[k] bytes from each member k, this member's
  // from `in`: put(k, at, src, n) stores n bytes of member k's part, from byte `at` of it
  // (called for every member but this one; the caller places its own part).
  template <typename Put>
  Status AllgatherRounds(const char* in, const std::vector<int64_t>& bytes_per_rank, Put&& put);

  std::unique_ptr<ShmChannel> ch_;
  const int ranks_per_cpu_;          // RanksPerCpu of the machine's ranks, agreed by every member
  const int64_t direct_bytes_;       // one-round allreduces up to this size, agreed likewise
  const int64_t single_copy_bytes_;  // the alltoall's; 0: never
  const int64_t allreduce_single_copy_bytes_;  // the allreduce's; 0: never
  const bool choose_;                      // member 0 of HVD_SHM_SINGLE_COPY=auto: times both ways
  ShmSingleCopyChooser chooser_;           // the allreduce's
  ShmSingleCopyChooser alltoall_chooser_;  // the alltoall's
  const int rank_;
  const int size_;
  const size_t half_;
  std::vector<char> scratch_;     // reduce-scatter input copy when in/out overlap; grown only
  std::vector<char> rs_scratch_;  // reduce-scatter: an own part spanning pieces; grown only
  // AllreducePieces: the pieces' first elements (grown only) and a reduced slice.
  std::vector<int64_t> starts_;
  std::vector<char> slice_;
  ShmSingleCopyScratch single_copy_;
  // Per-member scratch of one call, size_ entries each.
  std::vector<uint64_t> lens_;         // GatherBytes: each member's length
  std::vector<int64_t> offsets_;       // Allgatherv: output offsets; Alltoallv: send offsets
  std::vector<int64_t> recv_offsets_;  // Alltoallv
  std::vector<int64_t> theirs_;        // Alltoallv: one peer's send sizes
  ShmPosted posted_source_;            // BitwiseAndPostingInput's held round
  PostedInputs posted_;                // and the collectives computed from it
};

Status ShmCommunicator::GatherBytes(const std::string& in, int root,
                                    std::vector<std::string>* out) {
  HVD_RETURN_IF_ERROR(ch_->Start("gather"));
  HVD_RETURN_IF_ERROR(CheckRoot(root));
  const bool is_root = rank_ == root;
  std::vector<uint64_t>& lens = lens_;
  uint64_t max_len = 0, offset = 0;
  for (bool first = true; first || offset < max_len; first = false) {
    const size_t header = first ? sizeof(uint64_t) : 0;
    char* mine = nullptr;
    HVD_RETURN_IF_ERROR(ch_->Begin(true, &mine));
    const uint64_t len = in.size();
    if (first) std::memcpy(mine, &len, sizeof(len));
    const size_t room = half_ - header;
    if (offset < len) std::memcpy(mine + header, in.data() + offset, Min(room, len - offset));
    ch_->Publish();
    if (first || is_root) HVD_RETURN_IF_ERROR(ch_->WaitAllPosted());
    if (first) {
      for (int k = 0; k < size_; ++k) {
        std::memcpy(&lens[k], ch_->PeerHalf(k), sizeof(uint64_t));
        if (lens[k] > kMaxByteMessage) return TooLong("gather", k, lens[k]);
        max_len = std::max(max_len, lens[k]);
      }
      if (is_root) {
        // Every byte is overwritten below: reuse the caller's strings and their capacity.
        out->resize(size_);
        for (int k = 0; k < size_; ++k) (*out)[k].resize(lens[k]);
      }
    }
    for (int k = 0; is_root && k < size_; ++k) {
      if (offset < lens[k]) {
        std::memcpy(&(*out)[k][offset], ch_->PeerHalf(k) + header, Min(room, lens[k] - offset));
      }
    }
    ch_->End();
    offset += room;
  }
  return Status::OK();
}

Status ShmCommunicator::BroadcastBytes(std::string* data, int root) {
  HVD_RETURN_IF_ERROR(ch_->Start("broadcast"));
  HVD_RETURN_IF_ERROR(CheckRoot(root));
  const bool is_root = rank_ == root;
  uint64_t len = is_root ? data->size() : 0, offset = 0;
  for (bool first = true; first || offset < len; first = false) {
    const size_t header = first ? sizeof(uint64_t) : 0;
    const size_t room = half_ - header;
    char* mine = nullptr;
    HVD_RETURN_IF_ERROR(ch_->Begin(is_root, &mine));
    if (is_root) {
      if (first) std::memcpy(mine, &len, sizeof(len));
      if (offset < len) std::memcpy(mine + header, data->data() + offset, Min(room, len - offset));
    }
    ch_->Publish();
    if (!is_root) {
      HVD_RETURN_IF_ERROR(ch_->WaitPosted(root));
      const char* src = ch_->PeerHalf(root);
      if (first) {
        std::memcpy(&len, src, sizeof(len));
        if (len > kMaxByteMessage) return TooLong("broadcast", root, len);
        data->resize(len);
      }
      if (offset < len) std::memcpy(&(*data)[offset], src + header, Min(room, len - offset));
    }
    ch_->End();
    offset += room;
  }
  return Status::OK();
}

template <typename Combine>
Status ShmCommunicator::Bitwise(const char* op, std::vector<uint64_t>* bits, Combine combine) {
  HVD_RETURN_IF_ERROR(ch_->Start(op));
  const size_t words_per_round = half_ / sizeof(uint64_t);
  for (size_t lo = 0; lo < bits->size(); lo += words_per_round) {
    const size_t n = std::min(words_per_round, bits->size() - lo);
    uint64_t* mine_words = bits->data() + lo;
    char* mine = nullptr;
    HVD_RETURN_IF_ERROR(ch_->Begin(true, &mine));
    std::memcpy(mine, mine_words, n * sizeof(uint64_t));
    ch_->Publish();
    for (int k = 0; k < size_; ++k) {
      if (k == rank_) continue;
      HVD_RETURN_IF_ERROR(ch_->WaitPosted(k));
      const auto* peer = reinterpret_cast<const uint64_t*>(ch_->PeerHalf(k));
      for (size_t i = 0; i < n; ++i) mine_words[i] = combine(mine_words[i], peer[i]);
    }
    ch_->End();
  }
  return Status::OK();
}

Status ShmCommunicator::BitwiseAnd(std::vector<uint64_t>* bits) {
  return Bitwise("bitwise and", bits, [](uint64_t a, uint64_t b) { return a & b; });
}

Status ShmCommunicator::BitwiseOr(std::vector<uint64_t>* bits) {
  return Bitwise("bitwise or", bits, [](uint64_t a, uint64_t b) { return a | b; });
}

Status ShmCommunicator::BitwiseAndPostingInput(std::span<uint64_t> words, const void* input,
                                               std::span<const int64_t> posted_bytes) {
  HVD_RETURN_IF_ERROR(ch_->Start("bitwise and posting an input"));
  HVD_RETURN_IF_ERROR(CheckPostingArgs([&] { return ch_->What(); }, posted_bytes, size_,
                                       max_posted_bytes(words.size())));
  char* mine = nullptr;
  HVD_RETURN_IF_ERROR(ch_->Begin(true, &mine));
  const size_t word_bytes = words.size() * sizeof(uint64_t);
  const uint64_t length = input != nullptr ? static_cast<uint64_t>(posted_bytes[rank_]) : 0;
  std::memcpy(mine, words.data(), word_bytes);
  std::memcpy(mine + word_bytes, &length, sizeof(length));
  if (length > 0) std::memcpy(mine + word_bytes + sizeof(length), input, length);
  ch_->Publish();
  for (int k = 0; k < size_; ++k) {
    if (k == rank_) continue;
    HVD_RETURN_IF_ERROR(ch_->WaitPosted(k));
    const auto* peer = reinterpret_cast<const uint64_t*>(ch_->PeerHalf(k));
    for (size_t i = 0; i < words.size(); ++i) words[i] &= peer[i];
  }
  posted_source_.Open(words.size());
  ch_->Hold();  // ended by the next call's Start
  return Status::OK();
}

Status ShmCommunicator::Barrier() {
  HVD_RETURN_IF_ERROR(ch_->Start("barrier"));
  HVD_RETURN_IF_ERROR(ch_->Begin(false));
  ch_->Publish();
  HVD_RETURN_IF_ERROR(ch_->WaitAllPosted());
  ch_->End();
  return Status::OK();
}

template <typename Staged>
Status ShmCommunicator::AllreduceView(const PieceView& view, DataType dtype, ReduceOp op,
                                      double scale, Staged&& staged) {
  const int64_t bytes = view.count() * static_cast<int64_t>(DataTypeSize(dtype));
  return SingleOrStaged(
      bytes, allreduce_single_copy_bytes_, /*may=*/true, chooser_,
      [&](bool want, bool* used) {
        return ShmAllreduceSingleCopy(*ch_, view, dtype, op, scale, want, &single_copy_, used);
      },
      staged);
}

template <typename Single, typename Staged>
Status ShmCommunicator::SingleOrStaged(int64_t bytes, int64_t threshold, bool may,
                                       ShmSingleCopyChooser& chooser, Single&& single,
                                       Staged&& staged) {
  if (threshold == 0 || bytes < threshold) return staged();
  using Clock = std::chrono::steady_clock;
  const bool want = may && (!choose_ || chooser.Prefer(bytes));
  const auto t0 = choose_ ? Clock::now() : Clock::time_point();
  bool used = false;
  HVD_RETURN_IF_ERROR(single(want, &used));
  if (!used) HVD_RETURN_IF_ERROR(staged());
  if (choose_ && may) chooser.Record(bytes, used, Clock::now() - t0);
  return Status::OK();
}

Status ShmCommunicator::AllreduceScaled(void* buffer, int64_t count, DataType dtype, ReduceOp op,
                                        double scale) {
  HVD_RETURN_IF_ERROR(ch_->Start("allreduce", dtype, op, count));
  HVD_RETURN_IF_ERROR(CheckAllreduce(buffer, count, op));
  if (count == 0) return Status::OK();
  if (size_ == 1) {
    ScaleBuffer(buffer, count, dtype, scale);
    return Status::OK();
  }
  const AllreducePiece whole{buffer, buffer, count};
  const int64_t starts[] = {0, count};
  const PieceView view(std::span(&whole, 1), starts, static_cast<int64_t>(DataTypeSize(dtype)));
  return AllreduceView(view, dtype, op, scale, [&] {
    return ShmAllreduce(*ch_, static_cast<char*>(buffer), count, dtype, op, direct_bytes_, scale);
  });
}

Status ShmCommunicator::AllreducePiecesScaled(std::span<const AllreducePiece> pieces,
                                              DataType dtype, ReduceOp op, double scale) {
  const bool ok = PieceView::Index(pieces, &starts_);
  const int64_t count = starts_.back();
  HVD_RETURN_IF_ERROR(ch_->Start("allreduce", dtype, op, count));
  HVD_RETURN_IF_ERROR(
      CheckAllreducePiecesArgs([this] { return ch_->What(); }, pieces, ok, count, op));
  const PieceView view(pieces, starts_, static_cast<int64_t>(DataTypeSize(dtype)));
  if (count == 0) return Status::OK();
  return AllreduceView(view, dtype, op, scale, [&] {
    if (slice_.empty()) slice_.resize(ShmPiecesScratchBytes(*ch_));
    return ShmAllreducePieces(*ch_, view, dtype, op, direct_bytes_, scale, slice_.data());
  });
}

template <typename Put>
Status ShmCommunicator::AllgatherRounds(const char* in, const std::vector<int64_t>& bytes_per_rank,
                                        Put&& put) {
  int64_t max_bytes = 0;
  for (int64_t b : bytes_per_rank) max_bytes = std::max(max_bytes, b);
  const int64_t step = static_cast<int64_t>(half_);
  for (int64_t at = 0; at < max_bytes; at += step) {
    char* mine = nullptr;
    HVD_RETURN_IF_ERROR(ch_->Begin(true, &mine));
    if (at < bytes_per_rank[rank_])
      std::memcpy(mine, in + at, Min(half_, bytes_per_rank[rank_] - at));
    ch_->Publish();
    for (int k = 0; k < size_; ++k) {
      if (k == rank_ || at >= bytes_per_rank[k]) continue;
      HVD_RETURN_IF_ERROR(ch_->WaitPosted(k));
      put(k, at, ch_->PeerHalf(k), Min(half_, bytes_per_rank[k] - at));
    }
    ch_->End();
  }
  return Status::OK();
}

Status ShmCommunicator::Allgatherv(const void* in, void* out,
                                   const std::vector<int64_t>& bytes_per_rank) {
  HVD_RETURN_IF_ERROR(ch_->Start("allgather"));
  HVD_RETURN_IF_ERROR(CheckPerRank(bytes_per_rank));
  std::vector<int64_t>& offset = offsets_;
  for (int k = 0; k < size_; ++k) offset[k] = k == 0 ? 0 : offset[k - 1] + bytes_per_rank[k - 1];
  const auto* src = static_cast<const char*>(in);
  char* dst = static_cast<char*>(out);
  HVD_RETURN_IF_ERROR(
      AllgatherRounds(src, bytes_per_rank, [&](int k, int64_t at, const char* from, size_t n) {
        std::memcpy(dst + offset[k] + at, from, n);
      }));
  if (bytes_per_rank[rank_] > 0 && dst + offset[rank_] != src) {
    std::memmove(dst + offset[rank_], src, static_cast<size_t>(bytes_per_rank[rank_]));
  }
  return Status::OK();
}

Status ShmCommunicator::AllgatherPieces(const void* in, std::span<const AllreducePiece> pieces,
                                        const std::vector<int64_t>& counts_per_rank,
                                        DataType dtype) {
  HVD_RETURN_IF_ERROR(ch_->Start("allgather"));
  HVD_RETURN_IF_ERROR(CheckPerRank(counts_per_rank));
  HVD_RETURN_IF_ERROR(
      IndexPiecesForCounts([this] { return ch_->What(); }, pieces, counts_per_rank, &starts_));
  const int64_t elem = static_cast<int64_t>(DataTypeSize(dtype));
  const PieceView view(pieces, starts_, elem);
  std::vector<int64_t>& first = offsets_;       // each member's first element
  std::vector<int64_t>& bytes = recv_offsets_;  // each member's part, bytes
  for (int k = 0; k < size_; ++k) {
    first[k] = k == 0 ? 0 : first[k - 1] + counts_per_rank[k - 1];
    bytes[k] = counts_per_rank[k] * elem;
  }
  const auto* src = static_cast<const char*>(in);
  HVD_RETURN_IF_ERROR(
      AllgatherRounds(src, bytes, [&](int k, int64_t at, const char* from, size_t n) {
        view.Scatter(first[k] + at / elem, static_cast<int64_t>(n) / elem, from);
      }));
  view.Scatter(first[rank_], counts_per_rank[rank_], src);
  return Status::OK();
}

Status ShmCommunicator::Broadcast(void* buffer, int64_t bytes, int root) {
  HVD_RETURN_IF_ERROR(ch_->Start("broadcast"));
  HVD_RETURN_IF_ERROR(CheckRoot(root));
  if (bytes < 0) return Status::InvalidArgument(ch_->What() + ": negative size");
  char* buf = static_cast<char*>(buffer);
  const bool is_root = rank_ == root;
  for (int64_t at = 0; at < bytes; at += static_cast<int64_t>(half_)) {
    const size_t n = Min(half_, bytes - at);
    char* mine = nullptr;
    HVD_RETURN_IF_ERROR(ch_->Begin(is_root, &mine));
    if (is_root) {
      // In pieces the readers follow (ShmChannel::Stream): a round's two copies, the root's
      // into its half and each reader's out of it, overlap instead of taking turns.
      for (size_t done = 0; done < n;) {
        const size_t piece = std::min(kBroadcastPiece, n - done);
        std::memcpy(mine + done, buf + at + done, piece);
        done += piece;
        if (done < n) ch_->Stream(done);
      }
    }
    ch_->Publish();
    if (!is_root) HVD_RETURN_IF_ERROR(ch_->ReadStreamed(root, buf + at, n));
    ch_->End();
  }
  return Status::OK();
}

Status ShmCommunicator::ReduceScatterScaled(const void* in, void* out,
                                            const std::vector<int64_t>& counts_per_rank,
                                            DataType dtype, ReduceOp op, double scale) {
  HVD_RETURN_IF_ERROR(ch_->Start("reducescatter", dtype, op));
  HVD_RETURN_IF_ERROR(CheckPerRank(counts_per_rank));
  if (op == ReduceOp::kAdasum) {
    return Status::Unimplemented(ch_->What() + ": Adasum is not elementwise");
  }
  const size_t elem = DataTypeSize(dtype);
  int64_t total = 0;
  for (int64_t c : counts_per_rank) total += c;
  const auto* src = static_cast<const char*>(in);
  char* dst = static_cast<char*>(out);
  const size_t in_bytes = static_cast<size_t>(total) * elem;
  if (dst < src + in_bytes && src < dst + counts_per_rank[rank_] * static_cast<int64_t>(elem)) {
    if (scratch_.size() < in_bytes) scratch_.resize(in_bytes);
    std::memcpy(scratch_.data(), src, in_bytes);
    src = scratch_.data();
  }
  const AllreducePiece whole{src, nullptr, total};
  const int64_t starts[] = {0, total};
  const PieceView view(std::span(&whole, 1), starts, static_cast<int64_t>(elem));
  return ShmReduceScatter(*ch_, view, dst, counts_per_rank, dtype, op, scale,
                          BalancedReduceScatter(), &rs_scratch_);
}

Status ShmCommunicator::ReduceScatterPiecesScaled(std::span<const AllreducePiece> pieces, void* out,
                                                  const std::vector<int64_t>& counts_per_rank,
                                                  DataType dtype, ReduceOp op, double scale) {
  HVD_RETURN_IF_ERROR(ch_->Start("reducescatter", dtype, op));
  HVD_RETURN_IF_ERROR(CheckPerRank(counts_per_rank));
  HVD_RETURN_IF_ERROR(
      IndexPiecesForCounts([this] { return ch_->What(); }, pieces, counts_per_rank, &starts_));
  if (op == ReduceOp::kAdasum) {
    return Status::Unimplemented(ch_->What() + ": Adasum is not elementwise");
  }
  const PieceView view(pieces, starts_, static_cast<int64_t>(DataTypeSize(dtype)));
  return ShmReduceScatter(*ch_, view, static_cast<char*>(out), counts_per_rank, dtype, op, scale,
                          BalancedReduceScatter(), &rs_scratch_);
}

size_t ShmCommunicator::AlltoallSub() const {
  // (0 where the size round's table does not fit a half.)
  if (sizeof(int64_t) * static_cast<size_t>(size_) > half_) return 0;
  return ShmSubSlotBytes(*ch_);
}

Status ShmCommunicator::AlltoallStart(const std::vector<int64_t>& send_bytes,
                                      const std::vector<int64_t>& recv_bytes) {
  HVD_RETURN_IF_ERROR(ch_->Start("alltoall"));
  HVD_RETURN_IF_ERROR(CheckPerRank(send_bytes));
  HVD_RETURN_IF_ERROR(CheckPerRank(recv_bytes));
  if (send_bytes[rank_] != recv_bytes[rank_]) {
    return Status::InvalidArgument(ch_->What() + ": sends " + std::to_string(send_bytes[rank_]) +
                                   " bytes to itself but expects " +
                                   std::to_string(recv_bytes[rank_]));
  }
  if (AlltoallSub() == 0) {
    return Status::InvalidArgument(ch_->What() + ": HVD_SHM_BUFFER_BYTES too small");
  }
  return Status::OK();
}

Status ShmCommunicator::Alltoallv(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                                  const std::vector<int64_t>& recv_bytes) {
  HVD_RETURN_IF_ERROR(AlltoallStart(send_bytes, recv_bytes));
  // A size round first: every member's send sizes, checked against what each expects (a
  // mismatch fails the call on every member, naming both numbers) and giving the largest piece.
  char* mine = nullptr;
  HVD_RETURN_IF_ERROR(ch_->Begin(true, &mine));
  std::memcpy(mine, send_bytes.data(), sizeof(int64_t) * static_cast<size_t>(size_));
  ch_->Publish();
  HVD_RETURN_IF_ERROR(ch_->WaitAllPosted());
  int64_t max_piece = 0;
  for (int k = 0; k < size_; ++k) {
    std::vector<int64_t>& theirs = theirs_;
    std::memcpy(theirs.data(), ch_->PeerHalf(k), sizeof(int64_t) * static_cast<size_t>(size_));
    for (int64_t b : theirs) max_piece = std::max(max_piece, b);
    if (theirs[rank_] != recv_bytes[k]) {
      return ch_->Fail(Status::InvalidArgument(
          ch_->What() + ": rank " + std::to_string(k) + " sends " + std::to_string(theirs[rank_]) +
          " bytes here but " + std::to_string(recv_bytes[k]) + " are expected"));
    }
  }
  ch_->End();
  return AlltoallData(static_cast<const char*>(in), send_bytes, static_cast<char*>(out), recv_bytes,
                      max_piece);
}

Status ShmCommunicator::AlltoallvAgreed(const void* in, const std::vector<int64_t>& send_bytes,
                                        void* out, const std::vector<int64_t>& recv_bytes,
                                        int64_t max_piece) {
  HVD_RETURN_IF_ERROR(AlltoallStart(send_bytes, recv_bytes));
  if (max_piece < 0) {
    return Status::InvalidArgument(ch_->What() + ": negative largest piece " +
                                   std::to_string(max_piece));
  }
  return AlltoallData(static_cast<const char*>(in), send_bytes, static_cast<char*>(out), recv_bytes,
                      max_piece);
}

Status ShmCommunicator::AlltoallData(const char* src, const std::vector<int64_t>& send_bytes,
                                     char* dst, const std::vector<int64_t>& recv_bytes,
                                     int64_t max_piece) {
  std::vector<int64_t>& send_off = offsets_;
  std::vector<int64_t>& recv_off = recv_offsets_;
  send_off[0] = recv_off[0] = 0;
  for (int k = 1; k < size_; ++k) {
    send_off[k] = send_off[k - 1] + send_bytes[k - 1];
    recv_off[k] = recv_off[k - 1] + recv_bytes[k - 1];
  }
  const int64_t in_bytes = send_off[size_ - 1] + send_bytes[size_ - 1];
  const int64_t out_bytes = recv_off[size_ - 1] + recv_bytes[size_ - 1];
  const auto in_at = reinterpret_cast<uintptr_t>(src);
  const auto out_at = reinterpret_cast<uintptr_t>(dst);
  const bool apart = in_at + static_cast<uintptr_t>(in_bytes) <= out_at ||
                     out_at + static_cast<uintptr_t>(out_bytes) <= in_at;
  auto staged = [&] {
    // Each round carries one sub-slot per other member in every half.
    const size_t sub = AlltoallSub();
    const int64_t rounds = (max_piece + static_cast<int64_t>(sub) - 1) / static_cast<int64_t>(sub);
    return AlltoallPieces(src, send_off, send_bytes, dst, recv_off, recv_bytes, sub, rounds, apart);
  };
  // Single copy from single_copy_bytes_ of the largest piece times the members (the same on
  // every member: max_piece is), and only where the output does not overlap the input, which
  // the peers read while this member writes.
  // Both ways copy this member's own piece themselves, where it fills a wait for the peers.
  return SingleOrStaged(
      max_piece * size_, single_copy_bytes_, apart, alltoall_chooser_,
      [&](bool want, bool* used) {
        return ShmAlltoallSingleCopy(*ch_, src, send_off, dst, recv_off, recv_bytes, want,
                                     &single_copy_, used);
      },
      staged);
}

Status ShmCommunicator::AlltoallPieces(const char* in, const std::vector<int64_t>& send_off,
                                       const std::vector<int64_t>& send_bytes, char* out,
                                       const std::vector<int64_t>& recv_off,
                                       const std::vector<int64_t>& recv_bytes, size_t sub,
                                       int64_t rounds, bool apart) {
  auto self = [&] {
    if (send_bytes[rank_] > 0) {
      std::memmove(out + recv_off[rank_], in + send_off[rank_],
                   static_cast<size_t>(send_bytes[rank_]));
    }
  };
  for (int64_t t = 0; t < rounds; ++t) {
    const int64_t at = t * static_cast<int64_t>(sub);
    char* mine = nullptr;
    HVD_RETURN_IF_ERROR(ch_->Begin(true, &mine));
    for (int j = 0; j < size_; ++j) {
      if (j != rank_ && at < send_bytes[j]) {
        std::memcpy(mine + ShmSubSlot(j, rank_) * sub, in + send_off[j] + at,
                    Min(sub, send_bytes[j] - at));
      }
    }
    ch_->Publish();
    // This member's own piece never goes through the halves. With the output apart from the
    // input it is copied once the first round is posted, while the peers still write theirs,
    // so it fills the first wait; else after the last round, when no input is still needed.
    if (t == 0 && apart) self();
    for (int k = 0; k < size_; ++k) {
      if (k == rank_ || at >= recv_bytes[k]) continue;
      HVD_RETURN_IF_ERROR(ch_->WaitPosted(k));
      std::memcpy(out + recv_off[k] + at, ch_->PeerHalf(k) + ShmSubSlot(rank_, k) * sub,
                  Min(sub, recv_bytes[k] - at));
    }
    ch_->End();
  }
  if (rounds == 0 || !apart) self();
  return Status::OK();
}

}  // namespace

int64_t ShmSingleCopyBytes(const Communicator& comm) {
  const auto* shm = dynamic_cast<const ShmCommunicator*>(&comm);
  return shm == nullptr ? 0 : shm->single_copy_bytes();
}

int64_t ShmGroupDirectBytes(const Communicator& comm) {
  const auto* shm = dynamic_cast<const ShmCommunicator*>(&comm);
  return shm == nullptr ? 0 : shm->direct_bytes();
}

bool ShmBalancedReduceScatter(const Communicator& comm) {
  const auto* shm = dynamic_cast<const ShmCommunicator*>(&comm);
  return shm != nullptr && shm->BalancedReduceScatter();
}

Result<std::unique_ptr<Communicator>> CreateShmCommunicator(const ShmOptions& options) {
  if (options.size < 1 || options.rank < 0 || options.rank >= options.size) {
    return Status::InvalidArgument("shm: rank " + std::to_string(options.rank) + " / size " +
                                   std::to_string(options.size) + " is not a valid group position");
  }
  ShmSegment::Options seg;
  seg.kv = options.kv;
  seg.scope = options.scope;
  seg.job_id = options.job_id;
  seg.rank = options.rank;
  seg.size = options.size;
  seg.half_bytes = std::max<size_t>(4096, options.buffer_bytes / 2 / 4096 * 4096);
  seg.timeout = options.timeout;
  seg.named = options.named;
  HVD_ASSIGN_OR_RETURN(auto segment, ShmSegment::Open(seg));
  // The busy ranks on this machine: this group's, or more where other groups share it.
  const int busy = std::max(options.size, options.ranks_on_machine);
  auto channel = std::make_unique<ShmChannel>(std::move(segment), options.rank, options.timeout,
                                              !CpuPerRank(busy));
  channel->set_before_peer_reads(options.before_peer_reads);
  int64_t ranks_per_cpu = RanksPerCpu(busy);
  int64_t direct = kShmDirectBytes;
  int64_t single_copy_allreduce = options.single_copy_allreduce ? 1 : 0;
  if (options.size > 1) {
    HVD_RETURN_IF_ERROR(channel->ProbeSingleCopy(options.single_copy_bytes));
    // Each member decides from the CPUs it sees; one that saw others (a container's own CPU
    // set, a custom launcher's local size) would post the single-copy round where the others
    // post staged data: agreed, as the other settings.
    HVD_ASSIGN_OR_RETURN(single_copy_allreduce, channel->AgreeMin(single_copy_allreduce));
    HVD_ASSIGN_OR_RETURN(ranks_per_cpu, channel->AgreeMin(ranks_per_cpu));
    // A member's own setting, or the rule on the agreed ranks per CPU; then the smallest, so
    // every member takes the same rounds even where the members' settings differ.
    direct = options.direct_bytes >= 0
                 ? std::min(options.direct_bytes, kShmDirectBytes)
                 : ShmDirectBytes(options.size, static_cast<int>(ranks_per_cpu));
    HVD_ASSIGN_OR_RETURN(direct, channel->AgreeMin(direct));
  }
  return std::unique_ptr<Communicator>(
      new ShmCommunicator(std::move(channel), options.choose_single_copy,
                          single_copy_allreduce != 0, static_cast<int>(ranks_per_cpu), direct));
}

}  // namespace hvd::runtime
