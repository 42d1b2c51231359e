#ifndef HVD_RUNTIME_CORE_EXECUTION_OP_EXECUTOR_H_
#define HVD_RUNTIME_CORE_EXECUTION_OP_EXECUTOR_H_

#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "runtime/core/execution/adasum.h"
#include "runtime/core/execution/collective_plan.h"
#include "runtime/core/execution/fusion_buffer.h"
#include "runtime/core/handle_manager.h"
#include "runtime/core/negotiation/message.h"
#include "runtime/core/runtime_timeline.h"
#include "runtime/core/tensor_queue.h"
#include "runtime/runtime_config.h"
#include "runtime/transports/allreduce_pieces.h"
#include "runtime/transports/communicator.h"
#include "runtime/transports/gpu_backend.h"

namespace hvd::runtime {

// The factor after the backend's sum: Average is Sum then postscale / size.
double PostscaleFor(const Response& r, int size);
// What the backend runs for `op` (Average is not a backend op).
ReduceOp BackendOp(ReduceOp op);
// A fused allgather's response must describe its entries: one block of set-size dims 0 and a
// row size per member, matching this rank's tensors (n members, this one `me`).
Status CheckFusedGather(const Response& r, std::span<TensorEntry* const> entries, size_t n,
                        size_t me);

// `n` rounded up to a multiple of 64: where a second region of the fusion buffer starts.
int64_t Align64(int64_t n);

// How the executor runs GPU tensors (RuntimeConfig's GPU knobs).
struct GpuOptions {
  std::string operations = "auto";      // HVD_GPU_OPERATIONS, normalised
  bool hierarchical_allreduce = false;  // HVD_HIERARCHICAL_ALLREDUCE=1: HierarchicalNcclAllreduce
  RuntimeConfig::GpuStagedOps staged;   // ops staged even where the set runs on NCCL
  // HVD_GPU_ASYNC_COMPLETION=1: a NCCL allreduce's handles complete on its group's completion
  // thread once the device finished it (GpuGroup::Defer), not on the cycle, which goes on to
  // the next op at once.
  bool async_completion = false;
};

// A process set's GPU state, owned by its Controller: whether its GPU ops run on NCCL, decided
// with the set's members at its first GPU op (GpuBackend::CreateGroup), and the NCCL group.
struct GpuSetState {
  bool decided = false;
  int device = -1;                  // the device `group` (and `local_group`) were made on
  std::unique_ptr<GpuGroup> group;  // null: GPU tensors are staged through host memory
  // The NCCL group of this member's host, for the hierarchical allreduce and Adasum (made at
  // the first op that needs it when the set's communicator is a hierarchy); null: flat.
  bool local_decided = false;
  std::unique_ptr<GpuGroup> local_group;
};

// OpExecutor runs one negotiated (possibly fused) response on a process set's communicator
// and sets `*outcome` to the status the local entries' handles complete with; the caller
// completes them (after recycling the entries, so a woken caller's next enqueue finds them
// free). Outputs are attached to the handles here. `entries[i]` belongs to response.names[i]; it is
// null on a rank that has joined (it then contributes zeros to allreduce). Allreduce
// Average is Sum followed by a 1/size post-scale; fused allreduces are staged through the
// persistent FusionBuffer, unless the transport takes the tensors in place
// (Communicator::allreduces_pieces: shared memory, hvd's TCP, their hierarchy) and there is no
// prescale. A fused allgather is one Allgatherv over the FusionBuffer: every rank packs its
// members' rows into its block, and each member's rows of every rank (in rank order) are copied
// out into that member's own output. Runtime-allocated outputs are malloc'ed and handed to the
// handle.
//
// Timeline (when `timeline` is non-null and on): each tensor of the response gets an <OP> span
// holding the activities (ALLOCATE_OUTPUT, MEMCPY_IN_FUSION_BUFFER, <COMM>_<OP> e.g.
// GLOO_ALLREDUCE, MEMCPY_OUT_FUSION_BUFFER) and an End with dtype, shape and bytes. Checked once
// per response; nothing is built when off.
//
// GPU tensors (response.device >= 0; op_executor_gpu.cc): the executor first makes hvd's
// stream wait for each tensor's producer (the entry's `ready` event). When the set has a NCCL
// group, allreduce, broadcast, allgather, alltoall and reducescatter run on it
// (op_executor_nccl.cc) -- a reduction only where NCCL can do it (GpuGroup::CanReduce) --
// fused as the CPU path fuses them (collective_plan.h: device copies into and out of the
// backend's device scratch), and their runtime-allocated outputs are device memory of the
// tensors' device (GpuBackend::AllocDeviceOutput; OutputTensor::device is that device). The
// split sizes of an alltoall are exchanged over the set's CPU communicator, as Horovod exchanges
// them over its controller. Everything else is staged: device->pinned host copies, the CPU path
// above on the host copies, host->device copies of the results (a single large allreduce in
// chunks, so the copies overlap the transfer); its runtime-allocated outputs are host memory
// (OutputTensor::device -1) that the framework binding moves to the device. With
// HVD_HIERARCHICAL_ALLREDUCE=1 on a set spread over several hosts, an allreduce on NCCL is
// hierarchical (HierarchicalNcclAllreduce). Timeline activities NCCL_ALLREDUCE, NCCL_BCAST,
// NCCL_ALLGATHER, NCCL_ALLTOALL, NCCL_REDUCESCATTER, MEMCPY_D2H, MEMCPY_H2D,
// <COMM>_STAGED_ALLREDUCE, and the hierarchy's MEMCPY_IN_HOST_BUFFER, <CROSS COMM>_ALLREDUCE,
// MEMCPY_OUT_HOST_BUFFER.
//
// A non-OK return (also in *outcome) means the communicator failed (peer died, timeout,
// abort): the caller must fail the entries and stop. Errors that concern only these tensors
// (an error response) are only in *outcome; the return is OK. Background thread only.
class OpExecutor {
 public:
  // `join_device`: the device of this rank's hvd_join (written by the framework thread, -1 for
  // none); a rank that joined before its first GPU op runs its GPU work there.
  OpExecutor(FusionBuffer* buffer, HandleManager* handles, RuntimeTimeline* timeline = nullptr,
             GpuBackend* gpu = nullptr, GpuOptions gpu_options = {},
             const std::atomic<int>* join_device = nullptr)
      : buffer_(buffer),
        handles_(handles),
        timeline_(timeline),
        gpu_(gpu),
        gpu_options_(std::move(gpu_options)),
        join_device_(join_device) {}

