#include "runtime/transports/nccl/nccl_group.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <thread>

#include "runtime/transports/nccl/cuda_backend.h"

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

bool IsFloat(DataType dtype) {
  return dtype == DataType::kFloat16 || dtype == DataType::kFloat32 ||
         dtype == DataType::kFloat64 || dtype == DataType::kBFloat16;
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

enum class NcclWait { kSettled, kStopped, kLate };

// Polls `comm`'s asynchronous state (ncclCommGetAsyncError) while it is ncclInProgress: a
// non-blocking communicator's init, or a call it has taken but not yet enqueued on the stream
// (e.g. while it connects to a peer for the first time). kSettled with the final state in
// *state; kStopped when `stop()` said so; kLate past `deadline`. A short spin, then 50 us sleeps.
template <typename Stop>
NcclWait WaitWhileInProgress(ncclComm_t comm, std::chrono::steady_clock::time_point deadline,
                             const Stop& stop, ncclResult_t* state) {
  for (int polls = 0;; ++polls) {
    const ncclResult_t query = ncclCommGetAsyncError(comm, state);
    if (query != ncclSuccess) *state = query;
    if (*state != ncclInProgress) return NcclWait::kSettled;
    if (stop()) return NcclWait::kStopped;
    if (std::chrono::steady_clock::now() > deadline) return NcclWait::kLate;
    if (polls > 200) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

// "<mode>\n<machine>\n<PCI bus id>" (DecideGpuPath). The machine is the NCCL_HOSTID this rank
// declares, as NCCL itself tells hosts apart by it: ranks that declare different ones are on
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
    std::snprintf(bus, sizeof(bus), "device-%d", device);
  }
  return mode + "\n" + host + "\n" + bus;
}

}  // namespace

std::string DecideGpuPath(const std::vector<std::string>& identities) {
  std::string mode0;
  std::map<std::string, size_t> owner;  // "<host>\n<bus>" -> first rank using it
  std::string shared;
  for (size_t r = 0; r < identities.size(); ++r) {
    const std::string& id = identities[r];
    const size_t cut = id.find('\n');
    const std::string mode = id.substr(0, cut);
    const std::string where = cut == std::string::npos ? "" : id.substr(cut + 1);
    if (r == 0) mode0 = mode;
    if (mode != mode0) {
      return "EHVD_GPU_OPERATIONS differs between ranks: set rank 0 has '" + mode0 +
             "', set rank " + std::to_string(r) + " has '" + mode + "'";
    }
    auto [it, fresh] = owner.emplace(where, r);
    if (!fresh && shared.empty()) {
      std::string gpu = where;
      std::replace(gpu.begin(), gpu.end(), '\n', ' ');
      shared = "set ranks " + std::to_string(it->second) + " and " + std::to_string(r) +
               " share the GPU " + gpu;
    }
  }
  if (mode0 == "cpu") return "S";
  if (shared.empty()) return "N";
  if (mode0 == "nccl") {
    return "EHVD_GPU_OPERATIONS=nccl needs a GPU per rank, but " + shared +
           " (NCCL refuses two ranks on one device); use HVD_GPU_OPERATIONS=auto or cpu to "
           "stage through host memory";
  }
  return "S";
}

NcclGroup::NcclGroup(CudaBackend* backend, ncclComm_t comm, int device, int size)
    : backend_(backend), comm_(comm), device_(device), size_(size) {
  backend_->Register(this);
}

NcclGroup::~NcclGroup() {
  backend_->Unregister(this);
  // Destroyed on whichever thread clears the process set (hvd.shutdown's): keep its device.
  ScopedDevice scoped(device_);
  // Abort, not destroy: destroying may wait for peers that are gone; aborting frees locally.
  AbortComm();
  if (done_ != nullptr) cudaEventDestroy(done_);
  if (fusion_ != nullptr) cudaFree(fusion_);
}

