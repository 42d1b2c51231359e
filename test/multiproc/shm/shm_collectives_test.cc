// Correctness of the shared-memory communicator with real forked processes: every op, several
// dtypes and reduce ops, uneven sizes and sizes larger than the staging halves, at 2/3/4 ranks.
// Each rank regenerates every rank's input, computes the expected result itself by reducing in
// rank order 0..N-1 (ReduceInto), and demands bit-identical output -- which also proves all
// ranks agree bit for bit.
#include <gtest/gtest.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "runtime/transports/host_layout.h"
#include "runtime/transports/reduction.h"
#include "runtime/transports/shm/shm_communicator.h"
#include "runtime/transports/shm/shm_provider.h"
#include "runtime/transports/shm/shm_reductions.h"
#include "test/multiproc/pieces_check.h"
#include "test/multiproc/posted_check.h"
#include "test/multiproc/rank_fail.h"
#include "test/multiproc/seeded_values.h"
#include "test/multiproc/shm/shm_job.h"

namespace hvd::test {
namespace {

using runtime::Communicator;
using runtime::DataType;
using runtime::ReduceOp;

const DataType kDtypes[] = {DataType::kUInt8,   DataType::kInt8,    DataType::kUInt16,
                            DataType::kInt16,   DataType::kInt32,   DataType::kInt64,
                            DataType::kFloat16, DataType::kFloat32, DataType::kFloat64,
                            DataType::kBool,    DataType::kBFloat16};
const ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct};

// Whether a child may read its parent's memory with process_vm_readv (what Yama's ptrace_scope 1
// or a seccomp filter forbids, and the single-copy probe then turns off): the precondition of
// the single-copy test, checked outside the code under test.
bool CrossMemoryAttachAllowed() {
  static const uint64_t kMagic = 0x68766473696e676cULL;
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child < 0) return false;
  if (child == 0) {
    uint64_t got = 0;
    iovec local{&got, sizeof(got)};
    iovec remote{const_cast<uint64_t*>(&kMagic), sizeof(kMagic)};
    _exit(process_vm_readv(parent, &local, 1, &remote, 1, 0) == sizeof(got) && got == kMagic ? 0
                                                                                             : 1);
  }
  int status = 0;
  return waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int AllreduceEverything(Communicator& comm) {
  const int64_t counts[] = {1, 7, 1000, 9000, 70001};
  uint32_t seed = 1;
  for (DataType dtype : kDtypes) {
    for (ReduceOp op : kOps) {
      for (int64_t count : counts) {
        ++seed;
        std::vector<char> buf = Input(dtype, count, comm.rank(), seed);
        Status s = comm.Allreduce(buf.data(), count, dtype, op);
        if (!s.ok()) return Fail(comm, Case(dtype, op, count) + ": " + s.ToString());
        if (buf != Expected(dtype, op, count, comm.size(), seed)) {
          return Fail(comm, Case(dtype, op, count) + ": result differs from rank-order reference");
        }
      }
    }
    // Average's scale (1/n, not a power of two from 3 members), applied by each slice's reducer
    for (int64_t count : counts) {
      ++seed;
      const double scale = 1.0 / comm.size();
      std::vector<char> buf = Input(dtype, count, comm.rank(), seed);
      Status s = comm.AllreduceScaled(buf.data(), count, dtype, ReduceOp::kSum, scale);
      const std::string what = Case(dtype, ReduceOp::kSum, count) + " scaled by 1/n";
      if (!s.ok()) return Fail(comm, what + ": " + s.ToString());
      if (buf != Expected(dtype, ReduceOp::kSum, count, comm.size(), seed, scale)) {
        return Fail(comm, what + ": result differs from rank-order reference");
      }
    }
  }
  return 0;
}

// AllreduceEverything through the single-copy algorithm (every size: single_copy_bytes = 1),
// plus sizes whose slices span several of its read pieces; also checks that the members agreed
// on it, so the test cannot pass on the staging path alone.
int AllreduceSingleCopyEverything(Communicator& comm) {
  if (runtime::ShmSingleCopyBytes(comm) != 1) {
    return Fail(comm, "single copy not agreed: ShmSingleCopyBytes = " +
                          std::to_string(runtime::ShmSingleCopyBytes(comm)));
  }
  if (AllreduceEverything(comm) != 0) return 1;
  uint32_t seed = 9000;
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kFloat64}) {
    for (int64_t count : {int64_t{300001}, int64_t{1} << 20}) {
      ++seed;
      std::vector<char> buf = Input(dtype, count, comm.rank(), seed);
      Status s = comm.Allreduce(buf.data(), count, dtype, ReduceOp::kSum);
      if (!s.ok()) return Fail(comm, Case(dtype, ReduceOp::kSum, count) + ": " + s.ToString());
      if (buf != Expected(dtype, ReduceOp::kSum, count, comm.size(), seed)) {
        return Fail(comm, Case(dtype, ReduceOp::kSum, count) + ": differs from the reference");
      }
      ++seed;  // and scaled, each read piece of the slice by its reducer
      const double scale = 1.0 / comm.size();
      buf = Input(dtype, count, comm.rank(), seed);
      s = comm.AllreduceScaled(buf.data(), count, dtype, ReduceOp::kSum, scale);
      if (!s.ok()) return Fail(comm, Case(dtype, ReduceOp::kSum, count) + ": " + s.ToString());
      if (buf != Expected(dtype, ReduceOp::kSum, count, comm.size(), seed, scale)) {
        return Fail(comm, Case(dtype, ReduceOp::kSum, count) + " scaled: differs");
      }
    }
  }
  // A member allreducing a different count is an error on every member, not a read past a
  // buffer; the communicator is failed afterwards (as after any failed round).
  std::vector<float> buf(1000 + comm.rank(), 1.0f);
  Status s = comm.Allreduce(buf.data(), static_cast<int64_t>(buf.size()), DataType::kFloat32,
                            ReduceOp::kSum);
  if (s.ok()) return Fail(comm, "mismatched counts were allreduced without an error");
  if (comm.rank() == 0 && s.message().find("elements") == std::string::npos) {
    return Fail(comm, "mismatch error does not name the counts: " + s.ToString());
  }
  return 0;
}

