// The hierarchical communicator over in-process groups standing for hosts: 2 hosts x 2 ranks
// and 3 hosts x 2 ranks (thread ranks; local and cross groups are InProcessWorld groups).
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "runtime/transports/hierarchical_communicator.h"
#include "runtime/transports/host_layout.h"
#include "test/fakes/in_process_communicator.h"
#include "test/multiproc/pieces_check.h"

namespace hvd::testing {
namespace {

using runtime::Communicator;
using runtime::DataType;
using runtime::ReduceOp;

// Runs `body` on every rank of a `hosts` x `per_host` group, each with its hierarchical
// communicator (flat, local and cross groups named like ShmProvider names them). The cross
// groups run the eager round as hvd's TCP does; the local ones (shared memory) have `local`'s
// capabilities. Returns the number of calls made on the flat group.
int64_t RunHierarchy(int hosts, int per_host, runtime::HierarchicalOps ops,
                     const std::function<void(int rank, Communicator& comm)>& body,
                     InProcessWorld::Capabilities local = {}) {
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
          world.Join("g/local" + std::to_string(l.host_index), l.local_rank, l.local_size, local),
          world.Join("g/cross" + std::to_string(l.local_rank), l.host_index, l.hosts,
                     {.ands_with_allreduce = true}),
          ops);
      body(r, *comm);
    });
  }
  for (auto& t : threads) t.join();
  return world.calls("g");
}

// The pieces checks' layouts used here (see AllreducePiecesEqualPackedAllreduce).
constexpr int64_t kMaxPiecesElements = 200000;

// Element i of rank r's input: small integers, so every op's exact result is known.
double Input(int r, int64_t i) { return static_cast<double>((i + r) % 5 + 1); }

// Element i reduced with `op` over ranks 0..n-1 (Sum, Max or Product).
double Expected(ReduceOp op, int n, int64_t i) {
  double expected = op == ReduceOp::kProduct ? 1 : 0;
  for (int k = 0; k < n; ++k) {
    const double v = Input(k, i);
    expected = op == ReduceOp::kSum   ? expected + v
               : op == ReduceOp::kMax ? std::max(expected, v)
                                      : expected * v;
  }
  return expected;
}

TEST(HierarchicalTest, AllreduceMatchesTheFlatResultAtEverySize) {
  for (auto [hosts, per_host] : {std::pair{2, 2}, std::pair{3, 2}}) {
    const int n = hosts * per_host;
    // Fewer elements than local ranks; few enough bytes that every cross group carries the
    // host's sum (the two-step path); more (each carries its slice: the three-step path).
    for (int64_t count : {int64_t{1}, int64_t{500}, int64_t{3000}, int64_t{40000}}) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kProduct}) {
        RunHierarchy(hosts, per_host, {}, [&](int r, Communicator& comm) {
          std::vector<double> buf(count);
          for (int64_t i = 0; i < count; ++i) buf[i] = Input(r, i);
          Status s = comm.Allreduce(buf.data(), count, DataType::kFloat64, op);
          ASSERT_TRUE(s.ok()) << s.ToString();
          for (int64_t i = 0; i < count; ++i) {
            ASSERT_EQ(buf[i], Expected(op, n, i))
                << "rank " << r << " element " << i << " of " << count;
          }
          // Scaled (Average's 1/n) by the cross groups' allreduce, before the host's allgather.
          for (int64_t i = 0; i < count; ++i) buf[i] = Input(r, i);
          s = comm.AllreduceScaled(buf.data(), count, DataType::kFloat64, op, 1.0 / n);
          ASSERT_TRUE(s.ok()) << s.ToString();
          for (int64_t i = 0; i < count; ++i) {
            ASSERT_EQ(buf[i], Expected(op, n, i) * (1.0 / n))
                << "rank " << r << " element " << i << " of " << count << " scaled";
          }
        });
      }
    }
  }
}

