#ifndef HVD_RUNTIME_TRANSPORTS_GLOO_GLOO_STORE_H_
#define HVD_RUNTIME_TRANSPORTS_GLOO_GLOO_STORE_H_

#include <gloo/rendezvous/store.h>

#include <chrono>
#include <mutex>
#include <string>
#include <utility>
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

// GlooRecordingStore forwards to another store and keeps what get() returned, by key. Gloo's
// connectFullMesh publishes each rank's pair addresses under its rank number and gets its
// peers' before connecting to them: afterwards those values are the only record of the
// listening address each peer gave this rank, which gloo's own errors print on the side that
// accepted the connection (GlooCommunicator::LearnEndpoints). Same threading as the inner store.
class GlooRecordingStore : public gloo::rendezvous::Store {
 public:
  explicit GlooRecordingStore(gloo::rendezvous::Store* inner) : inner_(inner) {}

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

  // What get(key) returned last; empty if it was never called for `key`.
  std::vector<char> Got(const std::string& key) const;

 private:
  gloo::rendezvous::Store* const inner_;
  mutable std::mutex mu_;
  std::vector<std::pair<std::string, std::vector<char>>> got_;
};

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_GLOO_GLOO_STORE_H_
