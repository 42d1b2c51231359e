#include "test/multiproc/failure_check.h"

#include <algorithm>
#include <cstdio>

namespace hvd::test {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

int CheckSurvivorFailure(runtime::Communicator& comm, const Status& status,
                         std::chrono::steady_clock::time_point last_ok,
                         const std::vector<StatusCode>& accepted, double within,
                         const std::string& who, double next_within) {
  const double waited = SecondsSince(last_ok);
  const bool code_ok = std::find(accepted.begin(), accepted.end(), status.code()) != accepted.end();
  if (!code_ok || waited > within ||
      (!who.empty() && status.message().find(who) == std::string::npos)) {
    std::fprintf(stderr, "rank %d: got %s after %.3f s\n", comm.rank(), status.ToString().c_str(),
                 waited);
    return 1;
  }
  std::fprintf(stderr, "rank %d: failed as expected after %.3f s: %s\n", comm.rank(), waited,
               status.ToString().c_str());
  const auto again = std::chrono::steady_clock::now();
  const Status next = comm.Barrier();
  if (next.ok() || SecondsSince(again) > next_within) {
    std::fprintf(stderr, "rank %d: call after failure: %s\n", comm.rank(), next.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace hvd::test
