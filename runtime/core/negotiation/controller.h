#ifndef HVD_RUNTIME_CORE_NEGOTIATION_CONTROLLER_H_
#define HVD_RUNTIME_CORE_NEGOTIATION_CONTROLLER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "runtime/core/execution/op_executor.h"
#include "runtime/core/handle_manager.h"
#include "runtime/core/negotiation/coordinator.h"
#include "runtime/core/negotiation/fusion_planner.h"
#include "runtime/core/negotiation/response_cache.h"
#include "runtime/core/negotiation/stall_inspector.h"
#include "runtime/core/reuse_vector.h"
#include "runtime/core/runtime_timeline.h"
#include "runtime/core/tensor_queue.h"
#include "runtime/runtime_config.h"
#include "runtime/transports/communicator.h"

namespace hvd::runtime {

// Callbacks the global set's controller makes when a negotiated add/remove_process_set
// completes (on every rank at the same point of the same cycle).
class ProcessSetHooks {
 public:
  virtual ~ProcessSetHooks() = default;
  virtual Result<int32_t> AddProcessSet(const std::vector<int32_t>& ranks) = 0;
  virtual Status RemoveProcessSet(int32_t id) = 0;
};

// What one cycle learned, for the runtime's pacing and shutdown decisions.
struct CycleResult {
  bool progress = false;      // executed at least one response
  bool any_pending = false;   // some member has work in flight
  bool all_pending = false;   // every member has work in flight
  bool mine_pending = false;  // this rank has work in flight
  bool shutdown = false;      // the set agreed to shut down
  std::string shutdown_reason;
  std::vector<int32_t> shutdown_ranks;  // the members that asked for it (global set: ranks)
  // Rank 0 of the set: the global ranks its stall inspector just named for the first time
  // (StallInspector::TakeNewlyMissing), whose stacks hvdrun is asked for.
  std::vector<int32_t> stalled_ranks;
  std::vector<Response> executed;  // data responses run, when set_report_executed(true)
};

// Controller negotiates and executes the collectives of one process set on this rank.
//
// Cycle protocol (every member runs RunCycle the same number of times, in lockstep, because
// each cycle is a sequence of collectives on the set's communicator):
//  1. Requests enqueued since the last cycle join the waiting list. Each is classified
//     against the response cache: HIT (same name and parameters), INVALID (same name,
//     different parameters) or MISS; barrier, join and process-set ops are never cached. A
//     group goes to rank 0 whole: a member that is not a HIT makes its mates' HITs INVALID.
//  2. BitwiseAnd over [status word | one bit per cache entry, up to the highest bit the cache
//     has used (ResponseCache::words_in_use, alike on every rank)]. The status word holds
//     inverted flags (shutdown requested, uncached request queued, invalid entry seen,
//     something pending, a rank has joined) so AND computes "any rank"; plus "I have pending"
//     so AND computes "every rank". Cache bits set on every rank are the common hits.
//  3. If any rank saw INVALID: BitwiseOr of the invalid bits; every rank erases those entries
//     (hits on them are re-sent uncached next cycle), so bit positions stay identical.
//  4. Fast path (no uncached request, no shutdown, no joined rank anywhere): every rank
//     builds the responses of the common hits in bit order, fuses them and executes. No rank
//     0 round trip.
//  5. Slow path: every rank sends its uncached requests (all requests once a rank has joined)
//     with GatherBytes to set rank 0. Rank 0 records them in its Coordinator, validates the
//     ready ones (Horovod's checks), prepends the common hits, fuses, runs the stall inspector
//     and BroadcastBytes the ResponseList (with the shutdown flag). Every rank then puts the
//     per-tensor responses into its cache in list order (skipped while a rank has joined)
//     and executes the list in order.
// Non-common hits stay waiting; a hit waiting longer than the stall check time is re-sent
// uncached so the stall inspector can name the missing ranks.
//
// Eager (HVD_EAGER_ALLREDUCE_BYTES; transports whose ands_with_allreduce() is true: hvd's TCP,
// also under the hierarchical communicator; and shared memory from 3 members, below): a lone small
// allreduce waited on before the next (a metric, a loss, a synchronous benchmark, 100 gradients
// waited on one by one) would cost two rounds per op, the AND of step 2 and then its own allreduce.
// Every member notes, per cache bit, which lone op followed it (a fast-path cycle that executed
// exactly one response, a single-tensor op), and counts a successor as known once it followed the
// same bit twice in a row; likewise for cycles that executed several tensors (one more slot,
// "several": a loss after each step's fused gradients). After a slot whose known successor b is a
// CPU allreduce up to that size, every member knows (same state everywhere) that the next cycles
// are "eager for b": each appends b's elements to the AND round's words -- its input prescaled when
// b is one of its hits, zeros otherwise -- and the communicator ANDs the words and reduces the tail
// with b's op in one collective. If b is a common hit of a fast-path cycle, every member
// contributed its real input: b completes from the reduced tail (postscale, timeline, handle)
// without an allreduce of its own. Otherwise the tail is dropped and b runs as usual. A cycle
// that executes something moves the eager state to that slot's successor; the slow path, a
// retune, or a cycle in which no member has anything pending ends it; cycles in which some
// member waits for the others keep it. Every member's words have the same length, since b's
// size comes from the shared cache.
// Transports whose posts_inputs() is true (shared memory from 3 members, hvd's TCP, the
// hierarchical communicator through its flat TCP group) take any single-tensor CPU collective as
// b (allreduce, allgather, broadcast, reducescatter, an even alltoall of equal tensors;
// EagerInputBytes): each member posts its input to b with its words (BitwiseAndPostingInput,
// with what every member posts, PostedBytes), and a common b runs its ordinary executor code
// against posted_inputs(), which computes the result from the posted inputs without a round. A
// transport that has both (TCP) keeps the reduced tail for an allreduce (Agree picks per op). A
// broadcast or allgather (which posts nothing beyond what it moves) may be up to the limit times
// the communicator's posted_copy_factor() (shared memory: the ranks sharing each CPU; at most
// Communicator::kMaxPostedCopyFactor), and so may any op where the surplus is never read
// (posting_costs_a_copy(): shared memory); a posted
// allreduce past shared memory's direct size is finished in one round of slices
// (PostedSource::slices_allreduce) instead of every member reducing all inputs. An op that
// would post more than the communicator's PostedSurplusLimit beyond what it moves
// (PostedSurplusBytes: an alltoall's or reducescatter's whole input to every member) is not
// eager that way; neither is one over the limit. Such an alltoall or reducescatter still rides
// where the transport posts pieces (posts_pieces(): hvd's TCP) and its largest piece is within
// the limit: each member sends each member only that member's piece of its input with its words
// (BitwiseAndPostingPieces; the pieces from the cached request's shape, PostedPieces).
// So does any small one where the transport's pieces take the same exchange as whole inputs
// (pieces_first(): hvd's TCP with 2 members or a group whose size is not a power of two).
// A reducescatter rides only where the communicator's own reduce-scatter of its segments
// reduces in rank order as posted inputs do (reduces_segments_in_rank_order: shared memory,
// TCP's direct exchange; not TCP's ring, not the hierarchy), so its bits never depend on
// whether it rode (docs/eager.md "The same bits on either path").
// EagerEligible decides which (eager_pieces_), the same on every member. An OR round in the
// same cycle ends the posting round, so b then runs as an ordinary hit.
//
// Timeline (global rank 0 only, `timeline` non-null): the coordinator records NEGOTIATE_<OP>
// start when it first hears of a tensor, a tick per rank as each request arrives, and the
// end when the tensor is ready; a common cache hit records start and end together (nothing
// else is seen of it). Join responses get a JOIN span; the executor records the other ops.
//
// Threading: RunCycle/FailAll run on the runtime's background thread; queue() is
// thread-safe for enqueuing framework threads; communicator()->Abort() may be called from any
// thread.
class Controller {
 public:
  Controller(int32_t set_id, std::vector<int32_t> global_ranks, int32_t my_global_rank,
             std::unique_ptr<Communicator> comm, const RuntimeConfig& config,
             HandleManager* handles, OpExecutor* executor, ProcessSetHooks* hooks,
             RuntimeTimeline* timeline = nullptr);

