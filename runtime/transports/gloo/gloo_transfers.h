#ifndef HVD_RUNTIME_TRANSPORTS_GLOO_GLOO_TRANSFERS_H_
#define HVD_RUNTIME_TRANSPORTS_GLOO_GLOO_TRANSFERS_H_

#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace hvd::runtime {

// GlooTransfers posts and completes point-to-point transfers of gloo unbound buffers on one
// context: the building block of the direct (pairwise) collectives in gloo_collectives.h.
//
// Unbound buffers carry no cross-rank binding (a transfer is matched by peer and tag), so
// they are cached per local (address, size) and reused: a steady state whose buffers repeat
// allocates nothing. Tags come from one counter that advances identically on every rank
// because every rank issues the same sequence of collectives.
//
// Threading: one calling thread (the communicator's) uses everything except Abort(), which
// any thread may call: it wakes every blocked wait, which then throws. Waits throw gloo
// exceptions (timeout, closed pair) for the communicator to translate; each wait is bounded
// by the deadline set with StartOp() and moved by every completed wait (a timeout is a wait
// with nothing arriving).
class GlooTransfers {
 public:
  GlooTransfers(std::shared_ptr<gloo::Context> context, std::chrono::milliseconds timeout);
  ~GlooTransfers();

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Starts one collective: sets its deadline (now + timeout; each completed wait moves it).
  void StartOp();
  uint64_t NextTag() { return kTagBase + next_tag_++; }

  // The unbound buffer over [ptr, ptr + bytes). The cache holds size() + kSpareCached
  // buffers, so a collective may use up to size() + 2 distinct buffers at once.
  gloo::transport::UnboundBuffer* Buffer(const void* ptr, size_t bytes);

  // Post a transfer; zero-byte transfers are skipped by callers on both sides.
  void Send(gloo::transport::UnboundBuffer* buf, int peer, uint64_t tag, size_t offset,
            size_t bytes);
  void Recv(gloo::transport::UnboundBuffer* buf, int peer, uint64_t tag, size_t offset,
            size_t bytes);
  // Waits for one receive posted on `buf` to complete, in posting order per peer. Returns the
  // source of the most recent completion on `buf` (gloo keeps only that), so callers that
  // need to know which receive finished use one buffer per peer.
  int WaitRecv(gloo::transport::UnboundBuffer* buf);
  // Waits for every send posted since the last WaitSends().
  void WaitSends();

  void Abort();
  // Abort() for a lost peer: the woken waits (and every later call) throw a gloo::IoException
  // saying `reason` instead of "aborted". Any thread.
  void Fail(const std::string& reason);

 private:
  static constexpr uint64_t kTagBase = uint64_t{1} << 40;  // clear of legacy slot numbers
  static constexpr size_t kSpareCached = 6;

  struct Cached {
    const void* ptr;
    size_t bytes;
    std::unique_ptr<gloo::transport::UnboundBuffer> buf;
  };

  std::chrono::milliseconds Remaining() const;
  void Progressed();  // a wait completed: the deadline starts over
  [[noreturn]] void ThrowAborted(const char* what) const;

  std::shared_ptr<gloo::Context> context_;
  const int rank_;
  const int size_;
  const std::chrono::milliseconds timeout_;
  const size_t max_cached_;
  std::chrono::steady_clock::time_point deadline_;
  uint64_t next_tag_ = 0;
  std::vector<std::pair<gloo::transport::UnboundBuffer*, int>> pending_sends_;
  std::atomic<bool> aborted_{false};
  mutable std::mutex mu_;      // guards cache_ and reason_ between the caller and Abort()
  std::vector<Cached> cache_;  // most recently used first
  std::string reason_;         // Fail()'s
};

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_GLOO_GLOO_TRANSFERS_H_
