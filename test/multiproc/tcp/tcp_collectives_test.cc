// Correctness of every Communicator op of hvd's TCP communicator, for every dtype and
// reduction, small (direct) and large (ring / chain) paths, uneven sizes, 2/3/4 real
// processes (see tcp_job.h), and bit-identical results across ranks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "runtime/transports/data_type.h"
#include "runtime/transports/reduction.h"
#include "test/multiproc/known_values.h"
#include "test/multiproc/pieces_check.h"
#include "test/multiproc/posted_check.h"
#include "test/multiproc/rank_fail.h"
#include "test/multiproc/tcp/tcp_job.h"

namespace hvd::test {
namespace {

using runtime::Communicator;
using runtime::DataType;
using runtime::ReduceOp;

constexpr std::initializer_list<ReduceOp> kAllOps = {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax,
                                                     ReduceOp::kProduct, ReduceOp::kAverage};

#define CHILD_CHECK(cond, ...)                                                      \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                            \
      std::fprintf(stderr, "\n");                                                   \
      return 1;                                                                     \
    }                                                                               \
  } while (0)

#define CHILD_OK(expr)                                   \
  do {                                                   \
    Status _st = (expr);                                 \
    CHILD_CHECK(_st.ok(), "%s", _st.ToString().c_str()); \
  } while (0)

uint64_t Fnv(const void* data, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const uint8_t*>(data)[i]) * 1099511628211ull;
  return h;
}

// Every rank's `bytes` must be the same: gathered at rank 0 and compared there.
int SameEverywhere(Communicator& comm, const void* data, size_t n, const char* what) {
  const uint64_t h = Fnv(data, n);
  std::vector<std::string> all;
  CHILD_OK(comm.GatherBytes(std::string(reinterpret_cast<const char*>(&h), sizeof(h)), 0, &all));
  if (comm.rank() == 0) {
    for (size_t r = 1; r < all.size(); ++r) {
      CHILD_CHECK(all[r] == all[0], "%s: rank %zu's result differs from rank 0's", what, r);
    }
  }
  return 0;
}

// Random floats of every float type, summed: every rank must end with the same bits.
int CheckBitIdenticalSums(Communicator& comm, std::initializer_list<size_t> counts) {
  std::mt19937 gen(1234 + comm.rank());
  std::normal_distribution<float> dist(0.0f, 100.0f);
  for (DataType dtype :
       {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kFloat64}) {
    for (size_t count : counts) {
      std::vector<char> buf(count * runtime::DataTypeSize(dtype));
      for (size_t i = 0; i < count; ++i) Store(dtype, buf.data(), i, dist(gen));
      CHILD_OK(comm.Allreduce(buf.data(), static_cast<int64_t>(count), dtype, ReduceOp::kSum));
      if (int rc = SameEverywhere(comm, buf.data(), buf.size(), runtime::DataTypeName(dtype))) {
        return rc;
      }
    }
  }
  return 0;
}

