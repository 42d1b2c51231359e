#include "runtime/core/runtime.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <pthread.h>

#include <algorithm>

#include "common/kv_client.h"
#include "common/kv_messages.h"
#include "common/logging.h"
#include "runtime/core/execution/output_memory.h"

namespace hvd::runtime {
namespace {

// Pacing of the background loop. A cycle is a collective, so a rank never spins: it either
// blocks inside a collective waiting for its peers, or sleeps on its condition variable
// until a local enqueue wakes it or the interval passes.
constexpr std::chrono::microseconds kMinPendingInterval{100};
constexpr std::chrono::microseconds kIdleStart{1000};
constexpr std::chrono::microseconds kIdleMax{16000};
// All-ranks timeline: ranks other than 0 ship their events every this many iterations (and
// in the shutdown iteration); ping-pong rounds of the start-up clock alignment.
constexpr int64_t kTimelineShipInterval = 8;
constexpr int kClockSyncRounds = 8;

}  // namespace

const char kShutDownMessage[] =
    "Horovod has been shut down. This was caused by an exception on one of the ranks or an "
    "attempt to allreduce, allgather or broadcast a tensor after one of the ranks finished "
    "execution. If the shutdown was caused by an exception, you should see the exception in "
    "the log before the first shutdown message.";
std::string ShutDownMessage(std::span<const int32_t> ranks, const std::string& reason) {
  std::string message = kShutDownMessage;
  if (!ranks.empty()) {
    message += fmt::format(" Shut down by rank{} {} (hvd.shutdown(), or its process exiting).",
                           ranks.size() > 1 ? "s" : "", fmt::join(ranks, ", "));
  }
  if (!reason.empty()) message += " Reason: " + reason;
  return message;
}

const char kNotInitializedMessage[] = "Horovod has not been initialized; use hvd.init().";
const char kTimelineDisabledMessage[] =
    "Set HVD_TIMELINE=DYNAMIC (or HOROVOD_TIMELINE=DYNAMIC) before hvd.init() to start and "
    "stop the timeline at run time.";

// Forwards negotiated process-set changes from the global controller to the runtime.
class Runtime::Hooks : public ProcessSetHooks {
 public:
  explicit Hooks(Runtime* runtime) : runtime_(runtime) {}
  Result<int32_t> AddProcessSet(const std::vector<int32_t>& ranks) override {
    return runtime_->AddProcessSetNow(ranks);
  }
  Status RemoveProcessSet(int32_t id) override { return runtime_->RemoveProcessSetNow(id); }

 private:
  Runtime* runtime_;
};

Runtime::Runtime(ProviderFactory factory)
    : factory_(std::move(factory)), hooks_(std::make_unique<Hooks>(this)) {}

Runtime::Runtime(ProviderFactory factory, std::unique_ptr<GpuBackend> gpu)
    : factory_(std::move(factory)), hooks_(std::make_unique<Hooks>(this)), gpu_(std::move(gpu)) {}

Runtime::~Runtime() { (void)Shutdown(); }

bool Runtime::initialized() const {
  std::lock_guard<std::mutex> lock(state_mu_);
  return state_ != State::kStopped;
}

Status Runtime::Init(const RuntimeConfig& config,
                     const std::vector<std::vector<int32_t>>& process_sets) {
  std::lock_guard<std::mutex> lifecycle(lifecycle_mu_);
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    if (state_ == State::kRunning) return Status::OK();
  }
  StopLocked();  // a runtime shut down by a failure is cleaned up before re-init
  failure_reported_.store(false);
  Status s = StartLocked(config, process_sets);
  if (!s.ok()) StopLocked();
  return s;
}

