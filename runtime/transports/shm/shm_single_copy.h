#ifndef HVD_RUNTIME_TRANSPORTS_SHM_SHM_SINGLE_COPY_H_
#define HVD_RUNTIME_TRANSPORTS_SHM_SHM_SINGLE_COPY_H_

#include <sys/uio.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "common/status.h"
#include "runtime/transports/allreduce_pieces.h"
#include "runtime/transports/data_type.h"
#include "runtime/transports/shm/shm_channel.h"

// The single-copy allreduce of the shared-memory communicator (ShmChannel::single_copy_bytes):
// the members read each other's tensors where they are, with process_vm_readv, instead of
// staging them through the segment's halves.
namespace hvd::runtime {

// What one call needs besides its arguments; grown on first use and reused, so steady state
// allocates nothing.
struct ShmSingleCopyScratch {
  std::vector<uint64_t> peers;  // per member, per piece: input and output address
  std::vector<iovec> local, remote;
  std::vector<char> reduce;  // two pieces of kShmSingleCopyStep bytes
};

// Bytes of each member's slice reduced per read of the peers' inputs: two such pieces stay in
// a CPU's L2 (256 KiB measured best of 64 KiB-1 MiB on the 2-vCPU VM).
constexpr int64_t kShmSingleCopyStep = int64_t{256} << 10;

// Member 0's choice, per size class, between the single-copy allreduce and the staging halves
// (HVD_SHM_SINGLE_COPY=auto). Which one is faster depends on the machine and moves with its
// state: process_vm_readv pins every page it reads. On the 2-vCPU VM, 2 ranks, single copy won
// at 2-64 MiB one morning (16 MiB 3.22 -> 2.18 ms) and lost by 1.8-3x that evening (16 MiB
// 1.86 ms staged against 3.4-5.9; process_vm_readv read 6 GB/s where memcpy copied 18), while
// Open MPI's vader, which reads the same way, slowed alike. Per class (a power of two of
// bytes): two ops each way first (the first of each is not counted: it pays first touches),
// then the way with the lower best-of-the-last-four time per byte, and every kExplore-th op
// the other way, so a change of the machine is noticed. Not thread-safe (one communicator's).
class ShmSingleCopyChooser {
 public:
  static constexpr int64_t kExplore = 64;
  // Whether the next allreduce of `bytes` should read the peers directly.
  bool Prefer(int64_t bytes);
  // One allreduce of `bytes` took `took`, directly (`single`) or staged.
  void Record(int64_t bytes, bool single, std::chrono::nanoseconds took);

 private:
  static constexpr int kRecent = 4;
  struct Way {
    std::array<double, kRecent> ns_per_byte{};
    int64_t samples = 0;  // recorded, the uncounted first one included
    bool Ready() const { return samples >= 2; }
    double Best() const;
  };
  struct SizeClass {
    Way single, staged;
    int64_t ops = 0;
  };
  SizeClass& Of(int64_t bytes);
  std::array<SizeClass, 8> classes_;  // 2 MiB (and less), 4 MiB, ..., 128 MiB and more
};

// Allreduce of the pieces' concatenation (count() > 0, started and validated by the caller),
// bit-identical to ShmAllreduce of the packed buffer on every member (`scale` likewise applied
// by each slice's reducer before the others copy it). Member r reduces slice r
// (SliceElements) in rank order 0..N-1, reading the peers' inputs of that slice straight from
// their tensors into `scratch`, then copies every other slice straight from its reducer's
// outputs into its own. Rounds: (1) every member posts its pieces' addresses and counts (a
// different layout on any member is kInvalidArgument, never a read past a tensor); (2) "my slice
// is reduced and I read none of your inputs any more"; and a member returns only when every
// peer has ended round 2, so nobody still reads its outputs. Memory traffic per member at 2
// ranks: 3.5 buffer lengths, against 5.5 through the halves.
//
// `*used` is false, after round 1, when some member cannot take part (a piece without input
// or output, e.g. a joined rank's, or more pieces than fit in a half) or does not want to
// (`want` false: member 0's ShmSingleCopyChooser picked the halves): the caller then runs the
// staged allreduce instead, on every member alike.
Status ShmAllreduceSingleCopy(ShmChannel& ch, const PieceView& view, DataType dtype, ReduceOp op,
                              double scale, bool want, ShmSingleCopyScratch* scratch, bool* used);

// Alltoall by single copy: each member reads its piece of every peer's input straight into its
// output, where the staged alltoall copies each piece into the sender's half and out again (the
// memory traffic that decides with many ranks per CPU: 16 ranks, 64 MiB, 0.48 of Open MPI's
// vader staged, 2026-11-25). Rounds: (1) every member posts whether it can take part, its
// input's address and its send offsets (`send_off`, bytes into `in`, one per member); (2) "I
// read none of your input any more"; a member returns only when every peer has ended round 2.
// Member k's piece for this member is `recv_bytes[k]` bytes (the caller's size round or the
// response checked them) and lands at `out + recv_off[k]`; so does this member's own piece
// (`recv_bytes[me]` bytes from `in + send_off[me]`), copied after the reads and before waiting
// for the peers' (the copy fills the wait instead of following it). `*used` is false, after
// round 1, when some member cannot take part (its input is not readable by process_vm_readv,
// e.g. memory a device driver mapped) or does not want to (`want` false: member 0's chooser
// picked the halves, or its output overlaps its input); the caller then runs the staged
// alltoall, on every member alike.
Status ShmAlltoallSingleCopy(ShmChannel& ch, const char* in, std::span<const int64_t> send_off,
                             char* out, std::span<const int64_t> recv_off,
                             std::span<const int64_t> recv_bytes, bool want,
                             ShmSingleCopyScratch* scratch, bool* used);

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_SHM_SHM_SINGLE_COPY_H_
