#include "runtime/transports/tcp/tcp_mesh.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <map>

#include "common/logging.h"
#include "common/rejection_log.h"

namespace hvd::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// Asked of the kernel for both directions (capped by net.core.[rw]mem_max): a ring step keeps
// several MiB in flight on a fast link.
constexpr int kSocketBufferBytes = 4 << 20;
// Half-open handshakes beyond this many are dropped: the oldest of the address with the most
// (Acceptor::AcceptAll).
constexpr size_t kMaxPendingHandshakes = 64;

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) reset(o.release());
    return *this;
  }
  ~Fd() { reset(); }
  int get() const { return fd_; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

int RemainingMs(Clock::time_point deadline) {
  auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 1 << 30));
}

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

void TuneSocket(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  int bytes = kSocketBufferBytes;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
}

// The kernel's lists of congestion controls, for error messages ("reno cubic bbr").
std::string CongestionList(const char* file) {
  std::string text;
  if (FILE* f = std::fopen(file, "r")) {
    char buf[256];
    size_t n = std::fread(buf, 1, sizeof(buf), f);
    std::fclose(f);
    text.assign(buf, n);
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text.empty() ? "?" : text;
}

std::string CongestionOf(int fd) {
  char name[16] = {};  // TCP_CA_NAME_MAX
  socklen_t len = sizeof(name);
  if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len) != 0) return "";
  return std::string(name, strnlen(name, std::min<size_t>(len, sizeof(name))));
}

bool SetCongestion(int fd, const std::string& name) {
  return setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(),
                    static_cast<socklen_t>(name.size())) == 0;
}

// Applies TcpMeshOptions::congestion to the listener (its accepted connections inherit it)
// and returns the name every connecting socket is to set before it connects ("" = keep the
// kernel's default). "auto" replaces a pacing congestion control (BBR) by cubic, or by reno,
// which every user may set; a named one the kernel refuses is an error naming the knob.
Result<std::string> ChooseCongestion(int listener, const std::string& want) {
  if (want.empty() || want == "system") return std::string();
  if (want == "auto") {
    const std::string current = CongestionOf(listener);
    if (current.rfind("bbr", 0) != 0) return std::string();
    for (const char* plain : {"cubic", "reno"}) {
      if (SetCongestion(listener, plain)) {
        HVD_LOG_DEBUG(
            "tcp data connections: {} instead of the kernel's default {} "
            "(HVD_TCP_CONGESTION=auto: BBR paces a collective's bursts)",
            plain, current);
        return std::string(plain);
      }
    }
    HVD_LOG_DEBUG("tcp data connections: keeping {}: neither cubic nor reno may be set", current);
    return std::string();
  }
  if (!SetCongestion(listener, want)) {
    const int err = errno;
    return Status::InvalidArgument(
        "HVD_TCP_CONGESTION=" + want + ": the kernel refused it (" + std::strerror(err) +
        "); available: " + CongestionList("/proc/sys/net/ipv4/tcp_available_congestion_control") +
        "; allowed without CAP_NET_ADMIN: " +
        CongestionList("/proc/sys/net/ipv4/tcp_allowed_congestion_control") + " (or auto, system)");
  }
  return want;
}

}  // namespace

// Keepalive of an established connection (TcpMeshOptions::heartbeat_timeout): the kernel fails
// the connection with ETIMEDOUT when `timeout` has passed without an answer.

KeepAliveSettings KeepAliveFor(std::chrono::milliseconds timeout) {
  KeepAliveSettings k;
  const int64_t rest = std::max<int64_t>(1, (timeout.count() + 999) / 1000 - k.idle_s);
  // Linux takes at most 127 probes (TCP_KEEPCNT), so past 127 s the probes are spaced out:
  // until 2026-12-01 the count was set alone, the kernel refused it (EINVAL, unchecked), and its
  // default of 9 one-second probes timed a peer out after ~10 s where 300 s were asked for.
  k.interval_s = static_cast<int>((rest + kMaxKeepAliveProbes - 1) / kMaxKeepAliveProbes);
  k.count = static_cast<int>((rest + k.interval_s - 1) / k.interval_s);
  return k;
}

