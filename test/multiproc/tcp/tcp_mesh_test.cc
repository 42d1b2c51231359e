// The TCP mesh's congestion control choice (TcpMeshOptions::congestion, HVD_TCP_CONGESTION) with
// real processes and sockets: what every connection of the mesh ends up with, on the
// connecting side and on the accepting side, and a name the kernel refuses.
#include "runtime/transports/tcp/tcp_mesh.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/transports/tcp/tcp_handshake.h"
#include "test/multiproc/forked_job.h"

namespace hvd::test {
namespace {

std::string KernelDefault() {
  std::ifstream in("/proc/sys/net/ipv4/tcp_congestion_control");
  std::string name;
  in >> name;
  return name;
}

std::string CongestionOf(int fd) {
  char name[16] = {};
  socklen_t len = sizeof(name);
  if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len) != 0) return "?";
  return std::string(name, strnlen(name, sizeof(name)));
}

// The options of rank `rank` of a `size`-rank mesh of `job` on this machine.
runtime::TcpMeshOptions MeshOptions(const ForkedJob& job, control::KvClient& kv, int rank,
                                    int size) {
  runtime::TcpMeshOptions o;
  o.kv = &kv;
  o.scope = job.scope();
  o.rank = rank;
  o.size = size;
  o.route_to = "127.0.0.1";
  o.hostname = "host" + std::to_string(rank);
  o.auth = {job.key(), job.job_id(), job.scope()};
  o.timeout = std::chrono::seconds(20);
  return o;
}

// Forms a mesh of 3 (rank 1 both connects, to 0, and accepts, from 2) with `congestion` and
// runs `check` on every rank's mesh, or on its error.
template <typename Check>
std::vector<RankOutcome> RunMesh(const std::string& congestion, const Check& check,
                                 std::string* error) {
  ForkedJob job("tcp-mesh", {std::chrono::seconds(60), 90, {}});
  *error = job.error();
  auto outcomes = job.Run(3, [&](int rank, control::KvClient& kv) {
    runtime::TcpMeshOptions o = MeshOptions(job, kv, rank, 3);
    o.congestion = congestion;
    Result<runtime::TcpMesh> mesh = runtime::ConnectTcpMesh(o);
    const int code = check(rank, mesh);
    if (mesh.ok()) {
      for (int fd : mesh->fds) {
        if (fd >= 0) close(fd);
      }
    }
    return code;
  });
  if (error->empty()) *error = job.error();
  return outcomes;
}

// Every connection of the mesh has congestion control `want`.
int ExpectEveryConnection(int rank, const Result<runtime::TcpMesh>& mesh, const std::string& want) {
  if (!mesh.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", rank, mesh.status().ToString().c_str());
    return 2;
  }
  for (size_t peer = 0; peer < mesh->fds.size(); ++peer) {
    if (static_cast<int>(peer) == rank) continue;
    const std::string got = CongestionOf(mesh->fds[peer]);
    if (got != want) {
      std::fprintf(stderr, "rank %d: connection to %zu has %s, expected %s\n", rank, peer,
                   got.c_str(), want.c_str());
      return 3;
    }
  }
  return 0;
}

void ExpectAllPassed(const std::vector<RankOutcome>& outcomes, const std::string& error) {
  EXPECT_TRUE(error.empty()) << error;
  ASSERT_EQ(outcomes.size(), 3u);
  for (const RankOutcome& o : outcomes)
    EXPECT_TRUE(o.exited && o.exit_code == 0) << Describe(outcomes);
}

TEST(TcpMesh, NamedCongestionControlIsOnEveryConnectionBothSides) {
  // Given reno, which the kernel lets every user set
  std::string error;
  // When a mesh of 3 forms with it, then every connection, connected or accepted, has it
  auto outcomes = RunMesh(
      "reno",
      [](int rank, const Result<runtime::TcpMesh>& mesh) {
        return ExpectEveryConnection(rank, mesh, "reno");
      },
      &error);
  ExpectAllPassed(outcomes, error);
}

