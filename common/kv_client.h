#ifndef HVD_COMMON_KV_CLIENT_H_
#define HVD_COMMON_KV_CLIENT_H_

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "common/job_key.h"
#include "common/status.h"

namespace hvd::control {

// KvClient is a worker's (or test's) connection to hvdrun's rendezvous / key-value server.
// It speaks the authenticated frame protocol described in common/frame.h over one TCP
// connection. Keys are raw strings chosen by the caller; the server namespaces them by the
// job id sent in the handshake, and callers namespace them further by scope and round
// (e.g. "r0/global/gloo/3"). Thread-safe: calls are serialized by an internal mutex.
// Every call has a deadline; a broken connection is a kIoError Status, never an exception.
class KvClient {
 public:
  virtual ~KvClient() = default;

  // Connects, performs the authenticated handshake for `job_id`, and returns the client.
  // Fails with kTimeout after `timeout`, kPermissionDenied when the server rejects the key.
  static Result<std::unique_ptr<KvClient>> Connect(const std::string& host, uint16_t port,
                                                   const JobKey& key, const std::string& job_id,
                                                   std::chrono::milliseconds timeout);

  virtual Status Set(const std::string& key, const std::string& value) = 0;
  // kNotFound when absent.
  virtual Result<std::string> Get(const std::string& key) = 0;
  // Blocks until the key exists (server-side wait, no polling) or `timeout` passes (kTimeout
  // naming the key).
  virtual Result<std::string> Wait(const std::string& key, std::chrono::milliseconds timeout) = 0;
  // Atomically adds `delta` to the integer stored at key (absent = 0); returns the new value.
  virtual Result<int64_t> Add(const std::string& key, int64_t delta) = 0;
  // Deletes every key that starts with `prefix` once `expected` distinct callers have called
  // FinishScope for it (Horovod's DELETE-to-finish); returns OK immediately.
  virtual Status FinishScope(const std::string& prefix, int expected) = 0;
  virtual Status Delete(const std::string& key) = 0;
};

}  // namespace hvd::control

#endif  // HVD_COMMON_KV_CLIENT_H_
