#include "runtime/transports/hierarchical_communicator.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/transports/allreduce_pieces.h"

namespace hvd::runtime {
namespace {

// An allreduce (or the eager round's tail) on the two-step path sends the host's sum across
// hosts once per local rank: up to this many extra bytes per host it takes that path (one
// step fewer), beyond them each cross group carries its slice. Measured on the netns cluster
// (2 x 2, 2026-11-24): with the hosts' links at 1 Gbit/s the slices halve 8-64 KiB (8 KiB 141
// -> 72 us, 64 KiB 1.5 -> 0.6 ms); on the unlimited veths both paths are level within the
// noise up to 64 KiB, the two steps a few us ahead at 4-8 KiB.
constexpr int64_t kRedundantBytes = int64_t{8} << 10;

class HierarchicalCommunicator final : public ScalingCommunicator {
 public:
  HierarchicalCommunicator(std::unique_ptr<Communicator> flat, std::unique_ptr<Communicator> local,
                           std::unique_ptr<Communicator> cross, HierarchicalOps ops)
      : flat_(std::move(flat)),
        local_(std::move(local)),
        cross_(std::move(cross)),
        ops_(ops),
        counts_(local_->size()),
        bytes_(local_->size()),
        host_bytes_(cross_->size()),
        host_counts_(cross_->size()) {}

  int rank() const override { return flat_->rank(); }
  int size() const override { return flat_->size(); }
  const char* name() const override { return "HIER"; }

  Status GatherBytes(const std::string& in, int root, std::vector<std::string>* out) override {
    return Step(flat_->GatherBytes(in, root, out));
  }
  Status BroadcastBytes(std::string* data, int root) override {
    return Step(flat_->BroadcastBytes(data, root));
  }
  // The negotiation's rounds go through the hierarchy like a small allreduce: within the host
  // (shared memory), then every cross group over the host's result (same inputs everywhere,
  // so every member ends with the same bits). One TCP round between hosts per cycle instead of
  // log2(ranks) rounds over all ranks, of which the ones within a host went through loopback.
  Status BitwiseAnd(std::vector<uint64_t>* bits) override {
    HVD_RETURN_IF_ERROR(Step(local_->BitwiseAnd(bits)));
    return Step(cross_->BitwiseAnd(bits));
  }
  Status BitwiseOr(std::vector<uint64_t>* bits) override {
    HVD_RETURN_IF_ERROR(Step(local_->BitwiseOr(bits)));
    return Step(cross_->BitwiseOr(bits));
  }
  // Once every member has reached the host's barrier, every member of each cross group knows
  // that its whole host has; the cross barrier then tells every member that all hosts have.
  Status Barrier() override {
    HVD_RETURN_IF_ERROR(Step(local_->Barrier()));
    return Step(cross_->Barrier());
  }
  // The eager round: the host's AND and reduction (in one collective where the local transport
  // has one, else an AND and an allreduce, both on shared memory), then one round between
  // hosts carrying both; a tail past the two-step path's size is reduce-scattered within the
  // host instead, each cross group carries the AND words and its slice, and the slices go
  // round the host.
  bool ands_with_allreduce() const override { return cross_->ands_with_allreduce(); }
  // The ride's steps are the own allreduce's, its cross round the cross group's ride (over the
  // whole tensor, or over this member's slice: the largest slice decides, the same answer on
  // every member); without the hierarchy for allreduce, the own op is the flat group's.
  bool rides_allreduce_as_own(int64_t count, DataType dtype) const override {
    if (!ops_.allreduce) return false;
    const int64_t elem = static_cast<int64_t>(DataTypeSize(dtype));
    if (!Direct(count, elem)) {
      const int64_t slice = (count + local_->size() - 1) / local_->size();
      return cross_->rides_allreduce_as_own(slice, dtype);
    }
    return (!local_->ands_with_allreduce() || local_->rides_allreduce_as_own(count, dtype)) &&
           cross_->rides_allreduce_as_own(count, dtype);
  }
  Status BitwiseAndWithAllreduce(std::span<uint64_t> words, size_t and_words, int64_t count,
                                 DataType dtype, ReduceOp op) override;

