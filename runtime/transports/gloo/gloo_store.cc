#include "runtime/transports/gloo/gloo_store.h"

#include <gloo/common/error.h>

#include <utility>

namespace hvd::runtime {

GlooKvStore::GlooKvStore(control::KvClient* kv, std::string scope,
                         std::chrono::milliseconds default_timeout)
    : kv_(kv), scope_(std::move(scope)), default_timeout_(default_timeout) {}

void GlooKvStore::Fail(Status status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (first_error_.ok()) first_error_ = status;
  }
  throw gloo::IoException(status.ToString());
}

Status GlooKvStore::first_error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return first_error_;
}

void GlooKvStore::set(const std::string& key, const std::vector<char>& data) {
  Status status = kv_->Set(FullKey(key), std::string(data.begin(), data.end()));
  if (!status.ok()) Fail(status.WithContext("gloo rendezvous set"));
}

std::vector<char> GlooKvStore::get(const std::string& key) {
  // connectFullMesh always waits before it gets, but gloo's contract lets get() block until
  // the key exists, so a plain Get is only the fast path.
  Result<std::string> value = kv_->Wait(FullKey(key), default_timeout_);
  if (!value.ok()) Fail(value.status().WithContext("gloo rendezvous get"));
  return std::vector<char>(value->begin(), value->end());
}

void GlooKvStore::wait(const std::vector<std::string>& keys) { wait(keys, default_timeout_); }

void GlooKvStore::wait(const std::vector<std::string>& keys,
                       const std::chrono::milliseconds& timeout) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  for (const std::string& key : keys) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left < std::chrono::milliseconds(1)) left = std::chrono::milliseconds(1);
    Result<std::string> value = kv_->Wait(FullKey(key), left);
    if (!value.ok()) {
      Fail(value.status().WithContext("gloo rendezvous of scope '" + scope_ +
                                      "' waiting for rank key '" + key + "'"));
    }
  }
}

void GlooRecordingStore::set(const std::string& key, const std::vector<char>& data) {
  inner_->set(key, data);
}

std::vector<char> GlooRecordingStore::get(const std::string& key) {
  std::vector<char> value = inner_->get(key);
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [k, v] : got_) {
    if (k == key) {
      v = value;
      return value;
    }
  }
  got_.emplace_back(key, value);
  return value;
}

void GlooRecordingStore::wait(const std::vector<std::string>& keys) { inner_->wait(keys); }

void GlooRecordingStore::wait(const std::vector<std::string>& keys,
                              const std::chrono::milliseconds& timeout) {
  inner_->wait(keys, timeout);
}

std::vector<char> GlooRecordingStore::Got(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [k, v] : got_) {
    if (k == key) return v;
  }
  return {};
}

}  // namespace hvd::runtime
