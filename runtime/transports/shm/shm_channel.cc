#include "runtime/transports/shm/shm_channel.h"

#include <fmt/format.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <vector>

#include "runtime/transports/communicator.h"
#include "runtime/transports/host_layout.h"

namespace hvd::runtime {
namespace {

// How often a sleeping waiter re-checks the awaited peer's process and failure flag.
constexpr std::chrono::milliseconds kLivenessInterval{50};
// How long a waiter spins while the awaited peer may be running on another CPU, when every
// member can have its own CPU. A peer missed by the spin costs a futex sleep plus a wake-up of
// this thread's CPU: ~5 us on one CPU but 50-100 us across the vCPUs of the 2-vCPU VMs this
// project is measured on (a sleeping vCPU is woken through the hypervisor). Chunked rounds
// arrive tens of us apart, so a 10 us spin missed most of them. Bounded, and never spent on a
// peer that cannot be running (see Spin).
constexpr std::chrono::microseconds kSpinDedicated{50};
// With more members than CPUs a spinner may hold the CPU its peer needs, so it yields the CPU
// between polls instead (sched_yield hands it to the peer when the peer waits on this CPU's run
// queue), for this long, before it sleeps. A futex sleep there costs a wake-up through the
// hypervisor per round: 4 ranks on the 2-vCPU VM took 254 us per 4 KiB allreduce sleeping at
// once and 100 us yielding first (20-500 us budgets measured alike; Open MPI: 42 us).
constexpr std::chrono::microseconds kYieldOversubscribed{50};
// Polls of the awaited word between clock reads while spinning (~35 ns each here).
constexpr int kSpinBatch = 32;

bool Reached(uint32_t value, uint32_t target) { return static_cast<int32_t>(value - target) >= 0; }

void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Shared (not FUTEX_PRIVATE) operations: the words live in a mapping shared across processes.
void FutexWait(std::atomic<uint32_t>* word, uint32_t expected, std::chrono::nanoseconds rel) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(rel.count() / 1000000000);
  ts.tv_nsec = static_cast<long>(rel.count() % 1000000000);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void FutexWake(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace

ShmChannel::ShmChannel(std::unique_ptr<ShmSegment> segment, int rank,
                       std::chrono::milliseconds timeout, bool oversubscribed)
    : segment_(std::move(segment)),
      rank_(rank),
      size_(segment_->size()),
      timeout_(timeout),
      oversubscribed_(oversubscribed) {}

ShmChannel::~ShmChannel() {
  std::lock_guard<std::mutex> lock(abort_mu_);
  segment_.reset();
}

std::string ShmChannel::What() const {
  std::string call = op_;
  if (reduction_) {
    call = count_ >= 0 ? AllreduceOpName(count_, dtype_, reduce_)
                       : call + " (" + DataTypeName(dtype_) + " " + ReduceOpName(reduce_) + ")";
  }
  return "shm " + call + " on rank " + std::to_string(rank_) + " of " + std::to_string(size_);
}

Status ShmChannel::Start(const char* op, DataType dtype, ReduceOp reduce, int64_t count) {
  HVD_RETURN_IF_ERROR(Start(op));
  reduction_ = true;
  dtype_ = dtype;
  reduce_ = reduce;
  count_ = count;
  return Status::OK();
}

Status ShmChannel::Start(const char* op) {
  if (held_) {
    held_ = false;
    End();
  }
  op_ = op;
  reduction_ = false;
  if (aborted_.load()) return Status::Aborted(What() + ": the communicator was aborted");
  if (!broken_.ok()) return broken_.WithContext(What() + ": communicator failed earlier");
  deadline_ = std::chrono::steady_clock::now() + timeout_;
  return Status::OK();
}

Status ShmChannel::Begin(bool write, char** mine) {
  if (!write) return Status::OK();
  const uint32_t target = 2 * round_ - 2;
  for (int k = 0; k < size_; ++k) {
    if (k != rank_) HVD_RETURN_IF_ERROR(WaitFor(k, target));
  }
  *mine = segment_->half(rank_, round_ & 1);
  return Status::OK();
}

void ShmChannel::Publish() { SetProgress(2 * round_ + 1); }

void ShmChannel::End() {
  SetProgress(2 * round_ + 2);
  ++round_;
}

Status ShmChannel::WaitAllDone() {
  for (int k = 0; k < size_; ++k) {
    if (k != rank_) HVD_RETURN_IF_ERROR(WaitFor(k, 2 * round_));
  }
  return Status::OK();
}

Status ShmChannel::ProbeSingleCopy(int64_t wanted_bytes) {
  HVD_RETURN_IF_ERROR(Start("single-copy probe"));
  // Round 1: each member posts the address of its half as it sees it; the others read 8 bytes
  // there through process_vm_readv and compare them with the same bytes seen in the mapping.
  char* mine = nullptr;
  HVD_RETURN_IF_ERROR(Begin(true, &mine));
  const uint64_t own = reinterpret_cast<uintptr_t>(mine);
  std::memcpy(mine, &own, sizeof(own));
  Publish();
  HVD_RETURN_IF_ERROR(WaitAllPosted());
  int64_t verdict = std::max<int64_t>(wanted_bytes, 0);
  for (int k = 0; k < size_ && verdict > 0; ++k) {
    if (k == rank_) continue;
    const int pid = segment_->VisiblePid(k);
    uint64_t theirs = 0, read = ~uint64_t{0};
    std::memcpy(&theirs, PeerHalf(k), sizeof(theirs));
    iovec local{&read, sizeof(read)};
    iovec remote{reinterpret_cast<void*>(static_cast<uintptr_t>(theirs)), sizeof(read)};
    if (pid <= 0 || process_vm_readv(pid, &local, 1, &remote, 1, 0) != sizeof(read) ||
        read != theirs) {
      verdict = 0;
    }
  }
  End();
  // Round 2: 0 if any member says 0, else the largest size wanted.
  HVD_ASSIGN_OR_RETURN(single_copy_bytes_, AgreeRound(verdict, [](int64_t a, int64_t b) {
                         return a == 0 || b == 0 ? 0 : std::max(a, b);
                       }));
  return Status::OK();
}

Result<int64_t> ShmChannel::AgreeMin(int64_t value) {
  HVD_RETURN_IF_ERROR(Start("agreement"));
  return AgreeRound(value, [](int64_t a, int64_t b) { return std::min(a, b); });
}

Result<int64_t> ShmChannel::AgreeRound(int64_t value, int64_t (*fold)(int64_t, int64_t)) {
  char* mine = nullptr;
  HVD_RETURN_IF_ERROR(Begin(true, &mine));
  std::memcpy(mine, &value, sizeof(value));
  Publish();
  HVD_RETURN_IF_ERROR(WaitAllPosted());
  int64_t agreed = value;
  for (int k = 0; k < size_; ++k) {
    int64_t theirs = 0;
    std::memcpy(&theirs, PeerHalf(k), sizeof(theirs));
    agreed = fold(agreed, theirs);
  }
  End();
  return agreed;
}

ssize_t ReadProcessMemory(pid_t pid, const iovec* local, const iovec* remote, size_t n,
                          size_t bytes) {
  ssize_t got = process_vm_readv(pid, local, n, remote, n, 0);
  if (got < 0 || static_cast<size_t>(got) == bytes) return got;
  // A short count (past MAX_RW_COUNT): the rest from where it stopped, on copies of the lists.
  std::vector<iovec> l(local, local + n), r(remote, remote + n);
  size_t done = 0, first = 0;
  while (got > 0) {
    done += static_cast<size_t>(got);
    if (done == bytes) return static_cast<ssize_t>(bytes);
    size_t skip = static_cast<size_t>(got);
    while (first < n && skip >= l[first].iov_len) skip -= l[first++].iov_len;
    if (first == n) break;
    l[first].iov_base = static_cast<char*>(l[first].iov_base) + skip;
    r[first].iov_base = static_cast<char*>(r[first].iov_base) + skip;
    l[first].iov_len -= skip;
    r[first].iov_len -= skip;
    got = process_vm_readv(pid, &l[first], n - first, &r[first], n - first, 0);
  }
  if (got >= 0) errno = EFAULT;  // no progress (the rest is not mapped), or nothing left to read
  return -1;
}

Status ShmChannel::ReadPeer(int k, const iovec* local, const iovec* remote, size_t n,
                            size_t bytes) {
  const ssize_t got = ReadProcessMemory(segment_->VisiblePid(k), local, remote, n, bytes);
  if (got == static_cast<ssize_t>(bytes)) return Status::OK();
  const int err = got < 0 ? errno : EFAULT;
  // ESRCH: the peer's process is gone; EFAULT also when its exit unmapped the memory first, or
  // when it failed and its caller freed the tensor. Either way the peer is the one lost (what
  // hvdrun reports as failing first), not this reader.
  const uint32_t failed = segment_->member(k).failed.load();
  std::string cause;
  if (err == ESRCH || segment_->PeerExited(k)) {
    cause = " (it exited)";
  } else if (failed != kShmHealthy) {
    cause = std::string(" (it") + FailedText(failed) + ")";
  }
  if (!cause.empty()) lost_.Note(k);
  return Fail(
      Status::RemoteError(What() + ": reading " + std::to_string(bytes) + " bytes of rank " +
                          std::to_string(k) + "'s buffers (first at " +
                          fmt::format("{:#x}", reinterpret_cast<uintptr_t>(remote[0].iov_base)) +
                          ") failed: " + std::strerror(err) + cause));
}

Status ShmChannel::ConfirmReads() {
  // The reads (process_vm_readv) before the flags' loads, whatever the CPU's ordering; the
  // failing side fences after its store likewise (Fail, Abort).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (int k = 0; k < size_; ++k) {
    if (k == rank_) continue;
    const uint32_t failed = segment_->member(k).failed.load();
    if (failed == kShmHealthy) continue;
    lost_.Note(k);
    return Fail(Status::RemoteError(What() + ": rank " + std::to_string(k) + FailedText(failed) +
                                    " while this rank read its tensors; what was read may be "
                                    "stale"));
  }
  return Status::OK();
}

const char* ShmChannel::FailedText(uint32_t failed) {
  return failed == kShmAborted ? " aborted its communicator" : " failed in a collective";
}

Status ShmChannel::WaitPosted(int peer) {
  return peer == rank_ ? Status::OK() : WaitFor(peer, 2 * round_ + 1);
}

void ShmChannel::Stream(size_t written) {
  segment_->member(rank_).streamed.store(uint64_t{round_} << 32 | written,
                                         std::memory_order_release);
}

Status ShmChannel::ReadStreamed(int peer, char* out, size_t bytes) {
  const ShmMember& k = segment_->member(peer);
  const char* from = PeerHalf(peer);
  const uint32_t posted = 2 * round_ + 1;
  size_t done = 0;
  // Copies what is written beyond `done`; true once the round is posted (all of it written).
  auto take = [&] {
    const bool all = Reached(k.progress.load(std::memory_order_acquire), posted);
    size_t ready = bytes;
    if (!all) {
      const uint64_t v = k.streamed.load(std::memory_order_acquire);
      ready =
          static_cast<uint32_t>(v >> 32) == round_ ? std::min<size_t>(v & 0xffffffffu, bytes) : 0;
    }
    if (ready > done) {
      std::memcpy(out + done, from + done, ready - done);
      done = ready;
    }
    return all;
  };
  if (!oversubscribed_ && k.cpu.load(std::memory_order_relaxed) != sched_getcpu()) {
    using Clock = std::chrono::steady_clock;
    auto until = Clock::now() + kSpinDedicated;
    size_t seen = done;
    while (!take()) {
      if (done != seen) {  // a piece arrived: the writer runs, keep following it
        seen = done;
        until = Clock::now() + kSpinDedicated;
        continue;
      }
      for (int i = 0; i < kSpinBatch; ++i) CpuRelax();
      if (Clock::now() >= until) break;  // the rest as WaitPosted waits
    }
  }
  if (done < bytes) {
    HVD_RETURN_IF_ERROR(WaitPosted(peer));
    std::memcpy(out + done, from + done, bytes - done);
  }
  return Status::OK();
}

Status ShmChannel::WaitAllPosted() {
  for (int k = 0; k < size_; ++k) HVD_RETURN_IF_ERROR(WaitPosted(k));
  return Status::OK();
}

void ShmChannel::SetProgress(uint32_t value) {
  ShmMember& me = segment_->member(rank_);
  me.cpu.store(sched_getcpu(), std::memory_order_relaxed);
  me.progress.store(value);
  if (me.waiters.load() != 0) FutexWake(&me.progress);
}

Status ShmChannel::WaitFor(int k, uint32_t target) {
  const ShmMember& peer = segment_->member(k);
  if (Reached(peer.progress.load(std::memory_order_acquire), target)) return Status::OK();
  if (Spin(peer, target)) return Status::OK();
  return SleepOn(k, target);
}

bool ShmChannel::Spin(const ShmMember& peer, uint32_t target) const {
  if (oversubscribed_) {
    const auto until = std::chrono::steady_clock::now() + kYieldOversubscribed;
    do {
      if (Reached(peer.progress.load(std::memory_order_acquire), target)) return true;
      sched_yield();
    } while (std::chrono::steady_clock::now() < until);
    return false;
  }
  if (peer.cpu.load(std::memory_order_relaxed) == sched_getcpu()) return false;
  const auto until = std::chrono::steady_clock::now() + kSpinDedicated;
  while (true) {
    for (int i = 0; i < kSpinBatch; ++i) {
      if (Reached(peer.progress.load(std::memory_order_acquire), target)) return true;
      CpuRelax();
    }
    if (std::chrono::steady_clock::now() >= until) return false;
  }
}

Status ShmChannel::SleepOn(int k, uint32_t target) {
  using Clock = std::chrono::steady_clock;
  ShmMember& peer = segment_->member(k);
  auto who = [k] { return "rank " + std::to_string(k); };
  auto next_check = Clock::now() + kLivenessInterval;
  while (true) {
    if (Reached(peer.progress.load(), target)) return Status::OK();
    if (aborted_.load()) return Fail(Status::Aborted(What() + ": the communicator was aborted"));
    const uint32_t failed = peer.failed.load();
    if (failed != kShmHealthy) {
      lost_.Note(k);
      return Fail(Status::RemoteError(What() + ": " + who() + FailedText(failed)));
    }
    const auto now = Clock::now();
    if (now >= deadline_) {
      return Fail(Status::Timeout(What() + ": " + who() + " did not arrive within " +
                                  std::to_string(timeout_.count()) + " ms"));
    }
    if (now >= next_check) {
      if (segment_->PeerExited(k)) {
        lost_.Note(k);
        return Fail(Status::RemoteError(What() + ": " + who() + " (pid " +
                                        std::to_string(peer.pid.load()) + ") exited"));
      }
      next_check = now + kLivenessInterval;
    }
    peer.waiters.fetch_add(1);
    const uint32_t seen = peer.progress.load();
    if (!Reached(seen, target))
      FutexWait(&peer.progress, seen, std::min(deadline_, next_check) - now);
    peer.waiters.fetch_sub(1);
  }
}

void ShmChannel::WakeAll() {
  for (int k = 0; k < size_; ++k) FutexWake(&segment_->member(k).progress);
}

Status ShmChannel::Fail(Status status) {
  if (aborted_.load() && status.code() != StatusCode::kAborted) {
    status = Status::Aborted(What() + ": the communicator was aborted");
  }
  if (broken_.ok()) broken_ = status;
  segment_->member(rank_).failed.store(aborted_.load() ? kShmAborted : kShmBroken);
  // Visible before the caller, on return, reuses the tensors a peer may be reading
  // (ConfirmReads).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  WakeAll();
  return status;
}

Status ShmChannel::CheckPeers() const {
  for (int k = 0; k < size_; ++k) {
    if (k == rank_) continue;
    const ShmMember& peer = segment_->member(k);
    const uint32_t failed = peer.failed.load();
    if (failed != kShmHealthy) {
      lost_.Note(k);
      return Status::RemoteError("shared-memory rank " + std::to_string(k) + FailedText(failed));
    }
    if (segment_->PeerExited(k)) {
      lost_.Note(k);
      return Status::RemoteError("shared-memory rank " + std::to_string(k) + " (pid " +
                                 std::to_string(peer.pid.load()) + ") exited");
    }
  }
  return Status::OK();
}

void ShmChannel::Abort() {
  aborted_.store(true);
  std::lock_guard<std::mutex> lock(abort_mu_);
  if (!segment_) return;
  segment_->member(rank_).failed.store(kShmAborted);
  std::atomic_thread_fence(std::memory_order_seq_cst);  // as in Fail
  WakeAll();
}

}  // namespace hvd::runtime
