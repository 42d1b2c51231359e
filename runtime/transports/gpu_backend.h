#ifndef HVD_RUNTIME_TRANSPORTS_GPU_BACKEND_H_
#define HVD_RUNTIME_TRANSPORTS_GPU_BACKEND_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "common/status.h"
#include "runtime/transports/communicator.h"
#include "runtime/transports/data_type.h"

namespace hvd::runtime {

// GpuGroup: one process set's GPU collectives on this rank (an NCCL communicator over the
// set's members, each on its own device). Made by GpuBackend::CreateGroup when every member of
// the set has a GPU of its own; otherwise the runtime stages GPU tensors through host memory
// and the set's CPU Communicator (op_executor_gpu.cc). Called by the thread running the cycle
// (the background thread or a waiting caller, one at a time), except Abort.
//
// Every call is collective over the set, like Communicator's, and returns once the device
// finished the work (Allreduce, Broadcast, Finish) or once NCCL has enqueued it (the calls
// before Finish): a peer that never joins, a NCCL error or the runtime's timeout abort the NCCL
// communicator (ncclCommAbort) and return a non-OK Status with NCCL's message; the group is
// unusable afterwards (the runtime then fails the set like any communicator failure).
class GpuGroup {
 public:
  virtual ~GpuGroup() = default;
  virtual const char* name() const = 0;  // "NCCL": the timeline's activity prefix
  // Can Allreduce and ReduceScatter take this op? `scaled`: the op has a prescale or postscale
  // factor other than 1 (NCCL: Sum/Min/Max/Product unscaled; scaled only a floating-point Sum,
  // NcclReduces). Otherwise the op is staged.
  virtual bool CanReduce(DataType dtype, ReduceOp op, bool scaled) const = 0;
  // Allreduce of tensors[i] (counts[i] elements, device memory) into outputs[i] (may alias),
  // as Horovod's GPU path scales: each member's input multiplied by `prescale` before the sum,
  // the sum by `postscale` after it (NcclGroup's ScalePlan); several tensors are fused through a
  // device buffer. The inputs are never written (unless an output aliases its input).
  virtual Status Allreduce(std::span<const void* const> inputs, std::span<void* const> outputs,
                           std::span<const int64_t> counts, DataType dtype, ReduceOp op,
                           double prescale, double postscale) = 0;
  // Broadcast of `bytes` from set rank `root`'s `input` into every member's `output`.
  virtual Status Broadcast(const void* input, void* output, int64_t bytes, int root) = 0;

  // Allgatherv, ReduceScatter and Alltoallv only enqueue their collective on the backend's stream
  // of the group's device (the stream of GpuBackend::CopyOnDevice) and return once NCCL has taken
  // it (bounded and abortable as Allreduce's calls). Finish then waits for everything enqueued on
  // that stream -- the collectives and the copies issued around them -- bounded and abortable
  // as Allreduce. A failure of either aborts the communicator. The per-member sizes come from the
  // negotiated response: the same lists on every member. `input` and `output` never overlap.
  //
  // Member k contributes bytes_per_rank[k] bytes (`input` holds this member's); `output`
  // receives the concatenation in set-rank order. Bytes: any dtype.
  virtual Status Allgatherv(const void* input, void* output,
                            std::span<const int64_t> bytes_per_rank) = 0;
  // Reduces `input` (the sum of counts_per_rank elements of `dtype`) over the members with `op`,
  // scaled as Allreduce (CanReduce(dtype, op, scaled) holds); member k receives its
  // counts_per_rank[k] elements in `output`.
  virtual Status ReduceScatter(const void* input, void* output,
                               std::span<const int64_t> counts_per_rank, DataType dtype,
                               ReduceOp op, double prescale, double postscale) = 0;
  // send_bytes[k] bytes of `input`, taken consecutively, go to member k; recv_bytes[k] bytes from
  // member k land consecutively in `output` (this member's own piece too).
  virtual Status Alltoallv(const void* input, std::span<const int64_t> send_bytes, void* output,
                           std::span<const int64_t> recv_bytes) = 0;
  // `what` names the op in its errors ("allgather").
  virtual Status Finish(const char* what) = 0;
  // Thread-safe: a call in flight (or the next one) fails promptly with kAborted.
  virtual void Abort() = 0;
  // Any thread, once the runtime failed: aborts the communicator now, so that a call of it the
  // device is still in (waiting for a dead peer, say) returns and the work queued behind it on
  // the stream can run (GpuBackend::Quiesce); the group is unusable from then on. `why`, the
  // runtime's failure, is what the group's calls and completions in flight fail with.
  virtual void Break(const Status& why) = 0;

