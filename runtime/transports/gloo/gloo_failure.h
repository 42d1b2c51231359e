#ifndef HVD_RUNTIME_TRANSPORTS_GLOO_GLOO_FAILURE_H_
#define HVD_RUNTIME_TRANSPORTS_GLOO_GLOO_FAILURE_H_

#include <gloo/context.h>
#include <sys/socket.h>

#include <exception>
#include <string>
#include <vector>

#include "common/status.h"

// Failure handling at the gloo boundary: every gloo exception becomes a Status here, and a
// communicator that failed or was aborted tears its connections down so that its own blocked
// waits and its peers' fail promptly instead of at their timeouts.
namespace hvd::runtime {

// Translates an exception thrown by gloo (gloo::IoException, gloo::EnforceNotMet, any
// std::exception) into a Status: a timeout message maps to kTimeout, other transport errors
// (peer closed, reset) to kRemoteError naming the peer rank when one of `peer_names` (index =
// rank, "" = unknown) appears in the message, invariant failures inside gloo to kInternal.
// `what` names the op and this rank.
Status GlooExceptionToStatus(std::exception_ptr error, const std::string& what,
                             const std::vector<std::string>& peer_names);

// GlooSockets finds and shuts down the tcp sockets of one gloo context.
//
// Why: gloo cannot abort a wait on a bound (legacy) buffer, and Context::closeConnections()
// wakes no waiter. shutdown(2) on a pair's socket makes gloo's event loop read EOF, which
// fails every pending operation of that pair at once, and the peer sees the drop too.
// Debian's libgloo-dev lacks gloo/common/memory.h, so tcp::Pair (and its fd) is out of reach;
// instead the sockets are recognised by their endpoints: in this gloo every pair of a device
// shares the device's listening address, so a socket of this context either has this rank's
// device address as its local end (accepted) or a peer's device address as its remote end
// (connected). Each communicator owns its device, so no other context matches.
//
// Set-up (DeviceAddress, SetDeviceAddresses) happens on the calling thread before use;
// Shutdown() is then safe from any thread: it only reads the address table and issues
// shutdown(2) on descriptors it re-identifies at that moment.
class GlooSockets {
 public:
  // This rank's device listening address, from any of its pairs.
  static sockaddr_storage DeviceAddress(gloo::Context& context);

  // Device address of every rank, indexed by rank.
  void SetDeviceAddresses(int self, std::vector<sockaddr_storage> addresses);
  // "[ip]:port" of every peer's device ("" for self), as gloo prints them in errors.
  const std::vector<std::string>& peer_names() const { return peer_names_; }

  void Shutdown() const;

 private:
  int self_ = -1;
  std::vector<sockaddr_storage> addresses_;
  std::vector<std::string> peer_names_;
};

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_GLOO_GLOO_FAILURE_H_
