#include "launcher/ssh/ssh_check.h"

#include <thread>

#include "launcher/ssh/ssh_session.h"

namespace hvd::launcher {

std::vector<SshCheckResult> CheckSshHosts(const std::vector<std::string>& hosts,
                                          const SshOptions& options,
                                          std::chrono::steady_clock::time_point deadline) {
  std::vector<SshCheckResult> results(hosts.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < hosts.size(); ++i) {
    threads.emplace_back([&, i] {
      SshCheckResult& result = results[i];
      result.host = hosts[i];
      auto start = std::chrono::steady_clock::now();
      Result<std::unique_ptr<SshSession>> session =
          SshSession::Connect(SshTarget{hosts[i], options}, deadline);
      result.latency_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      if (!session.ok()) result.status = session.status();
    });
  }
  for (std::thread& thread : threads) thread.join();
  return results;
}

}  // namespace hvd::launcher