  int32_t id() const { return id_; }
  const std::vector<int32_t>& ranks() const { return ranks_; }
  int set_rank() const { return comm_->rank(); }
  int set_size() const { return comm_->size(); }
  Communicator* communicator() { return comm_.get(); }
  TensorQueue& queue() { return *queue_; }
  // The queue, shared with the handles that reserve names in it (HandleManager::Create).
  const std::shared_ptr<TensorQueue>& shared_queue() const { return queue_; }
  const ResponseCache& cache() const { return cache_; }
  const StallInspector* stall_inspector() const { return stall_.get(); }

  // One negotiation + execution cycle. A non-OK status is a communicator failure; the
  // caller must then FailAll and stop using this controller.
  // `shutdown_reason`: why this member asks to stop when it is not its own hvd_shutdown (another
  // process set's stall verdict, which only that set's members saw), carried to every member.
  Result<CycleResult> RunCycle(bool request_shutdown, const std::string& shutdown_reason = {});
  // Completes every in-flight entry of this rank with `status`.
  void FailAll(const Status& status);
  // Before a shutdown every member agreed on (or a set's removal): the GPU completions handed
  // off the cycle (GpuGroup::Drain) finish as the waiting cycle's would; only then FailAll.
  void DrainDeferred();
  // Autotune: new fusion threshold and cache switch. Every member must apply the same values
  // between the same two cycles (the cache bits must stay identical); switching the cache
  // empties it. Background thread.
  void ApplyTuning(int64_t fusion_threshold_bytes, bool cache_enabled);
  // Autotune (rank 0): copy the executed responses into CycleResult::executed.
  void set_report_executed(bool on) { report_executed_ = on; }

