// Shared pieces of hvd_gpu_worker: the check helpers, tensors in CUDA device memory and the
// scenarios' declarations. The C API (hvd/c_api.h) and the CUDA runtime API only.
//
// Device memory is touched from the host only through cudaMemcpy and cudaMemset: the CUDA
// emulator the CI runs this on maps device memory PROT_NONE, so a host access (here or in
// libhvd) crashes instead of passing by accident. Every check names the scenario, the rank and
// what differed; a failed call or a wait past its deadline ends the process at once, a wrong
// value is counted and the scenario goes on. Single-threaded.
#ifndef HVD_TEST_GPU_E2E_GPU_WORKER_H_
#define HVD_TEST_GPU_E2E_GPU_WORKER_H_

#include <cuda_runtime_api.h>
#include <hvd/c_api.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "worker_values.h"

namespace hvd_gpu {

// Seconds any single wait may take before the worker gives up (no test may hang).
constexpr double kWaitSeconds = 60.0;
// Every byte of a fresh device tensor: as float16, bfloat16, float32 or an integer type a value
// no scenario expects, so an element the runtime never wrote shows up as a difference.
constexpr int kSentinelByte = 0xA5;

using hvd_worker::DType;
const DType& DTypeOf(hvd_dtype_t id);

// The scenario now running and this process's place in the job; set by main.
struct Context {
  std::string scenario;
  int32_t rank = 0;
  int32_t size = 1;
  int32_t local_rank = 0;
  int32_t local_size = 1;
  int device = 0;        // this rank's CUDA device (local_rank % device count)
  int device_count = 0;  // cudaGetDeviceCount
  // No two ranks on one GPU of one host (the host as NCCL tells it: NCCL_HOSTID, else the host
  // name): unless a knob stages GPU ops (DeviceOutputsExpected), the process sets run on NCCL,
  // so runtime-allocated outputs must be device memory (c_api.h; docs/gpu.md "Which path").
  bool own_gpus = false;
  int32_t even_set = -1;  // the process set of the even ranks, registered at init (-1: none)
  int failures = 0;
};
Context& Ctx();
inline int32_t N() { return Ctx().size; }
inline int32_t R() { return Ctx().rank; }

// Records a difference: "[scenario] rank R: what".
void Fail(const std::string& what);
// Ends the process (exit 1) with the status and hvd_last_error().
[[noreturn]] void Die(const std::string& what, hvd_status_t status);
void Require(hvd_status_t status, const std::string& what);
// Ends the process (exit 1) with CUDA's name and message of `err`.
[[noreturn]] void DieCuda(const std::string& what, cudaError_t err);
void RequireCuda(cudaError_t err, const std::string& what);
// Waits (kWaitSeconds) and dies unless the handle completed with HVD_OK; does not release.
void WaitOk(hvd_handle_t handle, const std::string& what);
void WaitRelease(hvd_handle_t handle, const std::string& what);
// Options with the defaults and the given name (kept alive until the process ends).
hvd_op_options_t Options(const std::string& name);

std::string Shape(const std::vector<int64_t>& shape);
using hvd_worker::List;
std::string Num(double v);
int64_t Elements(const std::vector<int64_t>& shape);
bool PowerOfTwo(int64_t n);

// A dense host tensor owning its bytes; elements are read and written as doubles (exact for the
// small values the scenarios use). The host side of every device tensor: values are built here,
// copied in with cudaMemcpy, and results copied back here to be compared.
class HostTensor {
 public:
  HostTensor(hvd_dtype_t dtype, std::vector<int64_t> shape);
  int64_t count() const { return Elements(shape_); }
  size_t nbytes() const { return static_cast<size_t>(count()) * DTypeOf(dtype_).size; }
  void Set(int64_t i, double v);
  double Get(int64_t i) const;
  unsigned char* data() { return bytes_.data(); }
  const unsigned char* data() const { return bytes_.data(); }
  hvd_dtype_t dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }

