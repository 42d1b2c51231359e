#include "runtime/transports/nccl/cuda_backend.h"

#include <algorithm>
#include <cstdio>

#include "runtime/transports/nccl/device_memory.h"
#include "runtime/transports/nccl/nccl_group.h"

namespace hvd::runtime {
namespace {

std::string Hex(const void* p) {
  char text[32];
  std::snprintf(text, sizeof(text), "%p", p);
  return text;
}

}  // namespace

Status CudaError(const std::string& what, cudaError_t err) {
  // Consumed here, so that the framework's next CUDA call does not fail with hvd's error (a
  // sticky error, one that broke the context, stays whatever is done).
  cudaGetLastError();
  return Status::Internal(what + ": CUDA error " + cudaGetErrorName(err) + " (" +
                          cudaGetErrorString(err) + ")");
}

ScopedDevice::ScopedDevice(int device) {
  cudaError_t err = cudaGetDevice(&previous_);
  if (err == cudaSuccess && previous_ != device) err = cudaSetDevice(device);
  if (err != cudaSuccess) {
    previous_ = -1;
    status_ = CudaError("selecting CUDA device " + std::to_string(device), err);
  }
}

ScopedDevice::~ScopedDevice() {
  int now = -1;
  if (previous_ >= 0 && cudaGetDevice(&now) == cudaSuccess && now != previous_) {
    cudaSetDevice(previous_);
  }
}

int CudaBackend::CurrentDevice() {
  int device = -1;
  if (cudaGetDevice(&device) == cudaSuccess) return device;
  // No device (a CPU job's hvd_join on a machine without a GPU): the failure is not left pending
  // for the framework's next CUDA call to report as its own.
  (void)cudaGetLastError();
  return -1;
}

void CudaBackend::RestoreDevice(int device) {
  int now = -1;
  if (device >= 0 && cudaGetDevice(&now) == cudaSuccess && now != device) cudaSetDevice(device);
}

CudaBackend::~CudaBackend() {
  // Errors are ignored: at process exit CUDA may already be unloading.
  for (auto& [event, device] : events_) {
    cudaSetDevice(device);
    cudaEventDestroy(event);
  }
  for (auto& [device, state] : devices_) {
    cudaSetDevice(device);
    for (cudaEvent_t e : state.markers) {
      if (e != nullptr) cudaEventDestroy(e);
    }
    if (state.drained != nullptr) cudaEventDestroy(state.drained);
    FreeDeviceMemory(state.scratch, device, state.stream);
    if (state.stream != nullptr) {
      ForgetDeviceStream(state.stream);  // outputs still out are freed on another stream
      cudaStreamDestroy(state.stream);
    }
  }
  for (void* p : host_) {
    if (p != nullptr) cudaFreeHost(p);
  }
}

Status CudaBackend::CheckMemory(int device, const void* data) {
  cudaPointerAttributes attr{};
  cudaError_t err = cudaPointerGetAttributes(&attr, data);
  if (err != cudaSuccess) {
    cudaGetLastError();  // consumed, as CudaError does
    return Status::InvalidArgument("tensor data at " + Hex(data) + " (CUDA device " +
                                   std::to_string(device) + "): " + cudaGetErrorString(err));
  }
  const bool on_device = attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged;
  if (on_device && attr.device == device) return Status::OK();
  return Status::InvalidArgument(
      "tensor data at " + Hex(data) + " is not memory of CUDA device " + std::to_string(device) +
      (on_device ? " (it is on device " + std::to_string(attr.device) + ")"
                 : " (it is host memory)"));
}

Result<void*> CudaBackend::MarkReady(int device, const void* data, void* stream) {
  if (data != nullptr) HVD_RETURN_IF_ERROR(CheckMemory(device, data));
  ScopedDevice scoped(device);
  HVD_RETURN_IF_ERROR(scoped.status());
  cudaEvent_t event = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& pool = free_events_[device];
    if (!pool.empty()) {
      event = pool.back();
      pool.pop_back();
    }
  }
  if (event == nullptr) {
    cudaError_t err = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
    if (err != cudaSuccess) return CudaError("creating a CUDA event", err);
    std::lock_guard<std::mutex> lock(mu_);
    events_[event] = device;
  }
  cudaError_t err = cudaEventRecord(event, static_cast<cudaStream_t>(stream));
  if (err != cudaSuccess) {
    ReleaseEvent(event);
    return CudaError("recording an event on the tensor's stream " + Hex(stream), err);
  }
  return static_cast<void*>(event);
}

