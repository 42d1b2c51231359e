#include "runtime/transports/gloo/gloo_failure.h"

#include <dirent.h>
#include <gloo/common/error.h>
#include <gloo/common/logging.h>
#include <gloo/transport/tcp/address.h>
#include <netinet/in.h>

#include <cstdlib>
#include <cstring>

#include "runtime/transports/communicator.h"

namespace hvd::runtime {
namespace {

bool LooksLikeTimeout(const std::string& message) {
  return message.find("imeout") != std::string::npos ||
         message.find("imed out") != std::string::npos;
}

// The peer whose address `message` names, -1 for none.
int PeerOf(const std::string& message, const std::vector<std::vector<std::string>>& peers) {
  for (size_t i = 0; i < peers.size(); ++i) {
    for (const std::string& name : peers[i]) {
      if (message.find(name) != std::string::npos) return static_cast<int>(i);
    }
  }
  return -1;
}

std::string NamePeer(int peer) {
  return peer < 0 ? "" : " (peer rank " + std::to_string(peer) + ")";
}

bool SameEndpoint(const sockaddr_storage& a, const sockaddr_storage& b) {
  if (a.ss_family != b.ss_family) return false;
  if (a.ss_family == AF_INET) {
    const auto& x = reinterpret_cast<const sockaddr_in&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in&>(b);
    return x.sin_port == y.sin_port && x.sin_addr.s_addr == y.sin_addr.s_addr;
  }
  if (a.ss_family == AF_INET6) {
    const auto& x = reinterpret_cast<const sockaddr_in6&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in6&>(b);
    return x.sin6_port == y.sin6_port &&
           std::memcmp(&x.sin6_addr, &y.sin6_addr, sizeof(x.sin6_addr)) == 0;
  }
  return false;
}

}  // namespace

Status GlooExceptionToStatus(std::exception_ptr error, const std::string& what,
                             const std::vector<std::vector<std::string>>& peer_names, int* peer) {
  try {
    std::rethrow_exception(error);
  } catch (const gloo::IoException& e) {
    const std::string message = e.what();
    const int named = PeerOf(message, peer_names);
    const std::string text = what + ": " + message + NamePeer(named);
    if (LooksLikeTimeout(message)) return Status::Timeout(text);
    if (peer != nullptr) *peer = named;
    return Status::RemoteError(text);
  } catch (const gloo::EnforceNotMet& e) {
    return Status::Internal(what + ": gloo invariant failed: " + e.what());
  } catch (const std::exception& e) {
    const std::string message = e.what();
    const std::string text = what + ": " + message + NamePeer(PeerOf(message, peer_names));
    return LooksLikeTimeout(message) ? Status::Timeout(text) : Status::Internal(text);
  } catch (...) {
    return Status::Internal(what + ": unknown exception from gloo");
  }
}

namespace {

sigset_t OnlySigpipe() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  return set;
}

bool SigpipePending() {
  sigset_t pending;
  return sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
}

}  // namespace

GlooSigpipeBlock::GlooSigpipeBlock() {
  struct sigaction action {};
  if (sigaction(SIGPIPE, nullptr, &action) != 0 || (action.sa_flags & SA_SIGINFO) != 0 ||
      action.sa_handler != SIG_DFL) {
    return;
  }
  const sigset_t pipe = OnlySigpipe();
  if (pthread_sigmask(SIG_BLOCK, &pipe, &previous_) != 0) return;
  active_ = true;
  was_pending_ = SigpipePending();
}

GlooSigpipeBlock::~GlooSigpipeBlock() {
  if (!active_) return;
  const sigset_t pipe = OnlySigpipe();
  if (!was_pending_ && SigpipePending()) {
    const timespec now{};
    sigtimedwait(&pipe, nullptr, &now);
  }
  pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
}

std::vector<sockaddr_storage> GlooSockets::PairAddresses(gloo::Context& context) {
  std::vector<sockaddr_storage> out(static_cast<size_t>(context.size));
  for (int peer = 0; peer < context.size; ++peer) {
    if (peer == context.rank) continue;
    const auto& address =
        dynamic_cast<const gloo::transport::tcp::Address&>(context.getPair(peer)->address());
    out[peer] = address.getSockaddr();
  }
  return out;
}

template <typename Fn>
void GlooSockets::ForEachSocket(Fn&& fn) const {
  if (self_ < 0) return;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return;
  const int dir_fd = dirfd(dir);
  while (dirent* entry = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == dir_fd) continue;
    sockaddr_storage local{}, remote{};
    socklen_t local_len = sizeof(local), remote_len = sizeof(remote);
    if (getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&local), &local_len) != 0 ||
        getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&remote), &remote_len) != 0) {
      continue;  // not a socket, or not connected (a pair's own listener)
    }
    for (size_t i = 0; i < mine_.size(); ++i) {
      if (static_cast<int>(i) != self_ &&
          (SameEndpoint(local, mine_[i]) || SameEndpoint(remote, theirs_[i]))) {
        fn(static_cast<int>(fd), static_cast<int>(i), remote);
        break;
      }
    }
  }
  closedir(dir);
}

void GlooSockets::SetPairAddresses(int self, std::vector<sockaddr_storage> mine,
                                   std::vector<sockaddr_storage> theirs,
                                   const std::vector<std::string>& published) {
  self_ = self;
  mine_ = std::move(mine);
  theirs_ = std::move(theirs);
  peer_names_.assign(theirs_.size(), {});
  for (size_t i = 0; i < published.size() && i < peer_names_.size(); ++i) {
    if (static_cast<int>(i) != self_ && !published[i].empty()) {
      peer_names_[i].push_back(published[i]);
    }
  }
  fds_.clear();
  known_.assign(mine_.size(), 0);
  ForEachSocket([this](int fd, int peer, const sockaddr_storage& remote) {
    fds_.push_back(fd);
    known_[peer] = 1;
    peer_names_[peer].push_back(gloo::transport::tcp::Address(remote).str());
  });
}

Status GlooSockets::CheckClosed(int* peer) const {
  if (self_ < 0) return Status::OK();
  std::vector<char> found(known_.size(), 0);
  std::vector<int> fds, peers;
  ForEachSocket([&](int fd, int peer, const sockaddr_storage&) {
    found[peer] = 1;
    fds.push_back(fd);
    peers.push_back(peer);
  });
  const auto name = [&](int peer) {
    std::string text = "gloo rank " + std::to_string(peer);
    if (!peer_names_[peer].empty()) text += " (" + peer_names_[peer].front() + ")";
    return text;
  };
  for (size_t j = 0; j < known_.size(); ++j) {
    if (known_[j] && !found[j]) {
      if (peer != nullptr) *peer = static_cast<int>(j);
      return Status::RemoteError(name(static_cast<int>(j)) +
                                 ": its connection was closed or reset (its process ended, or "
                                 "its host is gone)");
    }
  }
  int err = 0;
  const int closed = FirstClosedSocket(fds, &err);
  if (closed < 0) return Status::OK();
  if (peer != nullptr) *peer = peers[closed];
  std::string message =
      name(peers[closed]) + " closed its connection (its process ended, or its host is gone)";
  if (err != 0) message += std::string(": ") + std::strerror(err);
  return Status::RemoteError(message);
}

void GlooSockets::Shutdown() const {
  ForEachSocket([](int fd, int, const sockaddr_storage&) { ::shutdown(fd, SHUT_RDWR); });
}

void GlooSockets::WidenSendBuffers() const {
  const int bytes = 4 << 20;
  for (int fd : fds_) setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
}

}  // namespace hvd::runtime
