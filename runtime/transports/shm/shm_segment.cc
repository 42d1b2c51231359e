#include "runtime/transports/shm/shm_segment.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/logging.h"
#include "common/shm_names.h"

namespace hvd::runtime {
namespace {

constexpr uint64_t kMagic = 0x33304d4853647668ULL;  // "hvdSHM03"
constexpr const char* kShmDir = "/dev/shm";
constexpr size_t kPage = 4096;
constexpr size_t kMembersOffset = 128;
constexpr int kNoLiveness = -2;  // pidfds_ entry: the member's pid is not visible here

// The first bytes of the segment, written by member 0 before it publishes the name.
struct ShmHeader {
  uint64_t magic;
  uint64_t size;
  uint64_t half_bytes;
  uint64_t total_bytes;
  uint64_t nonce;  // member 0's random number, published with the reference: this group's file
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

ShmSegment::ShmSegment(size_t bytes, int size, size_t half_bytes)
    : bytes_(bytes), size_(size), half_bytes_(half_bytes) {}

ShmSegment::~ShmSegment() {
  for (int fd : pidfds_) {
    if (fd >= 0) close(fd);
  }
  if (base_ != nullptr) munmap(base_, bytes_);
}

uint64_t ProcessStartTime(const std::string& pid) {
  std::FILE* f = std::fopen(("/proc/" + pid + "/stat").c_str(), "re");
  if (f == nullptr) return 0;
  char buf[1024];
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  // "<pid> (<comm>) <state> ..." -- the command may hold spaces and parentheses: the fields
  // start after the last ')', with field 3 (state); start time is field 22.
  const char* at = std::strrchr(buf, ')');
  if (at == nullptr) return 0;
  for (int field = 2; field < 22 && at != nullptr; ++field) at = std::strchr(at + 1, ' ');
  return at == nullptr ? 0 : std::strtoull(at + 1, nullptr, 10);
}

void ShmSegment::OpenPidfds() {
  pidfds_.assign(size_, -1);
  for (int k = 0; k < size_; ++k) {
    const int pid = members_[k].pid.load();
    if (pid <= 0 || pid == getpid()) continue;
#ifdef SYS_pidfd_open
    pidfds_[k] = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
    // The member registered moments ago and waits for "ready": not finding its pid means it
    // lives in another pid namespace, so only the deadline can tell it is gone.
    if (pidfds_[k] < 0 && errno == ESRCH) pidfds_[k] = kNoLiveness;
#endif
    // A process with the member's pid number that started at another time is not the member
    // (another pid namespace): watching it, or reading its memory, would be wrong. Checked
    // after the pidfd is open, so the pid cannot be reused in between.
    const uint64_t started = members_[k].start_time.load();
    if (pidfds_[k] != kNoLiveness && started != 0 &&
        ProcessStartTime(std::to_string(pid)) != started) {
      if (pidfds_[k] >= 0) close(pidfds_[k]);
      pidfds_[k] = kNoLiveness;
    }
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

// What member 0 made: the descriptor and, for a named segment, its name. An anonymous one (an
// O_TMPFILE file in /dev/shm: no name, gone with its last descriptor or mapping) is published
// as "@<pid> <fd> <dev> <ino>" (the others open /proc/<pid>/fd/<fd>), a named one as its name.
struct Made {
  int fd = -1;
  std::string name;       // named: the shm_open name
  std::string published;  // the value of "<scope>/shm/name"
};

Status Reserve(int fd, size_t total, const std::string& what, const std::string& object) {
  const int err = posix_fallocate(fd, 0, static_cast<off_t>(total));
  if (err == 0) return Status::OK();
  errno = err;
  return Status::IoError(Errno(what + ": reserving " + std::to_string(total) + " bytes for " +
                               object + " (is /dev/shm large enough? HVD_SHM_BUFFER_BYTES " +
                               "sets the size per rank)"));
}

Status SizeMismatch(const std::string& what, const std::string& object) {
  return Status::InvalidArgument(what + ": " + object +
                                 " has another size; do all members use the same "
                                 "HVD_SHM_BUFFER_BYTES?");
}

// Member 0: creates the named segment with every page reserved (a full /dev/shm is an error
// here, not a SIGBUS at first touch).
Result<Made> CreateNamed(const ShmSegment::Options& o, size_t total, const std::string& what) {
  Made made;
  made.name = control::ShmSegmentName(o.job_id, o.scope, getpid());
  made.published = made.name;
  made.fd = shm_open(made.name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (made.fd < 0) return Status::IoError(Errno(what + ": shm_open " + made.name));
  Status reserved = Reserve(made.fd, total, what, made.name);
  if (reserved.ok()) return made;
  close(made.fd);
  shm_unlink(made.name.c_str());
  return reserved;
}

// Member 0: an anonymous segment when /dev/shm takes O_TMPFILE (tmpfs does since Linux 3.11),
// else a named one.
Result<Made> Create(const ShmSegment::Options& o, size_t total, const std::string& what) {
  const int fd = o.named ? -1 : open(kShmDir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (!o.named) {
      HVD_LOG_DEBUG("{}: no anonymous segment ({}); using a named one", what, std::strerror(errno));
    }
    return CreateNamed(o, total, what);
  }
  Made made;
  made.fd = fd;
  Status reserved = Reserve(fd, total, what, "an unnamed file in /dev/shm");
  struct stat st {};
  if (reserved.ok() && fstat(fd, &st) != 0) reserved = Status::IoError(Errno(what + ": fstat"));
  if (!reserved.ok()) {
    close(fd);
    return reserved;
  }
  made.published = "@" + std::to_string(getpid()) + " " + std::to_string(fd) + " " +
                   std::to_string(st.st_dev) + " " + std::to_string(st.st_ino);
  return made;
}

// Another member: opens member 0's anonymous segment through /proc/<pid>/fd/<fd>. Checked
// before it is opened for writing (O_PATH opens nothing: never a device's open) and mapped:
// a regular file with the published device, inode and size. -1 when that fails -- member 0's
// pid names another process here (another pid namespace) or its descriptors are not ours to
// open -- and the group falls back to a named segment. Member 0's file with another size is an
// error (the members disagree on HVD_SHM_BUFFER_BYTES), not a reason to name it.
Result<int> OpenAnonymous(const std::string& published, size_t total, const std::string& what) {
  long long pid = 0, fd = 0;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(published.c_str(), "@%lld %lld %llu %llu", &pid, &fd, &dev, &ino) != 4) {
    HVD_LOG_WARNING("{}: malformed segment reference '{}'", what, published);
    return -1;
  }
  const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  const int handle = open(path.c_str(), O_PATH | O_CLOEXEC);
  if (handle < 0) {
    HVD_LOG_DEBUG("{}: {}: {}", what, path, std::strerror(errno));
    return -1;
  }
  struct stat st {};
  int opened = -1;
  if (fstat(handle, &st) == 0 && S_ISREG(st.st_mode) && st.st_dev == dev && st.st_ino == ino) {
    if (static_cast<size_t>(st.st_size) != total) {
      close(handle);
      return SizeMismatch(what, "member 0's segment");
    }
    opened = open(("/proc/self/fd/" + std::to_string(handle)).c_str(), O_RDWR | O_CLOEXEC);
  }
  if (opened < 0) HVD_LOG_DEBUG("{}: {} is not member 0's segment here", what, path);
  close(handle);
  return opened;
}

// Other members: opens the named segment member 0 published and checks its size.
Result<int> OpenNamed(const std::string& name, size_t total, const std::string& what) {
  const int fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) return Status::IoError(Errno(what + ": shm_open " + name));
  struct stat st {};
  if (fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) == total) return fd;
  close(fd);
  return SizeMismatch(what, "segment " + name);
}

// A value member 0 published: "!<error>" when it could not `doing`.
Status Member0Failure(const std::string& value, const std::string& what, const char* doing) {
  if (value.empty() || value[0] != '!') return Status::OK();
  return Status::RemoteError(what + ": member 0 could not " + doing + ": " + value.substr(1));
}

// Counts of "<scope>/shm/attached": each member adds 1, plus kMissed when it could not open
// member 0's anonymous segment.
constexpr int64_t kMissed = int64_t{1} << 20;

}  // namespace

Status ShmSegment::Adopt(const Options& o, int fd, bool create, uint64_t nonce,
                         const std::string& what, const std::string& object) {
  auto base = Map(fd, bytes_, what);
  if (!base.ok()) return base.status();
  Attach(*base);
  auto* header = static_cast<ShmHeader*>(*base);
  if (create) {
    *header = ShmHeader{kMagic, static_cast<uint64_t>(o.size), o.half_bytes, bytes_, nonce};
  } else if (header->magic != kMagic || header->size != static_cast<uint64_t>(o.size) ||
             header->half_bytes != o.half_bytes || header->nonce != nonce) {
    return Status::InvalidArgument(what + ": segment " + object + " does not match this group");
  }
  members_[o.rank].cpu.store(-1);  // not seen yet: peers spin
  members_[o.rank].pid.store(static_cast<int32_t>(getpid()));
  members_[o.rank].start_time.store(ProcessStartTime("self"));
  return Status::OK();
}

void ShmSegment::Attach(void* base) {
  base_ = base;
  members_ = reinterpret_cast<ShmMember*>(static_cast<char*>(base) + kMembersOffset);
  slots_ = static_cast<char*>(base) + SlotsOffset(size_);
}

// Member 0 makes the segment and publishes how to open it under "<scope>/shm/name" ("!<error>"
// when it cannot, so the others fail at once); every member maps it and counts itself in under
// "<scope>/shm/attached"; the last one sets "<scope>/shm/ready". Normally the segment is
// anonymous (Create): it has no name in /dev/shm at any time, so a member killed at any point
// leaves nothing behind. If a member could not open it, "ready" says "named <k>" (k members
// missed it): member 0 gives the same file a name (linkat), those k open it by name and count in
// under "attached2", the last sets "ready2", and member 0 removes the name. A group whose member
// 0 cannot make anonymous segments uses a named one from the start (published as its name;
// removed once "ready" is set).
Result<std::unique_ptr<ShmSegment>> ShmSegment::Open(const Options& o) {
  if (o.size < 1 || o.rank < 0 || o.rank >= o.size || o.kv == nullptr || o.scope.empty() ||
      o.half_bytes < kPage || o.half_bytes % kPage != 0 || o.timeout.count() <= 0) {
    return Status::InvalidArgument("shm: bad segment options for rank " + std::to_string(o.rank) +
                                   " of " + std::to_string(o.size) + " in scope '" + o.scope + "'");
  }
  const std::string what = "shm segment of scope '" + o.scope + "' as rank " +
                           std::to_string(o.rank) + " of " + std::to_string(o.size);
  const size_t total = TotalBytes(o.size, o.half_bytes);
  const std::string prefix = o.scope + "/shm/";
  std::unique_ptr<ShmSegment> seg(new ShmSegment(total, o.size, o.half_bytes));
  if (o.rank == 0) {
    auto made = Create(o, total, what);
    uint64_t nonce = 0;
    if (getrandom(&nonce, sizeof(nonce), 0) != sizeof(nonce)) {
      nonce = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    }
    Status status =
        made.ok() ? seg->Adopt(o, made->fd, true, nonce, what, made->published) : made.status();
    if (!status.ok()) {
      if (made.ok()) {
        close(made->fd);
        if (!made->name.empty()) shm_unlink(made->name.c_str());
      }
      // Tell the others now rather than letting them wait out the timeout for the name.
      if (o.size > 1) (void)o.kv->Set(prefix + "name", "!" + status.message());
      return status;
    }
    // The others learn the nonce with the reference and find it in the header.
    status = o.size == 1
                 ? o.kv->Set(prefix + "ready", "1")
                 : o.kv->Set(prefix + "name", made->published + " " + std::to_string(nonce));
    auto ready =
        status.ok() ? o.kv->Wait(prefix + "ready", o.timeout) : Result<std::string>(status);
    if (ready.ok() && ready->rfind("named ", 0) == 0) {
      // A member could not open the anonymous file: give it a name for the ones that missed it.
      const std::string name = control::ShmSegmentName(o.job_id, o.scope, getpid());
      const std::string path = kShmDir + name;
      const std::string self = "/proc/self/fd/" + std::to_string(made->fd);
      Status named = Status::OK();
      if (linkat(AT_FDCWD, self.c_str(), AT_FDCWD, path.c_str(), AT_SYMLINK_FOLLOW) != 0) {
        named = Status::IoError(Errno(what + ": naming the segment " + path));
        (void)o.kv->Set(prefix + "ready2", "!" + named.message());
      }
      (void)o.kv->Set(prefix + "named", named.ok() ? name : "!" + named.message());
      ready = named.ok() ? o.kv->Wait(prefix + "ready2", o.timeout) : Result<std::string>(named);
      if (named.ok()) shm_unlink(name.c_str());
    }
    close(made->fd);
    // Every member has mapped the segment (or the group failed): drop a name either way.
    if (!made->name.empty()) shm_unlink(made->name.c_str());
    if (!ready.ok()) return ready.status().WithContext(what);
  } else {
    auto published = o.kv->Wait(prefix + "name", o.timeout);
    if (!published.ok()) return published.status().WithContext(what + ": waiting for member 0");
    HVD_RETURN_IF_ERROR(Member0Failure(*published, what, "create the segment"));
    const size_t cut = published->rfind(' ');
    const std::string reference = published->substr(0, cut);
    const uint64_t nonce =
        cut == std::string::npos ? 0 : std::strtoull(published->c_str() + cut + 1, nullptr, 10);
    // Maps member 0's file `file` (closed after) and registers this member in it.
    auto adopt = [&](int file, const std::string& object) {
      Status adopted = seg->Adopt(o, file, false, nonce, what, object);
      close(file);
      return adopted;
    };
    int fd = -1;
    if (!reference.empty() && reference[0] == '@') {
      HVD_ASSIGN_OR_RETURN(fd, OpenAnonymous(reference, total, what));
    } else {
      HVD_ASSIGN_OR_RETURN(fd, OpenNamed(reference, total, what));
    }
    if (fd >= 0) HVD_RETURN_IF_ERROR(adopt(fd, reference));
    Status status = Status::OK();
    auto attached = o.kv->Add(prefix + "attached", fd >= 0 ? 1 : 1 + kMissed);
    if (attached.ok() && *attached % kMissed == o.size - 1) {
      const int64_t missed = *attached / kMissed;
      status = o.kv->Set(prefix + "ready", missed == 0 ? "1" : "named " + std::to_string(missed));
    }
    if (!attached.ok()) status = attached.status();
    auto ready =
        status.ok() ? o.kv->Wait(prefix + "ready", o.timeout) : Result<std::string>(status);
    if (!ready.ok()) return ready.status().WithContext(what);
    if (ready->rfind("named ", 0) == 0) {
      const int64_t missed = std::strtoll(ready->c_str() + 6, nullptr, 10);
      if (fd < 0) {
        auto name = o.kv->Wait(prefix + "named", o.timeout);
        if (!name.ok()) {
          return name.status().WithContext(what + ": waiting for member 0 to name the segment");
        }
        HVD_RETURN_IF_ERROR(Member0Failure(*name, what, "name the segment"));
        HVD_ASSIGN_OR_RETURN(fd, OpenNamed(*name, total, what));
        HVD_RETURN_IF_ERROR(adopt(fd, *name));
        auto counted = o.kv->Add(prefix + "attached2", 1);
        if (!counted.ok()) return counted.status().WithContext(what);
        if (*counted == missed) HVD_RETURN_IF_ERROR(o.kv->Set(prefix + "ready2", "1"));
      }
      auto done = o.kv->Wait(prefix + "ready2", o.timeout);
      if (!done.ok()) return done.status().WithContext(what);
      HVD_RETURN_IF_ERROR(Member0Failure(*done, what, "name the segment"));
    }
  }
  Status finished = o.kv->FinishScope(prefix, o.size);
  if (!finished.ok()) HVD_LOG_DEBUG("{}: cleanup: {}", what, finished.ToString());
  seg->OpenPidfds();
  return seg;
}

}  // namespace hvd::runtime
