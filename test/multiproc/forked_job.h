#ifndef HVD_TEST_MULTIPROC_FORKED_JOB_H_
#define HVD_TEST_MULTIPROC_FORKED_JOB_H_

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/job_key.h"
#include "common/kv_client.h"
#include "launcher/rendezvous/rendezvous_server.h"

namespace hvd::test {

// What became of one forked process.
struct RankOutcome {
  bool exited = false;  // true: exit_code is valid; false: killed by `signal` (or timed out)
  int exit_code = -1;
  int signal = 0;
};

// "process 2: exit 0; process 1: signal 9; ", for failure messages.
std::string Describe(const std::vector<RankOutcome>& outcomes);

// ForkedJob is the harness under every forked-process backend test (GlooJob, TcpJob, ShmJob),
// gloo's MultiProcTest style: the parent (the gtest process) serves a real
// launcher::RendezvousServer; each child connects its own control::KvClient to it and runs the
// body, whose return value is the child's exit code (0 = pass; the body prints why it failed).
// Children _exit and never return into gtest. Each Run forks its children before it starts
// that run's server (its port reaches them over a pipe): forking while the server thread
// held a lock made a child hang in its handshake, rarely.
//
// Safety nets: every child arms alarm(child_alarm); the parent waits at most `deadline` and
// SIGKILLs every remaining child on a deadline or as soon as a non-victim fails; when only
// (stopped) victims are left, they are killed and reaped.
class ForkedJob {
 public:
  using ChildBody = std::function<int(int index, control::KvClient& kv)>;

  struct Options {
    std::chrono::seconds deadline{90};
    unsigned child_alarm = 120;
    // Children expected to die (SIGKILL) or be stopped; their end does not kill the others.
    std::vector<int> victims;
  };

  // `name` prefixes the job id ("<name>-<pid>-<n>"), so jobs never share rendezvous keys.
  ForkedJob(const std::string& name, Options options);
  ~ForkedJob();
  ForkedJob(const ForkedJob&) = delete;
  ForkedJob& operator=(const ForkedJob&) = delete;

  // Forks `count` children running `body`, waits for all; one outcome per child.
  std::vector<RankOutcome> Run(int count, const ChildBody& body);

  const std::string& error() const { return error_; }
  const std::string& job_id() const { return job_id_; }
  const std::string& scope() const { return scope_; }  // "test/<job id>"
  const control::JobKey& key() const { return key_; }
  uint16_t kv_port() const;
  // Pids of the children of the last run (also after they were reaped).
  const std::vector<pid_t>& pids() const { return pids_; }

 private:
  bool IsVictim(int index) const;
  void KillAll();

  Options options_;
  control::JobKey key_{};
  std::string job_id_;
  std::string scope_;
  std::unique_ptr<launcher::RendezvousServer> server_;
  std::vector<pid_t> children_;
  std::vector<pid_t> pids_;
  std::string error_;
};

}  // namespace hvd::test

#endif  // HVD_TEST_MULTIPROC_FORKED_JOB_H_
