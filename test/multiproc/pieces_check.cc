#include "test/multiproc/pieces_check.h"

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "test/multiproc/known_values.h"

namespace hvd::test {
namespace {

using runtime::AllreducePiece;
using runtime::DataType;
using runtime::ReduceOp;

struct Layout {
  std::vector<int64_t> counts;
  bool holes;  // piece 1 has no input on rank 1, the last piece's result is dropped
};

// Rank `rank`'s packed input of one case: random fractions for floats (so a different
// reduction order would show), small integers otherwise; zeros where `hole` says.
std::vector<char> Packed(DataType dtype, const Layout& layout, int rank, uint32_t seed) {
  std::mt19937 gen(seed * 7919u + static_cast<uint32_t>(rank) * 104729u + 3u);
  std::uniform_real_distribution<double> real(-2.0, 2.0);
  std::uniform_int_distribution<int> small(0, 3);
  const bool is_float = dtype == DataType::kFloat16 || dtype == DataType::kBFloat16 ||
                        dtype == DataType::kFloat32 || dtype == DataType::kFloat64;
  int64_t total = 0;
  for (int64_t c : layout.counts) total += c;
  std::vector<char> out(static_cast<size_t>(total) * runtime::DataTypeSize(dtype));
  int64_t at = 0;
  for (size_t p = 0; p < layout.counts.size(); ++p) {
    const bool hole = layout.holes && p == 1 && rank == 1;
    for (int64_t i = 0; i < layout.counts[p]; ++i, ++at) {
      const double v = hole ? 0.0 : is_float ? real(gen) : small(gen);
      Store(dtype, out.data(), static_cast<size_t>(at), v);
    }
  }
  return out;
}

int Fail(const runtime::Communicator& comm, const std::string& what) {
  std::fprintf(stderr, "rank %d: %s\n", comm.rank(), what.c_str());
  return 1;
}

}  // namespace

int CheckAllreducePiecesMatchPacked(runtime::Communicator& comm) {
  if (!comm.allreduces_pieces()) return Fail(comm, std::string(comm.name()) + " has no pieces");
  const std::vector<Layout> layouts = {{{7}, false},
                                       {std::vector<int64_t>(100, 17), false},
                                       {std::vector<int64_t>(100, 17), true},
                                       {{5, 70001, 3, 0, 40000}, false},
                                       {{5, 70001, 3, 0, 40000}, true},
                                       {{0, 1, 0, 9000, 9000, 1}, true},
                                       {{600000, 2, 33333}, false}};
  uint32_t seed = 9000;
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16,
                         DataType::kInt64, DataType::kUInt8}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kProduct}) {
      for (const Layout& layout : layouts) {
        ++seed;
        const size_t elem = runtime::DataTypeSize(dtype);
        const size_t n = layout.counts.size();
        int64_t total = 0;
        for (int64_t c : layout.counts) total += c;
        const std::vector<char> mine = Packed(dtype, layout, comm.rank(), seed);
        std::vector<char> expected = mine;
        Status s = comm.Allreduce(expected.data(), total, dtype, op);
        const std::string what = std::string(runtime::DataTypeName(dtype)) + " " +
                                 runtime::ReduceOpName(op) + " x" + std::to_string(total) + " in " +
                                 std::to_string(n) + " pieces" +
                                 (layout.holes ? " with holes" : "");
        if (!s.ok()) return Fail(comm, what + ": packed allreduce: " + s.ToString());
        // Even pieces are reduced in place, odd ones into a separate output.
        std::vector<std::vector<char>> ins(n), outs(n);
        std::vector<AllreducePiece> pieces(n);
        int64_t at = 0;
        for (size_t i = 0; i < n; ++i) {
          const size_t bytes = static_cast<size_t>(layout.counts[i]) * elem;
          ins[i].assign(mine.begin() + at * elem, mine.begin() + at * elem + bytes);
          outs[i].assign(bytes, '\x5a');
          const bool no_input = layout.holes && i == 1 && comm.rank() == 1;
          pieces[i] = {no_input ? nullptr : ins[i].data(),
                       i % 2 == 0 ? ins[i].data() : outs[i].data(), layout.counts[i]};
          if (layout.holes && i + 1 == n) pieces[i].out = nullptr;
          at += layout.counts[i];
        }
        s = comm.AllreducePieces(pieces, dtype, op);
        if (!s.ok()) return Fail(comm, what + ": " + s.ToString());
        at = 0;
        for (size_t i = 0; i < n; ++i) {
          const size_t bytes = static_cast<size_t>(layout.counts[i]) * elem;
          const char* orig = mine.data() + at * elem;
          const bool in_place = i % 2 == 0;
          const std::string piece = what + ": piece " + std::to_string(i);
          at += layout.counts[i];
          if (bytes == 0) continue;
          if (pieces[i].out != nullptr) {
            const char* got = in_place ? ins[i].data() : outs[i].data();
            if (std::memcmp(got, expected.data() + (at - layout.counts[i]) * elem, bytes) != 0) {
              return Fail(comm, piece + " differs from the packed allreduce");
            }
          } else if (in_place ? std::memcmp(ins[i].data(), orig, bytes) != 0
                              : outs[i] != std::vector<char>(bytes, '\x5a')) {
            return Fail(comm, piece + " was dropped but written");
          }
          if (!in_place && pieces[i].in != nullptr && std::memcmp(ins[i].data(), orig, bytes)) {
            return Fail(comm, piece + "'s input was written");
          }
        }
      }
    }
  }
  return 0;
}

}  // namespace hvd::test
