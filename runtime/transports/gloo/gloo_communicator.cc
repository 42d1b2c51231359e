#include "runtime/transports/gloo/gloo_communicator.h"

#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/address.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>

#include "common/logging.h"
#include "runtime/transports/gloo/gloo_collectives.h"
#include "runtime/transports/gloo/gloo_failure.h"
#include "runtime/transports/gloo/gloo_legacy_allreducer.h"
#include "runtime/transports/gloo/gloo_reduction.h"
#include "runtime/transports/gloo/gloo_store.h"
#include "runtime/transports/gloo/gloo_transfers.h"

namespace hvd::runtime {
namespace {

// GlooCollectives::ReduceFn over gloo's kernels (gloo_reduction.h) of storage width S.
template <typename S>
void ReduceStorage(const void* fn, void* dst, const void* src, size_t count) {
  static_cast<const gloo::ReductionFunction<S>*>(fn)->call(static_cast<S*>(dst),
                                                           static_cast<const S*>(src), count);
}

// Calls fn(S{}) with S the unsigned storage type of dtype's width (gloo_reduction.h): the one
// dispatch from a dtype to gloo's kernels, legacy runs and direct reductions alike.
template <typename Fn>
auto ForStorage(DataType dtype, Fn&& fn) {
  switch (DataTypeSize(dtype)) {
    case 1:
      return fn(uint8_t{});
    case 2:
      return fn(uint16_t{});
    case 4:
      return fn(uint32_t{});
    default:
      return fn(uint64_t{});
  }
}

// The direct collectives' reduction for (dtype, op): gloo's kernel of the dtype's width.
struct DirectReduction {
  GlooCollectives::ReduceFn reduce;
  const void* fn;
};

DirectReduction DirectReductionFor(DataType dtype, ReduceOp op) {
  return ForStorage(dtype, [&]<typename S>(S) {
    return DirectReduction{ReduceStorage<S>, GlooReductionFor<S>(dtype, op)};
  });
}

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// GlooCommunicator: see CreateGlooCommunicator. All collectives run on the caller's thread;
// Abort() may come from any thread and is serialized with destruction by abort_mu_.
class GlooCommunicator final : public Communicator {
 public:
  GlooCommunicator(int rank, int size, const GlooThresholds& thresholds)
      : rank_(rank), size_(size), thresholds_(thresholds) {}
  ~GlooCommunicator() override;

  // Takes over a connected context (size > 1).
  void Attach(std::shared_ptr<gloo::transport::Device> device,
              std::shared_ptr<gloo::Context> context, std::chrono::milliseconds timeout);
  // Exchanges pair addresses so that failures can shut every connection down and errors can
  // name their peer; `store` is the one the mesh was connected through.
  Status LearnEndpoints(const GlooRecordingStore& store);

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* name() const override { return "GLOO"; }

  Status GatherBytes(const std::string& in, int root, std::vector<std::string>* out) override;
  Status BroadcastBytes(std::string* data, int root) override;
  Status BitwiseAnd(std::vector<uint64_t>* bits) override;
  Status BitwiseOr(std::vector<uint64_t>* bits) override;
  Status Barrier() override;
  Status Allreduce(void* buffer, int64_t count, DataType dtype, ReduceOp op) override;
  Status Allgatherv(const void* in, void* out, const std::vector<int64_t>& bytes_per_rank) override;
  Status Broadcast(void* buffer, int64_t bytes, int root) override;
  Status Alltoallv(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                   const std::vector<int64_t>& recv_bytes) override;
  Status ReduceScatter(const void* in, void* out, const std::vector<int64_t>& counts_per_rank,
                       DataType dtype, ReduceOp op) override;
  void Abort() override;
  // Whether a member is gone (GlooSockets::CheckClosed), for a NCCL wait on the same members.
  Status CheckPeers() override;
  int lost_member() const override { return lost_.get(); }

