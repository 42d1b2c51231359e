// The hierarchical communicator over in-process groups standing for hosts: 2 hosts x 2 ranks
// and 3 hosts x 2 ranks (thread ranks; local and cross groups are InProcessWorld groups).
#include <gtest/gtest.h>

#include <thread>

#include "runtime/transports/hierarchical_communicator.h"
#include "runtime/transports/host_layout.h"
#include "test/fakes/in_process_communicator.h"

namespace hvd::testing {
namespace {

using runtime::Communicator;
using runtime::DataType;
using runtime::ReduceOp;

// Runs `body` on every rank of a `hosts` x `per_host` group, each with its hierarchical
// communicator (flat, local and cross groups named like ShmProvider names them).
void RunHierarchy(int hosts, int per_host, runtime::HierarchicalOps ops,
                  const std::function<void(int rank, Communicator& comm)>& body) {
  InProcessWorld world(std::chrono::seconds(20));
  const int n = hosts * per_host;
  std::vector<std::string> host_of;
  for (int r = 0; r < n; ++r) host_of.push_back("h" + std::to_string(r / per_host));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      const runtime::HostLayout l = runtime::ComputeHostLayout(host_of, r);
      ASSERT_TRUE(l.uniform);
      auto comm = runtime::MakeHierarchicalCommunicator(
          world.Join("g", r, n),
          world.Join("g/local" + std::to_string(l.host_index), l.local_rank, l.local_size),
          world.Join("g/cross" + std::to_string(l.local_rank), l.host_index, l.hosts), ops);
      body(r, *comm);
    });
  }
  for (auto& t : threads) t.join();
}

// Element i of rank r's input: small integers, so every op's exact result is known.
double Input(int r, int64_t i) { return static_cast<double>((i + r) % 5 + 1); }

TEST(HierarchicalTest, AllreduceMatchesTheFlatResultAtEverySize) {
  for (auto [hosts, per_host] : {std::pair{2, 2}, std::pair{3, 2}}) {
    const int n = hosts * per_host;
    // 3 < local size elements, the small path (<= 64 KiB) and the 3-step path (> 64 KiB).
    for (int64_t count : {int64_t{1}, int64_t{1000}, int64_t{40000}}) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kProduct}) {
        RunHierarchy(hosts, per_host, {}, [&](int r, Communicator& comm) {
          std::vector<double> buf(count);
          for (int64_t i = 0; i < count; ++i) buf[i] = Input(r, i);
          Status s = comm.Allreduce(buf.data(), count, DataType::kFloat64, op);
          ASSERT_TRUE(s.ok()) << s.ToString();
          for (int64_t i = 0; i < count; ++i) {
            double expected = op == ReduceOp::kProduct ? 1 : 0;
            for (int k = 0; k < n; ++k) {
              const double v = Input(k, i);
              expected = op == ReduceOp::kSum   ? expected + v
                         : op == ReduceOp::kMax ? std::max(expected, v)
                                                : expected * v;
            }
            ASSERT_EQ(buf[i], expected) << "rank " << r << " element " << i << " of " << count;
          }
        });
      }
    }
  }
}

TEST(HierarchicalTest, AllgathervOfVariableSizesInRankOrder) {
  runtime::HierarchicalOps ops;
  ops.allgather = true;
  RunHierarchy(3, 2, ops, [&](int r, Communicator& comm) {
    std::vector<int64_t> bytes;
    int64_t total = 0;
    for (int k = 0; k < 6; ++k) {
      bytes.push_back(k % 3);  // some members send nothing
      total += bytes.back();
    }
    std::vector<char> in(bytes[r], static_cast<char>('a' + r)), out(total, '?');
    Status s = comm.Allgatherv(in.data(), out.data(), bytes);
    ASSERT_TRUE(s.ok()) << s.ToString();
    std::string expected;
    for (int k = 0; k < 6; ++k) expected += std::string(bytes[k], static_cast<char>('a' + k));
    EXPECT_EQ(std::string(out.begin(), out.end()), expected) << "rank " << r;
  });
}

TEST(HierarchicalTest, ControlPlaneAndOtherOpsUseTheFlatGroup) {
  RunHierarchy(2, 2, {}, [&](int r, Communicator& comm) {
    EXPECT_EQ(comm.size(), 4);
    EXPECT_EQ(comm.rank(), r);
    EXPECT_STREQ(comm.name(), "HIER");
    std::vector<std::string> gathered;
    ASSERT_TRUE(comm.GatherBytes(std::to_string(r), 0, &gathered).ok());
    if (r == 0) {
      EXPECT_EQ(gathered, (std::vector<std::string>{"0", "1", "2", "3"}));
    }
    int32_t value = r == 3 ? 42 : 0;
    ASSERT_TRUE(comm.Broadcast(&value, sizeof(value), 3).ok());
    EXPECT_EQ(value, 42);
  });
}

TEST(HierarchicalTest, AbortFailsEveryStep) {
  RunHierarchy(2, 2, {}, [&](int r, Communicator& comm) {
    comm.Abort();
    std::vector<float> buf(100000, 1.0f);
    EXPECT_FALSE(comm.Allreduce(buf.data(), 100000, DataType::kFloat32, ReduceOp::kSum).ok());
  });
}

}  // namespace
}  // namespace hvd::testing
