// hvd's TCP communicator allocates nothing on the heap per collective in steady state: every
// op, once warmed up with the same shape, runs in reused scratch (bench/README.md, "Heap
// allocations per op"). bench/alloc_counter.cc, linked into this binary, counts every
// malloc/new of the process; each rank is a forked, single-threaded child (tcp_job.h), so the
// count around a rank's calls is exactly what those calls allocated.
#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "runtime/data_type.h"
#include "test/multiproc/tcp_job.h"

// bench/alloc_counter.cc
uint64_t HeapAllocations();

namespace hvd::test {
namespace {

using runtime::Communicator;
using runtime::DataType;
using runtime::ReduceOp;

constexpr int kWarmUp = 3;
constexpr int kCounted = 20;

struct Op {
  const char* name;
  std::function<Status()> run;
};

// Runs each op kWarmUp times, then kCounted times under the counter; prints every op that
// allocated (or failed) and returns nonzero if any did. All ranks run the same sequence.
int CountAllocations(Communicator& comm, const std::vector<Op>& ops) {
  int failures = 0;
  for (const Op& op : ops) {
    for (int i = 0; i < kWarmUp; ++i) {
      Status st = op.run();
      if (!st.ok()) {
        std::fprintf(stderr, "rank %d: %s: %s\n", comm.rank(), op.name, st.ToString().c_str());
        return 1;
      }
    }
    bool ok = true;
    const uint64_t before = HeapAllocations();
    for (int i = 0; i < kCounted; ++i) ok = op.run().ok() && ok;
    const uint64_t allocations = HeapAllocations() - before;
    if (!ok || allocations != 0) {
      std::fprintf(stderr, "rank %d of %d: %s: %" PRIu64 " heap allocations in %d calls%s\n",
                   comm.rank(), comm.size(), op.name, allocations, kCounted,
                   ok ? "" : " (and a call failed)");
      ++failures;
    }
  }
  return failures == 0 ? 0 : 1;
}

class TcpAllocations : public ::testing::TestWithParam<int> {};

TEST_P(TcpAllocations, SteadyStateCollectivesAllocateNothing) {
  // Given N ranks that have run every collective a few times with the same shapes
  TcpJob job(TcpJobOptions(GetParam()));
  ASSERT_TRUE(job.error().empty()) << job.error();
  auto outcomes = job.Run([](Communicator& comm) {
    const int n = comm.size();
    const int64_t small = 1024, large = 256 * 1024;  // float32: 4 KiB direct, 1 MiB ring/chain
    std::vector<float> buf(large * n), out(large * n);
    std::vector<uint64_t> bits(4, ~uint64_t{0});
    const std::vector<int64_t> small_bytes(n, small * 4), large_bytes(n, large * 4);
    const std::vector<int64_t> small_counts(n, small), large_counts(n, large);
    std::string text(100, 'x');
    std::vector<std::string> gathered;
    int64_t growing = 0;  // a fused batch, say: each call larger than any before (4..92 KiB)
    const std::vector<Op> ops = {
        {"allreduce 4 KiB",
         [&] { return comm.Allreduce(buf.data(), small, DataType::kFloat32, ReduceOp::kSum); }},
        {"allreduce 1 MiB",
         [&] { return comm.Allreduce(buf.data(), large, DataType::kFloat32, ReduceOp::kSum); }},
        {"allreduce of ever larger sizes",
         [&] {
           growing += 1024;
           return comm.Allreduce(buf.data(), growing, DataType::kFloat32, ReduceOp::kSum);
         }},
        {"bitwise and", [&] { return comm.BitwiseAnd(&bits); }},
        {"bitwise or", [&] { return comm.BitwiseOr(&bits); }},
        {"allgather 4 KiB", [&] { return comm.Allgatherv(buf.data(), out.data(), small_bytes); }},
        {"allgather 1 MiB", [&] { return comm.Allgatherv(buf.data(), out.data(), large_bytes); }},
        {"broadcast 4 KiB", [&] { return comm.Broadcast(buf.data(), small * 4, 0); }},
        {"broadcast 1 MiB", [&] { return comm.Broadcast(buf.data(), large * 4, n - 1); }},
        {"alltoall 4 KiB",
         [&] { return comm.Alltoallv(buf.data(), small_bytes, out.data(), small_bytes); }},
        {"reducescatter 4 KiB",
         [&] {
           return comm.ReduceScatter(buf.data(), out.data(), small_counts, DataType::kFloat32,
                                     ReduceOp::kSum);
         }},
        {"reducescatter 1 MiB",
         [&] {
           return comm.ReduceScatter(buf.data(), out.data(), large_counts, DataType::kFloat32,
                                     ReduceOp::kMax);
         }},
        {"barrier", [&] { return comm.Barrier(); }},
        {"gather bytes", [&] { return comm.GatherBytes(text, 0, &gathered); }},
        {"broadcast bytes", [&] { return comm.BroadcastBytes(&text, 0); }},
    };
    // When each runs again under the counter, then no call allocates.
    return CountAllocations(comm, ops);
  });
  EXPECT_TRUE(job.error().empty()) << job.error() << " " << Describe(outcomes);
}

INSTANTIATE_TEST_SUITE_P(Sizes, TcpAllocations, ::testing::Values(2, 3));

}  // namespace
}  // namespace hvd::test
