#include "test/multiproc/pieces_check.h"

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "test/multiproc/known_values.h"
#include "test/multiproc/rank_fail.h"

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
  // Fractions in [-2, 2) and integers in [0, 3] straight from the 32-bit draws: the standard
  // real distribution costs a long-double log per draw in the sanitizer builds (-O1), a fifth
  // of these checks' time under ASan.
  const auto real = [&gen] { return static_cast<double>(gen()) * (4.0 / 4294967296.0) - 2.0; };
  const auto small = [&gen] { return static_cast<int>(gen() >> 30); };
  const bool is_float = dtype == DataType::kFloat16 || dtype == DataType::kBFloat16 ||
                        dtype == DataType::kFloat32 || dtype == DataType::kFloat64;
  int64_t total = 0;
  for (int64_t c : layout.counts) total += c;
  std::vector<char> out(static_cast<size_t>(total) * runtime::DataTypeSize(dtype));
  int64_t at = 0;
  for (size_t p = 0; p < layout.counts.size(); ++p) {
    const bool hole = layout.holes && p == 1 && rank == 1;
    for (int64_t i = 0; i < layout.counts[p]; ++i, ++at) {
      const double v = hole ? 0.0 : is_float ? real() : small();
      Store(dtype, out.data(), static_cast<size_t>(at), v);
    }
  }
  return out;
}

// One piece; many small ones; pieces across the transports' small-message and chunk limits;
// empty pieces; with holes and without.
std::vector<Layout> AllLayouts() {
  return {{{7}, false},
          {std::vector<int64_t>(100, 17), false},
          {std::vector<int64_t>(100, 17), true},
          {{5, 70001, 3, 0, 40000}, false},
          {{5, 70001, 3, 0, 40000}, true},
          {{0, 1, 0, 9000, 9000, 1}, true},
          {{600000, 2, 33333}, false}};
}

// AllLayouts() of at most `max_elements` elements in total.
std::vector<Layout> Layouts(int64_t max_elements) {
  std::vector<Layout> out;
  for (Layout& layout : AllLayouts()) {
    int64_t total = 0;
    for (int64_t c : layout.counts) total += c;
    if (total <= max_elements) out.push_back(std::move(layout));
  }
  return out;
}

// `layout` as pieces over `ins` (the inputs, copied from `packed`) and `outs` (outputs filled
// with 0x5a): even pieces in place, odd ones into `outs`; with holes, piece 1 has no input on
// rank 1 and the last piece's result is dropped.
std::vector<AllreducePiece> MakePieces(const Layout& layout, int rank, size_t elem,
                                       const std::vector<char>& packed,
                                       std::vector<std::vector<char>>* ins,
                                       std::vector<std::vector<char>>* outs) {
  const size_t n = layout.counts.size();
  ins->assign(n, {});
  outs->assign(n, {});
  std::vector<AllreducePiece> pieces(n);
  size_t at = 0;
  for (size_t i = 0; i < n; ++i) {
    const size_t bytes = static_cast<size_t>(layout.counts[i]) * elem;
    (*ins)[i].assign(packed.begin() + at, packed.begin() + at + bytes);
    (*outs)[i].assign(bytes, '\x5a');
    const bool no_input = layout.holes && i == 1 && rank == 1;
    pieces[i] = {no_input ? nullptr : (*ins)[i].data(),
                 i % 2 == 0 ? (*ins)[i].data() : (*outs)[i].data(), layout.counts[i]};
    if (layout.holes && i + 1 == n) pieces[i].out = nullptr;
    at += bytes;
  }
  return pieces;
}

}  // namespace

int CheckAllreducePiecesMatchPacked(runtime::Communicator& comm) {
  return CheckAllreducePiecesMatchPackedUpTo(comm, INT64_MAX);
}

