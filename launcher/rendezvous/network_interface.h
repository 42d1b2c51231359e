#ifndef HVD_LAUNCHER_RENDEZVOUS_NETWORK_INTERFACE_H_
#define HVD_LAUNCHER_RENDEZVOUS_NETWORK_INTERFACE_H_

#include <string>
#include <vector>

#include "common/status.h"

// This machine's IPv4 interfaces, and the choice of the one a multi-host job talks over.
// Functions read the kernel's current state (getifaddrs, a connected UDP socket; nothing is
// sent). Thread-safe.
namespace hvd::launcher {

struct InterfaceAddress {
  std::string name;     // "eth0"
  std::string address;  // "10.0.0.5"
  std::string netmask;  // "255.255.255.0"
};

// Every interface that is up and has an IPv4 address, in getifaddrs order.
std::vector<InterfaceAddress> ListIPv4Interfaces();

// The IPv4 address of the interface named `name`; InvalidArgument naming it and listing the
// interfaces there are when it has none.
Result<InterfaceAddress> FindInterface(const std::string& name);

// The interface this machine would use to reach `host` (the source address of the route the
// kernel picks). InvalidArgument when the name does not resolve to IPv4, IoError when there
// is no route.
Result<InterfaceAddress> InterfaceToward(const std::string& host);

// Where the launcher's servers listen and which interface the ranks use.
struct NetworkChoice {
  InterfaceAddress interface;
  std::string reason;  // for --verbose: "from --network-interface", "same subnet as ..."
};

// With `nics` (--network-interface(s)): the first one's address. Otherwise the first
// interface whose subnet holds every address of `remote_hosts`; else the route toward the
// first remote host. Errors name the interface or host.
Result<NetworkChoice> ChooseNetwork(const std::vector<std::string>& remote_hosts,
                                    const std::vector<std::string>& nics);

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_RENDEZVOUS_NETWORK_INTERFACE_H_
