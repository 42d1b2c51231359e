// Runtime's enqueue side: validation of each call and hand-off to the set's tensor queue.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <numeric>

#include "runtime/core/execution/adasum.h"
#include "runtime/core/negotiation/message.h"
#include "runtime/core/runtime.h"
#include "runtime/core/runtime_timeline.h"

namespace hvd::runtime {
namespace {

// The names of `entries`, as a range for HandleManager::Create, without copying them. (Not
// std::views::transform: clang 14, the sanitizer build's compiler, cannot use libstdc++ 12's.)
struct EntryNames {
  std::span<const TensorEntry> entries;
  struct Iterator {
    const TensorEntry* at;
    const std::string& operator*() const { return at->request.name; }
    Iterator& operator++() {
      ++at;
      return *this;
    }
    bool operator!=(const Iterator& other) const { return at != other.at; }
  };
  Iterator begin() const { return {entries.data()}; }
  Iterator end() const { return {entries.data() + entries.size()}; }
};

// "<what> '<name>'" (a grouped op's member: "<name>.<member>"): whom an enqueue error is about.
std::string Subject(const char* what, std::string_view name, int member) {
  std::string out = std::string(what) + " '" + std::string(name);
  if (member >= 0) out += "." + std::to_string(member);
  return out + "'";
}

// The tensor `what` (e.g. "allreduce input") of the op `name`; errors name both. Nothing is
// built unless there is an error.
// A device below -1 (-1 is the CPU).
Status CheckDevice(int32_t device, const char* what, std::string_view name, int member) {
  if (device >= -1) return Status::OK();
  return Status::InvalidArgument(Subject(what, name, member) + ": bad device " +
                                 std::to_string(device));
}

Status CheckTensor(const TensorSpec& t, const char* what, std::string_view name, int member = -1) {
  const int32_t dtype = static_cast<int32_t>(t.dtype);
  if (dtype < 0 || dtype > static_cast<int32_t>(DataType::kBFloat16)) {
    return Status::InvalidArgument(Subject(what, name, member) + ": unknown dtype " +
                                   std::to_string(dtype));
  }
  if (t.shape.size() > 8) {
    return Status::InvalidArgument(Subject(what, name, member) + ": more than 8 dimensions");
  }
  // The byte size must fit in int64: a shape whose product overflows (2^32 x 2^32) used to be
  // accepted, the op "succeeding" on a wrapped size and an allgather reporting its shape. The
  // product of the nonzero dimensions bounds every partial product, as rank 0 checks it
  // (request_validator.cc, at most kMaxTensorElements): until 2026-12-02 a zero dimension
  // turned the check off here ({2^62, 2^62, 0} overflowed, and rank 0 blamed another rank).
  const int64_t max_elements =
      std::min(kMaxTensorElements,
               std::numeric_limits<int64_t>::max() / static_cast<int64_t>(DataTypeSize(t.dtype)));
  int64_t nonzero = 1;
  bool zero = false;
  for (size_t i = 0; i < t.shape.size(); ++i) {
    const int64_t d = t.shape[i];
    if (d < 0) {
      return Status::InvalidArgument(Subject(what, name, member) + ": negative dimension " +
                                     std::to_string(d) + " at index " + std::to_string(i));
    }
    if (d == 0) {
      zero = true;
    } else if (__builtin_mul_overflow(nonzero, d, &nonzero) || nonzero > max_elements) {
      return Status::InvalidArgument(Subject(what, name, member) + ": shape " + ShapeText(t.shape) +
                                     " has too many elements (its nonzero dimensions give "
                                     "more than 2^59, or more bytes than fit in 64 bits)");
    }
  }
  const int64_t n = zero ? 0 : nonzero;
  HVD_RETURN_IF_ERROR(CheckDevice(t.device, what, name, member));
  if (n > 0 && t.data == nullptr) {
    return Status::InvalidArgument(Subject(what, name, member) + ": data is NULL");
  }
  return Status::OK();
}

// An output that differs from its input in dtype or shape, both named.
Status OutputMismatch(const char* op, const TensorSpec& in, const TensorSpec& out,
                      std::string_view name, int member) {
  return Status::InvalidArgument(Subject(op, name, member) + ": the output (" +
                                 DataTypeName(out.dtype) + " " + ShapeText(out.shape) +
                                 ") must have the input's dtype and shape (" +
                                 DataTypeName(in.dtype) + " " + ShapeText(in.shape) + ")");
}

// Appends the decimal digits of `n` to `*out` (no temporary string).
void AppendNumber(std::string* out, int64_t n) {
  char digits[24];
  auto end = std::to_chars(digits, digits + sizeof(digits), n).ptr;
  out->append(digits, end);
}

// Per-thread scratch for building one call's entries. Reused from call to call (the queue
// copies the entries into its own recycled storage), so the enqueue path allocates nothing
// once a thread has made a call of the same shape before.
struct EnqueueScratch {
  ReuseVector<TensorEntry> entries;
  std::string name;  // a generated base name
};

EnqueueScratch& Scratch() {
  thread_local EnqueueScratch scratch;
  scratch.entries.clear();
  return scratch;
}

// Gives the entries' CUDA events (MarkDevice) back to the GPU backend: they will not be waited
// for, as their op failed before it was queued.
void ReleaseReadyEvents(GpuBackend* gpu, std::span<TensorEntry> entries) {
  if (gpu == nullptr) return;
  for (TensorEntry& e : entries) {
    if (e.ready != nullptr) gpu->ReleaseEvent(e.ready);
    e.ready = nullptr;
  }
}

// Gives the CUDA events of the entries marked so far back (ReleaseReadyEvents) when an
// enqueue fails before Submit, which owns them from then on (and releases them itself
// if it fails): a grouped enqueue whose later member fails a check must not keep the earlier
// members' events.
class MarkedEvents {
 public:
  MarkedEvents(GpuBackend* gpu, EnqueueScratch& scratch) : gpu_(gpu), scratch_(scratch) {}
  MarkedEvents(const MarkedEvents&) = delete;
  MarkedEvents& operator=(const MarkedEvents&) = delete;
  ~MarkedEvents() {
    if (!submitted_) ReleaseReadyEvents(gpu_, scratch_.entries);
  }
  // Call right before Submit.
  void Submitting() { submitted_ = true; }

