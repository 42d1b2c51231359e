#include "runtime/transports/nccl/nccl_group.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "common/logging.h"
#include "runtime/transports/gpu_path.h"
#include "runtime/transports/nccl/cuda_backend.h"
#include "runtime/transports/nccl/scale_kernels.h"

namespace hvd::runtime {
namespace {

bool NcclType(DataType dtype, ncclDataType_t* out) {
  switch (dtype) {
    case DataType::kUInt8:
      *out = ncclUint8;
      return true;
    case DataType::kInt8:
      *out = ncclInt8;
      return true;
    case DataType::kInt32:
      *out = ncclInt32;
      return true;
    case DataType::kInt64:
      *out = ncclInt64;
      return true;
    case DataType::kFloat16:
      *out = ncclFloat16;
      return true;
    case DataType::kFloat32:
      *out = ncclFloat32;
      return true;
    case DataType::kFloat64:
      *out = ncclFloat64;
      return true;
    case DataType::kBFloat16:
      *out = ncclBfloat16;
      return true;
    default:
      return false;  // int16, uint16 and bool have no NCCL type: staged
  }
}

bool NcclOp(ReduceOp op, ncclRedOp_t* out) {
  switch (op) {
    case ReduceOp::kSum:
      *out = ncclSum;
      return true;
    case ReduceOp::kMin:
      *out = ncclMin;
      return true;
    case ReduceOp::kMax:
      *out = ncclMax;
      return true;
    case ReduceOp::kProduct:
      *out = ncclProd;
      return true;
    default:
      return false;
  }
}

// NCCL's pre-multiplied sum by `scale`, its scalar in the tensor's own type.
ncclResult_t ScaledSum(DataType dtype, ncclDataType_t type, double scale, ncclComm_t comm,
                       ncclRedOp_t* op) {
  union {
    __half h;
    __nv_bfloat16 b;
    float f;
    double d;
  } scalar;
  switch (dtype) {
    case DataType::kFloat16:
      scalar.h = __float2half(static_cast<float>(scale));
      break;
    case DataType::kBFloat16:
      scalar.b = __float2bfloat16(static_cast<float>(scale));
      break;
    case DataType::kFloat32:
      scalar.f = static_cast<float>(scale);
      break;
    default:
      scalar.d = scale;
      break;
  }
  return ncclRedOpCreatePreMulSum(op, &scalar, type, ncclScalarHostImmediate, comm);
}

// NcclGroup's ScalePlan (nccl_group.h) for these factors.
ScalePlan PlanScale(double prescale, double postscale, bool scale_kernel) {
  ScalePlan plan;
  if (!scale_kernel) {
    plan.premul = prescale * postscale;
  } else {
    plan.before = prescale;
    plan.after = postscale;
  }
  return plan;
}

enum class NcclWait { kSettled, kStopped, kLate };

// How often a long wait asks the CPU communicator whether a member is gone (NcclGroup::PeerGone):
// the first time after this much waiting, so that a collective of normal length never asks.
constexpr std::chrono::milliseconds kPeerCheckInterval{100};

// How long WaitWhileInProgress polls without sleeping: a launch that a non-blocking communicator
// finishes on a thread of its own is enqueued within tens of microseconds, and a sleep costs
// its length and more, on every call NCCL answers so (a 50 us sleep took 145 us, a 10 us one
// 105 us, on the 2-vCPU VM: Linux's 50 us timer slack and the VM's timer cost). Timed, not
// counted: what a poll costs differs between NCCL versions.
constexpr std::chrono::microseconds kSettleSpin{200};

// Polls a communicator's asynchronous state (`query`, ncclCommGetAsyncError's) while it is
// ncclInProgress: a non-blocking communicator's init, or a call it has taken but not yet
// enqueued on the stream (e.g. while it connects to a peer for the first time). kSettled with
// the final state in *state; kStopped when `stop()` said so; kLate past `deadline`. A spin of
// kSettleSpin, then 50 us sleeps (PausePoll).
template <typename Query, typename Stop>
NcclWait WaitWhileInProgress(const Query& query, std::chrono::steady_clock::time_point deadline,
                             const Stop& stop, ncclResult_t* state) {
  const auto spin_until = std::chrono::steady_clock::now() + kSettleSpin;
  for (;;) {
    *state = query();
    if (*state != ncclInProgress) return NcclWait::kSettled;
    if (stop()) return NcclWait::kStopped;
    const auto now = std::chrono::steady_clock::now();
    if (now > deadline) return NcclWait::kLate;
    PausePoll(now <= spin_until);
  }
}

// "<mode>\n<machine>\n<PCI bus id>" (gpu_path.h DecideGpuPath). The machine is the NCCL_HOSTID this
// rank declares, as NCCL itself tells hosts apart by it: ranks that declare different ones are on
// different machines to NCCL too, so several of them may share one GPU (NCCL's socket transport
// between them), and each is given its GPU. Otherwise the kernel's host name.
std::string Identity(const std::string& mode, const std::string& host_id, int device) {
  char host[256] = {};
  if (host_id.empty()) {
    gethostname(host, sizeof(host) - 1);
  } else {
    std::snprintf(host, sizeof(host), "NCCL_HOSTID=%s", host_id.c_str());
  }
  char bus[64] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof(bus), device) != cudaSuccess) {
    (void)cudaGetLastError();  // none left pending for the framework's next CUDA call
    std::snprintf(bus, sizeof(bus), "device-%d", device);
  }
  return mode + "\n" + host + "\n" + bus + (HaveScaleKernel(device) ? "\nscale-kernel" : "");
}

}  // namespace

