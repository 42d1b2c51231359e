#include "runtime/transports/shm/shm_segment.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#include "common/logging.h"
#include "common/shm_names.h"

namespace hvd::runtime {
namespace {

constexpr uint64_t kMagic = 0x32304d4853647668ULL;  // "hvdSHM02"
constexpr size_t kPage = 4096;
constexpr size_t kMembersOffset = 128;
constexpr int kNoLiveness = -2;  // pidfds_ entry: the member's pid is not visible here

// The first bytes of the segment, written by member 0 before it publishes the name.
struct ShmHeader {
  uint64_t magic;
  uint64_t size;
  uint64_t half_bytes;
  uint64_t total_bytes;
};

size_t RoundUp(size_t v, size_t to) { return (v + to - 1) / to * to; }

size_t SlotsOffset(int size) {
  return RoundUp(kMembersOffset + sizeof(ShmMember) * static_cast<size_t>(size), kPage);
}

size_t TotalBytes(int size, size_t half_bytes) {
  return SlotsOffset(size) + static_cast<size_t>(size) * 2 * half_bytes;
}

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

Result<void*> Map(int fd, size_t bytes, const std::string& what) {
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (base == MAP_FAILED) return Status::IoError(Errno(what + ": mmap"));
  return base;
}

}  // namespace

ShmSegment::ShmSegment(void* base, size_t bytes, int size, size_t half_bytes)
    : base_(base), bytes_(bytes), size_(size), half_bytes_(half_bytes) {
  members_ = reinterpret_cast<ShmMember*>(static_cast<char*>(base) + kMembersOffset);
  slots_ = static_cast<char*>(base) + SlotsOffset(size);
}

ShmSegment::~ShmSegment() {
  for (int fd : pidfds_) {
    if (fd >= 0) close(fd);
  }
  if (base_ != nullptr) munmap(base_, bytes_);
}

void ShmSegment::OpenPidfds() {
  pidfds_.assign(size_, -1);
  for (int k = 0; k < size_; ++k) {
    const int pid = members_[k].pid.load();
#ifdef SYS_pidfd_open
    if (pid <= 0 || pid == getpid()) continue;
    pidfds_[k] = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
    // The member registered moments ago and waits for "ready": not finding its pid means it
    // lives in another pid namespace, so only the deadline can tell it is gone.
    if (pidfds_[k] < 0 && errno == ESRCH) pidfds_[k] = kNoLiveness;
#else
    (void)pid;
#endif
  }
}

int ShmSegment::VisiblePid(int k) const {
  const int pid = members_[k].pid.load();
  return pid <= 0 || pidfds_[k] == kNoLiveness || pid == getpid() ? 0 : pid;
}

bool ShmSegment::PeerExited(int k) const {
  if (pidfds_[k] == kNoLiveness) return false;
  if (pidfds_[k] >= 0) {
    pollfd p{pidfds_[k], POLLIN, 0};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP)) != 0;
  }
  const int pid = members_[k].pid.load();
  return pid > 0 && kill(pid, 0) != 0 && errno == ESRCH;
}

