#ifndef HVD_RUNTIME_TRANSPORTS_TCP_TCP_TRANSPORT_H_
#define HVD_RUNTIME_TRANSPORTS_TCP_TCP_TRANSPORT_H_

#include <poll.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/transports/communicator.h"

namespace hvd::runtime {

// One contiguous part of a stream. On a receive stream with `reduce` set, the arriving bytes
// are combined into `data` (dst = op(dst, incoming)) through a small cache-resident scratch
// instead of overwriting it.
struct TcpPiece {
  char* data = nullptr;
  size_t bytes = 0;
  bool reduce = false;
  // A reduce piece whose every element, once reduced, gets the reducer's `finish` (when it has
  // one) before anything forwards it: the last reduce-scatter step of an allreduce, scaled.
  bool finish = false;
};

// One direction of traffic with one peer during one collective: the concatenation of
// `pieces`, moved in order. A send stream may be throttled by a receive stream of the same
// run (pipelining: forward what has arrived / been reduced): it may send at most
// `ready + source->processed()` bytes. A receive stream with `grow` set first reads an 8-byte
// little-endian length (at most `max_grow`), resizes *grow and receives that many bytes into it.
struct TcpStream {
  int peer = -1;
  bool send = false;
  std::vector<TcpPiece> pieces;
  size_t ready = SIZE_MAX;
  const TcpStream* source = nullptr;
  std::string* grow = nullptr;
  size_t max_grow = size_t{1} << 30;

  size_t processed() const { return done_; }
  bool finished() const { return piece_ == pieces.size(); }
  // Makes this a fresh, empty stream with peer `to`, keeping the capacity of `pieces` (so that
  // a reused stream allocates nothing once its plans have been seen).
  void Reset(int to, bool sending) {
    peer = to;
    send = sending;
    pieces.clear();
    ready = SIZE_MAX;
    source = nullptr;
    grow = nullptr;
    max_grow = size_t{1} << 30;
    piece_ = offset_ = done_ = pending_ = 0;
  }

  // Progress, owned by TcpTransport::Run.
  size_t piece_ = 0;    // current piece
  size_t offset_ = 0;   // bytes of the current piece sent / received and processed
  size_t done_ = 0;     // total bytes sent / processed
  size_t pending_ = 0;  // reduce pieces: bytes received into scratch, not yet reduced
  uint8_t header_[8] = {};
};

// Combines `count` elements: dst[i] = op(dst[i], src[i]).
struct TcpReducer {
  size_t elem = 1;
  std::function<void(void* dst, const void* src, int64_t count)> fn;
  // Applied once to every element of the result where the algorithm completes it (an
  // Average's 1/n: Communicator::AllreduceScaled); empty: nothing.
  std::function<void(void* data, int64_t count)> finish;
};

// Names the running collective in error messages ("tcp barrier on rank 0 of 2"). The text is
// built only when an error needs it, so a successful collective allocates nothing. Refers to
// the callable it was made from (not owned), which must outlive it: make one per call, on the
// stack, and pass it down by reference.
class TcpWhat {
 public:
  template <typename Fn>
  explicit TcpWhat(const Fn& fn)
      : fn_(&fn),
        call_([](const void* f) -> std::string { return (*static_cast<const Fn*>(f))(); }) {}
  template <typename Fn>
  explicit TcpWhat(const Fn&& fn) = delete;  // would dangle
  std::string operator()() const { return call_(fn_); }

 private:
  const void* fn_;
  std::string (*call_)(const void*);
};

// TcpTransport owns the connected, authenticated sockets of one group (one per peer; none for
// this rank) and moves streams over them: non-blocking sockets driven by poll(), every wait
// bounded by the caller's timeout, no busy spin and no extra threads. Run() is called from
// one thread at a time; Abort() and Shutdown() from any thread.
class TcpTransport {
 public:
  using Clock = std::chrono::steady_clock;

  // `fds[r]` is the socket to group rank r (-1 for self); `peer_names[r]` names it in errors
  // ("rank 1 (host-b 10.0.0.2:41234)"). Takes ownership of the descriptors.
  TcpTransport(int rank, std::vector<int> fds, std::vector<std::string> peer_names);
  ~TcpTransport();
  TcpTransport(const TcpTransport&) = delete;
  TcpTransport& operator=(const TcpTransport&) = delete;