// The fused allreduce through the single-copy algorithm where every member can take part, and
// through its fall-back to the staged one where a piece has no input or output.
int AllreducePiecesSingleCopy(Communicator& comm) {
  if (runtime::ShmSingleCopyBytes(comm) != 1) return Fail(comm, "single copy not agreed");
  return CheckAllreducePiecesMatchPacked(comm);
}

int ReduceScatterEverything(Communicator& comm) {
  uint32_t seed = 5000;
  for (DataType dtype :
       {DataType::kFloat32, DataType::kFloat16, DataType::kInt64, DataType::kBFloat16}) {
    for (ReduceOp op : kOps) {
      for (int64_t unit : {int64_t{0}, int64_t{3}, int64_t{40000}}) {
        ++seed;
        std::vector<int64_t> counts(comm.size());
        int64_t total = 0, mine = 0;
        for (int k = 0; k < comm.size(); ++k) {
          counts[k] = unit * (k + 1) + (k == 1 ? 5 : 0);
          if (k == comm.rank()) mine = total;
          total += counts[k];
        }
        std::vector<char> in = Input(dtype, total, comm.rank(), seed);
        const size_t elem = runtime::DataTypeSize(dtype);
        std::vector<char> out(static_cast<size_t>(counts[comm.rank()]) * elem + 1);
        Status s = comm.ReduceScatter(in.data(), out.data(), counts, dtype, op);
        if (!s.ok())
          return Fail(comm, "reducescatter " + Case(dtype, op, total) + ": " + s.ToString());
        std::vector<char> want = Expected(dtype, op, total, comm.size(), seed);
        if (std::memcmp(out.data(), want.data() + mine * elem, out.size() - 1) != 0) {
          return Fail(comm, "reducescatter " + Case(dtype, op, total) + ": wrong slice");
        }
        // Scaled by 1/n (Average's; not a power of two from 3 members) as the slice is reduced:
        // float16/bfloat16 sums and products in float before their one rounding.
        const double scale = 1.0 / comm.size();
        s = comm.ReduceScatterScaled(in.data(), out.data(), counts, dtype, op, scale);
        if (!s.ok()) {
          return Fail(comm, "reducescatter " + Case(dtype, op, total) + " scaled: " + s.ToString());
        }
        want = Expected(dtype, op, total, comm.size(), seed, scale);
        if (std::memcmp(out.data(), want.data() + mine * elem, out.size() - 1) != 0) {
          return Fail(comm, "reducescatter " + Case(dtype, op, total) + " scaled: wrong slice");
        }
      }
    }
  }
  return 0;
}