  // Completion off the cycle (HVD_GPU_ASYNC_COMPLETION=1; Horovod's finalizer threads).
  //
  // EnqueueAllreduce is Allreduce without its wait: it returns once the work is enqueued on the
  // group's stream, as Allgatherv does. Defer then hands the completion of everything enqueued
  // so far to the group: `done(status)` is called exactly once, on a thread of the group's, when
  // the device has passed that point (OK) or the group failed (its error: a NCCL error, the
  // backend's timeout, Abort, FailDeferred), in the order of the Defer calls. A non-OK return
  // means nothing was deferred (`done` is never called) and the group is unusable, as a failed
  // call. The work enqueued later on the stream is ordered behind, so the cycle goes on to the
  // next op at once.
  using DeferredDone = std::function<void(const Status&)>;
  virtual Status EnqueueAllreduce(std::span<const void* const> inputs,
                                  std::span<void* const> outputs, std::span<const int64_t> counts,
                                  DataType dtype, ReduceOp op, double prescale,
                                  double postscale) = 0;
  virtual Status Defer(const char* what, DeferredDone done) = 0;
  // Any thread: every completion deferred and not yet done fails with `status` (the runtime's
  // failure: a peer that exited, a shutdown), and so does every later one; the next call on the
  // group fails too. The runtime calls it when it fails the set's other work.
  virtual void FailDeferred(const Status& status) = 0;
  // Cycle thread: waits until every completion deferred so far is done (its `done` called),
  // bounded and abortable as Finish (a member gone, the timeout, Abort). Before a shutdown every
  // member agreed on: the ops deferred in earlier cycles were enqueued by every member, and a
  // peer that shut down first has its part done, so failing them (FailDeferred) would fail ops
  // the waiting cycle completes. A failure of the wait fails what is left with its error, as
  // FailDeferred, and is returned.
  virtual Status Drain() = 0;
};

// Gives back a device output (GpuBackend::AllocDeviceOutput) and returns true, or returns false
// when `data` is not one. The free is ordered after the work queued before the call on `stream`
// (a CUDA stream of the output's device; null: its legacy default stream) when
// `on_caller_stream`, else after the work queued on the stream that allocated it (the runtime's:
// an output the framework never took). A plain function, valid for the life of the process.
using DeviceOutputFree = bool (*)(void* data, bool on_caller_stream, void* stream);

// What NCCL reduces (NcclGroup::CanReduce; pure, so the tests' fake group answers alike):
// uint8, int8, int32, int64 and the float types (not int16, uint16, bool) with Sum, Min, Max or
// Product; scaled, only a floating-point Sum (NCCL has no integer scaling of Horovod's kind: the
// host scales those), and on a one-member group only with hvd's scaling kernel
// (`scale_kernel`: NCCL 2.28.9's one-rank pre-multiplied sum left the last element of a
// 17x17x17 float32 tensor unwritten, so without the kernel such a set is staged).
bool NcclReduces(DataType dtype, ReduceOp op, bool scaled, int members, bool scale_kernel);

// GpuBackend: the runtime's access to CUDA devices, behind an interface so that runtime/core
// builds and runs without CUDA (CreateGpuBackend() is null in a build without CUDA/NCCL).
// Creating it touches no device: CUDA is initialised by the first GPU tensor.
class GpuBackend {
 public:
  virtual ~GpuBackend() = default;

  // Any thread: OK when `data` is memory of CUDA device `device` (InvalidArgument naming the
  // address and where it is otherwise).
  virtual Status CheckMemory(int device, const void* data) = 0;
  // Framework thread, at enqueue: CheckMemory(device, data) unless `data` is null, then records
  // an event on `stream` (the producer's stream; null = the legacy default stream) after the
  // work that writes the tensor. Returns the event, which the cycle thread waits for
  // (WaitReady) before it touches the tensor: the framework's stream order is kept without a
  // device-wide synchronize. The event is the backend's.
  virtual Result<void*> MarkReady(int device, const void* data, void* stream) = 0;
  // Cycle thread (the one running the cycle). Makes the backend's stream of `device` wait for
  // `event` (MarkReady) and gives the event back to the backend's pool. Null events are ignored.
  virtual Status WaitReady(int device, void* event) = 0;
  // Returns an event that will not be waited for (its op failed before it ran). Any thread.
  virtual void ReleaseEvent(void* event) = 0;