// AllreduceScaled and AllreducePiecesScaled (the ring and halving-doubling scale each segment
// as it completes, TcpReducer::finish; doubling and the direct exchange the whole result) give
// exactly what Allreduce and then ScaleBuffer give: every element scaled once, for the sizes
// that take each algorithm, in float32, float16 and int32 (truncated), one piece or two.
int CheckScaledEqualsScalingAfter(Communicator& comm, std::initializer_list<size_t> counts) {
  std::mt19937 gen(77 + comm.rank());
  std::uniform_real_distribution<float> dist(-50.0f, 50.0f);
  const double scale = 1.0 / (comm.size() + 1);  // rounds, whatever the size
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kInt32}) {
    const size_t elem = runtime::DataTypeSize(dtype);
    for (size_t count : counts) {
      std::vector<char> input(count * elem);
      for (size_t i = 0; i < count; ++i) Store(dtype, input.data(), i, std::round(dist(gen)));
      std::vector<char> after = input, folded = input, pieces = input;
      CHILD_OK(comm.Allreduce(after.data(), static_cast<int64_t>(count), dtype, ReduceOp::kSum));
      runtime::ScaleBuffer(after.data(), static_cast<int64_t>(count), dtype, scale);
      CHILD_OK(comm.AllreduceScaled(folded.data(), static_cast<int64_t>(count), dtype,
                                    ReduceOp::kSum, scale));
      CHILD_CHECK(folded == after, "%s x%zu: AllreduceScaled differs from scaling after",
                  runtime::DataTypeName(dtype), count);
      const size_t first = count / 3;
      const runtime::AllreducePiece two[] = {
          {pieces.data(), pieces.data(), static_cast<int64_t>(first)},
          {pieces.data() + first * elem, pieces.data() + first * elem,
           static_cast<int64_t>(count - first)}};
      CHILD_OK(comm.AllreducePiecesScaled(two, dtype, ReduceOp::kSum, scale));
      CHILD_CHECK(pieces == after, "%s x%zu: AllreducePiecesScaled differs from scaling after",
                  runtime::DataTypeName(dtype), count);
      // The reducescatter's segments (uneven: the last member gets the remainder), scaled by the
      // ring's last step or after the direct exchange's reduction.
      std::vector<int64_t> counts_per_rank(comm.size(), static_cast<int64_t>(count) / comm.size());
      counts_per_rank.back() += static_cast<int64_t>(count) % comm.size();
      const int64_t mine = counts_per_rank[comm.rank()];
      std::vector<char> rs_after(mine * elem + 1, 'x'), rs_folded(rs_after), rs_pieces(rs_after);
      CHILD_OK(comm.ReduceScatter(input.data(), rs_after.data(), counts_per_rank, dtype,
                                  ReduceOp::kSum));
      runtime::ScaleBuffer(rs_after.data(), mine, dtype, scale);
      CHILD_OK(comm.ReduceScatterScaled(input.data(), rs_folded.data(), counts_per_rank, dtype,
                                        ReduceOp::kSum, scale));
      CHILD_CHECK(rs_folded == rs_after, "%s x%zu: ReduceScatterScaled differs from scaling after",
                  runtime::DataTypeName(dtype), count);
      const runtime::AllreducePiece in_two[] = {
          {input.data(), nullptr, static_cast<int64_t>(first)},
          {input.data() + first * elem, nullptr, static_cast<int64_t>(count - first)}};
      CHILD_OK(comm.ReduceScatterPiecesScaled(in_two, rs_pieces.data(), counts_per_rank, dtype,
                                              ReduceOp::kSum, scale));
      CHILD_CHECK(rs_pieces == rs_after,
                  "%s x%zu: ReduceScatterPiecesScaled differs from scaling after",
                  runtime::DataTypeName(dtype), count);
    }
  }
  return 0;
}

// BitwiseAnd/BitwiseOr of `words` words where rank r clears / sets bit (i + r) % 64 of word i.
int CheckBitwiseAndOr(Communicator& comm, size_t words) {
  std::vector<uint64_t> a(words), o(words);
  for (size_t i = 0; i < words; ++i) {
    a[i] = ~(uint64_t{1} << ((i + comm.rank()) % 64));
    o[i] = uint64_t{1} << ((i + comm.rank()) % 64);
  }
  CHILD_OK(comm.BitwiseAnd(&a));
  CHILD_OK(comm.BitwiseOr(&o));
  for (size_t i = 0; i < words; ++i) {
    uint64_t bits = 0;
    for (int r = 0; r < comm.size(); ++r) bits |= uint64_t{1} << ((i + r) % 64);
    CHILD_CHECK(a[i] == ~bits && o[i] == bits, "bitwise word %zu", i);
  }
  return 0;
}