std::vector<char> Bytes(int from, int to, int64_t n) {
  std::vector<char> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<char>(from * 31 + to * 7 + i * 13);
  return v;
}

int DataMovement(Communicator& comm) {
  const int n = comm.size(), me = comm.rank();
  for (int64_t unit : {int64_t{0}, int64_t{5}, int64_t{50000}}) {
    std::vector<int64_t> sizes(n);
    std::vector<char> want;
    for (int k = 0; k < n; ++k) {
      sizes[k] = k == 1 ? 0 : unit * (k + 1) + k;
      auto part = Bytes(k, -1, sizes[k]);
      want.insert(want.end(), part.begin(), part.end());
    }
    std::vector<char> out(want.size());
    auto in = Bytes(me, -1, sizes[me]);
    Status s = comm.Allgatherv(in.data(), out.data(), sizes);
    if (!s.ok() || out != want)
      return Fail(comm, "allgatherv unit " + std::to_string(unit) + ": " + s.ToString());
    for (int root = 0; root < n; ++root) {
      std::vector<char> buf =
          me == root ? Bytes(root, 9, unit * 3 + 1) : std::vector<char>(unit * 3 + 1);
      s = comm.Broadcast(buf.data(), static_cast<int64_t>(buf.size()), root);
      if (!s.ok() || buf != Bytes(root, 9, unit * 3 + 1))
        return Fail(comm, "broadcast: " + s.ToString());
    }
    // Alltoallv: member i sends (i + j) * unit + j bytes to member j.
    std::vector<int64_t> send(n), recv(n);
    std::vector<char> send_buf, recv_want;
    for (int j = 0; j < n; ++j) {
      send[j] = (me + j) * unit + j;
      recv[j] = (j + me) * unit + me;
      auto piece = Bytes(me, j, send[j]);
      send_buf.insert(send_buf.end(), piece.begin(), piece.end());
      auto from = Bytes(j, me, recv[j]);
      recv_want.insert(recv_want.end(), from.begin(), from.end());
    }
    std::vector<char> recv_buf(recv_want.size());
    s = comm.Alltoallv(send_buf.data(), send, recv_buf.data(), recv);
    if (!s.ok() || recv_buf != recv_want) return Fail(comm, "alltoallv: " + s.ToString());
    // The same with the sizes agreed beforehand (no size round): the largest piece anyone
    // sends is (n - 1 + n - 1) * unit + n - 1 bytes, several rounds with unit 50000.
    std::fill(recv_buf.begin(), recv_buf.end(), 0);
    const int64_t max_piece = 2 * (n - 1) * unit + (n - 1);
    s = comm.AlltoallvAgreed(send_buf.data(), send, recv_buf.data(), recv, max_piece);
    if (!s.ok() || recv_buf != recv_want) return Fail(comm, "agreed alltoallv: " + s.ToString());
  }
  // A receiver expecting other sizes than its sender sends: an error naming the sizes on the
  // member that expected them, nothing read or written past a buffer, and the communicator
  // failed on every member, so the next call fails everywhere. The last calls here.
  if (n == 1) return 0;
  std::vector<int64_t> send(n, 8), recv(n, 8);
  if (me == 0) recv[1] = 9;
  std::vector<char> send_buf(8 * n, 'x'), recv_buf(8 * n + 1);
  Status s = comm.Alltoallv(send_buf.data(), send, recv_buf.data(), recv);
  if (me == 0 &&
      (s.ok() || s.message().find("sends 8 bytes here but 9 are expected") == std::string::npos)) {
    return Fail(comm, "alltoall mismatch error does not name the sizes: " + s.ToString());
  }
  if (comm.Barrier().ok()) return Fail(comm, "the communicator works after a failed alltoall");
  return 0;
}

