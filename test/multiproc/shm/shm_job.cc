#include "test/multiproc/shm/shm_job.h"

#include <dirent.h>

#include <cstdio>

#include "common/shm_names.h"
#include "runtime/transports/shm/shm_communicator.h"

namespace hvd::test {

ShmJob::ShmJob(Options options)
    : options_(std::move(options)),
      job_("shm-multiproc", {options_.deadline, options_.child_alarm, options_.victims}) {}

runtime::ShmOptions ShmJob::GroupOptions(int rank, control::KvClient& kv,
                                         const std::string& scope) const {
  runtime::ShmOptions options;
  options.kv = &kv;
  options.scope = scope;
  options.job_id = job_.job_id();
  options.rank = rank;
  options.size = options_.size;
  options.buffer_bytes = options_.buffer_bytes;
  options.single_copy_bytes = options_.single_copy_bytes;
  options.choose_single_copy = options_.choose_single_copy;
  options.direct_bytes = options_.direct_bytes >= 0 && options_.direct_bytes_differ
                             ? options_.direct_bytes << rank
                             : options_.direct_bytes;
  options.timeout = options_.comm_timeout;
  options.ranks_on_machine = options_.ranks_on_machine;
  if (options_.single_copy_allreduce_on_member0_only) options.single_copy_allreduce = rank == 0;
  return options;
}

std::vector<RankOutcome> ShmJob::Run(const Body& body) {
  return RunRaw([&](int rank, control::KvClient& kv, const std::string& scope) {
    auto comm = runtime::CreateShmCommunicator(GroupOptions(rank, kv, scope));
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

std::vector<RankOutcome> ShmJob::RunRaw(const RawBody& body) {
  return job_.Run(options_.size,
                  [&](int rank, control::KvClient& kv) { return body(rank, kv, job_.scope()); });
}

std::vector<std::string> LeftoverSegments(const std::string& job_id) {
  std::vector<std::string> found;
  const std::string prefix = control::ShmSegmentPrefix(job_id);
  DIR* dir = opendir("/dev/shm");
  if (dir == nullptr) return found;
  while (dirent* e = readdir(dir)) {
    if (std::string(e->d_name).rfind(prefix, 0) == 0) found.push_back(e->d_name);
  }
  closedir(dir);
  return found;
}

}  // namespace hvd::test
