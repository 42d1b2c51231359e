#include "runtime/transports/shm/shm_single_copy.h"

#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "runtime/transports/reduction.h"
#include "runtime/transports/shm/shm_reductions.h"

namespace hvd::runtime {
namespace {

// Round 1's post: this header, then one PieceEntry per piece.
struct Header {
  int64_t count;
  int64_t pieces;
  int64_t usable;  // 0: this member cannot take part (ShmAllreduceSingleCopy's `used`)
};
struct PieceEntry {
  uint64_t in;
  uint64_t out;
  int64_t count;
};

constexpr size_t kMaxIov = IOV_MAX;

// Member k's posted input and output addresses of piece i (of `pieces` per member).
uint64_t* PeerAddresses(ShmSingleCopyScratch* s, size_t pieces, int k, size_t i) {
  return &s->peers[(static_cast<size_t>(k) * pieces + i) * 2];
}

// One call's view of every member's tensors: this member's through `view`, the peers' through
// the addresses they posted (same layout: same pieces, same counts).
class Layout {
 public:
  Layout(ShmChannel& ch, const PieceView& view, ShmSingleCopyScratch* s)
      : ch_(ch), view_(view), s_(s), elem_(view.elem_bytes()), n_(view.pieces().size()) {}

  // f(in, out, pos, len) for this member's segments of elements [at, at + n): pointers to the
  // segment's first element, pos its offset from `at`.
  template <typename F>
  void Own(int64_t at, int64_t n, F&& f) const {
    const auto pieces = view_.pieces();
    ForEachOverlap(view_.starts(), at, n,
                   [&](size_t i, int64_t in_piece, int64_t pos, int64_t len) {
                     const int64_t off = in_piece * elem_;
                     f(static_cast<const char*>(pieces[i].in) + off,
                       static_cast<char*>(pieces[i].out) + off, pos, len);
                   });
  }

  // Member k's inputs of elements [at, at + n), contiguous into `dst`.
  Status ReadInputs(int k, int64_t at, int64_t n, char* dst) {
    return Read(k, at, n, /*output=*/false,
                [&](size_t, int64_t, int64_t pos) { return dst + pos * elem_; });
  }
  // Member k's outputs of elements [at, at + n), into this member's outputs of the same elements.
  Status ReadOutputs(int k, int64_t at, int64_t n) {
    const auto pieces = view_.pieces();
    return Read(k, at, n, /*output=*/true, [&](size_t i, int64_t in_piece, int64_t) {
      return static_cast<char*>(pieces[i].out) + in_piece * elem_;
    });
  }

 private:
  // One process_vm_readv per kMaxIov segments of [at, at + n); local(i, in_piece, pos) is where
  // the segment of piece i starting at element in_piece of the piece (pos from `at`) goes.
  template <typename Local>
  Status Read(int k, int64_t at, int64_t n, bool output, Local&& local) {
    auto& l = s_->local;
    auto& r = s_->remote;
    l.clear();
    r.clear();
    size_t bytes = 0;
    Status status;
    auto flush = [&] {
      if (status.ok() && !l.empty()) status = ch_.ReadPeer(k, l.data(), r.data(), l.size(), bytes);
      l.clear();
      r.clear();
      bytes = 0;
    };
    ForEachOverlap(
        view_.starts(), at, n, [&](size_t i, int64_t in_piece, int64_t pos, int64_t len) {
          const size_t size = static_cast<size_t>(len * elem_);
          const uint64_t base = PeerAddresses(s_, n_, k, i)[output ? 1 : 0];
          l.push_back({local(i, in_piece, pos), size});
          r.push_back(
              {reinterpret_cast<void*>(static_cast<uintptr_t>(base + in_piece * elem_)), size});
          bytes += size;
          if (l.size() == kMaxIov) flush();
        });
    flush();
    return status;
  }