int ControlPlane(Communicator& comm) {
  const int n = comm.size(), me = comm.rank();
  for (size_t len : {size_t{0}, size_t{10}, size_t{100000}}) {
    for (int root = 0; root < n; ++root) {
      const std::string mine =
          std::string(len * static_cast<size_t>(me + 1), static_cast<char>('a' + me));
      std::vector<std::string> all;
      Status s = comm.GatherBytes(mine, root, &all);
      if (!s.ok()) return Fail(comm, "gather: " + s.ToString());
      if (me == root) {
        if (static_cast<int>(all.size()) != n) return Fail(comm, "gather: wrong count");
        for (int k = 0; k < n; ++k) {
          if (all[k] != std::string(len * static_cast<size_t>(k + 1), static_cast<char>('a' + k))) {
            return Fail(comm, "gather: wrong string from rank " + std::to_string(k));
          }
        }
      }
      std::string data = me == root ? std::string(len + 3, static_cast<char>('A' + root)) : "junk";
      s = comm.BroadcastBytes(&data, root);
      if (!s.ok() || data != std::string(len + 3, static_cast<char>('A' + root))) {
        return Fail(comm, "broadcast bytes: " + s.ToString());
      }
    }
  }
  for (size_t words : {size_t{0}, size_t{3}, size_t{9000}}) {
    std::vector<uint64_t> a(words), o(words);
    for (size_t i = 0; i < words; ++i) a[i] = o[i] = (uint64_t{1} << me) | (i << 8);
    Status s = comm.BitwiseAnd(&a);
    if (s.ok()) s = comm.BitwiseOr(&o);
    if (!s.ok()) return Fail(comm, "bitwise: " + s.ToString());
    const uint64_t all_bits = (uint64_t{1} << n) - 1;
    for (size_t i = 0; i < words; ++i) {
      if (a[i] != (n == 1 ? a[i] : (i << 8)) || o[i] != (all_bits | (i << 8))) {
        return Fail(comm, "bitwise: wrong word " + std::to_string(i));
      }
    }
  }
  for (int i = 0; i < 50; ++i) {
    Status s = comm.Barrier();
    if (!s.ok()) return Fail(comm, "barrier: " + s.ToString());
  }
  return 0;
}

// (ranks, staging bytes per rank): 64 KiB forces every large case through many chunks.
class ShmCollectivesTest : public ::testing::TestWithParam<std::tuple<int, size_t>> {
 protected:
  void RunAll(const ShmJob::Body& body, int64_t single_copy_bytes = 0, bool choose = false) {
    ShmJob::Options options;
    options.size = std::get<0>(GetParam());
    options.buffer_bytes = std::get<1>(GetParam());
    options.single_copy_bytes = single_copy_bytes;
    options.choose_single_copy = choose;
    ShmJob job(options);
    ASSERT_TRUE(job.error().empty()) << job.error();
    auto outcomes = job.Run(body);
    ASSERT_TRUE(job.error().empty()) << job.error() << "; " << Describe(outcomes);
    for (const auto& out : outcomes)
      ASSERT_TRUE(out.exited && out.exit_code == 0) << Describe(outcomes);
    EXPECT_TRUE(LeftoverSegments(job.job_id()).empty());
  }
  // RunAll with single copy from every size (and member 0 choosing the way per op when
  // `choose`), skipped where process_vm_readv is not permitted.
  void RunAllSingleCopy(const ShmJob::Body& body, bool choose = false) {
    if (!CrossMemoryAttachAllowed()) GTEST_SKIP() << "process_vm_readv is not permitted here";
    RunAll(body, 1, choose);
  }
};

TEST_P(ShmCollectivesTest, AllreduceEveryDtypeAndOp) { RunAll(AllreduceEverything); }
// Given members whose direct sizes differ (256 << rank bytes: HVD_SHM_DIRECT_BYTES set apart),
// when they create the group, then all take the smallest, and every allreduce, packed or of
// pieces, above it takes the two rounds a large one takes, with the rank-order results; and
// one computed from inputs posted with the AND round (from 3 members) above it is sliced (its
// reduce-scatter from the posted inputs, then a round of slices: ShmAllreducePostedSliced),
// with the same results, empty slices included.
TEST_P(ShmCollectivesTest, AllreduceWithSmallDirectSizesDifferingPerMember) {
  ShmJob::Options options;
  options.size = std::get<0>(GetParam());
  options.buffer_bytes = std::get<1>(GetParam());
  options.direct_bytes = 256;
  options.direct_bytes_differ = true;
  ShmJob job(options);
  ASSERT_TRUE(job.error().empty()) << job.error();
  auto outcomes = job.Run([](Communicator& comm) {
    const int64_t agreed = runtime::ShmGroupDirectBytes(comm);
    if (agreed != 256) return Fail(comm, "agreed direct size " + std::to_string(agreed));
    if (AllreduceEverything(comm) != 0 || CheckAllreducePiecesMatchPacked(comm) != 0) return 1;
    return CheckPostedInputs(comm, comm.size() > 2);
  });
  for (const auto& out : outcomes)
    ASSERT_TRUE(out.exited && out.exit_code == 0) << Describe(outcomes);
}