// The negotiation's AND round with a small allreduce riding along (controller.h, "Eager"):
// head words ANDed, the tail reduced with the op, in one collective, for every dtype and op
// and odd counts (the tail ends mid-word: the padding must not disturb anything); then a
// layout that does not fit is refused with the sizes named.
int CheckBitwiseAndWithAllreduce(Communicator& comm) {
  constexpr size_t kHead = 3;
  for (size_t count : {size_t{1}, size_t{5}, size_t{1000}}) {
    for (DataType dtype : kAllTypes) {
      for (ReduceOp op : kAllOps) {
        const size_t bytes = count * runtime::DataTypeSize(dtype);
        std::vector<uint64_t> words(kHead + (bytes + 7) / 8, 0);
        for (size_t i = 0; i < kHead; ++i) words[i] = ~(uint64_t{1} << ((i + comm.rank()) % 64));
        for (size_t i = 0; i < count; ++i)
          Store(dtype, &words[kHead], i, Value(dtype, comm.rank(), i));
        CHILD_OK(
            comm.BitwiseAndWithAllreduce(words, kHead, static_cast<int64_t>(count), dtype, op));
        for (size_t i = 0; i < kHead; ++i) {
          uint64_t bits = 0;
          for (int r = 0; r < comm.size(); ++r) bits |= uint64_t{1} << ((i + r) % 64);
          CHILD_CHECK(words[i] == ~bits, "and word %zu with %s %s", i, runtime::DataTypeName(dtype),
                      runtime::ReduceOpName(op));
        }
        for (size_t i = 0; i < count; ++i) {
          const double want = Expected(dtype, op, comm.size(), i);
          const double got = Load(dtype, &words[kHead], i);
          CHILD_CHECK(got == want, "%s %s count %zu element %zu: got %g want %g",
                      runtime::DataTypeName(dtype), runtime::ReduceOpName(op), count, i, got, want);
        }
        if (int rc = SameEverywhere(comm, words.data(), words.size() * 8, "and with allreduce")) {
          return rc;
        }
      }
    }
  }
  std::vector<uint64_t> small(4);
  const Status st = comm.BitwiseAndWithAllreduce(small, 2, 5, DataType::kFloat32, ReduceOp::kSum);
  CHILD_CHECK(
      st.code() == StatusCode::kInvalidArgument &&
          st.message().find("4 words cannot hold 2 words and 20 bytes") != std::string::npos,
      "bad layout: %s", st.ToString().c_str());
  return 0;
}

// Where the communicator says a riding allreduce reduces as its own (rides_allreduce_as_own:
// the controller lets a lone op ride only then), it gives the same bits as the op's own
// rounds, in float32 and float16 sums of random values; `expect_large` is what it must answer
// for 1000 float32s (8 KiB-32 KiB ride only where halving-doubling cannot take them: until
// 2026-12-02 they rode recursive doubling whatever the own rounds were).
int CheckRidesAsOwn(Communicator& comm, bool expect_large) {
  CHILD_CHECK(comm.rides_allreduce_as_own(1, DataType::kFloat32), "one element must ride");
  CHILD_CHECK(comm.rides_allreduce_as_own(1000, DataType::kFloat32) == expect_large,
              "1000 float32s ride: %d", !expect_large);
  CHILD_CHECK(!comm.rides_allreduce_as_own(1 << 20, DataType::kFloat32), "4 MiB rides");
  std::mt19937 gen(4321 + comm.rank());
  std::normal_distribution<float> dist(0.0f, 100.0f);
  constexpr size_t kHead = 2;
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16}) {
    for (size_t count : {size_t{3}, size_t{1000}, size_t{2047}, size_t{4100}, size_t{8200}}) {
      if (!comm.rides_allreduce_as_own(static_cast<int64_t>(count), dtype)) continue;
      const size_t bytes = count * runtime::DataTypeSize(dtype);
      std::vector<char> own(bytes);
      for (size_t i = 0; i < count; ++i) Store(dtype, own.data(), i, dist(gen));
      std::vector<uint64_t> words(kHead + (bytes + 7) / 8, ~uint64_t{0});
      std::memcpy(&words[kHead], own.data(), bytes);
      CHILD_OK(comm.Allreduce(own.data(), static_cast<int64_t>(count), dtype, ReduceOp::kSum));
      CHILD_OK(comm.BitwiseAndWithAllreduce(words, kHead, static_cast<int64_t>(count), dtype,
                                            ReduceOp::kSum));
      CHILD_CHECK(std::memcmp(&words[kHead], own.data(), bytes) == 0,
                  "%s x %zu: the ride's bits differ from the own allreduce's",
                  runtime::DataTypeName(dtype), count);
    }
  }
  return 0;
}

