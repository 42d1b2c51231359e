#ifndef HVD_RUNTIME_CORE_RUNTIME_H_
#define HVD_RUNTIME_CORE_RUNTIME_H_

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/status.h"
#include "runtime/core/autotuner.h"
#include "runtime/core/execution/fusion_buffer.h"
#include "runtime/core/execution/op_executor.h"
#include "runtime/core/handle_manager.h"
#include "runtime/core/negotiation/controller.h"
#include "runtime/core/process_set.h"
#include "runtime/core/runtime_timeline.h"
#include "runtime/core/tensor_shape.h"
#include "runtime/runtime_config.h"
#include "runtime/transports/backend_registry.h"

namespace hvd::runtime {

// A caller's tensor: dense row-major host (or device) memory.
struct TensorSpec {
  void* data = nullptr;
  DataType dtype = DataType::kFloat32;
  TensorShape shape;
  int32_t device = -1;
};

struct OpOptions {
  std::string name;  // "" = generated "<op>.noname.<n>" (must then be called in the same order)
  ReduceOp reduce_op = ReduceOp::kSum;
  double prescale = 1.0;
  double postscale = 1.0;
  int32_t root_rank = 0;  // broadcast: global rank
  int32_t process_set_id = 0;
  bool has_splits = false;
  std::vector<int32_t> splits;  // alltoall
  void* stream = nullptr;       // GPU tensors: the producer's CUDA stream (null = default)
  bool wait_now = false;        // the caller waits on the handle at once (hvd_op_options_t)
};

struct Topology {
  int32_t rank = 0, size = 1, local_rank = 0, local_size = 1, cross_rank = 0, cross_size = 1;
  bool homogeneous = true;
};

// Runtime is one rank's collective runtime: Init rendezvouses and starts ONE background
// thread; Enqueue* validate and queue a tensor and return a handle at once; the background
// thread runs one coordination cycle per process set (controller.h) whenever work was
// enqueued, or at a backed-off interval otherwise, so idle ranks still join their peers'
// cycles (pacing in runtime.cc). A communicator failure (dead peer, timeout, abort) fails
// every in-flight handle with that status and leaves the runtime shut down: later enqueues
// fail with Horovod's shut-down message until Shutdown() and a new Init().
//
// There are no process globals: tests run several Runtime objects as ranks in one process,
// injecting a ProviderFactory. Thread-safe: any thread may call any method; Init/Shutdown/
// Abort are serialized against each other.
class Runtime {
 public:
  explicit Runtime(ProviderFactory factory = CreateDefaultProvider);
  // With this GPU backend instead of CreateGpuBackend()'s (tests: a fake that counts events).
  Runtime(ProviderFactory factory, std::unique_ptr<GpuBackend> gpu);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // No-op when already running. `process_sets` are registered as ids 1..n on every rank.
  Status Init(const RuntimeConfig& config,
              const std::vector<std::vector<int32_t>>& process_sets = {});
  // Agrees with the peers to stop (their pending ops fail too), joins the background thread
  // and fails whatever is left with kAborted. Re-Init afterwards is supported.
  Status Shutdown();
  // Fails everything in flight now with kAborted(reason) and aborts the communicators, which
  // breaks the peers' collectives. Shutdown() is still needed before a re-Init.
  Status Abort(const std::string& reason);
  // Tells hvdrun that this rank is failing on its own (`text`: what failed, e.g. the uncaught
  // exception's type and message, cut to 1000 bytes), before its exit shuts the runtime down and
  // fails its peers: hvdrun's failure summary then names this rank first (common/kv_messages.h
  // kFailureReportPrefix). OK without anyone to tell (MPI, a single rank).
  Status ReportFailure(const std::string& text);
  bool initialized() const;

  Result<Topology> topology() const;
  uint32_t enabled_flags() const;

  // The span forms are the C API's (no allocation on the caller's side); the vector forms
  // are conveniences for C++ callers and tests.
  Result<int64_t> EnqueueAllreduce(std::span<const TensorSpec> inputs,
                                   std::span<const TensorSpec> outputs, const OpOptions& options,
                                   bool grouped);
  Result<int64_t> EnqueueAllreduce(const std::vector<TensorSpec>& inputs,
                                   const std::vector<TensorSpec>& outputs, const OpOptions& options,
                                   bool grouped) {
    return EnqueueAllreduce(std::span<const TensorSpec>(inputs),
                            std::span<const TensorSpec>(outputs), options, grouped);
  }
  Result<int64_t> EnqueueAllgather(std::span<const TensorSpec> inputs, const OpOptions& options,
                                   bool grouped);
  Result<int64_t> EnqueueAllgather(const std::vector<TensorSpec>& inputs, const OpOptions& options,
                                   bool grouped) {
    return EnqueueAllgather(std::span<const TensorSpec>(inputs), options, grouped);
  }
  Result<int64_t> EnqueueBroadcast(const TensorSpec& input, const TensorSpec& output,
                                   const OpOptions& options);
  Result<int64_t> EnqueueAlltoall(const TensorSpec& input, const OpOptions& options);
  Result<int64_t> EnqueueReducescatter(std::span<const TensorSpec> inputs, const OpOptions& options,
                                       bool grouped);
  Result<int64_t> EnqueueReducescatter(const std::vector<TensorSpec>& inputs,
                                       const OpOptions& options, bool grouped) {
    return EnqueueReducescatter(std::span<const TensorSpec>(inputs), options, grouped);
  }
  Result<int64_t> EnqueueBarrier(int32_t process_set_id);
  Result<int64_t> EnqueueJoin(int32_t device);