 private:
  hvd_dtype_t dtype_;
  std::vector<int64_t> shape_;
  std::vector<unsigned char> bytes_;
};

// A tensor in memory of Ctx().device (cudaMalloc), every byte kSentinelByte until written;
// an empty one has no memory (data NULL, which the C API accepts for zero elements).
class DeviceTensor {
 public:
  DeviceTensor(hvd_dtype_t dtype, std::vector<int64_t> shape);
  ~DeviceTensor();
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;

  void Upload(const HostTensor& host);
  HostTensor Download() const;
  hvd_tensor_t Desc() const;
  int64_t count() const { return Elements(shape_); }
  size_t nbytes() const { return static_cast<size_t>(count()) * DTypeOf(dtype_).size; }
  hvd_dtype_t dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }

 private:
  hvd_dtype_t dtype_;
  std::vector<int64_t> shape_;
  int device_;
  void* data_ = nullptr;
};
using DevicePtr = std::shared_ptr<DeviceTensor>;

// A device tensor holding value(i) at element i.
DevicePtr MakeDevice(hvd_dtype_t dtype, std::vector<int64_t> shape,
                     const std::function<double(int64_t)>& value);
// A host tensor holding value(i) at element i.
HostTensor MakeHost(hvd_dtype_t dtype, std::vector<int64_t> shape,
                    const std::function<double(int64_t)>& value);

// Compares every element with `want`: bit-exact where `exact` (integers always; floats where
// the inputs and the arithmetic are exact), else within the dtype's rounding.
void ExpectValues(const std::string& what, const HostTensor& got, const std::vector<double>& want,
                  bool exact = true);
// ExpectValues of a device tensor (copied back first).
void ExpectDevice(const std::string& what, const DeviceTensor& got, const std::vector<double>& want,
                  bool exact = true);

// Takes runtime-allocated output `index` of a completed handle: checks its dtype and shape, that
// its `device` is this rank's device (or, unless `on_device`, HVD_DEVICE_CPU: a staged op) and
// that cudaPointerGetAttributes agrees with it, copies it back, compares the values and frees
// it as c_api.h says (device outputs alternately with hvd_free and hvd_free_on_stream).
void ExpectOutput(hvd_handle_t handle, int32_t index, const std::string& what, hvd_dtype_t dtype,
                  const std::vector<int64_t>& shape, const std::vector<double>& want,
                  bool on_device, bool exact = true);

// Whether the runtime-allocated outputs of `op` (ALLGATHER, ALLTOALL, REDUCESCATTER) must be
// device memory: every rank has a GPU of its own and neither HVD_GPU_OPERATIONS (or Horovod's
// names) nor the op's own knob stages it (docs/gpu.md).
bool DeviceOutputsExpected(const char* op);
// Whether the set's NCCL communicator can run this reduction (docs/gpu.md, "staged": not
// int16/uint16/bool, not a scaled integer or Min/Max/Product one, not a scaled one at one rank).
bool NcclReduces(const DType& d, hvd_reduce_op_t op, double prescale, double postscale,
                 int32_t members);
// Whether hvd scales in its own kernel on NCCL: the build has it and no emulated device lacks
// its machine code (HVD_GPU_EMU_NO_KERNEL_IMAGE: one member without it puts the whole set on
// NCCL's pre-multiplied sum; the scenarios run with it have no one-member sets).
bool ScaleKernel();

// An op in flight plus the check to run once it completed; `keep` holds the buffers alive.
struct Pending {
  hvd_handle_t handle = 0;
  std::string what;
  std::function<void(hvd_handle_t)> check;
  std::vector<DevicePtr> keep;
};
// Waits for every op (in order), runs its check, releases it.
void FinishAll(std::vector<Pending>* pending);