  // Posting (controller.h, "Eager") is the flat group's: a lone small allgather, alltoall or
  // broadcast takes one exchange of the flat group (recursive doubling for a power-of-two
  // group) instead of the host's AND round, the hosts' and then its own rounds (a reducescatter
  // does not: reduces_segments_in_rank_order below).
  bool posts_inputs() const override { return flat_->posts_inputs(); }
  size_t max_posted_bytes(size_t words) const override { return flat_->max_posted_bytes(words); }
  int posted_copy_factor() const override { return flat_->posted_copy_factor(); }
  bool posting_costs_a_copy() const override { return flat_->posting_costs_a_copy(); }
  Result<int64_t> PostedSurplusLimit(int64_t surplus) override {
    return flat_->PostedSurplusLimit(surplus);
  }
  Status BitwiseAndPostingInput(std::span<uint64_t> words, const void* input,
                                std::span<const int64_t> posted_bytes) override {
    return Step(flat_->BitwiseAndPostingInput(words, input, posted_bytes));
  }
  // It does not post pieces (posts_pieces() false): an alltoall or reducescatter too large to
  // post whole takes the host's AND round and then its own hierarchical rounds. The flat
  // group's pieces (one direct exchange of the four ranks, a third of it through loopback TCP)
  // were no faster: 2 hosts x 2 ranks, 64 KiB, 5 interleaved runs, 2026-11-25 09:12 UTC,
  // alltoall 108-157 us (median 126) against 111-153 (114), reducescatter 98-158 (148)
  // against 98-159 (125).
  Communicator* posted_inputs() override { return flat_->posted_inputs(); }
  // A hierarchical reducescatter reduces within the host and then across hosts, not in rank
  // order as the flat group's posted inputs are, so a lone reducescatter takes its own rounds
  // (the same bits every step; before 2026-12-01 it rode the flat group's round, 72-84 against
  // 85-108 us for 4 KiB on 2 hosts x 2 ranks, and its bits depended on the path).
  bool reduces_segments_in_rank_order(int64_t segment_bytes) const override {
    return !ops_.allreduce && flat_->reduces_segments_in_rank_order(segment_bytes);
  }
  Hierarchy hierarchy() override {
    return ops_.allreduce ? Hierarchy{local_.get(), cross_.get()} : Hierarchy{};
  }

