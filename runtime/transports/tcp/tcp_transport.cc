#include "runtime/transports/tcp/tcp_transport.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/check.h"
#include "runtime/transports/communicator.h"

namespace hvd::runtime {
namespace {

// Scratch per reducing receive stream: big enough to amortise a syscall, small enough to stay
// in L2 between the kernel's copy and the reduction.
constexpr size_t kScratchBytes = size_t{256} << 10;
// At most this much per stream per pass, so that one busy direction cannot starve the other.
constexpr size_t kPumpBudget = size_t{1} << 20;
constexpr int kMaxIov = 64;  // pieces per sendmsg/recvmsg (a fused batch has many)
// How often a waiting Run asks the kernel whether its peers still acknowledge.
constexpr std::chrono::milliseconds kLivenessCheckInterval{250};

bool WouldBlock(int err) { return err == EAGAIN || err == EWOULDBLOCK; }

int PollTimeoutMs(TcpTransport::Clock::time_point deadline) {
  auto left = deadline - TcpTransport::Clock::now();
  if (left <= std::chrono::nanoseconds::zero()) return 0;
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return static_cast<int>(std::min<int64_t>(ms, 1 << 30));
}

// The peer of `fd` has had sent data or window probes unanswered for at least `timeout`.
bool PeerSilent(int fd, std::chrono::milliseconds timeout) {
  tcp_info info{};
  socklen_t len = sizeof(info);
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return false;
  // A live peer that keeps its window closed answers every probe (probes drops back to 0);
  // two unanswered probes are not that.
  const bool waiting = info.tcpi_unacked > 0 || info.tcpi_probes >= 2;
  return waiting && info.tcpi_last_ack_recv >= static_cast<uint32_t>(timeout.count());
}

// Skips finished (and empty) pieces; a grow stream learns its body length from the header.
Status Settle(TcpStream& s) {
  while (s.piece_ < s.pieces.size() && s.offset_ == s.pieces[s.piece_].bytes) {
    ++s.piece_;
    s.offset_ = 0;
    if (s.grow != nullptr && s.piece_ == 1 && s.pieces.size() == 1) {
      uint64_t len = 0;
      for (int i = 0; i < 8; ++i) len |= static_cast<uint64_t>(s.header_[i]) << (8 * i);
      if (len > s.max_grow) {
        return Status::RemoteError("announced a message of " + std::to_string(len) +
                                   " bytes (limit " + std::to_string(s.max_grow) + ")");
      }
      s.grow->resize(static_cast<size_t>(len));
      s.pieces.push_back({s.grow->data(), static_cast<size_t>(len), false});
    }
  }
  return Status::OK();
}

void Advance(TcpStream& s, size_t n) {
  s.done_ += n;
  while (n > 0) {
    const size_t take = std::min(n, s.pieces[s.piece_].bytes - s.offset_);
    s.offset_ += take;
    n -= take;
    if (s.offset_ == s.pieces[s.piece_].bytes && n > 0) {
      ++s.piece_;
      s.offset_ = 0;
    }
  }
}

}  // namespace

TcpTransport::TcpTransport(int rank, std::vector<int> fds, std::vector<std::string> peer_names)
    : rank_(rank), fds_(std::move(fds)), peer_names_(std::move(peer_names)) {
  abort_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  HVD_CHECK(abort_fd_ >= 0) << "eventfd: " << std::strerror(errno);
  pfds_.reserve(fds_.size() + 1);  // the abort eventfd and at most one entry per peer
}

TcpTransport::~TcpTransport() {
  std::lock_guard<std::mutex> lock(shutdown_mu_);
  for (int fd : fds_) {
    if (fd >= 0) close(fd);
  }
  close(abort_fd_);
}

void TcpTransport::Abort() {
  aborted_.store(true);
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(abort_fd_, &one, sizeof(one));
  Shutdown();
}

void TcpTransport::Shutdown() {
  shut_down_.store(true);
  std::lock_guard<std::mutex> lock(shutdown_mu_);
  for (int fd : fds_) {
    if (fd >= 0) shutdown(fd, SHUT_RDWR);
  }
}

Status TcpTransport::CheckClosed() const {
  // After this end shut its sockets down, every one of them polls as closed: that names no
  // peer (until 2026-12-01 the lowest other rank was recorded as lost).
  if (shut_down_.load()) {
    return Status::Aborted("the communicator was shut down after an earlier failure");
  }
  std::vector<int> fds, peers;
  for (size_t r = 0; r < fds_.size(); ++r) {
    if (fds_[r] < 0) continue;
    fds.push_back(fds_[r]);
    peers.push_back(static_cast<int>(r));
  }
  int err = 0;
  const int closed = FirstClosedSocket(fds, &err);
  if (closed < 0) return Status::OK();
  return PeerError(peers[closed], "closed its connection (its process ended, or its host is gone)",
                   err);
}

Status TcpTransport::PeerError(int peer, const char* what, int err) const {
  std::string msg = peer_names_[peer] + " " + what;
  if (err != 0) msg += std::string(": ") + std::strerror(err);
  if (aborted_.load()) return Status::Aborted("the communicator was aborted (" + msg + ")");
  lost_peer_.Note(peer);
  return Status::RemoteError(msg);
}

size_t TcpTransport::SendLimit(const TcpStream& s) const {
  if (s.source == nullptr) return s.ready;
  return s.ready + s.source->processed();
}

Status TcpTransport::PumpSend(TcpStream& s, bool* moved) {
  size_t budget = kPumpBudget;
  while (!s.finished() && budget > 0) {
    const size_t limit = SendLimit(s);
    if (s.done_ >= limit) return Status::OK();
    const size_t allow = std::min(limit - s.done_, budget);
    iovec iov[kMaxIov];
    int n = 0;
    size_t want = 0;
    size_t off = s.offset_;
    for (size_t p = s.piece_; p < s.pieces.size() && n < kMaxIov && want < allow; ++p, off = 0) {
      const size_t len = std::min(s.pieces[p].bytes - off, allow - want);
      if (len == 0) continue;
      iov[n++] = {s.pieces[p].data + off, len};
      want += len;
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(n);
    const ssize_t sent = sendmsg(fds_[s.peer], &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR) continue;
      if (WouldBlock(errno)) return Status::OK();
      return PeerError(s.peer, "failed while sending", errno);
    }
    Advance(s, static_cast<size_t>(sent));
    HVD_RETURN_IF_ERROR(Settle(s));
    budget -= std::min(budget, static_cast<size_t>(sent));
    *moved = true;
  }
  return Status::OK();
}

Status TcpTransport::ReduceScratch(TcpStream& s, char* scratch, const TcpReducer* reducer) {
  const size_t elem = reducer->elem;
  // The whole elements received, folded into as many consecutive reduce pieces as they cover
  // (piece sizes are element multiples, so an element never straddles two pieces).
  size_t used = 0;
  while (s.pending_ - used >= elem && !s.finished() && s.pieces[s.piece_].reduce) {
    TcpPiece& piece = s.pieces[s.piece_];
    const size_t n = std::min((s.pending_ - used) / elem * elem, piece.bytes - s.offset_);
    reducer->fn(piece.data + s.offset_, scratch + used, static_cast<int64_t>(n / elem));
    if (piece.finish && reducer->finish) {
      reducer->finish(piece.data + s.offset_, static_cast<int64_t>(n / elem));
    }
    used += n;
    Advance(s, n);
    HVD_RETURN_IF_ERROR(SettleReceived(s));
  }
  s.pending_ -= used;
  if (s.pending_ > 0 && used > 0) std::memmove(scratch, scratch + used, s.pending_);
  return Status::OK();
}

Status TcpTransport::PumpRecv(TcpStream& s, size_t index, const TcpReducer* reducer, bool* moved) {
  size_t budget = kPumpBudget;
  while (!s.finished() && budget > 0) {
    const TcpPiece& piece = s.pieces[s.piece_];
    ssize_t got = 0;
    if (piece.reduce) {
      HVD_CHECK(reducer != nullptr && piece.bytes % reducer->elem == 0)
          << "reducing stream without a reducer or with a partial element";
      if (scratch_.size() <= index) scratch_.resize(index + 1);
      std::vector<char>& scratch = scratch_[index];
      if (scratch.size() < kScratchBytes) scratch.resize(kScratchBytes);
      // Up to a scratch-full across consecutive reduce pieces (a fused allreduce's tensors):
      // one recv for many small pieces.
      size_t avail = 0;
      for (size_t p = s.piece_; p < s.pieces.size() && s.pieces[p].reduce && avail < kScratchBytes;
           ++p) {
        avail += s.pieces[p].bytes - (p == s.piece_ ? s.offset_ : 0);
      }
      const size_t want = std::min(kScratchBytes, avail) - s.pending_;
      got = recv(fds_[s.peer], scratch.data() + s.pending_, want, MSG_DONTWAIT);
      if (got > 0) {
        s.pending_ += static_cast<size_t>(got);
        HVD_RETURN_IF_ERROR(ReduceScratch(s, scratch.data(), reducer));
      }
    } else {
      iovec iov[kMaxIov];
      int n = 0;
      size_t want = 0;
      size_t off = s.offset_;
      for (size_t p = s.piece_; p < s.pieces.size() && n < kMaxIov && want < budget; ++p, off = 0) {
        if (s.pieces[p].reduce) break;
        if (s.grow != nullptr && p == 0) {  // the length header alone: it sizes the body
          iov[n++] = {s.pieces[p].data + off, s.pieces[p].bytes - off};
          break;
        }
        const size_t len = std::min(s.pieces[p].bytes - off, budget - want);
        if (len == 0) continue;
        iov[n++] = {s.pieces[p].data + off, len};
        want += len;
      }
      msghdr msg{};
      msg.msg_iov = iov;
      msg.msg_iovlen = static_cast<size_t>(n);
      got = recvmsg(fds_[s.peer], &msg, MSG_DONTWAIT);
      if (got > 0) {
        Advance(s, static_cast<size_t>(got));
        HVD_RETURN_IF_ERROR(SettleReceived(s));
      }
    }
    if (got == 0) return PeerError(s.peer, "closed the connection", 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      if (WouldBlock(errno)) return Status::OK();
      return PeerError(s.peer, "failed while receiving", errno);
    }
    budget -= std::min(budget, static_cast<size_t>(got));
    *moved = true;
  }
  return Status::OK();
}

Status TcpTransport::SettleReceived(TcpStream& s) const {
  Status st = Settle(s);
  // What the peer sent is wrong (a length past the limit): it is the one to name, and the lost
  // member (until 2026-12-01 the error named nobody, and the peers this rank then shut down
  // named this rank).
  return st.ok() ? st : PeerError(s.peer, st.message().c_str(), 0);
}

Status TcpTransport::CheckPeersAlive(std::span<TcpStream> streams) const {
  for (const TcpStream& s : streams) {
    if (s.finished() || !PeerSilent(fds_[s.peer], heartbeat_timeout_)) continue;
    char seconds[32];
    std::snprintf(seconds, sizeof(seconds), "%.1f s", heartbeat_timeout_.count() / 1000.0);
    lost_peer_.Note(s.peer);
    return Status::RemoteError(peer_names_[s.peer] + " acknowledged nothing for " + seconds +
                               " (HVD_HEARTBEAT_TIMEOUT_SECONDS): its host is down or "
                               "unreachable");
  }
  return Status::OK();
}

Status TcpTransport::Run(std::span<TcpStream> streams, const TcpReducer* reducer,
                         Clock::duration timeout, const TcpWhat& what) {
  if (aborted_.load()) return Status::Aborted(what() + ": the communicator was aborted");
  for (TcpStream& s : streams) {
    HVD_CHECK(s.peer >= 0 && s.peer < static_cast<int>(fds_.size()) && s.peer != rank_)
        << "stream to bad peer " << s.peer;
    if (s.grow != nullptr) s.pieces.assign(1, {reinterpret_cast<char*>(s.header_), 8, false});
    Status st = Settle(s);
    if (!st.ok()) return st.WithContext(what() + ": " + peer_names_[s.peer]);
  }
  std::vector<pollfd>& pfds = pfds_;
  const bool watch = heartbeat_timeout_.count() > 0;
  Clock::time_point next_check = Clock::now() + kLivenessCheckInterval;
  Clock::time_point busy_until = Clock::time_point::min();  // min: not polling busily now
  // No stream moved a byte since `deadline - timeout`. Until 2026-11-30 the deadline was the
  // whole collective's: one that took longer than HVD_GLOO_TIMEOUT_SECONDS (2 GiB over a
  // 1 Gbit/s link) failed with kTimeout naming healthy peers while its bytes still flowed.
  Clock::time_point deadline = Clock::now() + timeout;
  bool progressed = false;  // since `deadline` was set
  while (true) {
    bool moved = false;
    bool all_done = true;
    for (size_t i = 0; i < streams.size(); ++i) {
      TcpStream& s = streams[i];
      if (s.finished()) continue;
      Status st = s.send ? PumpSend(s, &moved) : PumpRecv(s, i, reducer, &moved);
      if (!st.ok()) return st.WithContext(what());
      all_done = all_done && s.finished();
    }
    if (all_done) return Status::OK();
    if (moved) {
      busy_until = Clock::time_point::min();
      progressed = true;
      continue;
    }
    if (progressed) {  // once per wait, not per byte moved
      deadline = Clock::now() + timeout;
      progressed = false;
    }
    if (busy_poll_.count() > 0) {  // set_busy_poll
      const auto now = Clock::now();
      if (busy_until == Clock::time_point::min()) busy_until = now + busy_poll_;
      if (now < busy_until && !aborted_.load()) {
        if (busy_yield_) sched_yield();
        continue;
      }
    }

    pfds.clear();
    pfds.push_back({abort_fd_, POLLIN, 0});
    for (const TcpStream& s : streams) {
      if (s.finished()) continue;
      short events = s.send ? (s.done_ < SendLimit(s) ? POLLOUT : 0) : POLLIN;
      if (events == 0) continue;
      auto it = std::find_if(pfds.begin(), pfds.end(),
                             [&](const pollfd& p) { return p.fd == fds_[s.peer]; });
      if (it == pfds.end()) {
        pfds.push_back({fds_[s.peer], events, 0});
      } else {
        it->events = static_cast<short>(it->events | events);
      }
    }
    const int ready = poll(pfds.data(), pfds.size(),
                           PollTimeoutMs(watch ? std::min(deadline, next_check) : deadline));
    if (ready < 0 && errno != EINTR) {
      const int err = errno;
      return Status::Internal(what() + ": poll: " + std::strerror(err));
    }
    if (aborted_.load() || (pfds[0].revents & POLLIN) != 0) {
      return Status::Aborted(what() + ": the communicator was aborted");
    }
    if (watch && Clock::now() >= next_check) {
      Status alive = CheckPeersAlive(streams);
      if (!alive.ok()) return alive.WithContext(what());
      next_check = Clock::now() + kLivenessCheckInterval;
    }
    if (ready == 0 && Clock::now() >= deadline) {
      std::string owing;
      int culprit = -1, reader = -1;  // first peer that owes bytes; first that reads none
      for (const TcpStream& s : streams) {
        if (s.finished()) continue;
        if (!owing.empty()) owing += ", ";
        owing += (s.send ? "sending to " : "receiving from ") + peer_names_[s.peer];
        int& first = s.send ? reader : culprit;
        if (first < 0) first = s.peer;
      }
      // The peer this rank waited on is the lost one (hvdrun follows the chain from there):
      // until 2026-12-01 a timeout named nobody, and the ranks the timed-out one then shut
      // down named it, so a stopped rank was never reported.
      if (culprit < 0) culprit = reader;
      if (culprit >= 0) lost_peer_.Note(culprit);
      return Status::Timeout(what() + ": timed out while " + owing);
    }
  }
}

}  // namespace hvd::runtime