int CheckAllreducePiecesMatchPackedUpTo(runtime::Communicator& comm, int64_t max_elements) {
  if (!comm.allreduces_pieces()) return Fail(comm, std::string(comm.name()) + " has no pieces");
  const std::vector<Layout> layouts = Layouts(max_elements);
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
        // Sums scaled as Average scales them (1/n), the same scale for the packed allreduce
        const double scale = op == ReduceOp::kSum ? 1.0 / comm.size() : 1.0;
        Status s = comm.AllreduceScaled(expected.data(), total, dtype, op, scale);
        const std::string what =
            std::string(runtime::DataTypeName(dtype)) + " " + runtime::ReduceOpName(op) + " x" +
            std::to_string(total) + " in " + std::to_string(n) + " pieces" +
            (layout.holes ? " with holes" : "") + (scale != 1.0 ? " scaled" : "");
        if (!s.ok()) return Fail(comm, what + ": packed allreduce: " + s.ToString());
        // Even pieces are reduced in place, odd ones into a separate output.
        std::vector<std::vector<char>> ins, outs;
        const std::vector<AllreducePiece> pieces =
            MakePieces(layout, comm.rank(), elem, mine, &ins, &outs);
        s = comm.AllreducePiecesScaled(pieces, dtype, op, scale);
        if (!s.ok()) return Fail(comm, what + ": " + s.ToString());
        int64_t at = 0;
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
  // A piece with a negative count is refused, saying so.
  std::vector<float> some(4);
  const AllreducePiece bad[] = {{some.data(), some.data(), 4}, {some.data(), some.data(), -1}};
  const Status refused = comm.AllreducePieces(bad, DataType::kFloat32, ReduceOp::kSum);
  if (refused.code() != StatusCode::kInvalidArgument ||
      refused.message().find("a piece has a negative count") == std::string::npos) {
    return Fail(comm, "pieces of 4 and -1 elements: " + refused.ToString());
  }
  return 0;
}

int CheckScatterGatherPiecesMatchPacked(runtime::Communicator& comm) {
  return CheckScatterGatherPiecesMatchPackedUpTo(comm, INT64_MAX);
}