 private:
  struct Waiting {
    const Request* request;  // in queue_'s table until released (tensor_queue.h)
    std::chrono::steady_clock::time_point since;
    uint32_t bit = 0;  // its cache bit: after Classify every waiting request is a hit
  };

  // Fills to_send_, hit_bits_ and invalid_bits_.
  void Classify(std::chrono::steady_clock::time_point now);
  // Turns the cache hits of every group with a member that is not a hit into invalid entries.
  void InvalidateBrokenGroups();
  // The AND (and when needed OR) rounds; returns the agreed status word, common_ the bits.
  Result<uint64_t> Agree(bool request_shutdown);
  // Fills hits_ (and hit_list_) with the cached responses of the common bits, in bit order.
  void TakeCommonHits();
  // Whether cache bit `bit` may ride the next cycles' AND round (see "Eager" above). May run a
  // collective (Communicator::PostedSurplusLimit): every member asks at the same point.
  Result<bool> EagerEligible(uint32_t bit);
  // After a fast-path cycle that executed `executed` responses (`lone`: the eager one's bit, or
  // kNoEager): sets eager_bit_ for the next cycle.
  Status LearnEager(size_t executed, uint32_t lone, bool any_pending);
  // Notes that a fast-path cycle executed the cache bit `slot` alone, or several tensors
  // (SeveralSlot()), after last_lone_; returns the bit to be eager for next (kNoEager: none).
  Result<uint32_t> NoteLone(uint32_t slot);
  static constexpr uint32_t SeveralSlot() { return UINT32_MAX - 1; }  // never a cache bit
  // The successor record of `slot` (a bit the cache has made, or SeveralSlot()); null
  // otherwise (kNoEager).
  struct Successor;
  Successor* SuccessorOf(uint32_t slot);
  Result<ResponseList> Negotiate(bool request_shutdown, const std::string& shutdown_reason);
  void LogNegotiated(const ResponseList& list) const;
  ResponseList CoordinateLocked(const std::vector<std::string>& lists);
  // `reduced`: the eager allreduce's reduced tail; `via`: the communicator of the posted
  // inputs (one response each; see "Eager" above).
  Status Process(std::span<const Response> responses, bool put_in_cache, CycleResult* result,
                 const void* reduced = nullptr, Communicator* via = nullptr);
  // The AND round posting this member's input to the eager response (eager_posted_).
  Status PostEager(const Response& eager);
  // The largest input any member gives `r` riding the AND round (bytes, from the response
  // alone, so the same on every member); -1 when `r` cannot ride it (posting takes every
  // single-tensor CPU collective but a split alltoall; the reduced tail, allreduces only).
  static int64_t EagerInputBytes(const Response& r);
  // What each of the `members` members posts for `r` (Communicator::BitwiseAndPostingInput's
  // list, from the response alone, the same on every member), for an `r` EagerInputBytes
  // takes.
  static void PostedBytes(const Response& r, int members, std::vector<int64_t>* out);
  // The bytes each member posts for `r` beyond what the op moves to the others (bounded by
  // Communicator::PostedSurplusLimit): an alltoall, reducescatter or allreduce posts its
  // whole input to each of the other members, which use 1/members of it; 0 for an allgather or
  // a broadcast, whose members use all they get.
  static int64_t PostedSurplusBytes(const Response& r, int members);
  // What a member posts to each of the `members` members for `r`, an alltoall or reducescatter
  // posted piece by piece (Communicator::BitwiseAndPostingPieces): the pieces its input is cut
  // into, from `params` (the cached request, whose shape is every member's).
  static void PostedPieces(const Response& r, const Request& params, int members,
                           std::vector<int64_t>* out);
  Status ProcessControl(const Response& response);
  void PutInCache(const Response& response);
  void PutEachInCache(const Response& response);  // PutInCache's Put of each tensor
  bool MinePending() const;
  bool Recording() const { return timeline_ != nullptr && timeline_->on(); }