namespace {

// Member 0: creates the named segment with every page reserved (a full /dev/shm is an error
// here, not a SIGBUS at first touch). Returns the descriptor; sets *name.
Result<int> CreateFile(const ShmSegment::Options& o, size_t total, const std::string& what,
                       std::string* name) {
  *name = control::ShmSegmentName(o.job_id, o.scope, getpid());
  const int fd = shm_open(name->c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return Status::IoError(Errno(what + ": shm_open " + *name));
  const int err = posix_fallocate(fd, 0, static_cast<off_t>(total));
  if (err == 0) return fd;
  errno = err;
  Status s = Status::IoError(Errno(what + ": reserving " + std::to_string(total) + " bytes for " +
                                   *name + " (is /dev/shm large enough? HVD_SHM_BUFFER_BYTES " +
                                   "sets the size per rank)"));
  close(fd);
  shm_unlink(name->c_str());
  return s;
}

// Other members: opens the segment member 0 published and checks its size.
Result<int> OpenFile(const ShmSegment::Options& o, size_t total, const std::string& what,
                     std::string* name) {
  auto published = o.kv->Wait(o.scope + "/shm/name", o.timeout);
  if (!published.ok()) return published.status().WithContext(what + ": waiting for member 0");
  if (!published->empty() && (*published)[0] == '!') {
    return Status::RemoteError(what +
                               ": member 0 could not create the segment: " + published->substr(1));
  }
  *name = *published;
  const int fd = shm_open(name->c_str(), O_RDWR, 0);
  if (fd < 0) return Status::IoError(Errno(what + ": shm_open " + *name));
  struct stat st {};
  if (fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) == total) return fd;
  close(fd);
  return Status::InvalidArgument(what + ": segment " + *name +
                                 " has another size; do all members use the same "
                                 "HVD_SHM_BUFFER_BYTES?");
}

// Publishes the name (member 0) or counts this member in (the last one sets "ready"), then
// waits until every member has mapped the segment.
Status Register(const ShmSegment::Options& o, const std::string& name) {
  const std::string prefix = o.scope + "/shm/";
  Status status = Status::OK();
  if (o.rank == 0) {
    status = o.size == 1 ? o.kv->Set(prefix + "ready", "1") : o.kv->Set(prefix + "name", name);
  } else {
    auto attached = o.kv->Add(prefix + "attached", 1);
    status = attached.status();
    if (status.ok() && *attached == o.size - 1) status = o.kv->Set(prefix + "ready", "1");
  }
  if (status.ok()) status = o.kv->Wait(prefix + "ready", o.timeout).status();
  return status;
}

}  // namespace

Result<std::unique_ptr<ShmSegment>> ShmSegment::Open(const Options& o) {
  if (o.size < 1 || o.rank < 0 || o.rank >= o.size || o.kv == nullptr || o.scope.empty() ||
      o.half_bytes < kPage || o.half_bytes % kPage != 0 || o.timeout.count() <= 0) {
    return Status::InvalidArgument("shm: bad segment options for rank " + std::to_string(o.rank) +
                                   " of " + std::to_string(o.size) + " in scope '" + o.scope + "'");
  }
  const std::string what = "shm segment of scope '" + o.scope + "' as rank " +
                           std::to_string(o.rank) + " of " + std::to_string(o.size);
  const size_t total = TotalBytes(o.size, o.half_bytes);
  std::string name;
  auto file = o.rank == 0 ? CreateFile(o, total, what, &name) : OpenFile(o, total, what, &name);
  if (!file.ok()) {
    // Tell the others now rather than letting them wait out the timeout for the name.
    if (o.rank == 0 && o.size > 1) {
      (void)o.kv->Set(o.scope + "/shm/name", "!" + file.status().message());
    }
    return file.status();
  }
  const int fd = *file;
  auto base = Map(fd, total, what);
  close(fd);
  if (!base.ok()) {
    if (o.rank == 0) shm_unlink(name.c_str());
    return base.status();
  }
  std::unique_ptr<ShmSegment> seg(new ShmSegment(*base, total, o.size, o.half_bytes));
  auto* header = static_cast<ShmHeader*>(*base);
  if (o.rank == 0) {
    *header = ShmHeader{kMagic, static_cast<uint64_t>(o.size), o.half_bytes, total};
  } else if (header->magic != kMagic || header->size != static_cast<uint64_t>(o.size) ||
             header->half_bytes != o.half_bytes) {
    return Status::InvalidArgument(what + ": segment " + name + " does not match this group");
  }
  seg->members_[o.rank].cpu.store(-1);  // not seen yet: peers spin
  seg->members_[o.rank].pid.store(static_cast<int32_t>(getpid()));
  Status status = Register(o, name);
  // Every member has mapped the segment (or the group failed): drop the name either way.
  if (o.rank == 0) shm_unlink(name.c_str());
  if (!status.ok()) return status.WithContext(what);
  Status finished = o.kv->FinishScope(o.scope + "/shm/", o.size);
  if (!finished.ok()) HVD_LOG_DEBUG("{}: cleanup: {}", what, finished.ToString());
  seg->OpenPidfds();
  return seg;
}

}  // namespace hvd::runtime