ncclResult_t AsyncState(ncclComm_t comm) {
  ncclResult_t state = ncclSuccess;
  const ncclResult_t query = ncclCommGetAsyncError(comm, &state);
  return query != ncclSuccess ? query : state;
}

NcclGroup::NcclGroup(CudaBackend* backend, ncclComm_t comm, int device, int rank, int size,
                     Communicator* peers, bool scale_kernel)
    : backend_(backend),
      peers_(peers),
      comm_(comm),
      device_(device),
      rank_(rank),
      size_(size),
      scale_kernel_(scale_kernel) {
  backend_->Register(this);
}

NcclGroup::~NcclGroup() {
  backend_->Unregister(this);
  StopCompletions(Status::Aborted("the NCCL group was closed before its op completed"));
  if (stats_.settled > 0 && HVD_LOG_ENABLED(debug)) {
    auto mean_us = [](std::chrono::nanoseconds total, int64_t n) {
      return n > 0 ? static_cast<double>(total.count()) / 1e3 / static_cast<double>(n) : 0.0;
    };
    HVD_LOG_DEBUG(
        "NCCL group of {} members (member {}, device {}): {} calls settled, {} answered "
        "ncclInProgress ({:.1f} us each to settle), {} waits for the device ({:.1f} us each)",
        size_, rank_, device_, stats_.settled, stats_.in_progress,
        mean_us(stats_.in_progress_time, stats_.in_progress), stats_.waits,
        mean_us(stats_.wait_time, stats_.waits));
    if (deferred_waits_.load() > 0) {
      HVD_LOG_DEBUG(
          "NCCL group of {} members (member {}): {} completions off the cycle ({:.1f} us "
          "each from Defer to done)",
          size_, rank_, deferred_waits_.load(),
          mean_us(std::chrono::nanoseconds(deferred_wait_ns_.load()), deferred_waits_.load()));
    }
  }
  // Destroyed on whichever thread clears the process set (hvd.shutdown's): keep its device.
  ScopedDevice scoped(device_);
  // Abort, not destroy: destroying may wait for peers that are gone; aborting frees locally.
  AbortComm();
  if (done_ != nullptr) cudaEventDestroy(done_);
  for (cudaEvent_t e : spare_events_) cudaEventDestroy(e);
  if (fusion_ != nullptr) cudaFree(fusion_);
}

bool NcclGroup::CanReduce(DataType dtype, ReduceOp op, bool scaled) const {
  return NcclReduces(dtype, op, scaled, size_, scale_kernel_);
}

