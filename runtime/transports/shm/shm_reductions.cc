#include "runtime/transports/shm/shm_reductions.h"

#include <algorithm>
#include <cstring>

#include "runtime/transports/reduce_inputs.h"
#include "runtime/transports/reduction.h"

namespace hvd::runtime {
namespace {

constexpr int64_t kCacheLine = 64;

// dst = in_0 op in_1 op ... op in_{N-1}, in rank order (so every member's result is the same
// bits; ReduceHeldInputs: float16/bfloat16 sums and products accumulated in float), where in_k is
// `src_offset` bytes into member k's half of the current (posted) round, except that this member's
// own input is read from `own` (its buffer, which may be dst itself). The first step combines in_0
// and in_1 straight into dst: no copy of in_0 first, which made every member but 0 do a pass more
// than member 0 and left member 0 waiting.
Status ReduceInRankOrder(ShmChannel& ch, char* dst, const char* own, int64_t src_offset,
                         int64_t count, DataType dtype, ReduceOp op, double scale) {
  const int me = ch.rank();
  return ReduceHeldInputs(
      dst, ch.size(), count, dtype, op,
      [&](int k, const void** in) {
        HVD_RETURN_IF_ERROR(ch.WaitPosted(k));
        // Once written, dst no longer holds this member's input (when own is dst): its posted
        // copy does, and dst may only be one of the first two inputs.
        *in = k == me && (own != dst || k < 2) ? own : ch.PeerHalf(k) + src_offset;
        return Status::OK();
      },
      scale);
}

Status AllreduceDirect(ShmChannel& ch, char* buf, int64_t count, DataType dtype, ReduceOp op,
                       double scale) {
  char* mine = nullptr;
  HVD_RETURN_IF_ERROR(ch.Begin(true, &mine));
  std::memcpy(mine, buf, static_cast<size_t>(count) * DataTypeSize(dtype));
  ch.Publish();
  HVD_RETURN_IF_ERROR(ReduceInRankOrder(ch, buf, buf, 0, count, dtype, op, scale));
  ch.End();
  return Status::OK();
}

// Allgather round of the two-round allreduce: posts this member's reduced slice `slice`, then
// hands every non-empty slice to place(k, src) — its own first (src = slice, while the peers
// are still posting), then each peer's from its posted half.
template <typename Place>
Status AllgatherSlices(ShmChannel& ch, const char* slice, const Slices& s, int64_t elem,
                       Place place) {
  const int me = ch.rank();
  char* mine = nullptr;
  HVD_RETURN_IF_ERROR(ch.Begin(true, &mine));
  std::memcpy(mine + s.lo(me) * elem, slice, static_cast<size_t>(s.len(me) * elem));
  ch.Publish();
  if (s.len(me) > 0) place(me, slice);
  for (int k = 0; k < ch.size(); ++k) {
    if (k == me || s.len(k) == 0) continue;
    HVD_RETURN_IF_ERROR(ch.WaitPosted(k));
    place(k, ch.PeerHalf(k) + s.lo(k) * elem);
  }
  ch.End();
  return Status::OK();
}

// AllgatherSlices' place for a buffer holding the whole chunk at `base`: member k's slice goes
// to its offset (this member's is there already).
auto IntoBuffer(char* base, const Slices& s, int64_t elem) {
  return [base, &s, elem](int k, const char* src) {
    char* dst = base + s.lo(k) * elem;
    if (dst != src) std::memcpy(dst, src, static_cast<size_t>(s.len(k) * elem));
  };
}

// One chunk of `n` elements at `base`, split into per-member slices of `per` elements.
Status AllreduceOneChunk(ShmChannel& ch, char* base, int64_t n, int64_t per, DataType dtype,
                         ReduceOp op, double scale) {
  const int64_t elem = static_cast<int64_t>(DataTypeSize(dtype));
  const Slices s{n, per};
  const int me = ch.rank();
  char* slice = base + s.lo(me) * elem;
  // Reduce-scatter round: this member reduces its slice of the chunk, straight into `buf`.
  char* mine = nullptr;
  HVD_RETURN_IF_ERROR(ch.Begin(true, &mine));
  std::memcpy(mine, base, static_cast<size_t>(n * elem));
  ch.Publish();
  if (s.len(me) > 0) {
    HVD_RETURN_IF_ERROR(
        ReduceInRankOrder(ch, slice, slice, s.lo(me) * elem, s.len(me), dtype, op, scale));
  }
  ch.End();
  return AllgatherSlices(ch, slice, s, elem, IntoBuffer(base, s, elem));
}

}  // namespace

Status ShmAllreducePostedSliced(ShmChannel& ch, size_t offset, char* buf, int64_t count,
                                DataType dtype, ReduceOp op, double scale) {
  const int64_t elem = static_cast<int64_t>(DataTypeSize(dtype));
  const Slices s = Slices::Of(count, ch.size(), elem);
  const int me = ch.rank();
  const int64_t at = s.lo(me) * elem;
  char* slice = buf + at;
  // Reduce-scatter from the held round: this member's slice of every posted input (its own
  // posted copy included).
  if (s.len(me) > 0) {
    const int64_t from = static_cast<int64_t>(offset) + at;
    HVD_RETURN_IF_ERROR(
        ReduceInRankOrder(ch, slice, ch.PeerHalf(me) + from, from, s.len(me), dtype, op, scale));
  }
  // Allgather round, once the held round is ended.
  HVD_RETURN_IF_ERROR(ch.Start("allreduce of posted inputs", dtype, op, count));
  return AllgatherSlices(ch, slice, s, elem, IntoBuffer(buf, s, elem));
}

int64_t ShmDirectBytes(int members, int ranks_per_cpu) {
  if (members <= 2 || ranks_per_cpu > 1) return kShmDirectBytes;
  const int64_t n = members;
  const int64_t model = (int64_t{32} << 10) * n / ((n - 1) * (n - 2));
  return std::clamp<int64_t>(model / kCacheLine * kCacheLine, int64_t{1} << 10, kShmDirectBytes);
}

int64_t SliceElements(int64_t n, int size, int64_t elem) {
  const int64_t align = std::max<int64_t>(1, kCacheLine / elem);
  return ((n + size - 1) / size + align - 1) / align * align;
}

size_t ShmPiecesScratchBytes(const ShmChannel& ch) {
  const int64_t half = static_cast<int64_t>(ch.half_bytes());
  // The largest slice over every element size (1-byte elements align slices to 64 elements).
  return static_cast<size_t>(
      std::max(std::min(kShmDirectBytes, half), SliceElements(half, ch.size(), 1)));
}

Status ShmAllreducePieces(ShmChannel& ch, const PieceView& pieces, DataType dtype, ReduceOp op,
                          int64_t direct_bytes, double scale, char* scratch) {
  const int64_t elem = static_cast<int64_t>(DataTypeSize(dtype));
  const int64_t half = static_cast<int64_t>(ch.half_bytes());
  const int64_t count = pieces.count();
  const int me = ch.rank();
  char* mine = nullptr;
  if (count * elem <= std::min(direct_bytes, half)) {
    // AllreduceDirect: every member reduces everything, here into scratch, then to the outputs.
    HVD_RETURN_IF_ERROR(ch.Begin(true, &mine));
    pieces.Gather(0, count, mine);
    ch.Publish();
    HVD_RETURN_IF_ERROR(ReduceInRankOrder(ch, scratch, mine, 0, count, dtype, op, scale));
    ch.End();
    pieces.Scatter(0, count, scratch);
    return Status::OK();
  }
  // ShmAllreduce's chunks and AllreduceOneChunk's two rounds, with the pieces in place of buf.
  const int64_t chunk = half / elem;
  const int size = ch.size();
  for (int64_t off = 0; off < count; off += chunk) {
    const int64_t n = std::min(chunk, count - off);
    const Slices sl = Slices::Of(n, size, elem);
    HVD_RETURN_IF_ERROR(ch.Begin(true, &mine));
    pieces.Gather(off, n, mine);
    ch.Publish();
    if (sl.len(me) > 0) {
      // This member's own input is its posted copy (the pieces may be written meanwhile).
      HVD_RETURN_IF_ERROR(ReduceInRankOrder(ch, scratch, mine + sl.lo(me) * elem, sl.lo(me) * elem,
                                            sl.len(me), dtype, op, scale));
    }
    ch.End();
    HVD_RETURN_IF_ERROR(AllgatherSlices(ch, scratch, sl, elem, [&](int k, const char* src) {
      pieces.Scatter(off + sl.lo(k), sl.len(k), src);
    }));
  }
  return Status::OK();
}

Status ShmAllreduce(ShmChannel& ch, char* buf, int64_t count, DataType dtype, ReduceOp op,
                    int64_t direct_bytes, double scale) {
  const int64_t elem = static_cast<int64_t>(DataTypeSize(dtype));
  const int64_t half = static_cast<int64_t>(ch.half_bytes());
  if (count * elem <= std::min(direct_bytes, half)) {
    return AllreduceDirect(ch, buf, count, dtype, op, scale);
  }
  const int64_t chunk = half / elem;
  const int size = ch.size();
  for (int64_t off = 0; off < count; off += chunk) {
    const int64_t n = std::min(chunk, count - off);
    const int64_t per = SliceElements(n, size, elem);
    HVD_RETURN_IF_ERROR(AllreduceOneChunk(ch, buf + off * elem, n, per, dtype, op, scale));
  }
  return Status::OK();
}

namespace {

// The reduce-scatter for many ranks per CPU: rounds of one half's chunk of the input, every
// member copying the whole chunk into its half and the members whose segments the chunk holds
// reducing their parts. Only those wait for the peers' posts, so the others can run ahead (by a
// round: the halves alternate), which wins where every wait is a scheduling turn; with a CPU per
// rank the balanced rounds below win (most rounds have one member reducing while the others
// wait to reuse a half).
Status ReduceScatterByChunks(ShmChannel& ch, const PieceView& in, char* out,
                             std::span<const int64_t> counts, DataType dtype, ReduceOp op,
                             double scale) {
  const int me = ch.rank();
  const int64_t elem = static_cast<int64_t>(DataTypeSize(dtype));
  const int64_t chunk = static_cast<int64_t>(ch.half_bytes()) / elem;
  int64_t mine_lo = 0;
  for (int k = 0; k < me; ++k) mine_lo += counts[k];
  const int64_t mine_hi = mine_lo + counts[me];
  const int64_t total = in.count();
  for (int64_t lo = 0; lo < total; lo += chunk) {
    const int64_t hi = std::min(total, lo + chunk);
    char* mine = nullptr;
    HVD_RETURN_IF_ERROR(ch.Begin(true, &mine));
    in.Gather(lo, hi - lo, mine);
    ch.Publish();
    // The part of this member's segment inside the chunk, if any; this member's own input is
    // read from its posted copy (the inputs may be pieces).
    const int64_t x = std::max(lo, mine_lo), y = std::min(hi, mine_hi);
    if (x < y) {
      HVD_RETURN_IF_ERROR(ReduceInRankOrder(ch, out + (x - mine_lo) * elem, mine + (x - lo) * elem,
                                            (x - lo) * elem, y - x, dtype, op, scale));
    }
    ch.End();
  }
  return Status::OK();
}

}  // namespace

size_t ShmSubSlotBytes(const ShmChannel& ch) {
  const size_t others = static_cast<size_t>(std::max(1, ch.size() - 1));
  return ch.half_bytes() / others / kCacheLine * kCacheLine;
}

Status ShmReduceScatter(ShmChannel& ch, const PieceView& in, char* out,
                        std::span<const int64_t> counts, DataType dtype, ReduceOp op, double scale,
                        bool balanced, std::vector<char>* scratch) {
  const int64_t elem = static_cast<int64_t>(DataTypeSize(dtype));
  const size_t sub = ShmSubSlotBytes(ch);
  // (A half too small for a sub-slot per member, the same on every member, takes whole chunks.)
  if (!balanced || sub < static_cast<size_t>(elem)) {
    return ReduceScatterByChunks(ch, in, out, counts, dtype, op, scale);
  }
  const int me = ch.rank(), n = ch.size();
  int64_t mine_lo = 0, largest = 0;
  for (int k = 0; k < n; ++k) {
    if (k < me) mine_lo += counts[k];
    largest = std::max(largest, counts[k]);
  }
  const int64_t per = static_cast<int64_t>(sub) / elem;  // elements a round carries per member
  const int64_t rounds = (largest + per - 1) / per;
  const std::span<const int64_t> starts = in.starts();
  for (int64_t t = 0; t < rounds; ++t) {
    const int64_t at = t * per;
    char* mine = nullptr;
    HVD_RETURN_IF_ERROR(ch.Begin(true, &mine));
    // Every other member's next part of its segment into its sub-slot; this member's own part
    // never goes through the half.
    int64_t lo = 0;  // member k's segment's first element
    for (int k = 0; k < n; lo += counts[k], ++k) {
      if (k == me || at >= counts[k]) continue;
      in.Gather(lo + at, std::min(per, counts[k] - at), mine + ShmSubSlot(k, me) * sub);
    }
    ch.Publish();
    if (at >= counts[me]) {
      ch.End();
      continue;
    }
    const int64_t len = std::min(per, counts[me] - at);
    // The own part is read where it is when one piece with an input holds it, else gathered.
    const char* own = nullptr;
    ForEachOverlap<int64_t>(starts, mine_lo + at, len,
                            [&](size_t i, int64_t within, int64_t, int64_t part) {
                              const auto* data = static_cast<const char*>(in.pieces()[i].in);
                              if (part == len && data != nullptr) own = data + within * elem;
                            });
    if (own == nullptr) {
      if (scratch->size() < sub) scratch->resize(sub);
      in.Gather(mine_lo + at, len, scratch->data());
      own = scratch->data();
    }
    char* dst = out + at * elem;
    HVD_RETURN_IF_ERROR(ReduceHeldInputs(
        dst, n, len, dtype, op,
        [&](int k, const void** input) {
          if (k == me) {
            *input = own;
            return Status::OK();
          }
          HVD_RETURN_IF_ERROR(ch.WaitPosted(k));
          *input = ch.PeerHalf(k) + ShmSubSlot(me, k) * sub;
          return Status::OK();
        },
        scale));
    ch.End();
  }
  return Status::OK();
}

}  // namespace hvd::runtime
