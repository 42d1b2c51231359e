// NCCL on emulated GPUs (see README.md): the communicator calls hvd makes, between processes of
// one machine through a shared-memory segment per communicator. Collectives run on the stream
// they are queued on, after the work queued before them, as NCCL's kernels do; a rank whose
// peers have not arrived waits on the stream, not in the call. Stricter than NCCL where a
// mistake of the caller would otherwise pass unseen: ranks that call different collectives (or
// the same with other counts, types or roots) fail with ncclInvalidUsage naming both, a call on
// a non-blocking communicator that is still ncclInProgress is refused, and buffers must be
// device memory of the communicator's device, wholly inside one allocation.
#include <fcntl.h>
#include <linux/futex.h>
#include <nccl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "test/gpu_emulator/comm_state.h"
#include "test/gpu_emulator/device.h"
#include "test/gpu_emulator/reduce.h"

struct ncclComm {
  std::shared_ptr<hvd::gpu_emulator::CommState> state;
};

namespace hvd::gpu_emulator {
namespace {

constexpr char kIdPrefix[] = "hvd-gpu-emulator:";

enum Kind : uint32_t {
  kAllReduce = 1,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kSend,
  kRecv
};

const char* KindName(uint32_t kind) {
  static const char* names[] = {"?",         "allreduce",     "broadcast", "reduce",
                                "allgather", "reducescatter", "send",      "recv"};
  return kind < 8 ? names[kind] : "?";
}

// One call, its buffers already translated to their host-accessible aliases.
struct Call {
  explicit Call(Kind k) : kind(k) {}
  Kind kind;
  const char* send = nullptr;
  char* recv = nullptr;
  size_t count = 0;  // elements (per rank where NCCL counts so)
  ncclDataType_t type = ncclUint8;
  Reduction red;
  int root = -1;  // or the peer of a send or receive
};

// Set by hvd_gpu_emulator_exit_in_next_collective: the exit code (0: none).
std::atomic<int> g_exit_in_collective{0};

// A process that dies inside a collective, as its work starts on its stream: its peers have
// passed hvd's negotiation with it, but may not have read all of it yet, nor entered the call.
void MaybeExit() {
  const int code = g_exit_in_collective.load();
  if (code == 0) return;
  std::fprintf(stderr, "[gpu emulator] exiting with %d inside a NCCL collective, as asked\n", code);
  std::fflush(nullptr);
  _exit(code);
}

// Set by hvd_gpu_emulator_break_in_next_collective: the result (ncclSuccess: none).
std::atomic<int> g_break_in_collective{ncclSuccess};

bool RunCollective(CommState& c, const Call& call) {
  MaybeExit();
  const size_t elem = TypeSize(call.type);
  const int n = c.nranks;
  const OpDesc desc{call.kind, static_cast<uint32_t>(call.type),
                    static_cast<uint32_t>(call.red.op) | (call.red.premul ? 0x100u : 0u), call.root,
                    call.count};
  if (!c.Agree(desc, KindName(call.kind))) return false;
  // In chunks that fit a slot; every rank takes the same chunks (same count).
  const size_t per = call.kind == kReduceScatter ? c.slot_bytes / (elem * n) : c.slot_bytes / elem;
  for (size_t at = 0; at < call.count; at += per) {
    const size_t k = std::min(per, call.count - at);
    const size_t bytes = k * elem;
    char* mine = c.Slot(c.rank);
    switch (call.kind) {
      case kAllReduce:
      case kReduce:
      case kAllGather:
        std::memcpy(mine, call.send + at * elem, bytes);
        break;
      case kBroadcast:
        if (c.rank == call.root) std::memcpy(mine, call.send + at * elem, bytes);
        break;
      case kReduceScatter:
        for (int r = 0; r < n; ++r) {
          std::memcpy(mine + r * bytes, call.send + (r * call.count + at) * elem, bytes);
        }
        break;
      default:
        break;
    }
    if (!c.Barrier()) return false;
    std::vector<const char*> sources(n);
    switch (call.kind) {
      case kAllReduce:
        for (int r = 0; r < n; ++r) sources[r] = c.Slot(r);
        ReduceAll(call.recv + at * elem, sources, k, call.type, call.red);
        break;
      case kReduce:
        if (c.rank == call.root) {
          for (int r = 0; r < n; ++r) sources[r] = c.Slot(r);
          ReduceAll(call.recv + at * elem, sources, k, call.type, call.red);
        }
        break;
      case kBroadcast:
        std::memcpy(call.recv + at * elem, c.Slot(call.root), bytes);
        break;
      case kAllGather:
        for (int r = 0; r < n; ++r) {
          std::memcpy(call.recv + (r * call.count + at) * elem, c.Slot(r), bytes);
        }
        break;
      case kReduceScatter:
        for (int r = 0; r < n; ++r) sources[r] = c.Slot(r) + c.rank * bytes;
        ReduceAll(call.recv + at * elem, sources, k, call.type, call.red);
        break;
      default:
        break;
    }
    if (!c.Barrier()) return false;
  }
  return true;
}

// Sends and receives of one group, moved together through the pairs' mailboxes until every
// one is done (as NCCL runs a group's point-to-point calls concurrently).
bool RunPointToPoint(CommState& c, const std::vector<Call>& calls) {
  MaybeExit();
  std::vector<size_t> done(calls.size(), 0);
  int checks = 0;
  for (;;) {
    const uint32_t seen = c.header->p2p.load();
    bool all = true, moved = false;
    for (size_t i = 0; i < calls.size(); ++i) {
      const Call& call = calls[i];
      const size_t total = call.count * TypeSize(call.type);  // > 0: Submit drops empty calls
      if (done[i] == total) continue;
      // Only the first unfinished call per peer and direction moves (messages are in order).
      bool earlier = false;
      for (size_t j = 0; j < i; ++j) {
        if (calls[j].kind == call.kind && calls[j].root == call.root &&
            done[j] < calls[j].count * TypeSize(calls[j].type)) {
          earlier = true;
        }
      }
      all = false;
      if (earlier) continue;
      if (call.kind == kSend) {
        Mailbox& box = c.Box(c.rank, call.root);
        if (box.written.load() != box.read.load()) continue;  // the peer has not taken the last
        const size_t k = std::min(c.box_bytes, total - done[i]);
        std::memcpy(c.BoxData(c.rank, call.root), call.send + done[i], k);
        box.bytes = k;
        box.total = total;
        box.written.fetch_add(1);
        done[i] += k;
      } else {
        Mailbox& box = c.Box(call.root, c.rank);
        if (box.written.load() == box.read.load()) continue;
        if (box.total != total) {
          c.Break(ncclInvalidUsage, "rank " + std::to_string(c.rank) + " receives " +
                                        std::to_string(total) + " bytes from rank " +
                                        std::to_string(call.root) + ", which sends " +
                                        std::to_string(box.total));
          return false;
        }
        std::memcpy(call.recv + done[i], c.BoxData(call.root, c.rank), box.bytes);
        done[i] += box.bytes;
        box.read.fetch_add(1);
      }
      moved = true;
      c.header->p2p.fetch_add(1);
      Wake(&c.header->p2p);
    }
    if (all) return true;
    if (!moved && !c.WaitWord(&c.header->p2p, seen, &checks)) return false;
  }
}

// The calls of one group (or one call outside a group) for one communicator and stream.
struct Batch {
  std::shared_ptr<CommState> comm;
  cudaStream_t stream;
  std::vector<Call> calls;
};

thread_local int tl_group_depth = 0;
thread_local std::vector<Batch> tl_group;

// A launch whose kernels stop at once, as NCCL's do once its abort flag is set (a peer lost, a
// network error): the launch returns ncclSuccess, the communicator reports the error, and the
// stream gets no work, its outputs unwritten, so an event recorded after it completes at once.
bool MaybeBreak(CommState& c) {
  const int result = g_break_in_collective.exchange(ncclSuccess);
  if (result == ncclSuccess) return false;
  c.Break(static_cast<ncclResult_t>(result), "the collective stopped early, as asked");
  return true;
}

void Launch(Batch batch) {
  if (MaybeBreak(*batch.comm)) return;
  auto stream = StreamOf(batch.stream);
  Enqueue(stream, [batch = std::move(batch)] {
    CommState& c = *batch.comm;
    std::vector<Call> p2p;
    for (const Call& call : batch.calls) {
      if (call.kind == kSend || call.kind == kRecv) {
        p2p.push_back(call);
      } else if (!c.Broken() && !RunCollective(c, call)) {
        return;
      }
    }
    if (!p2p.empty() && !c.Broken()) RunPointToPoint(c, p2p);
  });
}

ncclResult_t Submit(ncclComm_t comm, cudaStream_t stream, Call call) {
  CommState& c = *comm->state;
  if (StreamOf(stream) == nullptr) {
    return NcclFail(ncclInvalidArgument, std::string(KindName(call.kind)) + ": not a live stream");
  }
  if (tl_group_depth > 0) {
    for (Batch& b : tl_group) {
      if (b.comm.get() == &c && b.stream == stream) {
        b.calls.push_back(call);
        return ncclSuccess;
      }
    }
    tl_group.push_back(Batch{comm->state, stream, {call}});
    return ncclSuccess;
  }
  Launch(Batch{comm->state, stream, {call}});
  const int polls = static_cast<int>(EnvBytes("HVD_GPU_EMU_IN_PROGRESS", 0));
  if (!c.blocking && polls > 0) {
    c.pending_polls = polls;
    return ncclInProgress;
  }
  return ncclSuccess;
}

// The checks NCCL makes of a call (and some it does not: see the top of the file).
ncclResult_t Check(ncclComm_t comm, const char* what) {
  if (comm == nullptr || comm->state == nullptr) {
    return NcclFail(ncclInvalidArgument, std::string(what) + ": no communicator");
  }
  CommState& c = *comm->state;
  if (c.aborted.load()) return NcclFail(ncclInvalidUsage, std::string(what) + ": aborted");
  if (c.pending_polls.load() > 0) {
    return NcclFail(ncclInvalidUsage,
                    std::string(what) +
                        " on a non-blocking communicator whose last call is still "
                        "ncclInProgress (poll ncclCommGetAsyncError until it settles first)");
  }
  const int a = c.async.load();
  if (a == ncclInProgress) {
    return NcclFail(ncclInvalidUsage, std::string(what) +
                                          " before the communicator's init "
                                          "finished");
  }
  if (a != ncclSuccess) return static_cast<ncclResult_t>(a);
  return ncclSuccess;
}

ncclResult_t Buffer(ncclComm_t comm, const void* p, size_t bytes, const char* what,
                    const char* which, char** out) {
  if (bytes == 0) {
    *out = nullptr;
    return ncclSuccess;
  }
  Span span;
  std::string why;
  if (!Locate(p, bytes, &span, &why)) {
    return NcclFail(ncclInvalidArgument, std::string(what) + " " + which + ": " + why);
  }
  if (span.where != Where::kDevice || span.device != comm->state->device) {
    char text[200];
    std::snprintf(text, sizeof(text), "%s %s %p is not memory of the communicator's device %d",
                  what, which, p, comm->state->device);
    return NcclFail(ncclInvalidArgument, text);
  }
  *out = span.backing;
  return ncclSuccess;
}

ncclResult_t Reduce(ncclComm_t comm, ncclRedOp_t op, ncclDataType_t type, const char* what,
                    Reduction* out) {
  if (TypeSize(type) == 0) return NcclFail(ncclInvalidArgument, std::string(what) + ": bad type");
  if (static_cast<int>(op) < ncclNumOps) {
    out->op = op;
    return ncclSuccess;
  }
  std::lock_guard<std::mutex> lock(comm->state->mu);
  auto it = comm->state->premul.find(static_cast<int>(op));
  if (it == comm->state->premul.end()) {
    return NcclFail(ncclInvalidArgument, std::string(what) + ": op " +
                                             std::to_string(static_cast<int>(op)) +
                                             " is not a live op of this communicator");
  }
  *out = Reduction{ncclSum, true, it->second};
  return ncclSuccess;
}

#define EMU_TRY(expr)                 \
  do {                                \
    const ncclResult_t r_ = (expr);   \
    if (r_ != ncclSuccess) return r_; \
  } while (0)

// Held for the length of a call on a communicator (CommState::users): a second thread that
// enters one while another thread is still in one is a caller that does not order its calls, as
// NCCL requires; the emulator says so and exits with 3, where NCCL might corrupt its heap.
class OneCaller {
 public:
  OneCaller(CommState* state, const char* what) : state_(state) {
    if (state_ == nullptr) return;
    if (state_->users.fetch_add(1) != 0) {
      const char* other = state_->user_call.load();
      std::fprintf(stderr,
                   "[gpu emulator] %s on communicator %s while another thread is in %s on it: "
                   "NCCL's communicators are not thread-safe (the caller must order its calls on "
                   "one)\n",
                   what, state_->name.c_str(), other != nullptr ? other : "a NCCL call");
      std::fflush(nullptr);
      _exit(3);
    }
    state_->user_call.store(what);
    ++state_->calls;  // unordered callers: a data race for ThreadSanitizer
  }
  OneCaller(ncclComm_t comm, const char* what)
      : OneCaller(comm == nullptr ? nullptr : comm->state.get(), what) {}
  ~OneCaller() {
    if (state_ != nullptr) state_->users.fetch_sub(1);
  }
  OneCaller(const OneCaller&) = delete;
  OneCaller& operator=(const OneCaller&) = delete;