Status NcclGroup::Scale(const void* in, void* out, int64_t count, ncclDataType_t type,
                        double factor, cudaStream_t stream, const char* what) {
  if (factor == 1.0 || count == 0) return Status::OK();
  const cudaError_t err = LaunchScale(in, out, count, type, factor, stream);
  if (err != cudaSuccess) {
    AbortComm();  // as a failed NCCL call: the set fails, its group is unusable
    return CudaError(std::string("NCCL: scaling ") + what + " by " + std::to_string(factor), err);
  }
  return Status::OK();
}

void NcclGroup::AbortComm() {
  std::lock_guard<std::mutex> lock(comm_mu_);
  if (comm_ != nullptr) ncclCommAbort(comm_);
  comm_ = nullptr;
}

Status NcclGroup::Usable() {
  if (deferred_failed_.load()) {
    AbortComm();  // the work queued on the communicator is in an unknown state
    return DeferredFailure();
  }
  std::lock_guard<std::mutex> lock(comm_mu_);  // the completion thread may abort it
  if (comm_ == nullptr) return Status::Aborted("the NCCL communicator was aborted");
  return Status::OK();
}

ncclResult_t NcclGroup::QueryState() {
  std::lock_guard<std::mutex> lock(comm_mu_);
  if (comm_ == nullptr) return ncclInvalidUsage;  // aborted: Usable says so at the next call
  return AsyncState(comm_);
}

Status NcclGroup::NcclFailure(const char* what, ncclResult_t result) {
  // A completion off the cycle that failed aborted the communicator (ncclInvalidUsage from
  // then on): its failure is the one to report.
  if (deferred_failed_.load()) {
    AbortComm();
    return DeferredFailure();
  }
  std::string message = std::string("NCCL ") + what + " failed: " + ncclGetErrorString(result);
  {
    std::lock_guard<std::mutex> lock(comm_mu_);
    const char* last = comm_ != nullptr ? ncclGetLastError(comm_) : nullptr;
    if (last != nullptr && *last != '\0') message += std::string(" (") + last + ")";
  }
  AbortComm();
  return result == ncclRemoteError ? Status::RemoteError(message) : Status::Internal(message);
}

bool NcclGroup::Stopping() const {
  return abort_requested_.load() || backend_->aborted() || deferred_failed_.load();
}

bool NcclGroup::PeerGone(std::chrono::steady_clock::time_point* next, Status* gone) const {
  if (peers_ == nullptr) return false;
  const auto now = std::chrono::steady_clock::now();
  if (now < *next) return false;
  *next = now + kPeerCheckInterval;
  *gone = peers_->CheckPeers();
  return !gone->ok();
}

Status NcclGroup::Settle(ncclResult_t result, const char* what) {
  ++stats_.settled;
  if (result == ncclSuccess) return Status::OK();
  if (result != ncclInProgress) return NcclFailure(what, result);
  ncclResult_t state = ncclSuccess;
  const auto started = std::chrono::steady_clock::now();
  auto next_check = started + kPeerCheckInterval;
  Status gone;
  const NcclWait waited =
      WaitWhileInProgress([&] { return QueryState(); }, started + backend_->timeout(),
                          [&] { return Stopping() || PeerGone(&next_check, &gone); }, &state);
  ++stats_.in_progress;
  stats_.in_progress_time += std::chrono::steady_clock::now() - started;
  if (waited == NcclWait::kSettled) {
    return state == ncclSuccess ? Status::OK() : NcclFailure(what, state);
  }
  AbortComm();
  if (waited == NcclWait::kStopped) {
    if (!gone.ok()) return Status::RemoteError(std::string("NCCL ") + what + ": " + gone.message());
    if (deferred_failed_.load()) return DeferredFailure();
    return Status::Aborted(std::string("NCCL ") + what + " aborted");
  }
  return Status::Timeout(std::string("NCCL ") + what + " was not enqueued within " +
                         backend_->TimeoutText() + "; a peer is gone or stuck");
}