  // Cycle thread. Asynchronous copies on the backend's stream of `device`; `host` must
  // be memory from HostBuffer for the copy to overlap. Sync waits for every copy issued.
  virtual Status CopyToHost(void* host, const void* device_data, int64_t bytes, int device) = 0;
  virtual Status CopyToDevice(void* device_data, const void* host, int64_t bytes, int device) = 0;
  // A marker after the copies issued so far on `device`'s stream; WaitMarker blocks until the
  // device passed it. Markers are numbered from 1 per Sync; at most kMaxMarkers between Syncs.
  static constexpr int kMaxMarkers = 64;
  virtual Result<int> Marker(int device) = 0;
  virtual Status WaitMarker(int device, int marker) = 0;
  virtual Status Sync(int device) = 0;
  // Cycle thread, after a failed op: waits until the device has run everything queued so far on
  // the backend's stream of `device`, bounded by the timeout but not ended by Abort, so that no
  // copy or kernel of the op writes its tensors once its handle has failed (the caller then
  // owns them again: a framework's allocator hands their memory to the next tensor). The op's
  // NCCL groups must be broken first (GpuGroup::Break), or a call waiting for a dead peer holds
  // the stream until the timeout.
  virtual Status Quiesce(int device) = 0;
  // Pinned host staging memory, slot `slot` (0..3), at least `bytes`; kept and grown.
  virtual Result<void*> HostBuffer(int slot, int64_t bytes) = 0;
  // Cycle thread. An asynchronous copy within `device`'s memory on the backend's stream (the
  // packing of fused NCCL ops); `from` null: `to` is zeroed (a joined rank's share).
  virtual Status CopyOnDevice(void* to, const void* from, int64_t bytes, int device) = 0;
  // Cycle thread. At least `bytes` of `device`'s memory for the packed blocks of fused NCCL ops,
  // kept and grown; valid until the next call (a grown buffer's old memory is freed in the
  // order of the backend's stream, after the work already queued that uses it).
  virtual Result<void*> DeviceScratch(int device, int64_t bytes) = 0;
  // Cycle thread. `bytes` (0 allowed; never null) of `device`'s memory for an output the runtime
  // allocates (allgather, alltoall, reducescatter on NCCL), stream-ordered: usable by the work
  // queued on the backend's stream after the call, no device synchronize. Given back through
  // device_output_free() (output_memory.h FreeOutputOn, hvd_free).
  virtual Result<void*> AllocDeviceOutput(int device, int64_t bytes) = 0;
  // The function that gives this backend's device outputs back; null when it hands out none. It
  // must outlive the backend: outputs outlive the runtime (hvd.torch frees a tensor's memory when
  // the tensor dies, perhaps after hvd.shutdown()).
  virtual DeviceOutputFree device_output_free() const = 0;

  // Collective over `cpu`'s members (all call it for the same set at the same point): decides
  // whether the set's GPU ops run on NCCL and if so bootstraps its communicator, the
  // ncclUniqueId travelling over `cpu` (hvd's authenticated channels). `mode` is
  // HVD_GPU_OPERATIONS: "auto" (NCCL when every member has a GPU of its own), "nccl" (an error
  // naming the shared GPU otherwise) or "cpu" (never). Null result: stage through the host.
  virtual Result<std::unique_ptr<GpuGroup>> CreateGroup(Communicator* cpu, int device,
                                                        const std::string& mode) = 0;
  // Any thread: the calling thread's current CUDA device (-1 when it cannot be read), and
  // setting it back to what CurrentDevice returned. A GPU response runs on whichever thread
  // runs the cycle (a waiting caller may, Runtime::Wait); RunGpu leaves that thread's current
  // device as it found it.
  virtual int CurrentDevice() = 0;
  virtual void RestoreDevice(int device) = 0;
  // Thread-safe: every group's call in flight fails with kAborted, until the next Start.
  virtual void Abort() = 0;
  // Once the runtime failed: breaks every group this backend made (GpuGroup::Break), those of
  // other process sets too, so that a collective of any set the device is still in (a peer gone
  // in it) returns and the stream a failed op's Quiesce waits for can drain.
  virtual void BreakGroups(const Status& why) { (void)why; }
  // At every runtime init: clears an earlier Abort; `timeout` bounds each NCCL call. `host_id`
  // names this rank's machine in CreateGroup's decision (RuntimeConfig::gpu_host_id, NCCL_HOSTID;
  // empty: the kernel's host name). `output_cache_bytes` (HVD_OUTPUT_CACHE_BYTES): the most bytes
  // of given-back device outputs kept for reuse.
  virtual void Start(std::chrono::milliseconds timeout, const std::string& host_id,
                     int64_t output_cache_bytes) = 0;
};

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_GPU_BACKEND_H_