 private:
  CommState* state_;
};

}  // namespace
}  // namespace hvd::gpu_emulator

using namespace hvd::gpu_emulator;  // NOLINT: the C entry points below

extern "C" {

// The emulator's own entry point (tests find it with dlsym): this process exits with `code`
// when its next collective or point-to-point group starts to run on its stream.
__attribute__((visibility("default"))) void hvd_gpu_emulator_exit_in_next_collective(int code) {
  g_exit_in_collective = code;
}

// The emulator's own entry point: this process's next collective stops early with `result` (an
// ncclResult_t) as its communicator's error, writing nothing, its stream work done.
__attribute__((visibility("default"))) void hvd_gpu_emulator_break_in_next_collective(int result) {
  g_break_in_collective = result;
}

const char* ncclGetErrorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error";
    case ncclSystemError:
      return "unhandled system error";
    case ncclInternalError:
      return "internal error";
    case ncclInvalidArgument:
      return "invalid argument";
    case ncclInvalidUsage:
      return "invalid usage";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}

const char* ncclGetLastError(ncclComm_t) { return LastErrorText(); }

ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) return ncclInvalidArgument;
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  if (id == nullptr) return ncclInvalidArgument;
  std::random_device random;
  char name[96];
  std::snprintf(name, sizeof(name), "%s/hvd-gpuemu-%d-%08x%08x", kIdPrefix, getpid(), random(),
                random());
  std::memset(id->internal, 0, sizeof(id->internal));
  std::memcpy(id->internal, name, std::strlen(name));
  return ncclSuccess;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* out, int nranks, ncclUniqueId id, int rank,
                                    ncclConfig_t* config) {
  if (out == nullptr || nranks < 1 || nranks > kMaxRanks || rank < 0 || rank >= nranks) {
    return NcclFail(ncclInvalidArgument, "ncclCommInitRank: bad rank or size");
  }
  const std::string text(id.internal, strnlen(id.internal, sizeof(id.internal)));
  if (text.rfind(kIdPrefix, 0) != 0) {
    return NcclFail(ncclInvalidArgument, "ncclCommInitRank: not an emulator's unique id");
  }
  // HVD_GPU_EMU_EXIT_IN_INIT=R: the process initialising rank R of a communicator exits (3)
  // instead, after its peers got the unique id: a member that dies before it joins.
  const char* exit_rank = std::getenv("HVD_GPU_EMU_EXIT_IN_INIT");
  if (exit_rank != nullptr && *exit_rank != '\0' && std::atoi(exit_rank) == rank) {
    std::fprintf(stderr, "[gpu emulator] exiting with 3 in ncclCommInitRank of rank %d, as asked\n",
                 rank);
    std::fflush(nullptr);
    _exit(3);
  }
  auto state = std::make_shared<CommState>();
  state->nranks = nranks;
  state->rank = rank;
  state->device = CurrentDevice();
  state->blocking = config == nullptr || config->blocking != 0;
  state->name = text.substr(std::strlen(kIdPrefix));
  state->slot_bytes = std::max<size_t>(EnvBytes("HVD_GPU_EMU_SLOT_BYTES", 4 << 20), 64);
  state->box_bytes = std::max<size_t>(EnvBytes("HVD_GPU_EMU_BOX_BYTES", 1 << 20), 64);
  *out = new ncclComm{state};
  if (state->blocking) {
    FinishInit(state);
    return static_cast<ncclResult_t>(state->async.load());
  }
  std::thread([state] { FinishInit(state); }).detach();
  return ncclInProgress;
}

