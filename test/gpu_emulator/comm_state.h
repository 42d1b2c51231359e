// One emulated NCCL communicator's shared state (comm_state.cc): the shared-memory segment all
// its ranks map (barrier, the calls each rank announces, slots and mailboxes), and this rank's
// view of it. nccl.cc runs the calls on it.
#pragma once

#include <linux/futex.h>
#include <nccl.h>
#include <sys/mman.h>
#include <time.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace hvd::gpu_emulator {

// `name` as a byte count (or any non-negative number), `fallback` when unset or empty.
size_t EnvBytes(const char* name, size_t fallback);
long Futex(std::atomic<uint32_t>* word, int op, uint32_t value, const timespec* timeout);
void Wake(std::atomic<uint32_t>* word);
// Whether process `pid` has exited (gone, or a zombie).
bool ProcessGone(int pid);
// Records `why` as the last error (ncclGetLastError, of any thread), prints it, returns `r`.
ncclResult_t NcclFail(ncclResult_t r, const std::string& why);
// The last error's text, copied for the calling thread.
const char* LastErrorText();

constexpr uint64_t kMagic = 0x68766447505545ULL;  // "hvdGPUE"
constexpr int kMaxRanks = 64;

// What each rank says it is about to run, checked against the others before any data moves.
struct OpDesc {
  uint32_t kind;
  uint32_t type;
  uint32_t op;
  int32_t root;
  uint64_t count;
};

struct Mailbox {  // one direction of one pair of ranks
  std::atomic<uint64_t> written;
  std::atomic<uint64_t> read;
  uint64_t bytes;  // of the chunk in it
  uint64_t total;  // of the whole message
};

struct Header {
  uint64_t magic;
  uint32_t nranks;
  std::atomic<uint32_t> joined;
  std::atomic<uint32_t> arrived;     // this barrier's arrivals
  std::atomic<uint32_t> generation;  // the barrier's futex word
  std::atomic<uint32_t> p2p;         // bumped at every mailbox change: the p2p futex word
  int32_t pids[kMaxRanks];
  OpDesc ops[kMaxRanks];
  // Where each rank's GPU is, as NCCL tells GPUs apart: its host (NCCL_HOSTID, else the host
  // name) and the device.
  uint64_t host_hash[kMaxRanks];
  int32_t device[kMaxRanks];
};

// One rank's communicator; the work queued on streams holds it by shared_ptr, so an abort
// while work is queued is safe.
struct CommState {
  int nranks = 0;
  int rank = 0;
  int device = 0;
  bool blocking = true;
  std::string name;  // the shared-memory segment's
  size_t slot_bytes = 0;
  size_t box_bytes = 0;
  size_t mapped = 0;
  Header* header = nullptr;
  // `header` once mapped, for ncclCommAbort, which may come from another thread while a
  // non-blocking init's thread still maps it.
  std::atomic<Header*> mapped_header{nullptr};
  char* slots = nullptr;     // nranks slots of slot_bytes
  Mailbox* boxes = nullptr;  // nranks * nranks: [from * nranks + to]
  char* box_data = nullptr;
  std::atomic<bool> aborted{false};
  std::atomic<int> async{ncclInProgress};
  std::atomic<int> pending_polls{0};  // ncclInProgress answers still to give (in-progress mode)
  // NCCL's communicators are not thread-safe: its caller orders the calls it makes on one
  // (NCCL 2.28's ncclCommGetAsyncError completes the launch a non-blocking call left behind,
  // joining the launch's thread and freeing its job, so two threads polling at once free it
  // twice). Every call but ncclCommAbort counts itself in `users` (two at once: the emulator
  // exits naming the call) and bumps `calls`, a plain counter: a data race for ThreadSanitizer
  // where callers never order their calls (nccl.cc OneCaller).
  std::atomic<int> users{0};
  std::atomic<const char*> user_call{nullptr};  // the call of the one in it, for the message
  int64_t calls = 0;
  std::mutex mu;
  std::map<int, double> premul;  // live ncclRedOpCreatePreMulSum ops -> their scalar
  int next_op = ncclNumOps;

