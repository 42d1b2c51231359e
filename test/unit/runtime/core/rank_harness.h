#ifndef HVD_TEST_UNIT_RUNTIME_CORE_RANK_HARNESS_H_
#define HVD_TEST_UNIT_RUNTIME_CORE_RANK_HARNESS_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/core/execution/output_memory.h"  // FreeOutput for the outputs tests take
#include "runtime/core/runtime.h"
#include "test/fakes/in_process_communicator.h"

namespace hvd::testing {

// A config for thread-rank `rank` of `size` with test-friendly defaults.
runtime::RuntimeConfig TestConfig(int rank, int size);

using ConfigTweak = std::function<void(runtime::RuntimeConfig*)>;
using RankBody = std::function<void(int rank, runtime::Runtime& rt)>;

// A rank's GPU backend (a fake: test/fakes/fake_gpu.h); null: the build's own.
using GpuFactory = std::function<std::unique_ptr<runtime::GpuBackend>(int rank)>;

// Runs `body` on `size` threads, each one rank with its own Runtime on `world` (a fresh one
// when null) and, when `gpu` is given, gpu(rank) as its GPU backend: Init (must succeed), body,
// Shutdown.
void RunRanks(int size, const RankBody& body, const ConfigTweak& tweak = nullptr,
              InProcessWorld* world = nullptr,
              const std::vector<std::vector<int32_t>>& process_sets = {},
              const GpuFactory& gpu = nullptr);

// Waits up to `seconds` and returns the handle's status; releases it unless keep.
Status WaitAndRelease(runtime::Runtime& rt, int64_t handle, double seconds = 30);

runtime::TensorSpec Spec(void* data, runtime::DataType dtype, std::vector<int64_t> shape);
// Element i of a buffer of `dtype`, as a double (16-bit floats through float), and the same
// element set from a double (bool: v != 0; 16-bit floats rounded to nearest even).
double At(const void* buf, runtime::DataType dtype, int64_t i);
void Set(void* buf, runtime::DataType dtype, int64_t i, double v);

// One tensor of an allgather batch: rank r contributes rows(r) rows of `cols` elements.
struct GatherCase {
  std::string name;
  runtime::DataType dtype = runtime::DataType::kFloat32;  // float32/64 or int32/64
  int64_t cols = 1;
  std::function<int64_t(int rank)> rows;
};

// Enqueues every case at once (a handle each, or one grouped handle named cases[0].name when
// `grouped`), waits, and checks each output's shape and values (element i of rank r's part of
// case t is r * 1000 + t * 16 + i, so i < 16) with gtest expectations.
void AllgatherAndCheck(runtime::Runtime& rt, int rank, int size,
                       const std::vector<GatherCase>& cases, bool grouped = false);

}  // namespace hvd::testing

#endif  // HVD_TEST_UNIT_RUNTIME_CORE_RANK_HARNESS_H_