void KeepAlive(int fd, std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0) return;
  const KeepAliveSettings k = KeepAliveFor(timeout);
  int one = 1;
  if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) != 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &k.idle_s, sizeof(k.idle_s)) != 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &k.interval_s, sizeof(k.interval_s)) != 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &k.count, sizeof(k.count)) != 0) {
    HVD_LOG_WARNING("TCP keepalive of {} s ({} probes {} s apart) could not be set: {}",
                    timeout.count() / 1000, k.count, k.interval_s, std::strerror(errno));
  }
}

namespace {

std::string NumericHost(const sockaddr_storage& addr) {
  char host[NI_MAXHOST] = {};
  getnameinfo(reinterpret_cast<const sockaddr*>(&addr), sizeof(addr), host, sizeof(host), nullptr,
              0, NI_NUMERICHOST);
  return host;
}

Result<sockaddr_storage> BindAddress(const TcpMeshOptions& o) {
  sockaddr_storage out{};
  if (!o.iface.empty()) {
    ifaddrs* list = nullptr;
    if (getifaddrs(&list) != 0) return Status::IoError(Errno("getifaddrs"));
    bool found = false;
    for (int family : {AF_INET, AF_INET6}) {
      for (ifaddrs* ifa = list; ifa != nullptr && !found; ifa = ifa->ifa_next) {
        if (ifa->ifa_addr == nullptr || ifa->ifa_addr->sa_family != family) continue;
        if (o.iface != ifa->ifa_name) continue;
        std::memcpy(&out, ifa->ifa_addr,
                    family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6));
        found = true;
      }
    }
    freeifaddrs(list);
    if (!found) {
      return Status::InvalidArgument("HVD_GLOO_IFACE '" + o.iface +
                                     "': no such interface with an IP address on this host");
    }
    return out;
  }
  auto* v4 = reinterpret_cast<sockaddr_in*>(&out);
  v4->sin_family = AF_INET;
  v4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (o.route_to.empty()) return out;
  // The source address of the route to the rendezvous server: a connected UDP socket sends
  // nothing but lets the kernel pick it.
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* ai = nullptr;
  if (getaddrinfo(o.route_to.c_str(), "9", &hints, &ai) != 0 || ai == nullptr) return out;
  Fd probe(socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  sockaddr_storage local{};
  socklen_t len = sizeof(local);
  if (probe.get() >= 0 && connect(probe.get(), ai->ai_addr, ai->ai_addrlen) == 0 &&
      getsockname(probe.get(), reinterpret_cast<sockaddr*>(&local), &len) == 0) {
    out = local;
    reinterpret_cast<sockaddr_in*>(&out)->sin_port = 0;  // same offset for sin6_port
  }
  freeaddrinfo(ai);
  return out;
}

// Moves exactly `n` bytes on a non-blocking socket before `deadline`.
Status Transfer(int fd, bool write, void* buf, size_t n, Clock::time_point deadline,
                const std::string& peer) {
  size_t done = 0;
  char* p = static_cast<char*>(buf);
  while (done < n) {
    ssize_t r = write ? send(fd, p + done, n - done, MSG_NOSIGNAL | MSG_DONTWAIT)
                      : recv(fd, p + done, n - done, MSG_DONTWAIT);
    if (r > 0) {
      done += static_cast<size_t>(r);
      continue;
    }
    if (r == 0) return Status::IoError(peer + " closed the connection during the handshake");
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return Status::IoError(Errno(peer));
    pollfd pfd{fd, static_cast<short>(write ? POLLOUT : POLLIN), 0};
    int ready = poll(&pfd, 1, RemainingMs(deadline));
    if (ready == 0) return Status::Timeout("handshake with " + peer + " timed out");
    if (ready < 0 && errno != EINTR) return Status::IoError(Errno("poll"));
  }
  return Status::OK();
}

Result<PeerAddress> LookUp(const TcpMeshOptions& o, int peer, Clock::time_point deadline) {
  auto left = std::chrono::milliseconds(std::max(1, RemainingMs(deadline)));
  HVD_ASSIGN_OR_RETURN(std::string value,
                       o.kv->Wait(o.scope + "/tcp/" + std::to_string(peer), left));
  return ParsePeerAddress(value, peer);
}

Result<Fd> ConnectTo(const PeerAddress& a, const std::string& name, const std::string& congestion,
                     Clock::time_point deadline) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  addrinfo* ai = nullptr;
  const std::string port = std::to_string(a.port);
  if (int rc = getaddrinfo(a.host.c_str(), port.c_str(), &hints, &ai); rc != 0) {
    return Status::IoError(name + ": bad address: " + gai_strerror(rc));
  }
  Fd fd(socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  int rc = fd.get() < 0 ? -1 : 0;
  if (rc == 0) {
    TuneSocket(fd.get());
    if (!congestion.empty()) SetCongestion(fd.get(), congestion);  // the listener took it
    rc = connect(fd.get(), ai->ai_addr, ai->ai_addrlen);
  }
  freeaddrinfo(ai);
  if (rc != 0 && errno != EINPROGRESS) return Status::IoError(Errno("connecting to " + name));
  pollfd pfd{fd.get(), POLLOUT, 0};
  while (rc != 0) {
    int ready = poll(&pfd, 1, RemainingMs(deadline));
    if (ready == 0) return Status::Timeout("connecting to " + name + " timed out");
    if (ready < 0 && errno == EINTR) continue;
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      return Status::IoError("connecting to " + name + ": " + std::strerror(err));
    }
    rc = 0;
  }
  return fd;
}