Status NcclGroup::Wait(cudaStream_t stream, const char* what) {
  if (done_ == nullptr) {
    cudaError_t err = cudaEventCreateWithFlags(&done_, cudaEventDisableTiming);
    if (err != cudaSuccess) return CudaError("creating a CUDA event", err);
  }
  cudaError_t err = cudaEventRecord(done_, stream);
  if (err != cudaSuccess) {
    AbortComm();  // the work queued on the communicator is in an unknown state
    return CudaError(std::string("NCCL ") + what, err);
  }
  const auto started = std::chrono::steady_clock::now();
  auto next_check = started + kPeerCheckInterval;
  auto check = [&] {
    const ncclResult_t async = QueryState();
    if (async != ncclSuccess && async != ncclInProgress) return NcclFailure(what, async);
    if (deferred_failed_.load()) return DeferredFailure();
    if (Stopping()) {
      return Status::Aborted(std::string("NCCL ") + what + " aborted");
    }
    Status gone;
    if (PeerGone(&next_check, &gone)) {
      return Status::RemoteError(std::string("NCCL ") + what + ": " + gone.message());
    }
    return Status::OK();
  };
  Status st = PollEvent(
      done_, started + backend_->timeout(), check,
      [&](cudaError_t e) { return CudaError(std::string("NCCL ") + what, e); },
      [&] {
        return Status::Timeout(std::string("NCCL ") + what + " did not finish within " +
                               backend_->TimeoutText() + "; a peer is gone or stuck");
      });
  // The event also completes when NCCL's kernels stopped early on a failed communicator (its
  // abort flag; the emulated GPU's broken communicator), leaving the outputs unwritten: the op
  // is done only if its communicator still reports no error. A poll that found the event done
  // at its first query had not asked.
  if (st.ok()) st = check();
  ++stats_.waits;
  stats_.wait_time += std::chrono::steady_clock::now() - started;
  if (!st.ok()) AbortComm();  // the work queued on the communicator is in an unknown state
  return st;
}

Result<void*> NcclGroup::Fusion(int64_t bytes) {
  if (bytes <= fusion_bytes_ && fusion_ != nullptr) return fusion_;
  if (fusion_ != nullptr) {
    // cudaFree waits for the whole device, unbounded: with allreduces completed off the cycle
    // still queued (or a peer gone in one of them) this thread would block in it past the
    // timeout and hvd_abort. Wait for the stream first, as an op's wait is bounded.
    HVD_ASSIGN_OR_RETURN(cudaStream_t stream, backend_->Stream(device_));
    HVD_RETURN_IF_ERROR(Wait(stream, "allreduce"));
    if (cudaFree(fusion_) != cudaSuccess) (void)cudaGetLastError();  // none left for the caller
  }
  fusion_ = nullptr;
  fusion_bytes_ = 0;
  const int64_t grown = std::max<int64_t>(bytes, int64_t{1} << 20);
  cudaError_t err = cudaMalloc(&fusion_, static_cast<size_t>(grown));
  if (err != cudaSuccess) {
    fusion_ = nullptr;
    return CudaError("allocating the " + std::to_string(grown) + "-byte device fusion buffer", err);
  }
  fusion_bytes_ = grown;
  return fusion_;
}

Status NcclGroup::Allreduce(std::span<const void* const> inputs, std::span<void* const> outputs,
                            std::span<const int64_t> counts, DataType dtype, ReduceOp op,
                            double prescale, double postscale) {
  HVD_RETURN_IF_ERROR(EnqueueAllreduce(inputs, outputs, counts, dtype, op, prescale, postscale));
  HVD_ASSIGN_OR_RETURN(cudaStream_t stream, backend_->Stream(device_));
  return Wait(stream, "allreduce");
}

