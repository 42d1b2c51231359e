#ifndef HVD_RUNTIME_TRANSPORTS_GLOO_GLOO_STORE_H_
#define HVD_RUNTIME_TRANSPORTS_GLOO_GLOO_STORE_H_

#include <gloo/rendezvous/store.h>

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "common/kv_client.h"
#include "common/status.h"

namespace hvd::runtime {

// GlooKvStore adapts hvdrun's authenticated key-value channel (control::KvClient) to the
// gloo::rendezvous::Store interface that gloo::rendezvous::Context::connectFullMesh speaks.
// Every gloo key is stored as "<scope>/<key>", so several contexts (global, local, cross,
// process sets, elastic rounds) can rendezvous through one server without clashing.
//
// Gloo's Store contract reports failures by exception; this class throws gloo::IoException
// and also records the originating Status (first_error()) so the adapter that called into
// gloo can surface the precise code (kTimeout, kIoError, ...) instead of a parsed message.
// wait() blocks in KvClient::Wait (a server-side wait, no polling) until the shared deadline.
// Not thread-safe beyond what KvClient guarantees; used by one connectFullMesh at a time.
class GlooKvStore : public gloo::rendezvous::Store {
 public:
  // `kv` must outlive this store. `default_timeout` bounds wait() calls that carry none.
  GlooKvStore(control::KvClient* kv, std::string scope, std::chrono::milliseconds default_timeout);

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

  // The first failure seen by any call, OK if none.
  Status first_error() const;

 private:
  std::string FullKey(const std::string& key) const { return scope_ + "/" + key; }
  [[noreturn]] void Fail(Status status);

  control::KvClient* const kv_;
  const std::string scope_;
  const std::chrono::milliseconds default_timeout_;
  mutable std::mutex mu_;
  Status first_error_;
};

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_GLOO_GLOO_STORE_H_