 private:
  GpuBackend* gpu_;
  EnqueueScratch& scratch_;
  bool submitted_ = false;
};

// A cleared entry in the next slot of `entries` (its buffers kept).
TensorEntry& NewEntry(EnqueueScratch& scratch) {
  TensorEntry& e = scratch.entries.Next();
  e.Clear();
  return e;
}

// The request for one tensor. Only reducing ops carry the caller's reduce op and scale
// factors; the others keep Request's neutral defaults (Sum, 1.0), so validation on rank 0
// never compares options that do not apply.
void FillRequest(Request* r, OpType type, std::string_view name, const TensorSpec& t,
                 const OpOptions& o) {
  r->type = type;
  r->name.assign(name);
  r->dtype = t.dtype;
  r->shape.assign(t.shape.begin(), t.shape.end());
  r->device = t.device;
  if (type == OpType::kAllreduce || type == OpType::kReducescatter) {
    r->reduce_op = o.reduce_op;
    r->prescale = o.prescale;
    r->postscale = o.postscale;
  }
}

// The request for member `i` of `n` tensors enqueued under `base`: a grouped op names its
// members "<base>.<i>" and marks them as one group; otherwise the tensor is `base` itself.
void FillMember(Request* r, OpType type, std::string_view base, size_t i, size_t n, bool grouped,
                const TensorSpec& t, const OpOptions& o) {
  FillRequest(r, type, base, t, o);
  if (grouped) {
    r->name.push_back('.');
    AppendNumber(&r->name, static_cast<int64_t>(i));
    r->group.assign(base);
    r->group_size = static_cast<int32_t>(n);
  }
}

std::string DeviceText(int32_t device) {
  return device < 0 ? "the CPU" : "CUDA device " + std::to_string(device);
}

// The members of one call are fused into one buffer of one device: a CPU tensor beside a CUDA
// tensor, or tensors of two GPUs, are refused here, where the caller sees it, instead of failing
// later in a device copy (whose CUDA error then stays pending for the framework's next call).
Status CheckOneDevice(std::span<const TensorSpec> inputs, const char* what, std::string_view base) {
  for (size_t i = 0; i < inputs.size(); ++i) {  // a bad one named as such, not as "the CPU"
    HVD_RETURN_IF_ERROR(CheckDevice(inputs[i].device, what, base, static_cast<int>(i)));
  }
  for (size_t i = 1; i < inputs.size(); ++i) {
    if (inputs[i].device == inputs[0].device) continue;
    return Status::InvalidArgument(Subject(what, base, static_cast<int>(i)) + " is on " +
                                   DeviceText(inputs[i].device) + " but '" + std::string(base) +
                                   ".0' on " + DeviceText(inputs[0].device) +
                                   ": the tensors of one grouped op must be on one device");
  }
  return Status::OK();
}

// NaN never equals itself, so a NaN factor on every rank failed rank 0's comparison as a
// mismatch naming the others (and at one rank gave NaN outputs); an infinite one can only give
// NaN or infinities. Refused here, naming the op (until 2026-12-02 not checked).
Status CheckScale(const OpOptions& o, const char* op, std::string_view name) {
  for (const auto& [factor, which] :
       {std::pair{o.prescale, "prescale"}, {o.postscale, "postscale"}}) {
    if (!std::isfinite(factor)) {
      return Status::InvalidArgument(std::string(op) + " '" + std::string(name) + "': " + which +
                                     " factor " + std::to_string(factor) +
                                     " is not a finite number");
    }
  }
  return Status::OK();
}

Status CheckReduceOp(ReduceOp op, bool reducescatter) {
  const int32_t v = static_cast<int32_t>(op);
  if (v < 0 || v > static_cast<int32_t>(ReduceOp::kProduct)) {
    return Status::InvalidArgument("unknown reduce op " + std::to_string(v));
  }
  if (reducescatter && op != ReduceOp::kSum && op != ReduceOp::kAverage) {
    return Status::InvalidArgument(
        std::string("Reducescatter only supports Sum and Average, not ") + ReduceOpName(op));
  }
  return Status::OK();
}

}  // namespace

std::string_view Runtime::NameOrGenerated(const std::string& name, const char* op,
                                          int32_t process_set_id, std::string* scratch,
                                          UnnamedCount* unnamed) {
  if (!name.empty()) return name;
  unnamed->lock = std::unique_lock<std::mutex>(unnamed_mu_);
  unnamed->count = &unnamed_counts_[process_set_id];
  scratch->assign(op);
  scratch->append(".noname.");
  if (process_set_id != 0) {
    AppendNumber(scratch, process_set_id);
    scratch->push_back('.');
  }
  AppendNumber(scratch, *unnamed->count + 1);
  return *scratch;
}

// GPU tensors: the input (and an output other than it) must be memory of the named device, and
// the entry gets the event that orders the runtime's reads after the producer's stream.
Status Runtime::MarkDevice(TensorEntry* e, const TensorSpec& in, const TensorSpec* out,
                           const OpOptions& o) {
  if (in.device < 0 && (out == nullptr || out->device < 0)) return Status::OK();
  if (gpu_ == nullptr) {
    return Status::InvalidArgument("'" + e->request.name + "': GPU tensors (CUDA device " +
                                   std::to_string(std::max(in.device, out ? out->device : -1)) +
                                   ") need a libhvd built with CUDA and NCCL (hvdrun -cb); move "
                                   "the tensor to the CPU");
  }
  if (out != nullptr && out->device != in.device) {
    return Status::InvalidArgument("'" + e->request.name + "': output on device " +
                                   std::to_string(out->device) + " but input on device " +
                                   std::to_string(in.device));
  }
  const int64_t elements = e->request.NumElements();  // FillRequest copied in.shape
  if (out != nullptr && out->data != in.data && elements > 0) {
    HVD_RETURN_IF_ERROR(
        gpu_->CheckMemory(out->device, out->data).WithContext("'" + e->request.name + "' output"));
  }
  auto ready = gpu_->MarkReady(in.device, elements > 0 ? in.data : nullptr, o.stream);
  if (!ready.ok()) return ready.status().WithContext("'" + e->request.name + "'");
  e->ready = *ready;
  return Status::OK();
}

Result<std::shared_ptr<Controller>> Runtime::ControllerFor(int32_t process_set_id) const {
  // The runtime's state is not looked at on the way to a controller: Submit checks it (under
  // the lock it needs anyway) before anything is queued, so an op on a runtime that is shutting
  // down fails there with the same message. Here it only explains a missing set.
  std::shared_ptr<Controller> controller;
  const bool registered = sets_.FindController(process_set_id, &controller);
  if (registered && controller) return controller;
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    if (state_ == State::kStopped) return Status::NotInitialized(kNotInitializedMessage);
    if (state_ == State::kShutDown) return ShutDownStatusLocked();
  }
  if (!registered) {
    return Status::InvalidArgument("process set " + std::to_string(process_set_id) +
                                   " is not registered");
  }
  return Status::InvalidArgument("rank " + std::to_string(config_.rank) +
                                 " is not a member of process set " +
                                 std::to_string(process_set_id));
}

