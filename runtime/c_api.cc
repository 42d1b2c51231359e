// The C boundary of libhvd: one default Runtime for the bindings, a thread-local last error,
// and conversion between the POD descriptors and the C++ types. No exception crosses it.
#include "runtime/include/hvd/c_api.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <new>
#include <span>
#include <string>

#include "common/env_registry.h"
#include "common/logging.h"
#include "runtime/core/execution/output_memory.h"
#include "runtime/core/runtime.h"
#include "runtime/elastic_session.h"
#include "runtime/transports/backend_registry.h"

namespace {

using hvd::Status;
using hvd::runtime::DataType;
using hvd::runtime::OpOptions;
using hvd::runtime::ReduceOp;
using hvd::runtime::Runtime;
using hvd::runtime::TensorSpec;

thread_local std::string t_last_error;

// The process's default runtime. Deliberately leaked: it must outlive every binding thread
// and atexit ordering; hvd_shutdown stops its thread.
Runtime& Default() {
  static Runtime* runtime = new Runtime();
  return *runtime;
}

// The default runtime's link to hvdrun's elastic driver (elastic workers only); leaked too.
hvd::runtime::ElasticSession& Elastic() {
  static auto* session = new hvd::runtime::ElasticSession();
  return *session;
}

hvd_status_t Report(const Status& s) {
  if (!s.ok()) t_last_error = s.message();
  return static_cast<hvd_status_t>(s.code());
}

template <typename T>
hvd_status_t ReportResult(const hvd::Result<T>& r, T* out) {
  if (!r.ok()) return Report(r.status());
  if (out != nullptr) *out = r.value();
  return HVD_OK;
}

// Runs `body`, turning any escaping exception (e.g. bad_alloc) into HVD_INTERNAL.
// The process whose hvd_init started the default runtime (0: none is running). A child forked
// after it (os.fork(), multiprocessing's fork start method) has the parent's runtime in its
// memory but none of its threads: a shutdown there waited forever for the background thread
// (Python's exit hook hung every such child at its exit) and an op would have written on the
// parent's connections (until 2026-12-01). In the child every call fails naming this, but
// hvd_shutdown (nothing to do) and hvd_is_initialized (0). The child is marked by a fork
// handler, not told by comparing getpid() on every call: that is a system call, and it cost a
// 4 KiB allreduce 0.4-0.5 us here (2.4 -> 2.8-3.0 us at 2 ranks).
std::atomic<pid_t> g_owner_pid{0};
std::atomic<bool> g_forked_child{false};

void NoteInitialized() {
  g_owner_pid.store(::getpid());
  static std::once_flag registered;
  std::call_once(registered, [] {
    ::pthread_atfork(nullptr, nullptr, [] {
      if (g_owner_pid.load() != 0) g_forked_child.store(true);
    });
  });
}

bool InForkedChild() { return g_forked_child.load(std::memory_order_relaxed); }

Status ForkedChildError() {
  return Status::PreconditionFailed(
      "hvd was initialized in process " + std::to_string(g_owner_pid.load()) +
      ", from which this process was forked: a forked child cannot use its parent's runtime "
      "(start workers with hvdrun, or use multiprocessing's 'spawn' or 'forkserver' start method)");
}

template <typename F>
hvd_status_t Guard(F&& body) {
  if (InForkedChild()) return Report(ForkedChildError());
  try {
    return body();
  } catch (const std::exception& e) {
    return Report(Status::Internal(std::string("internal error: ") + e.what()));
  } catch (...) {
    return Report(Status::Internal("internal error: unknown exception"));
  }
}

hvd_status_t NullArg(const char* what) {
  return Report(Status::InvalidArgument(std::string(what) + " must not be NULL"));
}

// Copies a list of ints (ranks, ids, splits) out through the C API's (buffer, capacity, count)
// convention. `*count` is always set; (NULL, 0) is a size query and succeeds, a short buffer is an
// error.
hvd_status_t CopyOutList(const hvd::Result<std::vector<int32_t>>& r, const char* what, int32_t* out,
                         int32_t capacity, int32_t* count) {
  if (count == nullptr) return NullArg("count");
  if (!r.ok()) return Report(r.status());
  *count = static_cast<int32_t>(r->size());
  if (out == nullptr && capacity == 0) return HVD_OK;
  if (out == nullptr) return NullArg(what);
  if (capacity < *count) {
    return Report(Status::InvalidArgument(std::string(what) + " capacity " +
                                          std::to_string(capacity) + " is less than " +
                                          std::to_string(*count)));
  }
  std::copy(r->begin(), r->end(), out);
  return HVD_OK;
}

hvd::Result<TensorSpec> ToSpec(const hvd_tensor_t* t) {
  if (t == nullptr) return Status::InvalidArgument("tensor descriptor must not be NULL");
  if (t->ndim < 0 || t->ndim > HVD_MAX_DIMS) {
    return Status::InvalidArgument("tensor ndim " + std::to_string(t->ndim) +
                                   " is out of range [0, " + std::to_string(HVD_MAX_DIMS) + "]");
  }
  TensorSpec s;
  s.data = t->data;
  s.dtype = static_cast<DataType>(t->dtype);
  s.shape = hvd::runtime::TensorShape(t->shape, static_cast<size_t>(t->ndim));
  s.device = t->device;
  return s;
}

// A grouped call's descriptors, converted into `*out` (the caller's reused scratch).
Status ToSpecs(const hvd_tensor_t* t, int32_t count, std::vector<TensorSpec>* out) {
  if (t == nullptr || count <= 0) {
    return Status::InvalidArgument("tensor list must be non-NULL with count > 0");
  }
  out->clear();
  for (int32_t i = 0; i < count; ++i) {
    HVD_ASSIGN_OR_RETURN(TensorSpec s, ToSpec(&t[i]));
    out->push_back(s);
  }
  return Status::OK();
}

// Per-thread scratch of the enqueue calls: converting a call's descriptors and options
// allocates nothing once the thread has made a similar call (bench/README.md).
struct CallScratch {
  std::vector<TensorSpec> inputs, outputs;
  OpOptions options;
};

CallScratch& Scratch() {
  thread_local CallScratch scratch;
  return scratch;
}

// `splits`: read the alltoall splits (only hvd_alltoall does: another op never reads the
// caller's splits array, which a reused options struct may leave dangling).
const OpOptions& ToOptions(const hvd_op_options_t* o, bool splits = false) {
  hvd_op_options_t defaults;
  if (o == nullptr) {
    hvd_op_options_init(&defaults);
    o = &defaults;
  }
  OpOptions& out = Scratch().options;
  if (o->name != nullptr) {
    out.name.assign(o->name);
  } else {
    out.name.clear();
  }
  out.reduce_op = static_cast<ReduceOp>(o->reduce_op);
  out.prescale = o->prescale_factor;
  out.postscale = o->postscale_factor;
  out.root_rank = o->root_rank;
  out.process_set_id = o->process_set_id;
  out.stream = o->cuda_stream;
  out.wait_now = o->wait_now != 0;
  out.has_splits = splits && o->splits != nullptr;
  out.splits.clear();
  if (out.has_splits) out.splits.assign(o->splits, o->splits + o->num_splits);
  return out;
}

// The body of every enqueue function: checks `handle`, runs `enqueue` (which converts the C
// descriptors and calls the runtime) under Guard, and stores the new handle.
template <typename F>
hvd_status_t EnqueueGuarded(hvd_handle_t* handle, F&& enqueue) {
  return Guard([&] {
    if (handle == nullptr) return NullArg("handle");
    return ReportResult<int64_t>(enqueue(), handle);
  });
}

hvd_status_t InitWith(const std::vector<std::vector<int32_t>>& sets) {
  auto env = hvd::env::Environment::FromProcess();
  auto config = hvd::runtime::LoadRuntimeConfig(env);
  if (!config.ok()) return Report(config.status());
  hvd::log::Configure(config->log_level, !config->log_hide_time,
                      "hvd rank " + std::to_string(config->rank));
  if (!config->log_level_warning.empty()) HVD_LOG_WARNING("{}", config->log_level_warning);
  if (hvd::runtime::IsElasticWorker(*config)) {
    Status elastic = Elastic().Init(Default(), *config, sets);
    if (elastic.ok()) NoteInitialized();
    return Report(elastic);
  }
  Status s = Default().Init(*config, sets);
  if (s.ok()) NoteInitialized();
  if (s.ok() && (config->controller == "mpi" || config->cpu_operations == "mpi")) {
    // A program that exits without hvd_shutdown (return from main) left the background thread
    // polling MPI while the atexit MPI_Finalize ran: MPI_ERRORS_ARE_FATAL aborted the whole job
    // (until 2026-12-01; Python's own exit hook shuts down first). Registered after MPI_Init's
    // MPI_Finalize hook, so it runs before it.
    static std::once_flag registered;
    std::call_once(registered, [] { std::atexit([] { (void)hvd_shutdown(); }); });
  }
  return Report(s);
}

hvd_status_t Topo(int32_t* out, int32_t hvd::runtime::Topology::*field) {
  if (out == nullptr) return NullArg("out");
  auto t = Default().topology();
  if (!t.ok()) return Report(t.status());
  *out = (*t).*field;
  return HVD_OK;
}

}  // namespace