  // The scale goes with the last reduction, the cross groups' (of the slice each carries, so
  // the result takes no pass of its own where the cross transport folds it: hvd's TCP).
  Status AllreduceScaled(void* buffer, int64_t count, DataType dtype, ReduceOp op,
                         double scale) override;
  // A fused allreduce on the tensors themselves where the local transport reads and writes
  // pieces (shared memory): the host's reduce-scatter reads the inputs, the allgather writes
  // the outputs, with no copy into the fusion buffer and back (as flat shm and TCP do).
  bool allreduces_pieces() const override { return ops_.allreduce && local_->allreduces_pieces(); }
  Status AllreducePiecesScaled(std::span<const AllreducePiece> pieces, DataType dtype, ReduceOp op,
                               double scale) override;
  Status Allgatherv(const void* in, void* out, const std::vector<int64_t>& bytes_per_rank) override;
  // The flat group's where the allgather is not hierarchical; else the hierarchical gather
  // into a kept buffer and one copy into the pieces.
  Status AllgatherPieces(const void* in, std::span<const AllreducePiece> pieces,
                         const std::vector<int64_t>& counts_per_rank, DataType dtype) override {
    if (!ops_.allgather) {
      return Step(flat_->AllgatherPieces(in, pieces, counts_per_rank, dtype));
    }
    return AllgatherPiecesThroughBuffer(this, "hierarchical allgather into pieces", in, pieces,
                                        counts_per_rank, dtype, &gather_);
  }
  Status Broadcast(void* buffer, int64_t bytes, int root) override {
    return Step(flat_->Broadcast(buffer, bytes, root));
  }
  Status Alltoallv(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                   const std::vector<int64_t>& recv_bytes) override {
    return Step(flat_->Alltoallv(in, send_bytes, out, recv_bytes));
  }
  // The same with the input in pieces (a fused reducescatter's tensors), regrouped by local
  // rank as ReduceScatter's contiguous input is: read in place where the local transport
  // takes pieces.
  // Scaled by the cross groups' reduce-scatter, the last reduction.
  Status ReduceScatterScaled(const void* in, void* out, const std::vector<int64_t>& counts_per_rank,
                             DataType dtype, ReduceOp op, double scale) override;
  Status ReduceScatterPiecesScaled(std::span<const AllreducePiece> pieces, void* out,
                                   const std::vector<int64_t>& counts_per_rank, DataType dtype,
                                   ReduceOp op, double scale) override;
  void Abort() override {
    flat_->Abort();
    local_->Abort();
    cross_->Abort();
  }
  Status CheckPeers() override {
    HVD_RETURN_IF_ERROR(local_->CheckPeers());
    HVD_RETURN_IF_ERROR(cross_->CheckPeers());
    return flat_->CheckPeers();
  }
  // Host-major: local member i is this host's i-th rank, cross member h host h's rank with this
  // member's local rank.
  int lost_member() const override {
    const int per_host = local_->size();
    const int host_first = rank() / per_host * per_host;
    if (int lost = local_->lost_member(); lost >= 0) return host_first + lost;
    if (int lost = cross_->lost_member(); lost >= 0) return lost * per_host + rank() % per_host;
    return flat_->lost_member();
  }

 private:
  // True when `count` elements of `elem` bytes take the two-step path (see the header).
  bool Direct(int64_t count, int64_t elem) const {
    const int64_t l = local_->size();
    return count < l || count * elem * (l - 1) <= kRedundantBytes;
  }
  // counts_/bytes_: local rank i's slice of `count` elements.
  void Slice(int64_t count, int64_t elem) {
    const int l = local_->size();
    for (int i = 0; i < l; ++i) {
      counts_[i] = count / l + (i < count % l ? 1 : 0);
      bytes_[i] = counts_[i] * elem;
    }
  }

  // A sub-communicator call's status, after aborting all three groups when it failed in the
  // exchange: the members this one shares its other groups with may be waiting for it there
  // (the local group's next round, the cross group's), and an elastic worker stays alive after
  // the error, so their liveness checks would not fire before the timeout. Aborted, each fails
  // within milliseconds. The hierarchy is broken after such a failure, as its groups are. A
  // refused argument (the same on every member, nobody left waiting) is only returned.
  Status Step(Status st) {
    if (!st.ok() && st.code() != StatusCode::kInvalidArgument &&
        st.code() != StatusCode::kUnimplemented) {
      flat_->Abort();
      local_->Abort();
      cross_->Abort();
    }
    return st;
  }