  // `gpu` is the set's GpuSetState (null: GPU responses are staged). `reduced` (non-null only
  // for a single-tensor CPU allreduce whose reduction already ran in the negotiation round,
  // controller.h "Eager") holds the set's reduction of the prescaled inputs: it is copied into
  // the entry's output and postscaled instead of running a collective.
  Status Execute(const Response& response, std::span<TensorEntry* const> entries,
                 Communicator* comm, Status* outcome, GpuSetState* gpu = nullptr,
                 const void* reduced = nullptr);
  // True (once) when the last Execute deferred the completion of its handles to a GPU group
  // (GpuOptions::async_completion): the group finishes them, with *outcome's message prefix
  // on failure; the caller must neither finish them nor touch the entries again.
  bool TakeDeferred() { return std::exchange(deferred_, false); }
  // Deferred completions not yet done, on every set (a waiting caller then waits for its
  // handle instead of running empty cycles: Runtime::Wait). Any thread.
  int64_t deferred_in_flight() const { return deferred_in_flight_->load(); }

 private:
  // The CPU path of a data response (host memory).
  Status Run(const Response& r, std::span<TensorEntry* const> entries, Communicator* comm);
  // Execute's `reduced` case: the copy and the postscale, as the activity
  // <COMM>_EAGER_ALLREDUCE.
  Status CopyReduced(const Response& r, TensorEntry* entry, const void* reduced,
                     const Communicator* comm);
  // op_executor_gpu.cc
  Status RunGpu(const Response& r, std::span<TensorEntry* const> entries, Communicator* comm,
                GpuSetState* state);
  // RunGpu's op on `device` (its producers waited for); on a failure RunGpu stops the device's
  // work before it returns (StopDeviceWork).
  Status RunGpuOn(const Response& r, std::span<TensorEntry* const> entries, Communicator* comm,
                  GpuSetState* state, int device);
  // After a failed GPU op, before its handles fail: breaks the set's NCCL groups and waits for
  // what is queued on the device's stream (GpuBackend::Quiesce).
  void StopDeviceWork(GpuSetState* state, int device, const Status& failure);
  // What the set's NCCL groups run of `r` (sets *taken; false: stage it).
  Status RunOnGroup(const Response& r, std::span<TensorEntry* const> entries, Communicator* comm,
                    GpuSetState* state, int device, bool* taken);
  Status NcclAllreduce(const Response& r, std::span<TensorEntry* const> entries, GpuGroup* group,
                       double prescale, double postscale);
  // Horovod's NCCLHierarchicalAllreduce: a NCCL reduce-scatter within the host (`local`), this
  // member's slice allreduced across hosts over `h.cross` through host memory, a NCCL allgather
  // within the host. `post`: the postscale (with Average's 1/n), applied on the host.
  Status HierarchicalNcclAllreduce(const Response& r, std::span<TensorEntry* const> entries,
                                   Communicator::Hierarchy h, GpuGroup* local, int device,
                                   double post);
  // The step across hosts of both: `bytes` of device memory through pinned host memory, where
  // `on_host(void* staging)` runs `cross`'s collective on them (op_executor_gpu.cc).
  template <typename OnHost>
  Status ThroughHost(const Response& r, char* data, int64_t bytes, int device,
                     const Communicator* cross, const char* suffix, const OnHost& on_host);
  // Horovod's GPU Adasum: the host's average on NCCL, Adasum of the host averages across hosts
  // (local rank 0's cross group, on the host), a NCCL broadcast within the host.
  Status HierarchicalNcclAdasum(const Response& r, std::span<TensorEntry* const> entries,
                                Communicator::Hierarchy h, GpuGroup* local, int device);
  // The tensors of `r` packed one after another into device memory `buf` (a null entry, a
  // joined rank's, as zeros), and copied back out into their outputs: asynchronous copies on
  // the backend's stream.
  Status PackOnDevice(const Response& r, std::span<TensorEntry* const> entries, char* buf,
                      int device);
  Status UnpackOnDevice(const Response& r, std::span<TensorEntry* const> entries, const char* buf,
                        int device);
  // The set's host group (GpuSetState::local_group), made at the first call; null when the set's
  // communicator is no hierarchy.
  Result<GpuGroup*> HostGroup(const Response& r, Communicator* comm, GpuSetState* state,
                              int device);
  // op_executor_nccl.cc: the NCCL path of the ops whose outputs the runtime allocates.
  Status NcclAllgather(const Response& r, std::span<TensorEntry* const> entries, GpuGroup* group,
                       Communicator* comm, int device);
  Status NcclReducescatter(const Response& r, std::span<TensorEntry* const> entries,
                           GpuGroup* group, Communicator* comm, int device, double prescale,
                           double postscale);
  Status NcclAlltoall(const Response& r, TensorEntry* entry, GpuGroup* group, Communicator* comm,
                      int device);
  // Their fused halves, after layout_ and outputs_ are made.
  Status FusedNcclAllgather(const Response& r, std::span<TensorEntry* const> entries,
                            GpuGroup* group, size_t me, int device);
  Status FusedNcclReducescatter(const Response& r, std::span<TensorEntry* const> entries,
                                GpuGroup* group, size_t me, int device, double prescale,
                                double postscale);
  // outputs_ = one device output of layout_.tensor_bytes[i] (gather) or `bytes(i)` bytes per
  // tensor; on a failure those made are given back.
  template <typename Bytes>
  Status AllocDeviceOutputs(size_t count, int device, const Bytes& bytes);
  // Attaches outputs_[i] to entries[i]'s handle as a tensor of its shape with dim 0 `rows(i)`.
  template <typename Rows>
  void AttachOutputs(std::span<TensorEntry* const> entries, int device, const Rows& rows);
  // An alltoall's send_rows_ and recv_rows_: from the response when every member splits evenly,
  // else exchanged over `comm` (the set's CPU communicator); then send_bytes_, recv_bytes_ and
  // received_, and the rows received in all. The CPU and the NCCL path share it.
  Status AlltoallRows(const Response& r, const TensorEntry& entry, Communicator* comm);
  int64_t AlltoallBytes(int64_t row_bytes, int n);
  // InvalidArgument naming the member when recv_rows_ (exchanged) holds a count no member sends.
  Status CheckReceivedRows(const Request& q, int n) const;
  // Host staging of what the set's NCCL group (if any) does not run: StagedAllreduce or Staged.
  Status RunStaged(const Response& r, std::span<TensorEntry* const> entries, Communicator* comm,
                   int device);
  Status Staged(const Response& r, std::span<TensorEntry* const> entries, Communicator* comm,
                int device);
  // `entry` is null on a joined rank, which reduces zeros in the same chunks.
  Status StagedAllreduce(const Response& r, TensorEntry* entry, Communicator* comm, int device);
  // Gives the producers' ready events of `entries` back to the GPU backend (an op that fails
  // before RunGpu waited for them).
  void ReleaseReady(std::span<TensorEntry* const> entries);
  Status Allreduce(const Response& r, std::span<TensorEntry* const> entries, Communicator* comm);
  // pieces_ = the entries' inputs and outputs with the response's counts.
  void FillPieces(const Response& r, std::span<TensorEntry* const> entries);
  // Copies pieces_' inputs into `buf` (`total` elements), prescaled; the view scatters back.
  PieceView PackPieces(const Response& r, int64_t total, char* buf);
  // op=Adasum: not elementwise; its own collective (adasum.h).
  Status Adasum(const Response& r, std::span<TensorEntry* const> entries, Communicator* comm);
  Status Broadcast(const Response& r, TensorEntry* entry, Communicator* comm);
  Status Allgather(const Response& r, TensorEntry* entry, Communicator* comm);
  Status FusedAllgather(const Response& r, std::span<TensorEntry* const> entries,
                        Communicator* comm);
  Status Alltoall(const Response& r, TensorEntry* entry, Communicator* comm);
  Status Reducescatter(const Response& r, TensorEntry* entry, Communicator* comm);
  // Several reducescatters of one dtype, op and scales as one collective: the fusion buffer
  // holds, for each rank k in turn, every tensor's part for k, so one ReduceScatter leaves this
  // rank's parts of all tensors together (Horovod's layout).
  Status FusedReducescatter(const Response& r, std::span<TensorEntry* const> entries,
                            Communicator* comm);
  // Hands the completion of `r` (enqueued on defer_group_) to that group: its handles finish
  // when the device has passed it (Execute's last step, after the timeline's End: the entries
  // may be released as soon as the handles finish).
  Status DeferCompletion(const Response& r, std::span<TensorEntry* const> entries);
  // Timeline helpers; no-ops unless recording_ (set per response by Execute).
  void ActivityStart(const Response& r, std::string_view activity);
  void ActivityEnd(const Response& r);
  void RecordEnd(const Response& r, std::span<TensorEntry* const> entries);
  std::string CommActivity(const Response& r, const Communicator* comm) const;