Result<int64_t> Runtime::Submit(Controller* controller, std::span<TensorEntry> entries,
                                int32_t num_outputs, bool wait_now, UnnamedCount* unnamed) {
  const int64_t handle = handles_.Create(static_cast<int32_t>(entries.size()), num_outputs,
                                         controller->shared_queue(), EntryNames{entries});
  for (auto& e : entries) e.handle = handle;
  Status s;
  bool notify = false;
  {
    // Holding state_mu_ orders this Add before FailEverything's sweep: no entry is orphaned.
    std::lock_guard<std::mutex> lock(state_mu_);
    if (state_ == State::kRunning) {
      // timeline_ is only reset after the state leaves kRunning (under this lock).
      if (timeline_ != nullptr && timeline_->on()) {
        const int64_t now = timeline_->timeline().Now();
        for (auto& e : entries) e.enqueued_us = now;
      }
      s = controller->queue().Add(entries);
      if (s.ok()) {
        // The first enqueue since the last cycle wakes the background thread; an asynchronous
        // one starts a hold (Loop), which a synchronous one ends. The enqueues between do not
        // wake it again: during a hold each wake-up would be a thread switch for nothing.
        notify = !wake_ || (hold_ && wait_now);
        if (!wake_ && !wait_now) {
          hold_ = true;
          hold_until_ =
              std::chrono::steady_clock::now() +
              std::chrono::duration_cast<std::chrono::steady_clock::duration>(knobs_.cycle_time);
          // The loop wakes by itself before the hold ends (it is awake, or in the previous
          // op's hold, while the caller drives) and then holds this batch: no wake needed.
          notify = loop_wakes_at_ > hold_until_;
        } else if (wait_now) {
          hold_ = false;
        }
        wake_ = true;
      }
    } else {
      s = state_ == State::kStopped ? Status::NotInitialized(kNotInitializedMessage)
                                    : ShutDownStatusLocked();
    }
  }
  if (!s.ok()) {
    ReleaseReadyEvents(gpu_.get(), entries);
    handles_.Abandon(handle, s);
    return s;
  }
  if (unnamed != nullptr) unnamed->Taken();  // an unnamed op's number counts once it is queued
  // A synchronous caller drives its own cycle (Runtime::Wait): waking the background thread
  // would cost a futex wake (and on a VM an inter-processor interrupt) per op for nothing.
  if (notify && !(wait_now && CallersMayDrive())) wake_cv_.notify_one();
  return handle;
}