  // Blocking; every rank must make the same calls in the same order.
  Result<int32_t> AddProcessSet(std::vector<int32_t> ranks);
  Status RemoveProcessSet(int32_t id);
  Result<std::vector<int32_t>> ProcessSetRanks(int32_t id) const;
  Result<std::vector<int32_t>> ProcessSetIds() const;

  // hvd.start_timeline / stop_timeline: NotInitialized before Init; PreconditionFailed unless
  // HVD_TIMELINE was set at init (a path, or DYNAMIC for API-only). Only global rank 0
  // writes; on the other ranks both succeed and do nothing, except in all-ranks mode where
  // they start/stop collecting this rank's events for rank 0's file. Start while running
  // switches to the new file.
  Status StartTimeline(const std::string& path, bool mark_cycles);
  Status StopTimeline();

  // The fusion threshold, cycle time and cache switch in force (autotune changes them on
  // every rank in the same iteration), and whether tuning is still running.
  TunedKnobs tuned_knobs() const;
  bool autotuning() const;

  HandleManager& handles() { return handles_; }
  // hvd_wait: waits until `handle` completes or `timeout` passes (negative: no limit), with
  // HandleManager::Wait's results. While it waits, the calling thread runs the background
  // loop's iterations itself whenever no other thread is running one (see "Who runs the
  // cycles" in runtime.cc): a synchronous op then costs no hand-off to the background thread
  // and back. An iteration the caller runs is not cut short at `timeout`: the call returns
  // when it ends, which a peer that stopped answering delays up to the communicators'
  // timeout (HVD_GLOO_TIMEOUT_SECONDS; the iteration then fails the runtime, as it would on
  // the background thread). kNotFound for an unknown handle.
  Status Wait(int64_t handle, std::chrono::duration<double> timeout);
  // Whether the handle has completed (HandleManager::Poll). A caller that polls is waiting:
  // like Wait, an unfinished poll ends the hold on an asynchronous batch (hold_).
  Result<bool> Poll(int64_t handle);
  // Releases a completed handle (HandleManager::Release) and frees the tensor names it kept
  // reserved in its process set's queue: only now may another op use them.
  Status ReleaseHandle(int64_t handle);
  // Fusion-buffer (re)allocations so far (steady state must not add any).
  int64_t fusion_allocations();

 private:
  enum class State { kStopped, kRunning, kShutDown };
  class Hooks;
  friend class Hooks;