Status Runtime::StartLocked(const RuntimeConfig& config,
                            const std::vector<std::vector<int32_t>>& process_sets) {
  config_ = config;
  topology_ = {
      config.rank,       config.size, config.local_rank, config.local_size, config.cross_rank,
      config.cross_size, true};
  // Elastic rounds are numbered by hvdrun's driver, the same on every member; otherwise all
  // ranks re-init together and count alike.
  round_ = config.rendezvous_round > 0 ? config.rendezvous_round : round_ + 1;
  {
    // Generated names count from 1 again at every init: a process that joins an elastic job
    // (or the ranks of a new init, whose set ids start over) counts from 1 too, and a survivor
    // that kept counting would name the same unnamed op otherwise and never match it.
    std::lock_guard<std::mutex> lock(unnamed_mu_);
    unnamed_counts_.clear();
  }
  fusion_buffer_ = std::make_unique<FusionBuffer>(config.fusion_threshold_bytes);
  SetOutputCacheBytes(config.output_cache_bytes);
  if (!config.timeline_path.empty() && (config.rank == 0 || config.timeline_all_ranks)) {
    timeline_ = std::make_unique<RuntimeTimeline>(config.rank, config.timeline_all_ranks,
                                                  config.timeline_clock_skew_us);
    if (config.timeline_path != kDynamicTimeline) {
      Status s = timeline_->Start(config.timeline_path, config.timeline_mark_cycles);
      if (!s.ok()) HVD_LOG_ERROR("timeline disabled: {}", s.message());
    }
  }
  if (gpu_ == nullptr) gpu_ = CreateGpuBackend();
  if (gpu_ != nullptr) {
    gpu_->Start(config.timeout, config.gpu_host_id, config.output_cache_bytes);
    if (DeviceOutputFree free = gpu_->device_output_free()) AddDeviceOutputFree(free);
  }
  join_device_.store(-1);
  executor_ = std::make_unique<OpExecutor>(
      fusion_buffer_.get(), &handles_, timeline_.get(), gpu_.get(),
      GpuOptions{config.gpu_operations, config.hierarchical_allreduce == "on", config.gpu_staged,
                 config.gpu_async_completion},
      &join_device_);
  cache_enabled_ = true;
  autotuner_.reset();
  if (config.autotune.enabled) {
    autotuner_ = std::make_unique<Autotuner>(config, config.rank == 0);
  }
  auto provider = factory_(config);
  if (!provider.ok()) return provider.status();
  provider_ = std::move(provider).value();
  enabled_flags_ = provider_->enabled_flags();
  provider_->CrossTopology(&topology_.cross_rank, &topology_.cross_size);
  std::vector<int32_t> all(config.size);
  for (int32_t r = 0; r < config.size; ++r) all[r] = r;
  HVD_ASSIGN_OR_RETURN(auto global, MakeController(0, all));
  HVD_RETURN_IF_ERROR(CheckSameEverywhere(global->communicator(), process_sets));
  if (config.timeline_all_ranks && !config.timeline_path.empty()) {
    HVD_RETURN_IF_ERROR(AlignTimelineClocks(global->communicator()));
  }
  sets_.Insert({0, all, global});
  std::vector<std::vector<int32_t>> given;
  for (const auto& set : process_sets) {
    std::vector<int32_t> ranks = set;
    std::sort(ranks.begin(), ranks.end());
    HVD_RETURN_IF_ERROR(ValidateProcessSetRanks(ranks, config.size));
    // As hvd_add_process_set refuses a set that exists: two ids for one group of ranks would
    // only double its communicators (Horovod leaves the second ProcessSet without an id).
    if (auto same = std::ranges::find(given, ranks); same != given.end()) {
      return Status::InvalidArgument(fmt::format(
          "process sets {} and {} given to init have the same ranks {}; give each group of "
          "ranks once",
          same - given.begin() + 1, given.size() + 1, ranks));
    }
    given.push_back(ranks);
    HVD_RETURN_IF_ERROR(AddProcessSetNow(ranks).status());
  }
  HVD_LOG_DEBUG(
      "rank {} of {} (local {} of {}, cross {} of {}, {}homogeneous): global set on {}; fusion "
      "threshold {} bytes, cycle time {:.3g} ms, response cache {}, autotune {}, timeline {}",
      topology_.rank, topology_.size, topology_.local_rank, topology_.local_size,
      topology_.cross_rank, topology_.cross_size, topology_.homogeneous ? "" : "not ",
      global->communicator()->name(), config.fusion_threshold_bytes,
      config.cycle_time.count() / 1000.0, config.cache_capacity,
      config.autotune.enabled ? "on" : "off",
      config.timeline_path.empty() ? std::string("off") : config.timeline_path);
  {
    // Before state_mu_: the iterations take cycle_mu_ first, then state_mu_.
    std::lock_guard<std::mutex> cycle(cycle_mu_);
    loop_stopped_ = false;
    cycle_controllers_.clear();
    cycle_version_ = kNoSnapshot;
    shipments_due_ = 0;
    last_result_ = CycleResult();
    last_mine_pending_.store(false, std::memory_order_relaxed);
    // Also with more local ranks than CPUs: once a synchronous op no longer wakes the
    // background thread (wait_now), each rank has one runnable thread instead of two. 4 ranks on
    // 2 vCPUs, paired runs: 4 KiB 20-23 us driven against 75-87 left to the background threads
    // (Open MPI vader 30), 100 x 16 KiB one by one 2.1-4.5 ms against 12-31 ms. (Before
    // wait_now, driving lost there: 367-393 us against 107-202.)
    callers_drive_ = !config_.mpi_threads_disable;
  }
  std::lock_guard<std::mutex> lock(state_mu_);
  state_ = State::kRunning;
  knobs_ = {config_.fusion_threshold_bytes, config_.cycle_time, true};
  cycle_time_us_.store(
      std::chrono::duration_cast<std::chrono::microseconds>(config_.cycle_time).count());
  autotuning_ = autotuner_ != nullptr;
  wake_ = shutdown_requested_ = abort_requested_ = false;
  loop_wakes_at_ = std::chrono::steady_clock::time_point::min();  // until its first wait
  set_shutdown_reason_.clear();
  failure_ = Status::OK();
  thread_ = std::thread(&Runtime::Loop, this);
  // Named for top -H, perf and gdb ("hvd-cycle" next to the framework's threads), here rather
  // than by the thread itself: named once Init returns, even before it is first scheduled
  // (a loaded CI machine once ran a whole test before it was).
  pthread_setname_np(thread_.native_handle(), "hvd-cycle");
  PinBackgroundThread();  // pinned, like named, once Init returns
  return Status::OK();
}

