#include "launcher/rendezvous/rendezvous_server.h"

#include <fcntl.h>
#include <sys/resource.h>

#include <algorithm>
#include <asio.hpp>
#include <atomic>
#include <exception>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/kv_store.h"
#include "common/logging.h"
#include "launcher/rendezvous/rendezvous_server_connection.h"

namespace hvd::launcher {

using internal::ConnectionContext;
using internal::RendezvousConnection;

// At most this many connections may be in their handshake at once (a quarter of the descriptors
// the process may open, at least 64): past it a new one is closed at once. Every rank of a job
// authenticates within milliseconds of connecting; anyone on the network can connect without
// the key, and until 2026-12-01 nothing bounded how many sockets such peers held (5 s each, the
// handshake timeout) while the ranks' connections and hvdrun's own pipes needed descriptors.
size_t MaxUnauthenticated() {
  struct rlimit limit;
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 4096;
  return std::max<size_t>(64, static_cast<size_t>(limit.rlim_cur) / 4);
}

// Member order matters: io_ is declared last so it is destroyed first, destroying any
// handler-owned connection while the store and counters they point to are still alive.
struct RendezvousServer::Impl {
  explicit Impl(RendezvousServerOptions opts) : options(std::move(opts)) {}

  void Accept();
  void CloseAll();  // on the I/O thread

  RendezvousServerOptions options;
  control::KvStore store;
  internal::RendezvousCounters counters;
  ConnectionContext context;
  internal::RejectionLog rejections;
  uint16_t bound_port = 0;
  std::atomic<bool> stopped{false};
  std::thread thread;
  // Touched only on the I/O thread.
  std::unordered_map<uint64_t, std::weak_ptr<RendezvousConnection>> connections;
  std::vector<std::pair<std::string, std::string>> aborted_prefixes;
  uint64_t next_connection_id = 1;
  bool accept_failing = false;  // the last accept failed (warned once)
  bool busy_said = false;       // the last accepted connection was closed for max_unauthenticated
  size_t max_unauthenticated = MaxUnauthenticated();
  asio::io_context io{1};
  asio::ip::tcp::acceptor acceptor{io};
  asio::steady_timer retry_timer{io};
};

void RendezvousServer::Impl::Accept() {
  acceptor.async_accept([this](const asio::error_code& ec, asio::ip::tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
    if (ec) {
      // Transient (EMFILE: out of descriptors): accept again after a pause, not at once (Asio
      // then fails again at once: a core at 100 % and a warning per try, hundreds of thousands
      // a second, until 2026-12-01). One warning per run of failures.
      counters.accept_failures.fetch_add(1, std::memory_order_relaxed);
      if (!accept_failing) {
        HVD_LOG_WARNING("rendezvous server {}: accept failed: {}; retrying every 100 ms",
                        context.server_name, ec.message());
      }
      accept_failing = true;
      retry_timer.expires_after(std::chrono::milliseconds(100));
      retry_timer.async_wait([this](const asio::error_code& wait_ec) {
        if (!wait_ec && acceptor.is_open()) Accept();
      });
      return;
    }
    if (accept_failing) {
      HVD_LOG_INFO("rendezvous server {}: accepting connections again", context.server_name);
      accept_failing = false;
    }
    size_t authenticating = 0;
    for (auto& [id, weak] : connections) {
      auto connection = weak.lock();
      if (connection && !connection->authenticated()) ++authenticating;
    }
    if (authenticating >= max_unauthenticated) {
      counters.rejected_busy.fetch_add(1, std::memory_order_relaxed);
      if (!busy_said) {
        asio::error_code peer_ec;
        auto peer = socket.remote_endpoint(peer_ec);
        HVD_LOG_WARNING(
            "rendezvous server {}: {} connections are still authenticating; closing "
            "new ones (the first from {}) until they finish or time out",
            context.server_name, authenticating,
            peer_ec ? std::string("?") : peer.address().to_string());
        busy_said = true;
      }
      asio::error_code close_ec;
      socket.close(close_ec);
      Accept();
      return;
    }
    busy_said = false;
    try {
      uint64_t id = next_connection_id++;
      auto connection = std::make_shared<RendezvousConnection>(std::move(socket), id, &context);
      connections.emplace(id, connection);
      connection->Start();
    } catch (const std::exception& e) {
      HVD_LOG_ERROR("rendezvous server {}: dropping a new connection: {}", context.server_name,
                    e.what());
    }
    Accept();
  });
}

void RendezvousServer::Impl::CloseAll() {
  asio::error_code ec;
  acceptor.close(ec);
  std::vector<std::shared_ptr<RendezvousConnection>> live;
  for (auto& [id, weak] : connections) {
    if (auto connection = weak.lock()) live.push_back(std::move(connection));
  }
  for (auto& connection : live) connection->Shutdown();
  connections.clear();
}

Result<std::unique_ptr<RendezvousServer>> RendezvousServer::Start(RendezvousServerOptions options) {
  if (std::all_of(options.key.begin(), options.key.end(), [](uint8_t b) { return b == 0; })) {
    return Status::InvalidArgument("rendezvous server needs the job key; it is all zero");
  }
  if (options.job_id.size() > control::kMaxJobIdBytes) {
    return Status::InvalidArgument("job id '" + options.job_id + "' is too long");
  }
  if (options.max_frame_bytes < control::kMaxHandshakeBodyBytes) {
    return Status::InvalidArgument("max_frame_bytes " + std::to_string(options.max_frame_bytes) +
                                   " is below the protocol minimum of " +
                                   std::to_string(control::kMaxHandshakeBodyBytes));
  }
  auto impl = std::make_unique<Impl>(std::move(options));
  const RendezvousServerOptions& opts = impl->options;
  const std::string where = opts.bind_address + ":" + std::to_string(opts.port);
  asio::error_code ec;
  asio::ip::tcp::endpoint endpoint;
  asio::ip::address address = asio::ip::make_address(opts.bind_address, ec);
  if (!ec) {
    endpoint = asio::ip::tcp::endpoint(address, opts.port);
  } else {
    asio::ip::tcp::resolver resolver(impl->io);
    auto results = resolver.resolve(opts.bind_address, std::to_string(opts.port), ec);
    if (ec || results.empty()) {
      return Status::InvalidArgument("cannot bind the rendezvous server to '" + opts.bind_address +
                                     "': " + ec.message());
    }
    endpoint = results.begin()->endpoint();
  }
  auto& acceptor = impl->acceptor;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status::IoError("rendezvous server cannot listen on " + where + ": " + ec.message());
  }
  // Children spawned by the launcher must not inherit the listening socket.
  ::fcntl(acceptor.native_handle(), F_SETFD, FD_CLOEXEC);
  impl->bound_port = acceptor.local_endpoint(ec).port();
  impl->context = ConnectionContext{&impl->options,
                                    control::HelloKey(impl->options.key),
                                    &impl->store,
                                    &impl->counters,
                                    opts.bind_address + ":" + std::to_string(impl->bound_port),
                                    [raw = impl.get()](uint64_t id) { raw->connections.erase(id); },
                                    &impl->aborted_prefixes,
                                    &impl->rejections};
  impl->Accept();
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] {
    try {
      raw->io.run();
    } catch (const std::exception& e) {
      HVD_LOG_ERROR("rendezvous server {}: I/O thread stopped: {}", raw->context.server_name,
                    e.what());
    }
  });
  HVD_LOG_DEBUG("rendezvous server listening on {}", impl->context.server_name);
  return std::unique_ptr<RendezvousServer>(new RendezvousServer(std::move(impl)));
}

