// The emulated NCCL communicator's shared state (comm_state.h).
#include "test/gpu_emulator/comm_state.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>

namespace hvd::gpu_emulator {

size_t EnvBytes(const char* name, size_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? static_cast<size_t>(std::atoll(v)) : fallback;
}

long Futex(std::atomic<uint32_t>* word, int op, uint32_t value, const timespec* timeout) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, timeout, nullptr, 0);
}

void Wake(std::atomic<uint32_t>* word) { Futex(word, FUTEX_WAKE, INT32_MAX, nullptr); }

bool ProcessGone(int pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';
}

namespace {

// The last failure's text, of any thread (a stream's included), for ncclGetLastError.
std::mutex g_error_mu;
std::string g_last_error;
thread_local std::string tl_last_error_copy;

}  // namespace

ncclResult_t NcclFail(ncclResult_t r, const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(g_error_mu);
    g_last_error = why;
  }
  std::fprintf(stderr, "[gpu emulator] NCCL: %s\n", why.c_str());
  return r;
}

const char* LastErrorText() {
  std::lock_guard<std::mutex> lock(g_error_mu);
  tl_last_error_copy = g_last_error;
  return tl_last_error_copy.c_str();
}

namespace {

// NCCL's host identity: NCCL_HOSTID when set, else the host name.
uint64_t HostHash() {
  const char* id = std::getenv("NCCL_HOSTID");
  std::string host;
  if (id != nullptr && *id != '\0') {
    host = id;
  } else {
    char name[256] = {};
    gethostname(name, sizeof(name) - 1);
    host = name;
  }
  return std::hash<std::string>{}(host);
}

}  // namespace

ncclResult_t Join(CommState& c) {
  const int fd = shm_open(c.name.c_str(), O_CREAT | O_RDWR, 0600);
  if (fd < 0) return NcclFail(ncclSystemError, "shm_open " + c.name + ": " + std::strerror(errno));
  const size_t n = static_cast<size_t>(c.nranks);
  const size_t header = (sizeof(Header) + 4095) / 4096 * 4096;
  const size_t boxes = (n * n * sizeof(Mailbox) + 4095) / 4096 * 4096;
  c.mapped = header + boxes + n * c.slot_bytes + n * n * c.box_bytes;
  if (ftruncate(fd, static_cast<off_t>(c.mapped)) != 0) {
    close(fd);
    return NcclFail(ncclSystemError, "sizing " + c.name + ": " + std::strerror(errno));
  }
  void* base = mmap(nullptr, c.mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED) return NcclFail(ncclSystemError, "mapping " + c.name);
  c.header = static_cast<Header*>(base);
  c.boxes = reinterpret_cast<Mailbox*>(static_cast<char*>(base) + header);
  c.slots = static_cast<char*>(base) + header + boxes;
  c.box_data = c.slots + n * c.slot_bytes;
  c.header->pids[c.rank] = getpid();
  c.header->host_hash[c.rank] = HostHash();
  c.header->device[c.rank] = c.device;
  // The segment starts zeroed; nranks and magic are written by everyone alike.
  c.header->nranks = static_cast<uint32_t>(c.nranks);
  c.header->magic = kMagic;
  c.mapped_header.store(c.header);
  if (c.header->joined.fetch_add(1) + 1 == n) {
    c.header->generation.fetch_add(1);
    Wake(&c.header->generation);
  }
  return ncclSuccess;
}

// Waits for every rank to join (until aborted: the caller bounds the wait); then rank 0 unlinks
// the segment's name, which every rank has mapped by then.
void FinishInit(const std::shared_ptr<CommState>& c) {
  const ncclResult_t joined = Join(*c);
  if (joined != ncclSuccess) {
    c->async = joined;
    return;
  }
  while (c->header->joined.load() < static_cast<uint32_t>(c->nranks)) {
    const uint32_t seen = c->header->generation.load();
    if (c->header->joined.load() >= static_cast<uint32_t>(c->nranks)) break;
    if (c->aborted.load()) {
      // Aborted before everyone joined (ncclCommAbort may have unlinked the name before this
      // thread created it): nobody else will unlink it.
      shm_unlink(c->name.c_str());
      return;
    }
    const timespec tick{0, 20'000'000};
    Futex(&c->header->generation, FUTEX_WAIT, seen, &tick);
  }
  if (!c->Barrier()) return;
  if (c->rank == 0) shm_unlink(c->name.c_str());
  // NCCL refuses two ranks on one GPU of one host ("Duplicate GPU detected"): so does this, so
  // that a caller who would get that on a GPU gets it here too.
  for (int r = 0; r < c->nranks; ++r) {
    if (r == c->rank || c->header->host_hash[r] != c->header->host_hash[c->rank] ||
        c->header->device[r] != c->header->device[c->rank]) {
      continue;
    }
    c->async = NcclFail(ncclInvalidUsage,
                        "Duplicate GPU detected: rank " + std::to_string(c->rank) + " and rank " +
                            std::to_string(r) + " both on CUDA device " +
                            std::to_string(c->device) + " of one host (NCCL_HOSTID or host name)");
    return;
  }
  int expected = ncclInProgress;
  c->async.compare_exchange_strong(expected, ncclSuccess);
}

}  // namespace hvd::gpu_emulator
