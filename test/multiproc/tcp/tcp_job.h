#ifndef HVD_TEST_MULTIPROC_TCP_TCP_JOB_H_
#define HVD_TEST_MULTIPROC_TCP_TCP_JOB_H_

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "common/job_key.h"
#include "common/kv_client.h"
#include "runtime/transports/communicator.h"
#include "test/multiproc/forked_job.h"

namespace hvd::test {

// TcpJob runs one group of the TCP communicator (runtime/transports/tcp/tcp_communicator.h) as real
// forked processes (ForkedJob): each child optionally runs `before_create`, builds its communicator
// with CreateTcpCommunicator and runs the body. An optional `extra` process (an intruder, for
// instance) gets its own KvClient and runs alongside the ranks.
class TcpJob {
 public:
  using Body = std::function<int(runtime::Communicator& comm)>;
  using Extra = std::function<int(control::KvClient& kv)>;
  using Hook = std::function<int(int rank, control::KvClient& kv)>;

  struct Options {
    int size = 2;
    std::chrono::milliseconds comm_timeout{10000};
    std::chrono::milliseconds heartbeat_timeout{0};  // TcpOptions::heartbeat_timeout
    int64_t halving_bytes = -1;                      // TcpOptions::halving_bytes
    std::chrono::seconds deadline{90};
    unsigned child_alarm = 120;
    // Ranks expected to die (SIGKILL) or be stopped; their death does not kill the others.
    std::vector<int> victims;
    Hook before_create;  // nonzero return: the child exits with it
  };

  explicit TcpJob(Options options);

  // Forks the ranks (and `extra`), waits for all; one outcome per rank, then extra's.
  std::vector<RankOutcome> Run(const Body& body, const Extra& extra = nullptr);

  const std::string& error() const { return job_.error(); }
  const std::string& scope() const { return job_.scope(); }
  const std::string& job_id() const { return job_.job_id(); }
  const control::JobKey& key() const { return job_.key(); }
  uint16_t kv_port() const { return job_.kv_port(); }

 private:
  Options options_;
  ForkedJob job_;
};

inline TcpJob::Options TcpJobOptions(int size,
                                     std::chrono::milliseconds timeout = std::chrono::seconds(10),
                                     std::vector<int> victims = {}) {
  TcpJob::Options o;
  o.size = size;
  o.comm_timeout = timeout;
  o.victims = std::move(victims);
  return o;
}

}  // namespace hvd::test

#endif  // HVD_TEST_MULTIPROC_TCP_TCP_JOB_H_
