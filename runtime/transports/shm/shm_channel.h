#ifndef HVD_RUNTIME_TRANSPORTS_SHM_SHM_CHANNEL_H_
#define HVD_RUNTIME_TRANSPORTS_SHM_SHM_CHANNEL_H_

#include <sys/uio.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "common/status.h"
#include "runtime/transports/communicator.h"
#include "runtime/transports/data_type.h"
#include "runtime/transports/shm/shm_segment.h"

namespace hvd::runtime {

// process_vm_readv of `n` local/remote iovec pairs (each pair of one size) until all `bytes` are
// read: one call moves at most MAX_RW_COUNT (2 GiB less a page) and returns a short count past
// it, so a longer read (a member's slice of a tensor over 4 GiB at 2 ranks) goes on where the
// last one stopped. Returns `bytes`, or -1 with errno (EFAULT for a read that stops short of a
// mapped end). Until 2026-11-30 the single-copy path read once and took a short count for a
// failure, which broke the communicator on every op of that size.
ssize_t ReadProcessMemory(pid_t pid, const iovec* local, const iovec* remote, size_t n,
                          size_t bytes);

// ShmChannel runs the round protocol every shared-memory collective is built from.
//
// Protocol. Each member owns a futex word `progress` and two staging halves. Round t (counted
// identically by every member, because every member makes the same sequence of calls) uses
// half t % 2. A member
//   Begin:   waits until every peer has finished reading round t-2 (progress >= 2t-2), since
//            that round used the same half; then writes its contribution into its half;
//   Publish: sets progress = 2t+1 ("round t is posted"), waking sleepers;
//   reads:   WaitPosted(k) (progress_k >= 2t+1), then reads PeerHalf(k);
//   End:     sets progress = 2t+2 ("done reading round t").
// With two halves a member writes round t+1 while slow peers still read round t, so chunked
// operations pipeline.
//
// Waiting. A wait first spins, bounded in time, but only while the awaited peer can be running:
// each member records in `cpu` the CPU it last published from, and a peer last seen on the
// waiter's own CPU cannot run until the waiter gets off it, so the waiter sleeps at once. With
// more members than CPUs it never spins: it yields the CPU between polls for a bounded time
// (the peer it waits for may need this very CPU). Then it sleeps on the peer's futex word
// (FUTEX_WAIT on the shared mapping) in slices of at most kLivenessInterval, checking in between
// the call's deadline (kTimeout), Abort (kAborted), the awaited peer's `failed` flag and whether
// its process still exists (kRemoteError naming the rank). Any failure marks this member failed in
// the segment and wakes every sleeper, so peers waiting on it fail within milliseconds.
//
// Steady state allocates nothing: a call's description is kept as its parts and formatted
// (What) only for an error message.
//
// Threading: one thread makes the calls; Abort() may come from any thread.
class ShmChannel {
 public:
  // `oversubscribed`: more ranks share this machine's CPUs than it has (waits yield, never spin).
  ShmChannel(std::unique_ptr<ShmSegment> segment, int rank, std::chrono::milliseconds timeout,
             bool oversubscribed);
  ~ShmChannel();

  int rank() const { return rank_; }
  int size() const { return size_; }
  size_t half_bytes() const { return segment_->half_bytes(); }

  // Starts one collective call named `op` (a string literal, for error messages) and arms its
  // deadline. Fails if the channel is aborted or broken. The second form names a reduction:
  // "<op> (<dtype> <reduce>)", or AllreduceOpName's "allreduce (..., N elements)" when
  // `count` >= 0.
  Status Start(const char* op);
  Status Start(const char* op, DataType dtype, ReduceOp reduce, int64_t count = -1);
  // Starts round t; when `write`, first waits until this member's half for round t is free and
  // returns it through `mine`.
  Status Begin(bool write, char** mine = nullptr);
  void Publish();
  Status WaitPosted(int peer);
  Status WaitAllPosted();
  const char* PeerHalf(int peer) const { return segment_->half(peer, round_ & 1); }
  // Streamed rounds: a writer that fills its half in pieces tells the readers after each piece
  // how much of it is written (Stream, before Publish); a reader copies `bytes` of `peer`'s half
  // to `out` piece by piece as they appear (ReadStreamed, instead of WaitPosted + memcpy), so
  // the two copies of a round overlap instead of following each other. Where the reader would
  // not spin (the writer is not running, or more members than CPUs) it waits for the whole
  // round as WaitPosted does.
  void Stream(size_t written);
  Status ReadStreamed(int peer, char* out, size_t bytes);
  void End();
  // Instead of End(), after this member's reads: leaves the round open, so every member's half
  // of it stays readable (no peer can start the round after next, which reuses the halves,
  // before this member ends it) until the next Start(), which ends it first.
  void Hold() { held_ = true; }
  bool held() const { return held_; }
  // After End(): waits until every peer has ended that round too (read what it needed of this
  // member's memory).
  Status WaitAllDone();

