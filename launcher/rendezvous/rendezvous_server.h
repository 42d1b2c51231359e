#ifndef HVD_LAUNCHER_RENDEZVOUS_RENDEZVOUS_SERVER_H_
#define HVD_LAUNCHER_RENDEZVOUS_RENDEZVOUS_SERVER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/frame.h"
#include "common/job_key.h"
#include "common/status.h"

namespace hvd::launcher {

struct RendezvousServerOptions {
  // Interface to listen on: an IP literal or a resolvable name. Never widened to 0.0.0.0
  // unless that is what is given.
  std::string bind_address = "127.0.0.1";
  uint16_t port = 0;      // 0 = any free port; see port()
  control::JobKey key{};  // must not be all zero
  // Non-empty: only clients whose handshake names this job id are admitted. Empty: any job id
  // is admitted and gets its own key namespace. Set/Get below address this job id's keys.
  std::string job_id;
  // A connection must complete the handshake within this time, and once a frame's header has
  // arrived its body must follow within it; otherwise the connection is dropped.
  std::chrono::milliseconds handshake_timeout{5000};
  uint32_t max_frame_bytes = control::kDefaultMaxFrameBytes;
  // Each observer's on_set is called on the I/O thread after a client set a key starting with
  // its prefix (the elastic driver's ready reports, the runtime's stack requests); it must not
  // block.
  struct KeyObserver {
    std::string prefix;
    std::function<void(const std::string& key, const std::string& value)> on_set;
  };
  std::vector<KeyObserver> observers;
};

// hvdrun's rendezvous / key-value server: the server side of the authenticated control
// channel (protocol: common/frame.h, bodies: common/kv_messages.h). Workers connect with
// control::KvClient to set, get, wait for, add to and delete keys and to finish scopes.
//
// Keys are namespaced by the job id each connection authenticated with, so clients of two
// jobs sharing one server never see each other's keys. Any connection that breaks the
// protocol (wrong key, replayed, truncated, oversized or garbage frame, silence past
// handshake_timeout) is closed with one WARNING naming the peer and the reason and counted in
// stats(); the server keeps serving everyone else.
//
// Threading: one internal I/O thread runs every connection (handlers never block; a Wait is a
// parked callback, not a parked thread). The public methods are thread-safe and may be called
// from any thread except that I/O thread.
class RendezvousServer {
 public:
  // Binds, listens and starts the I/O thread. InvalidArgument for a zero key or unusable
  // address, IoError when the address/port cannot be bound.
  static Result<std::unique_ptr<RendezvousServer>> Start(RendezvousServerOptions options);
  ~RendezvousServer();  // Stop()

  RendezvousServer(const RendezvousServer&) = delete;
  RendezvousServer& operator=(const RendezvousServer&) = delete;

  uint16_t port() const;               // the bound port (resolved when options.port was 0)
  const std::string& address() const;  // options.bind_address

  // Launcher-side direct access to options.job_id's namespace (elastic driver, tests); Set
  // wakes waiting clients like a client's set does.
  void Set(const std::string& key, std::string value);
  std::optional<std::string> Get(const std::string& key) const;

  // Gives up on every key of options.job_id's namespace that starts with `prefix` (an elastic
  // round that will never form): deletes them, answers every pending wait on such a key with
  // kAborted(`reason`), and answers every later set, get, add, delete or wait on one the same
  // way, so no client blocks on them again. Runs on the I/O thread, ordered before whatever
  // this thread does on the server afterwards (a Set's wake-ups included); returns at once.
  void AbortPrefix(const std::string& prefix, const std::string& reason);

  // Idempotent: stops accepting, tells clients with a pending wait that the server is
  // shutting down (kAborted), closes every connection and joins the I/O thread.
  void Stop();

  struct Stats {
    uint64_t requests, rejected_auth, rejected_replay, rejected_oversize, rejected_malformed,
        handshake_timeouts;
    // Accepts that failed (out of descriptors: retried every 100 ms), and connections closed
    // at once because a quarter of the descriptor limit was already in handshakes.
    uint64_t accept_failures, rejected_busy;
  };
  Stats stats() const;

 private:
  struct Impl;  // defined in rendezvous_server.cc

  explicit RendezvousServer(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
};

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_RENDEZVOUS_RENDEZVOUS_SERVER_H_