Status ConnectorHandshake(int fd, const TcpMeshOptions& o, int peer, const std::string& name,
                          Clock::time_point deadline) {
  Hello hello{static_cast<uint32_t>(o.rank), static_cast<uint32_t>(peer),
              static_cast<uint32_t>(o.size), NewNonce()};
  auto hello_bytes = EncodeHello(hello);
  HVD_RETURN_IF_ERROR(Transfer(fd, true, hello_bytes.data(), hello_bytes.size(), deadline, name));
  uint8_t reply[kReplyBytes];
  Status st = Transfer(fd, false, reply, sizeof(reply), deadline, name);
  if (!st.ok()) {
    // The acceptor answers any well-formed hello before it checks the key (that comes with the
    // proof below), so no answer is not a key mismatch: the peer is busy, gone, dropped the
    // connection (its queue of unauthenticated ones was full), or refused the hello (another
    // group size or rank). Until 2026-12-01 this asked whether the ranks shared the job key.
    return Status(st.code(), name + " did not answer this rank's data connection (" + st.message() +
                                 "): it may be gone or stuck, or be in a group of another size");
  }
  std::optional<control::MacTag> proof = AnswerReply(o.auth, hello, reply);
  if (!proof) {
    return Status::PermissionDenied(name + " failed authentication (not this job's key)");
  }
  HVD_RETURN_IF_ERROR(Transfer(fd, true, proof->data(), proof->size(), deadline, name));
  uint8_t ok = 0;
  st = Transfer(fd, false, &ok, 1, deadline, name);
  if (!st.ok() || ok != kHandshakeOk) {
    return Status::PermissionDenied(name + " refused this rank's authentication");
  }
  return Status::OK();
}

// How often a rank waiting for the higher ranks' connections asks whether the rendezvous
// was given up (one request to hvdrun's server each time).
constexpr int kAbortCheckMs = 500;

// One incoming connection being authenticated.
struct Pending {
  Pending(Fd socket, std::string address, std::string port, const TcpMeshOptions& o)
      : fd(std::move(socket)),
        host(std::move(address)),
        from(host + ":" + port),
        handshake(o.auth, o.rank, o.size, NewNonce()) {}
  Fd fd;
  std::string host;  // the peer's address
  std::string from;  // "addr:port"
  uint8_t buf[kHelloBytes] = {};
  size_t have = 0;
  AcceptorHandshake handshake;
};

class Acceptor {
 public:
  Acceptor(const TcpMeshOptions& o, int listen_fd, TcpMesh* mesh)
      : o_(o), listen_fd_(listen_fd), mesh_(mesh) {}