Result<std::shared_ptr<Controller>> Runtime::MakeController(int32_t id,
                                                            std::vector<int32_t> ranks) {
  auto it = std::find(ranks.begin(), ranks.end(), config_.rank);
  if (it == ranks.end()) return std::shared_ptr<Controller>();
  GroupSpec spec;
  spec.scope = std::to_string(round_) + (id == 0 ? "/global" : "/ps/" + std::to_string(id));
  spec.ranks = ranks;
  spec.rank_in_group = static_cast<int32_t>(it - ranks.begin());
  auto comm = provider_->Create(spec);
  if (!comm.ok()) return comm.status().WithContext("creating the communicator for " + spec.scope);
  auto controller = std::make_shared<Controller>(
      id, std::move(ranks), config_.rank, std::move(comm).value(), config_, &handles_,
      executor_.get(), id == 0 ? hooks_.get() : nullptr, timeline_.get());
  controller->ApplyTuning(config_.fusion_threshold_bytes, cache_enabled_);
  if (HVD_LOG_ENABLED(debug)) {
    const auto& members = controller->ranks();
    HVD_LOG_DEBUG("process set {} ({}): {} communicator, member {} of {}", id,
                  members.size() <= 16 ? fmt::format("ranks {}", members)
                                       : fmt::format("{} ranks", members.size()),
                  controller->communicator()->name(), spec.rank_in_group, members.size());
  }
  if (id == 0 && autotuner_ && config_.rank == 0) controller->set_report_executed(true);
  return controller;
}

Result<int32_t> Runtime::AddProcessSetNow(const std::vector<int32_t>& ranks) {
  // Checked again as negotiated: the ranks came from rank 0's response list.
  HVD_RETURN_IF_ERROR(ValidateProcessSetRanks(ranks, config_.size));
  const int32_t id = sets_.NextId();
  HVD_ASSIGN_OR_RETURN(auto controller, MakeController(id, ranks));
  sets_.Insert({id, ranks, std::move(controller)});
  return id;
}

Status Runtime::RemoveProcessSetNow(int32_t id) {
  std::shared_ptr<Controller> c = sets_.Remove(id);
  HVD_LOG_DEBUG("process set {} removed", id);
  if (c) {
    // The ops a member enqueued on the set before it asked for the removal are in its queue
    // now (the removal is negotiated: every member asked): a few more of the set's cycles run
    // them, on every member alike (whether one made progress, and whether any member still
    // has work, are agreed in the cycle). Until 2026-12-02 they failed "was removed" whenever
    // the removal's cycle came before theirs. What waits through kRemovalIdleCycles cycles
    // without progress (an op some member never enqueued) fails as before.
    constexpr int kRemovalIdleCycles = 3;
    for (int idle = 0; idle < kRemovalIdleCycles;) {
      Result<CycleResult> r = c->RunCycle(false);
      if (!r.ok() || r->shutdown || !r->any_pending) break;
      idle = r->progress ? 0 : idle + 1;
    }
    c->DrainDeferred();  // the removal is negotiated: its members all enqueued those ops
    c->FailAll(Status::Aborted("process set " + std::to_string(id) + " was removed"));
  }
  return Status::OK();
}

Status Runtime::Shutdown() {
  std::lock_guard<std::mutex> lifecycle(lifecycle_mu_);
  StopLocked();
  return Status::OK();
}