Status NcclGroup::EnqueueAllreduce(std::span<const void* const> inputs,
                                   std::span<void* const> outputs, std::span<const int64_t> counts,
                                   DataType dtype, ReduceOp op, double prescale, double postscale) {
  HVD_RETURN_IF_ERROR(Usable());
  ncclDataType_t type;
  ncclRedOp_t nop;
  if (!NcclType(dtype, &type) || !NcclOp(op, &nop)) {
    return Status::Internal("NCCL allreduce of an unsupported type or op");
  }
  HVD_ASSIGN_OR_RETURN(cudaStream_t stream, backend_->Stream(device_));
  const ScalePlan plan = PlanScale(prescale, postscale, scale_kernel_);
  const bool scaled = plan.scaled();
  if (scaled) {
    HVD_RETURN_IF_ERROR(
        Settle(Locked([&](ncclComm_t c) { return ScaledSum(dtype, type, plan.premul, c, &nop); }),
               "scaled sum"));
  }
  Status enqueued = Enqueue(inputs, outputs, counts, static_cast<int64_t>(DataTypeSize(dtype)),
                            type, nop, plan, stream);
  // Legal once the allreduce that uses it is enqueued (settled), or on no communicator at all.
  if (scaled) Locked([&](ncclComm_t c) { return ncclRedOpDestroy(nop, c); });
  return enqueued;
}

// One tensor: straight from input to output (prescaled: the kernel writes the output, which
// NCCL then reduces in place). Several (or a joined rank's zeros): through the device fusion
// buffer, each input copied (or prescaled) into it; the copies out follow the allreduce on the
// stream only once NCCL has enqueued it (Settle), so they wait for it.
Status NcclGroup::Enqueue(std::span<const void* const> inputs, std::span<void* const> outputs,
                          std::span<const int64_t> counts, int64_t elem, ncclDataType_t type,
                          ncclRedOp_t op, const ScalePlan& plan, cudaStream_t stream) {
  if (inputs.size() == 1 && inputs[0] != nullptr) {
    const void* from = inputs[0];
    if (plan.before != 1.0) {
      HVD_RETURN_IF_ERROR(
          Scale(from, outputs[0], counts[0], type, plan.before, stream, "the input"));
      from = outputs[0];
    }
    HVD_RETURN_IF_ERROR(Settle(Locked([&](ncclComm_t c) {
                                 return ncclAllReduce(from, outputs[0],
                                                      static_cast<size_t>(counts[0]), type, op, c,
                                                      stream);
                               }),
                               "allreduce"));
    return Scale(outputs[0], outputs[0], counts[0], type, plan.after, stream, "the result");
  }
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  HVD_ASSIGN_OR_RETURN(void* fusion, Fusion(total * elem));
  char* buf = static_cast<char*>(fusion);
  int64_t offset = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const size_t bytes = static_cast<size_t>(counts[i] * elem);
    if (inputs[i] != nullptr && plan.before != 1.0) {
      HVD_RETURN_IF_ERROR(
          Scale(inputs[i], buf + offset, counts[i], type, plan.before, stream, "an input"));
    } else {
      cudaError_t err = inputs[i] != nullptr ? cudaMemcpyAsync(buf + offset, inputs[i], bytes,
                                                               cudaMemcpyDeviceToDevice, stream)
                                             : cudaMemsetAsync(buf + offset, 0, bytes, stream);
      if (err != cudaSuccess) return CudaError("filling the device fusion buffer", err);
    }
    offset += static_cast<int64_t>(bytes);
  }
  HVD_RETURN_IF_ERROR(Settle(Locked([&](ncclComm_t c) {
                               return ncclAllReduce(buf, buf, static_cast<size_t>(total), type, op,
                                                    c, stream);
                             }),
                             "allreduce"));
  HVD_RETURN_IF_ERROR(Scale(buf, buf, total, type, plan.after, stream, "the result"));
  offset = 0;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const size_t bytes = static_cast<size_t>(counts[i] * elem);
    if (outputs[i] != nullptr) {
      cudaError_t err =
          cudaMemcpyAsync(outputs[i], buf + offset, bytes, cudaMemcpyDeviceToDevice, stream);
      if (err != cudaSuccess) return CudaError("emptying the device fusion buffer", err);
    }
    offset += static_cast<int64_t>(bytes);
  }
  return Status::OK();
}

Status NcclGroup::Broadcast(const void* input, void* output, int64_t bytes, int root) {
  HVD_RETURN_IF_ERROR(Usable());
  HVD_ASSIGN_OR_RETURN(cudaStream_t stream, backend_->Stream(device_));
  HVD_RETURN_IF_ERROR(Settle(Locked([&](ncclComm_t c) {
                               return ncclBroadcast(input, output, static_cast<size_t>(bytes),
                                                    ncclUint8, root, c, stream);
                             }),
                             "broadcast"));
  return Wait(stream, "broadcast");
}