  // Single copy (cross-memory attach). Every member calls ProbeSingleCopy once, right after
  // construction (two rounds), with the size from which it wants allreduces to use it (0:
  // never): each member tries process_vm_readv on every peer's staging memory and checks what it
  // read, and the members agree on the answer, so single_copy_bytes() is the same on every
  // member: 0 when any member does not want it or may not read another's memory (a ptrace
  // restriction such as Yama's ptrace_scope or a seccomp policy, another pid namespace, a kernel
  // without it), else the largest wanted size.
  Status ProbeSingleCopy(int64_t wanted_bytes);
  // One round: the smallest of every member's `value`, for a setting every member must share
  // although each computes it from what it sees (e.g. the CPUs online).
  Result<int64_t> AgreeMin(int64_t value);
  int64_t single_copy_bytes() const { return single_copy_bytes_; }
  // Copies member k's memory described by `remote` (its address space) to `local` (`n`
  // iovecs each, at most IOV_MAX, both totalling `bytes`; ReadProcessMemory). A failure (the
  // peer passed a bad address, or exited) fails the channel, naming both; a peer that exited or
  // failed is recorded as lost_member().
  Status ReadPeer(int k, const iovec* local, const iovec* remote, size_t n, size_t bytes);
  // After this member's ReadPeer calls of a round, before it tells the peers it read them (its
  // Publish or End): fails, naming it, if any peer has failed meanwhile. A peer that fails (its
  // wait for this member timed out, or it was aborted) returns to its caller, which may reuse
  // the tensors this member was reading, so what was read may be stale; its `failed` flag is
  // set before it returns, so a clear flag seen after the reads means they read intact memory.
  // Without this check, a peer that had already ended the round let the slow reader's waits
  // pass and it returned OK with the reused memory's bytes (found by review, 2026-12-01).
  Status ConfirmReads();
  // A seam for tests: called before the single-copy reads of a peer's tensors (after round 1 of
  // the alltoall, after round 2's Publish in the allreduce), to stall this member there.
  void set_before_peer_reads(std::function<void()> f) { before_peer_reads_ = std::move(f); }
  void BeforePeerReads() const {
    if (before_peer_reads_) before_peer_reads_();
  }

  // Records `status` as the channel's failure, tells the peers, and returns it.
  Status Fail(Status status);
  // A failure description of this call for precondition errors (no effect on the channel).
  std::string What() const;
  void Abort();
  // Communicator::CheckPeers: a member that marked itself failed or aborted, or whose process
  // exited, is kRemoteError naming it. Changes nothing in the segment.
  Status CheckPeers() const;
  // Communicator::lost_member: the first member a wait found failed, aborted or exited; -1 none.
  int lost_member() const { return lost_.get(); }

 private:
  // One round in which every member posts `value` and folds every member's into its own, in
  // member order (the same answer everywhere for a commutative `fold`).
  Result<int64_t> AgreeRound(int64_t value, int64_t (*fold)(int64_t, int64_t));
  // Waits until member k's progress reaches `target` (wrapping comparison).
  Status WaitFor(int k, uint32_t target);
  // Spins (or, oversubscribed, yields) a bounded time for the wait above, unless member k is
  // not running (see the class comment); true when the target was reached.
  bool Spin(const ShmMember& peer, uint32_t target) const;
  Status SleepOn(int k, uint32_t target);
  // " aborted its communicator" or " failed in a collective", for a peer's `failed` value.
  static const char* FailedText(uint32_t failed);
  void SetProgress(uint32_t value);
  void WakeAll();

  std::unique_ptr<ShmSegment> segment_;
  const int rank_;
  const int size_;
  const std::chrono::milliseconds timeout_;
  const bool oversubscribed_;  // more members than CPUs: yield while waiting, never spin
  uint32_t round_ = 0;
  bool held_ = false;  // Hold(): round_ is posted and read but not ended
  int64_t single_copy_bytes_ = 0;
  // The current call, for What().
  const char* op_ = "";
  bool reduction_ = false;
  DataType dtype_ = DataType::kUInt8;
  ReduceOp reduce_ = ReduceOp::kSum;
  int64_t count_ = -1;
  std::chrono::steady_clock::time_point deadline_;
  Status broken_;  // first failure; touched only by the calling thread
  std::atomic<bool> aborted_{false};
  mutable FirstLostMember lost_;
  std::mutex abort_mu_;  // serializes Abort with destruction of segment_
  std::function<void()> before_peer_reads_;
};

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_SHM_SHM_CHANNEL_H_