void Runtime::StopLocked() {
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    shutdown_requested_ = true;
    wake_ = true;
    hold_ = false;
  }
  wake_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  FailEverything(Status::Aborted(kShutDownMessage));
  sets_.Clear();
  autotuner_.reset();
  executor_.reset();
  timeline_.reset();  // flushes and closes the file
  fusion_buffer_.reset();
  provider_.reset();
  ReleaseCachedOutputs();  // outputs given back later are kept again, up to the limit
  std::lock_guard<std::mutex> lock(state_mu_);
  state_ = State::kStopped;
}

Status Runtime::ReportFailure(const std::string& text) {
  std::lock_guard<std::mutex> lifecycle(lifecycle_mu_);  // keeps provider_
  if (provider_ == nullptr) return Status::NotInitialized(kNotInitializedMessage);
  control::KvClient* kv = provider_->kv();
  if (kv == nullptr) return Status::OK();
  constexpr size_t kMaxReport = 1000;
  failure_reported_.store(true);
  return kv->Set(std::string(control::kFailureReportPrefix) + std::to_string(config_.rank),
                 text.substr(0, kMaxReport));
}

void Runtime::ReportCause(int32_t cause) {
  if (failure_reported_.load()) return;
  control::KvClient* kv = provider_ != nullptr ? provider_->kv() : nullptr;
  if (kv == nullptr) return;  // under mpirun or srun without hvdrun: nobody to tell
  Status s = kv->Set(control::ShutdownCauseKey(config_.rendezvous_round, config_.rank),
                     std::to_string(cause));
  if (!s.ok()) HVD_LOG_DEBUG("could not tell hvdrun which rank failed this one: {}", s.message());
}

void Runtime::ReportShutdownCause(std::span<const int32_t> asked) {
  if (asked.empty() || std::ranges::find(asked, config_.rank) != asked.end()) return;
  ReportCause(asked.front());
}

void Runtime::ReportLostMember() {
  for (const auto& controller : sets_.Controllers()) {
    const int lost = controller->communicator()->lost_member();
    const std::vector<int32_t>& ranks = controller->ranks();
    if (lost < 0 || static_cast<size_t>(lost) >= ranks.size()) continue;
    ReportCause(ranks[static_cast<size_t>(lost)]);
    return;
  }
}

void Runtime::RequestStacks(std::span<const int32_t> ranks) {
  control::KvClient* kv = provider_ != nullptr ? provider_->kv() : nullptr;
  if (kv == nullptr) return;  // under mpirun or srun without hvdrun: nobody to ask
  std::string list;
  for (int32_t rank : ranks) list += (list.empty() ? "" : ",") + std::to_string(rank);
  Status s = kv->Set(std::string(control::kStackRequestKey), list);
  if (!s.ok()) HVD_LOG_DEBUG("could not ask hvdrun for stacks: {}", s.message());
}

Status Runtime::Abort(const std::string& reason) {
  std::lock_guard<std::mutex> lifecycle(lifecycle_mu_);
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    if (state_ == State::kStopped) return Status::NotInitialized(kNotInitializedMessage);
    abort_requested_ = true;
    abort_reason_ = reason.empty() ? "aborted by hvd_abort" : reason;
  }
  wake_cv_.notify_all();
  for (auto& c : sets_.Controllers()) c->communicator()->Abort();
  if (gpu_ != nullptr) gpu_->Abort();
  // Also waits out an iteration a waiting caller runs (TryDrive): Loop takes cycle_mu_ before
  // it ends, and no caller starts one after (loop_stopped_).
  if (thread_.joinable()) thread_.join();
  FailEverything(Status::Aborted(abort_reason_));
  return Status::OK();
}

Status Runtime::ShutDownStatusLocked() const {
  if (failure_.code() == StatusCode::kAborted &&
      std::string_view(failure_.message()).starts_with(kShutDownMessage)) {
    return failure_;
  }
  return Status::Aborted(kShutDownMessage);
}

void Runtime::FailEverything(const Status& status) {
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    if (state_ == State::kRunning) state_ = State::kShutDown;
    if (failure_.ok()) failure_ = status;
  }
  for (auto& c : sets_.Controllers()) c->FailAll(status);
}