ncclResult_t ncclCommInitRank(ncclComm_t* out, int nranks, ncclUniqueId id, int rank) {
  return ncclCommInitRankConfig(out, nranks, id, rank, nullptr);
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* state) {
  OneCaller one_caller(comm, "ncclCommGetAsyncError");
  if (comm == nullptr || state == nullptr) return ncclInvalidArgument;
  CommState& c = *comm->state;
  int polls = c.pending_polls.load();
  while (polls > 0 && !c.pending_polls.compare_exchange_weak(polls, polls - 1)) {
  }
  if (polls > 0) {
    *state = ncclInProgress;
    return ncclSuccess;
  }
  *state = static_cast<ncclResult_t>(c.async.load());
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  comm->state->aborted = true;
  // An init that never finished leaves the segment's name to whoever stops waiting.
  if (comm->state->async.load() == ncclInProgress) shm_unlink(comm->state->name.c_str());
  if (Header* header = comm->state->mapped_header.load()) {
    Wake(&header->generation);
    Wake(&header->p2p);
  }
  delete comm;  // the state lives on while queued work holds it
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) { return ncclCommAbort(comm); }

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  if (comm == nullptr || count == nullptr) return ncclInvalidArgument;
  *count = comm->state->nranks;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (comm == nullptr || rank == nullptr) return ncclInvalidArgument;
  *rank = comm->state->rank;
  return ncclSuccess;
}

ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t type,
                                      ncclScalarResidence_t residence, ncclComm_t comm) {
  OneCaller one_caller(comm, "ncclRedOpCreatePreMulSum");
  EMU_TRY(Check(comm, "ncclRedOpCreatePreMulSum"));
  if (op == nullptr || scalar == nullptr || residence != ncclScalarHostImmediate) {
    return NcclFail(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: bad arguments");
  }
  if (TypeSize(type) == 0) {
    return NcclFail(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: bad type");
  }
  CommState& c = *comm->state;
  std::lock_guard<std::mutex> lock(c.mu);
  const int id = c.next_op++;
  c.premul[id] = ScalarValue(scalar, type);
  *op = static_cast<ncclRedOp_t>(id);
  return ncclSuccess;
}

ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  OneCaller one_caller(comm, "ncclRedOpDestroy");
  if (comm == nullptr) return ncclInvalidArgument;
  CommState& c = *comm->state;
  std::lock_guard<std::mutex> lock(c.mu);
  if (c.premul.erase(static_cast<int>(op)) != 1) {
    return NcclFail(ncclInvalidArgument, "ncclRedOpDestroy: not a live op");
  }
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t type,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  OneCaller one_caller(comm, "ncclAllReduce");
  if (const int e = Injected("ncclAllReduce")) {
    return NcclFail(static_cast<ncclResult_t>(e), "ncclAllReduce failed, as asked");
  }
  EMU_TRY(Check(comm, "ncclAllReduce"));
  Call call(kAllReduce);
  EMU_TRY(Reduce(comm, op, type, "ncclAllReduce", &call.red));
  const size_t bytes = count * TypeSize(type);
  char* s = nullptr;
  EMU_TRY(Buffer(comm, send, bytes, "ncclAllReduce", "sendbuff", &s));
  EMU_TRY(Buffer(comm, recv, bytes, "ncclAllReduce", "recvbuff", &call.recv));
  call.send = s;
  call.count = count;
  call.type = type;
  if (count == 0) return ncclSuccess;
  return Submit(comm, stream, call);
}

ncclResult_t ncclReduce(const void* send, void* recv, size_t count, ncclDataType_t type,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  OneCaller one_caller(comm, "ncclReduce");
  EMU_TRY(Check(comm, "ncclReduce"));
  if (root < 0 || root >= comm->state->nranks) {
    return NcclFail(ncclInvalidArgument, "ncclReduce: bad root");
  }
  Call call(kReduce);
  EMU_TRY(Reduce(comm, op, type, "ncclReduce", &call.red));
  const size_t bytes = count * TypeSize(type);
  char* s = nullptr;
  EMU_TRY(Buffer(comm, send, bytes, "ncclReduce", "sendbuff", &s));
  // Only the root's receive buffer is used.
  if (comm->state->rank == root) {
    EMU_TRY(Buffer(comm, recv, bytes, "ncclReduce", "recvbuff", &call.recv));
  }
  call.send = s;
  call.count = count;
  call.type = type;
  call.root = root;
  if (count == 0) return ncclSuccess;
  return Submit(comm, stream, call);
}

ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t type,
                           int root, ncclComm_t comm, cudaStream_t stream) {
  OneCaller one_caller(comm, "ncclBroadcast");
  if (const int e = Injected("ncclBroadcast")) {
    return NcclFail(static_cast<ncclResult_t>(e), "ncclBroadcast failed, as asked");
  }
  EMU_TRY(Check(comm, "ncclBroadcast"));
  if (root < 0 || root >= comm->state->nranks || TypeSize(type) == 0) {
    return NcclFail(ncclInvalidArgument, "ncclBroadcast: bad root or type");
  }
  Call call(kBroadcast);
  const size_t bytes = count * TypeSize(type);
  char* s = nullptr;
  // Only the root's send buffer is read.
  if (comm->state->rank == root)
    EMU_TRY(Buffer(comm, send, bytes, "ncclBroadcast", "sendbuff", &s));
  EMU_TRY(Buffer(comm, recv, bytes, "ncclBroadcast", "recvbuff", &call.recv));
  call.send = s;
  call.count = count;
  call.type = type;
  call.root = root;
  if (count == 0) return ncclSuccess;
  return Submit(comm, stream, call);
}