void CudaBackend::ReleaseEvent(void* event) {
  if (event == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = events_.find(static_cast<cudaEvent_t>(event));
  if (it != events_.end()) free_events_[it->second].push_back(it->first);
}

Result<CudaBackend::DeviceState*> CudaBackend::State(int device) {
  // The cycle thread's device from here on; OpExecutor::RunGpu gives it its own back.
  cudaError_t err = cudaSetDevice(device);
  if (err != cudaSuccess) return CudaError("selecting CUDA device " + std::to_string(device), err);
  DeviceState& s = devices_[device];
  if (s.stream == nullptr) {
    err = cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking);
    if (err != cudaSuccess) return CudaError("creating hvd's CUDA stream", err);
    for (cudaEvent_t& e : s.markers) {
      err = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
      if (err != cudaSuccess) return CudaError("creating a CUDA event", err);
    }
    err = cudaEventCreateWithFlags(&s.drained, cudaEventDisableTiming);
    if (err != cudaSuccess) return CudaError("creating a CUDA event", err);
  }
  return &s;
}

Result<cudaStream_t> CudaBackend::Stream(int device) {
  HVD_ASSIGN_OR_RETURN(DeviceState * s, State(device));
  return s->stream;
}

Status CudaBackend::WaitReady(int device, void* event) {
  if (event == nullptr) return Status::OK();
  auto s = State(device);
  Status status = s.status();
  if (status.ok()) {
    cudaError_t err = cudaStreamWaitEvent((*s)->stream, static_cast<cudaEvent_t>(event), 0);
    if (err != cudaSuccess) status = CudaError("waiting for the tensor's producer", err);
  }
  ReleaseEvent(event);
  return status;
}

Status CudaBackend::Copy(void* to, const void* from, int64_t bytes, int device, cudaMemcpyKind kind,
                         const char* what) {
  if (bytes <= 0) return Status::OK();
  HVD_ASSIGN_OR_RETURN(DeviceState * s, State(device));
  cudaError_t err = cudaMemcpyAsync(to, from, static_cast<size_t>(bytes), kind, s->stream);
  if (err != cudaSuccess) return CudaError(what, err);
  return Status::OK();
}

Status CudaBackend::CopyToHost(void* host, const void* device_data, int64_t bytes, int device) {
  return Copy(host, device_data, bytes, device, cudaMemcpyDeviceToHost,
              "copying a GPU tensor to the host");
}

Status CudaBackend::CopyToDevice(void* device_data, const void* host, int64_t bytes, int device) {
  return Copy(device_data, host, bytes, device, cudaMemcpyHostToDevice,
              "copying a result to the GPU");
}

Result<int> CudaBackend::Marker(int device) {
  HVD_ASSIGN_OR_RETURN(DeviceState * s, State(device));
  if (s->next_marker >= kMaxMarkers) return Status::Internal("too many copy markers");
  const int marker = s->next_marker++;
  cudaError_t err = cudaEventRecord(s->markers[marker], s->stream);
  if (err != cudaSuccess) return CudaError("recording a copy marker", err);
  return marker + 1;
}