  Status StartLocked(const RuntimeConfig& config,
                     const std::vector<std::vector<int32_t>>& process_sets);
  Result<std::shared_ptr<Controller>> MakeController(int32_t id, std::vector<int32_t> ranks);
  // runtime_start.cc
  Status CheckSameEverywhere(Communicator* comm,
                             const std::vector<std::vector<int32_t>>& process_sets);
  void PinBackgroundThread();  // HVD_THREAD_AFFINITY, on thread_ once it exists
  void StopLocked();
  void Loop();
  // One iteration of the loop (every process set's cycle, timeline shipment, autotune sync),
  // run with cycle_mu_ held by whichever thread holds it. False when the loop must stop: the
  // runtime failed or shut down (the handles are failed by then).
  bool IterateLocked(bool request_shutdown, CycleResult* total);
  // Marks the loop ended (no more iterations) and lets go of the sets' controllers. Under
  // cycle_mu_.
  void StopIterations();
  // Runs one iteration in the calling thread if no other thread is running one and the loop
  // still runs: kRan if it did, kBusy while another thread runs one, kNotAllowed when callers
  // may not drive (any more): the loop stopped or is stopping.
  // kRanIdle: ran one that found nothing to do but GPU completions off the cycle
  // (OpExecutor::deferred_in_flight).
  enum class Drive { kRan, kRanIdle, kBusy, kNotAllowed };
  Drive TryDrive();
  // Whether a waiting caller may run iterations at all (see callers_drive_).
  bool CallersMayDrive() const { return callers_drive_.load(std::memory_order_relaxed); }
  // Wakes the background thread if an enqueue left work for it without waking it, and ends
  // the hold on an asynchronous batch (a caller now waits for it).
  void WakeLoopIfPending();
  // After a caller ran iterations: wakes the background thread if this rank still has work
  // in flight.
  void HandBack();
  Status RunIteration(bool request_shutdown, CycleResult* total);
  std::chrono::microseconds NextInterval(const CycleResult& r, std::chrono::microseconds prev);
  void FailEverything(const Status& status);
  // What an op gets once the runtime has shut down: the agreed shutdown's own message (naming
  // who shut down) where that is why it stopped, Horovod's plain message otherwise. state_mu_.
  Status ShutDownStatusLocked() const;
  // A bystander of an agreed shutdown (not among the ranks that `asked`) tells hvdrun which
  // rank it was (control::kShutdownCausePrefix). Background thread.
  void ReportShutdownCause(std::span<const int32_t> asked);
  // After this rank's collectives failed on a peer's loss (Communicator::lost_member), tells
  // hvdrun which rank that was, as ReportShutdownCause does for a shutdown: hvdrun then names
  // that rank as the first failure even when this rank's exit reaches it first (a SIGKILLed
  // rank on another host, whose hvd-agent's news travels further). Background thread.
  void ReportLostMember();
  // What both write: `cause` under control::ShutdownCauseKey(round, this rank); nothing once this
  // rank reported its own failure (failure_reported_): a peer's shutdown or loss that reaches it
  // after that did not end it. (hvdrun would otherwise wait for that peer and, should it fail
  // too, name it first and this rank "failed by that".)
  void ReportCause(int32_t cause);
  // Asks hvdrun for the Python stacks of `ranks` (control::kStackRequestKey): the ranks a set's
  // stall inspector found missing. The thread running the cycle.
  void RequestStacks(std::span<const int32_t> ranks);
  void StopOnError(const Status& status);
  Status SyncAutotune(const CycleResult& total);
  Status AlignTimelineClocks(Communicator* comm);
  Status ShipTimeline();
  void ApplyTuning(const TunedKnobs& knobs);
  Result<int32_t> AddProcessSetNow(const std::vector<int32_t>& ranks);
  Status RemoveProcessSetNow(int32_t id);

  Result<std::shared_ptr<Controller>> ControllerFor(int32_t process_set_id) const;
  Status MarkDevice(TensorEntry* e, const TensorSpec& in, const TensorSpec* out,
                    const OpOptions& o);
  Result<int64_t> SubmitControl(Request request);
  // An unnamed op's number in its process set's count: taken (Taken) only once the op is
  // queued, so an enqueue refused here (bad arguments) takes none and the members' counts stay
  // in step (generated names must match across ranks). The count's lock is held from the name
  // to the Submit, so concurrent unnamed enqueues get distinct numbers.
  struct UnnamedCount {
    std::unique_lock<std::mutex> lock;
    int64_t* count = nullptr;
    void Taken() {
      if (count != nullptr) ++*count;
    }
  };
  // Queues `entries` under one new handle and wakes the background thread, unless
  // `wait_now` and a waiting caller may run the cycle itself (Wait then wakes the thread if it
  // does not). `unnamed`: the count of a generated name (NameOrGenerated), taken once the
  // entries are queued.
  Result<int64_t> Submit(Controller* controller, std::span<TensorEntry> entries,
                         int32_t num_outputs, bool wait_now = false,
                         UnnamedCount* unnamed = nullptr);
  // `name`, or when empty a generated "<op>.noname.<n>" (another set than the global one:
  // "<op>.noname.<set id>.<n>"), n counting that set's unnamed ops from 1, written into
  // `*scratch`; `*unnamed` then holds the count, which Submit takes.
  std::string_view NameOrGenerated(const std::string& name, const char* op, int32_t process_set_id,
                                   std::string* scratch, UnnamedCount* unnamed);

  ProviderFactory factory_;
  HandleManager handles_;
  std::unique_ptr<Hooks> hooks_;

  std::mutex lifecycle_mu_;  // serializes Init/Shutdown/Abort; taken before state_mu_

  mutable std::mutex state_mu_;
  std::condition_variable wake_cv_;
  State state_ = State::kStopped;
  // Written under state_mu_; HandBack reads it without the lock (relaxed: costs what a bool
  // does), where a stale answer is safe (runtime.cc, HandBack).
  class RelaxedFlag {
   public:
    RelaxedFlag& operator=(bool v) {
      v_.store(v, std::memory_order_relaxed);
      return *this;
    }
    operator bool() const { return v_.load(std::memory_order_relaxed); }