  std::unique_ptr<Communicator> flat_;
  std::unique_ptr<Communicator> local_;
  std::unique_ptr<Communicator> cross_;
  const HierarchicalOps ops_;
  // Per-call scratch, sized once (steady state allocates nothing).
  std::vector<int64_t> counts_;            // elements of each local rank's slice
  std::vector<int64_t> bytes_;             // per local rank / per host, bytes
  std::vector<int64_t> host_bytes_;        // Allgatherv: each host's block
  std::vector<char> slice_;                // this member's slice; grown only
  std::vector<int64_t> host_counts_;       // ReduceScatter: this local rank's slice on each host
  std::vector<int64_t> offsets_;           // ReduceScatter: each rank's slice's offset, elements
  std::vector<AllreducePiece> regrouped_;  // ReduceScatter: the input's slices by local rank
  std::vector<int64_t> rs_starts_;         // ReduceScatterPieces: the pieces' first elements
  GatherScratch gather_;                   // AllgatherPieces (hierarchical allgather)
  std::vector<char> packed_;               // AllreducePieces: a small total, packed
  std::vector<uint64_t> and_words_;        // BitwiseAndWithAllreduce: AND words, slice; grown only
  std::vector<int64_t> starts_;            // AllreducePieces: the pieces' first elements
};

Status HierarchicalCommunicator::BitwiseAndWithAllreduce(std::span<uint64_t> words,
                                                         size_t and_words, int64_t count,
                                                         DataType dtype, ReduceOp op) {
  const auto name = [&] {
    return "hierarchical bitwise and with an " + AllreduceOpName(count, dtype, op);
  };
  HVD_RETURN_IF_ERROR(CheckAndWithAllreduceArgs(name, words, and_words, count, dtype, op));
  const int64_t elem = static_cast<int64_t>(DataTypeSize(dtype));
  const bool direct = Direct(count, elem);
  if (direct && local_->ands_with_allreduce()) {
    HVD_RETURN_IF_ERROR(Step(local_->BitwiseAndWithAllreduce(words, and_words, count, dtype, op)));
    return Step(cross_->BitwiseAndWithAllreduce(words, and_words, count, dtype, op));
  }
  const int me = local_->rank();
  if (!direct) Slice(count, elem);
  const size_t tail_words = direct ? 0 : (static_cast<size_t>(bytes_[me]) + 7) / 8;
  // The host's AND, in the scratch words the split path's cross round sends.
  and_words_.assign(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(and_words));
  HVD_RETURN_IF_ERROR(Step(local_->BitwiseAnd(&and_words_)));
  std::copy(and_words_.begin(), and_words_.end(), words.begin());
  void* tail = words.data() + and_words;
  if (direct) {
    if (count > 0) HVD_RETURN_IF_ERROR(Step(local_->Allreduce(tail, count, dtype, op)));
    return Step(cross_->BitwiseAndWithAllreduce(words, and_words, count, dtype, op));
  }
  // Each cross group ANDs the words and reduces its slice of the host's tail; the slices then
  // go round the host. Every member ends with the same bits: each slice is reduced by one
  // cross group, in the same order on every host.
  and_words_.resize(and_words + tail_words);
  HVD_RETURN_IF_ERROR(
      Step(local_->ReduceScatter(tail, and_words_.data() + and_words, counts_, dtype, op)));
  HVD_RETURN_IF_ERROR(
      Step(cross_->BitwiseAndWithAllreduce(and_words_, and_words, counts_[me], dtype, op)));
  std::copy(and_words_.begin(), and_words_.begin() + static_cast<std::ptrdiff_t>(and_words),
            words.begin());
  return Step(local_->Allgatherv(and_words_.data() + and_words, tail, bytes_));
}

Status HierarchicalCommunicator::AllreduceScaled(void* buffer, int64_t count, DataType dtype,
                                                 ReduceOp op, double scale) {
  if (!ops_.allreduce) return Step(flat_->AllreduceScaled(buffer, count, dtype, op, scale));
  HVD_RETURN_IF_ERROR(CheckAllreduceArgs(
      [&] { return "hierarchical " + AllreduceOpName(count, dtype, op); }, buffer, count, op));
  const int64_t elem = static_cast<int64_t>(DataTypeSize(dtype));
  if (Direct(count, elem)) {
    HVD_RETURN_IF_ERROR(Step(local_->Allreduce(buffer, count, dtype, op)));
    return Step(cross_->AllreduceScaled(buffer, count, dtype, op, scale));
  }
  Slice(count, elem);
  const int me = local_->rank();
  if (slice_.size() < static_cast<size_t>(bytes_[me])) slice_.resize(bytes_[me]);
  HVD_RETURN_IF_ERROR(Step(local_->ReduceScatter(buffer, slice_.data(), counts_, dtype, op)));
  HVD_RETURN_IF_ERROR(Step(cross_->AllreduceScaled(slice_.data(), counts_[me], dtype, op, scale)));
  return Step(local_->Allgatherv(slice_.data(), buffer, bytes_));
}

Status HierarchicalCommunicator::AllreducePiecesScaled(std::span<const AllreducePiece> pieces,
                                                       DataType dtype, ReduceOp op, double scale) {
  const bool counts_ok = PieceView::Index(pieces, &starts_);
  const int64_t count = starts_.back();
  const auto name = [&] { return "hierarchical " + AllreduceOpName(count, dtype, op); };
  HVD_RETURN_IF_ERROR(CheckAllreducePiecesArgs(name, pieces, counts_ok, count, op));
  if (count == 0) return Status::OK();
  const int64_t elem = static_cast<int64_t>(DataTypeSize(dtype));
  const PieceView view(pieces, starts_, elem);
  if (!ops_.allreduce || Direct(count, elem)) {
    // A few KiB at most (or the flat group's allreduce): packed, as the caller would.
    if (packed_.size() < static_cast<size_t>(count * elem)) packed_.resize(count * elem);
    view.Gather(0, count, packed_.data());
    HVD_RETURN_IF_ERROR(AllreduceScaled(packed_.data(), count, dtype, op, scale));
    view.Scatter(0, count, packed_.data());
    return Status::OK();
  }
  // The steps of Allreduce with the pieces as its buffer; the same slices, so the same bits.
  Slice(count, elem);
  const int me = local_->rank();
  if (slice_.size() < static_cast<size_t>(bytes_[me])) slice_.resize(bytes_[me]);
  HVD_RETURN_IF_ERROR(Step(local_->ReduceScatterPieces(pieces, slice_.data(), counts_, dtype, op)));
  HVD_RETURN_IF_ERROR(Step(cross_->AllreduceScaled(slice_.data(), counts_[me], dtype, op, scale)));
  return Step(local_->AllgatherPieces(slice_.data(), pieces, counts_, dtype));
}

Status HierarchicalCommunicator::ReduceScatterScaled(const void* in, void* out,
                                                     const std::vector<int64_t>& counts_per_rank,
                                                     DataType dtype, ReduceOp op, double scale) {
  if (!ops_.allreduce) {
    return Step(flat_->ReduceScatterScaled(in, out, counts_per_rank, dtype, op, scale));
  }
  HVD_RETURN_IF_ERROR(CheckPerRankArg("hierarchical reducescatter", counts_per_rank, size()));
  int64_t total = 0;
  for (int64_t c : counts_per_rank) total += c;
  HVD_RETURN_IF_ERROR(CheckAllreduceArgs(
      [&] { return "hierarchical reducescatter of " + AllreduceOpName(total, dtype, op); }, in,
      total, op));
  const AllreducePiece whole{in, nullptr, total};
  return ReduceScatterPiecesScaled({&whole, 1}, out, counts_per_rank, dtype, op, scale);
}

Status HierarchicalCommunicator::ReduceScatterPiecesScaled(
    std::span<const AllreducePiece> pieces, void* out, const std::vector<int64_t>& counts_per_rank,
    DataType dtype, ReduceOp op, double scale) {
  if (!ops_.allreduce) {
    return Step(flat_->ReduceScatterPiecesScaled(pieces, out, counts_per_rank, dtype, op, scale));
  }
  HVD_RETURN_IF_ERROR(CheckPerRankArg("hierarchical reducescatter", counts_per_rank, size()));
  const auto what = [&] {
    return std::string("hierarchical reducescatter of pieces (") + DataTypeName(dtype) + " " +
           ReduceOpName(op) + ")";
  };
  HVD_RETURN_IF_ERROR(IndexPiecesForCounts(what, pieces, counts_per_rank, &rs_starts_));
  HVD_RETURN_IF_ERROR(CheckAllreduceArgs(what, pieces.data(), rs_starts_.back(), op));
  const int n = size(), l = local_->size(), hosts = cross_->size(), me = local_->rank();
  offsets_.assign(n + 1, 0);  // offsets_[r]: elements before rank r's slice of the input
  for (int r = 0; r < n; ++r) offsets_[r + 1] = offsets_[r] + counts_per_rank[r];
  // Every host holds every rank's slice. Local rank i's part of the host's reduce-scatter is
  // the slices of the ranks with local rank i, one per host, in host order; its cross group
  // then reduce-scatters that part, host h getting the slice of rank h * l + i, its own. Each
  // byte crosses the network once per host, as in Allreduce. The input regrouped that way is
  // a list of pieces (read in place where the local transport takes pieces, else packed once).
  const int64_t elem = static_cast<int64_t>(DataTypeSize(dtype));
  const std::span<const int64_t> starts(rs_starts_);
  regrouped_.clear();
  for (int i = 0; i < l; ++i) {
    counts_[i] = 0;
    for (int h = 0; h < hosts; ++h) {
      const int r = h * l + i;
      ForEachOverlap<int64_t>(
          starts, offsets_[r], counts_per_rank[r],
          [&](size_t k, int64_t within, int64_t, int64_t len) {
            const char* in = static_cast<const char*>(pieces[k].in);
            regrouped_.push_back({in == nullptr ? nullptr : in + within * elem, nullptr, len});
          });
      counts_[i] += counts_per_rank[r];
    }
  }
  for (int h = 0; h < hosts; ++h) host_counts_[h] = counts_per_rank[h * l + me];
  if (slice_.size() < static_cast<size_t>(counts_[me] * elem)) slice_.resize(counts_[me] * elem);
  HVD_RETURN_IF_ERROR(
      Step(local_->ReduceScatterPieces(regrouped_, slice_.data(), counts_, dtype, op)));
  return Step(cross_->ReduceScatterScaled(slice_.data(), out, host_counts_, dtype, op, scale));
}

Status HierarchicalCommunicator::Allgatherv(const void* in, void* out,
                                            const std::vector<int64_t>& bytes_per_rank) {
  if (!ops_.allgather) return Step(flat_->Allgatherv(in, out, bytes_per_rank));
  HVD_RETURN_IF_ERROR(CheckPerRankArg("hierarchical allgather", bytes_per_rank, size()));
  // Host-major order: host h's members are group positions [h*l, (h+1)*l).
  const int l = local_->size(), hosts = cross_->size(), host = cross_->rank();
  int64_t host_offset = 0;
  for (int h = 0; h < hosts; ++h) {
    host_bytes_[h] = 0;
    for (int i = 0; i < l; ++i) host_bytes_[h] += bytes_per_rank[h * l + i];
    if (h < host) host_offset += host_bytes_[h];
  }
  for (int i = 0; i < l; ++i) bytes_[i] = bytes_per_rank[host * l + i];
  char* block = static_cast<char*>(out) + host_offset;
  HVD_RETURN_IF_ERROR(Step(local_->Allgatherv(in, block, bytes_)));
  if (local_->rank() == 0) {
    // In place: this host's block is already where the gather puts it.
    HVD_RETURN_IF_ERROR(Step(cross_->Allgatherv(block, out, host_bytes_)));
  }
  int64_t total = 0;
  for (int64_t b : host_bytes_) total += b;
  return Step(local_->Broadcast(out, total, 0));
}

}  // namespace

std::unique_ptr<Communicator> MakeHierarchicalCommunicator(std::unique_ptr<Communicator> flat,
                                                           std::unique_ptr<Communicator> local,
                                                           std::unique_ptr<Communicator> cross,
                                                           HierarchicalOps ops) {
  return std::make_unique<HierarchicalCommunicator>(std::move(flat), std::move(local),
                                                    std::move(cross), ops);
}

}  // namespace hvd::runtime
