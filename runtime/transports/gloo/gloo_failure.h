#ifndef HVD_RUNTIME_TRANSPORTS_GLOO_GLOO_FAILURE_H_
#define HVD_RUNTIME_TRANSPORTS_GLOO_GLOO_FAILURE_H_

#include <gloo/context.h>
#include <signal.h>
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
// (peer closed, reset) to kRemoteError naming the peer rank when one of `peer_names[rank]` (the
// ways gloo may print that peer's address; none for self) appears in the message, invariant
// failures inside gloo to kInternal. `what` names the op and this rank. `*peer` (when given)
// is set to the peer a kRemoteError names, if it names one.
Status GlooExceptionToStatus(std::exception_ptr error, const std::string& what,
                             const std::vector<std::vector<std::string>>& peer_names,
                             int* peer = nullptr);

// Keeps gloo's writes from killing the process. Gloo writes its sockets with writev(2), which
// takes no MSG_NOSIGNAL: a write toward a peer that died raises SIGPIPE, whose default action
// ends the process, so a survivor in a program that leaves SIGPIPE alone (C, C++) died where
// hvd owes it a failed op (Python ignores SIGPIPE: torch jobs never saw it). Found on
// 2026-11-29 by GlooFailureTest.KilledRankFailsSurvivorsOnDirectPath, whose survivors (forked
// C++ ranks) died of SIGPIPE in about one run of three once large allreduces sent one-way.
//
// While one lives, and only where SIGPIPE has its default action (a program that ignores or
// handles it chose), the calling thread has SIGPIPE blocked: such a write fails with EPIPE,
// which gloo reports as an error, and the SIGPIPE it raised is taken off the pending set
// before the mask is restored (one that was pending before is left). Threads started meanwhile
// inherit the block: gloo's event loop, which also writes, is started with the device. Costs
// three or four system calls, against an op's 80 us and more.
class GlooSigpipeBlock {
 public:
  GlooSigpipeBlock();
  ~GlooSigpipeBlock();
  GlooSigpipeBlock(const GlooSigpipeBlock&) = delete;
  GlooSigpipeBlock& operator=(const GlooSigpipeBlock&) = delete;

 private:
  bool active_ = false;
  bool was_pending_ = false;
  sigset_t previous_{};
};

// GlooSockets finds the tcp sockets of one gloo context, to shut them down or to widen their
// send buffers.
//
// Why shut down: gloo cannot abort a wait on a bound (legacy) buffer, and
// Context::closeConnections() wakes no waiter. shutdown(2) on a pair's socket makes gloo's
// event loop read EOF, which fails every pending operation of that pair at once, and the peer
// sees the drop too.
// Debian's libgloo-dev lacks gloo/common/memory.h, so tcp::Pair (and its fd) is out of reach;
// instead the sockets are recognised by their endpoints. In this gloo each pair listens on an
// address of its own (the one Pair::address() returns; two pairs of one rank differ in
// port), and of the two ranks of a pair one accepts and the other connects. So the socket of
// this rank's pair with peer j has either this pair's address as its local end (accepted) or
// the peer's pair address toward this rank as its remote end (connected); the peers' ones
// come from an exchange (GlooCommunicator::LearnEndpoints). No other socket has either end.
// (Until 2026-11-29 this took one address per rank, right only for 2 ranks: from 3, a
// rank's pairs toward some peers went unrecognised, by Shutdown too.)
//
// Set-up (PairAddresses, SetPairAddresses) happens on the calling thread before use;
// Shutdown() is then safe from any thread: it only reads the address tables and issues
// shutdown(2) on descriptors it re-identifies at that moment.
class GlooSockets {
 public:
  // This rank's pair address toward each peer, indexed by peer rank (self: zeroed).
  static std::vector<sockaddr_storage> PairAddresses(gloo::Context& context);

  // `mine`: PairAddresses() of this rank; `theirs[j]`: peer j's pair address toward this rank.
  // `published[j]`: the address peer j published for its pair with this rank before they
  // connected ("[ip]:port"; "" where unknown). Also notes the sockets' descriptors for
  // WidenSendBuffers (the mesh is connected by then).
  void SetPairAddresses(int self, std::vector<sockaddr_storage> mine,
                        std::vector<sockaddr_storage> theirs,
                        const std::vector<std::string>& published);
  // How gloo may name each peer in an error ("[ip]:port"; none for self): a pair prints the
  // address its peer published, which on the side that connected is the peer's end of the
  // socket, and on the side that accepted is a port the peer listened on then (its end of the
  // socket is another port, which is named too). Until 2026-11-29 only the socket's far end was
  // known, and about half of the dropped-connection errors named no peer.
  const std::vector<std::vector<std::string>>& peer_names() const { return peer_names_; }

  void Shutdown() const;

  // Communicator::CheckPeers for Gloo: kRemoteError naming the first peer whose connection the
  // kernel saw closed or reset (POLLRDHUP, POLLHUP, POLLERR: its process ended, its host went
  // away), or whose socket is gone (gloo closes a pair's descriptor once it saw it fail); OK
  // otherwise. Peers whose socket was not recognised at set-up are never reported. The sockets
  // are found again at each call (ForEachSocket, ~80 us of /proc/self/fd): a descriptor noted
  // at set-up may have been closed by gloo since and its number reused by another file.
  // `*peer` (when given) is set to the peer it names.
  Status CheckClosed(int* peer = nullptr) const;

  // Sets each socket's send buffer to 4 MiB (hvd's own TCP transport's size). Debian's gloo
  // sets SO_SNDBUF itself before a bound (legacy) buffer's send, to that message's size,
  // once it is larger than any earlier one on that pair: the first, a few bytes of a barrier
  // or a bit vector, left a pair with the kernel's minimum (4,608 bytes) and autotuning off.
  // A large one-way transfer (broadcast, allgather) then moved one segment per delayed ACK:
  // a 1 MiB broadcast at 2 ranks took 573 ms where torch's Gloo takes 0.5 ms (2026-11-29).
  // gloo's check is per pair, against its own record of the size it set: call after the
  // first run of every new legacy instance (GlooCommunicator::Ring). From the calling thread
  // only, on the descriptors noted at set-up, without a scan (~80 us of /proc/self/fd per
  // call): while the communicator works its sockets stay open, and a pair gloo closes fails
  // the op, which then never gets here (the communicator is broken from then on).
  void WidenSendBuffers() const;

 private:
  // Calls fn(fd, peer rank, its remote end) for each connected socket of this context.
  template <typename Fn>
  void ForEachSocket(Fn&& fn) const;

  int self_ = -1;
  std::vector<sockaddr_storage> mine_, theirs_;
  std::vector<std::vector<std::string>> peer_names_;
  std::vector<int> fds_;     // the sockets found at set-up, for WidenSendBuffers
  std::vector<char> known_;  // known_[j]: peer j's socket was found at set-up
};

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_GLOO_GLOO_FAILURE_H_