TEST(TcpMesh, AutoReplacesBbrAndKeepsAnyOtherDefault) {
  // Given the kernel's default congestion control (BBR on the development VM)
  const std::string system = KernelDefault();
  ASSERT_FALSE(system.empty());
  std::string error;
  // When a mesh forms with "auto"
  auto outcomes = RunMesh(
      "auto",
      [&system](int rank, const Result<runtime::TcpMesh>& mesh) {
        if (!mesh.ok()) return ExpectEveryConnection(rank, mesh, "");
        // Then a BBR default became cubic (or reno where cubic may not be set), the same on
        // every connection; any other default stayed
        const std::string first = CongestionOf(mesh->fds[rank == 0 ? 1 : 0]);
        if (system.rfind("bbr", 0) == 0) {
          if (first != "cubic" && first != "reno") {
            std::fprintf(stderr, "rank %d: default %s became %s\n", rank, system.c_str(),
                         first.c_str());
            return 4;
          }
          return ExpectEveryConnection(rank, mesh, first);
        }
        return ExpectEveryConnection(rank, mesh, system);
      },
      &error);
  ExpectAllPassed(outcomes, error);
  // And "system" keeps the default on every connection
  outcomes = RunMesh(
      "system",
      [&system](int rank, const Result<runtime::TcpMesh>& mesh) {
        return ExpectEveryConnection(rank, mesh, system);
      },
      &error);
  ExpectAllPassed(outcomes, error);
}

TEST(TcpMesh, RefusedCongestionControlIsAnErrorNamingTheKnobOnEveryRank) {
  // Given a congestion control no kernel has
  std::string error;
  // When a mesh forms with it
  auto outcomes = RunMesh(
      "no-such-cc",
      [](int rank, const Result<runtime::TcpMesh>& mesh) {
        // Then every rank fails at once (no rank waits for the others' timeout) with an
        // invalid-argument error naming the knob, the value and what the kernel offers
        if (mesh.ok()) return 5;
        const std::string msg = mesh.status().ToString();
        std::fprintf(stderr, "rank %d: %s\n", rank, msg.c_str());
        if (mesh.status().code() != StatusCode::kInvalidArgument) return 6;
        if (msg.find("HVD_TCP_CONGESTION=no-such-cc") == std::string::npos) return 7;
        if (msg.find("available: ") == std::string::npos) return 8;
        return 0;
      },
      &error);
  ExpectAllPassed(outcomes, error);
}

// Given rank 0 out of file descriptors once its listener is open (RLIMIT_NOFILE cut to just
// that), when rank 1 connects, then rank 0 fails at once with an I/O error naming the open-file
// limit. Until 2026-12-01 accept's EMFILE left the connection queued and the listener readable,
// and rank 0 spun at 100 % past its deadline (it checked the deadline only when poll timed out).
TEST(TcpMesh, AcceptOutOfDescriptorsIsAnErrorNamingTheLimit) {
  ForkedJob job("tcp-mesh", {std::chrono::seconds(60), 90, {}});
  ASSERT_TRUE(job.error().empty()) << job.error();
  auto outcomes = job.Run(2, [&](int rank, control::KvClient& kv) {
    const runtime::TcpMeshOptions o = MeshOptions(job, kv, rank, 2);
    if (rank == 0) {
      // The listener takes the lowest free descriptor; an accepted connection would need one more.
      const int lowest = open("/dev/null", O_RDONLY);
      close(lowest);
      const rlimit limit{static_cast<rlim_t>(lowest + 1), static_cast<rlim_t>(lowest + 1)};
      if (setrlimit(RLIMIT_NOFILE, &limit) != 0) return 9;
    }
    const auto start = std::chrono::steady_clock::now();
    Result<runtime::TcpMesh> mesh = runtime::ConnectTcpMesh(o);
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (rank == 1) return 0;  // its connection is never accepted: whatever it gets
    std::fprintf(stderr, "rank 0 after %.2f s: %s\n", took, mesh.status().ToString().c_str());
    if (mesh.ok()) return 2;
    if (mesh.status().code() != StatusCode::kIoError) return 3;
    if (mesh.status().message().find("open-file limit") == std::string::npos) return 4;
    return took < 10.0 ? 0 : 5;
  });
  EXPECT_TRUE(job.error().empty()) << job.error();
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_TRUE(outcomes[0].exited && outcomes[0].exit_code == 0) << Describe(outcomes);
}

