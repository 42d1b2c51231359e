#ifndef HVD_LAUNCHER_ELASTIC_DISCOVERY_POLLER_H_
#define HVD_LAUNCHER_ELASTIC_DISCOVERY_POLLER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "common/status.h"
#include "discovery/discovery_script.h"
#include "discovery/host_slots.h"

namespace hvd::launcher {

// Runs the elastic job's discovery script every `interval` on a thread of its own, so a slow
// or hanging script (bounded by options.timeout) never stalls the job's event loop. Each
// run's outcome, good or bad, is handed over through Take(); event_fd() becomes readable
// when there is one. Thread-safe; the thread stops (killing a running script) in Stop().
class DiscoveryPoller {
 public:
  DiscoveryPoller(discovery::DiscoveryScriptOptions options, std::chrono::milliseconds interval);
  ~DiscoveryPoller();  // Stop()
  DiscoveryPoller(const DiscoveryPoller&) = delete;
  DiscoveryPoller& operator=(const DiscoveryPoller&) = delete;

  // Starts polling; the first run is `interval` from now (the caller made the first one).
  Status Start();
  void Stop();
  int event_fd() const { return event_fd_; }
  // The latest run's outcome, once; clears the event.
  std::optional<Result<std::vector<discovery::HostSlots>>> Take();

 private:
  void Loop();

  discovery::DiscoveryScriptOptions options_;
  std::chrono::milliseconds interval_;
  int event_fd_ = -1;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::atomic<bool> cancel_{false};  // stops a running script
  std::optional<Result<std::vector<discovery::HostSlots>>> latest_;
  std::thread thread_;
};

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_ELASTIC_DISCOVERY_POLLER_H_