class TcpCollectives : public ::testing::TestWithParam<int> {};

TEST_P(TcpCollectives, AllreduceEveryTypeAndOpMatchesKnownValues) {
  // Given N ranks with known small-integer inputs
  TcpJob job(TcpJobOptions(GetParam()));
  ASSERT_TRUE(job.error().empty()) << job.error();
  auto outcomes = job.Run([](Communicator& comm) {
    // 1 and 5 elements: direct (n = 2) or recursive doubling; 7001 / 40009 elements: doubling
    // or the ring for wider types, uneven. When every rank allreduces, then every element is
    // the rank-order reduction.
    if (int rc = CheckAllreduceKnownValues(comm, {1, 5, 7001, 40009}, kAllOps)) return rc;
    CHILD_OK(comm.Allreduce(nullptr, 0, DataType::kFloat32, ReduceOp::kSum));
    return CheckScaledEqualsScalingAfter(comm, {1, 5, 7001, 40009, 300007});
  });
  EXPECT_TRUE(job.error().empty()) << job.error() << " " << Describe(outcomes);
}

TEST_P(TcpCollectives, FloatResultsAreBitIdenticalOnEveryRank) {
  // Given random floats, whose sum depends on the order of additions
  TcpJob job(TcpJobOptions(GetParam()));
  ASSERT_TRUE(job.error().empty()) << job.error();
  auto outcomes = job.Run([](Communicator& comm) {
    return CheckBitIdenticalSums(comm, {3, 1000, 262147});
  });
  EXPECT_TRUE(job.error().empty()) << job.error() << " " << Describe(outcomes);
}

TEST_P(TcpCollectives, LargeAllreduceAndReduceScatter) {
  TcpJob job(TcpJobOptions(GetParam()));
  ASSERT_TRUE(job.error().empty()) << job.error();
  auto outcomes = job.Run([](Communicator& comm) {
    const int n = comm.size();
    // 16 MiB + an odd tail of float32, summed: element i is sum_r (r + i % 1000).
    const size_t count = (size_t{4} << 20) + 13;
    std::vector<float> buf(count);
    for (size_t i = 0; i < count; ++i) buf[i] = static_cast<float>(comm.rank() + i % 1000);
    CHILD_OK(comm.Allreduce(buf.data(), static_cast<int64_t>(count), DataType::kFloat32,
                            ReduceOp::kSum));
    for (size_t i = 0; i < count; ++i) {
      const float want = static_cast<float>(n * (n - 1) / 2 + n * static_cast<int>(i % 1000));
      CHILD_CHECK(buf[i] == want, "element %zu: got %g want %g", i, buf[i], want);
    }
    // Reduce-scatter, uneven (one rank gets nothing), small (direct) and large (ring).
    for (int64_t scale : {int64_t{1}, int64_t{50000}}) {
      std::vector<int64_t> counts(n);
      int64_t total = 0;
      for (int r = 0; r < n; ++r) total += counts[r] = (r == 1 ? 0 : (r + 3) * scale + r);
      std::vector<int32_t> in(total);
      for (int64_t i = 0; i < total; ++i)
        in[i] = static_cast<int32_t>((i * 7 + comm.rank()) % 1001);
      std::vector<int32_t> out(counts[comm.rank()] + 1, -5);
      CHILD_OK(comm.ReduceScatter(in.data(), out.data(), counts, DataType::kInt32, ReduceOp::kMax));
      int64_t off = 0;
      for (int r = 0; r < comm.rank(); ++r) off += counts[r];
      for (int64_t i = 0; i < counts[comm.rank()]; ++i) {
        int32_t want = 0;
        for (int r = 0; r < n; ++r)
          want = std::max(want, static_cast<int32_t>(((off + i) * 7 + r) % 1001));
        CHILD_CHECK(out[i] == want, "reducescatter scale %ld element %ld: got %d want %d",
                    static_cast<long>(scale), static_cast<long>(i), out[i], want);
      }
      CHILD_CHECK(out[counts[comm.rank()]] == -5, "reducescatter wrote past its part");
    }
    return 0;
  });
  EXPECT_TRUE(job.error().empty()) << job.error() << " " << Describe(outcomes);
}

