#include "runtime/shm_channel.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <climits>

namespace hvd::runtime {
namespace {

// How often a sleeping waiter re-checks the awaited peer's process and failure flag.
constexpr std::chrono::milliseconds kLivenessInterval{50};
// Busy-wait iterations (~25 ns each here) before sleeping when every member can have its own
// core: ~10 us catches a peer that is running; longer spins measured no better under load.
// With more members than cores a spinner only steals the core its peer needs.
constexpr int kSpinDedicated = 400;
constexpr int kSpinOversubscribed = 16;

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

int SpinLimit(int size) {
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return cpus > 0 && size <= cpus ? kSpinDedicated : kSpinOversubscribed;
}

}  // namespace

ShmChannel::ShmChannel(std::unique_ptr<ShmSegment> segment, int rank,
                       std::chrono::milliseconds timeout)
    : segment_(std::move(segment)),
      rank_(rank),
      size_(segment_->size()),
      timeout_(timeout),
      spin_limit_(SpinLimit(size_)) {}

ShmChannel::~ShmChannel() {
  std::lock_guard<std::mutex> lock(abort_mu_);
  segment_.reset();
}

std::string ShmChannel::What() const {
  return "shm " + op_ + " on rank " + std::to_string(rank_) + " of " + std::to_string(size_);
}

Status ShmChannel::Start(std::string op) {
  op_ = std::move(op);
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

Status ShmChannel::WaitPosted(int peer) {
  return peer == rank_ ? Status::OK() : WaitFor(peer, 2 * round_ + 1);
}

Status ShmChannel::WaitAllPosted() {
  for (int k = 0; k < size_; ++k) HVD_RETURN_IF_ERROR(WaitPosted(k));
  return Status::OK();
}

void ShmChannel::SetProgress(uint32_t value) {
  ShmMember& me = segment_->member(rank_);
  me.progress.store(value);
  if (me.waiters.load() != 0) FutexWake(&me.progress);
}

Status ShmChannel::WaitFor(int k, uint32_t target) {
  const std::atomic<uint32_t>& word = segment_->member(k).progress;
  for (int i = 0; i < spin_limit_; ++i) {
    if (Reached(word.load(std::memory_order_acquire), target)) return Status::OK();
    CpuRelax();
  }
  return SleepOn(k, target);
}

Status ShmChannel::SleepOn(int k, uint32_t target) {
  using Clock = std::chrono::steady_clock;
  ShmMember& peer = segment_->member(k);
  const std::string who = "rank " + std::to_string(k);
  auto next_check = Clock::now() + kLivenessInterval;
  while (true) {
    if (Reached(peer.progress.load(), target)) return Status::OK();
    if (aborted_.load()) return Fail(Status::Aborted(What() + ": the communicator was aborted"));
    const uint32_t failed = peer.failed.load();
    if (failed != kShmHealthy) {
      return Fail(Status::RemoteError(
          What() + ": " + who +
          (failed == kShmAborted ? " aborted its communicator" : " failed in a collective")));
    }
    const auto now = Clock::now();
    if (now >= deadline_) {
      return Fail(Status::Timeout(What() + ": " + who + " did not arrive within " +
                                  std::to_string(timeout_.count()) + " ms"));
    }
    if (now >= next_check) {
      if (segment_->PeerExited(k)) {
        return Fail(Status::RemoteError(What() + ": " + who + " (pid " +
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
  WakeAll();
  return status;
}

void ShmChannel::Abort() {
  aborted_.store(true);
  std::lock_guard<std::mutex> lock(abort_mu_);
  if (!segment_) return;
  segment_->member(rank_).failed.store(kShmAborted);
  WakeAll();
}

}  // namespace hvd::runtime
