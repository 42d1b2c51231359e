#ifndef HVD_RUNTIME_CORE_EXECUTION_OUTPUT_MEMORY_H_
#define HVD_RUNTIME_CORE_EXECUTION_OUTPUT_MEMORY_H_

#include <cstdint>

// Memory of the outputs the runtime allocates (allgather, alltoall, reducescatter: their size
// depends on the other ranks), handed to the caller by hvd_output and given back with
// hvd_free, from any thread, at any time later (hvd.torch frees when the last view of the
// tensor dies).
//
// Why not plain malloc: glibc serves a block of 128 KiB or more (up to 32 MiB once its
// threshold has adapted, always above) with a fresh mmap and unmaps it on free, so every such
// output page-faults all its pages again: on the 2-vCPU VM a 64 MiB allgather at 2 ranks
// took 58-72 ms against 10-11 ms with the blocks reused, a 64 MiB reducescatter 60-65 against
// 14 ms (docs/runtime.md "Outputs", 2026-11-24). Blocks of kMinCachedBytes or more given
// back are kept (a bounded cache, most recent first) and handed out again for an output of
// the same size class (sizes rounded up to a quarter of their power of two, so outputs that
// vary a little, such as allgathers of changing row counts, still meet).
namespace hvd::runtime {

// At least `bytes` bytes (1 for 0), 64-byte aligned; never null (throws std::bad_alloc on
// exhaustion, as operator new does).
void* AllocOutput(int64_t bytes);
// Gives back a block from AllocOutput (null: nothing), or a device output (below) no framework
// took, freed in the order of the stream that allocated it (the runtime's). Thread-safe.
void FreeOutput(void* data);

// Device outputs (GPU ops on NCCL) are GPU backends' memory, not AllocOutput's. A runtime whose
// backend hands them out installs the backend's GpuBackend::device_output_free() here (a plain
// function, valid for the life of the process; at most kMaxDeviceOutputFrees distinct ones,
// kept for ever); FreeOutput and FreeOutputOn ask them first whether `data` is theirs.
constexpr int kMaxDeviceOutputFrees = 4;
void AddDeviceOutputFree(bool (*free)(void* data, bool on_caller_stream, void* stream));
// hvd_free_on_stream: FreeOutput, except that a device output's free is ordered after the work
// queued on `stream` (a CUDA stream of its device, the framework's; null: its legacy default
// stream) before the call. Thread-safe.
void FreeOutputOn(void* data, void* stream);
// The most bytes of given-back blocks kept for reuse (HVD_OUTPUT_CACHE_BYTES); 0 keeps none.
// Lowering it frees what no longer fits.
void SetOutputCacheBytes(int64_t bytes);
// Frees every kept block (hvd_shutdown: an idle process holds nothing).
void ReleaseCachedOutputs();
// Blocks currently kept and their bytes, and how many AllocOutput calls were served from
// them since the process started (tests).
struct OutputCacheStats {
  int64_t blocks = 0;
  int64_t bytes = 0;
  int64_t reused = 0;
};
OutputCacheStats GetOutputCacheStats();

constexpr int64_t kMinCachedBytes = int64_t{4} << 10;
constexpr int64_t kDefaultOutputCacheBytes = int64_t{128} << 20;

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_CORE_EXECUTION_OUTPUT_MEMORY_H_