// A fused allreduce in place (AllreducePieces: the ring over the tensors themselves, the
// packed path for small totals and for joined ranks' holes) gives the packed allreduce's bits.
TEST_P(TcpCollectives, AllreducePiecesEqualPackedAllreduce) {
  TcpJob job(TcpJobOptions(GetParam()));
  ASSERT_TRUE(job.error().empty()) << job.error();
  auto outcomes = job.Run(CheckAllreducePiecesMatchPacked);
  EXPECT_TRUE(job.error().empty()) << job.error() << " " << Describe(outcomes);
}

// The Communicator's packing defaults of ReduceScatterPieces and AllgatherPieces.
TEST_P(TcpCollectives, ReduceScatterAndAllgatherOfPiecesEqualPacked) {
  TcpJob job(TcpJobOptions(GetParam()));
  ASSERT_TRUE(job.error().empty()) << job.error();
  auto outcomes = job.Run(CheckScatterGatherPiecesMatchPacked);
  EXPECT_TRUE(job.error().empty()) << job.error() << " " << Describe(outcomes);
}

TEST_P(TcpCollectives, BroadcastAllgatherAlltoallAndControlOps) {
  TcpJob job(TcpJobOptions(GetParam()));
  ASSERT_TRUE(job.error().empty()) << job.error();
  auto outcomes = job.Run([](Communicator& comm) {
    const int n = comm.size();
    const int me = comm.rank();
    // Broadcast: small (direct) and 3 MB (chain for n > 2), from the last and the first rank.
    for (size_t bytes : {size_t{100}, size_t{3'000'001}}) {
      for (int root : {n - 1, 0}) {
        std::vector<uint8_t> buf(bytes, 0);
        if (me == root) {
          for (size_t i = 0; i < bytes; ++i) buf[i] = static_cast<uint8_t>(i * 13 + root);
        }
        CHILD_OK(comm.Broadcast(buf.data(), static_cast<int64_t>(bytes), root));
        for (size_t i = 0; i < bytes; ++i) {
          CHILD_CHECK(buf[i] == static_cast<uint8_t>(i * 13 + root), "broadcast byte %zu", i);
        }
      }
    }
    // Allgatherv: uneven, rank 1 empty; small and large (ring for n > 2).
    for (int64_t scale : {int64_t{1}, int64_t{300000}}) {
      std::vector<int64_t> parts(n);
      int64_t total = 0;
      for (int r = 0; r < n; ++r) total += parts[r] = (r == 1 ? 0 : (r + 1) * scale + 17);
      std::vector<uint8_t> mine(parts[me]);
      for (size_t i = 0; i < mine.size(); ++i) mine[i] = static_cast<uint8_t>(i + 31 * me);
      std::vector<uint8_t> out(total);
      CHILD_OK(comm.Allgatherv(mine.data(), out.data(), parts));
      int64_t off = 0;
      for (int r = 0; r < n; ++r) {
        for (int64_t i = 0; i < parts[r]; ++i) {
          CHILD_CHECK(out[off + i] == static_cast<uint8_t>(i + 31 * r), "allgather part %d", r);
        }
        off += parts[r];
      }
    }
    // Alltoallv: rank a sends (a+1)*(b+2)*k bytes to b.
    for (int64_t k : {int64_t{10}, int64_t{20000}}) {
      std::vector<int64_t> send(n), recv(n);
      int64_t stotal = 0, rtotal = 0;
      for (int j = 0; j < n; ++j) {
        stotal += send[j] = (me + 1) * (j + 2) * k;
        rtotal += recv[j] = (j + 1) * (me + 2) * k;
      }
      std::vector<uint8_t> in(stotal), out(rtotal);
      int64_t off = 0;
      for (int j = 0; j < n; ++j) {
        for (int64_t i = 0; i < send[j]; ++i) in[off + i] = static_cast<uint8_t>(me * 16 + j + i);
        off += send[j];
      }
      CHILD_OK(comm.Alltoallv(in.data(), send, out.data(), recv));
      off = 0;
      for (int j = 0; j < n; ++j) {
        for (int64_t i = 0; i < recv[j]; ++i) {
          CHILD_CHECK(out[off + i] == static_cast<uint8_t>(j * 16 + me + i), "alltoall from %d", j);
        }
        off += recv[j];
      }
    }
    // Byte strings: empty, small and 1 MB, gathered at rank 1 % n; broadcast from the last.
    for (size_t len : {size_t{0}, size_t{3}, size_t{1} << 20}) {
      const int root = 1 % n;
      std::string mine(len * me, static_cast<char>('a' + me));
      std::vector<std::string> all;
      CHILD_OK(comm.GatherBytes(mine, root, &all));
      if (me == root) {
        CHILD_CHECK(static_cast<int>(all.size()) == n, "gather size %zu", all.size());
        for (int r = 0; r < n; ++r) {
          CHILD_CHECK(all[r] == std::string(len * r, static_cast<char>('a' + r)), "gather %d", r);
        }
      }
      std::string data = me == n - 1 ? std::string(len * 2, 'z') : std::string("stale");
      CHILD_OK(comm.BroadcastBytes(&data, n - 1));
      CHILD_CHECK(data == std::string(len * 2, 'z'), "broadcast bytes of %zu", len * 2);
    }
    // Bitwise and/or: 20 words (direct or doubling) and 6000 words (ring).
    for (size_t words : {size_t{20}, size_t{6000}}) {
      if (int rc = CheckBitwiseAndOr(comm, words)) return rc;
    }
    if (int rc = CheckBitwiseAndWithAllreduce(comm)) return rc;
    if (int rc = CheckRidesAsOwn(comm, true)) return rc;
    for (int i = 0; i < 10; ++i) CHILD_OK(comm.Barrier());
    return 0;
  });
  EXPECT_TRUE(job.error().empty()) << job.error() << " " << Describe(outcomes);
}