  FusionBuffer* buffer_;
  HandleManager* handles_;
  RuntimeTimeline* timeline_;  // null unless this is global rank 0
  GpuBackend* gpu_;
  GpuOptions gpu_options_;
  const std::atomic<int>* join_device_;
  int last_device_ = -1;  // the device of this rank's last GPU op (a joined rank has none)
  GpuGroup* defer_group_ = nullptr;  // set by the NCCL allreduce it enqueued, for Execute
  bool deferred_ = false;            // TakeDeferred
  // Shared with the completions' callbacks, which may run after the executor is gone.
  std::shared_ptr<std::atomic<int64_t>> deferred_in_flight_ =
      std::make_shared<std::atomic<int64_t>>(0);
  bool recording_ = false;
  // FusedAllgather's per-rank block bytes and unpack cursors (FusedReducescatter: each
  // tensor's packing cursor), kept so they allocate nothing but the outputs.
  std::vector<int64_t> block_bytes_, cursor_;
  // FusedReducescatter: tensor i's elements for rank k at i * n + k, and each rank's total.
  std::vector<int64_t> part_elements_, rank_elements_;
  std::vector<char*> outputs_;
  // Allgather's, Alltoall's and Reducescatter's per-rank counts (rows, bytes), kept so a
  // steady-state op allocates nothing but its output (reused, output_memory.h).
  std::vector<int64_t> send_rows_, recv_rows_, send_bytes_, recv_bytes_, eight_;
  std::vector<int32_t> received_;
  // Staged GPU ops: each entry's slice of the pinned buffer and its own pointers meanwhile.
  std::vector<int64_t> staged_offsets_, staged_bytes_;
  std::vector<std::pair<const void*, void*>> device_ptrs_;
  std::vector<int> markers_;
  // HierarchicalNcclAllreduce: each local rank's slice, elements and bytes.
  std::vector<int64_t> slice_counts_, slice_bytes_;
  // A fused allreduce's tensors, and their first elements when packed into the fusion buffer.
  std::vector<AllreducePiece> pieces_;
  AdasumScratch adasum_;
  std::vector<int64_t> piece_starts_;
  // The NCCL path's layouts (collective_plan.h) and per-rank counts.
  std::vector<int64_t> row_bytes_, dim0s_, parts_, nccl_counts_;
  RankMajorLayout layout_;
  // NCCL allreduce arguments.
  std::vector<const void*> gpu_inputs_;
  std::vector<void*> gpu_outputs_;
  std::vector<int64_t> gpu_counts_;
};

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_CORE_EXECUTION_OP_EXECUTOR_H_
