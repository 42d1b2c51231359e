#include "launcher/rendezvous/network_interface.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>

namespace hvd::launcher {
namespace {

std::string Text(in_addr addr) {
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &addr, buf, sizeof(buf));
  return buf;
}

uint32_t Bits(const std::string& text) {
  in_addr addr{};
  inet_pton(AF_INET, text.c_str(), &addr);
  return ntohl(addr.s_addr);
}

Result<std::vector<std::string>> ResolveIPv4(const std::string& host) {
  addrinfo hints = {};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* result = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &result);
  if (rc != 0) {
    return Status::InvalidArgument("cannot resolve host '" + host + "': " + gai_strerror(rc));
  }
  std::vector<std::string> out;
  for (addrinfo* it = result; it != nullptr; it = it->ai_next) {
    out.push_back(Text(reinterpret_cast<sockaddr_in*>(it->ai_addr)->sin_addr));
  }
  freeaddrinfo(result);
  return out;
}

bool InSubnet(const InterfaceAddress& nic, const std::string& address) {
  uint32_t mask = Bits(nic.netmask);
  return mask != 0 && (Bits(nic.address) & mask) == (Bits(address) & mask);
}

std::string Names(const std::vector<InterfaceAddress>& nics) {
  std::string out;
  for (const InterfaceAddress& nic : nics) out += (out.empty() ? "" : ", ") + nic.name;
  return out.empty() ? "none" : out;
}

}  // namespace

std::vector<InterfaceAddress> ListIPv4Interfaces() {
  std::vector<InterfaceAddress> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* it = list; it != nullptr; it = it->ifa_next) {
    if (it->ifa_addr == nullptr || it->ifa_addr->sa_family != AF_INET) continue;
    if ((it->ifa_flags & IFF_UP) == 0) continue;
    InterfaceAddress nic;
    nic.name = it->ifa_name;
    nic.address = Text(reinterpret_cast<sockaddr_in*>(it->ifa_addr)->sin_addr);
    if (it->ifa_netmask != nullptr) {
      nic.netmask = Text(reinterpret_cast<sockaddr_in*>(it->ifa_netmask)->sin_addr);
    }
    out.push_back(nic);
  }
  freeifaddrs(list);
  return out;
}

Result<InterfaceAddress> FindInterface(const std::string& name) {
  std::vector<InterfaceAddress> nics = ListIPv4Interfaces();
  for (const InterfaceAddress& nic : nics) {
    if (nic.name == name) return nic;
  }
  return Status::InvalidArgument(
      "network interface '" + name +
      "' does not exist here or has no IPv4 address (interfaces: " + Names(nics) + ")");
}

Result<InterfaceAddress> InterfaceToward(const std::string& host) {
  HVD_ASSIGN_OR_RETURN(std::vector<std::string> addresses, ResolveIPv4(host));
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::IoError(std::string("socket(): ") + strerror(errno));
  sockaddr_in peer = {};
  peer.sin_family = AF_INET;
  peer.sin_port = htons(9);  // connect() on UDP only picks the route; nothing is sent
  inet_pton(AF_INET, addresses.front().c_str(), &peer.sin_addr);
  sockaddr_in self = {};
  socklen_t len = sizeof(self);
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&peer), sizeof(peer)) == 0 &&
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&self), &len) == 0;
  int error = errno;
  ::close(fd);
  if (!ok) {
    return Status::IoError("no route to host '" + host + "' (" + addresses.front() +
                           "): " + strerror(error));
  }
  std::string source = Text(self.sin_addr);
  for (const InterfaceAddress& nic : ListIPv4Interfaces()) {
    if (nic.address == source) return nic;
  }
  return InterfaceAddress{"", source, ""};
}

Result<NetworkChoice> ChooseNetwork(const std::vector<std::string>& remote_hosts,
                                    const std::vector<std::string>& nics) {
  if (!nics.empty()) {
    HVD_ASSIGN_OR_RETURN(InterfaceAddress nic, FindInterface(nics.front()));
    return NetworkChoice{nic, "from --network-interface"};
  }
  if (remote_hosts.empty()) return Status::InvalidArgument("no remote host to reach");
  std::vector<std::string> addresses;
  for (const std::string& host : remote_hosts) {
    HVD_ASSIGN_OR_RETURN(std::vector<std::string> some, ResolveIPv4(host));
    addresses.push_back(some.front());
  }
  for (const InterfaceAddress& nic : ListIPv4Interfaces()) {
    bool all = true;
    for (const std::string& address : addresses) all = all && InSubnet(nic, address);
    if (all && nic.address.rfind("127.", 0) != 0) {
      return NetworkChoice{nic, "on the same subnet as every remote host"};
    }
  }
  HVD_ASSIGN_OR_RETURN(InterfaceAddress toward, InterfaceToward(remote_hosts.front()));
  return NetworkChoice{toward, "the route toward " + remote_hosts.front()};
}

}  // namespace hvd::launcher
