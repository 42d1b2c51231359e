#include "test/unit/launcher/rendezvous/rendezvous_test_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/tcp_kv_client.h"

namespace hvd::launcher::testing {

using control::FrameType;

RawSession RawSession::Open(uint16_t port, const control::JobKey& key, const std::string& job_id,
                            bool handshake) {
  RawSession session;
  auto deadline = In(std::chrono::seconds(5));
  auto socket = control::DeadlineSocket::Connect("127.0.0.1", port, deadline);
  EXPECT_TRUE(socket.ok()) << socket.status().ToString();
  if (!socket.ok()) return session;
  session.socket_ = std::move(socket).value();
  if (!handshake) return session;

  control::Hello hello{control::NewNonce(), job_id};
  EXPECT_TRUE(session.socket_
                  .WriteAll(control::EncodeFrame(control::HelloKey(key), FrameType::kHello, 0,
                                                 control::EncodeHello(hello)),
                            deadline)
                  .ok());
  std::string bytes;
  EXPECT_TRUE(control::ReadFrameBytes(session.socket_, 4096, deadline, &bytes).ok());
  control::Frame frame;
  EXPECT_TRUE(control::ParseFrame(bytes, 4096, &frame).ok());
  control::Nonce server_nonce{};
  EXPECT_TRUE(control::DecodeServerHello(frame.body, &server_nonce).ok());
  auto keys = control::DeriveSessionKeys(key, job_id, hello.client_nonce, server_nonce);
  EXPECT_TRUE(control::FrameTagValid(keys.server_to_client, bytes));
  session.channel_.emplace(keys.client_to_server, keys.server_to_client, 1, 1,
                           control::kDefaultMaxFrameBytes);
  EXPECT_TRUE(
      session.socket_.WriteAll(session.channel_->Seal(FrameType::kAuth, ""), deadline).ok());
  bytes.clear();
  EXPECT_TRUE(control::ReadFrameBytes(session.socket_, 4096, deadline, &bytes).ok());
  EXPECT_TRUE(session.channel_->Open(bytes, &frame).ok());
  EXPECT_EQ(frame.header.type, FrameType::kAuthOk);
  return session;
}

Result<control::KvResponse> RawSession::Call(const control::KvRequest& request) {
  auto deadline = In(std::chrono::seconds(5));
  HVD_RETURN_IF_ERROR(
      socket_.WriteAll(channel_->Seal(request.op, control::EncodeKvRequest(request)), deadline));
  std::string bytes;
  HVD_RETURN_IF_ERROR(
      control::ReadFrameBytes(socket_, control::kDefaultMaxFrameBytes, deadline, &bytes));
  control::Frame frame;
  control::FrameCheck check = channel_->Open(bytes, &frame);
  if (!check.ok()) return Status::IoError(check.detail);
  return control::DecodeKvResponse(frame.body);
}

bool RawSession::ServerClosed(Clock::time_point deadline, std::string* received) {
  while (true) {
    std::string chunk;
    Status s = socket_.ReadExact(1, &chunk, deadline);
    if (s.ok()) {
      if (received) received->append(chunk);
      continue;
    }
    return s.code() == StatusCode::kIoError;  // closed or reset, not timed out
  }
}

RecordingProxy::RecordingProxy(uint16_t upstream_port) : upstream_port_(upstream_port) {
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  EXPECT_EQ(listen(listen_fd_, 4), 0);
  socklen_t len = sizeof(addr);
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  EXPECT_EQ(pipe2(wake_, O_CLOEXEC), 0);
  thread_ = std::thread([this] { Run(); });
}

RecordingProxy::~RecordingProxy() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  Wake();
  thread_.join();
  close(listen_fd_);
  close(wake_[0]);
  close(wake_[1]);
}

void RecordingProxy::Wake() { (void)!write(wake_[1], "x", 1); }

std::string RecordingProxy::client_bytes() {
  std::lock_guard<std::mutex> lock(mu_);
  return recorded_;
}

void RecordingProxy::Inject(std::string bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    inject_.push_back(std::move(bytes));
  }
  Wake();
}

bool RecordingProxy::WaitUpstreamClosed(Clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_until(lock, deadline, [this] { return upstream_closed_; });
}

void RecordingProxy::Run() {
  auto write_all = [](int fd, const std::string& data) {
    size_t done = 0;
    while (done < data.size()) {
      ssize_t n = send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return;
      done += static_cast<size_t>(n);
    }
  };
  int client = -1;
  int upstream = -1;
  while (true) {
    std::vector<pollfd> fds = {{wake_[0], POLLIN, 0}};
    if (client == -1) fds.push_back({listen_fd_, POLLIN, 0});
    if (client >= 0) fds.push_back({client, POLLIN, 0});
    if (upstream >= 0) fds.push_back({upstream, POLLIN, 0});
    if (poll(fds.data(), fds.size(), -1) < 0) continue;
    std::vector<std::string> injects;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) break;
      injects.swap(inject_);
    }
    char drain[64];
    if (fds[0].revents) (void)!read(wake_[0], drain, sizeof(drain));
    for (auto& bytes : injects) {
      if (upstream >= 0) write_all(upstream, bytes);
    }
    for (size_t i = 1; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      if (fds[i].fd == listen_fd_) {
        client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        upstream = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = htons(upstream_port_);
        EXPECT_EQ(connect(upstream, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
        continue;
      }
      char buf[4096];
      ssize_t n = read(fds[i].fd, buf, sizeof(buf));
      bool from_client = fds[i].fd == client;
      if (n <= 0) {
        if (!from_client) {
          std::lock_guard<std::mutex> lock(mu_);
          upstream_closed_ = true;
          cv_.notify_all();
        }
        // Either side closing ends the session: close both so the other side sees EOF.
        if (client >= 0) close(client);
        if (upstream >= 0) close(upstream);
        client = upstream = -2;  // stay closed; accept no second connection
        break;
      }
      if (from_client) {
        std::lock_guard<std::mutex> lock(mu_);
        recorded_.append(buf, static_cast<size_t>(n));
      }
      write_all(from_client ? upstream : client, std::string(buf, static_cast<size_t>(n)));
    }
  }
  if (client >= 0) close(client);
  if (upstream >= 0) close(upstream);
}

std::vector<std::string> SplitFrames(const std::string& stream) {
  std::vector<std::string> frames;
  size_t pos = 0;
  while (stream.size() - pos >= control::kFrameHeaderBytes) {
    control::FrameHeader header;
    if (!control::DecodeHeader(stream.substr(pos), UINT32_MAX, &header).ok()) break;
    size_t size = control::kFrameHeaderBytes + header.body_length + control::kFrameTagBytes;
    if (stream.size() - pos < size) break;
    frames.push_back(stream.substr(pos, size));
    pos += size;
  }
  return frames;
}

}  // namespace hvd::launcher::testing