// Posting (a lone small broadcast, allgather, alltoall or reducescatter riding the AND round)
// from 2 members: the direct allgather of every member's words and input; and posting an
// alltoall's or reducescatter's pieces, each member only its own.
TEST_P(TcpCollectives, CollectivesFromPostedInputs) {
  TcpJob job(TcpJobOptions(GetParam()));
  ASSERT_TRUE(job.error().empty()) << job.error();
  auto outcomes = job.Run([](Communicator& comm) {
    if (CheckPostedInputs(comm, true) != 0 || CheckPostedPieces(comm, true) != 0) return 1;
    // The direct reduce-scatter's bits are the posted inputs' (the ring's sizes are skipped:
    // a reducescatter that large is never posted).
    if (!comm.reduces_segments_in_rank_order(4096) ||
        comm.reduces_segments_in_rank_order(int64_t{1} << 20)) {
      return Fail(comm, "reduces_segments_in_rank_order: not the direct exchange's sizes");
    }
    constexpr int64_t kCounts[] = {7, 1001, 40009, 300007};
    return CheckReduceScatterInRankOrder(comm, kCounts);
  });
  EXPECT_TRUE(job.error().empty()) << job.error() << " " << Describe(outcomes);
}

// Posting's surplus bound (Communicator::PostedSurplusLimit): 12 KiB without a measurement,
// and all a group of 2 or 3 allows; a group of 4 or more measures its links for a larger
// surplus, once, giving every member the same answer, and works on after it.
int CheckPostedSurplusLimit(Communicator& comm) {
  constexpr int64_t kUnmeasured = int64_t{12} << 10;
  auto small = comm.PostedSurplusLimit(4096);
  CHILD_OK(small.status());
  CHILD_CHECK(*small == kUnmeasured, "4 KiB asked: %lld", static_cast<long long>(*small));
  int64_t limits[2];
  for (int64_t& limit : limits) {
    auto asked = comm.PostedSurplusLimit(int64_t{1} << 20);
    CHILD_OK(asked.status());
    limit = *asked;
  }
  const long long first = limits[0];
  if (comm.size() < 4) {
    CHILD_CHECK(first == kUnmeasured, "1 MiB asked of %d members: %lld", comm.size(), first);
  } else {
    CHILD_CHECK(first >= kUnmeasured, "1 MiB asked of %d members: %lld", comm.size(), first);
  }
  CHILD_CHECK(limits[1] == first, "asked again: %lld, then %lld", first,
              static_cast<long long>(limits[1]));
  if (int rc = SameEverywhere(comm, limits, sizeof(limits), "the surplus limit")) return rc;
  std::vector<float> v(1024, 1.0f);
  CHILD_OK(comm.Allreduce(v.data(), 1024, DataType::kFloat32, ReduceOp::kSum));
  CHILD_CHECK(v[0] == static_cast<float>(comm.size()), "allreduce after it: %f", v[0]);
  return 0;
}

