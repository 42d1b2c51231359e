#ifndef HVD_TEST_MULTIPROC_GLOO_GLOO_JOB_H_
#define HVD_TEST_MULTIPROC_GLOO_GLOO_JOB_H_

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "runtime/transports/communicator.h"
#include "runtime/transports/gloo/gloo_communicator.h"
#include "test/multiproc/forked_job.h"

namespace hvd::test {

// GlooJob runs one Gloo group as real forked processes (ForkedJob): each child builds its
// communicator with CreateGlooCommunicator over its KvClient and runs the test body.
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
    // Where the communicator's algorithms take over (lowered to reach a path with small ops).
    runtime::GlooThresholds thresholds;
  };

  explicit GlooJob(Options options);

  // Forks the ranks, waits for all of them; one outcome per rank.
  std::vector<RankOutcome> Run(const Body& body);

  const std::string& error() const { return job_.error(); }

 private:
  Options options_;
  ForkedJob job_;
};

}  // namespace hvd::test

#endif  // HVD_TEST_MULTIPROC_GLOO_GLOO_JOB_H_
