#include "test/multiproc/gloo/gloo_job.h"

#include <cstdio>

#include "runtime/transports/gloo/gloo_communicator.h"

namespace hvd::test {

GlooJob::GlooJob(Options options)
    : options_(std::move(options)),
      job_("gloo-multiproc", {options_.deadline, options_.child_alarm, options_.victims}) {}

std::vector<RankOutcome> GlooJob::Run(const Body& body) {
  return job_.Run(options_.size, [&](int rank, control::KvClient& kv) {
    runtime::GlooOptions options;
    options.kv = &kv;
    options.scope = job_.scope();
    options.rank = rank;
    options.size = options_.size;
    options.timeout = options_.comm_timeout;
    auto comm = runtime::CreateGlooCommunicator(options);
    if (!comm.ok()) {
      std::fprintf(stderr, "rank %d: create: %s\n", rank, comm.status().ToString().c_str());
      return 4;
    }
    const int code = body(**comm);
    // Skip destructors of a possibly broken communicator only when the body failed; a passing
    // body also proves teardown is clean.
    if (code != 0) (void)comm->release();
    return code;
  });
}

}  // namespace hvd::test
