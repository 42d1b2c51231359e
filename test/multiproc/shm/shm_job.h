#ifndef HVD_TEST_MULTIPROC_SHM_SHM_JOB_H_
#define HVD_TEST_MULTIPROC_SHM_SHM_JOB_H_

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "common/kv_client.h"
#include "runtime/transports/communicator.h"
#include "runtime/transports/shm/shm_communicator.h"
#include "test/multiproc/forked_job.h"

namespace hvd::test {

// ShmJob runs one group of forked ranks (ForkedJob), but the body gets the rank's KvClient and
// builds whatever it needs; Run() does the common case of a shared-memory communicator.
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
    int64_t single_copy_bytes = 0;    // ShmOptions::single_copy_bytes (0: staging only)
    bool choose_single_copy = false;  // ShmOptions::choose_single_copy
    // ShmOptions::direct_bytes (-1: the rule); with direct_bytes_differ, member r gets
    // direct_bytes << r (the members must agree on the smallest).
    int64_t direct_bytes = -1;
    bool direct_bytes_differ = false;
    int ranks_on_machine = 0;  // ShmOptions::ranks_on_machine (0: the group's size)
    // ShmOptions::single_copy_allreduce on member 0 only (the members must agree on "no").
    bool single_copy_allreduce_on_member0_only = false;
    std::vector<int> victims;  // ranks expected to die or be stopped
  };

  explicit ShmJob(Options options);

  std::vector<RankOutcome> RunRaw(const RawBody& body);
  std::vector<RankOutcome> Run(const Body& body);
  // What Run creates its communicator with, for a RawBody that changes some of it: this job's
  // id and Options (size, staging, single copy, timeout) for `rank`.
  runtime::ShmOptions GroupOptions(int rank, control::KvClient& kv, const std::string& scope) const;

  const std::string& error() const { return job_.error(); }
  const std::string& job_id() const { return job_.job_id(); }

 private:
  Options options_;
  ForkedJob job_;
};

// Entries of /dev/shm of job `job_id`'s shared-memory segments (common/shm_names.h): by the job,
// not by creator pid, so a name another test leaked under a pid since reused never matches.
std::vector<std::string> LeftoverSegments(const std::string& job_id);

}  // namespace hvd::test

#endif  // HVD_TEST_MULTIPROC_SHM_SHM_JOB_H_