  // Moves every stream to completion. Errors: kRemoteError naming the peer (closed / reset),
  // kTimeout naming the peers still owing bytes once no stream has moved a byte for `timeout`
  // (a bound on each wait, as Gloo's: a large collective on a slow link takes as long as it
  // moves), kAborted after Abort(); `what` prefixes them. Allocates nothing once the streams'
  // scratch and poll set have grown to their largest use.
  Status Run(std::span<TcpStream> streams, const TcpReducer* reducer, Clock::duration timeout,
             const TcpWhat& what);

  // Dead-peer detection for data in flight (0 = off, the default): while Run waits, four times
  // a second it asks the kernel (TCP_INFO) about every peer it still owes or expects bytes; a
  // peer with sent data unacknowledged, or window probes unanswered, for `timeout` is dead
  // (kRemoteError naming it). Idle connections are covered by the mesh's TCP keepalive.
  // Call before the first Run.
  void set_heartbeat_timeout(std::chrono::milliseconds timeout) { heartbeat_timeout_ = timeout; }
  // When no stream can move, Run retries the sockets without blocking for this long before it
  // sleeps in poll() (0 = sleep at once, the default). A reply within it costs no sleep and no
  // wake-up of a halted CPU, which on a VM goes through the hypervisor: 2 ranks over loopback
  // on the 2-vCPU VM, 4 KiB 148-180 -> 40-76 us, 64 KiB 245-277 -> 78-127 us with 50 us. A
  // plain spin is only worth it with a CPU per rank (the spinner would hold the CPU its peer
  // needs). With `yield`, each retry first gives the CPU away (sched_yield): with more ranks
  // than CPUs the peer this rank waits for may be queued on this very CPU (backend_registry.cc
  // has the numbers). Call before the first Run.
  void set_busy_poll(std::chrono::microseconds budget, bool yield = false) {
    busy_poll_ = budget;
    busy_yield_ = yield;
  }

  // Wakes a blocked Run (which fails with kAborted) and shuts every socket down so that peers
  // fail fast. Idempotent.
  void Abort();
  // Shuts every socket down (peers see EOF); used after a failure.
  void Shutdown();
  // Communicator::CheckPeers: a peer whose connection the kernel saw closed (its FIN, even with
  // bytes still unread), reset or failed (keepalive) is kRemoteError naming it. One poll() of
  // every socket, timeout 0; reads nothing.
  Status CheckClosed() const;
  bool aborted() const { return aborted_.load(); }
  const std::string& peer_name(int r) const { return peer_names_[r]; }
  // Communicator::lost_member: the first peer a failure named (closed, reset, silent), -1 none.
  int lost_peer() const { return lost_peer_.get(); }

 private:
  // Move as many bytes as the socket takes now; *moved is set when any byte moved.
  Status PumpSend(TcpStream& s, bool* moved);
  Status PumpRecv(TcpStream& s, size_t index, const TcpReducer* reducer, bool* moved);
  Status ReduceScratch(TcpStream& s, char* scratch, const TcpReducer* reducer);
  size_t SendLimit(const TcpStream& s) const;
  // kRemoteError naming `peer` (kAborted after Abort()); notes it as lost_peer().
  Status PeerError(int peer, const char* what, int err) const;
  Status CheckPeersAlive(std::span<TcpStream> streams) const;
  // Settle for a stream this rank receives on: a bad length the peer announced names the peer
  // and records it as lost_peer().
  Status SettleReceived(TcpStream& s) const;

  const int rank_;
  std::vector<int> fds_;
  std::vector<std::string> peer_names_;
  mutable FirstLostMember lost_peer_;
  int abort_fd_ = -1;  // eventfd
  std::atomic<bool> aborted_{false};
  std::atomic<bool> shut_down_{false};  // Shutdown() was called
  std::chrono::milliseconds heartbeat_timeout_{0};
  std::chrono::microseconds busy_poll_{0};
  bool busy_yield_ = false;
  std::mutex shutdown_mu_;
  std::vector<std::vector<char>> scratch_;  // one per receive stream slot, grown on demand
  std::vector<pollfd> pfds_;                // Run's poll set; keeps its capacity
};

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_TCP_TCP_TRANSPORT_H_
