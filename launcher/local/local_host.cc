#include "launcher/local/local_host.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <set>

namespace hvd::launcher {
namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Numeric form of a socket address, or "" for families other than IPv4/IPv6.
std::string AddressText(const sockaddr* addr) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (addr->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(addr)->sin_addr, buf, sizeof(buf));
  } else if (addr->sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(addr)->sin6_addr, buf, sizeof(buf));
  }
  return buf;
}

bool IsLoopbackText(const std::string& address) {
  return address.rfind("127.", 0) == 0 || address == "::1";
}

std::set<std::string> LocalInterfaceAddresses() {
  std::set<std::string> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* it = list; it != nullptr; it = it->ifa_next) {
    if (it->ifa_addr == nullptr) continue;
    std::string text = AddressText(it->ifa_addr);
    if (!text.empty()) out.insert(text);
  }
  freeifaddrs(list);
  return out;
}

bool IsLocalAddress(const std::string& address, const std::set<std::string>& local) {
  return IsLoopbackText(address) || local.count(address) > 0;
}

bool MatchesHostName(const std::string& host) {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return false;
  std::string self = Lower(buf);
  std::string name = Lower(host);
  if (name == self) return true;
  std::string self_short = self.substr(0, self.find('.'));
  return name == self_short;
}

// True when `host` resolves and every address it resolves to is local.
bool ResolvesLocally(const std::string& host, const std::set<std::string>& local) {
  addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &result) != 0) return false;
  bool any = false;
  bool all_local = true;
  for (addrinfo* it = result; it != nullptr; it = it->ai_next) {
    std::string text = AddressText(it->ai_addr);
    if (text.empty()) continue;
    any = true;
    all_local = all_local && IsLocalAddress(text, local);
  }
  freeaddrinfo(result);
  return any && all_local;
}

}  // namespace

bool IsLocalHost(const std::string& host) {
  std::string name = Lower(host);
  if (name == "localhost" || name == "localhost.localdomain" || IsLoopbackText(name)) return true;
  if (MatchesHostName(name)) return true;
  std::set<std::string> local = LocalInterfaceAddresses();
  if (local.count(name) > 0) return true;
  return ResolvesLocally(name, local);
}

}  // namespace hvd::launcher
