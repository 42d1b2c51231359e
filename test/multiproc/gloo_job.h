#ifndef HVD_TEST_MULTIPROC_GLOO_JOB_H_
#define HVD_TEST_MULTIPROC_GLOO_JOB_H_

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/job_key.h"
#include "launcher/rendezvous_server.h"
#include "runtime/communicator.h"

namespace hvd::test {

// What became of one forked rank.
struct RankOutcome {
  bool exited = false;  // true: exit_code is valid; false: killed by `signal` (or timed out)
  int exit_code = -1;
  int signal = 0;
};

// GlooJob runs one Gloo group as real forked processes, gloo's MultiProcTest style: the
// parent (the gtest process) serves a real launcher::RendezvousServer; each child connects a
// control::KvClient to it, builds its communicator with CreateGlooCommunicator and runs the
// test body, whose return value is the child's exit code (0 = pass; the body prints why it
// failed). Children call _exit and never return into gtest.
//
// Safety nets: every child arms alarm(child_alarm); the parent waits at most `deadline` and
// SIGKILLs every remaining child on a deadline or as soon as one child fails unexpectedly.
class GlooJob {
 public:
  using Body = std::function<int(runtime::Communicator& comm)>;

  struct Options {
    int size = 2;
    std::chrono::milliseconds comm_timeout{5000};
    std::chrono::seconds deadline{60};
    unsigned child_alarm = 90;
    // Ranks expected to die (SIGKILL) or be stopped; their death does not kill the others.
    std::vector<int> victims;
  };

  explicit GlooJob(Options options);
  ~GlooJob();

  // Forks the ranks, waits for all of them; one outcome per rank.
  std::vector<RankOutcome> Run(const Body& body);

  const std::string& error() const { return error_; }

 private:
  [[noreturn]] void RunChild(int rank, const Body& body);
  bool IsVictim(int rank) const;
  void KillAll(int signal);

  Options options_;
  control::JobKey key_{};
  std::string job_id_;
  std::unique_ptr<launcher::RendezvousServer> server_;
  std::vector<pid_t> children_;
  std::string error_;
};

// "rank 2: exit 0" / "rank 1: signal 9", for failure messages.
std::string Describe(const std::vector<RankOutcome>& outcomes);

}  // namespace hvd::test

#endif  // HVD_TEST_MULTIPROC_GLOO_JOB_H_