  ShmChannel& ch_;
  const PieceView& view_;
  ShmSingleCopyScratch* s_;
  const int64_t elem_;
  const size_t n_;
};

// Whether process_vm_readv can read the first byte of every piece's input and output here (a
// read of this process itself, always permitted): memory a device driver mapped, such as some
// CUDA pinned host memory, may not be readable that way, and then the staged path runs instead
// of the single copy failing midway. One call per IOV_MAX / 2 pieces.
bool Readable(std::span<const AllreducePiece> pieces, ShmSingleCopyScratch* s) {
  auto& l = s->local;
  auto& r = s->remote;
  char sink[kMaxIov];
  bool ok = true;
  auto flush = [&] {
    if (!l.empty()) {
      ok = ok && process_vm_readv(getpid(), l.data(), l.size(), r.data(), r.size(), 0) ==
                     static_cast<ssize_t>(l.size());
    }
    l.clear();
    r.clear();
  };
  l.clear();
  r.clear();
  for (const AllreducePiece& p : pieces) {
    if (p.count == 0) continue;
    for (const void* at : {p.in, static_cast<const void*>(p.out)}) {
      l.push_back({sink + l.size(), 1});
      r.push_back({const_cast<void*>(at), 1});
    }
    if (l.size() + 2 > kMaxIov) flush();
  }
  flush();
  return ok;
}

// Round 1: posts this member's layout and reads the others'. False in `*used` when a member
// cannot take part.
Status ExchangeLayouts(ShmChannel& ch, const PieceView& view, bool want, ShmSingleCopyScratch* s,
                       bool* used) {
  const auto pieces = view.pieces();
  const size_t n = pieces.size();
  const size_t need = sizeof(Header) + n * sizeof(PieceEntry);
  bool usable = want && need <= ch.half_bytes();
  for (const AllreducePiece& p : pieces) {
    usable = usable && (p.count == 0 || (p.in != nullptr && p.out != nullptr));
  }
  usable = usable && Readable(pieces, s);
  char* mine = nullptr;
  HVD_RETURN_IF_ERROR(ch.Begin(true, &mine));
  const Header header{view.count(), static_cast<int64_t>(n), usable ? 1 : 0};
  std::memcpy(mine, &header, sizeof(header));
  for (size_t i = 0; usable && i < n; ++i) {
    const PieceEntry e{reinterpret_cast<uintptr_t>(pieces[i].in),
                       reinterpret_cast<uintptr_t>(pieces[i].out), pieces[i].count};
    std::memcpy(mine + sizeof(Header) + i * sizeof(PieceEntry), &e, sizeof(e));
  }
  ch.Publish();
  HVD_RETURN_IF_ERROR(ch.WaitAllPosted());
  *used = true;
  for (int k = 0; k < ch.size(); ++k) {
    Header theirs;
    std::memcpy(&theirs, ch.PeerHalf(k), sizeof(theirs));
    *used = *used && theirs.usable != 0;
    if (theirs.count != header.count || theirs.pieces != header.pieces) {
      return ch.Fail(Status::InvalidArgument(ch.What() + ": rank " + std::to_string(k) +
                                             " allreduces " + std::to_string(theirs.count) +
                                             " elements in " + std::to_string(theirs.pieces) +
                                             " tensors, this rank " + std::to_string(header.count) +
                                             " in " + std::to_string(header.pieces)));
    }
  }
  if (*used) {
    s->peers.resize(static_cast<size_t>(ch.size()) * n * 2);
    for (int k = 0; k < ch.size(); ++k) {
      const char* at = ch.PeerHalf(k) + sizeof(Header);
      for (size_t i = 0; i < n; ++i) {
        PieceEntry e;
        std::memcpy(&e, at + i * sizeof(PieceEntry), sizeof(e));
        if (e.count != pieces[i].count) {
          return ch.Fail(Status::InvalidArgument(
              ch.What() + ": tensor " + std::to_string(i) + " has " + std::to_string(e.count) +
              " elements on rank " + std::to_string(k) + " but " + std::to_string(pieces[i].count) +
              " here"));
        }
        uint64_t* addresses = PeerAddresses(s, n, k, i);
        addresses[0] = e.in;
        addresses[1] = e.out;
      }
    }
  }
  ch.End();
  return Status::OK();
}

// Reduces elements [lo, lo + n) of every member's inputs in rank order into this member's
// outputs, kShmSingleCopyStep bytes at a time. Members 0 and 1 reduce straight into their
// outputs (their own input is read in the first step, before anything is written); the others
// accumulate in scratch and copy out at the end of each piece, since their own input comes in
// at step k = rank.
Status ReduceSlice(ShmChannel& ch, Layout& layout, int64_t lo, int64_t n, int64_t elem,
                   DataType dtype, ReduceOp op, double scale, char* a, char* b) {
  const int me = ch.rank();
  if (AccumulatesInFloat(dtype, op)) {
    // float16/bfloat16 sums and products: `a` holds a float accumulator of a quarter step's
    // elements, every member's input (its own from its segments) added in rank order, then
    // scaled and rounded into the outputs, as ReduceWide does on the staged path (the same
    // bits).
    float* acc = reinterpret_cast<float*>(a);
    const int64_t step = kShmSingleCopyStep / static_cast<int64_t>(sizeof(float));
    for (int64_t at = lo; at < lo + n; at += step) {
      const int64_t m = std::min(step, lo + n - at);
      for (int k = 0; k < ch.size(); ++k) {
        if (k == me) {
          layout.Own(at, m, [&](const char* in, char*, int64_t pos, int64_t len) {
            const void* one[1] = {in};
            AccumulateStep(acc + pos, nullptr, one, 1, len, dtype, op, k == 0);
          });
          continue;
        }
        HVD_RETURN_IF_ERROR(layout.ReadInputs(k, at, m, b));
        const void* one[1] = {b};
        AccumulateStep(acc, nullptr, one, 1, m, dtype, op, k == 0);
      }
      ScaleBuffer(acc, m, DataType::kFloat32, scale);
      layout.Own(at, m, [&](const char*, char* out, int64_t pos, int64_t len) {
        AccumulateStep(acc + pos, out, nullptr, 0, len, dtype, op, false);  // rounds acc
      });
    }
    return Status::OK();
  }
  const int64_t step = kShmSingleCopyStep / elem;
  for (int64_t at = lo; at < lo + n; at += step) {
    const int64_t m = std::min(step, lo + n - at);
    if (me < 2) {
      HVD_RETURN_IF_ERROR(layout.ReadInputs(1 - me, at, m, b));
      layout.Own(at, m, [&](const char* in, char* out, int64_t pos, int64_t len) {
        const char* theirs = b + pos * elem;
        Reduce(out, me == 0 ? in : theirs, me == 0 ? theirs : in, len, dtype, op);
      });
    } else {
      HVD_RETURN_IF_ERROR(layout.ReadInputs(0, at, m, a));
      HVD_RETURN_IF_ERROR(layout.ReadInputs(1, at, m, b));
      Reduce(a, a, b, m, dtype, op);
    }
    for (int k = 2; k < ch.size(); ++k) {
      if (k == me) {
        layout.Own(at, m, [&](const char* in, char*, int64_t pos, int64_t len) {
          ReduceInto(a + pos * elem, in, len, dtype, op);
        });
        continue;
      }
      HVD_RETURN_IF_ERROR(layout.ReadInputs(k, at, m, b));
      if (me >= 2) {
        ReduceInto(a, b, m, dtype, op);
      } else {
        layout.Own(at, m, [&](const char*, char* out, int64_t pos, int64_t len) {
          ReduceInto(out, b + pos * elem, len, dtype, op);
        });
      }
    }
    if (me >= 2) {
      ScaleBuffer(a, m, dtype, scale);
      layout.Own(at, m, [&](const char*, char* out, int64_t pos, int64_t len) {
        std::memcpy(out, a + pos * elem, static_cast<size_t>(len * elem));
      });
    } else if (scale != 1.0) {
      layout.Own(at, m, [&](const char*, char* out, int64_t, int64_t len) {
        ScaleBuffer(out, len, dtype, scale);
      });
    }
  }
  return Status::OK();
}

}  // namespace

bool ShmSingleCopyChooser::Prefer(int64_t bytes) {
  SizeClass& c = Of(bytes);
  ++c.ops;
  if (!c.single.Ready()) return true;
  if (!c.staged.Ready()) return false;
  const bool single = c.single.Best() <= c.staged.Best();
  return c.ops % kExplore == 0 ? !single : single;
}

void ShmSingleCopyChooser::Record(int64_t bytes, bool single, std::chrono::nanoseconds took) {
  Way& w = single ? Of(bytes).single : Of(bytes).staged;
  if (w.samples++ == 0) return;  // the first pays first touches
  w.ns_per_byte[(w.samples - 2) % kRecent] =
      static_cast<double>(took.count()) / static_cast<double>(std::max<int64_t>(bytes, 1));
}

double ShmSingleCopyChooser::Way::Best() const {
  const int64_t n = std::min<int64_t>(samples - 1, kRecent);
  return *std::min_element(ns_per_byte.begin(), ns_per_byte.begin() + n);
}

ShmSingleCopyChooser::SizeClass& ShmSingleCopyChooser::Of(int64_t bytes) {
  int log2 = 0;
  while (log2 < 62 && (int64_t{2} << log2) <= bytes) ++log2;  // floor(log2(bytes))
  return classes_[static_cast<size_t>(std::clamp(log2 - 21, 0, 7))];
}

Status ShmAllreduceSingleCopy(ShmChannel& ch, const PieceView& view, DataType dtype, ReduceOp op,
                              double scale, bool want, ShmSingleCopyScratch* scratch, bool* used) {
  if (scratch->reduce.empty()) {
    scratch->reduce.resize(2 * static_cast<size_t>(kShmSingleCopyStep));
    scratch->local.reserve(kMaxIov);
    scratch->remote.reserve(kMaxIov);
  }
  HVD_RETURN_IF_ERROR(ExchangeLayouts(ch, view, want, scratch, used));
  if (!*used) return Status::OK();
  const int64_t elem = static_cast<int64_t>(DataTypeSize(dtype));
  const int64_t count = view.count();
  const int size = ch.size();
  const int me = ch.rank();
  const Slices s = Slices::Of(count, size, elem);
  Layout layout(ch, view, scratch);
  // Nobody writes its outputs outside its own slice until that slice's reducer has posted round
  // 2, so the inputs read here are intact even where outputs and inputs are the same tensors.
  if (s.len(me) > 0) {
    char* a = scratch->reduce.data();
    HVD_RETURN_IF_ERROR(ReduceSlice(ch, layout, s.lo(me), s.len(me), elem, dtype, op, scale, a,
                                    a + kShmSingleCopyStep));
  }
  HVD_RETURN_IF_ERROR(ch.Begin(false));
  ch.Publish();
  ch.BeforePeerReads();
  for (int k = 0; k < size; ++k) {
    if (k == me || s.len(k) == 0) continue;
    HVD_RETURN_IF_ERROR(ch.WaitPosted(k));
    HVD_RETURN_IF_ERROR(layout.ReadOutputs(k, s.lo(k), s.len(k)));
  }
  // A peer that gave up waiting for this member (and let its caller reuse its tensors) has
  // ended round 2 already, so the waits above pass: its `failed` flag tells.
  HVD_RETURN_IF_ERROR(ch.ConfirmReads());
  ch.End();
  // Round 2's end doubles as the last round: return (and let the caller write its tensors)
  // only once every peer has copied this member's slice.
  return ch.WaitAllDone();
}

Status ShmAlltoallSingleCopy(ShmChannel& ch, const char* in, std::span<const int64_t> send_off,
                             char* out, std::span<const int64_t> recv_off,
                             std::span<const int64_t> recv_bytes, bool want,
                             ShmSingleCopyScratch* scratch, bool* used) {
  const int size = ch.size();
  const int me = ch.rank();
  const size_t offsets = sizeof(int64_t) * static_cast<size_t>(size);
  // Round 1: usable flag and input address, then the send offsets.
  bool usable = want && 2 * sizeof(int64_t) + offsets <= ch.half_bytes();
  if (usable && in != nullptr) {
    char sink;
    iovec local{&sink, 1};
    iovec remote{const_cast<char*>(in), 1};
    usable = process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == 1;
  }
  char* mine = nullptr;
  HVD_RETURN_IF_ERROR(ch.Begin(true, &mine));
  const int64_t head[2] = {usable ? 1 : 0, static_cast<int64_t>(reinterpret_cast<uintptr_t>(in))};
  std::memcpy(mine, head, sizeof(head));
  if (usable) std::memcpy(mine + sizeof(head), send_off.data(), offsets);
  ch.Publish();
  HVD_RETURN_IF_ERROR(ch.WaitAllPosted());
  // Each peer's head once: its flag, and its input's address; the send offsets after it are
  // read only when every member posted them (usable everywhere), giving where each peer's
  // piece for this member starts, in the peer's address space.
  *used = true;
  scratch->peers.resize(static_cast<size_t>(size));
  for (int k = 0; k < size; ++k) {
    int64_t theirs[2];
    std::memcpy(theirs, ch.PeerHalf(k), sizeof(theirs));
    *used = *used && theirs[0] != 0;
    scratch->peers[k] = static_cast<uint64_t>(theirs[1]);
  }
  for (int k = 0; *used && k < size; ++k) {
    int64_t off = 0;
    std::memcpy(&off, ch.PeerHalf(k) + sizeof(head) + sizeof(int64_t) * me, sizeof(off));
    scratch->peers[k] += static_cast<uint64_t>(off);
  }
  ch.End();
  if (!*used) return Status::OK();
  ch.BeforePeerReads();
  // Staggered, member me + s at step s, as a pairwise exchange orders it: each member's memory
  // is read by one peer at a time, not by all of them from member 0 on (not measured apart).
  for (int s = 1; s < size; ++s) {
    const int k = (me + s) % size;
    if (recv_bytes[k] == 0) continue;
    const size_t bytes = static_cast<size_t>(recv_bytes[k]);
    iovec local{out + recv_off[k], bytes};
    iovec remote{reinterpret_cast<void*>(static_cast<uintptr_t>(scratch->peers[k])), bytes};
    HVD_RETURN_IF_ERROR(ch.ReadPeer(k, &local, &remote, 1, bytes));
  }
  HVD_RETURN_IF_ERROR(ch.ConfirmReads());  // as in the allreduce
  // This member's own piece while the peers still read (the caller ran single copy only for
  // an output apart from the input).
  if (recv_bytes[me] > 0) {
    std::memcpy(out + recv_off[me], in + send_off[me], static_cast<size_t>(recv_bytes[me]));
  }
  // Round 2: this member's reads are done; return once every peer's are.
  HVD_RETURN_IF_ERROR(ch.Begin(false));
  ch.Publish();
  ch.End();
  return ch.WaitAllDone();
}

}  // namespace hvd::runtime
