#ifndef HVD_RUNTIME_TRANSPORTS_TCP_TCP_MESH_H_
#define HVD_RUNTIME_TRANSPORTS_TCP_TCP_MESH_H_

#include <chrono>
#include <string>
#include <vector>

#include "common/kv_client.h"
#include "common/status.h"
#include "runtime/transports/tcp/tcp_handshake.h"

namespace hvd::runtime {

struct TcpMeshOptions {
  control::KvClient* kv = nullptr;  // must outlive the call
  std::string scope;                // the group's rendezvous scope; keys "<scope>/tcp/<rank>"
  int rank = 0;
  int size = 1;
  // Data interface (HVD_GLOO_IFACE); empty: the local address of the route to `route_to` (the
  // rendezvous server), or 127.0.0.1 when that is empty too.
  std::string iface;
  std::string route_to;
  std::string hostname;   // published so that peers can name this rank in errors
  HandshakeContext auth;  // job key, job id, scope
  std::chrono::milliseconds timeout{30000};
  // An idle connection whose peer answers no TCP keepalive probe for about this long fails
  // with ETIMEDOUT (probes every second after one idle second; 0 = no keepalive). A live but
  // busy peer is never timed out: its kernel answers. Data in flight is watched by
  // TcpTransport (set_heartbeat_timeout), not by TCP_USER_TIMEOUT, which would also abort a
  // live peer that keeps its receive window closed for that long.
  std::chrono::milliseconds heartbeat_timeout{0};
  // Congestion control of the data connections (HVD_TCP_CONGESTION): "auto" replaces BBR,
  // which paces every connection in software (without the fq qdisc, through a timer per burst)
  // and held a 1 MiB allreduce over veths to ~3x its unpaced time, by cubic or reno; "system"
  // (or empty) keeps the kernel's default; any other name is set, and refused names fail.
  std::string congestion = "auto";
  // An elastic round's rendezvous, which hvdrun may give up: while waiting for the higher
  // ranks' connections, ask the server every 0.5 s whether it did (one request each time).
  bool abortable = false;
};

// TCP keepalive probes that time out an idle connection whose peer stopped answering after about
// `timeout` (TcpMeshOptions::heartbeat_timeout): probes from one idle second on, one a second up
// to the kernel's limit of kMaxKeepAliveProbes, further apart beyond it.
inline constexpr int kMaxKeepAliveProbes = 127;
struct KeepAliveSettings {
  int idle_s = 1;
  int interval_s = 1;
  int count = 1;
};
KeepAliveSettings KeepAliveFor(std::chrono::milliseconds timeout);
// Sets them on `fd` (nothing for a timeout <= 0); a refused setting is logged.
void KeepAlive(int fd, std::chrono::milliseconds timeout);

// The connected, authenticated full mesh of one group: fds[r] is the non-blocking socket to
// group rank r (-1 for self), peer_names[r] names it ("rank 2 (host-b 10.0.0.2:40123)").
struct TcpMesh {
  std::vector<int> fds;
  std::vector<std::string> peer_names;
};

// Listens on an ephemeral port of the data interface, publishes "<addr> <port> <hostname>"
// under the scope, connects to every lower rank and accepts every higher one, authenticating
// each connection with the handshake of tcp_handshake.h. The acceptor handles incoming
// connections concurrently: a stray, wrong-key or garbage connection is logged (warning),
// closed, and does not take a rank's place or delay the others. Errors: kTimeout when peers
// do not arrive in time, kPermissionDenied when a peer fails authentication as seen by a
// connector, kInvalidArgument for an unusable interface, kIoError otherwise.
Result<TcpMesh> ConnectTcpMesh(const TcpMeshOptions& options);

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_TCP_TCP_MESH_H_