  Status Run(Clock::time_point deadline) {
    int missing = o_.size - 1 - o_.rank;
    std::vector<pollfd> pfds;
    auto next_abort_check = Clock::now() + std::chrono::milliseconds(kAbortCheckMs);
    while (missing > 0) {
      // The deadline on every pass, whatever poll says: a listener that stays readable (accept
      // failing with EMFILE, or a peer trickling bytes) kept this loop spinning past it until
      // 2026-12-01.
      if (Clock::now() >= deadline) {
        std::string who;
        for (int r = o_.rank + 1; r < o_.size; ++r) {
          if (mesh_->fds[r] < 0) who += (who.empty() ? "" : ", ") + std::to_string(r);
        }
        return Status::Timeout("waiting for data connections from rank(s) " + who);
      }
      if (o_.abortable && Clock::now() >= next_abort_check) {
        // Was the rendezvous given up meanwhile (an elastic round whose member could not join,
        // or died)? Any request under its keys then answers kAborted. Until 2026-12-01 a rank
        // waiting here for the higher ranks waited out its whole timeout (30 s), which an
        // elastic worker counted as a failed try of its own.
        Result<std::string> own = o_.kv->Get(o_.scope + "/tcp/" + std::to_string(o_.rank));
        if (own.status().code() == StatusCode::kAborted) return own.status();
        next_abort_check = Clock::now() + std::chrono::milliseconds(kAbortCheckMs);
      }
      pfds.assign(1, {listen_fd_, POLLIN, 0});
      for (const Pending& p : pending_) pfds.push_back({p.fd.get(), POLLIN, 0});
      const int wait_ms = std::min(RemainingMs(deadline), o_.abortable ? kAbortCheckMs : INT_MAX);
      int ready = poll(pfds.data(), pfds.size(), wait_ms);
      if (ready < 0 && errno != EINTR) return Status::IoError(Errno("poll"));
      if (ready <= 0) continue;
      for (size_t i = pfds.size() - 1; i >= 1; --i) {
        if (pfds[i].revents == 0) continue;
        if (Step(pending_[i - 1])) --missing;
        if (pending_[i - 1].fd.get() < 0) pending_.erase(pending_.begin() + (i - 1));
      }
      if (pfds[0].revents != 0) HVD_RETURN_IF_ERROR(AcceptAll());
    }
    return Status::OK();
  }

 private:
  // Takes every queued connection. Out of descriptors (EMFILE, ENFILE) is an error naming the
  // limit: the connection stays queued, so waiting could only spin.
  Status AcceptAll() {
    while (true) {
      sockaddr_storage addr{};
      socklen_t len = sizeof(addr);
      int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len,
                       SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE) {
          return Status::IoError(Errno("accepting a data connection") +
                                 " (the open-file limit: ulimit -n, or fs.file-max)");
        }
        return Status::OK();
      }
      Fd socket(fd);
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      pending_.emplace_back(std::move(socket), NumericHost(addr),
                            std::to_string(ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port)),
                            o_);
      if (pending_.size() > kMaxPendingHandshakes) DropOne();
    }
  }

  // The queue is full: drops the oldest connection of the address with the most in it, so that a
  // flood from one address pushes out its own connections and not a rank's from another host
  // (until 2026-12-02 the oldest of all went: a flood arriving right after a rank's connection
  // dropped it, and that rank's mesh failed).
  void DropOne() {
    std::map<std::string, size_t> per_host;
    size_t most = 0;
    for (const Pending& p : pending_) most = std::max(most, ++per_host[p.host]);
    // The oldest of them where several addresses have the most.
    auto victim = std::find_if(pending_.begin(), pending_.end(),
                               [&](const Pending& p) { return per_host[p.host] == most; });
    Refuse(*victim, "too many unauthenticated connections (" + std::to_string(most) + " from " +
                        victim->host + ")");
    pending_.erase(victim);
  }

  // Logged as the rendezvous server logs its refusals (RejectionLog): a flood is not a warning
  // per connection.
  void Refuse(Pending& p, const std::string& why) {
    uint64_t unlogged = 0;
    if (rejections_.Allow(Clock::now(), &unlogged)) {
      HVD_LOG_WARNING("tcp communicator '{}' rank {}: refused a data connection from {}: {}{}",
                      o_.scope, o_.rank, p.from, why,
                      unlogged == 0 ? std::string()
                                    : fmt::format(" ({} more refused since the last such warning, "
                                                  "not shown: at most one every {} s)",
                                                  unlogged, RejectionLog::kInterval.count()));
    }
    p.fd.reset();
  }

  // Reads what arrived; returns true when the connection became an authenticated rank's.
  bool Step(Pending& p) {
    const size_t want = p.handshake.want();
    ssize_t r = recv(p.fd.get(), p.buf + p.have, want - p.have, MSG_DONTWAIT);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      Refuse(p, "closed before authenticating");
      return false;
    }
    if (r < 0) return false;
    p.have += static_cast<size_t>(r);
    if (p.have < want) return false;
    p.have = 0;
    AcceptorHandshake::Step step = p.handshake.Feed(p.buf);
    if (!step.refused.empty()) {
      Refuse(p, step.refused);
      return false;
    }
    if (!step.send.empty()) {
      if (send(p.fd.get(), step.send.data(), step.send.size(), MSG_NOSIGNAL | MSG_DONTWAIT) !=
          static_cast<ssize_t>(step.send.size())) {
        Refuse(p, "could not send the challenge");
      }
      return false;
    }
    const int from = p.handshake.from();
    if (mesh_->fds[from] >= 0) {
      Refuse(p, "rank " + std::to_string(from) + " is already connected");
      return false;
    }
    uint8_t ok = kHandshakeOk;
    if (send(p.fd.get(), &ok, 1, MSG_NOSIGNAL | MSG_DONTWAIT) != 1) {
      Refuse(p, "could not confirm the handshake");
      return false;
    }
    TuneSocket(p.fd.get());
    KeepAlive(p.fd.get(), o_.heartbeat_timeout);
    mesh_->fds[from] = p.fd.release();
    mesh_->peer_names[from] = "rank " + std::to_string(from) + " (" + p.from + ")";
    return true;
  }

  const TcpMeshOptions& o_;
  const int listen_fd_;
  TcpMesh* mesh_;
  std::vector<Pending> pending_;
  RejectionLog rejections_;
};

