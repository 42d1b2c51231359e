#ifndef HVD_LAUNCHER_LOCAL_LOCAL_HOST_H_
#define HVD_LAUNCHER_LOCAL_LOCAL_HOST_H_

#include <string>

// Decides whether a host named in the allocation is this machine, so its ranks can be
// forked here instead of started over SSH. Thread-safe.
namespace hvd::launcher {

// True for "localhost", any 127.0.0.0/8 address, "::1", this machine's host name (short
// or as gethostname() reports it), an address of a local interface (getifaddrs), or a
// name that resolves (getaddrinfo, which may consult DNS) only to such addresses.
bool IsLocalHost(const std::string& host);

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_LOCAL_LOCAL_HOST_H_