   private:
    std::atomic<bool> v_{false};
  };
  RelaxedFlag wake_;
  // An asynchronous enqueue started a batch: the background thread holds its cycle until the
  // caller waits or polls on a handle (the batch is complete), a synchronous enqueue comes, or
  // hold_until_ (HVD_CYCLE_TIME after the batch's first enqueue) passes.
  bool hold_ = false;
  std::chrono::steady_clock::time_point hold_until_;
  // When the background thread next wakes on its own (the end of the wait it is in), or
  // time_point::min() while it is awake (it looks at wake_ before it waits again). An
  // asynchronous enqueue wakes it only if it would otherwise sleep past hold_until_: while
  // callers drive (the thread sleeps in a hold of at most HVD_CYCLE_TIME), a futex wake per op
  // would be a thread switch for nothing.
  std::chrono::steady_clock::time_point loop_wakes_at_ =
      std::chrono::steady_clock::time_point::min();
  bool shutdown_requested_ = false;
  bool abort_requested_ = false;
  std::string abort_reason_;
  Status failure_;                   // why the loop stopped
  std::string set_shutdown_reason_;  // background thread: a process set asked to stop
  TunedKnobs knobs_;                 // mirror of the tuned config_ fields for tuned_knobs()
  // config_.cycle_time for NextInterval, which reads it outside cycle_mu_.
  std::atomic<int64_t> cycle_time_us_{0};
  bool autotuning_ = false;

  // Written by Init before the thread starts; read-only while running.
  RuntimeConfig config_;
  Topology topology_;
  int64_t round_ = 0;
  std::unique_ptr<CommunicatorProvider> provider_;  // background thread only once running
  std::unique_ptr<FusionBuffer> fusion_buffer_;
  // Global rank 0 with HVD_TIMELINE set; every rank when HVD_TIMELINE_ALL_RANKS is on too.
  std::unique_ptr<RuntimeTimeline> timeline_;
  std::unique_ptr<OpExecutor> executor_;
  // The GPU path (null without CUDA): made at the first Init, kept until the Runtime is
  // destroyed, because framework threads use it while enqueueing.
  std::unique_ptr<GpuBackend> gpu_;
  std::atomic<int> join_device_{-1};      // hvd_join's device (OpExecutor's join_device)
  std::unique_ptr<Autotuner> autotuner_;  // every rank when HVD_AUTOTUNE=1
  bool cache_enabled_ = true;             // background thread once running
  ProcessSetTable sets_;
  // Held while an iteration runs, by the background thread or a waiting caller (TryDrive); it
  // guards everything the cycles touch, and the fields below.
  std::mutex cycle_mu_;
  bool loop_stopped_ = false;  // no more iterations (StopIterations, by whoever saw it end)
  uint64_t iterations_ = 0;    // iterations run, by any thread
  CycleResult last_result_;    // the last iteration's progress/pending flags (for intervals)
  // last_result_.mine_pending, readable without cycle_mu_ (HandBack).
  std::atomic<bool> last_mine_pending_{false};
  int64_t shipments_due_ = 0;  // iterations since the last timeline shipment
  // Callers may run iterations: not under MPI without thread support (set at init). GPU ops
  // too: OpExecutor::RunGpu selects the op's device and gives the running thread its own
  // current device back, NCCL communicators and hvd's streams are usable from any thread,
  // and cycle_mu_ keeps one rank's NCCL calls one at a time. A synchronous GPU op thus costs
  // no thread hand-off (two wake-ups: most of the 20-31 us the NCCL path added over a bare
  // ncclAllReduce on the GPU machine's VM, 2026-11-22, docs/gpu.md).
  std::atomic<bool> callers_drive_{false};
  // Callers inside Wait that run iterations; while there is one, the background thread leaves
  // the iterations to them instead of contending for cycle_mu_.
  std::atomic<int> drivers_{0};
  // The sets' controllers as of sets_.version() == cycle_version_, under cycle_mu_; emptied
  // when the iterations stop.
  std::vector<std::shared_ptr<Controller>> cycle_controllers_;
  static constexpr uint64_t kNoSnapshot = ~uint64_t{0};
  uint64_t cycle_version_ = kNoSnapshot;
  std::thread thread_;
  std::mutex unnamed_mu_;
  std::map<int32_t, int64_t> unnamed_counts_;  // under unnamed_mu_: process set -> ops taken
  std::atomic<uint32_t> enabled_flags_{0};
  // This rank told hvdrun it is failing on its own (ReportFailure): from then on it names no
  // peer as the cause of its end (ReportCause), since its own failure came first. Reset by Init.
  std::atomic<bool> failure_reported_{false};
};

// Horovod's messages for a runtime that is shut down / not initialized.
extern const char kShutDownMessage[];
// kShutDownMessage, naming the ranks that asked to shut down and the reason, where known.
std::string ShutDownMessage(std::span<const int32_t> ranks, const std::string& reason);
extern const char kNotInitializedMessage[];
extern const char kTimelineDisabledMessage[];
using timeline::kDynamicTimeline;

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_CORE_RUNTIME_H_
