// CheckPostedInputs (posted_check.h): the posting round and the collectives computed from it.
#include "test/multiproc/posted_check.h"

#include <algorithm>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "runtime/transports/data_type.h"
#include "test/multiproc/rank_fail.h"
#include "test/multiproc/seeded_values.h"

namespace hvd::test {
namespace {

using runtime::Communicator;
using runtime::DataType;
using runtime::ReduceOp;

}  // namespace

int CheckPostedInputs(Communicator& comm, bool offered) {
  const int n = comm.size(), me = comm.rank();
  if (comm.posts_inputs() != offered) {
    return Fail(comm, std::string("posts_inputs() is not ") + (offered ? "true" : "false"));
  }
  // Member k posts sizes[k] bytes (mine: `input`, or nothing when null) with words {all ones,
  // one bit per member}; checks the AND.
  auto post_sized = [&](const void* input, const std::vector<int64_t>& sizes,
                        const std::string& what) {
    std::vector<uint64_t> words = {~uint64_t{0}, ~(uint64_t{1} << me)};
    Status s = comm.BitwiseAndPostingInput(words, input, sizes);
    const uint64_t none_missing = ~uint64_t{0} << n;  // every member cleared its own bit
    if (!s.ok() || words[0] != ~uint64_t{0} || words[1] != none_missing) {
      return Fail(comm, what + ": posting: " + s.ToString());
    }
    return 0;
  };
  // The same, every member posting an input of this member's size.
  auto post = [&](const std::vector<char>& input, const std::string& what) {
    return post_sized(input.data(), std::vector<int64_t>(n, static_cast<int64_t>(input.size())),
                      what);
  };
  Communicator* view = comm.posted_inputs();
  if (view == nullptr || view->rank() != me || view->size() != n) {
    return Fail(comm, "no posted inputs' communicator of this group");
  }
  uint32_t seed = 100;
  for (DataType dtype : {DataType::kFloat32, DataType::kInt64, DataType::kFloat16}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
      // (70 float32 at 4 members over shared memory's 256-byte direct size: an empty slice.)
      for (int64_t count : {1, 7, 70, 1000}) {
        ++seed;
        const std::string what = "posted allreduce " + Case(dtype, op, count);
        if (post(Input(dtype, count, me, seed), what) != 0) return 1;
        std::vector<char> out(static_cast<size_t>(count) * runtime::DataTypeSize(dtype));
        Status s = view->Allreduce(out.data(), count, dtype, op);
        if (!s.ok() || out != Expected(dtype, op, count, n, seed)) {
          return Fail(comm, what + ": " + (s.ok() ? "differs from the reference" : s.ToString()));
        }
        // Scaled as Average scales (1/n: float16 sums in float before their one rounding)
        if (post(Input(dtype, count, me, seed), what) != 0) return 1;
        s = view->AllreduceScaled(out.data(), count, dtype, op, 1.0 / n);
        if (!s.ok() || out != Expected(dtype, op, count, n, seed, 1.0 / n)) {
          return Fail(comm, what + " scaled by 1/n: " +
                                (s.ok() ? "differs from the reference" : s.ToString()));
        }
        // Reduce-scatter of the same inputs: member k gets its counts[k] elements of the
        // reference (member 0 the remainder too).
        if (post(Input(dtype, count, me, seed), what) != 0) return 1;
        std::vector<int64_t> counts(n, count / n);
        counts[0] += count % n;
        int64_t lo = 0;
        for (int k = 0; k < me; ++k) lo += counts[k];
        const size_t elem = runtime::DataTypeSize(dtype);
        std::vector<char> part(static_cast<size_t>(counts[me]) * elem);
        s = view->ReduceScatter(nullptr, part.data(), counts, dtype, op);
        const std::vector<char> all = Expected(dtype, op, count, n, seed);
        if (!s.ok() || !std::equal(part.begin(), part.end(), all.begin() + lo * elem)) {
          return Fail(comm, "posted reducescatter " + Case(dtype, op, count) + ": " +
                                (s.ok() ? "differs from the reference" : s.ToString()));
        }
        // Scaled, as the allreduce above
        if (post(Input(dtype, count, me, seed), what) != 0) return 1;
        s = view->ReduceScatterScaled(nullptr, part.data(), counts, dtype, op, 1.0 / n);
        const std::vector<char> scaled = Expected(dtype, op, count, n, seed, 1.0 / n);
        if (!s.ok() || !std::equal(part.begin(), part.end(), scaled.begin() + lo * elem)) {
          return Fail(comm, "posted reducescatter " + Case(dtype, op, count) + " scaled by 1/n: " +
                                (s.ok() ? "differs from the reference" : s.ToString()));
        }
      }
    }
  }
  // Allgather: member k posts 3k + 1 bytes of 'a' + k.
  auto mine_of = [](int k) { return std::vector<char>(3 * k + 1, static_cast<char>('a' + k)); };
  std::vector<int64_t> bytes(n);
  std::vector<char> want;
  for (int k = 0; k < n; ++k) {
    bytes[k] = 3 * k + 1;
    const std::vector<char> theirs = mine_of(k);
    want.insert(want.end(), theirs.begin(), theirs.end());
  }
  const std::vector<char> mine = mine_of(me);
  if (post_sized(mine.data(), bytes, "posted allgather") != 0) return 1;
  std::vector<char> got(want.size());
  Status s = view->Allgatherv(nullptr, got.data(), bytes);
  if (!s.ok() || got != want) return Fail(comm, "posted allgather: " + s.ToString());
  // Broadcast from each root: only the root posts.
  for (int root = 0; root < n; ++root) {
    const std::vector<char> data(1000, static_cast<char>('A' + root));
    std::vector<int64_t> sizes(n, 0);
    sizes[root] = 1000;
    if (post_sized(me == root ? data.data() : nullptr, sizes, "posted broadcast") != 0) return 1;
    std::vector<char> buf = me == root ? data : std::vector<char>(1000, 0);
    s = view->Broadcast(buf.data(), 1000, root);
    if (!s.ok() || buf != data) return Fail(comm, "posted broadcast from " + std::to_string(root));
  }
  // Alltoall: member k sends k + 2 bytes to each member j, all (k, j, i) patterned.
  auto cell = [](int k, int j, int i) { return static_cast<char>(k * 31 + j * 7 + i); };
  std::vector<char> in;
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < me + 2; ++i) in.push_back(cell(me, j, i));
  }
  std::vector<int64_t> whole(n);
  for (int k = 0; k < n; ++k) whole[k] = static_cast<int64_t>(n) * (k + 2);
  if (post_sized(in.data(), whole, "posted alltoall") != 0) return 1;
  std::vector<int64_t> send(n, me + 2), recv(n);
  want.clear();
  for (int k = 0; k < n; ++k) {
    recv[k] = k + 2;
    for (int i = 0; i < k + 2; ++i) want.push_back(cell(k, me, i));
  }
  got.assign(want.size(), 0);
  s = view->AlltoallvAgreed(in.data(), send, got.data(), recv, n + 1);
  if (!s.ok() || got != want) return Fail(comm, "posted alltoall: " + s.ToString());
  // Refusals. A call after the round ended (any call on the communicator ends it).
  if (post_sized(mine.data(), bytes, "posted, then a barrier") != 0) return 1;
  if (!(s = comm.Barrier()).ok()) return Fail(comm, "barrier after posting: " + s.ToString());
  s = view->Allgatherv(nullptr, got.data(), bytes);
  if (s.code() != StatusCode::kInternal || s.message().find("has ended") == std::string::npos) {
    return Fail(comm, "a read after the round ended was not refused: " + s.ToString());
  }
  // A member that posted less than the call needs: member k posted 3k + 1 bytes, 8 asked.
  if (post_sized(mine.data(), bytes, "posted too little") != 0) return 1;
  s = view->Broadcast(got.data(), 8, 0);
  if (me != 0 && (s.code() != StatusCode::kInternal ||
                  s.message().find("rank 0 posted bytes [0, 1) of its input, [0, 8) needed") ==
                      std::string::npos)) {
    return Fail(comm, "a short posted input was not named: " + s.ToString());
  }
  // The last member has no input to give (the controller's member without the op): it posts
  // nothing, and a read of its input names it on every member.
  const int last = n - 1;
  if (post_sized(me == last ? nullptr : mine.data(), bytes, "posted without the last") != 0) {
    return 1;
  }
  s = view->Allgatherv(nullptr, got.data(), bytes);
  const std::string missing = "rank " + std::to_string(last) +
                              " posted bytes [0, 0) of its input, [0, " +
                              std::to_string(bytes[last]) + ") needed";
  if (s.code() != StatusCode::kInternal || s.message().find(missing) == std::string::npos) {
    return Fail(comm, "a member that posted nothing was not named: " + s.ToString());
  }
  // Too large: refused on every member before any round; so is a list of the wrong length.
  std::vector<uint64_t> words = {1};
  const size_t most = comm.max_posted_bytes(words.size());
  std::vector<char> large(most + 1, 'x');
  std::vector<int64_t> sizes(n, static_cast<int64_t>(most));
  sizes[last] = static_cast<int64_t>(most + 1);
  s = comm.BitwiseAndPostingInput(words, large.data(), sizes);
  if (s.code() != StatusCode::kInvalidArgument ||
      s.message().find("cannot post " + std::to_string(most + 1) + " bytes for rank " +
                       std::to_string(last)) == std::string::npos) {
    return Fail(comm, "an input over max_posted_bytes was not refused: " + s.ToString());
  }
  // (The refused call ended the round posted before it.)
  s = view->Allgatherv(nullptr, got.data(), bytes);
  if (s.code() != StatusCode::kInternal || s.message().find("has ended") == std::string::npos) {
    return Fail(comm, "a read after a refused posting was not refused: " + s.ToString());
  }
  s = comm.BitwiseAndPostingInput(words, large.data(), std::vector<int64_t>(n + 1, 1));
  if (s.code() != StatusCode::kInvalidArgument) {
    return Fail(comm, "a list of sizes of the wrong length was not refused: " + s.ToString());
  }
  sizes[last] = static_cast<int64_t>(most);
  if (!(s = comm.BitwiseAndPostingInput(words, large.data(), sizes)).ok() || words[0] != 1) {
    return Fail(comm, "the largest input was refused: " + s.ToString());
  }
  if (!(s = comm.Barrier()).ok()) return Fail(comm, "barrier after the refusals: " + s.ToString());
  return 0;
}