// Who runs the cycles. The background thread (Loop) runs an iteration when an op is enqueued
// (wake_) or its interval passes. A thread waiting on a handle (Wait) runs iterations itself
// whenever no one else is (TryDrive): for a synchronous op on a shared CPU the two thread
// switches per op (caller -> background thread -> caller) cost more than the collective.
// cycle_mu_ makes iterations one at a time, so every rank still runs one sequence of cycles,
// in lockstep with its peers; which thread runs a given cycle does not matter to them.
void Runtime::Loop() {
  std::chrono::microseconds interval{0};
  uint64_t seen = 0;  // iterations_ when this thread last looked
  while (true) {
    {
      std::unique_lock<std::mutex> lock(state_mu_);
      // While a caller runs the iterations (drivers_), an enqueue does not wake this thread:
      // the caller's next iteration takes it, and HandBack wakes this thread when it stops.
      loop_wakes_at_ = std::chrono::steady_clock::now() + interval;
      wake_cv_.wait_for(lock, interval,
                        [&] { return (wake_ && drivers_.load() == 0) || abort_requested_; });
      // The batch an asynchronous enqueue started goes into one cycle whole: started while
      // the caller is still enqueueing, the cycle would take part of it, its peers another
      // part, and the rest would follow in more cycles (100 x 16 KiB at 2 ranks ran in 3-10
      // cycles half of the time). Measured: docs/known-gaps.md "Many small tensors enqueued
      // together" (4b). A later batch's enqueue does not wake this thread while it sleeps in
      // an earlier hold (Submit): past that deadline it holds on until the current hold_until_.
      while (hold_ && wake_ && !abort_requested_ && drivers_.load() == 0) {
        loop_wakes_at_ = hold_until_;
        wake_cv_.wait_until(lock, hold_until_);
        if (std::chrono::steady_clock::now() >= hold_until_) break;
      }
      loop_wakes_at_ = std::chrono::steady_clock::time_point::min();
      if (abort_requested_) break;  // Abort() fails the handles
      if (drivers_.load() > 0) {
        interval = kIdleStart;
        continue;
      }
    }
    std::unique_lock<std::mutex> cycle(cycle_mu_);
    if (loop_stopped_) break;
    bool request_shutdown;
    {
      std::lock_guard<std::mutex> lock(state_mu_);
      if (!wake_ && iterations_ != seen) {
        // A waiting caller ran iterations meanwhile (and took the queued work): go on from
        // where they left off.
        seen = iterations_;
        interval = NextInterval(last_result_, interval);
        continue;
      }
      wake_ = false;
      hold_ = false;
      request_shutdown = shutdown_requested_;
    }
    CycleResult total;
    const bool go_on = IterateLocked(request_shutdown, &total);
    // A caller that started waiting during this iteration (its TryDrive found it running) is
    // woken to run the next one itself (this thread now leaves them to it), once cycle_mu_ is
    // free, so that its TryDrive finds it free.
    seen = iterations_;
    if (!go_on) StopIterations();
    cycle.unlock();
    if (drivers_.load() > 0) handles_.WakeWaiters();
    if (!go_on) break;
    interval = NextInterval(total, interval);
  }
  std::lock_guard<std::mutex> cycle(cycle_mu_);
  StopIterations();
}

void Runtime::StopIterations() {
  loop_stopped_ = true;
  if (timeline_) timeline_->EndShipments();  // a stop_timeline waiting for one goes on
  cycle_controllers_.clear();  // the sets' controllers may go (sets_.Clear) once the loop ends
  cycle_version_ = kNoSnapshot;
}

Runtime::Drive Runtime::TryDrive() {
  if (!CallersMayDrive()) return Drive::kNotAllowed;
  std::unique_lock<std::mutex> cycle(cycle_mu_, std::try_to_lock);
  if (!cycle.owns_lock()) return Drive::kBusy;
  if (loop_stopped_) return Drive::kNotAllowed;
  bool request_shutdown;
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    if (abort_requested_ || state_ != State::kRunning) return Drive::kNotAllowed;
    wake_ = false;  // this iteration takes what is queued
    hold_ = false;
    request_shutdown = shutdown_requested_;
  }
  CycleResult total;
  const bool go_on = IterateLocked(request_shutdown, &total);
  if (!go_on) StopIterations();
  // Nothing to do on this rank but GPU completions off the cycle: another iteration now would
  // be an empty negotiation round with the peers, again and again until the device is done.
  const bool idle = go_on && !total.progress && !total.mine_pending && executor_ != nullptr &&
                    executor_->deferred_in_flight() > 0;
  cycle.unlock();
  // Another caller that found this iteration running (kBusy) may run the next.
  if (drivers_.load() > 1) handles_.WakeWaiters();
  return idle ? Drive::kRanIdle : Drive::kRan;
}

void Runtime::WakeLoopIfPending() {
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    if (!wake_) return;
    hold_ = false;
  }
  wake_cv_.notify_one();
}

