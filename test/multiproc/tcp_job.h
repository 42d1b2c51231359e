#ifndef HVD_TEST_MULTIPROC_TCP_JOB_H_
#define HVD_TEST_MULTIPROC_TCP_JOB_H_

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/job_key.h"
#include "common/kv_client.h"
#include "launcher/rendezvous_server.h"
#include "runtime/communicator.h"

namespace hvd::test {

// What became of one forked process.
struct TcpOutcome {
  bool exited = false;  // true: exit_code is valid; false: killed by `signal`
  int exit_code = -1;
  int signal = 0;
};

// TcpJob runs one group of the TCP communicator (runtime/tcp_communicator.h) as real forked
// processes: the parent (the gtest process) serves a real launcher::RendezvousServer; each
// child connects a control::KvClient, optionally runs `before_create`, builds its
// communicator with CreateTcpCommunicator and runs the body, whose return value is the
// child's exit code (0 = pass; the body prints why it failed). An optional `extra` process
// (an intruder, for instance) gets its own KvClient and runs alongside the ranks.
//
// Safety nets: every child arms alarm(child_alarm); the parent waits at most `deadline` and
// SIGKILLs every remaining child on a deadline or as soon as one child fails unexpectedly.
class TcpJob {
 public:
  using Body = std::function<int(runtime::Communicator& comm)>;
  using Extra = std::function<int(control::KvClient& kv)>;
  using Hook = std::function<int(int rank, control::KvClient& kv)>;

  struct Options {
    int size = 2;
    std::chrono::milliseconds comm_timeout{10000};
    std::chrono::seconds deadline{90};
    unsigned child_alarm = 120;
    // Ranks expected to die (SIGKILL) or be stopped; their death does not kill the others.
    std::vector<int> victims;
    Hook before_create;  // nonzero return: the child exits with it
  };

  explicit TcpJob(Options options);
  ~TcpJob();

  // Forks the ranks (and `extra`), waits for all; one outcome per rank, then extra's.
  std::vector<TcpOutcome> Run(const Body& body, const Extra& extra = nullptr);

  const std::string& error() const { return error_; }
  const std::string& scope() const { return scope_; }
  const std::string& job_id() const { return job_id_; }
  const control::JobKey& key() const { return key_; }
  uint16_t kv_port() const;

 private:
  std::unique_ptr<control::KvClient> ConnectKv(int who) const;
  [[noreturn]] void RunRank(int rank, const Body& body);
  bool Expendable(size_t index) const;
  void KillAll(int signal);

  Options options_;
  control::JobKey key_{};
  std::string job_id_;
  std::string scope_;
  std::unique_ptr<launcher::RendezvousServer> server_;
  std::vector<pid_t> children_;
  std::string error_;
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

// "process 2: exit 0; process 1: signal 9; ", for failure messages.
std::string Describe(const std::vector<TcpOutcome>& outcomes);

}  // namespace hvd::test

#endif  // HVD_TEST_MULTIPROC_TCP_JOB_H_