 private:
  void NoteLost(int peer);  // lost_member()'s, the first time
  // The watch (see StartWatch's comment): the thread's loop, and one look.
  void StartWatch();
  void Watch();
  void WatchOnce();
  // Runs `body` unless the communicator is already aborted or broken; converts whatever gloo
  // throws into a Status, and on failure breaks the communicator. `name()` returns the op's
  // name for messages; it is called only on the error path, so that a successful call builds
  // no string.
  template <typename Name, typename Body>
  Status GuardNamed(const Name& name, Body&& body);
  template <typename Body>
  Status Guard(const char* op, Body&& body) {
    return GuardNamed([op] { return std::string(op); }, std::forward<Body>(body));
  }
  std::string What(const std::string& op) const;
  // After a failure: closes every pair, so no receive posted by the failed op writes again.
  void DetachPostedTransfers();
  // The shared argument checks (communicator.h), whose messages are built only on failure.
  Status CheckRoot(const char* op, int root) const {
    return CheckRootArg([&] { return What(op); }, root, size_);
  }
  Status CheckPerRank(const char* op, const std::vector<int64_t>& v) const {
    return CheckPerRankArg([&] { return What(op); }, v, size_);
  }
  // Allreduce as a pairwise reduce-scatter and a pairwise allgather (throws).
  void RunDirect(void* buffer, size_t count, DataType dtype, ReduceOp op);
  // Allreduce through gloo's legacy algorithms (throws).
  void RunLegacy(void* buffer, size_t count, DataType dtype, ReduceOp op);
  // Every legacy (bound-buffer) run goes through here.
  template <typename S>
  void Ring(S* buffer, size_t count, const gloo::ReductionFunction<S>* fn);