void Runtime::HandBack() {
  // The common case, without locks: the last iteration left nothing of this rank pending and
  // no enqueue since has left the background thread unwoken. A stale "false" is harmless: an
  // enqueue that set wake_ after this read woke the thread itself or has a caller driving it,
  // and an iteration that left work pending ran on the background thread (which goes on by
  // itself) or on a caller still driving (who hands back when it stops).
  if (!last_mine_pending_.load(std::memory_order_acquire) && !wake_) return;
  bool pending = false;
  {
    // Held by the background thread or another caller: they run on, nothing to hand back.
    std::unique_lock<std::mutex> cycle(cycle_mu_, std::try_to_lock);
    if (!cycle.owns_lock() || loop_stopped_) return;
    pending = last_result_.mine_pending;
  }
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    if (!pending && !wake_) return;
    wake_ = true;
    hold_ = false;
  }
  wake_cv_.notify_one();
}

bool Runtime::IterateLocked(bool request_shutdown, CycleResult* total) {
  ++iterations_;
  // Same on every rank (the config comes from the same environment), so the shipments'
  // GatherBytes match up like the cycles do.
  const bool ship_timeline = config_.timeline_all_ranks && !config_.timeline_path.empty();
  if (timeline_ != nullptr) timeline_->MarkCycleStart();
  Status s = RunIteration(request_shutdown, total);
  last_result_.progress = total->progress;
  last_result_.any_pending = total->any_pending;
  last_result_.mine_pending = total->mine_pending;
  last_mine_pending_.store(total->mine_pending, std::memory_order_release);
  if (!s.ok()) {
    StopOnError(s);
    return false;
  }
  if (ship_timeline && (++shipments_due_ % kTimelineShipInterval == 0 || total->shutdown)) {
    s = ShipTimeline();
    if (!s.ok()) {
      StopOnError(s.WithContext("timeline event shipment"));
      return false;
    }
  }
  if (total->shutdown) {
    if (!total->shutdown_reason.empty()) HVD_LOG_ERROR("{}", total->shutdown_reason);
    ReportShutdownCause(total->shutdown_ranks);
    // Every member takes this cycle's decision: the GPU ops they all enqueued before it finish.
    for (auto& c : sets_.Controllers()) c->DrainDeferred();
    FailEverything(Status::Aborted(ShutDownMessage(total->shutdown_ranks, total->shutdown_reason)));
    return false;
  }
  if (autotuner_ && autotuner_->active()) {
    s = SyncAutotune(*total);
    if (!s.ok()) {
      StopOnError(s);
      return false;
    }
  }
  return true;
}

Status Runtime::Wait(int64_t handle, std::chrono::duration<double> timeout) {
  using Clock = std::chrono::steady_clock;
  // While another thread runs an iteration, wait for the handle in slices this long, then try
  // again to run the next one.
  constexpr std::chrono::milliseconds kSlice{1};
  // Beyond ~30 years is no limit either: now + 1e10 s overflows the clock's nanoseconds, which
  // made hvd_wait(h, INFINITY) return "in progress" at once.
  constexpr double kForeverSeconds = 1e9;
  const bool forever = timeout.count() < 0 || timeout.count() > kForeverSeconds;
  const auto deadline = forever
                            ? Clock::time_point::max()
                            : Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout);
  // A batch in flight (the DistributedOptimizer pattern: enqueue every gradient, then wait on
  // each) is driven too. Before the hold (Loop) a driven iteration took the part of the batch
  // enqueued so far and ran it in 2-3 pieces (1.3-1.8 ms against the background thread's
  // 0.5-0.6 ms for 100 x 16 KiB); now the wait is what ends the hold, so the batch is whole
  // when the caller's first iteration takes it, and driving saves the background thread's
  // wake-up: 2026-11-24, paired runs, 2 vCPUs, shm: 100 x 16 KiB enqueued then waited 2 ranks
  // 331-385 -> 284-303 us, 4 ranks 804-985 -> 707-948 us; a step of 16 x 16 KiB 4 ranks
  // 204-390 -> 120-135 us, 2 tensors at 2 ranks 32 -> 17 us.
  bool drive = CallersMayDrive();
  if (drive) {
    drivers_.fetch_add(1);
  } else {
    WakeLoopIfPending();  // ends a hold; a wait_now enqueue did not wake the thread
  }
  // Leaves driver mode: work this rank still has in flight (other ops, unmatched by peers), and
  // enqueues that did not wake the background thread meanwhile, are that thread's again. Run on
  // every way out, and as soon as this caller may no longer drive (the loop stopped): the
  // background thread stands aside while drivers_ counts this caller.
  auto stop_driving = [&] {
    if (!drive) return;
    drive = false;
    drivers_.fetch_sub(1);
    HandBack();
  };
  Status status;
  bool finished = false;
  while (!(finished = handles_.Finished(handle, &status))) {
    const auto now = Clock::now();
    if (!forever && now >= deadline) break;
    // Taken before TryDrive: an iteration of another thread that ends after a kBusy wakes the
    // WaitDone below even if it ends before WaitDone starts (the next iteration is this
    // caller's to run; sleeping out the slice cost a lone op after a batch ~1 ms).
    const uint64_t wakes = handles_.wakes();
    if (drive) {
      const Drive d = TryDrive();
      if (d == Drive::kRan) continue;
      // kRanIdle: the handle waits for the device, not for a cycle. Driving on, this caller
      // would block in empty negotiation rounds until its peers ran theirs, however early its
      // handle finished; the background thread runs them at its idle pace, and the completion
      // wakes this caller (HandleManager::FinishParts).
      if (d == Drive::kNotAllowed || d == Drive::kRanIdle) stop_driving();
    }
    const auto slice = forever ? kSlice : std::min<Clock::duration>(kSlice, deadline - now);
    handles_.WaitDone(handle, slice, wakes);
  }
  stop_driving();
  // At the deadline: kInProgress with HandleManager::Wait's message.
  return finished ? status : handles_.Wait(handle, std::chrono::seconds(0));
}

