#include "test/multiproc/tcp/tcp_job.h"

#include <cstdio>

#include "runtime/transports/tcp/tcp_communicator.h"

namespace hvd::test {

TcpJob::TcpJob(Options options)
    : options_(std::move(options)),
      job_("tcp-multiproc", {options_.deadline, options_.child_alarm, options_.victims}) {}

std::vector<RankOutcome> TcpJob::Run(const Body& body, const Extra& extra) {
  const int total = options_.size + (extra ? 1 : 0);
  return job_.Run(total, [&](int rank, control::KvClient& kv) {
    if (rank == options_.size) return extra(kv);
    if (options_.before_create) {
      if (int code = options_.before_create(rank, kv); code != 0) return code;
    }
    runtime::TcpOptions options;
    options.kv = &kv;
    options.scope = job_.scope();
    options.rank = rank;
    options.size = options_.size;
    options.route_to = "127.0.0.1";
    options.hostname = "host" + std::to_string(rank);
    options.key = job_.key();
    options.job_id = job_.job_id();
    options.timeout = options_.comm_timeout;
    options.heartbeat_timeout = options_.heartbeat_timeout;
    options.halving_bytes = options_.halving_bytes;
    auto comm = runtime::CreateTcpCommunicator(options);
    if (!comm.ok()) {
      std::fprintf(stderr, "rank %d: create: %s\n", rank, comm.status().ToString().c_str());
      return 4;
    }
    const int code = body(**comm);
    // A passing body also proves teardown is clean.
    if (code != 0) (void)comm->release();
    return code;
  });
}

}  // namespace hvd::test