// The handle's names are reserved in its process set's queue until this call.
Status Runtime::ReleaseHandle(int64_t handle) { return handles_.Release(handle); }

Result<int64_t> Runtime::EnqueueAllreduce(std::span<const TensorSpec> inputs,
                                          std::span<const TensorSpec> outputs, const OpOptions& o,
                                          bool grouped) {
  HVD_ASSIGN_OR_RETURN(auto controller, ControllerFor(o.process_set_id));
  HVD_RETURN_IF_ERROR(CheckReduceOp(o.reduce_op, false));
  if (inputs.empty() || inputs.size() != outputs.size()) {
    return Status::InvalidArgument("allreduce needs as many outputs as inputs (at least one)");
  }
  EnqueueScratch& scratch = Scratch();
  UnnamedCount unnamed;
  MarkedEvents marked(gpu_.get(), scratch);
  const std::string_view base = NameOrGenerated(o.name, grouped ? "grouped_allreduce" : "allreduce",
                                                o.process_set_id, &scratch.name, &unnamed);
  HVD_RETURN_IF_ERROR(CheckScale(o, "allreduce", base));
  HVD_RETURN_IF_ERROR(CheckOneDevice(inputs, "allreduce input", base));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const int member = grouped ? static_cast<int>(i) : -1;
    HVD_RETURN_IF_ERROR(CheckTensor(inputs[i], "allreduce input", base, member));
    HVD_RETURN_IF_ERROR(CheckTensor(outputs[i], "allreduce output", base, member));
    if (outputs[i].shape != inputs[i].shape || outputs[i].dtype != inputs[i].dtype) {
      return OutputMismatch("allreduce", inputs[i], outputs[i], base, member);
    }
    // A mean or a scaled bool is not a bool (Horovod's ScaleBuffer has no bool either): until
    // 2026-12-02 Average of a bool tensor silently returned the logical or of the ranks'.
    if (inputs[i].dtype == DataType::kBool &&
        (o.reduce_op == ReduceOp::kAverage || o.prescale != 1.0 || o.postscale != 1.0)) {
      return Status::InvalidArgument(
          "allreduce '" + std::string(base) + (grouped ? "." + std::to_string(i) : std::string()) +
          "': Average and scale factors do not apply to bool tensors (Sum and Max are a logical "
          "or, Min and Product a logical and)");
    }
    if (o.reduce_op == ReduceOp::kAdasum && !AdasumSupports(inputs[i].dtype)) {
      return Status::InvalidArgument(
          std::string("Adasum needs floating-point tensors (float16, bfloat16, float32, "
                      "float64), not ") +
          DataTypeName(inputs[i].dtype) + ": '" + std::string(base) +
          (grouped ? "." + std::to_string(i) : std::string()) + "'");
    }
    TensorEntry& e = NewEntry(scratch);
    FillMember(&e.request, OpType::kAllreduce, base, i, inputs.size(), grouped, inputs[i], o);
    e.input = inputs[i].data;
    e.output = outputs[i].data;
    HVD_RETURN_IF_ERROR(MarkDevice(&e, inputs[i], &outputs[i], o));
  }
  marked.Submitting();
  return Submit(controller.get(), scratch.entries, 0, o.wait_now, &unnamed);
}