// Until 2026-12-02 only an abort ended this wait early: with completion off the cycle, a staged
// op (int16, bool) or another set's op queued behind an allreduce whose peer died waited out the
// whole timeout and failed naming no one (gpu_emu_nccl_peer_dies_async_staged_behind).
Status CudaBackend::WaitEvent(cudaEvent_t event, const char* what) {
  auto next_check = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
  return PollEvent(
      event, std::chrono::steady_clock::now() + timeout_,
      [&] {
        if (aborted_.load())
          return Status::Aborted(std::string(what) + ": the runtime was aborted");
        const auto now = std::chrono::steady_clock::now();
        if (now < next_check) return Status::OK();
        next_check = now + std::chrono::milliseconds(100);
        Status gone = PeersGone();
        if (gone.ok()) return gone;
        return Status::RemoteError(std::string(what) + ": " + gone.message() +
                                   " (hvd's CUDA stream waits for a NCCL collective with it)");
      },
      [&](cudaError_t err) { return CudaError(what, err); },
      [&] {
        return Status::Timeout(std::string(what) + ": not done within " + TimeoutText() +
                               "; the work queued before it on the tensor's stream or on hvd's "
                               "stream is stuck");
      });
}

Status CudaBackend::WaitMarker(int device, int marker) {
  HVD_ASSIGN_OR_RETURN(DeviceState * s, State(device));
  if (marker < 1 || marker > s->next_marker) return Status::Internal("unknown copy marker");
  return WaitEvent(s->markers[marker - 1], "waiting for a copy");
}

Status CudaBackend::Sync(int device) {
  HVD_ASSIGN_OR_RETURN(DeviceState * s, State(device));
  s->next_marker = 0;
  cudaError_t err = cudaEventRecord(s->drained, s->stream);
  if (err != cudaSuccess) return CudaError("waiting for hvd's CUDA stream", err);
  return WaitEvent(s->drained, "waiting for hvd's CUDA stream");
}

Status CudaBackend::WaitForStreams(const char* what) {
  for (auto& [device, state] : devices_) {
    if (state.stream == nullptr) continue;
    const cudaError_t err = cudaEventRecord(state.drained, state.stream);
    if (err != cudaSuccess) return CudaError(what, err);
    HVD_RETURN_IF_ERROR(WaitEvent(state.drained, what));
  }
  return Status::OK();
}

Status CudaBackend::Quiesce(int device) {
  HVD_ASSIGN_OR_RETURN(DeviceState * s, State(device));
  const cudaError_t err = cudaEventRecord(s->drained, s->stream);
  if (err != cudaSuccess) return CudaError("marking the end of hvd's CUDA stream", err);
  // Not ended by Abort: hvd_abort is what may have failed the op, and the copies queued before
  // it run to their end by themselves.
  return WaitToTheEnd(s->drained, "waiting for hvd's CUDA stream");
}

Status CudaBackend::WaitToTheEnd(cudaEvent_t event, const std::string& what) const {
  return PollEvent(
      event, std::chrono::steady_clock::now() + timeout_, [] { return Status::OK(); },
      [&](cudaError_t e) { return CudaError(what, e); },
      [&] { return Status::Timeout(what + ": not within " + TimeoutText()); });
}

Result<void*> CudaBackend::HostBuffer(int slot, int64_t bytes) {
  if (slot < 0 || slot >= static_cast<int>(host_.size())) return Status::Internal("bad slot");
  if (bytes <= host_bytes_[slot] && host_[slot] != nullptr) return host_[slot];
  const int64_t grown = std::max<int64_t>({bytes, host_bytes_[slot] * 3 / 2, int64_t{1} << 20});
  if (host_[slot] != nullptr) {
    // cudaFreeHost waits for the whole device, unbounded: with allreduces completed off the
    // cycle still queued (a peer gone in one of them) this thread would block in it past the
    // timeout and hvd_abort, as NcclGroup::Fusion's cudaFree would. hvd's streams first, then.
    HVD_RETURN_IF_ERROR(WaitForStreams("growing the pinned staging buffer"));
    if (cudaFreeHost(host_[slot]) != cudaSuccess) (void)cudaGetLastError();
  }
  host_[slot] = nullptr;
  host_bytes_[slot] = 0;
  cudaError_t err = cudaHostAlloc(&host_[slot], static_cast<size_t>(grown), cudaHostAllocPortable);
  if (err != cudaSuccess) {
    host_[slot] = nullptr;
    return CudaError("allocating " + std::to_string(grown) + " bytes of pinned host memory", err);
  }
  host_bytes_[slot] = grown;
  return host_[slot];
}

