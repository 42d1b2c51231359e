#include "runtime/transports/tcp/tcp_communicator.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <utility>

#include "common/logging.h"
#include "runtime/transports/allreduce_pieces.h"
#include "runtime/transports/posted_inputs.h"
#include "runtime/transports/reduce_inputs.h"
#include "runtime/transports/reduction.h"
#include "runtime/transports/tcp/tcp_algorithms.h"
#include "runtime/transports/tcp/tcp_mesh.h"
#include "runtime/transports/tcp/tcp_transport.h"

namespace hvd::runtime {
namespace {

// A reduction exchanges directly with every peer (one round trip, each rank reduces all n
// inputs) while it sends at most kDirectReduceTraffic bytes in all, or its message is at most
// kDirectReduceAlways; larger ones take the pipelined ring (2(n-1) steps of size/n). Measured
// on the 2-core VM: direct wins up to 128 KiB at n=2 (27 vs 62 µs at 64 KiB) and 32 KiB at
// n=4, the ring from 512 KiB at n=2.
constexpr size_t kDirectReduceTraffic = size_t{128} << 10;
constexpr size_t kDirectReduceAlways = size_t{4} << 10;
// With more than 2 ranks an allreduce takes recursive doubling (log2 n exchanges of the whole
// message with one partner each) while a rank sends at most kDoublingTraffic bytes in all
// (message x rounds). Measured on the 2-core VM, 4 ranks, 2026-11-23, against the direct
// exchange up to 4 KiB and the ring above (3 interleaved pairs): 4 KiB 184-202 -> 124-175 us,
// 16 KiB 213-257 -> 141-198, 64 KiB 222-250 -> 155-185, 128 KiB 272-296 -> 217-245, 256 KiB
// 383-423 -> 336-345, 512 KiB level (543-558 / 559-575), 1 MiB the ring (837-940 / 994-1082).
// It also carries every cycle's negotiation (the response cache's bit vectors). At 2 ranks it
// is the direct exchange.
constexpr size_t kDoublingTraffic = size_t{512} << 10;
// Within recursive doubling's range, Rabenseifner's halving-doubling sends 2(p-1)/p of the
// message where doubling sends log2(p) times it, in twice the rounds: which is faster depends
// on the network's bandwidth against its round time. Both are measured (ProbeNetwork) at the
// first allreduce of at least kProbeFromBytes that would take doubling; smaller ones always
// do. Measured on the netns cluster, 4 hosts x 1 rank, 2026-11-24: with the links shaped to
// 1 Gbit/s halving-doubling took 64 KiB 1.62-1.66 -> 0.84-1.26 ms and 256 KiB 10.7 -> 7.5-8.0
// ms, but on the unshaped veths it was 10-35 % slower at 96-256 KiB and 40-100 us slower
// below (4 ranks on 2 CPUs: ~60 us a round).
constexpr size_t kProbeFromBytes = size_t{8} << 10;
constexpr double kHalvingMargin = 1.1;
// Broadcasts and allgathers moving at most this many bytes per rank go direct.
constexpr size_t kDirectMoveBytes = size_t{256} << 10;
// Posting's surplus (Communicator::PostedSurplusLimit): a member may post this many bytes
// beyond what its op moves without a measurement, about what a 1 Gbit/s link carries in the
// ~100 us round that posting saves; beyond it, as many as the group's measured links carry in
// the doubling AND round's time (MeasureNetwork; groups of 4 or more). Measured on the netns
// cluster, 4 hosts x 1 rank, 2026-11-25 (posting against HVD_EAGER_ALLREDUCE_BYTES=0): with
// the links shaped to 1 Gbit/s a 4 KiB alltoall (9 KiB surplus) 106-137 against 158-193 us,
// but 16 KiB (36 KiB surplus) 553-621 against 161-198 us and 32 KiB 1.9 against 0.24 ms,
// reducescatter alike; on the unshaped veths 16 KiB posted 106-133 against ~200 us.
constexpr int64_t kPostedSurplusBytes = int64_t{12} << 10;

TcpReducer BitwiseReducer(bool is_and) {
  TcpReducer r;
  r.elem = sizeof(uint64_t);
  if (is_and) {
    r.fn = [](void* dst, const void* src, int64_t n) {
      auto* d = static_cast<uint64_t*>(dst);
      const auto* s = static_cast<const uint64_t*>(src);
      for (int64_t i = 0; i < n; ++i) d[i] &= s[i];
    };
  } else {
    r.fn = [](void* dst, const void* src, int64_t n) {
      auto* d = static_cast<uint64_t*>(dst);
      const auto* s = static_cast<const uint64_t*>(src);
      for (int64_t i = 0; i < n; ++i) d[i] |= s[i];
    };
  }
  return r;
}

// Splits `count` elements into `n` contiguous segments as evenly as possible (bytes), into
// *seg (its capacity is reused).
void EvenSegments(int64_t count, int n, size_t elem, std::vector<size_t>* seg) {
  seg->resize(n);
  for (int i = 0; i < n; ++i) {
    const int64_t c = count / n + (i < count % n ? 1 : 0);
    (*seg)[i] = static_cast<size_t>(c) * elem;
  }
}

TcpReducer ElementwiseReducer(DataType dtype, ReduceOp op, double scale = 1.0) {
  TcpReducer r;
  r.elem = DataTypeSize(dtype);
  // Two enums: std::function stores this closure inline (no allocation); so does finish's
  // (an enum and a double).
  r.fn = [dtype, op](void* dst, const void* src, int64_t n) { ReduceInto(dst, src, n, dtype, op); };
  if (scale != 1.0) {
    r.finish = [dtype, scale](void* data, int64_t n) { ScaleBuffer(data, n, dtype, scale); };
  }
  return r;
}

// What TcpCommunicator::BitwiseAndPostingInput leaves readable (PostedInputs): the gathered
// blocks, member k's at offsets[k] + the words: its input's length (one word), its input.
class TcpPosted final : public PostedSource {
 public:
  explicit TcpPosted(TcpTransport* transport) : transport_(transport) {}
  void Open(const char* base, const std::vector<size_t>* offsets, size_t word_bytes,
            size_t block_offset) {
    base_ = base;
    offsets_ = offsets;
    word_bytes_ = word_bytes;
    block_offset_ = block_offset;
    open_ = true;
  }
  void Close() { open_ = false; }
  bool open() const override { return open_; }
  const char* block(int k) const override { return base_ + (*offsets_)[k] + word_bytes_; }
  size_t block_offset() const override { return block_offset_; }
  void Abort() override { transport_->Abort(); }