bool NcclGroup::CanAllreduce(DataType dtype, ReduceOp op, bool scaled) const {
  ncclDataType_t type;
  ncclRedOp_t nop;
  if (!NcclType(dtype, &type) || !NcclOp(op, &nop)) return false;
  // A one-rank communicator runs a pre-multiplied sum as its own scaling kernel, not a
  // collective, and NCCL 2.28's left the last element of a 17x17x17 float32 tensor unwritten
  // (Horovod's prescale test: 0 where the others were right). Such a set is staged instead,
  // where the host scales; its unscaled allreduce stays on NCCL (a plain copy there).
  if (scaled && size_ == 1) return false;
  return !scaled || (op == ReduceOp::kSum && IsFloat(dtype));
}

void NcclGroup::AbortComm() {
  if (comm_ != nullptr) ncclCommAbort(comm_);
  comm_ = nullptr;
}

Status NcclGroup::NcclFailure(const char* what, ncclResult_t result) {
  const char* last = ncclGetLastError(comm_);
  std::string message = std::string("NCCL ") + what + " failed: " + ncclGetErrorString(result);
  if (last != nullptr && *last != '\0') message += std::string(" (") + last + ")";
  AbortComm();
  return result == ncclRemoteError ? Status::RemoteError(message) : Status::Internal(message);
}

bool NcclGroup::Stopping() const { return abort_requested_.load() || backend_->aborted(); }

