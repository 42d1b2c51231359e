#ifndef HVD_TEST_UNIT_RUNTIME_CORE_GPU_OP_HARNESS_H_
#define HVD_TEST_UNIT_RUNTIME_CORE_GPU_OP_HARNESS_H_

#include <memory>
#include <string>
#include <vector>

#include "test/fakes/fake_gpu.h"
#include "test/unit/runtime/core/rank_harness.h"

// Rank-thread tests of the GPU path with fake GPUs (test/fakes/fake_gpu.h): ops run once on CPU
// tensors (the reference) and once on "CUDA" tensors of device 0, whose outputs are compared.
namespace hvd::testing {

constexpr int kRanks = 3;  // every split of the tests is uneven at 3

extern const runtime::DataType kAllTypes[11];

bool IsFloat(runtime::DataType t);

// One input tensor of a rank.
struct Tensor {
  runtime::DataType dtype;
  std::vector<int64_t> shape;
  std::vector<char> data;
};

// Element i of `buf` as a double, and set to `v`.
// Values 1..5 (a product over 3 ranks fits int8), different per rank, element and `salt`.
Tensor Make(runtime::DataType t, std::vector<int64_t> shape, int rank, int salt = 0);

enum class Op { kAllgather, kReducescatter, kAlltoall };

// What an op gave one rank: each output's shape, device and bytes, alltoall's received splits.
struct Outcome {
  Status status;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<int32_t> devices;
  std::vector<std::vector<char>> bytes;
  std::vector<int32_t> splits;
};

// Runs `op` of `inputs` (one grouped op when several) on `device` (-1: the CPU path), its name
// prefixed with "cpu." or "gpu.", and takes every output: a device output is given back as
// hvd_free_on_stream gives it (the caller's stream), a host output as hvd_free.
Outcome RunOp(runtime::Runtime& rt, Op op, std::vector<Tensor>& inputs, runtime::OpOptions o,
              int device);

// The GPU outcome equals the CPU one: the same shapes and values (within rounding when
// `rounding`: NCCL's pre-multiplied sum scales before it sums, an Average of floats), on
// `device` (0, a device output; -1 where the op was staged) instead of the host.
void ExpectSame(const Outcome& gpu, const Outcome& cpu, runtime::DataType t, bool rounding,
                const std::string& what, int device = 0);

std::vector<std::shared_ptr<FakeGpuLog>> Logs();

// Runs `body` on kRanks thread ranks whose GPU backend is a FakeGpu (`nccl`: each rank "has a
// GPU of its own"; failing its `fail_call`th group call when not 0), logging into logs[rank];
// afterwards no fake device output is left and no group call broke the Finish contract.
void RunWithFakeGpus(const RankBody& body, const std::vector<std::shared_ptr<FakeGpuLog>>& logs,
                     bool nccl = true, const std::vector<std::vector<int32_t>>& sets = {},
                     const ConfigTweak& tweak = nullptr, int fail_call = 0);

}  // namespace hvd::testing

#endif  // HVD_TEST_UNIT_RUNTIME_CORE_GPU_OP_HARNESS_H_
