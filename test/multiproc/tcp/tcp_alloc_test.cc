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

#include "runtime/transports/data_type.h"
#include "test/multiproc/alloc_check.h"
#include "test/multiproc/tcp/tcp_job.h"

namespace hvd::test {
namespace {

using runtime::Communicator;
using runtime::DataType;
using runtime::ReduceOp;

class TcpAllocations : public ::testing::TestWithParam<int> {};

TEST_P(TcpAllocations, SteadyStateCollectivesAllocateNothing) {
  // Given N ranks that have run every collective a few times with the same shapes
  // (4 ranks: the allreduces that would take recursive doubling take halving-doubling.)
  TcpJob::Options options = TcpJobOptions(GetParam());
  if (GetParam() == 4) options.halving_bytes = 0;
  TcpJob job(options);
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
    const std::vector<CountedOp> ops = {
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

INSTANTIATE_TEST_SUITE_P(Sizes, TcpAllocations, ::testing::Values(2, 3, 4));

}  // namespace
}  // namespace hvd::test