  ~CommState() {
    if (header != nullptr) munmap(header, mapped);
  }

  char* Slot(int r) const { return slots + static_cast<size_t>(r) * slot_bytes; }
  Mailbox& Box(int from, int to) const { return boxes[from * nranks + to]; }
  char* BoxData(int from, int to) const {
    return box_data + static_cast<size_t>(from * nranks + to) * box_bytes;
  }

  // Aborted, or failed (Break).
  bool Broken() {
    if (aborted.load()) return true;
    const int a = async.load();
    return a != ncclSuccess && a != ncclInProgress;
  }

  // Fails the communicator (its async error; the first failure stays), as NCCL does when a
  // peer is lost or the ranks disagree.
  void Break(ncclResult_t r, const std::string& why) {
    int expected = ncclSuccess;
    if (async.compare_exchange_strong(expected, r)) NcclFail(r, why);
  }

  // Waits on `word` while it is `seen`; false once the communicator is aborted or broken (a
  // peer process is gone).
  bool WaitWord(std::atomic<uint32_t>* word, uint32_t seen, int* checks) {
    if (Broken()) return false;
    const timespec tick{0, 10'000'000};
    Futex(word, FUTEX_WAIT, seen, &tick);
    // HVD_GPU_EMU_PEER_CHECK=0: a lost peer is not noticed (as NCCL over shared memory or
    // NVLink, which waits for ever): only the caller's ncclCommAbort ends the wait.
    static const bool check_peers = EnvBytes("HVD_GPU_EMU_PEER_CHECK", 1) != 0;
    if (check_peers && ++*checks % 2 == 0) {
      for (int r = 0; r < nranks; ++r) {
        if (r != rank && header->pids[r] != 0 && ProcessGone(header->pids[r])) {
          Break(ncclRemoteError, "rank " + std::to_string(r) + " (pid " +
                                     std::to_string(header->pids[r]) + ") of communicator " + name +
                                     " is gone");
          return false;
        }
      }
    }
    return !Broken();
  }

  bool Barrier() {
    const uint32_t generation = header->generation.load();
    if (header->arrived.fetch_add(1) + 1 == static_cast<uint32_t>(nranks)) {
      header->arrived.store(0);
      header->generation.fetch_add(1);
      Wake(&header->generation);
      return true;
    }
    int checks = 0;
    while (header->generation.load() == generation) {
      if (!WaitWord(&header->generation, generation, &checks)) return false;
    }
    return true;
  }

  // Everyone's OpDesc for the collective about to run must agree.
  bool Agree(const OpDesc& mine, const char* what) {
    header->ops[rank] = mine;
    if (!Barrier()) return false;
    for (int r = 0; r < nranks; ++r) {
      const OpDesc& o = header->ops[r];
      if (std::memcmp(&o, &mine, sizeof(OpDesc)) != 0) {
        char text[320];
        std::snprintf(text, sizeof(text),
                      "%s: rank %d called collective %u (count %llu, type %u, op %u, root %d) "
                      "while rank %d called collective %u (count %llu, type %u, op %u, root %d)",
                      what, rank, mine.kind, static_cast<unsigned long long>(mine.count), mine.type,
                      mine.op, mine.root, r, o.kind, static_cast<unsigned long long>(o.count),
                      o.type, o.op, o.root);
        Break(ncclInvalidUsage, text);
        return false;
      }
    }
    return true;
  }
};

// Maps the communicator's segment and joins it (this rank's pid, host and device).
ncclResult_t Join(CommState& c);
// Waits for every rank to join (until aborted: the caller bounds the wait), then checks that
// no two ranks are on one GPU of one host; the state settles to ncclSuccess or a failure.
void FinishInit(const std::shared_ptr<CommState>& c);

}  // namespace hvd::gpu_emulator