Result<int64_t> Runtime::EnqueueAllgather(std::span<const TensorSpec> inputs, const OpOptions& o,
                                          bool grouped) {
  HVD_ASSIGN_OR_RETURN(auto controller, ControllerFor(o.process_set_id));
  if (inputs.empty()) return Status::InvalidArgument("allgather needs at least one tensor");
  EnqueueScratch& scratch = Scratch();
  UnnamedCount unnamed;
  MarkedEvents marked(gpu_.get(), scratch);
  const std::string_view base = NameOrGenerated(o.name, grouped ? "grouped_allgather" : "allgather",
                                                o.process_set_id, &scratch.name, &unnamed);
  HVD_RETURN_IF_ERROR(CheckOneDevice(inputs, "allgather input", base));
  for (size_t i = 0; i < inputs.size(); ++i) {
    HVD_RETURN_IF_ERROR(
        CheckTensor(inputs[i], "allgather input", base, grouped ? static_cast<int>(i) : -1));
    TensorEntry& e = NewEntry(scratch);
    FillMember(&e.request, OpType::kAllgather, base, i, inputs.size(), grouped, inputs[i], o);
    e.input = inputs[i].data;
    e.output_index = static_cast<int32_t>(i);
    HVD_RETURN_IF_ERROR(MarkDevice(&e, inputs[i], nullptr, o));
  }
  marked.Submitting();
  return Submit(controller.get(), scratch.entries, static_cast<int32_t>(inputs.size()), o.wait_now,
                &unnamed);
}

