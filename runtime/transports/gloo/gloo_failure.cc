#include "runtime/transports/gloo/gloo_failure.h"

#include <dirent.h>
#include <gloo/common/error.h>
#include <gloo/common/logging.h>
#include <gloo/transport/tcp/address.h>
#include <netinet/in.h>

#include <cstdlib>
#include <cstring>

namespace hvd::runtime {
namespace {

bool LooksLikeTimeout(const std::string& message) {
  return message.find("imeout") != std::string::npos ||
         message.find("imed out") != std::string::npos;
}

std::string PeerOf(const std::string& message, const std::vector<std::string>& peers) {
  for (size_t i = 0; i < peers.size(); ++i) {
    if (!peers[i].empty() && message.find(peers[i]) != std::string::npos) {
      return " (peer rank " + std::to_string(i) + ")";
    }
  }
  return "";
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
                             const std::vector<std::string>& peer_names) {
  try {
    std::rethrow_exception(error);
  } catch (const gloo::IoException& e) {
    const std::string message = e.what();
    const std::string text = what + ": " + message + PeerOf(message, peer_names);
    return LooksLikeTimeout(message) ? Status::Timeout(text) : Status::RemoteError(text);
  } catch (const gloo::EnforceNotMet& e) {
    return Status::Internal(what + ": gloo invariant failed: " + e.what());
  } catch (const std::exception& e) {
    const std::string message = e.what();
    const std::string text = what + ": " + message + PeerOf(message, peer_names);
    return LooksLikeTimeout(message) ? Status::Timeout(text) : Status::Internal(text);
  } catch (...) {
    return Status::Internal(what + ": unknown exception from gloo");
  }
}

sockaddr_storage GlooSockets::DeviceAddress(gloo::Context& context) {
  const int any_peer = context.rank == 0 ? 1 : 0;
  const auto& address =
      dynamic_cast<const gloo::transport::tcp::Address&>(context.getPair(any_peer)->address());
  return address.getSockaddr();
}

void GlooSockets::SetDeviceAddresses(int self, std::vector<sockaddr_storage> addresses) {
  self_ = self;
  addresses_ = std::move(addresses);
  peer_names_.assign(addresses_.size(), "");
  for (size_t i = 0; i < addresses_.size(); ++i) {
    if (static_cast<int>(i) != self_) {
      peer_names_[i] = gloo::transport::tcp::Address(addresses_[i]).str();
    }
  }
}

void GlooSockets::Shutdown() const {
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
      continue;  // not a socket, or not connected (the device's own listener)
    }
    bool ours = SameEndpoint(local, addresses_[self_]);
    for (size_t i = 0; i < addresses_.size() && !ours; ++i) {
      ours = static_cast<int>(i) != self_ && SameEndpoint(remote, addresses_[i]);
    }
    if (ours) ::shutdown(static_cast<int>(fd), SHUT_RDWR);
  }
  closedir(dir);
}

}  // namespace hvd::runtime