  const int rank_;
  const int size_;
  const GlooThresholds thresholds_;
  std::atomic<bool> aborted_{false};
  FirstLostMember lost_;  // lost_member()
  // When the op running now started (steady clock, ns); 0 between ops. For the watch.
  std::atomic<int64_t> op_since_ns_{0};
  std::mutex watch_mu_;
  std::condition_variable watch_cv_;
  bool watch_stop_ = false;  // watch_mu_
  std::thread watch_;
  Status broken_;  // first failure; touched only by the calling thread
  std::mutex abort_mu_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::Context> context_;
  GlooSockets sockets_;  // set up in Attach, then read-only
  std::unique_ptr<GlooTransfers> transfers_;
  std::unique_ptr<GlooCollectives> collectives_;
  std::unique_ptr<GlooLegacyAllreducer> ring_;
  std::vector<char> reduce_scatter_scratch_;  // grown, never shrunk
  std::vector<int64_t> direct_counts_;        // RunDirect's split, reused
  std::vector<int64_t> direct_bytes_;
  uint64_t barrier_word_ = 0;
};

GlooCommunicator::~GlooCommunicator() {
  if (watch_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(watch_mu_);
      watch_stop_ = true;
    }
    watch_cv_.notify_all();
    watch_.join();
  }
  std::lock_guard<std::mutex> lock(abort_mu_);
  GlooSigpipeBlock no_sigpipe;
  // Teardown may touch broken pairs; gloo's destructors are allowed to throw.
  try {
    ring_.reset();
    collectives_.reset();
    transfers_.reset();
    context_.reset();
    device_.reset();
  } catch (const std::exception& e) {
    HVD_LOG_DEBUG("gloo teardown on rank {}: {}", rank_, e.what());
  } catch (...) {
  }
}

void GlooCommunicator::Attach(std::shared_ptr<gloo::transport::Device> device,
                              std::shared_ptr<gloo::Context> context,
                              std::chrono::milliseconds timeout) {
  std::lock_guard<std::mutex> lock(abort_mu_);
  device_ = std::move(device);
  context_ = std::move(context);
  transfers_ = std::make_unique<GlooTransfers>(context_, timeout);
  collectives_ = std::make_unique<GlooCollectives>(transfers_.get());
  ring_ = std::make_unique<GlooLegacyAllreducer>(context_, thresholds_.halving_doubling_bytes);
  StartWatch();
}

// How often the watch looks, and how long an op must have run before it does: an op that
// ends sooner was never stuck, and a look (~80 us, GlooSockets::CheckClosed) costs nothing then.
constexpr auto kWatchEvery = std::chrono::milliseconds(250);
constexpr int64_t kWatchAfterNs = 250'000'000;

// A send gloo is writing when its pair fails is never woken: Debian's gloo fails the pair's
// other operations (Pair::signalException) but not an unbound buffer's send already in its
// write queue, and waitSend then waits out the whole timeout (HVD_GLOO_TIMEOUT_SECONDS, 30 s).
// Seen as the root of a chained broadcast whose next rank failed (on the death of the rank
// after it) and reset its connections: the root waited 5 s, the test's timeout, in 2 of 3 runs
// of KilledMiddleOfAChainedBroadcastFailsEveryOtherRank (2026-11-30). So a thread of this
// communicator looks, four times a second, at an op that has run for 250 ms: when a peer's
// connection is closed or reset, it wakes the op's waits with that peer's name (and shuts the
// sockets, for gloo's own algorithms' waits), as Abort() would.
void GlooCommunicator::StartWatch() {
  if (size_ > 1) watch_ = std::thread([this] { Watch(); });
}

void GlooCommunicator::Watch() {
  std::unique_lock<std::mutex> lock(watch_mu_);
  while (!watch_cv_.wait_for(lock, kWatchEvery, [this] { return watch_stop_; })) {
    lock.unlock();
    WatchOnce();
    lock.lock();
  }
}

void GlooCommunicator::WatchOnce() {
  const int64_t since = op_since_ns_.load();
  if (since == 0 || SteadyNs() - since < kWatchAfterNs || aborted_.load()) return;
  // abort_mu_: LearnEndpoints sets the sockets' tables under it, after its own op.
  std::lock_guard<std::mutex> lock(abort_mu_);
  int peer = -1;
  const Status gone = sockets_.CheckClosed(&peer);
  if (gone.ok()) return;
  if (op_since_ns_.load() != since || transfers_ == nullptr) return;  // that op has ended
  HVD_LOG_DEBUG("gloo rank {}: an op of {} ms woken: {}", rank_, (SteadyNs() - since) / 1'000'000,
                gone.message());
  NoteLost(peer);
  transfers_->Fail(gone.message());
  sockets_.Shutdown();
}

// The address each peer published for its pair with this rank, from what connectFullMesh got
// from the store: under key "j", peer j's pair addresses toward every other rank in rank order
// (Address::bytes() each, equal sizes). "" where the value is not that shape (another gloo).
std::vector<std::string> PublishedAddresses(const GlooRecordingStore& store, int rank, int size) {
  std::vector<std::string> names(size);
  for (int j = 0; j < size; ++j) {
    if (j == rank) continue;
    const std::vector<char> all = store.Got(std::to_string(j));
    const size_t each = all.size() / static_cast<size_t>(size - 1);
    if (each == 0 || all.size() % static_cast<size_t>(size - 1) != 0) continue;
    const size_t at = static_cast<size_t>(rank < j ? rank : rank - 1) * each;
    try {
      names[j] = gloo::transport::tcp::Address(
                     std::vector<char>(all.begin() + static_cast<std::ptrdiff_t>(at),
                                       all.begin() + static_cast<std::ptrdiff_t>(at + each)))
                     .str();
    } catch (...) {  // not an address of this gloo: the socket's own ends still name the peer
    }
  }
  return names;
}

Status GlooCommunicator::LearnEndpoints(const GlooRecordingStore& store) {
  // Rank j sends rank i its pair address toward i (unbound buffers: no legacy run yet).
  std::vector<sockaddr_storage> mine = GlooSockets::PairAddresses(*context_), theirs(size_);
  const std::vector<int64_t> bytes(size_, sizeof(sockaddr_storage));
  HVD_RETURN_IF_ERROR(Guard("endpoint exchange", [&] {
    collectives_->Alltoallv(mine.data(), bytes, theirs.data(), bytes);
  }));
  std::lock_guard<std::mutex> lock(abort_mu_);
  sockets_.SetPairAddresses(rank_, std::move(mine), std::move(theirs),
                            PublishedAddresses(store, rank_, size_));
  return Status::OK();
}

std::string GlooCommunicator::What(const std::string& op) const {
  return "gloo " + op + " on rank " + std::to_string(rank_) + " of " + std::to_string(size_);
}

// A failed op can leave receives posted into the caller's buffers: in an allgather or alltoall
// every peer's, of which only the dead peer's failed. shutdown(2) does not stop them: Linux
// still delivers what is queued on a socket after SHUT_RD, and a live peer's data already in
// flight (its send buffer, loopback's or the network's) keeps arriving, so gloo's event loop
// went on writing into memory the caller had freed once the op returned. ASan caught it in the
// pipelined broadcast on 2026-11-30 (KilledMiddleOfAChainedBroadcastFailsEveryOtherRank);
// AbortedOpWritesNothingIntoTheBufferAfterItReturns is its test. Closing every pair from this
// thread ends that: gloo's Pair::close takes the pair's lock (which its event loop holds while
// it reads into a buffer) and Loop::unregisterDescriptor waits for a tick of the loop
// (epoll_wait's 10 ms at most), so once it returns no handler of this context runs again. The
// communicator is broken from here on, so nothing is lost; the close is a reset (gloo sets
// SO_LINGER 0), so a peer may lose what it had not read yet and fail too, as it would anyway.
void GlooCommunicator::DetachPostedTransfers() {
  if (context_ == nullptr) return;
  try {
    context_->closeConnections();
  } catch (const std::exception& e) {
    HVD_LOG_DEBUG("gloo rank {}: closing the connections after a failure: {}", rank_, e.what());
  } catch (...) {
  }
}

template <typename Name, typename Body>
Status GlooCommunicator::GuardNamed(const Name& name, Body&& body) {
  if (aborted_.load()) return Status::Aborted(What(name()) + ": the communicator was aborted");
  if (!broken_.ok()) return broken_.WithContext(What(name()) + ": communicator failed earlier");
  if (size_ == 1) return Status::OK();
  op_since_ns_.store(SteadyNs());
  try {
    GlooSigpipeBlock no_sigpipe;
    body();
    op_since_ns_.store(0);
    return Status::OK();
  } catch (...) {
    op_since_ns_.store(0);
    int peer = -1;
    broken_ =
        GlooExceptionToStatus(std::current_exception(), What(name()), sockets_.peer_names(), &peer);
    NoteLost(peer);
  }
  if (aborted_.load()) broken_ = Status::Aborted(What(name()) + ": the communicator was aborted");
  // Make the peers notice now rather than at their own timeouts.
  std::lock_guard<std::mutex> lock(abort_mu_);
  sockets_.Shutdown();
  DetachPostedTransfers();
  return broken_;
}

Status GlooCommunicator::GatherBytes(const std::string& in, int root,
                                     std::vector<std::string>* out) {
  HVD_RETURN_IF_ERROR(CheckRoot("gather", root));
  if (size_ == 1) {
    out->assign(1, in);
    return Guard("gather", [] {});
  }
  return Guard("gather", [&] { collectives_->GatherBytes(in, root, out); });
}

Status GlooCommunicator::BroadcastBytes(std::string* data, int root) {
  HVD_RETURN_IF_ERROR(CheckRoot("broadcast", root));
  return Guard("broadcast", [&] { collectives_->BroadcastBytes(data, root); });
}

Status GlooCommunicator::BitwiseAnd(std::vector<uint64_t>* bits) {
  if (bits->empty()) return Guard("bitwise and", [] {});
  return Guard("bitwise and",
               [&] { Ring<uint64_t>(bits->data(), bits->size(), GlooBitwiseAnd()); });
}

Status GlooCommunicator::BitwiseOr(std::vector<uint64_t>* bits) {
  if (bits->empty()) return Guard("bitwise or", [] {});
  return Guard("bitwise or", [&] { Ring<uint64_t>(bits->data(), bits->size(), GlooBitwiseOr()); });
}

Status GlooCommunicator::Barrier() {
  return Guard("barrier", [&] { Ring<uint64_t>(&barrier_word_, 1, GlooBitwiseOr()); });
}

template <typename S>
void GlooCommunicator::Ring(S* buffer, size_t count, const gloo::ReductionFunction<S>* fn) {
  // A new legacy instance's first run may have had gloo shrink the send buffers of the pairs
  // it sent on (GlooSockets::WidenSendBuffers). Its later runs send the same messages, which
  // gloo leaves alone, so only a first run needs the fix.
  if (ring_->Run<S>(buffer, count, fn)) sockets_.WidenSendBuffers();
}

void GlooCommunicator::RunLegacy(void* buffer, size_t count, DataType dtype, ReduceOp op) {
  ForStorage(dtype, [&]<typename S>(S) {
    Ring<S>(static_cast<S*>(buffer), count, GlooReductionFor<S>(dtype, op));
  });
}

Status GlooCommunicator::Allreduce(void* buffer, int64_t count, DataType dtype, ReduceOp op) {
  const auto op_name = [&] { return AllreduceOpName(count, dtype, op); };
  HVD_RETURN_IF_ERROR(CheckAllreduceArgs([&] { return What(op_name()); }, buffer, count, op));
  if (count == 0) return GuardNamed(op_name, [] {});
  if (count > INT_MAX) {
    return Status::InvalidArgument(What(op_name()) + ": more than INT_MAX elements per call");
  }
  return GuardNamed(op_name, [&] {
    if (static_cast<size_t>(count) * DataTypeSize(dtype) >= thresholds_.direct_allreduce_bytes &&
        count >= size_) {
      RunDirect(buffer, static_cast<size_t>(count), dtype, op);
    } else {
      RunLegacy(buffer, static_cast<size_t>(count), dtype, op);
    }
  });
}

void GlooCommunicator::RunDirect(void* buffer, size_t count, DataType dtype, ReduceOp op) {
  // Rank r reduces slice r (the first count % size slices one element longer), then every
  // rank gathers every slice: each element is reduced on one rank, so every rank ends with the
  // same bits.
  const size_t elem = DataTypeSize(dtype);
  direct_counts_.resize(size_);
  direct_bytes_.resize(size_);
  size_t offset = 0;
  for (int r = 0; r < size_; ++r) {
    const size_t n = count / size_ + (static_cast<size_t>(r) < count % size_ ? 1 : 0);
    if (r < rank_) offset += n;
    direct_counts_[r] = static_cast<int64_t>(n);
    direct_bytes_[r] = static_cast<int64_t>(n * elem);
  }
  char* own = static_cast<char*>(buffer) + offset * elem;
  const DirectReduction reduction = DirectReductionFor(dtype, op);
  collectives_->ReduceScatter(buffer, own, direct_counts_, elem, reduction.reduce, reduction.fn);
  collectives_->Allgatherv(own, buffer, direct_bytes_);
}

Status GlooCommunicator::Allgatherv(const void* in, void* out,
                                    const std::vector<int64_t>& bytes_per_rank) {
  HVD_RETURN_IF_ERROR(CheckPerRank("allgather", bytes_per_rank));
  if (size_ == 1 && bytes_per_rank[0] > 0 && in != out) {
    std::memmove(out, in, static_cast<size_t>(bytes_per_rank[0]));
  }
  return Guard("allgather", [&] { collectives_->Allgatherv(in, out, bytes_per_rank); });
}

Status GlooCommunicator::Broadcast(void* buffer, int64_t bytes, int root) {
  HVD_RETURN_IF_ERROR(CheckRoot("broadcast", root));
  if (bytes < 0) return Status::InvalidArgument(What("broadcast") + ": negative size");
  return Guard("broadcast",
               [&] { collectives_->Broadcast(buffer, static_cast<size_t>(bytes), root); });
}

Status GlooCommunicator::Alltoallv(const void* in, const std::vector<int64_t>& send_bytes,
                                   void* out, const std::vector<int64_t>& recv_bytes) {
  HVD_RETURN_IF_ERROR(CheckPerRank("alltoall", send_bytes));
  HVD_RETURN_IF_ERROR(CheckPerRank("alltoall", recv_bytes));
  if (size_ == 1 && send_bytes[0] > 0 && in != out) {
    std::memmove(out, in, static_cast<size_t>(std::min(send_bytes[0], recv_bytes[0])));
  }
  return Guard("alltoall", [&] { collectives_->Alltoallv(in, send_bytes, out, recv_bytes); });
}

Status GlooCommunicator::ReduceScatter(const void* in, void* out,
                                       const std::vector<int64_t>& counts_per_rank, DataType dtype,
                                       ReduceOp op) {
  HVD_RETURN_IF_ERROR(CheckPerRank("reducescatter", counts_per_rank));
  if (op == ReduceOp::kAdasum) {
    return Status::Unimplemented(What("reducescatter") + ": Adasum is not elementwise");
  }
  if (size_ == 1 && counts_per_rank[0] > 0 && in != out) {
    std::memmove(out, in, static_cast<size_t>(counts_per_rank[0]) * DataTypeSize(dtype));
  }
  const size_t elem = DataTypeSize(dtype);
  int64_t total = 0, offset = 0;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) offset = total;
    total += counts_per_rank[r];
  }
  if (total > INT_MAX) {
    return Status::InvalidArgument(What("reducescatter") + ": more than INT_MAX elements");
  }
  const auto op_name = [&] {
    return std::string("reducescatter (") + DataTypeName(dtype) + " " + ReduceOpName(op) + ")";
  };
  return GuardNamed(op_name, [&] {
    const size_t bytes = static_cast<size_t>(total) * elem;
    const size_t mine = static_cast<size_t>(counts_per_rank[rank_]) * elem;
    const auto copy_of_in = [&] {
      if (reduce_scatter_scratch_.size() < bytes) reduce_scatter_scratch_.resize(bytes);
      if (bytes > 0) std::memcpy(reduce_scatter_scratch_.data(), in, bytes);
      return reduce_scatter_scratch_.data();
    };
    if (bytes < thresholds_.direct_reduce_scatter_bytes) {
      // Small: a legacy allreduce on a scratch copy, then this rank's slice (gloo's legacy
      // reduce-scatter is not shipped; the pairwise exchange costs more per message).
      char* reduced = copy_of_in();
      RunLegacy(reduced, static_cast<size_t>(total), dtype, op);
      if (mine > 0) std::memcpy(out, reduced + offset * elem, mine);
      return;
    }
    // The sends read `in` while this rank reduces into `out`: an `out` over any part of `in`
    // but this rank's own slice takes a copy of `in` first.
    const void* src = in;
    const auto at = [](const void* p) { return reinterpret_cast<uintptr_t>(p); };
    if (mine > 0 && at(out) != at(in) + offset * elem && at(out) < at(in) + bytes &&
        at(in) < at(out) + mine) {
      src = copy_of_in();
    }
    const DirectReduction reduction = DirectReductionFor(dtype, op);
    collectives_->ReduceScatter(src, out, counts_per_rank, elem, reduction.reduce, reduction.fn);
  });
}

