#ifndef HVD_TEST_MULTIPROC_SHM_JOB_H_
#define HVD_TEST_MULTIPROC_SHM_JOB_H_

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
#include "test/multiproc/gloo_job.h"

namespace hvd::test {

// ShmJob runs one group of forked ranks around a real launcher::RendezvousServer (the parent,
// i.e. the gtest process, serves it), like GlooJob, but the body gets the rank's KvClient and
// builds whatever it needs; Run() does the common case of a shared-memory communicator.
// A body's return value is the child's exit code (0 = pass; the body prints why it failed).
//
// Safety nets: every child arms alarm(child_alarm); the parent waits at most `deadline` and
// SIGKILLs the remaining children on a deadline or as soon as a non-victim fails.
class ShmJob {
 public:
  using RawBody = std::function<int(int rank, control::KvClient& kv, const std::string& scope)>;
  using Body = std::function<int(runtime::Communicator& comm)>;

  struct Options {
    int size = 2;
    std::chrono::milliseconds comm_timeout{5000};
    std::chrono::seconds deadline{120};
    unsigned child_alarm = 150;
    size_t buffer_bytes = size_t{4} << 20;
    std::vector<int> victims;  // ranks expected to die or be stopped
  };

  explicit ShmJob(Options options);
  ~ShmJob();

  std::vector<RankOutcome> RunRaw(const RawBody& body);
  std::vector<RankOutcome> Run(const Body& body);

  const std::string& error() const { return error_; }
  const std::string& job_id() const { return job_id_; }
  // Pids of the children of the last run (also after they were reaped).
  const std::vector<pid_t>& pids() const { return pids_; }

 private:
  bool IsVictim(int rank) const;
  void KillAll();

  Options options_;
  control::JobKey key_{};
  std::string job_id_;
  std::unique_ptr<launcher::RendezvousServer> server_;
  std::vector<pid_t> children_;
  std::vector<pid_t> pids_;
  std::string error_;
};

// Entries of /dev/shm that a shared-memory segment of one of `pids` would have.
std::vector<std::string> LeftoverSegments(const std::vector<pid_t>& pids);

}  // namespace hvd::test

#endif  // HVD_TEST_MULTIPROC_SHM_JOB_H_