// The reductions' inputs and expected results (worker_values.h, as hvd_e2e_worker's).
using hvd_worker::ReduceExpected;
using hvd_worker::ReduceFits;
using hvd_worker::ReduceInput;
using hvd_worker::ReduceOpName;
// Whether a float reduction is exact: the scale factors are powers of two and Average divides
// by a power of two. Integer results are always compared exactly.
bool ReductionExact(const DType& d, hvd_reduce_op_t op, double prescale, double postscale,
                    int32_t members);

// A Sum allreduce of a float32 [4] device tensor filled with `mine` on `set`; must give `want`.
void DeviceSumAllreduce(const std::string& name, double mine, double want, int32_t set = 0);
// A barrier on the global set (before hvd_shutdown: one rank's shutdown fails the others' ops).
void GlobalBarrier(const std::string& what);

// gpu_scenarios.cc
void Allreduce();             // 8 dtypes x 5 ops x counts 0/1/7/17^3, scaled, in/out of place
void AllreduceStagedTypes();  // int16, uint16, bool, scaled int32: staged through the host
void Fused();                 // several allreduces enqueued before any wait, twice
void Grouped();               // grouped allreduce, allgather and reducescatter
void Allgather();             // uneven and equal first dimensions
void Broadcast();             // from every root, in place
void Alltoall();              // uneven splits (zero rows included) and equal ones
void Reducescatter();         // even and uneven rows, Sum/Average, scaled
void HorovodScaling();
void HierarchicalAverage();  // Horovod's scaled results bit for bit at up to 3 ranks
// Allreduces (float32 Sum in place, float16 Average out of place) on process set `set`, this
// rank at position `pos` of its `n` members; an allgather there (member r gives r % 3 + 1 rows).
void EnqueueSetAllreduce(std::vector<Pending>* pending, int32_t set, int32_t pos, int32_t n);
void EnqueueSetAllgather(std::vector<Pending>* pending, int32_t set,
                         const std::vector<int32_t>& members);
// hvd_gpu_worker.cc
void ProcessSet();  // allreduce + allgather in the set of the even ranks
void Join();        // rank 0 joined with its device: it contributes zeros
void BadDevice();   // host memory as CUDA memory is refused at the call; mixed groups too
// fault_scenarios.cc
void Adasum();  // orthogonal and equal updates; host-averaged where Horovod's GPU Adasum runs
// Allreduces of 20 and 6 MiB (the staged path's chunks), an allgather and a reducescatter of MiB.
void Large();
// Inputs written asynchronously on a stream of the caller's, given as the op's cuda_stream.
void StreamOrder();
// lifecycle_scenarios.cc: shutdown and init again three times (outputs freed after the
// shutdown, an op pending at it aborted), process sets added, removed and added again. Runs
// last: the sets registered at the first init are gone after it.
void Lifecycle();
// Sets {0,1}, {1,2}, {0,2} (3 ranks or more) whose ops each rank enqueues in its own order,
// and global ones, all waited for at the end. Re-initializes with dynamic process sets.
void OverlappingSets();
// The last rank dies after one op of `kind` (inside the next one's NCCL collective where
// `in_nccl`); rank 0's next ones must fail within 10 s. Kinds: the five collectives, and
// "staged_behind" (a staged int16 allreduce queued behind the NCCL one on hvd's stream).
void KillPeer(const std::string& kind, bool in_nccl);
// The last rank dies inside a fused NCCL allreduce; once rank 0's op failed, hvd writes nothing
// more into its outputs.
void LateWrite();
// One rank, staged: hvd_abort while the copies are queued; nothing lands after the failure.
void AbortStaged();
// Under hvdrun --elastic: the last rank dies inside a NCCL collective; the others re-form.
void Elastic();
// One rank: a failing CUDA or NCCL call fails its op, naming it, leaving no CUDA error pending;
// after shutdown and init the op works.
void CudaErrors();
void DeferFailures();
void KeepsTheCallersDevice();
void SecondGpu();
void JoinedOnTheSetsDevice();
void JoinedFirstOnItsDevice();

}  // namespace hvd_gpu

#endif  // HVD_TEST_GPU_E2E_GPU_WORKER_H_