// Reducescatter through the hierarchy: uneven slices (one empty), each rank gets the
// reduction of its own slice over every rank, whatever the host layout.
TEST(HierarchicalTest, ReduceScatterGivesEachRankItsSlice) {
  for (auto [hosts, per_host] : {std::pair{2, 2}, std::pair{3, 2}, std::pair{2, 3}}) {
    const int n = hosts * per_host;
    std::vector<int64_t> counts(n);
    for (int r = 0; r < n; ++r) counts[r] = r == 1 ? 0 : 3 + 7 * r;
    int64_t total = 0;
    for (int64_t c : counts) total += c;
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kProduct}) {
      const int64_t flat_calls = RunHierarchy(hosts, per_host, {}, [&](int r, Communicator& comm) {
        std::vector<double> in(total);
        for (int64_t i = 0; i < total; ++i) in[i] = Input(r, i);
        std::vector<double> out(std::max<int64_t>(counts[r], 1), -1);
        Status s = comm.ReduceScatter(in.data(), out.data(), counts, DataType::kFloat64, op);
        ASSERT_TRUE(s.ok()) << s.ToString();
        int64_t first = 0;
        for (int k = 0; k < r; ++k) first += counts[k];
        for (int64_t j = 0; j < counts[r]; ++j) {
          ASSERT_EQ(out[j], Expected(op, n, first + j))
              << "rank " << r << " element " << j << " of " << n;
        }
        // Scaled (Average's 1/n) by the cross groups' reduce-scatter, the last reduction.
        s = comm.ReduceScatterScaled(in.data(), out.data(), counts, DataType::kFloat64, op,
                                     1.0 / n);
        ASSERT_TRUE(s.ok()) << s.ToString();
        for (int64_t j = 0; j < counts[r]; ++j) {
          ASSERT_EQ(out[j], Expected(op, n, first + j) * (1.0 / n))
              << "rank " << r << " element " << j << " of " << n << " scaled";
        }
      });
      EXPECT_EQ(flat_calls, 0) << hosts << " x " << per_host;
    }
  }
}

// A fused allreduce on the tensors themselves (the local group reads and writes pieces, as
// shared memory does): every layout, dtype and op gives the bits of the packed allreduce,
// through the two-step path (small totals) and the reduce-scatter / cross / allgather one;
// holes (a joined rank's missing input, a dropped result) are honoured. Without pieces in
// the local group the hierarchy does not claim them (the caller packs). Layouts up to 200,000
// elements: the hierarchy's paths part at 8 KiB and the in-process groups have no chunk
// limits, so the transports' largest layout added nothing here but 70 % of these two checks'
// time under ASan (51 -> 15 s: its allocator maps fresh pages for every large buffer).
TEST(HierarchicalTest, AllreducePiecesEqualPackedAllreduce) {
  for (auto [hosts, per_host] : {std::pair{2, 2}, std::pair{2, 3}}) {
    const int64_t flat_calls = RunHierarchy(
        hosts, per_host, {},
        [&](int r, Communicator& comm) {
          ASSERT_TRUE(comm.allreduces_pieces());
          EXPECT_EQ(test::CheckAllreducePiecesMatchPackedUpTo(comm, kMaxPiecesElements), 0)
              << "rank " << r;
        },
        {.allreduces_pieces = true});
    EXPECT_EQ(flat_calls, 0) << hosts << " x " << per_host;
  }
  RunHierarchy(2, 2, {}, [&](int, Communicator& comm) { EXPECT_FALSE(comm.allreduces_pieces()); });
}