Result<cudaStream_t> NcclGroup::Begin(size_t sizes) {
  HVD_RETURN_IF_ERROR(Usable());
  if (sizes != static_cast<size_t>(size_)) {
    return Status::Internal("NCCL call with " + std::to_string(sizes) + " sizes for " +
                            std::to_string(size_) + " members");
  }
  return backend_->Stream(device_);
}

template <typename Calls>
Status NcclGroup::Grouped(const char* what, const Calls& calls) {
  ncclResult_t start = ncclSuccess, first = ncclSuccess, end = ncclSuccess;
  {
    std::lock_guard<std::mutex> lock(comm_mu_);  // the whole group is one use of comm_
    if (comm_ == nullptr) return Status::Aborted("the NCCL communicator was aborted");
    start = ncclGroupStart();
    if (start == ncclSuccess) {
      first = calls(comm_);
      // Ended whatever happened: the group depth is the thread's, and this thread goes on.
      end = ncclGroupEnd();
    }
  }
  if (start != ncclSuccess) return NcclFailure(what, start);
  if (first != ncclSuccess && first != ncclInProgress) return NcclFailure(what, first);
  return Settle(end, what);
}

namespace {

bool AllEqual(std::span<const int64_t> sizes) {
  return std::all_of(sizes.begin(), sizes.end(), [&](int64_t v) { return v == sizes[0]; });
}

bool Failed(ncclResult_t r) { return r != ncclSuccess && r != ncclInProgress; }

}  // namespace

Status NcclGroup::Allgatherv(const void* input, void* output,
                             std::span<const int64_t> bytes_per_rank) {
  HVD_ASSIGN_OR_RETURN(cudaStream_t stream, Begin(bytes_per_rank.size()));
  if (AllEqual(bytes_per_rank)) {
    if (bytes_per_rank[0] == 0) return Status::OK();
    return Settle(Locked([&](ncclComm_t c) {
                    return ncclAllGather(input, output, static_cast<size_t>(bytes_per_rank[0]),
                                         ncclUint8, c, stream);
                  }),
                  "allgather");
  }
  return Grouped("allgather", [&](ncclComm_t comm) {
    char* to = static_cast<char*>(output);
    for (int k = 0; k < size_; ++k) {
      const auto bytes = static_cast<size_t>(bytes_per_rank[k]);
      if (bytes > 0) {
        // The root sends from its input; the others' send buffer is not read.
        const ncclResult_t r =
            ncclBroadcast(k == rank_ ? input : to, to, bytes, ncclUint8, k, comm, stream);
        if (Failed(r)) return r;
      }
      to += bytes;
    }
    return ncclSuccess;
  });
}