Status GlooCommunicator::CheckPeers() {
  if (aborted_.load())
    return Status::Aborted(What("peer check") + ": the communicator was aborted");
  if (!broken_.ok()) return broken_;
  if (size_ == 1) return Status::OK();
  int peer = -1;
  Status status = sockets_.CheckClosed(&peer);
  NoteLost(peer);
  return status;
}

void GlooCommunicator::NoteLost(int peer) {
  if (!aborted_.load()) lost_.Note(peer);
}

void GlooCommunicator::Abort() {
  aborted_.store(true);
  std::lock_guard<std::mutex> lock(abort_mu_);
  if (transfers_) transfers_->Abort();
  sockets_.Shutdown();
}

Status CheckOptions(const GlooOptions& o) {
  if (o.size < 1 || o.rank < 0 || o.rank >= o.size) {
    return Status::InvalidArgument("gloo: rank " + std::to_string(o.rank) + " / size " +
                                   std::to_string(o.size) + " is not a valid group position");
  }
  if (o.timeout.count() <= 0) return Status::InvalidArgument("gloo: timeout must be positive");
  if (o.size > 1 && o.kv == nullptr && o.store == nullptr) {
    return Status::InvalidArgument("gloo: a group of " + std::to_string(o.size) +
                                   " needs a rendezvous client");
  }
  if (o.size > 1 && o.scope.empty()) return Status::InvalidArgument("gloo: empty scope");
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<Communicator>> CreateGlooCommunicator(const GlooOptions& options) {
  HVD_RETURN_IF_ERROR(CheckOptions(options));
  auto comm = std::make_unique<GlooCommunicator>(options.rank, options.size, options.thresholds);
  if (options.size == 1) return std::unique_ptr<Communicator>(std::move(comm));

  // The device starts gloo's event loop, which keeps the block (GlooSigpipeBlock).
  GlooSigpipeBlock no_sigpipe;
  const std::string what = "gloo rendezvous of scope '" + options.scope + "' as rank " +
                           std::to_string(options.rank) + " of " + std::to_string(options.size);
  std::shared_ptr<gloo::transport::Device> device;
  try {
    gloo::transport::tcp::attr attr;
    if (options.iface.empty()) {
      attr.hostname = "127.0.0.1";
    } else {
      attr.iface = options.iface;
    }
    device = gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    return Status::InvalidArgument(what + ": cannot use interface '" +
                                   (options.iface.empty() ? "127.0.0.1" : options.iface) +
                                   "': " + e.what());
  }
  auto context = std::make_shared<gloo::rendezvous::Context>(options.rank, options.size);
  context->setTimeout(options.timeout);
  std::optional<GlooKvStore> kv_store;
  if (options.store == nullptr) kv_store.emplace(options.kv, options.scope, options.timeout);
  GlooRecordingStore store(options.store ? options.store : &*kv_store);
  try {
    context->connectFullMesh(store, device);
  } catch (...) {
    Status from_store = kv_store ? kv_store->first_error() : Status::OK();
    if (!from_store.ok()) return from_store.WithContext(what);
    Status status = GlooExceptionToStatus(std::current_exception(), what, {});
    return status.code() == StatusCode::kRemoteError ? Status::IoError(status.message()) : status;
  }
  // Every rank has read every address once it is connected; let the server drop the keys.
  if (kv_store) {
    Status finished = options.kv->FinishScope(options.scope + "/", options.size);
    if (!finished.ok()) HVD_LOG_DEBUG("{}: cleanup: {}", what, finished.ToString());
  }
  comm->Attach(std::move(device), std::move(context), options.timeout);
  HVD_RETURN_IF_ERROR(comm->LearnEndpoints(store));
  return std::unique_ptr<Communicator>(std::move(comm));
}

}  // namespace hvd::runtime
