// OpExecutor's GPU path (op_executor.h): NCCL for what the set's NCCL group can run, host
// staging through the set's CPU communicator for everything else.
#include <algorithm>
#include <cstring>

#include "common/logging.h"
#include "runtime/core/execution/adasum.h"
#include "runtime/core/execution/op_executor.h"
#include "runtime/transports/reduction.h"

namespace hvd::runtime {
namespace {

// A staged single allreduce moves in chunks of at least this many bytes (and at most
// GpuBackend::kMaxMarkers chunks), so device->host copies of chunk i+1 and host->device copies
// of chunk i-1 overlap the CPU transport's work on chunk i.
constexpr int64_t kStageChunkBytes = int64_t{4} << 20;

// `factor` as the 16-bit float type holds it. Horovod's GPU path scales a float16 tensor in
// half (its kernel multiplies by the factor converted to half), where hvd's host path multiplies
// in float by the float factor: a staged float16 x 0.1 then differed from Horovod's by one unit
// in the last place. The factor rounded to the type, applied in float and rounded once, gives
// the half product's bits (two 11-bit significands multiply exactly in float's 24; bfloat16's 8
// likewise). On the staged path Average's 1/n is hvd's own and stays in float; on NCCL (flat
// and hierarchical) it is part of the factor, as Horovod's GPU path divides the postscale.
double FactorInType(double factor, DataType dtype) {
  if (factor == 1.0) return factor;
  const float f = static_cast<float>(factor);
  if (dtype == DataType::kFloat16) return HalfToFloat(FloatToHalf(f));
  if (dtype == DataType::kBFloat16) return BFloat16ToFloat(FloatToBFloat16(f));
  return factor;
}

}  // namespace

Status OpExecutor::RunGpu(const Response& r, std::span<TensorEntry* const> entries,
                          Communicator* comm, GpuSetState* state) {
  if (gpu_ == nullptr) return Status::Internal("a GPU response in a libhvd without CUDA");
  // The thread running the cycle keeps its current device (it may be a framework thread).
  struct KeepDevice {
    GpuBackend* gpu;
    int device;
    ~KeepDevice() { gpu->RestoreDevice(device); }
  } keep{gpu_, gpu_->CurrentDevice()};
  auto local = std::find_if(entries.begin(), entries.end(), [](auto* e) { return e != nullptr; });
  int device = last_device_;
  if (local != entries.end()) {
    device = (*local)->request.device;
    for (auto it = local + 1; it != entries.end(); ++it) {
      if (*it == nullptr || (*it)->request.device == device) continue;
      // Ops of two devices fused (the response's device is rank 0's first request's).
      return Status::InvalidArgument("'" + (*it)->request.name + "' is on CUDA device " +
                                     std::to_string((*it)->request.device) + " but '" +
                                     (*local)->request.name + "', fused with it, on device " +
                                     std::to_string(device) +
                                     ": hvd runs a process set's GPU ops on one GPU per process");
    }
  } else if (state != nullptr && state->decided) {
    device = state->device;  // joined: this set's device (last_device_ may be another set's)
  } else if (device < 0) {   // joined before its first GPU op: hvd_join's device, else 0
    device =
        join_device_ != nullptr ? std::max(join_device_->load(std::memory_order_relaxed), 0) : 0;
  }
  last_device_ = device;
  Status s = RunGpuOn(r, entries, comm, state, device);
  if (!s.ok()) StopDeviceWork(state, device, s);
  return s;
}

// A failed op's handles fail once this returns, and the caller owns its tensors again. Until
// 2026-11-30 that was as soon as the failure was known: a NCCL call aborted (a peer gone) left
// the copies out of the fusion buffer and a postscale queued behind it on hvd's stream, and the
// device ran them once the aborted kernel returned, into memory the framework had handed to
// other tensors (gpu_emu_worker_late_write). Every failure here fails the runtime (Execute's
// caller), so every communicator is done with: break them, then wait for the stream. Every set's
// (until 2026-12-02 only the failed op's): another set's collective completed off the cycle, a
// peer gone in it, held the stream for the whole timeout.
void OpExecutor::StopDeviceWork(GpuSetState* state, int device, const Status& failure) {
  const int current = gpu_->CurrentDevice();  // Execute calls this outside RunGpu's keeping too
  if (state != nullptr) {
    if (state->group != nullptr) state->group->Break(failure);
    if (state->local_group != nullptr) state->local_group->Break(failure);
  }
  gpu_->BreakGroups(failure);
  const Status quiet = gpu_->Quiesce(device);
  if (!quiet.ok()) {
    HVD_LOG_ERROR(
        "after the failure of a GPU op ({}), hvd's CUDA stream of device {} did not finish the "
        "work queued on it: {}; that work may still write the op's tensors",
        failure.message(), device, quiet.message());
  }
  gpu_->RestoreDevice(current);
}

Status OpExecutor::RunGpuOn(const Response& r, std::span<TensorEntry* const> entries,
                            Communicator* comm, GpuSetState* state, int device) {
  // hvd's stream waits for every producer before it touches a tensor; all events go back.
  Status waited;
  for (TensorEntry* e : entries) {
    if (e == nullptr || e->ready == nullptr) continue;
    Status s = gpu_->WaitReady(device, e->ready);
    e->ready = nullptr;
    if (waited.ok()) waited = s;
  }
  HVD_RETURN_IF_ERROR(waited);
  if (state != nullptr && !state->decided) {
    ActivityStart(r, "GPU_INIT");
    auto group = gpu_->CreateGroup(comm, device, gpu_options_.operations);
    ActivityEnd(r);
    HVD_RETURN_IF_ERROR(group.status());
    state->group = std::move(group).value();
    state->device = device;
    state->decided = true;
  }
  if (state != nullptr && state->group != nullptr && device != state->device) {
    // The set's NCCL communicator is of one device of this process; NCCL would be handed
    // another device's memory on it (a wrong result or an illegal address). Horovod keys its
    // communicators by every rank's device, which hvd's negotiation does not carry.
    return Status::InvalidArgument(
        "'" + r.names.front() + "' is on CUDA device " + std::to_string(device) +
        ", but this process's NCCL communicator of its process set is on device " +
        std::to_string(state->device) +
        " (where the set's first GPU op ran): hvd runs a process set's NCCL ops on one GPU "
        "per process. Use one GPU per process (hvdrun starts one rank per GPU), a process set "
        "per GPU, or HVD_GPU_OPERATIONS=cpu");
  }
  if (state != nullptr && state->group != nullptr) {
    bool taken = false;
    Status s = RunOnGroup(r, entries, comm, state, device, &taken);
    if (taken) return s;
  }
  // A 16-bit float's scale factors as its type holds them (FactorInType): a copy of the
  // response, only when there are factors to round.
  const double prescale = FactorInType(r.prescale, r.dtype);
  const double postscale = FactorInType(r.postscale, r.dtype);
  if (prescale != r.prescale || postscale != r.postscale) {
    Response in_type = r;
    in_type.prescale = prescale;
    in_type.postscale = postscale;
    return RunStaged(in_type, entries, comm, device);
  }
  return RunStaged(r, entries, comm, device);
}

Status OpExecutor::RunOnGroup(const Response& r, std::span<TensorEntry* const> entries,
                              Communicator* comm, GpuSetState* state, int device, bool* taken) {
  *taken = true;
  GpuGroup* group = state->group.get();
  const double post = PostscaleFor(r, comm->size());
  const bool scaled = r.prescale != 1.0 || post != 1.0;
  switch (r.type) {
    case OpType::kAllreduce: {
      const bool adasum = r.reduce_op == ReduceOp::kAdasum;
      if (adasum || gpu_options_.hierarchical_allreduce) {
        HVD_ASSIGN_OR_RETURN(GpuGroup * host, HostGroup(r, comm, state, device));
        if (host != nullptr && adasum && AdasumSupports(r.dtype) &&
            host->CanReduce(r.dtype, ReduceOp::kSum, true)) {
          return HierarchicalNcclAdasum(r, entries, comm->hierarchy(), host, device);
        }
        // The prescale goes with the host's reduce-scatter (NCCL), the postscale with the cross
        // allreduce (the host), as the flat NCCL path's kernel takes it: with Average's 1/n
        // (Horovod's postscale_factor /= size), a 16-bit type's factor as the type holds it
        // (FactorInType). Until 2026-12-01 the 1/n was applied in float after the rounding, so
        // a float16 Average of a set of 3 or 6 ranks could end one unit in the last place off
        // the flat path's and Horovod's (test: gpu_emu_worker_hierarchical_average_np6).
        if (host != nullptr && !adasum &&
            host->CanReduce(r.dtype, BackendOp(r.reduce_op), r.prescale != 1.0)) {
          return HierarchicalNcclAllreduce(r, entries, comm->hierarchy(), host, device,
                                           FactorInType(post, r.dtype));
        }
      }
      if (!group->CanReduce(r.dtype, BackendOp(r.reduce_op), scaled)) break;
      return NcclAllreduce(r, entries, group, r.prescale, post);
    }
    case OpType::kBroadcast: {
      if (entries.front() == nullptr || gpu_options_.staged.broadcast) break;
      const TensorEntry& e = *entries.front();
      const int64_t bytes = e.request.NumElements() * static_cast<int64_t>(DataTypeSize(r.dtype));
      if (recording_) ActivityStart(r, std::string(group->name()) + "_BCAST");
      Status s = group->Broadcast(e.input, e.output, bytes, r.root);
      ActivityEnd(r);
      return s;
    }
    // Data movement: any dtype (bytes), as the broadcast.
    case OpType::kAllgather:
      if (gpu_options_.staged.allgather) break;
      return NcclAllgather(r, entries, group, comm, device);
    case OpType::kAlltoall:
      if (gpu_options_.staged.alltoall) break;
      return NcclAlltoall(r, entries.front(), group, comm, device);
    case OpType::kReducescatter:
      if (gpu_options_.staged.reducescatter ||
          !group->CanReduce(r.dtype, BackendOp(r.reduce_op), scaled)) {
        break;
      }
      return NcclReducescatter(r, entries, group, comm, device, r.prescale, post);
    default:
      break;
  }
  *taken = false;
  return Status::OK();
}

// The host's NCCL group, made at the set's first op that needs it (a hierarchical allreduce or
// an Adasum): every member of the set runs that response, the hierarchy is the same on all, and
// every member having a GPU of its own (the set's group) means each host's members have too.
Result<GpuGroup*> OpExecutor::HostGroup(const Response& r, Communicator* comm, GpuSetState* state,
                                        int device) {
  if (!state->local_decided) {
    state->local_decided = true;
    const Communicator::Hierarchy h = comm->hierarchy();
    if (h.local != nullptr) {
      ActivityStart(r, "GPU_INIT_LOCAL");
      auto local = gpu_->CreateGroup(h.local, device, gpu_options_.operations);
      ActivityEnd(r);
      HVD_RETURN_IF_ERROR(local.status());
      state->local_group = std::move(local).value();
    }
  }
  return state->local_group.get();
}

Status OpExecutor::RunStaged(const Response& r, std::span<TensorEntry* const> entries,
                             Communicator* comm, int device) {
  // Decided by the response alone, so a joined rank (no entry) makes the same CPU collectives.
  // Adasum needs whole tensors (its dot products), not chunks: the plain staged way.
  if (r.type == OpType::kAllreduce && r.sizes.size() == 1 && r.reduce_op != ReduceOp::kAdasum) {
    return StagedAllreduce(r, entries[0], comm, device);
  }
  return Staged(r, entries, comm, device);
}

void OpExecutor::ReleaseReady(std::span<TensorEntry* const> entries) {
  if (gpu_ == nullptr) return;
  for (TensorEntry* e : entries) {
    if (e == nullptr || e->ready == nullptr) continue;
    gpu_->ReleaseEvent(e->ready);
    e->ready = nullptr;
  }
}

Status OpExecutor::NcclAllreduce(const Response& r, std::span<TensorEntry* const> entries,
                                 GpuGroup* group, double prescale, double postscale) {
  gpu_inputs_.clear();
  gpu_outputs_.clear();
  gpu_counts_.assign(r.sizes.begin(), r.sizes.end());
  for (TensorEntry* e : entries) {  // a joined rank (null) contributes zeros
    gpu_inputs_.push_back(e != nullptr ? e->input : nullptr);
    gpu_outputs_.push_back(e != nullptr ? e->output : nullptr);
  }
  if (recording_) ActivityStart(r, std::string(group->name()) + "_ALLREDUCE");
  Status s;
  if (gpu_options_.async_completion) {
    // Enqueued only: Execute hands its completion to the group (DeferCompletion).
    s = group->EnqueueAllreduce(gpu_inputs_, gpu_outputs_, gpu_counts_, r.dtype,
                                BackendOp(r.reduce_op), prescale, postscale);
    if (s.ok()) defer_group_ = group;
  } else {
    s = group->Allreduce(gpu_inputs_, gpu_outputs_, gpu_counts_, r.dtype, BackendOp(r.reduce_op),
                         prescale, postscale);
  }
  ActivityEnd(r);
  return s;
}

// `bytes` of device memory at `data` through pinned host memory: copied there (and waited for),
// `on_host(staging)` run as the activity <cross>`suffix`, copied back on the backend's stream,
// ordered before what follows there; the staging stays untouched until the caller's wait.
template <typename OnHost>
Status OpExecutor::ThroughHost(const Response& r, char* data, int64_t bytes, int device,
                               const Communicator* cross, const char* suffix,
                               const OnHost& on_host) {
  HVD_ASSIGN_OR_RETURN(void* staging, gpu_->HostBuffer(2, bytes));
  ActivityStart(r, "MEMCPY_IN_HOST_BUFFER");
  Status s = gpu_->CopyToHost(staging, data, bytes, device);
  Status synced = gpu_->Sync(device);
  ActivityEnd(r);
  HVD_RETURN_IF_ERROR(s);
  HVD_RETURN_IF_ERROR(synced);
  if (recording_) ActivityStart(r, std::string(cross->name()) + suffix);
  s = on_host(staging);
  ActivityEnd(r);
  HVD_RETURN_IF_ERROR(s);
  ActivityStart(r, "MEMCPY_OUT_HOST_BUFFER");
  s = gpu_->CopyToDevice(data, staging, bytes, device);
  ActivityEnd(r);
  return s;
}

// Horovod's NCCLHierarchicalAllreduce (HVD_HIERARCHICAL_ALLREDUCE=1, a set over several hosts):
// each byte crosses hosts once per host instead of once per rank, on the CPU transport between
// hosts (hvd's TCP) while NCCL works within each host. Local rank i gets slice i of the host's
// sum from the reduce-scatter (the first count % L slices an element longer); the L cross groups
// allreduce their slices in parallel through pinned host memory; the allgather spreads the
// result. One tensor is read from its input and gathered into its output; fused tensors (and a
// joined rank's zeros) are packed into the backend's device scratch first and copied out after.
// Every member gets bit-identical results (the same reduce-scatter, the cross reductions
// deterministic, as the CPU hierarchy's).
Status OpExecutor::HierarchicalNcclAllreduce(const Response& r,
                                             std::span<TensorEntry* const> entries,
                                             Communicator::Hierarchy h, GpuGroup* local, int device,
                                             double post) {
  const int64_t elem = static_cast<int64_t>(DataTypeSize(r.dtype));
  int64_t total = 0;
  for (int64_t count : r.sizes) total += count;
  if (total == 0) return Status::OK();  // the same on every member
  const int l = h.local->size(), me = h.local->rank();
  slice_counts_.resize(l);
  slice_bytes_.resize(l);
  for (int i = 0; i < l; ++i) {
    slice_counts_[i] = total / l + (i < total % l ? 1 : 0);
    slice_bytes_[i] = slice_counts_[i] * elem;
  }
  const bool in_place = entries.size() == 1 && entries[0] != nullptr;
  const int64_t packed = in_place ? 0 : Align64(total * elem);
  HVD_ASSIGN_OR_RETURN(void* scratch, gpu_->DeviceScratch(device, packed + slice_bytes_[me]));
  char* buf = static_cast<char*>(scratch);
  char* slice = buf + packed;
  const void* in = in_place ? entries[0]->input : buf;
  void* out = in_place ? entries[0]->output : buf;
  Status s;
  if (!in_place) {
    ActivityStart(r, "MEMCPY_IN_FUSION_BUFFER");
    s = PackOnDevice(r, entries, buf, device);
    ActivityEnd(r);
    HVD_RETURN_IF_ERROR(s);
  }
  const ReduceOp op = BackendOp(r.reduce_op);
  if (recording_) ActivityStart(r, std::string(local->name()) + "_REDUCESCATTER");
  s = local->ReduceScatter(in, slice, slice_counts_, r.dtype, op, r.prescale, 1.0);
  if (s.ok()) s = local->Finish("hierarchical allreduce");
  ActivityEnd(r);
  HVD_RETURN_IF_ERROR(s);
  // Every host splits alike, so a cross group's members all have a slice or all have none (a
  // count below the host's ranks).
  if (slice_counts_[me] > 0) {
    HVD_RETURN_IF_ERROR(
        ThroughHost(r, slice, slice_bytes_[me], device, h.cross, "_ALLREDUCE", [&](void* host) {
          return h.cross->AllreduceScaled(host, slice_counts_[me], r.dtype, op, post);
        }));
  }
  if (recording_) ActivityStart(r, std::string(local->name()) + "_ALLGATHER");
  s = local->Allgatherv(slice, out, slice_bytes_);
  if (s.ok() && !in_place) s = UnpackOnDevice(r, entries, buf, device);  // before Finish's wait
  if (s.ok()) s = local->Finish("hierarchical allreduce");
  ActivityEnd(r);
  return s;
}

// op=Adasum on a set spread over several hosts, as Horovod's GPU Adasum (AdasumGpuAllreduceOp):
// the host's average on NCCL (the prescale folded in), Adasum across hosts of the host averages
// over local rank 0's cross group through pinned host memory (every tensor combined whole,
// adasum.h; the postscale after it), and a NCCL broadcast within the host. The tensors (a joined
// rank's zeros) are packed into the backend's device scratch.
Status OpExecutor::HierarchicalNcclAdasum(const Response& r, std::span<TensorEntry* const> entries,
                                          Communicator::Hierarchy h, GpuGroup* local, int device) {
  const int64_t elem = static_cast<int64_t>(DataTypeSize(r.dtype));
  int64_t total = 0;
  for (int64_t count : r.sizes) total += count;
  if (total == 0) return Status::OK();  // the same on every member
  const int64_t bytes = total * elem;
  HVD_ASSIGN_OR_RETURN(void* scratch, gpu_->DeviceScratch(device, bytes));
  char* buf = static_cast<char*>(scratch);
  ActivityStart(r, "MEMCPY_IN_FUSION_BUFFER");
  Status s = PackOnDevice(r, entries, buf, device);
  ActivityEnd(r);
  HVD_RETURN_IF_ERROR(s);
  gpu_inputs_.assign(1, buf);
  gpu_outputs_.assign(1, buf);
  gpu_counts_.assign(1, total);
  if (recording_) ActivityStart(r, std::string(local->name()) + "_ALLREDUCE");
  s = local->Allreduce(gpu_inputs_, gpu_outputs_, gpu_counts_, r.dtype, ReduceOp::kSum,
                       r.prescale / h.local->size(), 1.0);
  ActivityEnd(r);
  HVD_RETURN_IF_ERROR(s);
  if (h.local->rank() == 0) {
    HVD_RETURN_IF_ERROR(
        ThroughHost(r, buf, bytes, device, h.cross, "_ADASUM_ALLREDUCE", [&](void* host) {
          HVD_RETURN_IF_ERROR(AdasumAllreduce(h.cross, host, host, r.sizes, r.dtype, &adasum_));
          ScaleBuffer(host, total, r.dtype, FactorInType(r.postscale, r.dtype));
          return Status::OK();
        }));
  }
  if (recording_) ActivityStart(r, std::string(local->name()) + "_BCAST");
  s = local->Broadcast(buf, buf, bytes, 0);
  ActivityEnd(r);
  HVD_RETURN_IF_ERROR(s);
  ActivityStart(r, "MEMCPY_OUT_FUSION_BUFFER");
  s = UnpackOnDevice(r, entries, buf, device);
  Status synced = gpu_->Sync(device);
  ActivityEnd(r);
  return s.ok() ? synced : s;
}

Status OpExecutor::PackOnDevice(const Response& r, std::span<TensorEntry* const> entries, char* buf,
                                int device) {
  const int64_t elem = static_cast<int64_t>(DataTypeSize(r.dtype));
  Status s;
  int64_t offset = 0;
  for (size_t i = 0; s.ok() && i < entries.size(); ++i) {
    const int64_t bytes = r.sizes[i] * elem;
    s = gpu_->CopyOnDevice(buf + offset, entries[i] ? entries[i]->input : nullptr, bytes, device);
    offset += bytes;
  }
  return s;
}

Status OpExecutor::UnpackOnDevice(const Response& r, std::span<TensorEntry* const> entries,
                                  const char* buf, int device) {
  const int64_t elem = static_cast<int64_t>(DataTypeSize(r.dtype));
  Status s;
  int64_t offset = 0;
  for (size_t i = 0; s.ok() && i < entries.size(); ++i) {
    const int64_t bytes = r.sizes[i] * elem;
    if (entries[i] != nullptr) {
      s = gpu_->CopyOnDevice(entries[i]->output, buf + offset, bytes, device);
    }
    offset += bytes;
  }
  return s;
}

// One allreduce through host memory in chunks: all device->host copies are issued at once,
// each followed by a marker; chunk i is reduced once its marker passed, and its result copied
// back while chunk i+1 is reduced. The chunking depends only on the response, so every rank
// makes the same CPU collectives; a joined rank (null entry) reduces zeros in the same chunks.
Status OpExecutor::StagedAllreduce(const Response& r, TensorEntry* entry, Communicator* comm,
                                   int device) {
  const int64_t elem = static_cast<int64_t>(DataTypeSize(r.dtype));
  const int64_t count = r.sizes[0];
  HVD_ASSIGN_OR_RETURN(void* staging, gpu_->HostBuffer(0, count * elem));
  char* host = static_cast<char*>(staging);
  const int64_t per_chunk =
      std::max<int64_t>(std::max<int64_t>(kStageChunkBytes / elem, 1),
                        (count + GpuBackend::kMaxMarkers - 1) / GpuBackend::kMaxMarkers);
  const auto* in = entry != nullptr ? static_cast<const char*>(entry->input) : nullptr;
  auto* out = entry != nullptr ? static_cast<char*>(entry->output) : nullptr;
  // The activity names are built only when recording: the steady state allocates nothing.
  if (recording_) ActivityStart(r, std::string(comm->name()) + "_STAGED_ALLREDUCE");
  Status s;
  markers_.clear();
  if (in == nullptr && count > 0) std::memset(host, 0, count * elem);
  for (int64_t first = 0; s.ok() && in != nullptr && first < count; first += per_chunk) {
    const int64_t n = std::min(per_chunk, count - first);
    s = gpu_->CopyToHost(host + first * elem, in + first * elem, n * elem, device);
    if (s.ok()) {
      auto marker = gpu_->Marker(device);
      s = marker.status();
      if (s.ok()) markers_.push_back(*marker);
    }
  }
  const double post = PostscaleFor(r, comm->size());
  size_t chunk = 0;
  for (int64_t first = 0; s.ok() && first < count; first += per_chunk, ++chunk) {
    const int64_t n = std::min(per_chunk, count - first);
    char* part = host + first * elem;
    if (in != nullptr) {
      s = gpu_->WaitMarker(device, markers_[chunk]);
      if (!s.ok()) break;
      ScaleBuffer(part, n, r.dtype, r.prescale);
    }
    // The same scale on every member, with or without an output: a slice's reducer scales it.
    s = comm->AllreduceScaled(part, n, r.dtype, BackendOp(r.reduce_op), post);
    if (!s.ok() || out == nullptr) continue;
    s = gpu_->CopyToDevice(out + first * elem, part, n * elem, device);
  }
  Status synced = gpu_->Sync(device);  // no copy may still touch the staging buffer
  ActivityEnd(r);
  return s.ok() ? synced : s;
}

// Every other GPU op: the local tensors are copied into one pinned buffer, the CPU path runs on
// those copies (its runtime-allocated outputs are host memory), and allreduce/broadcast
// results are copied back to the tensors' own outputs.
Status OpExecutor::Staged(const Response& r, std::span<TensorEntry* const> entries,
                          Communicator* comm, int device) {
  const int64_t elem = static_cast<int64_t>(DataTypeSize(r.dtype));
  staged_offsets_.clear();
  staged_bytes_.clear();
  int64_t total = 0;
  for (TensorEntry* e : entries) {
    const int64_t bytes = e != nullptr ? e->request.NumElements() * elem : 0;
    staged_offsets_.push_back(total);
    staged_bytes_.push_back(bytes);
    total += Align64(bytes);
  }
  HVD_ASSIGN_OR_RETURN(void* staging, gpu_->HostBuffer(1, total));
  char* host = static_cast<char*>(staging);
  // A broadcast's non-root ranks send nothing: their staging is overwritten.
  const bool send = r.type != OpType::kBroadcast || comm->rank() == r.root;
  ActivityStart(r, "MEMCPY_D2H");
  Status s;
  for (size_t i = 0; s.ok() && send && i < entries.size(); ++i) {
    if (entries[i] == nullptr) continue;
    s = gpu_->CopyToHost(host + staged_offsets_[i], entries[i]->input, staged_bytes_[i], device);
  }
  Status synced = gpu_->Sync(device);
  ActivityEnd(r);
  HVD_RETURN_IF_ERROR(s);
  HVD_RETURN_IF_ERROR(synced);
  device_ptrs_.clear();
  for (size_t i = 0; i < entries.size(); ++i) {
    TensorEntry* e = entries[i];
    device_ptrs_.emplace_back(e ? e->input : nullptr, e ? e->output : nullptr);
    if (e == nullptr) continue;
    e->input = e->output = host + staged_offsets_[i];
    e->request.device = -1;  // outputs the CPU path allocates are host memory
  }
  s = Run(r, entries, comm);
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i] == nullptr) continue;
    entries[i]->input = device_ptrs_[i].first;
    entries[i]->output = device_ptrs_[i].second;
    entries[i]->request.device = device;
  }
  if (!s.ok() || (r.type != OpType::kAllreduce && r.type != OpType::kBroadcast)) return s;
  ActivityStart(r, "MEMCPY_H2D");
  for (size_t i = 0; s.ok() && i < entries.size(); ++i) {
    if (entries[i] == nullptr) continue;
    s = gpu_->CopyToDevice(entries[i]->output, host + staged_offsets_[i], staged_bytes_[i], device);
  }
  synced = gpu_->Sync(device);
  ActivityEnd(r);
  return s.ok() ? synced : s;
}

}  // namespace hvd::runtime