TEST_P(TcpCollectives, PostedSurplusLimitIsTheSameOnEveryMember) {
  TcpJob job(TcpJobOptions(GetParam()));
  ASSERT_TRUE(job.error().empty()) << job.error();
  auto outcomes = job.Run(CheckPostedSurplusLimit);
  EXPECT_TRUE(job.error().empty()) << job.error() << " " << Describe(outcomes);
}

INSTANTIATE_TEST_SUITE_P(Sizes, TcpCollectives, ::testing::Values(2, 3, 4));

// Posting in larger groups: 8 gathers by recursive doubling over three partners, 5 (not a power
// of two) by the direct exchange.
class TcpPosting : public ::testing::TestWithParam<int> {};

TEST_P(TcpPosting, CollectivesFromPostedInputs) {
  TcpJob job(TcpJobOptions(GetParam()));
  ASSERT_TRUE(job.error().empty()) << job.error();
  auto outcomes = job.Run([](Communicator& comm) {
    if (CheckPostedInputs(comm, true) != 0 || CheckPostedPieces(comm, true) != 0) return 1;
    return CheckPostedSurplusLimit(comm);
  });
  EXPECT_TRUE(job.error().empty()) << job.error() << " " << Describe(outcomes);
}

INSTANTIATE_TEST_SUITE_P(Sizes, TcpPosting, ::testing::Values(5, 8));

// min/max keep their first operand when either is NaN: the same bits on every rank need each
// partial result combined in one order. `width` x n floats, each rank's NaNs at two places.
int CheckNanMinMaxSameEverywhere(Communicator& comm, int width) {
  const int n = comm.size();
  for (ReduceOp op : {ReduceOp::kMin, ReduceOp::kMax}) {
    std::vector<float> v(static_cast<size_t>(width) * n, static_cast<float>(comm.rank()));
    v[comm.rank()] = std::nanf("");
    v[n + (comm.rank() + 1) % n] = std::nanf("");
    CHILD_OK(comm.Allreduce(v.data(), static_cast<int64_t>(v.size()), DataType::kFloat32, op));
    if (int rc = SameEverywhere(comm, v.data(), v.size() * sizeof(float), "min/max with NaN")) {
      return rc;
    }
  }
  return 0;
}