// A blocking TCP connection from `source` (a loopback address) to `host`:`port`; -1 on error.
int ConnectFrom(const char* source, const std::string& host, int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in from{};
  from.sin_family = AF_INET;
  inet_pton(AF_INET, source, &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, host.c_str(), &to.sin_addr);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0 ||
      connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

bool SendAll(int fd, const void* data, size_t n) {
  return send(fd, data, n, MSG_NOSIGNAL) == static_cast<ssize_t>(n);
}

bool ReceiveAll(int fd, void* data, size_t n) {
  size_t have = 0;
  while (have < n) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 10000) <= 0) return false;
    const ssize_t r = recv(fd, static_cast<char*>(data) + have, n - have, 0);
    if (r <= 0) return false;
    have += static_cast<size_t>(r);
  }
  return true;
}

// Given rank 1's data connection to rank 0 open but not yet past its handshake, when 100
// connections from another address (a flood: more than the acceptor's 64 half-open places)
// arrive behind it, then rank 1's connection survives and completes its handshake: the flood
// pushes out its own oldest. Until 2026-12-02 the oldest of all went, rank 1's, and its mesh
// failed. (Rank 1 here is the test's own connector, which pauses between connect and hello.)
TEST(TcpMesh, AFloodFromAnotherAddressDoesNotPushOutARanksConnection) {
  ForkedJob job("tcp-mesh", {std::chrono::seconds(60), 90, {}});
  ASSERT_TRUE(job.error().empty()) << job.error();
  auto outcomes = job.Run(2, [&](int rank, control::KvClient& kv) {
    runtime::TcpMeshOptions o = MeshOptions(job, kv, rank, 2);
    if (rank == 0) {
      Result<runtime::TcpMesh> mesh = runtime::ConnectTcpMesh(o);
      if (!mesh.ok()) std::fprintf(stderr, "rank 0: %s\n", mesh.status().ToString().c_str());
      return mesh.ok() ? 0 : 2;
    }
    Result<std::string> published = kv.Wait(o.scope + "/tcp/0", std::chrono::seconds(20));
    if (!published.ok()) return 10;
    std::istringstream in(*published);
    std::string host;
    int port = 0;
    in >> host >> port;
    const int genuine = ConnectFrom("127.0.0.1", host, port);
    if (genuine < 0) return 11;
    std::vector<int> flood;
    for (int i = 0; i < 100; ++i) {
      const int fd = ConnectFrom("127.0.0.2", host, port);
      if (fd < 0) return 12;
      flood.push_back(fd);
    }
    // The acceptor has taken them all once it dropped the flood's 36 oldest: the 36th closed.
    char byte;
    pollfd p{flood[35], POLLIN, 0};
    if (poll(&p, 1, 10000) <= 0 || recv(flood[35], &byte, 1, 0) != 0) return 13;
    runtime::Hello hello{1, 0, 2, runtime::NewNonce()};
    const auto hello_bytes = runtime::EncodeHello(hello);
    uint8_t reply[runtime::kReplyBytes];
    if (!SendAll(genuine, hello_bytes.data(), hello_bytes.size())) return 14;
    if (!ReceiveAll(genuine, reply, sizeof(reply))) {
      std::fprintf(stderr, "rank 1: its connection was dropped before the challenge\n");
      return 15;
    }
    std::optional<control::MacTag> proof = runtime::AnswerReply(o.auth, hello, reply);
    if (!proof || !SendAll(genuine, proof->data(), proof->size())) return 16;
    uint8_t ok = 0;
    if (!ReceiveAll(genuine, &ok, 1) || ok != runtime::kHandshakeOk) return 17;
    for (int fd : flood) close(fd);
    close(genuine);
    return 0;
  });
  EXPECT_TRUE(job.error().empty()) << job.error();
  ASSERT_EQ(outcomes.size(), 2u);
  for (const RankOutcome& o : outcomes) {
    EXPECT_TRUE(o.exited && o.exit_code == 0) << Describe(outcomes);
  }
}

}  // namespace
}  // namespace hvd::test