Result<int64_t> Runtime::EnqueueBroadcast(const TensorSpec& input, const TensorSpec& output,
                                          const OpOptions& o) {
  HVD_ASSIGN_OR_RETURN(auto controller, ControllerFor(o.process_set_id));
  EnqueueScratch& scratch = Scratch();
  UnnamedCount unnamed;
  const std::string_view name =
      NameOrGenerated(o.name, "broadcast", o.process_set_id, &scratch.name, &unnamed);
  HVD_RETURN_IF_ERROR(CheckTensor(input, "broadcast input", name));
  HVD_RETURN_IF_ERROR(CheckTensor(output, "broadcast output", name));
  if (output.shape != input.shape || output.dtype != input.dtype) {
    return OutputMismatch("broadcast", input, output, name, -1);
  }
  const auto& ranks = controller->ranks();
  auto it = std::find(ranks.begin(), ranks.end(), o.root_rank);
  if (it == ranks.end()) {
    return Status::InvalidArgument("broadcast root rank " + std::to_string(o.root_rank) +
                                   " is not a member of process set " +
                                   std::to_string(o.process_set_id));
  }
  TensorEntry& e = NewEntry(scratch);
  FillRequest(&e.request, OpType::kBroadcast, name, input, o);
  e.request.root = static_cast<int32_t>(it - ranks.begin());
  e.input = input.data;
  e.output = output.data;
  HVD_RETURN_IF_ERROR(MarkDevice(&e, input, &output, o));
  return Submit(controller.get(), scratch.entries, 0, o.wait_now, &unnamed);
}

Result<int64_t> Runtime::EnqueueAlltoall(const TensorSpec& input, const OpOptions& o) {
  HVD_ASSIGN_OR_RETURN(auto controller, ControllerFor(o.process_set_id));
  EnqueueScratch& scratch = Scratch();
  UnnamedCount unnamed;
  const std::string_view name =
      NameOrGenerated(o.name, "alltoall", o.process_set_id, &scratch.name, &unnamed);
  HVD_RETURN_IF_ERROR(CheckTensor(input, "alltoall input", name));
  const int64_t n = controller->set_size();
  TensorEntry& e = NewEntry(scratch);
  FillRequest(&e.request, OpType::kAlltoall, name, input, o);
  if (input.shape.size() > 0 && o.has_splits) {
    if (static_cast<int64_t>(o.splits.size()) != n) {
      return Status::InvalidArgument(
          "alltoall '" + std::string(name) + "': got " + std::to_string(o.splits.size()) +
          " splits for a process set of " + std::to_string(n) + " ranks");
    }
    int64_t sum = 0;
    for (size_t k = 0; k < o.splits.size(); ++k) {
      if (o.splits[k] < 0) {
        return Status::InvalidArgument(
            "alltoall '" + std::string(name) + "': splits must be non-negative (split " +
            std::to_string(k) + " is " + std::to_string(o.splits[k]) + ")");
      }
      sum += o.splits[k];
    }
    // Rows past the splits' sum are not sent, as in Horovod, whose only check is this one
    // (its message); until 2026-12-01 hvd also refused a sum below the first dimension.
    if (sum > input.shape[0]) {
      return Status::InvalidArgument(
          "Sum of splits entries is greater than the first dimension of tensor (alltoall: " +
          std::to_string(sum) + " > " + std::to_string(input.shape[0]) + ").");
    }
    e.request.args.assign(o.splits.begin(), o.splits.end());
  } else if (input.shape.size() > 0 && input.shape[0] % n != 0) {
    return Status::InvalidArgument("alltoall: the first dimension (" +
                                   std::to_string(input.shape[0]) +
                                   ") must be divisible by the number of ranks (" +
                                   std::to_string(n) + ") when splits are not given");
  } else if (input.shape.size() > 0 && input.shape[0] / n > std::numeric_limits<int32_t>::max()) {
    // The received splits are int32, as Horovod's (until 2026-12-02 they wrapped negative).
    return Status::InvalidArgument("alltoall '" + std::string(name) +
                                   "': " + std::to_string(input.shape[0] / n) +
                                   " rows per rank do not fit the int32 splits");
  }
  e.input = input.data;
  HVD_RETURN_IF_ERROR(MarkDevice(&e, input, nullptr, o));
  return Submit(controller.get(), scratch.entries, 1, o.wait_now, &unnamed);
}

