#include "runtime/transports/gloo/gloo_collective_store.h"

#include <gloo/common/error.h>

#include <cstdint>
#include <cstring>

namespace hvd::runtime {
namespace {

void PutBytes(std::string* out, const char* data, size_t size) {
  const uint64_t n = size;
  out->append(reinterpret_cast<const char*>(&n), sizeof(n));
  out->append(data, size);
}

// Reads one length-prefixed string at *at; false when `in` is truncated.
bool TakeBytes(const std::string& in, size_t* at, std::string* out) {
  uint64_t n = 0;
  if (in.size() - *at < sizeof(n)) return false;
  std::memcpy(&n, in.data() + *at, sizeof(n));
  *at += sizeof(n);
  if (in.size() - *at < n) return false;
  out->assign(in, *at, n);
  *at += n;
  return true;
}

}  // namespace

void GlooCollectiveStore::Fail(Status status) {
  if (first_error_.ok()) first_error_ = status;
  throw ::gloo::IoException(__FILE__ ":" + std::to_string(__LINE__) + ": " + status.message());
}

void GlooCollectiveStore::set(const std::string& key, const std::vector<char>& data) {
  // Every member's (key, value) reaches rank 0, which broadcasts the whole list back.
  std::string mine;
  PutBytes(&mine, key.data(), key.size());
  PutBytes(&mine, data.data(), data.size());
  std::vector<std::string> all;
  Status s = comm_->GatherBytes(mine, 0, &all);
  if (!s.ok()) Fail(s.WithContext("gloo rendezvous over " + std::string(comm_->name())));
  std::string joined;
  for (const std::string& entry : all) joined += entry;
  s = comm_->BroadcastBytes(&joined, 0);
  if (!s.ok()) Fail(s.WithContext("gloo rendezvous over " + std::string(comm_->name())));
  for (size_t at = 0; at < joined.size();) {
    std::string k, v;
    if (!TakeBytes(joined, &at, &k) || !TakeBytes(joined, &at, &v)) {
      Fail(Status::RemoteError("gloo rendezvous: malformed address list"));
    }
    values_[k] = std::vector<char>(v.begin(), v.end());
  }
}

std::vector<char> GlooCollectiveStore::get(const std::string& key) {
  auto it = values_.find(key);
  if (it == values_.end()) {
    Fail(Status::Internal("gloo rendezvous: key '" + key + "' was not set by any rank"));
  }
  return it->second;
}

void GlooCollectiveStore::wait(const std::vector<std::string>& keys) {
  for (const std::string& key : keys) {
    if (values_.count(key) == 0) {
      Fail(Status::Internal("gloo rendezvous: key '" + key + "' was not set by any rank"));
    }
  }
}

void GlooCollectiveStore::wait(const std::vector<std::string>& keys,
                               const std::chrono::milliseconds& /*timeout*/) {
  wait(keys);
}

}  // namespace hvd::runtime
