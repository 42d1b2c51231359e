#ifndef HVD_TEST_MULTIPROC_ALLOC_CHECK_H_
#define HVD_TEST_MULTIPROC_ALLOC_CHECK_H_

#include <functional>
#include <vector>

#include "common/status.h"
#include "runtime/transports/communicator.h"

namespace hvd::test {

// One communicator call run under the allocation counter (bench/alloc_counter.cc, linked
// into the test binary; each forked rank is single-threaded, so the count around its calls
// is exactly what those calls allocated).
struct CountedOp {
  const char* name;
  std::function<Status()> run;
};

// Runs each op `warmups` times (which may size reusable scratch and the caller's output
// strings), then `calls` times under the counter. Prints every op that allocated or failed
// (rank 0 prints every op's count), and returns 0 only if none did. Every op runs on every
// rank even after a failure, so the members' call sequences stay matched.
int CountAllocations(runtime::Communicator& comm, const std::vector<CountedOp>& ops,
                     int warmups = 3, int calls = 20);

}  // namespace hvd::test

#endif  // HVD_TEST_MULTIPROC_ALLOC_CHECK_H_
