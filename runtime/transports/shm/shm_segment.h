#ifndef HVD_RUNTIME_TRANSPORTS_SHM_SHM_SEGMENT_H_
#define HVD_RUNTIME_TRANSPORTS_SHM_SHM_SEGMENT_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/kv_client.h"
#include "common/status.h"

namespace hvd::runtime {

// One member's control words in the segment. `progress` is the futex word peers sleep on; it
// is written only by its owner and shares its cache line only with `cpu`, the CPU the owner
// last published from (written with progress, read by waiters deciding whether to spin). `waiters`
// counts peers asleep on `progress` (the owner skips FUTEX_WAKE when it is zero); `failed` is
// nonzero once the owner's communicator broke or was aborted (ShmFailure); `pid` and
// `start_time` (when it started, in clock ticks since boot: /proc/<pid>/stat's field 22, the same
// in every pid namespace) identify the owner for the liveness check and the direct reads.
struct ShmMember {
  alignas(64) std::atomic<uint32_t> progress;
  std::atomic<int32_t> cpu;
  // ShmChannel::Stream: round << 32 | bytes of this round's half written so far.
  std::atomic<uint64_t> streamed;
  alignas(64) std::atomic<uint32_t> waiters;
  std::atomic<uint32_t> failed;
  std::atomic<int32_t> pid;
  std::atomic<uint64_t> start_time;
};

// When process `pid` ("self": this one) started, in clock ticks since boot, as /proc shows it
// here; 0 when it cannot be read.
uint64_t ProcessStartTime(const std::string& pid);

// Values of ShmMember::failed.
enum ShmFailure : uint32_t { kShmHealthy = 0, kShmBroken = 1, kShmAborted = 2 };

// ShmSegment is one group's shared-memory mapping: a header, one ShmMember per member, and per
// member two staging halves of `half_bytes` each (page aligned). Made by Open; normally it never
// has a name in /dev/shm (member 0 makes an O_TMPFILE file there and the others open it through
// /proc/<pid>/fd), so a killed member leaves nothing behind. A member that cannot open it that
// way (another pid namespace) gets it by a name (common/shm_names.h) that exists only until
// every member has mapped it; a member 0 killed in that window leaves the name, which hvdrun or
// hvd-agent removes once the job's ranks on the host have ended (launcher/local/rank_leftovers.h).
// Immutable after Open except through the atomics and the staging memory, whose protocol belongs
// to ShmChannel. Not copyable; unmaps on destruction.
class ShmSegment {
 public:
  struct Options {
    control::KvClient* kv = nullptr;  // borrowed for the call
    std::string scope;                // the group's key prefix, unique per group and round
    std::string job_id;
    int rank = 0;
    int size = 1;
    size_t half_bytes = size_t{1} << 20;
    std::chrono::milliseconds timeout{30000};
    // Member 0 names the segment from the start, as where /dev/shm has no O_TMPFILE (tests:
    // the launcher's cleanup of a name left by a killed member 0).
    bool named = false;
  };

  // Member 0 creates and sizes the segment and publishes how to open it under
  // "<scope>/shm/name"; the others map it and register; once "<scope>/shm/ready" is set every
  // member has mapped it (the protocol, fallback included, is at the definition). kTimeout when
  // a member does not arrive in time; kIoError when shared memory fails.
  static Result<std::unique_ptr<ShmSegment>> Open(const Options& options);

  ~ShmSegment();
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  int size() const { return size_; }
  size_t half_bytes() const { return half_bytes_; }
  ShmMember& member(int k) const { return members_[k]; }
  char* half(int k, int which) const {
    return slots_ + (static_cast<size_t>(k) * 2 + static_cast<size_t>(which)) * half_bytes_;
  }
  // True once member k's process has exited (pidfd readable, or kill(pid, 0) says ESRCH);
  // always false for a member whose pid was not visible at setup (no such process here, or one
  // that started at another time: the member lives in another pid namespace, where its pid
  // number means another process here).
  bool PeerExited(int k) const;
  // Member k's pid as this process sees it; 0 when it is not visible here (another pid
  // namespace) or is this process.
  int VisiblePid(int k) const;

 private:
  ShmSegment(size_t bytes, int size, size_t half_bytes);
  // Maps the segment file `fd` (member 0: `create`, writes the header with `nonce`; the others
  // check the header and the nonce) and writes this member's pid. `object` names the file in
  // errors.
  Status Adopt(const Options& o, int fd, bool create, uint64_t nonce, const std::string& what,
               const std::string& object);
  void Attach(void* base);
  void OpenPidfds();

  void* base_ = nullptr;
  size_t bytes_ = 0;
  int size_ = 0;
  size_t half_bytes_ = 0;
  ShmMember* members_ = nullptr;
  char* slots_ = nullptr;
  // pidfd per member; -1: use kill(pid, 0) instead; -2: pid not visible (other pid namespace).
  std::vector<int> pidfds_;
};

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_SHM_SHM_SEGMENT_H_