Status NcclGroup::Settle(ncclResult_t result, const char* what) {
  if (result == ncclSuccess) return Status::OK();
  if (result != ncclInProgress) return NcclFailure(what, result);
  ncclResult_t state = ncclSuccess;
  const NcclWait waited = WaitWhileInProgress(
      comm_, std::chrono::steady_clock::now() + backend_->timeout(), [&] { return Stopping(); },
      &state);
  if (waited == NcclWait::kSettled) {
    return state == ncclSuccess ? Status::OK() : NcclFailure(what, state);
  }
  AbortComm();
  if (waited == NcclWait::kStopped) {
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
  Status st = PollEvent(
      done_, std::chrono::steady_clock::now() + backend_->timeout(),
      [&] {
        ncclResult_t async = ncclSuccess;
        ncclCommGetAsyncError(comm_, &async);
        if (async != ncclSuccess && async != ncclInProgress) return NcclFailure(what, async);
        if (Stopping()) {
          return Status::Aborted(std::string("NCCL ") + what + " aborted");
        }
        return Status::OK();
      },
      [&](cudaError_t e) { return CudaError(std::string("NCCL ") + what, e); },
      [&] {
        return Status::Timeout(std::string("NCCL ") + what + " did not finish within " +
                               backend_->TimeoutText() + "; a peer is gone or stuck");
      });
  if (!st.ok()) AbortComm();  // the work queued on the communicator is in an unknown state
  return st;
}

Result<void*> NcclGroup::Fusion(int64_t bytes) {
  if (bytes <= fusion_bytes_ && fusion_ != nullptr) return fusion_;
  if (fusion_ != nullptr) cudaFree(fusion_);
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
                            double scale) {
  if (comm_ == nullptr) return Status::Aborted("the NCCL communicator was aborted");
  ncclDataType_t type;
  ncclRedOp_t nop;
  if (!NcclType(dtype, &type) || !NcclOp(op, &nop)) {
    return Status::Internal("NCCL allreduce of an unsupported type or op");
  }
  HVD_ASSIGN_OR_RETURN(cudaStream_t stream, backend_->Stream(device_));
  const bool scaled = scale != 1.0;
  if (scaled) HVD_RETURN_IF_ERROR(Settle(ScaledSum(dtype, type, scale, comm_, &nop), "scaled sum"));
  Status enqueued = Enqueue(inputs, outputs, counts, static_cast<int64_t>(DataTypeSize(dtype)),
                            type, nop, stream);
  // Legal once the allreduce that uses it is enqueued (settled), or on no communicator at all.
  if (scaled && comm_ != nullptr) ncclRedOpDestroy(nop, comm_);
  HVD_RETURN_IF_ERROR(enqueued);
  return Wait(stream, "allreduce");
}

// One tensor: straight from input to output. Several (or a joined rank's zeros): through the
// device fusion buffer; the copies out follow the allreduce on the stream only once NCCL has
// enqueued it (Settle), so they wait for it.
Status NcclGroup::Enqueue(std::span<const void* const> inputs, std::span<void* const> outputs,
                          std::span<const int64_t> counts, int64_t elem, ncclDataType_t type,
                          ncclRedOp_t op, cudaStream_t stream) {
  if (inputs.size() == 1 && inputs[0] != nullptr) {
    return Settle(ncclAllReduce(inputs[0], outputs[0], static_cast<size_t>(counts[0]), type, op,
                                comm_, stream),
                  "allreduce");
  }
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  HVD_ASSIGN_OR_RETURN(void* fusion, Fusion(total * elem));
  char* buf = static_cast<char*>(fusion);
  int64_t offset = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const size_t bytes = static_cast<size_t>(counts[i] * elem);
    cudaError_t err = inputs[i] != nullptr ? cudaMemcpyAsync(buf + offset, inputs[i], bytes,
                                                             cudaMemcpyDeviceToDevice, stream)
                                           : cudaMemsetAsync(buf + offset, 0, bytes, stream);
    if (err != cudaSuccess) return CudaError("filling the device fusion buffer", err);
    offset += static_cast<int64_t>(bytes);
  }
  HVD_RETURN_IF_ERROR(Settle(
      ncclAllReduce(buf, buf, static_cast<size_t>(total), type, op, comm_, stream), "allreduce"));
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
  if (comm_ == nullptr) return Status::Aborted("the NCCL communicator was aborted");
  HVD_ASSIGN_OR_RETURN(cudaStream_t stream, backend_->Stream(device_));
  HVD_RETURN_IF_ERROR(Settle(
      ncclBroadcast(input, output, static_cast<size_t>(bytes), ncclUint8, root, comm_, stream),
      "broadcast"));
  return Wait(stream, "broadcast");
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
    if (decision == "N") {
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
  if (decision.empty() || decision[0] == 'E') {
    return Status::InvalidArgument(decision.empty() ? "no GPU path decision" : decision.substr(1));
  }
  if (decision[0] == 'S') return std::unique_ptr<GpuGroup>();
  ncclUniqueId id;
  if (decision.size() != 1 + sizeof(id.internal)) return Status::Internal("bad NCCL unique id");
  std::memcpy(id.internal, decision.data() + 1, sizeof(id.internal));
  // Non-blocking, so that this rank's wait for the others is bounded and can be stopped: a
  // member that died after the id exchange, or never reaches its first GPU op, would otherwise
  // keep the rest in NCCL's bootstrap for ever (ncclCommInitRank has no timeout). Every later
  // call on the communicator may then answer ncclInProgress too (NcclGroup::Settle).
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  ncclResult_t r = ncclCommInitRankConfig(&comm, cpu->size(), id, cpu->rank(), &config);
  ncclResult_t state = r;
  const NcclWait waited = r == ncclInProgress
                              ? WaitWhileInProgress(
                                    comm, std::chrono::steady_clock::now() + backend->timeout(),
                                    [&] { return backend->aborted(); }, &state)
                              : NcclWait::kSettled;
  if (waited != NcclWait::kSettled || state != ncclSuccess) {
    std::string message = "creating the NCCL communicator of " + std::to_string(cpu->size()) +
                          " ranks (this is rank " + std::to_string(cpu->rank()) + ") ";
    if (waited == NcclWait::kLate) {
      message += "did not finish within " + backend->TimeoutText() +
                 ": a member did not join (it exited, or has not reached its first GPU "
                 "collective)";
    } else if (waited == NcclWait::kStopped) {
      message += "was aborted";
    } else {
      message += std::string("failed: ") + ncclGetErrorString(state);
      const char* last = ncclGetLastError(comm);
      if (last != nullptr && *last != '\0') message += std::string(" (") + last + ")";
    }
    if (comm != nullptr) ncclCommAbort(comm);  // also ends an init still in progress
    if (waited == NcclWait::kLate) return Status::Timeout(message);
    if (waited == NcclWait::kStopped) return Status::Aborted(message);
    return Status::Internal(message);
  }
  return std::unique_ptr<GpuGroup>(std::make_unique<NcclGroup>(backend, comm, device, cpu->size()));
}

}  // namespace hvd::runtime