// Given members that decided differently whether their allreduces may single-copy (each from
// the CPUs it sees: a container's own CPU set), when they create the group, then they agree on
// "no", and every allreduce (single copy allowed from every size otherwise) gets the rank-order
// results. Until 2026-11-30 member 0 posted the single-copy round where the others posted
// staged data: an InvalidArgument on one side, a remote error on the other (found by review).
TEST_P(ShmCollectivesTest, AllreduceWithMembersDifferingOnSingleCopyAgreeOnStaging) {
  if (!CrossMemoryAttachAllowed()) GTEST_SKIP() << "process_vm_readv is not permitted here";
  ShmJob::Options options;
  options.size = std::get<0>(GetParam());
  options.buffer_bytes = std::get<1>(GetParam());
  options.single_copy_bytes = 1;
  options.single_copy_allreduce_on_member0_only = true;
  ShmJob job(options);
  ASSERT_TRUE(job.error().empty()) << job.error();
  auto outcomes = job.Run(AllreduceEverything);
  for (const auto& out : outcomes)
    ASSERT_TRUE(out.exited && out.exit_code == 0) << Describe(outcomes);
}

// The rule (shm_reductions.h): 64 KiB for 2 members and wherever ranks share CPUs; from 3
// members on a CPU each, less the more members there are, whole cache lines, at least 1 KiB.
TEST(ShmDirectBytes, ShrinksWithTheMembersWhereEachHasACpu) {
  using runtime::ShmDirectBytes;
  EXPECT_EQ(ShmDirectBytes(2, 1), 65536);
  for (int n : {3, 4, 8, 16, 64}) EXPECT_EQ(ShmDirectBytes(n, 2), 65536) << n;
  EXPECT_EQ(ShmDirectBytes(3, 1), 49152);
  EXPECT_EQ(ShmDirectBytes(4, 1), 21824);
  EXPECT_EQ(ShmDirectBytes(8, 1), 6208);
  EXPECT_EQ(ShmDirectBytes(16, 1), 2496);
  EXPECT_EQ(ShmDirectBytes(64, 1), 1024);
  for (int n = 3; n < 256; ++n) {
    EXPECT_LE(ShmDirectBytes(n + 1, 1), ShmDirectBytes(n, 1)) << n;
    EXPECT_EQ(ShmDirectBytes(n, 1) % 64, 0) << n;
  }
}
TEST_P(ShmCollectivesTest, AllreduceSingleCopyEveryDtypeAndOp) {
  RunAllSingleCopy(AllreduceSingleCopyEverything);
}
// HVD_SHM_SINGLE_COPY=auto: member 0 alone picks single copy or the halves per op (two of each
// first, then the faster), the others follow its vote; every result is still the reference.
TEST_P(ShmCollectivesTest, AllreduceWithMemberZeroChoosingTheWayEveryDtypeAndOp) {
  RunAllSingleCopy(AllreduceSingleCopyEverything, /*choose=*/true);
}
TEST_P(ShmCollectivesTest, AllreducePiecesSingleCopyEqualPackedAllreduce) {
  RunAllSingleCopy(AllreducePiecesSingleCopy);
}
TEST_P(ShmCollectivesTest, AllreducePiecesEqualPackedAllreduce) {
  RunAll(CheckAllreducePiecesMatchPacked);
}
// The hierarchy's fused allreduce reads its inputs and writes its outputs through these.
TEST_P(ShmCollectivesTest, ReduceScatterAndAllgatherOfPiecesEqualPacked) {
  RunAll(CheckScatterGatherPiecesMatchPacked);
}
// Up to 2 ranks per CPU the reduce-scatter takes the balanced rounds (ShmReduceScatter: every
// member reduces its part in every round, from its own input and the peers' sub-slots); the
// 64 KiB staging of half the cases puts the 40000-unit counts through many uneven rounds.
TEST_P(ShmCollectivesTest, ReduceScatterEveryDtypeAndOp) {
  if (runtime::RanksPerCpu(std::get<0>(GetParam())) > 2) {
    GTEST_SKIP() << "more than 2 ranks per CPU here: the chunks' rounds (the next test)";
  }
  RunAll([](Communicator& comm) {
    if (!runtime::ShmBalancedReduceScatter(comm)) return Fail(comm, "not the balanced rounds");
    return ReduceScatterEverything(comm);
  });
}
// With more ranks per CPU (the machine's ranks said to be many), the rounds of whole chunks,
// which only the members whose segments a chunk holds reduce: the same results.
TEST_P(ShmCollectivesTest, ReduceScatterByChunksWithManyRanksPerCpu) {
  ShmJob::Options options;
  options.size = std::get<0>(GetParam());
  options.buffer_bytes = std::get<1>(GetParam());
  options.ranks_on_machine = 1 << 12;
  ShmJob job(options);
  ASSERT_TRUE(job.error().empty()) << job.error();
  auto outcomes = job.Run([](Communicator& comm) {
    if (runtime::ShmBalancedReduceScatter(comm)) return Fail(comm, "balanced rounds");
    return ReduceScatterEverything(comm) != 0 ? 1 : CheckScatterGatherPiecesMatchPacked(comm);
  });
  for (const auto& out : outcomes)
    ASSERT_TRUE(out.exited && out.exit_code == 0) << Describe(outcomes);
}
TEST_P(ShmCollectivesTest, AllgatherBroadcastAlltoall) { RunAll(DataMovement); }
// The alltoalls of DataMovement by single copy (every size), and with member 0 choosing the way
// per op: uneven and empty pieces, the size round and the agreed sizes, a mismatch failing every
// member.
TEST_P(ShmCollectivesTest, AlltoallSingleCopy) { RunAllSingleCopy(DataMovement); }
TEST_P(ShmCollectivesTest, AlltoallWithMemberZeroChoosingTheWay) {
  RunAllSingleCopy(DataMovement, /*choose=*/true);
}
TEST_P(ShmCollectivesTest, ControlPlane) { RunAll(ControlPlane); }
// Posting is offered from 3 members (posts_inputs()), and works with 2.
TEST_P(ShmCollectivesTest, CollectivesFromPostedInputs) {
  RunAll([](Communicator& comm) {
    if (CheckPostedInputs(comm, comm.size() > 2) != 0 || CheckPostedPieces(comm, false) != 0) {
      return 1;
    }
    // Shared memory's own rounds reduce in rank order at every size (the chunked rounds too).
    if (!comm.reduces_segments_in_rank_order(int64_t{1} << 30)) {
      return Fail(comm, "reduces_segments_in_rank_order() is false");
    }
    constexpr int64_t kCounts[] = {7, 1001, 40009, 300007};
    return CheckReduceScatterInRankOrder(comm, kCounts);
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, ShmCollectivesTest,
                         ::testing::Combine(::testing::Values(2, 3, 4),
                                            ::testing::Values(size_t{64} << 10, size_t{4} << 20)));

// Given members that report host names a, a, b (local size < size), when they exchange host
// identities, then every member gets the same list, in group order, and with it every
// member's machine (all this one: the "hosts" share its kernel, as netns hosts do).
TEST(ShmProvider, HostIdentitiesAreExchangedInGroupOrder) {
  for (bool mixed : {true, false}) {
    ShmJob::Options options;
    options.size = 3;
    ShmJob job(options);
    auto outcomes = job.RunRaw([&](int rank, control::KvClient& kv, const std::string& scope) {
      runtime::RuntimeConfig config;
      config.rank = rank;
      config.size = 3;
      config.local_size = 2;
      config.hostname = (mixed && rank == 2) ? "b" : "a";
      runtime::GroupSpec spec{scope, {0, 1, 2}, rank};
      std::vector<std::string> machines;
      auto hosts = runtime::ExchangeHosts(&kv, config, spec, &machines);
      const std::vector<std::string> expected = {"a", "a", mixed ? "b" : "a"};
      const std::vector<std::string> same(3, runtime::MachineId());
      if (!hosts.ok() || *hosts != expected || machines != same ||
          runtime::CountSameMachine(machines, rank) != 3) {
        std::fprintf(stderr, "rank %d: %s\n", rank,
                     hosts.ok() ? "wrong hosts" : hosts.status().ToString().c_str());
        return 1;
      }
      return 0;
    });
    ASSERT_TRUE(job.error().empty()) << job.error() << "; " << Describe(outcomes);
  }
}

}  // namespace
}  // namespace hvd::test
