// TcpTransport::Run's timeout (HVD_GLOO_TIMEOUT_SECONDS through TcpCommunicator) over a real
// socket pair: it bounds each wait for the peers, as Gloo's does, not the whole run.
#include "runtime/transports/tcp/tcp_transport.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "runtime/transports/tcp/tcp_mesh.h"

namespace hvd::runtime {
namespace {

using namespace std::chrono_literals;

// Rank 0's transport to a peer that is this test's socket `*peer`, both ends with small buffers
// so that the peer's reading paces the send.
std::unique_ptr<TcpTransport> PairedTransport(int* peer) {
  int sv[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  const int small = 16384;
  setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
  setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
  *peer = sv[1];
  return std::make_unique<TcpTransport>(0, std::vector<int>{-1, sv[0]},
                                        std::vector<std::string>{"rank 0", "rank 1 (the test)"});
}

Status Send(TcpTransport& t, std::vector<char>& data, std::chrono::milliseconds timeout) {
  TcpStream s;
  s.Reset(1, true);
  s.pieces.push_back({data.data(), data.size(), false});
  const auto text = [] { return std::string("test send"); };
  return t.Run(std::span<TcpStream>(&s, 1), nullptr, timeout, TcpWhat(text));
}

// 1 MiB to a peer that reads 16 KiB every 10 ms: about 0.65 s in all, four times the 150 ms
// timeout, with the longest wait about 10 ms. Until 2026-11-30 the timeout was the run's
// deadline, and such a run failed with kTimeout at 150 ms while its bytes still moved (a 2 GiB
// allreduce over 1 Gbit/s against the default 30 s).
TEST(TcpTransportTest, ARunLongerThanTheTimeoutCompletesWhileBytesMove) {
  int peer = -1;
  auto t = PairedTransport(&peer);
  std::vector<char> data(1 << 20, 'x');
  size_t got = 0;
  std::thread reader([&] {
    std::vector<char> buf(16384);
    while (got < data.size()) {
      const ssize_t n = read(peer, buf.data(), buf.size());
      if (n <= 0) break;
      got += static_cast<size_t>(n);
      std::this_thread::sleep_for(10ms);
    }
  });
  const auto start = std::chrono::steady_clock::now();
  const Status s = Send(*t, data, 150ms);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  t.reset();  // closes rank 0's end: a reader still waiting (the run failed) sees the end
  reader.join();
  close(peer);
  EXPECT_TRUE(s.ok()) << s.ToString() << " after " << took << " s";
  EXPECT_EQ(got, data.size());
  EXPECT_GT(took, 0.15) << "the run must outlast the timeout to show anything";
}

// A peer that reads nothing: the run still ends with kTimeout naming it, about one timeout in.
TEST(TcpTransportTest, APeerThatTakesNothingTimesOut) {
  int peer = -1;
  auto t = PairedTransport(&peer);
  std::vector<char> data(1 << 20, 'x');
  const auto start = std::chrono::steady_clock::now();
  const Status s = Send(*t, data, 150ms);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  close(peer);
  EXPECT_EQ(s.code(), StatusCode::kTimeout) << s.ToString();
  EXPECT_NE(s.message().find("timed out while sending to rank 1 (the test)"), std::string::npos)
      << s.message();
  EXPECT_LT(took, 5.0);
  EXPECT_EQ(t->lost_peer(), 1) << "the peer it waited on";
}

// A peer that announces a message longer than the receiver's limit (a byte gather's grown
// stream): the error names that peer and records it as the lost one. Until 2026-12-01 it named
// nobody ("announced a message of ..." alone).
TEST(TcpTransportTest, AnOversizedAnnouncedMessageNamesItsSender) {
  int peer = -1;
  auto t = PairedTransport(&peer);
  const uint64_t len = uint64_t{1} << 40;
  unsigned char header[8];
  for (int i = 0; i < 8; ++i) header[i] = static_cast<unsigned char>(len >> (8 * i));
  ASSERT_EQ(write(peer, header, sizeof(header)), 8);
  std::string grown;
  TcpStream s;
  s.Reset(1, false);
  s.grow = &grown;
  s.max_grow = 1 << 20;
  const auto text = [] { return std::string("test gather"); };
  const Status st = t->Run(std::span<TcpStream>(&s, 1), nullptr, 5000ms, TcpWhat(text));
  close(peer);
  EXPECT_EQ(st.code(), StatusCode::kRemoteError) << st.ToString();
  EXPECT_NE(st.message().find("rank 1 (the test) announced a message of 1099511627776 bytes"),
            std::string::npos)
      << st.message();
  EXPECT_EQ(t->lost_peer(), 1);
}

// HVD_HEARTBEAT_TIMEOUT_SECONDS beyond 127 s: the kernel takes at most 127 keepalive probes, so
// they are spaced out; until 2026-12-01 the count alone was set, refused (EINVAL, unchecked),
// and the default 9 probes a second apart timed an idle peer out after ~10 s.
TEST(TcpKeepAlive, ALongTimeoutSpacesTheProbesWithinTheKernelsLimit) {
  for (int s : {1, 2, 30, 128, 129, 300, 86400}) {
    const KeepAliveSettings k = KeepAliveFor(std::chrono::seconds(s));
    EXPECT_LE(k.count, kMaxKeepAliveProbes) << s;
    const int covered = k.idle_s + k.interval_s * k.count;
    EXPECT_GE(covered, s) << s;
    EXPECT_LT(covered, s + k.interval_s + 1) << s;
  }
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  KeepAlive(fd, std::chrono::seconds(300));
  int count = 0, interval = 0;
  socklen_t len = sizeof(count);
  ASSERT_EQ(getsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, &len), 0);
  len = sizeof(interval);
  ASSERT_EQ(getsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, &len), 0);
  close(fd);
  EXPECT_EQ(count, KeepAliveFor(std::chrono::seconds(300)).count);
  EXPECT_GE(1 + count * interval, 300);
}

}  // namespace
}  // namespace hvd::runtime