int CheckScatterGatherPiecesMatchPackedUpTo(runtime::Communicator& comm, int64_t max_elements) {
  const int n = comm.size(), me = comm.rank();
  uint32_t seed = 7000;
  for (DataType dtype :
       {DataType::kFloat32, DataType::kFloat16, DataType::kInt64, DataType::kUInt8}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin}) {
      for (const Layout& layout : Layouts(max_elements)) {
        for (bool even : {true, false}) {
          ++seed;
          const size_t elem = runtime::DataTypeSize(dtype);
          int64_t total = 0;
          for (int64_t c : layout.counts) total += c;
          // Even: the hierarchy's split; uneven: rank k gets (k + 1) shares, rank 1 none.
          std::vector<int64_t> counts(n);
          int64_t shares = 0;
          for (int k = 0; k < n; ++k) shares += even ? 1 : (k == 1 ? 0 : k + 1);
          int64_t given = 0;
          for (int k = 0; k < n; ++k) {
            const int64_t mine_shares = even ? 1 : (k == 1 ? 0 : k + 1);
            counts[k] = k + 1 == n ? total - given : total * mine_shares / shares;
            given += counts[k];
          }
          const std::string what =
              std::string(runtime::DataTypeName(dtype)) + " " + runtime::ReduceOpName(op) + " x" +
              std::to_string(total) + " in " + std::to_string(layout.counts.size()) + " pieces" +
              (layout.holes ? " with holes" : "") + (even ? ", even split" : ", uneven split");
          // Reduce-scatter: the pieces' inputs against the packed input.
          const std::vector<char> mine = Packed(dtype, layout, me, seed);
          std::vector<char> expected(static_cast<size_t>(counts[me]) * elem + 1, '\x33');
          Status s = comm.ReduceScatter(mine.data(), expected.data(), counts, dtype, op);
          if (!s.ok()) return Fail(comm, what + ": packed reducescatter: " + s.ToString());
          std::vector<std::vector<char>> ins, outs;
          std::vector<AllreducePiece> pieces = MakePieces(layout, me, elem, mine, &ins, &outs);
          std::vector<char> got(expected.size(), '\x33');
          s = comm.ReduceScatterPieces(pieces, got.data(), counts, dtype, op);
          if (!s.ok()) return Fail(comm, what + ": reducescatter: " + s.ToString());
          if (got != expected) return Fail(comm, what + ": reducescatter differs from packed");
          // Scaled (Average's 1/n): the pieces' as the packed input's.
          const double scale = 1.0 / n;
          s = comm.ReduceScatterScaled(mine.data(), expected.data(), counts, dtype, op, scale);
          if (!s.ok()) return Fail(comm, what + ": packed reducescatter scaled: " + s.ToString());
          s = comm.ReduceScatterPiecesScaled(pieces, got.data(), counts, dtype, op, scale);
          if (!s.ok()) return Fail(comm, what + ": reducescatter scaled: " + s.ToString());
          if (got != expected) {
            return Fail(comm, what + ": reducescatter scaled differs from packed");
          }
          size_t at = 0;
          for (size_t i = 0; i < ins.size(); ++i) {
            // (an empty piece's data() may be null, which memcmp must not be given)
            if (!ins[i].empty() &&
                std::memcmp(ins[i].data(), mine.data() + at, ins[i].size()) != 0) {
              return Fail(comm, what + ": reducescatter wrote input " + std::to_string(i));
            }
            at += ins[i].size();
          }
          // Allgather: this rank's part is the first counts[me] elements of its packed input.
          std::vector<int64_t> bytes(n);
          for (int k = 0; k < n; ++k) bytes[k] = counts[k] * static_cast<int64_t>(elem);
          std::vector<char> gathered(static_cast<size_t>(total) * elem);
          s = comm.Allgatherv(mine.data(), gathered.data(), bytes);
          if (!s.ok()) return Fail(comm, what + ": packed allgather: " + s.ToString());
          const std::vector<char> part(mine.begin(), mine.begin() + bytes[me]);
          const std::vector<char> zeros(mine.size(), 0);
          pieces = MakePieces(layout, me, elem, zeros, &ins, &outs);
          s = comm.AllgatherPieces(part.data(), pieces, counts, dtype);
          if (!s.ok()) return Fail(comm, what + ": allgather: " + s.ToString());
          at = 0;
          for (size_t i = 0; i < pieces.size(); ++i) {
            const size_t len = ins[i].size();
            const std::string piece = what + ": allgather piece " + std::to_string(i);
            const std::vector<char>& dst = i % 2 == 0 ? ins[i] : outs[i];
            if (pieces[i].out != nullptr) {
              if (std::memcmp(dst.data(), gathered.data() + at, len) != 0) {
                return Fail(comm, piece + " differs from the packed allgather");
              }
            } else if (dst !=
                       (i % 2 == 0 ? std::vector<char>(len, 0) : std::vector<char>(len, '\x5a'))) {
              return Fail(comm, piece + " was dropped but written");
            }
            at += len;
          }
        }
      }
    }
  }
  // Pieces that do not hold the per-rank counts' total are refused, naming both sizes.
  std::vector<float> a(10), b(10);
  const AllreducePiece short_piece{a.data(), a.data(), 7};
  const std::vector<int64_t> counts(n, 3);
  const std::string sizes[] = {"7", std::to_string(3 * n)};
  for (int call = 0; call < 2; ++call) {
    const Status s = call == 0
                         ? comm.ReduceScatterPieces(std::span(&short_piece, 1), b.data(), counts,
                                                    DataType::kFloat32, ReduceOp::kSum)
                         : comm.AllgatherPieces(b.data(), std::span(&short_piece, 1), counts,
                                                DataType::kFloat32);
    const std::string what = call == 0 ? "reducescatter" : "allgather";
    if (s.code() != StatusCode::kInvalidArgument ||
        s.message().find(sizes[0]) == std::string::npos ||
        s.message().find(sizes[1]) == std::string::npos) {
      return Fail(comm, what + " of 7 elements into counts of " + sizes[1] + ": " + s.ToString());
    }
  }
  return 0;
}

}  // namespace hvd::test