  int32_t id_;
  std::vector<int32_t> ranks_;
  std::unique_ptr<Communicator> comm_;
  GpuSetState gpu_;  // this set's NCCL group, made at its first GPU op
  RuntimeConfig config_;
  HandleManager* handles_;
  OpExecutor* executor_;
  ProcessSetHooks* hooks_;
  RuntimeTimeline* timeline_;  // null unless this is global rank 0
  FusionOptions fusion_;
  std::shared_ptr<TensorQueue> queue_ = std::make_shared<TensorQueue>();
  ResponseCache cache_;
  std::unique_ptr<Coordinator> coordinator_;  // set rank 0 only
  std::unique_ptr<StallInspector> stall_;     // set rank 0 only
  std::vector<Waiting> waiting_;
  // Per-cycle scratch, kept between cycles so a steady-state cycle allocates nothing.
  std::vector<const Request*> fresh_;
  std::vector<const Request*> to_send_;
  std::vector<std::pair<ResponseCache::State, uint32_t>> lookups_;  // per waiting_ entry
  std::vector<uint64_t> hit_bits_, invalid_bits_, agree_bits_, common_;
  // The common cache hits of this cycle: the cache's own entries, valid until the cache
  // changes (Process puts new ones in only after the hits were planned or sent).
  std::vector<const Response*> hits_;
  std::vector<uint32_t> hit_list_;  // hits_' cache bits
  // Eager: the cache bit whose data rides the AND round (kNoEager: none), and whether this
  // cycle's round carried it.
  static constexpr uint32_t kNoEager = UINT32_MAX;
  uint32_t eager_bit_ = kNoEager;
  // The slot (cache bit, or SeveralSlot()) of the last fast-path cycle that executed anything.
  uint32_t last_lone_ = kNoEager;
  // By slot: the slot that followed it last, and whether the time before too.
  struct Successor {
    uint32_t bit = kNoEager;
    bool confirmed = false;
  };
  std::vector<Successor> next_lone_;  // by bit, grown with the cache's bits (PutInCache)
  Successor several_next_;            // SeveralSlot()'s
  bool eager_sent_ = false;
  std::vector<char> eager_input_;      // PostEager: a prescaled copy of the input; grown only
  std::vector<int64_t> posted_bytes_;  // PostEager: what each member posts
  // This cycle's eager op rides by posting its inputs (else the reduced tail).
  bool eager_posted_ = false;
  // eager_bit_ posts piece by piece (EagerEligible's verdict; the same on every member), and
  // its pieces (PostedPieces), set together with eager_bit_ and valid while it is: the cache
  // entry they come from changes only on the slow path, which disarms eager_bit_.
  bool eager_pieces_ = false;
  std::vector<int64_t> piece_bytes_;
  ReuseVector<Response> fused_;  // hits_ after fusion (fast path)
  FusionScratch fusion_scratch_;
  // The entries of the response being run (null: none on this rank), valid until their
  // handles are released, which is after FinishParts.
  std::vector<TensorEntry*> entries_;
  std::vector<int64_t> finished_;  // their handles, completed after recycling
  std::string stall_reason_;
  bool joined_ = false;  // this rank's join is in flight
  bool cache_enabled_ = true;
  bool report_executed_ = false;
  int words_ = 0;  // this cycle's ResponseCache::words_in_use()
  // The communicator posts inputs with the AND round (Communicator::posts_inputs).
  const bool posts_;
  // ... and can post an alltoall's or reducescatter's pieces (Communicator::posts_pieces).
  const bool posts_pieces_;
  // ... even where it could post whole inputs (Communicator::pieces_first).
  const bool pieces_first_;
  // The communicator reduces a tail with the AND round (Communicator::ands_with_allreduce).
  const bool ands_;
  // Whether an op can ever be eager here (EagerEligible's fixed conditions).
  const bool eager_capable_;
};

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_CORE_NEGOTIATION_CONTROLLER_H_