// Recursive doubling with ranks beyond the largest power of two (6 = 4 + 2 and 7 = 4 + 3
// folded into a neighbour before the doubling rounds and served after them): known values for
// every dtype and op, the same bits on every rank, the negotiation's bitwise ops, and the
// direct reduce-scatter beside it.
class TcpFoldedDoubling : public ::testing::TestWithParam<int> {};

TEST_P(TcpFoldedDoubling, SmallAllreducesAndBitwiseOpsAreRightOnEveryRank) {
  TcpJob job(TcpJobOptions(GetParam()));
  ASSERT_TRUE(job.error().empty()) << job.error();
  auto outcomes = job.Run([](Communicator& comm) {
    if (int rc = CheckAllreduceKnownValues(comm, {1, 5, 7001}, kAllOps)) return rc;
    if (int rc = CheckBitIdenticalSums(comm, {3, 1000, 60000})) return rc;
    if (int rc = CheckNanMinMaxSameEverywhere(comm, 2)) return rc;
    if (int rc = CheckBitwiseAndOr(comm, 20)) return rc;
    if (int rc = CheckRidesAsOwn(comm, true)) return rc;
    return CheckBitwiseAndWithAllreduce(comm);
  });
  EXPECT_TRUE(job.error().empty()) << job.error() << " " << Describe(outcomes);
}

INSTANTIATE_TEST_SUITE_P(Sizes, TcpFoldedDoubling, ::testing::Values(6, 7));

// Rabenseifner's halving-doubling (HVD_TCP_HALVING_BYTES=0: every allreduce that would take
// recursive doubling, from as few elements as there are doubling ranks): 4 and 8 ranks, 6 and
// 7 (4 + 2 and 4 + 3 folded in first), known values for every dtype and op, the same bits on every
// rank (NaN min/max included: each partial result is formed by one rank), bitwise ops.
class TcpHalvingDoubling : public ::testing::TestWithParam<int> {};

TEST_P(TcpHalvingDoubling, AllreducesAreRightAndTheSameOnEveryRank) {
  TcpJob::Options options = TcpJobOptions(GetParam());
  options.halving_bytes = 0;
  TcpJob job(options);
  ASSERT_TRUE(job.error().empty()) << job.error();
  auto outcomes = job.Run([](Communicator& comm) {
    // Products of 8 ranks' values overflow int8, which the known values do not model.
    const int rc = comm.size() < 8 ? CheckAllreduceKnownValues(comm, {1, 5, 7001, 40009}, kAllOps)
                                   : CheckAllreduceKnownValues(
                                         comm, {1, 8, 7001, 40009},
                                         {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax});
    if (rc != 0) return rc;
    if (int rc = CheckBitIdenticalSums(comm, {3, 1000, 60000})) return rc;
    if (int rc = CheckScaledEqualsScalingAfter(comm, {8, 1000, 60001})) return rc;
    const int n = comm.size();
    if (int rc = CheckNanMinMaxSameEverywhere(comm, 4)) return rc;
    if (int rc = CheckBitwiseAndOr(comm, 20)) return rc;
    if (int rc = CheckRidesAsOwn(comm, false)) return rc;
    // (The eager round takes recursive doubling whatever the setting; its check's products
    // overflow int8 at 8 ranks too.)
    return n < 8 ? CheckBitwiseAndWithAllreduce(comm) : 0;
  });
  EXPECT_TRUE(job.error().empty()) << job.error() << " " << Describe(outcomes);
}

INSTANTIATE_TEST_SUITE_P(Sizes, TcpHalvingDoubling, ::testing::Values(4, 6, 7, 8));

}  // namespace
}  // namespace hvd::test