int CheckPostedPieces(Communicator& comm, bool offered) {
  const int n = comm.size(), me = comm.rank();
  if (comm.posts_pieces() != offered) {
    return Fail(comm, std::string("posts_pieces() is not ") + (offered ? "true" : "false"));
  }
  if (!offered) return 0;
  Communicator* view = comm.posted_inputs();
  // Member k posts pieces of these sizes from `input` (nothing when null) with words {all ones,
  // one bit per member}; checks the AND.
  auto post = [&](const void* input, const std::vector<int64_t>& pieces, const std::string& what) {
    std::vector<uint64_t> words = {~uint64_t{0}, ~(uint64_t{1} << me)};
    Status s = comm.BitwiseAndPostingPieces(words, input, pieces);
    if (!s.ok() || words[0] != ~uint64_t{0} || words[1] != ~uint64_t{0} << n) {
      return Fail(comm, what + ": posting: " + s.ToString());
    }
    return 0;
  };
  uint32_t seed = 300;
  for (DataType dtype : {DataType::kFloat32, DataType::kInt64, DataType::kFloat16}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin}) {
      // 1 element: every member but 0 has an empty piece; 1001: uneven pieces.
      for (int64_t count : {1, 1001, 9000}) {
        ++seed;
        const std::string what = "posted reducescatter pieces " + Case(dtype, op, count);
        const size_t elem = runtime::DataTypeSize(dtype);
        std::vector<int64_t> counts(n), pieces(n);
        int64_t lo = 0;
        for (int k = 0; k < n; ++k) {
          counts[k] = count / n + (k < count % n ? 1 : 0);
          pieces[k] = counts[k] * static_cast<int64_t>(elem);
          if (k < me) lo += counts[k];
        }
        const std::vector<char> in = Input(dtype, count, me, seed);
        if (post(in.data(), pieces, what) != 0) return 1;
        std::vector<char> part(static_cast<size_t>(counts[me]) * elem);
        Status s = view->ReduceScatter(nullptr, part.data(), counts, dtype, op);
        const std::vector<char> all = Expected(dtype, op, count, n, seed);
        if (!s.ok() || !std::equal(part.begin(), part.end(), all.begin() + lo * elem)) {
          return Fail(comm, what + ": " + (s.ok() ? "differs from the reference" : s.ToString()));
        }
      }
    }
  }
  // Even alltoall: every member sends 5 bytes to each, all (k, j, i) patterned.
  auto cell = [](int k, int j, int i) { return static_cast<char>(k * 31 + j * 7 + i + 1); };
  constexpr int kPiece = 5;
  std::vector<char> in, want;
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < kPiece; ++i) in.push_back(cell(me, j, i));
  }
  for (int k = 0; k < n; ++k) {
    for (int i = 0; i < kPiece; ++i) want.push_back(cell(k, me, i));
  }
  const std::vector<int64_t> pieces(n, kPiece);
  if (post(in.data(), pieces, "posted alltoall pieces") != 0) return 1;
  std::vector<char> got(want.size());
  Status s = view->AlltoallvAgreed(in.data(), pieces, got.data(), pieces, kPiece);
  if (!s.ok() || got != want) return Fail(comm, "posted alltoall pieces: " + s.ToString());
  // Only this member's pieces are there: a read of whole inputs is refused, naming them.
  const std::string lo = std::to_string(me * kPiece);
  const std::string held = "posted bytes [" + lo + ", " + std::to_string((me + 1) * kPiece) + ")";
  got.resize(static_cast<size_t>(n * n * kPiece));
  s = view->Allgatherv(nullptr, got.data(), std::vector<int64_t>(n, n * kPiece));
  if (s.code() != StatusCode::kInternal || s.message().find(held) == std::string::npos) {
    return Fail(comm, "a read of a whole posted input was not refused: " + s.ToString());
  }
  // The last member has no input to give: its pieces read as empty, named on every member.
  const int last = n - 1;
  if (post(me == last ? nullptr : in.data(), pieces, "posted pieces without the last") != 0) {
    return 1;
  }
  s = view->AlltoallvAgreed(in.data(), pieces, got.data(), pieces, kPiece);
  const std::string missing = "rank " + std::to_string(last) + " posted bytes [" + lo + ", " + lo +
                              ") of its input, [" + lo + ", " + std::to_string((me + 1) * kPiece) +
                              ") needed";
  if (s.code() != StatusCode::kInternal || s.message().find(missing) == std::string::npos) {
    return Fail(comm, "a member that posted no pieces was not named: " + s.ToString());
  }
  // A piece over max_posted_bytes: refused on every member before any round.
  std::vector<uint64_t> words = {1};
  const size_t most = comm.max_posted_bytes(words.size());
  std::vector<int64_t> large(n, 1);
  large[last] = static_cast<int64_t>(most + 1);
  std::vector<char> big(static_cast<size_t>(n) + most, 'x');
  s = comm.BitwiseAndPostingPieces(words, big.data(), large);
  if (s.code() != StatusCode::kInvalidArgument ||
      s.message().find("cannot post " + std::to_string(most + 1)) == std::string::npos) {
    return Fail(comm, "a piece over max_posted_bytes was not refused: " + s.ToString());
  }
  if (!(s = comm.Barrier()).ok()) return Fail(comm, "barrier after the pieces: " + s.ToString());
  return 0;
}