Status NcclGroup::ReduceScatter(const void* input, void* output,
                                std::span<const int64_t> counts_per_rank, DataType dtype,
                                ReduceOp op, double prescale, double postscale) {
  HVD_ASSIGN_OR_RETURN(cudaStream_t stream, Begin(counts_per_rank.size()));
  ncclDataType_t type;
  ncclRedOp_t nop;
  if (!NcclType(dtype, &type) || !NcclOp(op, &nop)) {
    return Status::Internal("NCCL reducescatter of an unsupported type or op");
  }
  const ScalePlan plan = PlanScale(prescale, postscale, scale_kernel_);
  if (plan.before != 1.0) {
    // The caller's input stays as it is: the prescaled copy goes to the fusion buffer.
    int64_t total = 0;
    for (int64_t c : counts_per_rank) total += c;
    HVD_ASSIGN_OR_RETURN(void* scaled_input,
                         Fusion(total * static_cast<int64_t>(DataTypeSize(dtype))));
    HVD_RETURN_IF_ERROR(Scale(input, scaled_input, total, type, plan.before, stream, "the input"));
    input = scaled_input;
  }
  const bool scaled = plan.scaled();
  if (scaled) {
    HVD_RETURN_IF_ERROR(
        Settle(Locked([&](ncclComm_t c) { return ScaledSum(dtype, type, plan.premul, c, &nop); }),
               "scaled sum"));
  }
  Status s;
  if (AllEqual(counts_per_rank)) {
    if (counts_per_rank[0] > 0) {
      s = Settle(Locked([&](ncclComm_t c) {
                   return ncclReduceScatter(input, output, static_cast<size_t>(counts_per_rank[0]),
                                            type, nop, c, stream);
                 }),
                 "reducescatter");
    }
  } else {
    const size_t elem = DataTypeSize(dtype);
    s = Grouped("reducescatter", [&](ncclComm_t comm) {
      const char* from = static_cast<const char*>(input);
      for (int k = 0; k < size_; ++k) {
        const auto count = static_cast<size_t>(counts_per_rank[k]);
        if (count > 0) {
          // Only member k's receive buffer is written; the others' is not touched.
          const ncclResult_t r = ncclReduce(from, output, count, type, nop, k, comm, stream);
          if (Failed(r)) return r;
        }
        from += count * elem;
      }
      return ncclSuccess;
    });
  }
  // Legal once the calls that use it are enqueued (settled), or on no communicator at all.
  if (scaled) Locked([&](ncclComm_t c) { return ncclRedOpDestroy(nop, c); });
  HVD_RETURN_IF_ERROR(s);
  return Scale(output, output, counts_per_rank[rank_], type, plan.after, stream, "the result");
}

Status NcclGroup::Alltoallv(const void* input, std::span<const int64_t> send_bytes, void* output,
                            std::span<const int64_t> recv_bytes) {
  HVD_ASSIGN_OR_RETURN(cudaStream_t stream, Begin(send_bytes.size()));
  if (recv_bytes.size() != send_bytes.size() || send_bytes[rank_] != recv_bytes[rank_]) {
    return Status::Internal("NCCL alltoall: this member sends itself " +
                            std::to_string(send_bytes[rank_]) + " bytes but receives " +
                            (recv_bytes.size() == send_bytes.size()
                                 ? std::to_string(recv_bytes[rank_])
                                 : std::string("a list of another length")));
  }
  const char* from = static_cast<const char*>(input);
  char* to = static_cast<char*>(output);
  int64_t send_at = 0, recv_at = 0, peers = 0;
  for (int k = 0; k < size_; ++k) {
    if (k == rank_ && send_bytes[k] > 0) {
      cudaError_t err =
          cudaMemcpyAsync(to + recv_at, from + send_at, static_cast<size_t>(send_bytes[k]),
                          cudaMemcpyDeviceToDevice, stream);
      if (err != cudaSuccess) {
        AbortComm();  // as a failed NCCL call: the set fails, its group is unusable
        return CudaError("NCCL alltoall: copying this member's own piece", err);
      }
    } else if (k != rank_ && (send_bytes[k] > 0 || recv_bytes[k] > 0)) {
      ++peers;
    }
    send_at += send_bytes[k];
    recv_at += recv_bytes[k];
  }
  if (peers == 0) return Status::OK();
  return Grouped("alltoall", [&](ncclComm_t comm) {
    int64_t sent = 0, received = 0;
    for (int k = 0; k < size_; ++k) {
      if (k != rank_ && send_bytes[k] > 0) {
        const ncclResult_t r =
            ncclSend(from + sent, static_cast<size_t>(send_bytes[k]), ncclUint8, k, comm, stream);
        if (Failed(r)) return r;
      }
      if (k != rank_ && recv_bytes[k] > 0) {
        const ncclResult_t r =
            ncclRecv(to + received, static_cast<size_t>(recv_bytes[k]), ncclUint8, k, comm, stream);
        if (Failed(r)) return r;
      }
      sent += send_bytes[k];
      received += recv_bytes[k];
    }
    return ncclSuccess;
  });
}

Status NcclGroup::Finish(const char* what) {
  HVD_RETURN_IF_ERROR(Usable());
  HVD_ASSIGN_OR_RETURN(cudaStream_t stream, backend_->Stream(device_));
  return Wait(stream, what);
}

