#ifndef HVD_TEST_MULTIPROC_FAILURE_CHECK_H_
#define HVD_TEST_MULTIPROC_FAILURE_CHECK_H_

#include <chrono>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/transports/communicator.h"

namespace hvd::test {

// What a survivor checks once its loop of collectives stopped on `status` because a member
// died, stopped or aborted: the code is one of `accepted`, the message names `who` (empty: not
// checked), it came within `within` seconds of `last_ok` (the last call that worked), and the
// next call (a barrier) fails within `next_within` seconds. Prints what it found to stderr;
// returns 0 when all of it holds, else 1 (a forked body's exit code).
int CheckSurvivorFailure(runtime::Communicator& comm, const Status& status,
                         std::chrono::steady_clock::time_point last_ok,
                         const std::vector<StatusCode>& accepted, double within,
                         const std::string& who, double next_within);

}  // namespace hvd::test

#endif  // HVD_TEST_MULTIPROC_FAILURE_CHECK_H_