int CheckReduceScatterInRankOrder(Communicator& comm, std::span<const int64_t> counts) {
  const int n = comm.size(), me = comm.rank();
  uint32_t seed = 700;
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
    const int64_t elem = static_cast<int64_t>(runtime::DataTypeSize(dtype));
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kProduct}) {
      for (int64_t count : counts) {
        for (double scale : {1.0, 1.0 / n}) {
          ++seed;
          // Member 0 gets the remainder: the largest segment.
          std::vector<int64_t> seg(n, count / n);
          seg[0] += count % n;
          if (!comm.reduces_segments_in_rank_order(seg[0] * elem)) continue;
          int64_t lo = 0;
          for (int k = 0; k < me; ++k) lo += seg[k];
          const std::vector<char> in = Input(dtype, count, me, seed);
          std::vector<char> part(static_cast<size_t>(seg[me] * elem));
          Status s = comm.ReduceScatterScaled(in.data(), part.data(), seg, dtype, op, scale);
          const std::vector<char> all = Expected(dtype, op, count, n, seed, scale);
          if (!s.ok() || !std::equal(part.begin(), part.end(), all.begin() + lo * elem)) {
            return Fail(comm, "reducescatter " + Case(dtype, op, count) + " scaled by " +
                                  std::to_string(scale) + ": " +
                                  (s.ok() ? "differs from the rank-order reduction of the posted "
                                            "inputs"
                                          : s.ToString()));
          }
        }
      }
    }
  }
  return 0;
}

}  // namespace hvd::test