Result<bool> Runtime::Poll(int64_t handle) {
  Result<bool> done = handles_.Poll(handle);
  if (done.ok() && !*done) WakeLoopIfPending();
  return done;
}

// Measures every rank's clock against rank 0's (runtime_timeline.h); rank 0 logs and applies
// the offsets. A collective on the global communicator, run once at init.
Status Runtime::AlignTimelineClocks(Communicator* comm) {
  const timeline::Timeline fallback;
  const timeline::Timeline& clock = timeline_ ? timeline_->timeline() : fallback;
  std::vector<int64_t> offsets, rtts;
  HVD_RETURN_IF_ERROR(EstimateClockOffsets(comm, clock, kClockSyncRounds, &offsets, &rtts)
                          .WithContext("timeline clock alignment"));
  if (config_.rank != 0 || !timeline_) return Status::OK();
  for (size_t r = 1; r < offsets.size(); ++r) {
    timeline_->SetClockOffset(static_cast<int>(r), offsets[r]);
    HVD_LOG_INFO("timeline: rank {} clock offset {} us (rank 0 minus rank {}), rtt {} us", r,
                 offsets[r], r, rtts[r]);
  }
  return Status::OK();
}

// Every rank's collected timeline events to rank 0 (a GatherBytes on the global set).
Status Runtime::ShipTimeline() {
  auto global = sets_.Find(0);
  if (!global || !global->controller) return Status::Internal("timeline: no global process set");
  std::string shipment = timeline_ ? timeline_->TakeShipment() : std::string();
  std::vector<std::string> gathered;
  HVD_RETURN_IF_ERROR(global->controller->communicator()->GatherBytes(shipment, 0, &gathered));
  if (config_.rank == 0 && timeline_) {
    for (size_t r = 1; r < gathered.size(); ++r) {
      timeline_->ReceiveShipment(static_cast<int>(r), gathered[r]);
    }
    timeline_->ShipmentRoundDone();
  }
  return Status::OK();
}

void Runtime::StopOnError(const Status& s) {
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    if (abort_requested_) return;  // Abort() fails the handles
  }
  HVD_LOG_ERROR("rank {}: {}", config_.rank, s.message());
  // Before the handles fail: the rank may exit as soon as they have. Whatever the code (a
  // NCCL wait that found its peer gone, a timeout), a member a communicator saw go is the cause.
  ReportLostMember();
  FailEverything(s);
}

Status Runtime::SyncAutotune(const CycleResult& total) {
  auto global = sets_.Find(0);
  if (!global || !global->controller) return Status::Internal("autotune: no global process set");
  std::optional<TunedKnobs> knobs;
  Status s = autotuner_->Sync(total.executed, global->controller->communicator(), &knobs);
  if (!s.ok()) return s.WithContext("autotune parameter broadcast");
  if (knobs) ApplyTuning(*knobs);
  if (!autotuner_->active()) {
    // Tuning is over: the coordinator stops copying each cycle's executed responses for it
    // (it went on doing so for the rest of the job until 2026-12-01).
    global->controller->set_report_executed(false);
    std::lock_guard<std::mutex> lock(state_mu_);
    autotuning_ = false;
  }
  return Status::OK();
}