 private:
  TcpTransport* const transport_;
  const char* base_ = nullptr;
  const std::vector<size_t>* offsets_ = nullptr;
  size_t word_bytes_ = 0;
  size_t block_offset_ = 0;
  bool open_ = false;
};

// TcpCommunicator: see CreateTcpCommunicator. Collectives run on the caller's thread, one at
// a time; Abort() may come from any thread (the transport is thread-safe for it). A successful
// collective allocates nothing once its shape has been seen: op names and error context are
// built only on the error path, per-rank tables live in reused members.
class TcpCommunicator final : public ScalingCommunicator {
 public:
  TcpCommunicator(int rank, int size, std::unique_ptr<TcpTransport> transport,
                  std::chrono::milliseconds timeout, int64_t halving_bytes)
      : rank_(rank),
        size_(size),
        timeout_(timeout),
        probed_(halving_bytes >= 0),
        halving_given_(halving_bytes >= 0),
        halving_from_(halving_bytes >= 0 ? static_cast<size_t>(halving_bytes) : kNever),
        transport_(std::move(transport)),
        algo_(transport_.get(), rank, size),
        posted_source_(transport_.get()),
        posted_("TCP_EAGER", "tcp", rank, size, &posted_source_),
        posted_pieces_("TCP_PIECES", "tcp", rank, size, &posted_source_) {
    sizes_.reserve(size);
    sizes2_.reserve(size);
    for (int pof2 = 2; pof2 <= size; pof2 *= 2) ++doubling_rounds_;
    // The largest messages UseDirect() and UseDoubling() accept.
    algo_.ExpectDirectMessages(
        std::max(kDirectReduceAlways, kDirectReduceTraffic / static_cast<size_t>(size - 1)));
    if (size > 2) algo_.ExpectDoublingMessages(kDoublingTraffic / doubling_rounds_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* name() const override { return "TCP"; }

  Status GatherBytes(const std::string& in, int root, std::vector<std::string>* out) override {
    HVD_RETURN_IF_ERROR(CheckRoot("gather", root));
    return Guard("gather", [&](const TcpWhat& w) { return algo_.GatherBytes(in, root, out, w); });
  }
  Status BroadcastBytes(std::string* data, int root) override {
    HVD_RETURN_IF_ERROR(CheckRoot("broadcast", root));
    return Guard("broadcast bytes",
                 [&](const TcpWhat& w) { return algo_.BroadcastBytes(data, root, w); });
  }
  Status BitwiseAnd(std::vector<uint64_t>* bits) override { return Bitwise(bits, true); }
  Status BitwiseOr(std::vector<uint64_t>* bits) override { return Bitwise(bits, false); }
  Status Barrier() override {
    return Guard("barrier", [&](const TcpWhat& w) { return algo_.Barrier(w); });
  }
  // The ring and halving-doubling scale each completed segment as it is reduced, before their
  // allgather half forwards it (TcpReducer::finish); recursive doubling and the direct exchange,
  // where every member completes everything, scale the whole result.
  Status AllreduceScaled(void* buffer, int64_t count, DataType dtype, ReduceOp op,
                         double scale) override;
  bool ands_with_allreduce() const override { return true; }
  // The ride takes the direct exchange (2 ranks) or recursive doubling, as Reduce does up to
  // where it would take halving-doubling (or the ring): HVD_TCP_HALVING_BYTES when given, else
  // kProbeFromBytes, from which the first one measures the network and may take halving from
  // then on (a state members of a hierarchy's cross groups need not share).
  bool rides_allreduce_as_own(int64_t count, DataType dtype) const override {
    const size_t bytes = static_cast<size_t>(count) * DataTypeSize(dtype);
    if (size_ <= 2) return UseDirect(bytes);
    if (!UseDoubling(bytes)) return false;
    return count < (int64_t{1} << doubling_rounds_) ||
           bytes < (halving_given_ ? halving_from_ : kProbeFromBytes);
  }
  Status BitwiseAndWithAllreduce(std::span<uint64_t> words, size_t and_words, int64_t count,
                                 DataType dtype, ReduceOp op) override;
  // Posting (controller.h, "Eager"): the AND round becomes one allgather of every member's
  // words and input (recursive doubling in a power-of-two group, else the direct exchange), in
  // place of the AND and the op's own exchange: for a lone small allgather, broadcast, alltoall
  // or reducescatter, the rounds of one collective instead of two. (A lone allreduce rides
  // BitwiseAndWithAllreduce, which reduces on the way instead of gathering every input.)
  bool posts_inputs() const override { return size_ > 1; }
  size_t max_posted_bytes(size_t) const override { return kDirectMoveBytes; }
  Result<int64_t> PostedSurplusLimit(int64_t surplus) override;
  Status BitwiseAndPostingInput(std::span<uint64_t> words, const void* input,
                                std::span<const int64_t> posted_bytes) override;
  // Piece by piece: one exchange with every peer at once (HeadedAlltoall), each carrying the
  // words and the peer's piece only.
  bool posts_pieces() const override { return size_ > 1; }
  // Whole inputs go by the direct exchange too, but where they go by recursive doubling, which
  // beat the direct exchange on the 2-vCPU VM (BitwiseAndPostingInput).
  bool pieces_first() const override { return size_ > 1 && !WholeByDoubling(); }
  Status BitwiseAndPostingPieces(std::span<uint64_t> words, const void* input,
                                 std::span<const int64_t> piece_bytes) override;
  Communicator* posted_inputs() override { return posted_view_; }
  // The direct exchange reduces in rank order (ReduceHeldInputs), the ring in ring order.
  bool reduces_segments_in_rank_order(int64_t segment_bytes) const override {
    return UseDirect(static_cast<size_t>(segment_bytes));
  }
  bool allreduces_pieces() const override { return true; }
  Status AllreducePiecesScaled(std::span<const AllreducePiece> pieces, DataType dtype, ReduceOp op,
                               double scale) override;
  Status Allgatherv(const void* in, void* out, const std::vector<int64_t>& bytes_per_rank) override;
  Status Broadcast(void* buffer, int64_t bytes, int root) override;
  Status Alltoallv(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                   const std::vector<int64_t>& recv_bytes) override;
  Status ReduceScatterScaled(const void* in, void* out, const std::vector<int64_t>& counts_per_rank,
                             DataType dtype, ReduceOp op, double scale) override;
  // One copy of the pieces into the ring's workspace (the copy ReduceScatter makes of its
  // input) or, for the direct exchange, into one buffer: no more than ReduceScatter. The ring
  // scales this member's segment in its last step, as it reduces it; the direct exchange after
  // its one reduction pass.
  Status ReduceScatterPiecesScaled(std::span<const AllreducePiece> pieces, void* out,
                                   const std::vector<int64_t>& counts_per_rank, DataType dtype,
                                   ReduceOp op, double scale) override;
  // Allgatherv into a kept buffer, then one copy into the pieces (no allocation per call).
  Status AllgatherPieces(const void* in, std::span<const AllreducePiece> pieces,
                         const std::vector<int64_t>& counts_per_rank, DataType dtype) override {
    return AllgatherPiecesThroughBuffer(this, "allgather into pieces", in, pieces, counts_per_rank,
                                        dtype, &gather_);
  }
  void Abort() override { transport_->Abort(); }
  Status CheckPeers() override { return transport_->CheckClosed(); }
  int lost_member() const override { return transport_->lost_peer(); }

 private:
  // Runs body(what) unless the communicator is aborted or broken; a failure breaks it.
  template <typename Body>
  Status Guard(const TcpWhat& what, Body&& body);
  template <typename Body>
  Status Guard(const char* op, Body&& body) {
    const auto name = [&] { return What(op); };
    return Guard(TcpWhat(name), std::forward<Body>(body));
  }
  std::string What(const std::string& op) const {
    return "tcp " + op + " on rank " + std::to_string(rank_) + " of " + std::to_string(size_);
  }
  // The shared argument checks (communicator.h), whose messages are built only on failure.
  Status CheckRoot(const char* op, int root) const {
    return CheckRootArg([&] { return What(op); }, root, size_);
  }
  Status CheckPerRank(const char* op, const std::vector<int64_t>& v) const {
    return CheckPerRankArg([&] { return What(op); }, v, size_);
  }
  Status Bitwise(std::vector<uint64_t>* bits, bool is_and);
  Status Reduce(char* buf, int64_t count, const TcpReducer& red, const TcpWhat& w);
  bool UseDirect(size_t message_bytes) const {
    return message_bytes <= kDirectReduceAlways ||
           message_bytes * static_cast<size_t>(size_ - 1) <= kDirectReduceTraffic;
  }
  bool UseDoubling(size_t message_bytes) const {
    return size_ > 2 && message_bytes * doubling_rounds_ <= kDoublingTraffic;
  }
  // Reduce's algorithm for `message_bytes` is one of the round-trip ones (not the ring): the
  // message is small enough that packing it first costs nothing next to the exchange.
  bool UseSmallReduce(size_t message_bytes) const {
    return UseDoubling(message_bytes) || UseDirect(message_bytes);
  }

  // Measures this group's round time and time per byte with doubling allreduces of one word
  // and of the largest doubling message and agrees on the slowest member's figures (once:
  // round_s_, byte_s_), then sets halving_from_ to where halving-doubling's model time drops
  // below doubling's.
  Status ProbeNetwork(const TcpWhat& w);
  Status MeasureNetwork(const TcpWhat& w);
  // BitwiseAndPostingInput gathers by recursive doubling (a power-of-two group of 4 or more),
  // else by the direct exchange.
  bool WholeByDoubling() const { return size_ > 2 && (size_ & (size_ - 1)) == 0; }
  // ANDs into `words` every other member's words, at the start of its block in posted_buf_.
  void AndPosted(std::span<uint64_t> words) const;

  static constexpr size_t kNever = ~size_t{0};
  const int rank_;
  const int size_;
  size_t doubling_rounds_ = 0;  // log2 of the largest power of two <= size_
  const std::chrono::milliseconds timeout_;
  bool probed_;               // halving_from_ is decided (given, or measured)
  const bool halving_given_;  // HVD_TCP_HALVING_BYTES set it (never measured)
  bool measured_ = false;     // round_s_ and byte_s_ are measured (0 where they cannot be)
  double round_s_ = 0;        // a doubling round's time, the slowest member's
  double byte_s_ = 0;         // the time a byte adds to a doubling round, the slowest member's
  size_t halving_from_;  // doubling's messages of at least this many bytes take halving-doubling
  std::unique_ptr<TcpTransport> transport_;
  TcpAlgorithms algo_;
  Status broken_;                   // first failure; touched only by the calling thread
  std::vector<char> rs_workspace_;  // reduce-scatter's copy of the input; grown, never shrunk
  std::vector<size_t> sizes_;       // per-rank byte counts of the current call
  std::vector<size_t> sizes2_;      // alltoallv's receive side
  // AllreducePieces: the pieces' first elements, the ring's parts (the outputs), and the
  // packed copy of the small or holed ones (also ReduceScatterPieces' input to a direct
  // exchange, when it is not one piece); grown, never shrunk.
  std::vector<int64_t> starts_;
  std::vector<TcpPiece> parts_;
  std::vector<char> packed_;
  GatherScratch gather_;  // AllgatherPieces
  // BitwiseAndWithAllreduce's layout, read by its reducer (which captures only `this`, so
  // std::function keeps it inline: no allocation).
  struct AndWithAllreduce {
    size_t and_words = 0;
    int64_t count = 0;
    DataType dtype = DataType::kFloat32;
    ReduceOp op = ReduceOp::kSum;
  } and_with_;
  // BitwiseAndPostingInput: the gathered blocks (grown, never shrunk), their sizes and offsets.
  std::vector<char> posted_buf_;
  std::vector<size_t> posted_parts_;
  std::vector<size_t> posted_offsets_;
  std::vector<char> filler_;  // BitwiseAndPostingPieces without an input: what it sends
  TcpPosted posted_source_;
  // What posted_inputs() returns: the last posting round's (named TCP_EAGER_<OP> in the
  // timeline for whole inputs, TCP_PIECES_<OP> for pieces).
  PostedInputs posted_;
  PostedInputs posted_pieces_;
  Communicator* posted_view_ = &posted_;
};

template <typename Body>
Status TcpCommunicator::Guard(const TcpWhat& what, Body&& body) {
  posted_source_.Close();  // any call ends a posting round
  if (transport_->aborted()) return Status::Aborted(what() + ": the communicator was aborted");
  if (!broken_.ok()) return broken_.WithContext(what() + ": communicator failed earlier");
  algo_.set_timeout(timeout_);
  Status st = body(what);
  if (st.ok()) return st;
  if (transport_->aborted()) st = Status::Aborted(what() + ": the communicator was aborted");
  broken_ = st;
  // Make the peers notice now rather than at their own timeouts.
  transport_->Shutdown();
  return st;
}

Status TcpCommunicator::MeasureNetwork(const TcpWhat& w) {
  using Clock = std::chrono::steady_clock;
  if (measured_) return Status::OK();
  measured_ = true;
  if (doubling_rounds_ < 2) return Status::OK();  // 2 or 3 ranks: not measured
  const TcpReducer any = BitwiseReducer(/*is_and=*/false);
  // The median of 5 timed doubling allreduces of `bytes` (typical, not best-case, rounds).
  auto typical = [&](char* buf, size_t bytes, double* seconds) -> Status {
    double times[5];
    for (double& t : times) {
      const auto start = Clock::now();
      HVD_RETURN_IF_ERROR(algo_.DoublingAllreduce(buf, bytes, any, w));
      t = std::chrono::duration<double>(Clock::now() - start).count();
    }
    std::nth_element(times, times + 2, times + 5);
    *seconds = times[2];
    return Status::OK();
  };
  uint64_t word = 0;
  double small = 0, large = 0;
  HVD_RETURN_IF_ERROR(typical(reinterpret_cast<char*>(&word), sizeof(word), &small));
  // The largest doubling message, whole words.
  const size_t probe_bytes =
      kDoublingTraffic / doubling_rounds_ / sizeof(uint64_t) * sizeof(uint64_t);
  std::vector<char> probe(probe_bytes, 0);
  HVD_RETURN_IF_ERROR(typical(probe.data(), probe_bytes, &large));
  const double rounds = static_cast<double>(doubling_rounds_);
  double figures[2] = {small / rounds, std::max(large - small, 0.0) / (rounds * probe_bytes)};
  HVD_RETURN_IF_ERROR(
      algo_.DoublingAllreduce(reinterpret_cast<char*>(figures), sizeof(figures),
                              ElementwiseReducer(DataType::kFloat64, ReduceOp::kMax), w));
  round_s_ = figures[0];
  byte_s_ = figures[1];
  HVD_LOG_DEBUG("tcp group of {}: a round {:.1f} us, {:.3f} ns a byte", size_, round_s_ * 1e6,
                byte_s_ * 1e9);
  return Status::OK();
}

Status TcpCommunicator::ProbeNetwork(const TcpWhat& w) {
  probed_ = true;
  if (doubling_rounds_ < 2) return Status::OK();  // 2 or 3 ranks: nothing to save (p = 2)
  HVD_RETURN_IF_ERROR(MeasureNetwork(w));
  const double rounds = static_cast<double>(doubling_rounds_);
  // doubling(B) = L (t + B b); halving-doubling(B) = 2 L t + c B b with c = 2 (p - 1) / p.
  // Halving-doubling is taken where doubling(B) > m halving-doubling(B), m = kHalvingMargin:
  // B > L t (2m - 1) / (b (L - m c)). The margin covers what the model leaves out (a
  // halving-doubling round also reduces and copies) and a probe taken under passing load.
  const double p = static_cast<double>(int64_t{1} << doubling_rounds_);
  const double m = kHalvingMargin;
  const double saving = rounds - m * 2.0 * (p - 1.0) / p;
  const double from =
      saving > 0 && byte_s_ > 0 ? rounds * round_s_ * (2 * m - 1) / (byte_s_ * saving) : 1e30;
  // Never below kProbeFromBytes: smaller messages always take doubling (and ride the AND round
  // as such: rides_allreduce_as_own).
  halving_from_ =
      from < 1e18 ? std::max(kProbeFromBytes, static_cast<size_t>(std::ceil(from))) : kNever;
  HVD_LOG_DEBUG("tcp group of {}: halving-doubling from {}", size_,
                halving_from_ == kNever ? std::string("never") : std::to_string(halving_from_));
  return Status::OK();
}

Result<int64_t> TcpCommunicator::PostedSurplusLimit(int64_t surplus) {
  if (surplus <= kPostedSurplusBytes || doubling_rounds_ < 2) return kPostedSurplusBytes;
  HVD_RETURN_IF_ERROR(Guard("network probe", [&](const TcpWhat& w) { return MeasureNetwork(w); }));
  // Posting saves the AND round, doubling_rounds_ rounds; its surplus costs byte_s_ a byte.
  const double carried = byte_s_ > 0 ? static_cast<double>(doubling_rounds_) * round_s_ / byte_s_
                                     : static_cast<double>(kPostedSurplusBytes);
  return std::max(kPostedSurplusBytes, static_cast<int64_t>(std::min(carried, 1e15)));
}

Status TcpCommunicator::Reduce(char* buf, int64_t count, const TcpReducer& red, const TcpWhat& w) {
  const size_t bytes = static_cast<size_t>(count) * red.elem;
  if (UseDoubling(bytes)) {
    const int64_t pof2 = int64_t{1} << doubling_rounds_;
    if (bytes >= (probed_ ? halving_from_ : kProbeFromBytes) && count >= pof2) {
      if (!probed_) HVD_RETURN_IF_ERROR(ProbeNetwork(w));
      if (bytes >= halving_from_) return algo_.HalvingDoublingAllreduce(buf, bytes, red, w);
    }
    HVD_RETURN_IF_ERROR(algo_.DoublingAllreduce(buf, bytes, red, w));
    if (red.finish) red.finish(buf, count);
    return Status::OK();
  }
  if (UseDirect(bytes)) {
    HVD_RETURN_IF_ERROR(algo_.DirectAllreduce(buf, bytes, red, w));
    if (red.finish) red.finish(buf, count);
    return Status::OK();
  }
  EvenSegments(count, size_, red.elem, &sizes_);
  return algo_.Ring(buf, sizes_, red, /*allgather=*/true, w);
}

Status TcpCommunicator::Bitwise(std::vector<uint64_t>* bits, bool is_and) {
  const TcpReducer red = BitwiseReducer(is_and);
  return Guard(is_and ? "bitwise and" : "bitwise or", [&](const TcpWhat& w) {
    if (bits->empty()) return Status::OK();
    return Reduce(reinterpret_cast<char*>(bits->data()), static_cast<int64_t>(bits->size()), red,
                  w);
  });
}

Status TcpCommunicator::AllreduceScaled(void* buffer, int64_t count, DataType dtype, ReduceOp op,
                                        double scale) {
  const auto name = [&] { return What(AllreduceOpName(count, dtype, op)); };
  HVD_RETURN_IF_ERROR(CheckAllreduceArgs(name, buffer, count, op));
  const TcpReducer red = ElementwiseReducer(dtype, op, scale);
  return Guard(TcpWhat(name), [&](const TcpWhat& w) {
    if (count == 0) return Status::OK();
    return Reduce(static_cast<char*>(buffer), count, red, w);
  });
}

Status TcpCommunicator::BitwiseAndWithAllreduce(std::span<uint64_t> words, size_t and_words,
                                                int64_t count, DataType dtype, ReduceOp op) {
  const auto name = [&] {
    return What("bitwise and with an " + AllreduceOpName(count, dtype, op));
  };
  HVD_RETURN_IF_ERROR(CheckAndWithAllreduceArgs(name, words, and_words, count, dtype, op));
  and_with_ = {and_words, count, dtype, op};
  // One reducer over whole words: both algorithms below apply it to the whole message at once
  // (never to a segment of it, as the ring would).
  TcpReducer red;
  red.elem = sizeof(uint64_t);
  red.fn = [this](void* dst, const void* src, int64_t) {
    auto* d = static_cast<uint64_t*>(dst);
    const auto* s = static_cast<const uint64_t*>(src);
    const AndWithAllreduce& a = and_with_;
    for (size_t i = 0; i < a.and_words; ++i) d[i] &= s[i];
    ReduceInto(d + a.and_words, s + a.and_words, a.count, a.dtype, a.op);
  };
  return Guard(TcpWhat(name), [&](const TcpWhat& w) {
    char* buf = reinterpret_cast<char*>(words.data());
    const size_t bytes = words.size() * sizeof(uint64_t);
    if (size_ > 2) return algo_.DoublingAllreduce(buf, bytes, red, w);
    return algo_.DirectAllreduce(buf, bytes, red, w);
  });
}

Status TcpCommunicator::BitwiseAndPostingInput(std::span<uint64_t> words, const void* input,
                                               std::span<const int64_t> posted_bytes) {
  posted_source_.Close();  // a refused call ends the last posting round too
  const auto name = [&] { return What("bitwise and posting an input"); };
  HVD_RETURN_IF_ERROR(CheckPostingArgs(name, posted_bytes, size_, max_posted_bytes(words.size())));
  // Member k's block: its words, its input's length, posted_bytes[k] bytes (its input, or
  // filler where it has none), every block rounded up to whole words.
  const size_t word_bytes = words.size() * sizeof(uint64_t);
  posted_parts_.resize(size_);
  posted_offsets_.resize(size_);
  size_t total = 0;
  for (int k = 0; k < size_; ++k) {
    const size_t b = static_cast<size_t>(posted_bytes[k]);
    posted_parts_[k] = word_bytes + sizeof(uint64_t) + (b + 7) / 8 * 8;
    posted_offsets_[k] = total;
    total += posted_parts_[k];
  }
  if (posted_buf_.size() < total) posted_buf_.resize(total);
  char* mine = posted_buf_.data() + posted_offsets_[rank_];
  const uint64_t length = input != nullptr ? static_cast<uint64_t>(posted_bytes[rank_]) : 0;
  std::memcpy(mine, words.data(), word_bytes);
  std::memcpy(mine + word_bytes, &length, sizeof(length));
  if (length > 0) std::memcpy(mine + word_bytes + sizeof(length), input, length);
  HVD_RETURN_IF_ERROR(Guard(TcpWhat(name), [&](const TcpWhat& w) {
    // A power-of-two group gathers by recursive doubling: 4 hosts x 1 rank, 2026-11-25, 3
    // interleaved runs, hvd-bench 4 KiB / 16 KiB: allgather 86-90 / 91-113 us against the
    // direct exchange's 114-129 / 117-157, alltoall 83-101 / 106-133 against 141-192 /
    // 166-206 (every rank sending to and waking every other at once costs more here than
    // log2(n) exchanges with one partner each).
    if (WholeByDoubling()) return algo_.DoublingAllgatherv(posted_buf_.data(), posted_parts_, w);
    return algo_.Allgatherv(posted_buf_.data(), posted_parts_, /*ring=*/false, w);
  }));
  AndPosted(words);
  posted_source_.Open(posted_buf_.data(), &posted_offsets_, word_bytes, 0);
  posted_view_ = &posted_;
  return Status::OK();
}

void TcpCommunicator::AndPosted(std::span<uint64_t> words) const {
  for (int k = 0; k < size_; ++k) {
    if (k == rank_) continue;
    const char* theirs = posted_buf_.data() + posted_offsets_[k];
    for (size_t i = 0; i < words.size(); ++i) {
      uint64_t v;
      std::memcpy(&v, theirs + i * sizeof(uint64_t), sizeof(v));
      words[i] &= v;
    }
  }
}

Status TcpCommunicator::BitwiseAndPostingPieces(std::span<uint64_t> words, const void* input,
                                                std::span<const int64_t> piece_bytes) {
  posted_source_.Close();  // a refused call ends the last posting round too
  const auto name = [&] { return What("bitwise and posting pieces"); };
  HVD_RETURN_IF_ERROR(CheckPostingArgs(name, piece_bytes, size_, max_posted_bytes(words.size())));
  // What every peer gets first: the words, then whether this member posted (its length word;
  // the receiver knows the length, its own piece's). Member k's block here: that head, then
  // its piece for this member, every block rounded up to whole words.
  const size_t word_bytes = words.size() * sizeof(uint64_t);
  const size_t head_bytes = word_bytes + sizeof(uint64_t);
  const size_t mine = static_cast<size_t>(piece_bytes[rank_]);
  size_t lo = 0, all = 0;  // where this member's piece starts; all pieces
  for (int k = 0; k < size_; ++k) {
    if (k == rank_) lo = all;
    all += static_cast<size_t>(piece_bytes[k]);
  }
  const size_t part = head_bytes + (mine + 7) / 8 * 8;
  const size_t total = head_bytes + part * static_cast<size_t>(size_);
  if (posted_buf_.size() < total) posted_buf_.resize(total);
  posted_offsets_.resize(size_);
  for (int k = 0; k < size_; ++k) posted_offsets_[k] = head_bytes + part * static_cast<size_t>(k);
  char* head = posted_buf_.data();  // the head sent, ahead of the blocks
  const uint64_t posted = input != nullptr ? 1 : 0;
  std::memcpy(head, words.data(), word_bytes);
  std::memcpy(head + word_bytes, &posted, sizeof(posted));
  // This member's own block: its head and its own piece.
  char* own = posted_buf_.data() + posted_offsets_[rank_];
  std::memcpy(own, head, head_bytes);
  if (input != nullptr && mine > 0) {
    std::memcpy(own + head_bytes, static_cast<const char*>(input) + lo, mine);
  }
  const char* from = static_cast<const char*>(input);
  if (from == nullptr) {  // the pieces sent are filler: any bytes will do
    if (filler_.size() < all) filler_.resize(all);
    from = filler_.data();
  }
  HVD_RETURN_IF_ERROR(Guard(TcpWhat(name), [&](const TcpWhat& w) {
    return algo_.HeadedAlltoall(head, head_bytes, from, piece_bytes, posted_buf_.data(),
                                posted_offsets_, w);
  }));
  AndPosted(words);
  // The length words now say what each member posted for this member.
  for (int k = 0; k < size_; ++k) {
    char* length = posted_buf_.data() + posted_offsets_[k] + word_bytes;
    uint64_t flag;
    std::memcpy(&flag, length, sizeof(flag));
    const uint64_t bytes = flag != 0 ? mine : 0;
    std::memcpy(length, &bytes, sizeof(bytes));
  }
  posted_source_.Open(posted_buf_.data(), &posted_offsets_, word_bytes, lo);
  posted_view_ = &posted_pieces_;
  return Status::OK();
}

Status TcpCommunicator::AllreducePiecesScaled(std::span<const AllreducePiece> pieces,
                                              DataType dtype, ReduceOp op, double scale) {
  const bool counts_ok = PieceView::Index(pieces, &starts_);
  const int64_t count = starts_.back();
  const auto name = [&] { return What(AllreduceOpName(count, dtype, op)); };
  HVD_RETURN_IF_ERROR(CheckAllreducePiecesArgs(name, pieces, counts_ok, count, op));
  const TcpReducer red = ElementwiseReducer(dtype, op, scale);
  const size_t elem = red.elem;
  return Guard(TcpWhat(name), [&](const TcpWhat& w) {
    if (count == 0) return Status::OK();
    const size_t bytes = static_cast<size_t>(count) * elem;
    const bool whole = std::all_of(pieces.begin(), pieces.end(), [](const AllreducePiece& p) {
      return p.count == 0 || (p.in != nullptr && p.out != nullptr);
    });
    if (!whole || UseSmallReduce(bytes)) {
      // Small (round trips: a copy costs nothing next to them) or with holes: packed.
      if (packed_.size() < bytes) packed_.resize(bytes);
      const PieceView view(pieces, starts_, static_cast<int64_t>(elem));
      view.Gather(0, count, packed_.data());
      HVD_RETURN_IF_ERROR(Reduce(packed_.data(), count, red, w));
      view.Scatter(0, count, packed_.data());
      return Status::OK();
    }
    // The ring runs on the outputs, each first holding its input.
    parts_.clear();
    for (const AllreducePiece& p : pieces) {
      const size_t b = static_cast<size_t>(p.count) * elem;
      if (b == 0) continue;
      if (p.out != p.in) std::memcpy(p.out, p.in, b);
      parts_.push_back({static_cast<char*>(p.out), b, false});
    }
    EvenSegments(count, size_, elem, &sizes_);
    return algo_.Ring(parts_, sizes_, red, /*allgather=*/true, w);
  });
}

Status TcpCommunicator::ReduceScatterScaled(const void* in, void* out,
                                            const std::vector<int64_t>& counts_per_rank,
                                            DataType dtype, ReduceOp op, double scale) {
  int64_t total = 0;  // ReduceScatterPiecesScaled checks the counts
  for (int64_t c : counts_per_rank) total += c;
  const AllreducePiece whole{in, nullptr, total};
  return ReduceScatterPiecesScaled({&whole, 1}, out, counts_per_rank, dtype, op, scale);
}

Status TcpCommunicator::ReduceScatterPiecesScaled(std::span<const AllreducePiece> pieces, void* out,
                                                  const std::vector<int64_t>& counts_per_rank,
                                                  DataType dtype, ReduceOp op, double scale) {
  HVD_RETURN_IF_ERROR(CheckPerRank("reducescatter", counts_per_rank));
  const auto name = [&] {
    return What(std::string("reducescatter (") + DataTypeName(dtype) + " " + ReduceOpName(op) +
                ")");
  };
  HVD_RETURN_IF_ERROR(IndexPiecesForCounts(name, pieces, counts_per_rank, &starts_));
  if (op == ReduceOp::kAdasum) {
    return Status::Unimplemented(What("reducescatter") + ": Adasum is not elementwise");
  }
  const TcpReducer red = ElementwiseReducer(dtype, op, scale);
  const size_t elem = red.elem;
  std::vector<size_t>& seg = sizes_;
  seg.resize(size_);
  size_t total = 0, offset = 0, largest = 0;
  for (int r = 0; r < size_; ++r) {
    seg[r] = static_cast<size_t>(counts_per_rank[r]) * elem;
    if (r == rank_) offset = total;
    total += seg[r];
    largest = std::max(largest, seg[r]);
  }
  return Guard(TcpWhat(name), [&](const TcpWhat& w) {
    if (total == 0) return Status::OK();
    const PieceView view(pieces, starts_, static_cast<int64_t>(elem));
    const int64_t count = view.count();
    if (UseDirect(largest)) {
      // The direct exchange reads its input in place: one contiguous piece needs no copy.
      const char* src = pieces.size() == 1 && pieces[0].in != nullptr
                            ? static_cast<const char*>(pieces[0].in)
                            : nullptr;
      if (src == nullptr) {
        if (packed_.size() < total) packed_.resize(total);
        view.Gather(0, count, packed_.data());
        src = packed_.data();
      }
      // Every member's segment for this member, then one reduction of them in rank order:
      // the posted inputs' (PostedInputs::ReduceScatterScaled), so a lone reducescatter that
      // rides the AND round gets the same bits as it does here (float16/bfloat16 sums in float,
      // one rounding; until 2026-12-01 each pairwise sum was rounded: bfloat16 256 + 1 + 1
      // gave 256 here and 258 there).
      const char* slots = nullptr;
      HVD_RETURN_IF_ERROR(algo_.ExchangeSegments(src, seg, &slots, w));
      const size_t mine = seg[rank_];
      if (mine == 0) return Status::OK();
      return ReduceHeldInputs(
          out, size_, static_cast<int64_t>(mine / elem), dtype, op,
          [&](int k, const void** p) {
            *p = slots + static_cast<size_t>(k) * mine;
            return Status::OK();
          },
          scale);
    }
    if (rs_workspace_.size() < total) rs_workspace_.resize(total);
    view.Gather(0, count, rs_workspace_.data());
    HVD_RETURN_IF_ERROR(algo_.Ring(rs_workspace_.data(), seg, red, false, w));
    if (seg[rank_] > 0) std::memcpy(out, rs_workspace_.data() + offset, seg[rank_]);
    return Status::OK();
  });
}

Status TcpCommunicator::Allgatherv(const void* in, void* out,
                                   const std::vector<int64_t>& bytes_per_rank) {
  HVD_RETURN_IF_ERROR(CheckPerRank("allgather", bytes_per_rank));
  std::vector<size_t>& parts = sizes_;
  parts.resize(size_);
  size_t total = 0, offset = 0;
  for (int r = 0; r < size_; ++r) {
    parts[r] = static_cast<size_t>(bytes_per_rank[r]);
    if (r == rank_) offset = total;
    total += parts[r];
  }
  char* dst = static_cast<char*>(out);
  if (parts[rank_] > 0 && dst + offset != in) std::memmove(dst + offset, in, parts[rank_]);
  const bool ring = size_ > 2 && total > kDirectMoveBytes;
  return Guard("allgather",
               [&](const TcpWhat& w) { return algo_.Allgatherv(dst, parts, ring, w); });
}

Status TcpCommunicator::Broadcast(void* buffer, int64_t bytes, int root) {
  HVD_RETURN_IF_ERROR(CheckRoot("broadcast", root));
  if (bytes < 0 || (bytes > 0 && buffer == nullptr)) {
    return Status::InvalidArgument(What("broadcast") + ": bad buffer");
  }
  const size_t n = static_cast<size_t>(bytes);
  const bool chain = size_ > 2 && n * static_cast<size_t>(size_ - 1) > kDirectMoveBytes;
  return Guard("broadcast", [&](const TcpWhat& w) {
    if (n == 0) return Status::OK();
    return algo_.Broadcast(static_cast<char*>(buffer), n, root, chain, w);
  });
}

Status TcpCommunicator::Alltoallv(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                                  const std::vector<int64_t>& recv_bytes) {
  HVD_RETURN_IF_ERROR(CheckPerRank("alltoall", send_bytes));
  HVD_RETURN_IF_ERROR(CheckPerRank("alltoall", recv_bytes));
  sizes_.assign(send_bytes.begin(), send_bytes.end());
  sizes2_.assign(recv_bytes.begin(), recv_bytes.end());
  return Guard("alltoall", [&](const TcpWhat& w) {
    return algo_.Alltoallv(static_cast<const char*>(in), sizes_, static_cast<char*>(out), sizes2_,
                           w);
  });
}

Status CheckOptions(const TcpOptions& o) {
  if (o.size < 2 || o.rank < 0 || o.rank >= o.size) {
    return Status::InvalidArgument("tcp: rank " + std::to_string(o.rank) + " / size " +
                                   std::to_string(o.size) + " is not a valid multi-rank group");
  }
  if (o.timeout.count() <= 0) return Status::InvalidArgument("tcp: timeout must be positive");
  if (o.kv == nullptr) return Status::InvalidArgument("tcp: no rendezvous client");
  if (o.scope.empty()) return Status::InvalidArgument("tcp: empty scope");
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<Communicator>> CreateTcpCommunicator(const TcpOptions& options) {
  HVD_RETURN_IF_ERROR(CheckOptions(options));
  TcpMeshOptions mesh_options;
  mesh_options.kv = options.kv;
  mesh_options.scope = options.scope;
  mesh_options.rank = options.rank;
  mesh_options.size = options.size;
  mesh_options.iface = options.iface;
  mesh_options.route_to = options.route_to;
  mesh_options.hostname = options.hostname;
  mesh_options.auth = {options.key, options.job_id, options.scope};
  mesh_options.timeout = options.timeout;
  mesh_options.heartbeat_timeout = options.heartbeat_timeout;
  mesh_options.congestion = options.congestion;
  mesh_options.abortable = options.abortable;
  auto mesh = ConnectTcpMesh(mesh_options);
  if (!mesh.ok()) {
    return mesh.status().WithContext("tcp rendezvous of scope '" + options.scope + "' as rank " +
                                     std::to_string(options.rank) + " of " +
                                     std::to_string(options.size));
  }
  // Every rank has read every address once it is connected; let the server drop the keys.
  Status finished = options.kv->FinishScope(options.scope + "/tcp/", options.size);
  if (!finished.ok())
    HVD_LOG_DEBUG("tcp scope '{}': cleanup: {}", options.scope, finished.ToString());
  auto transport = std::make_unique<TcpTransport>(options.rank, std::move(mesh->fds),
                                                  std::move(mesh->peer_names));
  transport->set_heartbeat_timeout(options.heartbeat_timeout);
  transport->set_busy_poll(options.busy_poll, options.busy_yield);
  return std::unique_ptr<Communicator>(new TcpCommunicator(
      options.rank, options.size, std::move(transport), options.timeout, options.halving_bytes));
}

}  // namespace hvd::runtime
