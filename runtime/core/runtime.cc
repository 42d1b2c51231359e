#include "runtime/core/runtime.h"

#include <algorithm>

#include "common/logging.h"

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
const char kNotInitializedMessage[] = "Horovod has not been initialized; use hvd.init().";
const char kTimelineDisabledMessage[] =
    "Set HVD_TIMELINE=DYNAMIC (or HOROVOD_TIMELINE=DYNAMIC) before hvd.init() to start and "
    "stop the timeline at run time.";
const char kDynamicTimeline[] = "DYNAMIC";

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
  fusion_buffer_ = std::make_unique<FusionBuffer>(config.fusion_threshold_bytes);
  if (!config.timeline_path.empty() && (config.rank == 0 || config.timeline_all_ranks)) {
    timeline_ = std::make_unique<RuntimeTimeline>(config.rank, config.timeline_all_ranks,
                                                  config.timeline_clock_skew_us);
    if (config.timeline_path != kDynamicTimeline) {
      Status s = timeline_->Start(config.timeline_path, config.timeline_mark_cycles);
      if (!s.ok()) HVD_LOG_ERROR("timeline disabled: {}", s.message());
    }
  }
  executor_ = std::make_unique<OpExecutor>(fusion_buffer_.get(), &handles_, timeline_.get());
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
  HVD_RETURN_IF_ERROR(CheckHomogeneous(global->communicator()));
  if (config.timeline_all_ranks && !config.timeline_path.empty()) {
    HVD_RETURN_IF_ERROR(AlignTimelineClocks(global->communicator()));
  }
  sets_.Insert({0, all, global});
  for (const auto& set : process_sets) {
    std::vector<int32_t> ranks = set;
    std::sort(ranks.begin(), ranks.end());
    HVD_RETURN_IF_ERROR(ValidateProcessSetRanks(ranks, config.size));
    HVD_RETURN_IF_ERROR(AddProcessSetNow(ranks).status());
  }
  std::lock_guard<std::mutex> lock(state_mu_);
  state_ = State::kRunning;
  knobs_ = {config_.fusion_threshold_bytes, config_.cycle_time, true};
  autotuning_ = autotuner_ != nullptr;
  wake_ = shutdown_requested_ = abort_requested_ = false;
  set_shutdown_reason_.clear();
  failure_ = Status::OK();
  thread_ = std::thread(&Runtime::Loop, this);
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
  if (id == 0 && autotuner_ && config_.rank == 0) controller->set_report_executed(true);
  return controller;
}

// Horovod's homogeneity test: every host runs the same number of ranks.
Status Runtime::CheckHomogeneous(Communicator* comm) {
  std::vector<std::string> sizes;
  HVD_RETURN_IF_ERROR(comm->GatherBytes(std::to_string(config_.local_size), 0, &sizes));
  std::string verdict = "1";
  for (const auto& s : sizes) {
    if (s != sizes.front()) verdict = "0";
  }
  HVD_RETURN_IF_ERROR(comm->BroadcastBytes(&verdict, 0));
  topology_.homogeneous = verdict == "1";
  return Status::OK();
}

Result<int32_t> Runtime::AddProcessSetNow(const std::vector<int32_t>& ranks) {
  const int32_t id = sets_.NextId();
  HVD_ASSIGN_OR_RETURN(auto controller, MakeController(id, ranks));
  sets_.Insert({id, ranks, std::move(controller)});
  return id;
}

Status Runtime::RemoveProcessSetNow(int32_t id) {
  std::shared_ptr<Controller> c = sets_.Remove(id);
  if (c) c->FailAll(Status::Aborted("process set " + std::to_string(id) + " was removed"));
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
  std::lock_guard<std::mutex> lock(state_mu_);
  state_ = State::kStopped;
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
  if (thread_.joinable()) thread_.join();
  FailEverything(Status::Aborted(abort_reason_));
  return Status::OK();
}

void Runtime::FailEverything(const Status& status) {
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    if (state_ == State::kRunning) state_ = State::kShutDown;
    if (failure_.ok()) failure_ = status;
  }
  for (auto& c : sets_.Controllers()) c->FailAll(status);
}

void Runtime::Loop() {
  std::chrono::microseconds interval{0};
  // Same on every rank (the config comes from the same environment), so the shipments'
  // GatherBytes match up like the cycles do.
  const bool ship_timeline = config_.timeline_all_ranks && !config_.timeline_path.empty();
  int64_t iteration = 0;
  while (true) {
    bool request_shutdown;
    {
      std::unique_lock<std::mutex> lock(state_mu_);
      wake_cv_.wait_for(lock, interval, [&] { return wake_ || abort_requested_; });
      wake_ = false;
      request_shutdown = shutdown_requested_;
      if (abort_requested_) break;  // Abort() fails the handles
    }
    if (timeline_ != nullptr) timeline_->MarkCycleStart();
    CycleResult total;
    Status s = RunIteration(request_shutdown, &total);
    cycle_controllers_.clear();  // hold no set's controller between iterations
    if (!s.ok()) {
      StopOnError(s);
      break;
    }
    if (ship_timeline && (++iteration % kTimelineShipInterval == 0 || total.shutdown)) {
      s = ShipTimeline();
      if (!s.ok()) {
        StopOnError(s.WithContext("timeline event shipment"));
        break;
      }
    }
    if (total.shutdown) {
      if (!total.shutdown_reason.empty()) HVD_LOG_ERROR("{}", total.shutdown_reason);
      std::string why = total.shutdown_reason.empty() ? "" : " Reason: " + total.shutdown_reason;
      FailEverything(Status::Aborted(kShutDownMessage + why));
      break;
    }
    if (autotuner_ && autotuner_->active()) {
      s = SyncAutotune(total);
      if (!s.ok()) {
        StopOnError(s);
        break;
      }
    }
    interval = NextInterval(total, interval);
  }
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
  }
  return Status::OK();
}

void Runtime::StopOnError(const Status& s) {
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    if (abort_requested_) return;  // Abort() fails the handles
  }
  HVD_LOG_ERROR("rank {}: {}", config_.rank, s.message());
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
    std::lock_guard<std::mutex> lock(state_mu_);
    autotuning_ = false;
  }
  return Status::OK();
}

void Runtime::ApplyTuning(const TunedKnobs& knobs) {
  config_.fusion_threshold_bytes = knobs.fusion_threshold_bytes;
  config_.cycle_time = knobs.cycle_time;
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
  // The global set (id 0, first in id order) runs first; the snapshot is taken again after it
  // so a set it just added or removed is seen identically by every member.
  bool global = true;
  for (int pass = 0; pass < 2; ++pass) {
    sets_.Controllers(&cycle_controllers_);
    for (const auto& controller : cycle_controllers_) {
      if ((controller->id() == 0) != global) continue;
      auto r = controller->RunCycle(global && (request_shutdown || !set_shutdown_reason_.empty()));
      if (!r.ok()) return r.status();
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
    return std::max<std::chrono::microseconds>(
        std::chrono::duration_cast<std::chrono::microseconds>(config_.cycle_time),
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