ncclResult_t ncclAllGather(const void* send, void* recv, size_t count, ncclDataType_t type,
                           ncclComm_t comm, cudaStream_t stream) {
  OneCaller one_caller(comm, "ncclAllGather");
  if (const int e = Injected("ncclAllGather")) {
    return NcclFail(static_cast<ncclResult_t>(e), "ncclAllGather failed, as asked");
  }
  EMU_TRY(Check(comm, "ncclAllGather"));
  if (TypeSize(type) == 0) return NcclFail(ncclInvalidArgument, "ncclAllGather: bad type");
  Call call(kAllGather);
  const size_t bytes = count * TypeSize(type);
  char* s = nullptr;
  EMU_TRY(Buffer(comm, send, bytes, "ncclAllGather", "sendbuff", &s));
  EMU_TRY(Buffer(comm, recv, bytes * comm->state->nranks, "ncclAllGather", "recvbuff", &call.recv));
  call.send = s;
  call.count = count;
  call.type = type;
  if (count == 0) return ncclSuccess;
  return Submit(comm, stream, call);
}

ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t count, ncclDataType_t type,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  OneCaller one_caller(comm, "ncclReduceScatter");
  if (const int e = Injected("ncclReduceScatter")) {
    return NcclFail(static_cast<ncclResult_t>(e), "ncclReduceScatter failed, as asked");
  }
  EMU_TRY(Check(comm, "ncclReduceScatter"));
  Call call(kReduceScatter);
  EMU_TRY(Reduce(comm, op, type, "ncclReduceScatter", &call.red));
  const size_t bytes = count * TypeSize(type);
  char* s = nullptr;
  EMU_TRY(Buffer(comm, send, bytes * comm->state->nranks, "ncclReduceScatter", "sendbuff", &s));
  EMU_TRY(Buffer(comm, recv, bytes, "ncclReduceScatter", "recvbuff", &call.recv));
  call.send = s;
  call.count = count;
  call.type = type;
  if (count == 0) return ncclSuccess;
  return Submit(comm, stream, call);
}