extern "C" {

void hvd_op_options_init(hvd_op_options_t* options) {
  if (options == nullptr) return;
  std::memset(options, 0, sizeof(*options));
  options->name = nullptr;
  options->reduce_op = HVD_OP_SUM;
  options->prescale_factor = 1.0;
  options->postscale_factor = 1.0;
  options->root_rank = 0;
  options->process_set_id = 0;
  options->splits = nullptr;
  options->num_splits = 0;
  options->cuda_stream = nullptr;
}

hvd_status_t hvd_init(void) {
  return Guard([] { return InitWith({}); });
}

hvd_status_t hvd_init_with_process_sets(const int32_t* set_ranks, const int32_t* set_sizes,
                                        int32_t num_sets) {
  return Guard([&] {
    std::vector<std::vector<int32_t>> sets;
    if (num_sets < 0) {
      return Report(Status::InvalidArgument("hvd_init_with_process_sets: num_sets " +
                                            std::to_string(num_sets) + " is negative"));
    }
    if (num_sets > 0 && set_sizes == nullptr) return NullArg("set_sizes");
    int64_t offset = 0;
    for (int32_t i = 0; i < num_sets; ++i) {
      if (set_sizes[i] < 0) return Report(Status::InvalidArgument("negative process set size"));
      // Empty sets only (a Python ProcessSet([])) may come without a ranks array; the runtime
      // names them ("a process set needs at least one rank").
      if (set_sizes[i] > 0 && set_ranks == nullptr) return NullArg("set_ranks");
      sets.emplace_back(set_ranks + offset, set_ranks + offset + set_sizes[i]);
      offset += set_sizes[i];
    }
    return InitWith(sets);
  });
}

hvd_status_t hvd_launch_topology(int32_t* rank, int32_t* size) {
  return Guard([&] {
    auto config = hvd::runtime::LoadRuntimeConfig(hvd::env::Environment::FromProcess());
    if (!config.ok()) return Report(config.status());
    if (rank != nullptr) *rank = config->rank;
    if (size != nullptr) *size = config->size;
    return HVD_OK;
  });
}

hvd_status_t hvd_elastic_round(int64_t* round, int32_t* joined, int64_t* hosts_timestamp) {
  return Guard([&] {
    if (round == nullptr || joined == nullptr || hosts_timestamp == nullptr) {
      return NullArg("round/joined/hosts_timestamp");
    }
    auto a = Elastic().current();
    if (!a.ok()) return Report(a.status());
    *round = a->round;
    *joined = a->joined ? 1 : 0;
    *hosts_timestamp = a->hosts_timestamp;
    return HVD_OK;
  });
}

hvd_status_t hvd_elastic_host_update(int64_t* timestamp, int32_t* flags) {
  return Guard([&] {
    if (timestamp == nullptr || flags == nullptr) return NullArg("timestamp/flags");
    int f = 0;
    Status s = Elastic().HostUpdate(timestamp, &f);
    *flags = f;
    return Report(s);
  });
}

hvd_status_t hvd_elastic_synced(void) {
  return Guard([] { return Report(Elastic().MarkSynced()); });
}

hvd_status_t hvd_shutdown(void) {
  if (InForkedChild()) return HVD_OK;  // the parent's runtime: not this process's to stop
  return Guard([] {
    Status s = Default().Shutdown();
    g_owner_pid.store(0);
    return Report(s);
  });
}

hvd_status_t hvd_abort(const char* reason) {
  return Guard([&] { return Report(Default().Abort(reason ? reason : "")); });
}

hvd_status_t hvd_report_failure(const char* text) {
  if (text == nullptr) return NullArg("text");
  return Guard([&] { return Report(Default().ReportFailure(text)); });
}

hvd_status_t hvd_is_initialized(int32_t* initialized) {
  if (initialized == nullptr) return NullArg("initialized");
  *initialized = !InForkedChild() && Default().initialized() ? 1 : 0;
  return HVD_OK;
}

const char* hvd_last_error(void) { return t_last_error.c_str(); }

const char* hvd_status_name(hvd_status_t status) {
  return hvd::StatusCodeName(static_cast<hvd::StatusCode>(status));
}

hvd_status_t hvd_rank(int32_t* out) { return Topo(out, &hvd::runtime::Topology::rank); }
hvd_status_t hvd_size(int32_t* out) { return Topo(out, &hvd::runtime::Topology::size); }
hvd_status_t hvd_local_rank(int32_t* out) { return Topo(out, &hvd::runtime::Topology::local_rank); }
hvd_status_t hvd_local_size(int32_t* out) { return Topo(out, &hvd::runtime::Topology::local_size); }
hvd_status_t hvd_cross_rank(int32_t* out) { return Topo(out, &hvd::runtime::Topology::cross_rank); }
hvd_status_t hvd_cross_size(int32_t* out) { return Topo(out, &hvd::runtime::Topology::cross_size); }
hvd_status_t hvd_is_homogeneous(int32_t* out) {
  if (out == nullptr) return NullArg("out");
  auto t = Default().topology();
  if (!t.ok()) return Report(t.status());
  *out = t->homogeneous ? 1 : 0;
  return HVD_OK;
}

hvd_status_t hvd_allreduce(const hvd_tensor_t* input, hvd_tensor_t* output,
                           const hvd_op_options_t* options, hvd_handle_t* handle) {
  return EnqueueGuarded(handle, [&]() -> hvd::Result<int64_t> {
    HVD_ASSIGN_OR_RETURN(TensorSpec in, ToSpec(input));
    HVD_ASSIGN_OR_RETURN(TensorSpec out, ToSpec(output));
    return Default().EnqueueAllreduce(std::span(&in, 1), std::span(&out, 1), ToOptions(options),
                                      false);
  });
}

hvd_status_t hvd_grouped_allreduce(const hvd_tensor_t* inputs, hvd_tensor_t* outputs, int32_t count,
                                   const hvd_op_options_t* options, hvd_handle_t* handle) {
  return EnqueueGuarded(handle, [&]() -> hvd::Result<int64_t> {
    CallScratch& scratch = Scratch();
    HVD_RETURN_IF_ERROR(ToSpecs(inputs, count, &scratch.inputs));
    HVD_RETURN_IF_ERROR(ToSpecs(outputs, count, &scratch.outputs));
    return Default().EnqueueAllreduce(std::span<const TensorSpec>(scratch.inputs),
                                      std::span<const TensorSpec>(scratch.outputs),
                                      ToOptions(options), true);
  });
}

hvd_status_t hvd_allgather(const hvd_tensor_t* input, const hvd_op_options_t* options,
                           hvd_handle_t* handle) {
  return EnqueueGuarded(handle, [&]() -> hvd::Result<int64_t> {
    HVD_ASSIGN_OR_RETURN(TensorSpec in, ToSpec(input));
    return Default().EnqueueAllgather(std::span(&in, 1), ToOptions(options), false);
  });
}

hvd_status_t hvd_grouped_allgather(const hvd_tensor_t* inputs, int32_t count,
                                   const hvd_op_options_t* options, hvd_handle_t* handle) {
  return EnqueueGuarded(handle, [&]() -> hvd::Result<int64_t> {
    CallScratch& scratch = Scratch();
    HVD_RETURN_IF_ERROR(ToSpecs(inputs, count, &scratch.inputs));
    return Default().EnqueueAllgather(std::span<const TensorSpec>(scratch.inputs),
                                      ToOptions(options), true);
  });
}

hvd_status_t hvd_broadcast(const hvd_tensor_t* input, hvd_tensor_t* output,
                           const hvd_op_options_t* options, hvd_handle_t* handle) {
  return EnqueueGuarded(handle, [&]() -> hvd::Result<int64_t> {
    HVD_ASSIGN_OR_RETURN(TensorSpec in, ToSpec(input));
    HVD_ASSIGN_OR_RETURN(TensorSpec out, ToSpec(output));
    return Default().EnqueueBroadcast(in, out, ToOptions(options));
  });
}

hvd_status_t hvd_alltoall(const hvd_tensor_t* input, const hvd_op_options_t* options,
                          hvd_handle_t* handle) {
  return EnqueueGuarded(handle, [&]() -> hvd::Result<int64_t> {
    HVD_ASSIGN_OR_RETURN(TensorSpec in, ToSpec(input));
    if (options != nullptr && options->splits == nullptr && options->num_splits != 0) {
      return Status::InvalidArgument("alltoall: splits is NULL but num_splits is " +
                                     std::to_string(options->num_splits));
    }
    // Checked before the array is read: a negative count was taken as 0 until 2026-12-02, and a
    // count past any set's size read that far into the caller's memory.
    if (options != nullptr && options->splits != nullptr &&
        (options->num_splits < 0 || options->num_splits > (1 << 20))) {
      return Status::InvalidArgument("alltoall: num_splits " + std::to_string(options->num_splits) +
                                     " is not one split per rank of the process set");
    }
    return Default().EnqueueAlltoall(in, ToOptions(options, true));
  });
}

hvd_status_t hvd_reducescatter(const hvd_tensor_t* input, const hvd_op_options_t* options,
                               hvd_handle_t* handle) {
  return EnqueueGuarded(handle, [&]() -> hvd::Result<int64_t> {
    HVD_ASSIGN_OR_RETURN(TensorSpec in, ToSpec(input));
    return Default().EnqueueReducescatter(std::span(&in, 1), ToOptions(options), false);
  });
}

hvd_status_t hvd_grouped_reducescatter(const hvd_tensor_t* inputs, int32_t count,
                                       const hvd_op_options_t* options, hvd_handle_t* handle) {
  return EnqueueGuarded(handle, [&]() -> hvd::Result<int64_t> {
    CallScratch& scratch = Scratch();
    HVD_RETURN_IF_ERROR(ToSpecs(inputs, count, &scratch.inputs));
    return Default().EnqueueReducescatter(std::span<const TensorSpec>(scratch.inputs),
                                          ToOptions(options), true);
  });
}

hvd_status_t hvd_barrier(int32_t process_set_id, hvd_handle_t* handle) {
  return EnqueueGuarded(handle, [&] { return Default().EnqueueBarrier(process_set_id); });
}

hvd_status_t hvd_join(int32_t device, hvd_handle_t* handle) {
  return EnqueueGuarded(handle, [&] { return Default().EnqueueJoin(device); });
}

hvd_status_t hvd_poll(hvd_handle_t handle, int32_t* done) {
  return Guard([&] {
    if (done == nullptr) return NullArg("done");
    auto r = Default().Poll(handle);
    if (!r.ok()) return Report(r.status());
    *done = *r ? 1 : 0;
    return HVD_OK;
  });
}

hvd_status_t hvd_wait(hvd_handle_t handle, double timeout_seconds) {
  return Guard([&] {
    if (std::isnan(timeout_seconds)) {
      return Report(Status::InvalidArgument("hvd_wait: timeout_seconds is NaN"));
    }
    return Report(Default().Wait(handle, std::chrono::duration<double>(timeout_seconds)));
  });
}

hvd_status_t hvd_num_outputs(hvd_handle_t handle, int32_t* count) {
  return Guard([&] {
    if (count == nullptr) return NullArg("count");
    return ReportResult<int32_t>(Default().handles().NumOutputs(handle), count);
  });
}

hvd_status_t hvd_output(hvd_handle_t handle, int32_t index, hvd_tensor_t* out) {
  return Guard([&] {
    if (out == nullptr) return NullArg("out");
    auto r = Default().handles().TakeOutput(handle, index);
    if (!r.ok()) return Report(r.status());
    std::memset(out, 0, sizeof(*out));
    out->data = r->data;
    out->dtype = static_cast<hvd_dtype_t>(r->dtype);
    out->ndim = static_cast<int32_t>(r->shape.size());
    for (size_t d = 0; d < r->shape.size() && d < HVD_MAX_DIMS; ++d) out->shape[d] = r->shape[d];
    out->device = r->device;
    return HVD_OK;
  });
}

void hvd_free(void* data) { hvd::runtime::FreeOutputOn(data, nullptr); }

void hvd_free_on_stream(void* data, void* cuda_stream) {
  hvd::runtime::FreeOutputOn(data, cuda_stream);
}

hvd_status_t hvd_received_splits(hvd_handle_t handle, int32_t* splits, int32_t capacity,
                                 int32_t* count) {
  return Guard([&] {
    return CopyOutList(Default().handles().ReceivedSplits(handle), "splits", splits, capacity,
                       count);
  });
}

hvd_status_t hvd_join_result(hvd_handle_t handle, int32_t* last_joined_rank) {
  return Guard([&] {
    if (last_joined_rank == nullptr) return NullArg("last_joined_rank");
    auto r = Default().handles().IntResult(handle);
    if (!r.ok()) return Report(r.status());
    *last_joined_rank = static_cast<int32_t>(*r);
    return HVD_OK;
  });
}

hvd_status_t hvd_release(hvd_handle_t handle) {
  return Guard([&] { return Report(Default().ReleaseHandle(handle)); });
}

hvd_status_t hvd_add_process_set(const int32_t* ranks, int32_t count, int32_t* id) {
  return Guard([&] {
    if (id == nullptr || (ranks == nullptr && count > 0)) return NullArg("ranks/id");
    std::vector<int32_t> v(ranks, ranks + std::max<int32_t>(count, 0));
    return ReportResult<int32_t>(Default().AddProcessSet(std::move(v)), id);
  });
}

hvd_status_t hvd_remove_process_set(int32_t id) {
  return Guard([&] { return Report(Default().RemoveProcessSet(id)); });
}

hvd_status_t hvd_process_set_rank(int32_t id, int32_t* rank) {
  return Guard([&] {
    if (rank == nullptr) return NullArg("rank");
    auto ranks = Default().ProcessSetRanks(id);
    if (!ranks.ok()) return Report(ranks.status());
    auto topo = Default().topology();
    if (!topo.ok()) return Report(topo.status());
    auto it = std::find(ranks->begin(), ranks->end(), topo->rank);
    *rank = it == ranks->end() ? -1 : static_cast<int32_t>(it - ranks->begin());
    return HVD_OK;
  });
}

hvd_status_t hvd_process_set_size(int32_t id, int32_t* size) {
  return Guard([&] {
    if (size == nullptr) return NullArg("size");
    auto ranks = Default().ProcessSetRanks(id);
    if (!ranks.ok()) return Report(ranks.status());
    *size = static_cast<int32_t>(ranks->size());
    return HVD_OK;
  });
}

hvd_status_t hvd_process_set_included(int32_t id, int32_t* included) {
  return Guard([&] {
    if (included == nullptr) return NullArg("included");
    int32_t rank = -1;
    hvd_status_t s = hvd_process_set_rank(id, &rank);
    if (s != HVD_OK) return s;
    *included = rank >= 0 ? 1 : 0;
    return HVD_OK;
  });
}

hvd_status_t hvd_process_set_ranks(int32_t id, int32_t* ranks, int32_t capacity, int32_t* count) {
  return Guard(
      [&] { return CopyOutList(Default().ProcessSetRanks(id), "ranks", ranks, capacity, count); });
}

hvd_status_t hvd_process_set_ids(int32_t* ids, int32_t capacity, int32_t* count) {
  return Guard([&] { return CopyOutList(Default().ProcessSetIds(), "ids", ids, capacity, count); });
}

hvd_status_t hvd_start_timeline(const char* path, int32_t mark_cycles) {
  return Guard([&] {
    if (path == nullptr) return NullArg("path");
    return Report(Default().StartTimeline(path, mark_cycles != 0));
  });
}

hvd_status_t hvd_stop_timeline(void) {
  return Guard([&] { return Report(Default().StopTimeline()); });
}

hvd_status_t hvd_build_flags(uint32_t* flags) {
  if (flags == nullptr) return NullArg("flags");
  *flags = hvd::runtime::BuildFlags();
  return HVD_OK;
}

hvd_status_t hvd_nccl_version(int32_t* version) {
  if (version == nullptr) return NullArg("version");
  *version = hvd::runtime::NcclVersionCode();
  return HVD_OK;
}

hvd_status_t hvd_enabled_flags(uint32_t* flags) {
  if (flags == nullptr) return NullArg("flags");
  if (!Default().initialized()) {
    return Report(Status::NotInitialized(hvd::runtime::kNotInitializedMessage));
  }
  *flags = Default().enabled_flags();
  return HVD_OK;
}

const char* hvd_version(void) { return "0.1.0"; }

}  // extern "C"