Result<std::unique_ptr<GpuGroup>> CreateNcclGroup(CudaBackend* backend, Communicator* cpu,
                                                  int device, const std::string& mode) {
  cudaError_t err = cudaSetDevice(device);
  if (err != cudaSuccess) return CudaError("selecting CUDA device " + std::to_string(device), err);
  std::vector<std::string> identities;
  HVD_RETURN_IF_ERROR(cpu->GatherBytes(Identity(mode, backend->host_id(), device), 0, &identities));
  std::string decision;
  if (cpu->rank() == 0) {
    decision = DecideGpuPath(identities);
    if (decision[0] == 'N') {
      ncclUniqueId id;
      ncclResult_t r = ncclGetUniqueId(&id);
      if (r != ncclSuccess) {
        decision = std::string("EncclGetUniqueId failed: ") + ncclGetErrorString(r);
      } else {
        decision.append(id.internal, sizeof(id.internal));
      }
    }
  }
  HVD_RETURN_IF_ERROR(cpu->BroadcastBytes(&decision, 0));
  HVD_ASSIGN_OR_RETURN(const GpuDecision path, ReadGpuDecision(decision));
  if (!path.nccl) return std::unique_ptr<GpuGroup>();
  const bool scale_kernel = path.scale_kernel;
  ncclUniqueId id;
  static_assert(sizeof(id.internal) == kNcclUniqueIdBytes);
  std::memcpy(id.internal, path.unique_id.data(), sizeof(id.internal));
  // Non-blocking, so that this rank's wait for the others is bounded and can be stopped: a
  // member that died after the id exchange, or never reaches its first GPU op, would otherwise
  // keep the rest in NCCL's bootstrap for ever (ncclCommInitRank has no timeout). Every later
  // call on the communicator may then answer ncclInProgress too (NcclGroup::Settle).
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  ncclResult_t r = ncclCommInitRankConfig(&comm, cpu->size(), id, cpu->rank(), &config);
  ncclResult_t state = r;
  // A member that died after the id exchange is seen by the CPU communicator at once.
  auto next_check = std::chrono::steady_clock::now() + kPeerCheckInterval;
  Status gone;
  const auto stop = [&] {
    if (backend->aborted()) return true;
    const auto now = std::chrono::steady_clock::now();
    if (now < next_check) return false;
    next_check = now + kPeerCheckInterval;
    gone = cpu->CheckPeers();
    return !gone.ok();
  };
  const NcclWait waited =
      r == ncclInProgress
          ? WaitWhileInProgress([&] { return AsyncState(comm); },
                                std::chrono::steady_clock::now() + backend->timeout(), stop, &state)
          : NcclWait::kSettled;
  if (waited != NcclWait::kSettled || state != ncclSuccess) {
    std::string message = "creating the NCCL communicator of " + std::to_string(cpu->size()) +
                          " ranks (this is rank " + std::to_string(cpu->rank()) + ") ";
    if (waited == NcclWait::kLate) {
      message += "did not finish within " + backend->TimeoutText() +
                 ": a member did not join (it exited, or has not reached its first GPU "
                 "collective)";
    } else if (waited == NcclWait::kStopped) {
      message += gone.ok() ? "was aborted" : "failed: " + gone.message();
    } else {
      message += std::string("failed: ") + ncclGetErrorString(state);
      const char* last = ncclGetLastError(comm);
      if (last != nullptr && *last != '\0') message += std::string(" (") + last + ")";
    }
    if (comm != nullptr) ncclCommAbort(comm);  // also ends an init still in progress
    if (waited == NcclWait::kLate) return Status::Timeout(message);
    if (waited == NcclWait::kStopped) {
      return gone.ok() ? Status::Aborted(message) : Status::RemoteError(message);
    }
    return Status::Internal(message);
  }
  return std::unique_ptr<GpuGroup>(std::make_unique<NcclGroup>(backend, comm, device, cpu->rank(),
                                                               cpu->size(), cpu, scale_kernel));
}

}  // namespace hvd::runtime