ncclResult_t ncclSend(const void* send, size_t count, ncclDataType_t type, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  OneCaller one_caller(comm, "ncclSend");
  EMU_TRY(Check(comm, "ncclSend"));
  if (peer < 0 || peer >= comm->state->nranks || peer == comm->state->rank || TypeSize(type) == 0) {
    return NcclFail(ncclInvalidArgument, "ncclSend: bad peer or type");
  }
  Call call(kSend);
  char* s = nullptr;
  EMU_TRY(Buffer(comm, send, count * TypeSize(type), "ncclSend", "sendbuff", &s));
  call.send = s;
  call.count = count;
  call.type = type;
  call.root = peer;
  if (count == 0) return ncclSuccess;
  return Submit(comm, stream, call);
}

ncclResult_t ncclRecv(void* recv, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  OneCaller one_caller(comm, "ncclRecv");
  EMU_TRY(Check(comm, "ncclRecv"));
  if (peer < 0 || peer >= comm->state->nranks || peer == comm->state->rank || TypeSize(type) == 0) {
    return NcclFail(ncclInvalidArgument, "ncclRecv: bad peer or type");
  }
  Call call(kRecv);
  EMU_TRY(Buffer(comm, recv, count * TypeSize(type), "ncclRecv", "recvbuff", &call.recv));
  call.count = count;
  call.type = type;
  call.root = peer;
  if (count == 0) return ncclSuccess;
  return Submit(comm, stream, call);
}

