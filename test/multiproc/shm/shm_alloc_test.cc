// Heap allocations of the shared-memory communicator in steady state, with real forked
// processes. This binary links bench/alloc_counter.cc, which counts every malloc/new of the
// process; each forked rank is single-threaded, so the counter sees the communicator's calls
// alone. After warm-up calls (which may size reusable scratch and the caller's output strings),
// a valid call of every op must allocate nothing: BitwiseAnd/BitwiseOr and an allreduce run in
// every cycle of the runtime, the other ops once per tensor.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/transports/data_type.h"
#include "test/multiproc/alloc_check.h"
#include "test/multiproc/shm/shm_job.h"

namespace hvd::test {
namespace {

using runtime::Communicator;
using runtime::DataType;
using runtime::ReduceOp;

// Every op on fixed buffers: `small` elements for the one-round allreduce and `large` (more
// than a staging half when the job's buffer is small) for the chunked paths.
std::vector<CountedOp> EveryOp(Communicator& comm, int64_t small, int64_t large) {
  const int n = comm.size(), me = comm.rank();
  auto f_small = std::make_shared<std::vector<float>>(small, 1.0f);
  auto f_large = std::make_shared<std::vector<float>>(large, 1.0f);
  auto bits = std::make_shared<std::vector<uint64_t>>(3, ~uint64_t{0});
  auto per_rank = std::make_shared<std::vector<int64_t>>(n, large / n);
  auto gathered = std::make_shared<std::vector<float>>(large / n * n);
  auto scattered = std::make_shared<std::vector<float>>(large / n);
  auto strings = std::make_shared<std::vector<std::string>>();
  auto text = std::make_shared<std::string>(200, static_cast<char>('a' + me));
  auto bytes_per_rank = std::make_shared<std::vector<int64_t>>(n, large / n * 4);
  auto pieces = std::make_shared<std::vector<int64_t>>(n, 4096);
  auto sent = std::make_shared<std::vector<char>>(4096 * n, 'x');
  auto got = std::make_shared<std::vector<char>>(4096 * n);
  return {
      {"allreduce (one round)",
       [=, &comm] {
         return comm.Allreduce(f_small->data(), small, DataType::kFloat32, ReduceOp::kSum);
       }},
      {"allreduce (chunked)",
       [=, &comm] {
         return comm.Allreduce(f_large->data(), large, DataType::kFloat32, ReduceOp::kMax);
       }},
      {"bitwise and", [=, &comm] { return comm.BitwiseAnd(bits.get()); }},
      {"bitwise or", [=, &comm] { return comm.BitwiseOr(bits.get()); }},
      {"barrier", [&comm] { return comm.Barrier(); }},
      {"broadcast", [=, &comm] { return comm.Broadcast(f_large->data(), large * 4, n - 1); }},
      {"allgatherv",
       [=, &comm] { return comm.Allgatherv(f_large->data(), gathered->data(), *bytes_per_rank); }},
      {"alltoallv",
       [=, &comm] { return comm.Alltoallv(sent->data(), *pieces, got->data(), *pieces); }},
      {"reducescatter",
       [=, &comm] {
         return comm.ReduceScatter(gathered->data(), scattered->data(), *per_rank,
                                   DataType::kFloat32, ReduceOp::kSum);
       }},
      {"gather bytes", [=, &comm] { return comm.GatherBytes(*text, 0, strings.get()); }},
      {"broadcast bytes",
       [=, &comm] {
         if (me != 0) text->assign(3, 'z');  // the root's 200 bytes overwrite it
         return comm.BroadcastBytes(text.get(), 0);
       }},
  };
}

// (ranks, staging bytes per rank): with 64 KiB the large buffers take many chunks.
class ShmAllocTest : public ::testing::TestWithParam<std::tuple<int, size_t>> {};

// Given a shared-memory communicator past its first calls, when every op runs again with the
// same arguments, then no member allocates on the heap.
TEST_P(ShmAllocTest, SteadyStateOpsDoNotAllocate) {
  ShmJob::Options options;
  options.size = std::get<0>(GetParam());
  options.buffer_bytes = std::get<1>(GetParam());
  options.deadline = std::chrono::seconds(60);
  options.child_alarm = 90;
  ShmJob job(options);
  ASSERT_TRUE(job.error().empty()) << job.error();
  auto outcomes = job.Run(
      [](Communicator& comm) { return CountAllocations(comm, EveryOp(comm, 1024, 300000)); });
  ASSERT_TRUE(job.error().empty()) << job.error() << "; " << Describe(outcomes);
  for (const auto& out : outcomes) {
    EXPECT_TRUE(out.exited && out.exit_code == 0)
        << "a member allocated in steady state (its stderr names the op); " << Describe(outcomes);
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, ShmAllocTest,
                         ::testing::Values(std::make_tuple(2, size_t{64} << 10),
                                           std::make_tuple(2, size_t{4} << 20),
                                           std::make_tuple(3, size_t{64} << 10)));

}  // namespace
}  // namespace hvd::test