Result<int64_t> Runtime::EnqueueReducescatter(std::span<const TensorSpec> inputs,
                                              const OpOptions& o, bool grouped) {
  HVD_ASSIGN_OR_RETURN(auto controller, ControllerFor(o.process_set_id));
  HVD_RETURN_IF_ERROR(CheckReduceOp(o.reduce_op, true));
  if (inputs.empty()) return Status::InvalidArgument("reducescatter needs at least one tensor");
  EnqueueScratch& scratch = Scratch();
  UnnamedCount unnamed;
  MarkedEvents marked(gpu_.get(), scratch);
  const std::string_view base =
      NameOrGenerated(o.name, grouped ? "grouped_reducescatter" : "reducescatter", o.process_set_id,
                      &scratch.name, &unnamed);
  HVD_RETURN_IF_ERROR(CheckScale(o, "reducescatter", base));
  HVD_RETURN_IF_ERROR(CheckOneDevice(inputs, "reducescatter input", base));
  for (size_t i = 0; i < inputs.size(); ++i) {
    HVD_RETURN_IF_ERROR(
        CheckTensor(inputs[i], "reducescatter input", base, grouped ? static_cast<int>(i) : -1));
    TensorEntry& e = NewEntry(scratch);
    FillMember(&e.request, OpType::kReducescatter, base, i, inputs.size(), grouped, inputs[i], o);
    e.input = inputs[i].data;
    e.output_index = static_cast<int32_t>(i);
    HVD_RETURN_IF_ERROR(MarkDevice(&e, inputs[i], nullptr, o));
  }
  marked.Submitting();
  return Submit(controller.get(), scratch.entries, static_cast<int32_t>(inputs.size()), o.wait_now,
                &unnamed);
}

Result<int64_t> Runtime::EnqueueBarrier(int32_t process_set_id) {
  HVD_ASSIGN_OR_RETURN(auto controller, ControllerFor(process_set_id));
  EnqueueScratch& scratch = Scratch();
  TensorEntry& e = NewEntry(scratch);
  e.request.type = OpType::kBarrier;
  e.request.name = "barrier";
  return Submit(controller.get(), scratch.entries, 0);
}

Result<int64_t> Runtime::EnqueueJoin(int32_t device) {
  HVD_ASSIGN_OR_RETURN(auto controller, ControllerFor(0));
  if (device < -1) return Status::InvalidArgument("join: bad device " + std::to_string(device));
  if (device >= 0 && gpu_ == nullptr) {
    return Status::InvalidArgument("join: CUDA device " + std::to_string(device) +
                                   " needs a libhvd built with CUDA and NCCL (hvdrun -cb); "
                                   "join on the CPU (device -1)");
  }
  EnqueueScratch& scratch = Scratch();
  TensorEntry& e = NewEntry(scratch);
  e.request.type = OpType::kJoin;
  e.request.name = "join";
  e.request.device = device;
  // A GPU response while joined runs on the set's device, else on the last GPU op's; before any
  // GPU op on this one: the device hvd_join named, or for the CPU (-1, Horovod's default) the
  // device current on the caller's thread (a Horovod script's torch.cuda.set_device(local_rank));
  // until 2026-12-01 device 0, which on a local rank other than 0 declared another rank's GPU.
  const int gpu_device = device >= 0 ? device : (gpu_ != nullptr ? gpu_->CurrentDevice() : -1);
  if (gpu_device >= 0) join_device_.store(gpu_device, std::memory_order_relaxed);
  return Submit(controller.get(), scratch.entries, 0);
}