Result<Fd> Listen(const sockaddr_storage& addr, std::string* host, int* port) {
  const socklen_t len = addr.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  Fd fd(socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return Status::IoError(Errno("socket"));
  TuneSocket(fd.get());
  if (bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
    return Status::InvalidArgument(Errno("binding the data listener to " + NumericHost(addr)));
  }
  if (listen(fd.get(), SOMAXCONN) != 0) return Status::IoError(Errno("listen"));
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof(bound);
  getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &bound_len);
  *port = ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  *host = NumericHost(bound);
  return fd;
}

}  // namespace

Result<TcpMesh> ConnectTcpMesh(const TcpMeshOptions& o) {
  const auto deadline = Clock::now() + o.timeout;
  TcpMesh mesh;
  mesh.fds.assign(o.size, -1);
  mesh.peer_names.resize(o.size);
  // Closes whatever was connected unless the whole mesh forms.
  struct CloseUnlessFormed {
    TcpMesh* mesh;
    bool formed = false;
    ~CloseUnlessFormed() {
      for (int fd : mesh->fds) {
        if (!formed && fd >= 0) close(fd);
      }
    }
  } guard{&mesh};
  HVD_ASSIGN_OR_RETURN(sockaddr_storage addr, BindAddress(o));
  std::string host;
  int port = 0;
  HVD_ASSIGN_OR_RETURN(Fd listener, Listen(addr, &host, &port));
  HVD_ASSIGN_OR_RETURN(const std::string congestion,
                       ChooseCongestion(listener.get(), o.congestion));
  HVD_RETURN_IF_ERROR(o.kv->Set(o.scope + "/tcp/" + std::to_string(o.rank),
                                EncodePeerAddress(host, port, o.hostname)));

  // Lower ranks first (each of them is already accepting), then accept the higher ones.
  for (int peer = 0; peer < o.rank; ++peer) {
    auto address = LookUp(o, peer, deadline);
    if (!address.ok()) return address.status();
    const std::string name = address->Name(peer);
    auto fd = ConnectTo(*address, name, congestion, deadline);
    if (!fd.ok()) return fd.status();
    Status st = ConnectorHandshake(fd->get(), o, peer, name, deadline);
    if (!st.ok()) return st;
    KeepAlive(fd->get(), o.heartbeat_timeout);
    mesh.fds[peer] = fd->release();
    mesh.peer_names[peer] = name;
  }
  Acceptor acceptor(o, listener.get(), &mesh);
  Status st = acceptor.Run(deadline);
  if (!st.ok()) return st;
  // Name accepted peers by their published address and host.
  for (int peer = o.rank + 1; peer < o.size; ++peer) {
    auto address = LookUp(o, peer, deadline);
    if (address.ok()) mesh.peer_names[peer] = address->Name(peer);
  }
  guard.formed = true;
  return mesh;
}

}  // namespace hvd::runtime