// A fused reducescatter's input in pieces (and the allgather into pieces): the hierarchy
// regroups the pieces by local rank as it does a contiguous input, cutting them at the ranks'
// slices; every layout, dtype, op and per-rank split gives the bits of the packed collective.
TEST(HierarchicalTest, ScatterGatherPiecesEqualPacked) {
  runtime::HierarchicalOps ops;
  ops.allgather = true;
  for (auto [hosts, per_host] : {std::pair{2, 2}, std::pair{2, 3}}) {
    const int64_t flat_calls = RunHierarchy(
        hosts, per_host, ops,
        [&](int r, Communicator& comm) {
          EXPECT_EQ(test::CheckScatterGatherPiecesMatchPackedUpTo(comm, kMaxPiecesElements), 0)
              << "rank " << r;
        },
        {.allreduces_pieces = true});
    EXPECT_EQ(flat_calls, 0) << hosts << " x " << per_host;
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

// The negotiation's rounds (every cycle) go within the host and then between hosts, never over
// the flat group: each member's bits and the eager round's values differ, so a member that
// skipped a host or a cross group would miss its bits or its values.
TEST(HierarchicalTest, NegotiationRoundsGoThroughTheHierarchy) {
  for (auto [hosts, per_host] : {std::pair{2, 2}, std::pair{3, 2}, std::pair{2, 3}}) {
    const int n = hosts * per_host;
    for (bool local_ands : {false, true}) {
      SCOPED_TRACE("hosts " + std::to_string(hosts) + " x " + std::to_string(per_host) +
                   (local_ands ? ", local eager round" : ", local AND + allreduce"));
      const int64_t flat_calls = RunHierarchy(
          hosts, per_host, {},
          [&](int r, Communicator& comm) {
            // Bit r of word 0 is clear on rank r only; bit 63 of word 1 set everywhere.
            std::vector<uint64_t> bits{~(uint64_t{1} << r), uint64_t{1} << 63};
            ASSERT_TRUE(comm.BitwiseAnd(&bits).ok());
            EXPECT_EQ(bits[0], ~((uint64_t{1} << n) - 1)) << "rank " << r;
            EXPECT_EQ(bits[1], uint64_t{1} << 63);
            std::vector<uint64_t> ors{uint64_t{1} << (2 * r), 0};
            ASSERT_TRUE(comm.BitwiseOr(&ors).ok());
            uint64_t all = 0;
            for (int k = 0; k < n; ++k) all |= uint64_t{1} << (2 * k);
            EXPECT_EQ(ors[0], all) << "rank " << r;
            EXPECT_EQ(ors[1], 0u);
            ASSERT_TRUE(comm.Barrier().ok());
            // Two AND words, then a tail of floats: 3 (every cross group carries the host's
            // sum) and 5000 (each carries its slice, then the slices go round the host).
            ASSERT_TRUE(comm.ands_with_allreduce());
            for (int64_t count : {int64_t{3}, int64_t{5000}}) {
              std::vector<uint64_t> words(2 + (count + 1) / 2 + 1, 0);
              words[0] = ~(uint64_t{1} << (r + 8));
              words[1] = ~uint64_t{0};
              std::vector<float> mine(count);
              for (int64_t i = 0; i < count; ++i) mine[i] = static_cast<float>((i % 7) * (r + 1));
              std::memcpy(&words[2], mine.data(), count * sizeof(float));
              Status s =
                  comm.BitwiseAndWithAllreduce(words, 2, count, DataType::kFloat32, ReduceOp::kSum);
              ASSERT_TRUE(s.ok()) << s.ToString();
              EXPECT_EQ(words[0], ~(((uint64_t{1} << n) - 1) << 8)) << "rank " << r;
              EXPECT_EQ(words[1], ~uint64_t{0});
              std::vector<float> sum(count);
              std::memcpy(sum.data(), &words[2], count * sizeof(float));
              for (int64_t i = 0; i < count; ++i) {
                ASSERT_EQ(sum[i], static_cast<float>((i % 7) * n * (n + 1) / 2))
                    << "rank " << r << " element " << i << " of " << count;
              }
            }
            std::vector<uint64_t> words(4, 0);
            // A tail that does not fit is refused, naming the sizes, before anything moves.
            Status s =
                comm.BitwiseAndWithAllreduce(words, 2, 5, DataType::kFloat32, ReduceOp::kSum);
            EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
            EXPECT_NE(s.message().find("4 words cannot hold 2 words and 20 bytes"),
                      std::string::npos)
                << s.message();
          },
          {.ands_with_allreduce = local_ands});
      EXPECT_EQ(flat_calls, 0);
    }
  }
}

TEST(HierarchicalTest, AbortFailsEveryStep) {
  RunHierarchy(2, 2, {}, [&](int r, Communicator& comm) {
    comm.Abort();
    std::vector<float> buf(100000, 1.0f);
    EXPECT_FALSE(comm.Allreduce(buf.data(), 100000, DataType::kFloat32, ReduceOp::kSum).ok());
  });
}

// A member that fails in one of its groups aborts its other groups, so the members it shares
// them with fail within milliseconds instead of waiting out the timeout (an elastic worker
// stays alive after the error: nothing else would tell them). Rank 3 fails (its groups
// aborted, as a dead peer is noticed); rank 2 sees it in the local step; rank 0 then waits in
// the cross step for rank 2, which only its abort ends before the world's 20 s deadline.
TEST(HierarchicalTest, AFailedMemberFailsItsOtherGroupsAtOnce) {
  using Clock = std::chrono::steady_clock;
  std::vector<double> seconds(4, -1);
  RunHierarchy(2, 2, {}, [&](int r, Communicator& comm) {
    if (r == 3) {
      comm.Abort();
      return;
    }
    const auto start = Clock::now();
    Status s;
    for (int i = 0; i < 10 && s.ok(); ++i) {
      std::vector<uint64_t> bits{~uint64_t{0}};
      s = comm.BitwiseAnd(&bits);
    }
    seconds[r] = std::chrono::duration<double>(Clock::now() - start).count();
    EXPECT_FALSE(s.ok()) << "rank " << r;
    EXPECT_NE(s.code(), StatusCode::kTimeout) << "rank " << r << ": " << s.ToString();
  });
  for (int r = 0; r < 3; ++r) EXPECT_LT(seconds[r], 5.0) << "rank " << r;
}

}  // namespace
}  // namespace hvd::testing