void Runtime::ApplyTuning(const TunedKnobs& knobs) {
  config_.fusion_threshold_bytes = knobs.fusion_threshold_bytes;
  config_.cycle_time = knobs.cycle_time;
  cycle_time_us_.store(
      std::chrono::duration_cast<std::chrono::microseconds>(knobs.cycle_time).count());
  cache_enabled_ = knobs.cache_enabled;
  for (auto& c : sets_.Controllers()) c->ApplyTuning(knobs.fusion_threshold_bytes, cache_enabled_);
  std::lock_guard<std::mutex> lock(state_mu_);
  knobs_ = knobs;
}

TunedKnobs Runtime::tuned_knobs() const {
  std::lock_guard<std::mutex> lock(state_mu_);
  return knobs_;
}

bool Runtime::autotuning() const {
  std::lock_guard<std::mutex> lock(state_mu_);
  return autotuning_;
}

Status Runtime::RunIteration(bool request_shutdown, CycleResult* total) {
  // The global set (id 0, first in id order) runs first. The snapshot of the sets lives on
  // between iterations (taking it costs a lock and two atomic reference counts per set) and is
  // taken again whenever the table changed, also right after the global set's cycle, so a set
  // it just added or removed is seen identically by every member; StopIterations drops it.
  bool global = true;
  for (int pass = 0; pass < 2; ++pass) {
    if (sets_.version() != cycle_version_) {
      cycle_version_ = sets_.version();
      sets_.Controllers(&cycle_controllers_);
    }
    for (const auto& controller : cycle_controllers_) {
      if ((controller->id() == 0) != global) continue;
      static const std::string kOwnShutdown;  // this rank's hvd_shutdown: no reason to pass on
      auto r = controller->RunCycle(global && (request_shutdown || !set_shutdown_reason_.empty()),
                                    request_shutdown ? kOwnShutdown : set_shutdown_reason_);
      if (!r.ok()) return r.status();
      if (!r->stalled_ranks.empty()) RequestStacks(r->stalled_ranks);
      total->progress |= r->progress;
      total->any_pending |= r->any_pending;
      // "Waits on peers": this rank has work in flight that some member has not matched.
      total->mine_pending |= r->mine_pending && !r->all_pending;
      if (controller->id() == 0 && !r->executed.empty()) total->executed = std::move(r->executed);
      if (r->shutdown && !global) {
        // Only this set's members know: ask the global set to stop next iteration.
        set_shutdown_reason_ = r->shutdown_reason;
      } else if (r->shutdown) {
        total->shutdown = true;
        total->shutdown_reason = r->shutdown_reason;
        total->shutdown_ranks = r->shutdown_ranks;
        return Status::OK();
      }
    }
    global = false;
  }
  return Status::OK();
}

std::chrono::microseconds Runtime::NextInterval(const CycleResult& r,
                                                std::chrono::microseconds prev) {
  // Work was done (more may be ready), or this rank waits on peers that have nothing queued:
  // go straight into the next cycle, which blocks in its collective until they join.
  if (r.progress || r.mine_pending) return std::chrono::microseconds(0);
  if (r.any_pending) {
    // Not config_.cycle_time: this runs after the iteration let go of cycle_mu_, while a
    // caller's iteration may apply a tuned one.
    return std::max<std::chrono::microseconds>(
        std::chrono::microseconds(cycle_time_us_.load(std::memory_order_relaxed)),
        kMinPendingInterval);
  }
  if (prev < kIdleStart) return kIdleStart;
  return std::min(prev * 2, kIdleMax);
}

Status Runtime::StartTimeline(const std::string& path, bool mark_cycles) {
  std::lock_guard<std::mutex> lifecycle(lifecycle_mu_);
  if (!initialized()) return Status::NotInitialized(kNotInitializedMessage);
  if (config_.timeline_path.empty()) return Status::PreconditionFailed(kTimelineDisabledMessage);
  if (path.empty()) return Status::InvalidArgument("the timeline file path is empty");
  return timeline_ ? timeline_->Start(path, mark_cycles) : Status::OK();
}

Status Runtime::StopTimeline() {
  std::lock_guard<std::mutex> lifecycle(lifecycle_mu_);
  if (!initialized()) return Status::NotInitialized(kNotInitializedMessage);
  if (config_.timeline_path.empty()) return Status::PreconditionFailed(kTimelineDisabledMessage);
  if (timeline_) timeline_->Stop();
  return Status::OK();
}

int64_t Runtime::fusion_allocations() {
  std::lock_guard<std::mutex> lifecycle(lifecycle_mu_);
  return fusion_buffer_ ? fusion_buffer_->allocations() : 0;
}

}  // namespace hvd::runtime