Status CudaBackend::CopyOnDevice(void* to, const void* from, int64_t bytes, int device) {
  if (from == nullptr && bytes > 0) {
    HVD_ASSIGN_OR_RETURN(DeviceState * s, State(device));
    cudaError_t err = cudaMemsetAsync(to, 0, static_cast<size_t>(bytes), s->stream);
    if (err != cudaSuccess) return CudaError("zeroing GPU memory", err);
    return Status::OK();
  }
  return Copy(to, from, bytes, device, cudaMemcpyDeviceToDevice, "copying within the GPU");
}

Result<void*> CudaBackend::DeviceScratch(int device, int64_t bytes) {
  HVD_ASSIGN_OR_RETURN(DeviceState * s, State(device));
  if (bytes <= s->scratch_bytes && s->scratch != nullptr) return s->scratch;
  const int64_t grown = std::max<int64_t>({bytes, s->scratch_bytes * 3 / 2, int64_t{1} << 20});
  // Ordered on the stream: the old buffer goes once the work already queued with it is done.
  FreeDeviceMemory(s->scratch, device, s->stream);
  s->scratch = nullptr;
  s->scratch_bytes = 0;
  HVD_ASSIGN_OR_RETURN(s->scratch, AllocDeviceMemory(device, grown, s->stream, false));
  s->scratch_bytes = grown;
  return s->scratch;
}

Result<void*> CudaBackend::AllocDeviceOutput(int device, int64_t bytes) {
  HVD_ASSIGN_OR_RETURN(DeviceState * s, State(device));
  return AllocDeviceMemory(device, bytes, s->stream, true);
}

DeviceOutputFree CudaBackend::device_output_free() const { return &FreeDeviceOutput; }

void CudaBackend::Start(std::chrono::milliseconds timeout, const std::string& host_id,
                        int64_t output_cache_bytes) {
  timeout_ = timeout;
  host_id_ = host_id;
  aborted_ = false;
  SetDevicePoolBytes(output_cache_bytes);
}

void CudaBackend::Register(NcclGroup* group) {
  std::lock_guard<std::mutex> lock(groups_mu_);
  groups_.insert(group);
}

void CudaBackend::Unregister(NcclGroup* group) {
  std::lock_guard<std::mutex> lock(groups_mu_);
  groups_.erase(group);
}

void CudaBackend::Abort() {
  aborted_ = true;
  std::lock_guard<std::mutex> lock(groups_mu_);
  for (NcclGroup* g : groups_) g->Abort();
}

void CudaBackend::BreakGroups(const Status& why) {
  std::lock_guard<std::mutex> lock(groups_mu_);
  for (NcclGroup* g : groups_) g->Break(why);
}

Status CudaBackend::PeersGone() {
  std::lock_guard<std::mutex> lock(groups_mu_);
  for (NcclGroup* g : groups_) {
    Status gone = g->PeersGone();
    if (!gone.ok()) return gone;
  }
  return Status::OK();
}

std::string CudaBackend::TimeoutText() const {
  return std::to_string(timeout_.count() / 1000) + " s (HVD_GLOO_TIMEOUT_SECONDS)";
}

Result<std::unique_ptr<GpuGroup>> CudaBackend::CreateGroup(Communicator* cpu, int device,
                                                           const std::string& mode) {
  return CreateNcclGroup(this, cpu, device, mode);
}

std::unique_ptr<GpuBackend> MakeCudaBackend() { return std::make_unique<CudaBackend>(); }

int32_t NcclBuiltVersion() { return NCCL_VERSION_CODE; }

}  // namespace hvd::runtime