Result<int64_t> Runtime::SubmitControl(Request request) {
  HVD_ASSIGN_OR_RETURN(auto controller, ControllerFor(0));
  EnqueueScratch& scratch = Scratch();
  NewEntry(scratch).request = std::move(request);
  return Submit(controller.get(), scratch.entries, 0);
}

Result<int32_t> Runtime::AddProcessSet(std::vector<int32_t> ranks) {
  HVD_RETURN_IF_ERROR(ControllerFor(0).status());
  if (!config_.dynamic_process_sets) {
    return Status::PreconditionFailed(
        "Adding process sets after init requires HVD_DYNAMIC_PROCESS_SETS=1 (or "
        "hvd.init(process_sets=\"dynamic\"))");
  }
  std::sort(ranks.begin(), ranks.end());
  HVD_RETURN_IF_ERROR(ValidateProcessSetRanks(ranks, config_.size));
  if (auto existing = sets_.FindByRanks(ranks)) {
    return Status::InvalidArgument("a process set with these ranks already exists (id " +
                                   std::to_string(*existing) + ")");
  }
  Request r;
  r.type = OpType::kProcessSetAdd;
  r.name = "process_set.add";  // the same on every rank: RequestValidator compares the ranks
  r.args.assign(ranks.begin(), ranks.end());
  HVD_ASSIGN_OR_RETURN(int64_t handle, SubmitControl(std::move(r)));
  Status s = handles_.Wait(handle, std::chrono::duration<double>(-1));
  auto id = handles_.IntResult(handle);
  (void)ReleaseHandle(handle);
  HVD_RETURN_IF_ERROR(s);
  return static_cast<int32_t>(id.ok() ? *id : -1);
}

Status Runtime::RemoveProcessSet(int32_t id) {
  HVD_RETURN_IF_ERROR(ControllerFor(0).status());
  if (!config_.dynamic_process_sets) {
    return Status::PreconditionFailed("Removing process sets requires HVD_DYNAMIC_PROCESS_SETS=1");
  }
  if (id == 0) return Status::InvalidArgument("the global process set (id 0) cannot be removed");
  if (!sets_.Find(id)) {
    return Status::NotFound("process set " + std::to_string(id) + " is not registered");
  }
  Request r;
  r.type = OpType::kProcessSetRemove;
  r.name = "process_set.remove";  // the same on every rank: RequestValidator compares the ids
  r.args = {id};
  HVD_ASSIGN_OR_RETURN(int64_t handle, SubmitControl(std::move(r)));
  Status s = handles_.Wait(handle, std::chrono::duration<double>(-1));
  (void)ReleaseHandle(handle);
  return s;
}

Result<std::vector<int32_t>> Runtime::ProcessSetRanks(int32_t id) const {
  if (!initialized()) return Status::NotInitialized(kNotInitializedMessage);
  auto info = sets_.Find(id);
  if (!info) return Status::NotFound("process set " + std::to_string(id) + " is not registered");
  return info->ranks;
}

Result<std::vector<int32_t>> Runtime::ProcessSetIds() const {
  if (!initialized()) return Status::NotInitialized(kNotInitializedMessage);
  return sets_.Ids();
}

Result<Topology> Runtime::topology() const {
  if (!initialized()) return Status::NotInitialized(kNotInitializedMessage);
  return topology_;
}

uint32_t Runtime::enabled_flags() const { return enabled_flags_.load(); }

}  // namespace hvd::runtime
