#include "runtime/core/execution/op_executor.h"

#include <cstring>
#include <numeric>

#include "runtime/core/execution/adasum.h"
#include "runtime/core/execution/output_memory.h"
#include "runtime/transports/allreduce_pieces.h"
#include "runtime/transports/reduction.h"

namespace hvd::runtime {

double PostscaleFor(const Response& r, int size) {
  return r.reduce_op == ReduceOp::kAverage ? r.postscale / size : r.postscale;
}

ReduceOp BackendOp(ReduceOp op) { return op == ReduceOp::kAverage ? ReduceOp::kSum : op; }

int64_t Align64(int64_t n) { return (n + 63) / 64 * 64; }

namespace {

Status Failed(OpType type, const std::string& name, const Status& s) {
  return Status(s.code(),
                std::string(OpTypeName(type)) + " of '" + name + "' failed: " + s.message());
}
Status Failed(const Response& r, const Status& s) { return Failed(r.type, r.names.front(), s); }

}  // namespace

Status CheckFusedGather(const Response& r, std::span<TensorEntry* const> entries, size_t n,
                        size_t me) {
  const size_t m = entries.size();
  if (r.names.size() != m || r.row_elements.size() != m || r.sizes.size() != m * n) {
    return Status::Internal("fused allgather response does not match its " + std::to_string(m) +
                            " tensors on " + std::to_string(n) + " ranks");
  }
  for (size_t i = 0; i < m; ++i) {
    const TensorEntry* e = entries[i];
    if (!e) return Status::Internal("allgather without a local tensor");
    if (e->request.shape.empty() || e->request.shape[0] != r.sizes[i * n + me] ||
        RowElements(e->request.shape) != r.row_elements[i]) {
      return Status::Internal("allgather of '" + r.names[i] + "': local shape " +
                              ShapeText(e->request.shape) + " differs from the negotiated one");
    }
  }
  return Status::OK();
}

void OpExecutor::ActivityStart(const Response& r, std::string_view activity) {
  if (!recording_) return;
  for (const std::string& name : r.names) timeline_->timeline().ActivityStart(name, activity);
}

void OpExecutor::ActivityEnd(const Response& r) {
  if (!recording_) return;
  for (const std::string& name : r.names) timeline_->timeline().ActivityEnd(name);
}

std::string OpExecutor::CommActivity(const Response& r, const Communicator* comm) const {
  if (!recording_) return {};
  const std::string_view op = r.type == OpType::kBroadcast ? "BCAST" : TimelineOpName(r.type);
  return std::string(comm->name()) + "_" + std::string(op);
}

void OpExecutor::RecordEnd(const Response& r, std::span<TensorEntry* const> entries) {
  if (r.type == OpType::kBarrier) {
    for (const std::string& name : r.names) timeline_->timeline().End(name, "", "[]", 0);
    return;
  }
  const char* dtype = DataTypeName(r.dtype);
  const int64_t elem = static_cast<int64_t>(DataTypeSize(r.dtype));
  for (size_t i = 0; i < r.names.size(); ++i) {
    std::span<const int64_t> shape;
    if (i < entries.size() && entries[i]) {
      shape = entries[i]->request.shape;
    } else if (r.type == OpType::kAllreduce && i < r.sizes.size()) {
      shape = std::span<const int64_t>(&r.sizes[i], 1);  // a joined rank 0 has no local tensor
    }
    int64_t count = 1;
    for (int64_t d : shape) count *= d;
    timeline_->timeline().End(r.names[i], dtype, ShapeText(shape), count * elem);
  }
}

Status OpExecutor::Execute(const Response& r, std::span<TensorEntry* const> entries,
                           Communicator* comm, Status* outcome, GpuSetState* gpu,
                           const void* reduced) {
  if (entries.empty()) {  // a response names at least one tensor; never index an empty list
    *outcome = Status::Internal(std::string(OpTypeName(r.type)) + " response without tensors");
    return Status::OK();
  }
  switch (r.type) {
    case OpType::kAllreduce:
    case OpType::kBroadcast:
    case OpType::kAllgather:
    case OpType::kAlltoall:
    case OpType::kReducescatter:
    case OpType::kBarrier:
      break;
    case OpType::kError:
      ReleaseReady(entries);
      *outcome = Status::RemoteError(r.error);
      return Status::OK();
    default:
      ReleaseReady(entries);
      *outcome = Status::Internal(std::string("unexpected response type ") + OpTypeName(r.type));
      return Status::OK();
  }
  recording_ = timeline_ != nullptr && timeline_->on();
  if (recording_) {
    const std::string_view op = TimelineOpName(r.type);
    for (const auto& e : entries) {
      if (e && e->enqueued_us > 0) timeline_->timeline().Queue(e->request.name, op, e->enqueued_us);
    }
    for (const std::string& name : r.names) timeline_->timeline().Start(name, op);
  }
  Status s = reduced != nullptr ? CopyReduced(r, entries.front(), reduced, comm)
             : r.device >= 0 && r.type != OpType::kBarrier ? RunGpu(r, entries, comm, gpu)
                                                           : Run(r, entries, comm);
  if (recording_) RecordEnd(r, entries);
  if (s.ok() && defer_group_ != nullptr) {
    s = DeferCompletion(r, entries);
    // The op's work is queued on hvd's stream with no event to say when it ends, and its
    // handles fail below: stop it first, as RunGpu does for a failed op (the postscale and the
    // copies out would otherwise land in tensors the caller owns again).
    if (!s.ok()) StopDeviceWork(gpu, last_device_, s);
  }
  defer_group_ = nullptr;
  if (!s.ok()) s = Failed(r, s);
  *outcome = s;
  return s;
}

Status OpExecutor::DeferCompletion(const Response& r, std::span<TensorEntry* const> entries) {
  std::vector<int64_t> handles;
  handles.reserve(entries.size());
  for (const TensorEntry* e : entries) {
    if (e != nullptr) handles.push_back(e->handle);
  }
  deferred_in_flight_->fetch_add(1);
  Status s = defer_group_->Defer(
      "allreduce", [manager = handles_, handles = std::move(handles), counter = deferred_in_flight_,
                    name = r.names.front(), type = r.type](const Status& done) {
        // Failed()'s message, as the op's synchronous failure reads.
        manager->FinishParts(handles, done.ok() ? done : Failed(type, name, done));
        counter->fetch_sub(1);
      });
  if (!s.ok()) {
    deferred_in_flight_->fetch_sub(1);
    return s;
  }
  deferred_ = true;
  return Status::OK();
}

Status OpExecutor::CopyReduced(const Response& r, TensorEntry* entry, const void* reduced,
                               const Communicator* comm) {
  if (entry == nullptr) {  // a common hit is pending on every member; never here
    return Status::Internal("eager allreduce of '" + r.names.front() + "' without its tensor");
  }
  // The name is built only when recording (an untimed op allocates nothing).
  if (recording_) ActivityStart(r, std::string(comm->name()) + "_EAGER_ALLREDUCE");
  const int64_t count = r.sizes.front();
  if (count > 0) std::memcpy(entry->output, reduced, count * DataTypeSize(r.dtype));
  ScaleBuffer(entry->output, count, r.dtype, PostscaleFor(r, comm->size()));
  ActivityEnd(r);
  return Status::OK();
}

Status OpExecutor::Run(const Response& r, std::span<TensorEntry* const> entries,
                       Communicator* comm) {
  switch (r.type) {
    case OpType::kAllreduce:
      return Allreduce(r, entries, comm);
    case OpType::kBroadcast:
      return Broadcast(r, entries.front(), comm);
    case OpType::kAllgather:
      return entries.size() == 1 ? Allgather(r, entries.front(), comm)
                                 : FusedAllgather(r, entries, comm);
    case OpType::kAlltoall:
      return Alltoall(r, entries.front(), comm);
    case OpType::kReducescatter:
      return entries.size() == 1 ? Reducescatter(r, entries.front(), comm)
                                 : FusedReducescatter(r, entries, comm);
    default:
      // A barrier: its response exists only once every member entered it -- negotiated, rank 0
      // answered after every member had asked for it; a common cache hit, the AND round showed
      // its bit on every member -- so no round of its own is needed to release it.
      return Status::OK();
  }
}

void OpExecutor::FillPieces(const Response& r, std::span<TensorEntry* const> entries) {
  pieces_.clear();
  for (size_t i = 0; i < entries.size(); ++i) {
    const TensorEntry* e = entries[i];  // null: a joined rank, which contributes zeros
    pieces_.push_back({e ? e->input : nullptr, e ? e->output : nullptr, r.sizes[i]});
  }
}

PieceView OpExecutor::PackPieces(const Response& r, int64_t total, char* buf) {
  PieceView::Index(pieces_, &piece_starts_);  // the counts come from the response: not negative
  const PieceView view(pieces_, piece_starts_, static_cast<int64_t>(DataTypeSize(r.dtype)));
  ActivityStart(r, "MEMCPY_IN_FUSION_BUFFER");
  view.Gather(0, total, buf);
  ActivityEnd(r);
  ScaleBuffer(buf, total, r.dtype, r.prescale);
  return view;
}

Status OpExecutor::Allreduce(const Response& r, std::span<TensorEntry* const> entries,
                             Communicator* comm) {
  if (r.reduce_op == ReduceOp::kAdasum) return Adasum(r, entries, comm);
  const int64_t elem = static_cast<int64_t>(DataTypeSize(r.dtype));
  const int64_t total = std::accumulate(r.sizes.begin(), r.sizes.end(), int64_t{0});
  const double post = PostscaleFor(r, comm->size());
  if (entries.size() == 1 && entries[0]) {  // single tensor: reduce in the caller's output
    TensorEntry& e = *entries[0];
    if (e.output != e.input && total > 0) std::memcpy(e.output, e.input, total * elem);
    ScaleBuffer(e.output, total, r.dtype, r.prescale);
    ActivityStart(r, CommActivity(r, comm));
    // The postscale (Average's 1/n) in the transport: where it reduces slices, each slice is
    // scaled by its reducer before it is shared, no pass over the output of its own.
    Status s = comm->AllreduceScaled(e.output, total, r.dtype, BackendOp(r.reduce_op), post);
    ActivityEnd(r);
    return s;
  }
  FillPieces(r, entries);
  if (r.prescale == 1.0 && comm->allreduces_pieces()) {
    // The transport reads the inputs and writes the outputs where they are (shared memory,
    // hvd's TCP, their hierarchy): no copy into the fusion buffer and back, which for large fused
    // batches cost as much as the collective.
    ActivityStart(r, CommActivity(r, comm));
    Status s = comm->AllreducePiecesScaled(pieces_, r.dtype, BackendOp(r.reduce_op), post);
    ActivityEnd(r);
    return s;
  }
  const bool grows = recording_ && total * elem > buffer_->capacity();
  if (grows) ActivityStart(r, "INIT_FUSION_BUFFER");
  char* buf = static_cast<char*>(buffer_->Get(total * elem));
  if (grows) ActivityEnd(r);
  const PieceView view = PackPieces(r, total, buf);
  ActivityStart(r, CommActivity(r, comm));
  Status s = comm->AllreduceScaled(buf, total, r.dtype, BackendOp(r.reduce_op), post);
  ActivityEnd(r);
  HVD_RETURN_IF_ERROR(s);
  ActivityStart(r, "MEMCPY_OUT_FUSION_BUFFER");
  view.Scatter(0, total, buf);
  ActivityEnd(r);
  return Status::OK();
}

// Several tensors (or a prescale) are packed into the fusion buffer's first half; AdasumAllreduce
// (adasum.h) leaves the combination in its second half, which is scattered into the outputs. A
// joined rank (null entry) contributes zeros, which Adasum leaves out.
Status OpExecutor::Adasum(const Response& r, std::span<TensorEntry* const> entries,
                          Communicator* comm) {
  const int64_t elem = static_cast<int64_t>(DataTypeSize(r.dtype));
  const int64_t total = std::accumulate(r.sizes.begin(), r.sizes.end(), int64_t{0});
  if (entries.size() == 1 && entries[0] && r.prescale == 1.0) {
    // One tensor: straight from its input to its output (the collective has read all of the
    // input before it writes the output, so they may be the same memory).
    TensorEntry& e = *entries[0];
    if (recording_) ActivityStart(r, std::string(comm->name()) + "_ADASUM_ALLREDUCE");
    Status s = AdasumAllreduce(comm, e.input, e.output, r.sizes, r.dtype, &adasum_);
    ActivityEnd(r);
    HVD_RETURN_IF_ERROR(s);
    ScaleBuffer(e.output, total, r.dtype, r.postscale);
    return Status::OK();
  }
  const int64_t own = Align64(total * elem);
  const bool grows = recording_ && own + total * elem > buffer_->capacity();
  if (grows) ActivityStart(r, "INIT_FUSION_BUFFER");
  char* buf = static_cast<char*>(buffer_->Get(own + total * elem));
  if (grows) ActivityEnd(r);
  FillPieces(r, entries);
  const PieceView view = PackPieces(r, total, buf);
  if (recording_) ActivityStart(r, std::string(comm->name()) + "_ADASUM_ALLREDUCE");
  Status s = AdasumAllreduce(comm, buf, buf + own, r.sizes, r.dtype, &adasum_);
  ActivityEnd(r);
  HVD_RETURN_IF_ERROR(s);
  ScaleBuffer(buf + own, total, r.dtype, r.postscale);
  ActivityStart(r, "MEMCPY_OUT_FUSION_BUFFER");
  view.Scatter(0, total, buf + own);
  ActivityEnd(r);
  return Status::OK();
}

Status OpExecutor::Broadcast(const Response& r, TensorEntry* entry, Communicator* comm) {
  if (!entry) return Status::Internal("broadcast without a local tensor");
  const int64_t bytes = r.sizes.at(0) * static_cast<int64_t>(DataTypeSize(r.dtype));
  if (comm->rank() == r.root && entry->output != entry->input && bytes > 0) {
    std::memcpy(entry->output, entry->input, bytes);
  }
  ActivityStart(r, CommActivity(r, comm));
  Status s = comm->Broadcast(entry->output, bytes, r.root);
  ActivityEnd(r);
  return s;
}

Status OpExecutor::Allgather(const Response& r, TensorEntry* entry, Communicator* comm) {
  if (!entry) return Status::Internal("allgather without a local tensor");
  const Request& q = entry->request;
  if (q.shape.empty() || r.sizes.size() != static_cast<size_t>(comm->size()) ||
      r.sizes[comm->rank()] != q.shape[0]) {
    return Status::Internal("allgather response for '" + q.name +
                            "' does not match the local tensor");
  }
  const int64_t row_bytes = RowElements(q.shape) * static_cast<int64_t>(DataTypeSize(q.dtype));
  recv_bytes_.assign(comm->size(), 0);
  int64_t rows = 0;
  for (int i = 0; i < comm->size(); ++i) {
    recv_bytes_[i] = r.sizes.at(i) * row_bytes;
    rows += r.sizes[i];
  }
  ActivityStart(r, "ALLOCATE_OUTPUT");
  OutputTensor out{AllocOutput(rows * row_bytes), q.dtype, TensorShape(q.shape), q.device};
  out.shape[0] = rows;
  ActivityStart(r, CommActivity(r, comm));
  Status s = comm->Allgatherv(entry->input, out.data, recv_bytes_);
  ActivityEnd(r);
  handles_->SetOutput(entry->handle, entry->output_index, std::move(out));
  return s;
}

// Rank k's block is its rows of member 0, then of member 1, ... This rank's is packed into
// the fusion buffer. Where the transport takes pieces, the blocks are gathered straight into
// the outputs (AllgatherPieces); else the fusion buffer also holds the gathered blocks of
// every rank (in rank order, before this rank's block at a 64-byte boundary: separate
// regions, because no backend promises that Allgatherv may read its input from inside its
// output), unpacked into the outputs after. Outputs are attached even when the gather fails,
// as on the single-tensor path.
Status OpExecutor::FusedAllgather(const Response& r, std::span<TensorEntry* const> entries,
                                  Communicator* comm) {
  const size_t n = static_cast<size_t>(comm->size()), me = static_cast<size_t>(comm->rank());
  const size_t m = entries.size();
  HVD_RETURN_IF_ERROR(CheckFusedGather(r, entries, n, me));
  const int64_t elem = static_cast<int64_t>(DataTypeSize(r.dtype));
  ActivityStart(r, "ALLOCATE_OUTPUT");
  outputs_.clear();
  for (size_t i = 0; i < m; ++i) {
    int64_t rows = 0;
    for (size_t k = 0; k < n; ++k) rows += r.sizes[i * n + k];
    outputs_.push_back(static_cast<char*>(AllocOutput(rows * r.row_elements[i] * elem)));
  }
  ActivityEnd(r);
  // Rank k's block is its rows of member 0, then of member 1, ...: one piece each, at k's
  // rows in that member's output.
  pieces_.clear();
  rank_elements_.assign(n, 0);
  block_bytes_.assign(n, 0);
  cursor_.assign(m, 0);
  for (size_t k = 0; k < n; ++k) {
    for (size_t i = 0; i < m; ++i) {
      const int64_t count = r.sizes[i * n + k] * r.row_elements[i];
      if (count > 0) pieces_.push_back({nullptr, outputs_[i] + cursor_[i], count});
      cursor_[i] += count * elem;
      rank_elements_[k] += count;
      block_bytes_[k] += count * elem;
    }
  }
  const int64_t total = std::accumulate(block_bytes_.begin(), block_bytes_.end(), int64_t{0});
  // Where the transport writes pieces (shared memory: straight from the peers' blocks; hvd's
  // TCP and the hierarchy through their own kept buffer), the fusion buffer holds only this
  // rank's packed block and the gathered rows land in the outputs.
  const bool into_outputs = comm->allreduces_pieces();
  const int64_t in_offset = into_outputs ? 0 : Align64(total);
  const bool grows = recording_ && in_offset + block_bytes_[me] > buffer_->capacity();
  if (grows) ActivityStart(r, "INIT_FUSION_BUFFER");
  char* buf = static_cast<char*>(buffer_->Get(in_offset + block_bytes_[me]));
  if (grows) ActivityEnd(r);
  ActivityStart(r, "MEMCPY_IN_FUSION_BUFFER");
  char* in = buf + in_offset;
  for (size_t i = 0; i < m; ++i) {
    const int64_t bytes = r.sizes[i * n + me] * r.row_elements[i] * elem;
    if (bytes > 0) std::memcpy(in, entries[i]->input, bytes);
    in += bytes;
  }
  ActivityEnd(r);
  Status s;
  if (into_outputs) {
    ActivityStart(r, CommActivity(r, comm));
    s = comm->AllgatherPieces(buf, pieces_, rank_elements_, r.dtype);
    ActivityEnd(r);
  } else {
    ActivityStart(r, CommActivity(r, comm));
    s = comm->Allgatherv(buf + in_offset, buf, block_bytes_);
    ActivityEnd(r);
    if (s.ok()) {
      ActivityStart(r, "MEMCPY_OUT_FUSION_BUFFER");
      PieceView::Index(pieces_, &piece_starts_);  // counts from the response: not negative
      const PieceView view(pieces_, piece_starts_, elem);
      view.Scatter(0, view.count(), buf);
      ActivityEnd(r);
    }
  }
  for (size_t i = 0; i < m; ++i) {
    const TensorEntry& e = *entries[i];
    OutputTensor out{outputs_[i], e.request.dtype, TensorShape(e.request.shape), e.request.device};
    out.shape[0] = 0;
    for (size_t k = 0; k < n; ++k) out.shape[0] += r.sizes[i * n + k];
    handles_->SetOutput(e.handle, e.output_index, std::move(out));
  }
  return s;
}

Status OpExecutor::AlltoallRows(const Response& r, const TensorEntry& entry, Communicator* comm) {
  const Request& q = entry.request;
  const int n = comm->size();
  send_rows_.resize(n);
  recv_rows_.resize(n);
  for (int i = 0; i < n; ++i) {
    send_rows_[i] = q.args.empty() ? q.shape[0] / n : q.args.at(i);
  }
  if (r.even_alltoall_rows.empty()) {  // some member gave splits: exchange them first
    eight_.assign(n, sizeof(int64_t));
    ActivityStart(r, CommActivity(r, comm));
    Status splits = comm->Alltoallv(send_rows_.data(), eight_, recv_rows_.data(), eight_);
    if (splits.ok()) splits = CheckReceivedRows(q, n);
    if (!splits.ok()) ActivityEnd(r);
    return splits;
  }
  // Every member splits evenly and the response says their dims 0.
  if (static_cast<int>(r.even_alltoall_rows.size()) != n || !q.args.empty() ||
      r.even_alltoall_rows[comm->rank()] != q.shape[0]) {
    return Status::Internal("alltoall response for '" + q.name +
                            "' does not match the local tensor");
  }
  for (int i = 0; i < n; ++i) recv_rows_[i] = r.even_alltoall_rows[i] / n;
  return Status::OK();
}

// The counts came from the other members over the data connections (unauthenticated past the
// TCP handshake, docs/threat-model.md): before they size the output, each must be one that a
// member of this build sends.
Status OpExecutor::CheckReceivedRows(const Request& q, int n) const {
  const int k =
      FirstCountBeyond(std::span<const int64_t>(recv_rows_.data(), n), RowElements(q.shape));
  if (k < 0) return Status::OK();
  return Status::InvalidArgument("alltoall of '" + q.name + "': rank " + std::to_string(k) +
                                 " announced " + std::to_string(recv_rows_[k]) +
                                 " rows, a count no rank sends");
}

int64_t OpExecutor::AlltoallBytes(int64_t row_bytes, int n) {
  send_bytes_.resize(n);
  recv_bytes_.resize(n);
  received_.resize(n);
  int64_t rows = 0;
  for (int i = 0; i < n; ++i) {
    send_bytes_[i] = send_rows_[i] * row_bytes;
    recv_bytes_[i] = recv_rows_[i] * row_bytes;
    received_[i] = static_cast<int32_t>(recv_rows_[i]);
    rows += recv_rows_[i];
  }
  return rows;
}

Status OpExecutor::Alltoall(const Response& r, TensorEntry* entry, Communicator* comm) {
  if (!entry) return Status::Internal("alltoall without a local tensor");
  const Request& q = entry->request;
  const int n = comm->size();
  HVD_RETURN_IF_ERROR(AlltoallRows(r, *entry, comm));
  const int64_t row_bytes = RowElements(q.shape) * static_cast<int64_t>(DataTypeSize(q.dtype));
  const int64_t rows = AlltoallBytes(row_bytes, n);
  ActivityStart(r, "ALLOCATE_OUTPUT");
  OutputTensor out{AllocOutput(rows * row_bytes), q.dtype, TensorShape(q.shape), q.device};
  out.shape[0] = rows;
  ActivityStart(r, CommActivity(r, comm));
  Status s;
  if (r.even_alltoall_rows.empty()) {
    s = comm->Alltoallv(entry->input, send_bytes_, out.data, recv_bytes_);
  } else {
    // Every member's sizes follow from the response: no size round (one round of two at 2
    // ranks; the one whose waits cost most on a CPU shared by several ranks).
    int64_t max_piece = 0;
    for (int64_t dim0 : r.even_alltoall_rows) max_piece = std::max(max_piece, dim0 / n * row_bytes);
    s = comm->AlltoallvAgreed(entry->input, send_bytes_, out.data, recv_bytes_, max_piece);
  }
  ActivityEnd(r);
  handles_->SetOutput(entry->handle, entry->output_index, std::move(out));
  handles_->SetReceivedSplits(entry->handle, received_);
  return s;
}

Status OpExecutor::FusedReducescatter(const Response& r, std::span<TensorEntry* const> entries,
                                      Communicator* comm) {
  const size_t m = entries.size();
  const size_t n = static_cast<size_t>(comm->size());
  const size_t me = static_cast<size_t>(comm->rank());
  const int64_t elem = static_cast<int64_t>(DataTypeSize(r.dtype));
  for (const TensorEntry* e : entries) {
    if (e == nullptr) return Status::Internal("reducescatter without a local tensor");
  }
  // Tensor i's rows go to the ranks in order, the first dim0 % n ranks one more (as one
  // reducescatter of it alone).
  part_elements_.assign(m * n, 0);
  rank_elements_.assign(n, 0);
  for (size_t i = 0; i < m; ++i) {
    const Request& q = entries[i]->request;
    const int64_t dim0 = q.shape.at(0), row = RowElements(q.shape);
    for (size_t k = 0; k < n; ++k) {
      const int64_t rows = ScatterRows(dim0, static_cast<int64_t>(n), static_cast<int64_t>(k));
      part_elements_[i * n + k] = rows * row;
      rank_elements_[k] += rows * row;
    }
  }
  ActivityStart(r, "ALLOCATE_OUTPUT");
  outputs_.clear();
  for (size_t i = 0; i < m; ++i) {
    outputs_.push_back(static_cast<char*>(AllocOutput(part_elements_[i * n + me] * elem)));
  }
  ActivityEnd(r);
  const int64_t total = std::accumulate(rank_elements_.begin(), rank_elements_.end(), int64_t{0});
  // The input goes in rank order: every tensor's rows for rank 0, then for rank 1, ... (pieces_
  // below).
  const bool in_place = r.prescale == 1.0 && comm->allreduces_pieces();
  const int64_t out_offset = in_place ? 0 : Align64(total * elem);
  const int64_t need = out_offset + rank_elements_[me] * elem;
  const bool grows = recording_ && need > buffer_->capacity();
  if (grows) ActivityStart(r, "INIT_FUSION_BUFFER");
  char* buf = static_cast<char*>(buffer_->Get(need));
  if (grows) ActivityEnd(r);
  pieces_.clear();
  cursor_.assign(m, 0);
  for (size_t k = 0; k < n; ++k) {
    for (size_t i = 0; i < m; ++i) {
      const int64_t count = part_elements_[i * n + k];
      if (count > 0) {
        pieces_.push_back(
            {static_cast<const char*>(entries[i]->input) + cursor_[i], nullptr, count});
      }
      cursor_[i] += count * elem;
    }
  }
  Status s;
  // The postscale (Average's 1/n) in the transport, as for an allreduce: where it reduces this
  // rank's slice, the slice is scaled as it is completed.
  const double post = PostscaleFor(r, static_cast<int>(n));
  if (in_place) {
    // The transport reads the tensors where they are (shared memory, hvd's TCP, their
    // hierarchy): the fusion buffer holds only this rank's result.
    ActivityStart(r, CommActivity(r, comm));
    s = comm->ReduceScatterPiecesScaled(pieces_, buf, rank_elements_, r.dtype,
                                        BackendOp(r.reduce_op), post);
    ActivityEnd(r);
  } else {
    ActivityStart(r, "MEMCPY_IN_FUSION_BUFFER");
    PieceView::Index(pieces_, &piece_starts_);  // counts from the response: not negative
    PieceView(pieces_, piece_starts_, elem).Gather(0, total, buf);
    ScaleBuffer(buf, total, r.dtype, r.prescale);
    ActivityEnd(r);
    ActivityStart(r, CommActivity(r, comm));
    s = comm->ReduceScatterScaled(buf, buf + out_offset, rank_elements_, r.dtype,
                                  BackendOp(r.reduce_op), post);
    ActivityEnd(r);
  }
  if (s.ok()) {
    ActivityStart(r, "MEMCPY_OUT_FUSION_BUFFER");
    const char* from = buf + out_offset;
    for (size_t i = 0; i < m; ++i) {
      const int64_t count = part_elements_[i * n + me];
      if (count > 0) std::memcpy(outputs_[i], from, count * elem);
      from += count * elem;
    }
    ActivityEnd(r);
  }
  for (size_t i = 0; i < m; ++i) {
    const TensorEntry& e = *entries[i];
    OutputTensor out{outputs_[i], e.request.dtype, TensorShape(e.request.shape), e.request.device};
    out.shape[0] =
        ScatterRows(e.request.shape.at(0), static_cast<int64_t>(n), static_cast<int64_t>(me));
    handles_->SetOutput(e.handle, e.output_index, std::move(out));
  }
  return s;
}

Status OpExecutor::Reducescatter(const Response& r, TensorEntry* entry, Communicator* comm) {
  if (!entry) return Status::Internal("reducescatter without a local tensor");
  const Request& q = entry->request;
  const int n = comm->size();
  const int64_t dim0 = q.shape.at(0), row = RowElements(q.shape);
  std::vector<int64_t>& counts = rank_elements_;  // each rank's elements, as in the fused one
  counts.resize(n);
  for (int i = 0; i < n; ++i) counts[i] = ScatterRows(dim0, n, i) * row;
  const int64_t elem = static_cast<int64_t>(DataTypeSize(q.dtype));
  const void* in = entry->input;
  if (r.prescale != 1.0) {  // scale a staged copy; the caller's input is read-only
    void* staged = buffer_->Get(dim0 * row * elem);
    std::memcpy(staged, entry->input, dim0 * row * elem);
    ScaleBuffer(staged, dim0 * row, q.dtype, r.prescale);
    in = staged;
  }
  ActivityStart(r, "ALLOCATE_OUTPUT");
  OutputTensor out{AllocOutput(counts[comm->rank()] * elem), q.dtype, TensorShape(q.shape),
                   q.device};
  out.shape[0] = counts[comm->rank()] / (row == 0 ? 1 : row);
  if (row == 0) out.shape[0] = ScatterRows(dim0, n, comm->rank());
  ActivityStart(r, CommActivity(r, comm));
  Status s = comm->ReduceScatterScaled(in, out.data, counts, q.dtype, BackendOp(r.reduce_op),
                                       PostscaleFor(r, n));
  ActivityEnd(r);
  handles_->SetOutput(entry->handle, entry->output_index, std::move(out));
  return s;
}

}  // namespace hvd::runtime