RendezvousServer::RendezvousServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RendezvousServer::~RendezvousServer() { Stop(); }

uint16_t RendezvousServer::port() const { return impl_->bound_port; }

const std::string& RendezvousServer::address() const { return impl_->options.bind_address; }

void RendezvousServer::Set(const std::string& key, std::string value) {
  impl_->store.Set(impl_->options.job_id, key, std::move(value));
}

std::optional<std::string> RendezvousServer::Get(const std::string& key) const {
  return impl_->store.Get(impl_->options.job_id, key);
}

void RendezvousServer::AbortPrefix(const std::string& prefix, const std::string& reason) {
  Impl* raw = impl_.get();
  asio::post(raw->io, [raw, prefix, reason] {
    raw->aborted_prefixes.emplace_back(prefix, reason);
    raw->store.DeletePrefix(raw->options.job_id, prefix);
    std::vector<std::shared_ptr<RendezvousConnection>> live;
    for (auto& [id, weak] : raw->connections) {
      if (auto connection = weak.lock()) live.push_back(std::move(connection));
    }
    for (auto& connection : live) connection->AbortWait(prefix, reason);
  });
}

void RendezvousServer::Stop() {
  if (impl_->stopped.exchange(true)) return;
  Impl* raw = impl_.get();
  asio::post(raw->io, [raw] {
    raw->CloseAll();
    raw->io.stop();
  });
  if (raw->thread.joinable()) raw->thread.join();
  // Parked waits hold connection references; drop them while the I/O context still exists.
  raw->store.CancelAllWaits();
}

RendezvousServer::Stats RendezvousServer::stats() const {
  const internal::RendezvousCounters& c = impl_->counters;
  return Stats{c.requests.load(),          c.rejected_auth.load(),      c.rejected_replay.load(),
               c.rejected_oversize.load(), c.rejected_malformed.load(), c.handshake_timeouts.load(),
               c.accept_failures.load(),   c.rejected_busy.load()};
}

}  // namespace hvd::launcher
