// OpExecutor's NCCL path for the ops whose outputs the runtime allocates (op_executor.h):
// allgather, reducescatter and alltoall on the set's GpuGroup, their outputs device memory of
// the op's device. Only the layouts (collective_plan.h) and the calls live here; every byte moves
// on the backend's stream (GpuBackend::CopyOnDevice, the group's collectives), waited for once
// by GpuGroup::Finish. Fused ops pack into the backend's device scratch as the CPU path packs
// into its fusion buffer.
#include <string>

#include "runtime/core/execution/op_executor.h"
#include "runtime/core/execution/output_memory.h"

namespace hvd::runtime {

template <typename Bytes>
Status OpExecutor::AllocDeviceOutputs(size_t count, int device, const Bytes& bytes) {
  outputs_.clear();
  for (size_t i = 0; i < count; ++i) {
    auto made = gpu_->AllocDeviceOutput(device, bytes(i));
    if (!made.ok()) {
      for (char* p : outputs_) FreeOutput(p);  // ordered on the stream that made them
      outputs_.clear();
      return made.status();
    }
    outputs_.push_back(static_cast<char*>(*made));
  }
  return Status::OK();
}

template <typename Rows>
void OpExecutor::AttachOutputs(std::span<TensorEntry* const> entries, int device,
                               const Rows& rows) {
  for (size_t i = 0; i < entries.size(); ++i) {
    const TensorEntry& e = *entries[i];
    OutputTensor out{outputs_[i], e.request.dtype, TensorShape(e.request.shape), device};
    out.shape[0] = rows(i);
    handles_->SetOutput(e.handle, e.output_index, std::move(out));
  }
}

namespace {

std::string Activity(const GpuGroup* group, const Response& r) {
  return std::string(group->name()) + "_" + std::string(TimelineOpName(r.type));
}

}  // namespace

// One tensor: gathered straight into its output. Several: this rank's parts packed into its
// region (after the gathered buffer: no group promises an Allgatherv whose input lies inside its
// output), the regions gathered, and every part copied out into its tensor's output. Outputs are
// attached even when the op fails, as on the CPU path.
Status OpExecutor::NcclAllgather(const Response& r, std::span<TensorEntry* const> entries,
                                 GpuGroup* group, Communicator* comm, int device) {
  const size_t n = static_cast<size_t>(comm->size()), me = static_cast<size_t>(comm->rank());
  const size_t m = entries.size();
  if (m > 1) {
    HVD_RETURN_IF_ERROR(CheckFusedGather(r, entries, n, me));
  } else if (entries[0] == nullptr || r.sizes.size() != n || entries[0]->request.shape.empty() ||
             entries[0]->request.shape[0] != r.sizes[me]) {
    return Status::Internal("allgather response does not match the local tensor");
  }
  const int64_t elem = static_cast<int64_t>(DataTypeSize(r.dtype));
  row_bytes_.clear();
  for (const TensorEntry* e : entries) row_bytes_.push_back(RowElements(e->request.shape) * elem);
  GatherParts(r.sizes, row_bytes_, n, &parts_);
  PlanRankMajor(parts_, m, n, &layout_);
  ActivityStart(r, "ALLOCATE_OUTPUT");
  Status s = AllocDeviceOutputs(m, device, [&](size_t i) { return layout_.tensor_bytes[i]; });
  ActivityEnd(r);
  HVD_RETURN_IF_ERROR(s);
  if (m == 1) {
    if (recording_) ActivityStart(r, Activity(group, r));
    s = group->Allgatherv(entries[0]->input, outputs_[0], layout_.region_bytes);
  } else {
    s = FusedNcclAllgather(r, entries, group, me, device);
  }
  if (s.ok()) s = group->Finish("allgather");
  ActivityEnd(r);
  AttachOutputs(entries, device, [&](size_t i) {
    int64_t rows = 0;
    for (size_t k = 0; k < n; ++k) rows += r.sizes[i * n + k];
    return rows;
  });
  return s;
}

// Leaves the NCCL activity open (NcclAllgather ends it after Finish).
Status OpExecutor::FusedNcclAllgather(const Response& r, std::span<TensorEntry* const> entries,
                                      GpuGroup* group, size_t me, int device) {
  const int64_t in_offset = Align64(layout_.total);
  HVD_ASSIGN_OR_RETURN(void* scratch,
                       gpu_->DeviceScratch(device, in_offset + layout_.region_bytes[me]));
  char* buf = static_cast<char*>(scratch);
  char* region = buf + in_offset - layout_.region_starts[me];  // + a run's packed offset
  ActivityStart(r, "MEMCPY_IN_FUSION_BUFFER");
  Status s;
  for (const auto& run : layout_.runs) {
    if (run.rank != me || !s.ok()) continue;
    s = gpu_->CopyOnDevice(region + run.packed_offset, entries[run.tensor]->input, run.bytes,
                           device);
  }
  ActivityEnd(r);
  HVD_RETURN_IF_ERROR(s);
  if (recording_) ActivityStart(r, Activity(group, r));
  HVD_RETURN_IF_ERROR(group->Allgatherv(buf + in_offset, buf, layout_.region_bytes));
  for (const auto& run : layout_.runs) {
    HVD_RETURN_IF_ERROR(gpu_->CopyOnDevice(outputs_[run.tensor] + run.tensor_offset,
                                           buf + run.packed_offset, run.bytes, device));
  }
  return Status::OK();
}

// One tensor: reduced straight from its input into its output. Several: every tensor's part for
// rank k packed into rank k's region (the CPU path's layout), the packed buffer reduced and
// scattered into this rank's region (after it), and this rank's parts copied out. The factors:
// GpuGroup::ReduceScatter's (`postscale` with Average's 1/n).
Status OpExecutor::NcclReducescatter(const Response& r, std::span<TensorEntry* const> entries,
                                     GpuGroup* group, Communicator* comm, int device,
                                     double prescale, double postscale) {
  const size_t n = static_cast<size_t>(comm->size()), me = static_cast<size_t>(comm->rank());
  const size_t m = entries.size();
  const int64_t elem = static_cast<int64_t>(DataTypeSize(r.dtype));
  row_bytes_.clear();
  dim0s_.clear();
  for (const TensorEntry* e : entries) {
    if (e == nullptr || e->request.shape.empty()) {
      return Status::Internal("reducescatter without a local tensor");
    }
    row_bytes_.push_back(RowElements(e->request.shape) * elem);
    dim0s_.push_back(e->request.shape[0]);
  }
  ScatterParts(dim0s_, row_bytes_, n, &parts_);
  PlanRankMajor(parts_, m, n, &layout_);
  nccl_counts_.clear();
  for (int64_t bytes : layout_.region_bytes) nccl_counts_.push_back(bytes / elem);
  ActivityStart(r, "ALLOCATE_OUTPUT");
  Status s = AllocDeviceOutputs(m, device, [&](size_t i) { return parts_[i * n + me]; });
  ActivityEnd(r);
  HVD_RETURN_IF_ERROR(s);
  const ReduceOp op = BackendOp(r.reduce_op);
  if (m == 1) {
    if (recording_) ActivityStart(r, Activity(group, r));
    s = group->ReduceScatter(entries[0]->input, outputs_[0], nccl_counts_, r.dtype, op, prescale,
                             postscale);
  } else {
    s = FusedNcclReducescatter(r, entries, group, me, device, prescale, postscale);
  }
  if (s.ok()) s = group->Finish("reducescatter");
  ActivityEnd(r);
  AttachOutputs(entries, device, [&](size_t i) {
    return ScatterRows(dim0s_[i], static_cast<int64_t>(n), static_cast<int64_t>(me));
  });
  return s;
}

// Leaves the NCCL activity open (NcclReducescatter ends it after Finish).
Status OpExecutor::FusedNcclReducescatter(const Response& r, std::span<TensorEntry* const> entries,
                                          GpuGroup* group, size_t me, int device, double prescale,
                                          double postscale) {
  const int64_t out_offset = Align64(layout_.total);
  HVD_ASSIGN_OR_RETURN(void* scratch,
                       gpu_->DeviceScratch(device, out_offset + layout_.region_bytes[me]));
  char* buf = static_cast<char*>(scratch);
  ActivityStart(r, "MEMCPY_IN_FUSION_BUFFER");
  Status s;
  for (const auto& run : layout_.runs) {
    if (!s.ok()) break;
    const char* from = static_cast<const char*>(entries[run.tensor]->input) + run.tensor_offset;
    s = gpu_->CopyOnDevice(buf + run.packed_offset, from, run.bytes, device);
  }
  ActivityEnd(r);
  HVD_RETURN_IF_ERROR(s);
  if (recording_) ActivityStart(r, Activity(group, r));
  HVD_RETURN_IF_ERROR(group->ReduceScatter(buf, buf + out_offset, nccl_counts_, r.dtype,
                                           BackendOp(r.reduce_op), prescale, postscale));
  const char* region = buf + out_offset - layout_.region_starts[me];  // + a run's packed offset
  for (const auto& run : layout_.runs) {
    if (run.rank != me) continue;
    HVD_RETURN_IF_ERROR(
        gpu_->CopyOnDevice(outputs_[run.tensor], region + run.packed_offset, run.bytes, device));
  }
  return Status::OK();
}

// The rows each member sends and receives as on the CPU path (AlltoallRows: exchanged over the
// set's CPU communicator when a member gave splits), then one grouped exchange of the bytes.
Status OpExecutor::NcclAlltoall(const Response& r, TensorEntry* entry, GpuGroup* group,
                                Communicator* comm, int device) {
  if (entry == nullptr) return Status::Internal("alltoall without a local tensor");
  const Request& q = entry->request;
  HVD_RETURN_IF_ERROR(AlltoallRows(r, *entry, comm));
  const int64_t row_bytes = RowElements(q.shape) * static_cast<int64_t>(DataTypeSize(q.dtype));
  const int64_t rows = AlltoallBytes(row_bytes, comm->size());
  ActivityStart(r, "ALLOCATE_OUTPUT");
  Status s = AllocDeviceOutputs(1, device, [&](size_t) { return rows * row_bytes; });
  ActivityEnd(r);
  HVD_RETURN_IF_ERROR(s);
  if (recording_) ActivityStart(r, Activity(group, r));
  s = group->Alltoallv(entry->input, send_bytes_, outputs_[0], recv_bytes_);
  if (s.ok()) s = group->Finish("alltoall");
  ActivityEnd(r);
  AttachOutputs(std::span<TensorEntry* const>(&entry, 1), device, [&](size_t) { return rows; });
  handles_->SetReceivedSplits(entry->handle, received_);
  return s;
}

}  // namespace hvd::runtime
