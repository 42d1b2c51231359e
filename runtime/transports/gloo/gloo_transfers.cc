#include "runtime/transports/gloo/gloo_transfers.h"

#include <gloo/common/error.h>

#include <algorithm>
#include <string>

namespace hvd::runtime {

GlooTransfers::GlooTransfers(std::shared_ptr<gloo::Context> context,
                             std::chrono::milliseconds timeout)
    : context_(std::move(context)),
      rank_(context_->rank),
      size_(context_->size),
      timeout_(timeout),
      max_cached_(static_cast<size_t>(size_) + kSpareCached),
      deadline_(std::chrono::steady_clock::now() + timeout) {
  pending_sends_.reserve(64);
  cache_.reserve(max_cached_ + 1);
}

GlooTransfers::~GlooTransfers() {
  std::lock_guard<std::mutex> lock(mu_);
  cache_.clear();
}

void GlooTransfers::StartOp() {
  deadline_ = std::chrono::steady_clock::now() + timeout_;
  pending_sends_.clear();
}

std::chrono::milliseconds GlooTransfers::Remaining() const {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline_ - std::chrono::steady_clock::now());
  // gloo treats a non-positive timeout as "use the context default"; 1 ms expires at once.
  return std::max(left, std::chrono::milliseconds(1));
}

void GlooTransfers::ThrowAborted(const char* what) const {
  std::string reason;
  {
    std::lock_guard<std::mutex> lock(mu_);
    reason = reason_;
  }
  if (!reason.empty()) throw gloo::IoException(reason);
  throw gloo::IoException(std::string("aborted while waiting for a ") + what);
}

gloo::transport::UnboundBuffer* GlooTransfers::Buffer(const void* ptr, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find_if(cache_.begin(), cache_.end(),
                         [&](const Cached& c) { return c.ptr == ptr && c.bytes == bytes; });
  if (it == cache_.end()) {
    // Unbound buffers only read a send source, so the const_cast never leads to a write.
    cache_.insert(cache_.begin(),
                  Cached{ptr, bytes, context_->createUnboundBuffer(const_cast<void*>(ptr), bytes)});
    if (cache_.size() > max_cached_) cache_.pop_back();
  } else if (it != cache_.begin()) {
    std::rotate(cache_.begin(), it, it + 1);
  }
  return cache_.front().buf.get();
}

void GlooTransfers::Send(gloo::transport::UnboundBuffer* buf, int peer, uint64_t tag, size_t offset,
                         size_t bytes) {
  if (aborted_.load()) ThrowAborted("send");
  buf->send(peer, tag, offset, bytes);
  auto it = std::find_if(pending_sends_.begin(), pending_sends_.end(),
                         [&](const auto& p) { return p.first == buf; });
  if (it == pending_sends_.end()) {
    pending_sends_.emplace_back(buf, 1);
  } else {
    ++it->second;
  }
}

void GlooTransfers::Recv(gloo::transport::UnboundBuffer* buf, int peer, uint64_t tag, size_t offset,
                         size_t bytes) {
  if (aborted_.load()) ThrowAborted("receive");
  buf->recv(peer, tag, offset, bytes);
}

// Each completed wait moves the deadline: the timeout bounds a wait with nothing arriving, not
// the whole collective (until 2026-12-01 it did: a 1 GB allreduce taking longer than
// HVD_GLOO_TIMEOUT_SECONDS failed with a timeout while every transfer was progressing, unlike
// Gloo's own algorithms and hvd's TCP transport).
void GlooTransfers::Progressed() { deadline_ = std::chrono::steady_clock::now() + timeout_; }

int GlooTransfers::WaitRecv(gloo::transport::UnboundBuffer* buf) {
  int source = -1;
  if (!buf->waitRecv(&source, Remaining()) || aborted_.load()) ThrowAborted("receive");
  Progressed();
  return source;
}

void GlooTransfers::WaitSends() {
  for (auto& [buf, count] : pending_sends_) {
    for (; count > 0; --count) {
      if (!buf->waitSend(nullptr, Remaining()) || aborted_.load()) ThrowAborted("send");
      Progressed();
    }
  }
  pending_sends_.clear();
}

void GlooTransfers::Fail(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (reason_.empty()) reason_ = reason;
  }
  Abort();
}

void GlooTransfers::Abort() {
  aborted_.store(true);
  std::lock_guard<std::mutex> lock(mu_);
  for (Cached& c : cache_) {
    c.buf->abortWaitRecv();
    c.buf->abortWaitSend();
  }
}

}  // namespace hvd::runtime
