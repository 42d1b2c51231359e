#include "launcher/elastic/discovery_poller.h"

#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

namespace hvd::launcher {

DiscoveryPoller::DiscoveryPoller(discovery::DiscoveryScriptOptions options,
                                 std::chrono::milliseconds interval)
    : options_(std::move(options)), interval_(interval) {
  options_.cancel = &cancel_;
}

DiscoveryPoller::~DiscoveryPoller() {
  Stop();
  if (event_fd_ >= 0) ::close(event_fd_);
}

Status DiscoveryPoller::Start() {
  event_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (event_fd_ < 0) return Status::IoError(std::string("eventfd: ") + strerror(errno));
  thread_ = std::thread(&DiscoveryPoller::Loop, this);
  return Status::OK();
}

void DiscoveryPoller::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cancel_ = true;
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::optional<Result<std::vector<discovery::HostSlots>>> DiscoveryPoller::Take() {
  uint64_t count;
  ssize_t ignored = ::read(event_fd_, &count, sizeof(count));
  (void)ignored;
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(latest_, std::nullopt);
}

// The script's child gets SIGKILL if this thread ends (PR_SET_PDEATHSIG follows the forking
// thread), which only happens in Stop().
void DiscoveryPoller::Loop() {
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (cv_.wait_for(lock, interval_, [this] { return stop_; })) return;
    }
    Result<std::vector<discovery::HostSlots>> hosts = discovery::RunDiscoveryScript(options_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
      latest_ = std::move(hosts);
    }
    uint64_t one = 1;
    ssize_t ignored = ::write(event_fd_, &one, sizeof(one));
    (void)ignored;
  }
}

}  // namespace hvd::launcher