ncclResult_t ncclGroupStart() {
  ++tl_group_depth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  if (const int e = Injected("ncclGroupEnd")) {
    --tl_group_depth;
    tl_group.clear();
    return NcclFail(static_cast<ncclResult_t>(e), "ncclGroupEnd failed, as asked");
  }
  if (tl_group_depth == 0) return NcclFail(ncclInvalidUsage, "ncclGroupEnd without a start");
  if (--tl_group_depth > 0) return ncclSuccess;
  std::vector<Batch> batches = std::move(tl_group);
  tl_group.clear();
  std::vector<CommState*> comms;
  for (const Batch& b : batches) {
    if (std::find(comms.begin(), comms.end(), b.comm.get()) == comms.end()) {
      comms.push_back(b.comm.get());
    }
  }
  std::deque<OneCaller> callers;
  for (CommState* c : comms) callers.emplace_back(c, "ncclGroupEnd");
  std::vector<std::shared_ptr<CommState>> nonblocking;
  for (Batch& b : batches) {
    if (!b.comm->blocking) nonblocking.push_back(b.comm);
    Launch(std::move(b));
  }
  const int polls = static_cast<int>(EnvBytes("HVD_GPU_EMU_IN_PROGRESS", 0));
  if (nonblocking.empty() || polls <= 0) return ncclSuccess;
  for (auto& comm : nonblocking) comm->pending_polls = polls;
  return ncclInProgress;
}

}  // extern "C"
