#ifndef HVD_TEST_MULTIPROC_RANK_FAIL_H_
#define HVD_TEST_MULTIPROC_RANK_FAIL_H_
#include <cstdio>
#include <string>

#include "runtime/transports/communicator.h"

namespace hvd::test {
// A rank's check failing: names the rank and what failed on stderr (the test's log) and returns
// 1, the exit code the forked job reports for that rank.
inline int Fail(const runtime::Communicator& comm, const std::string& what) {
  std::fprintf(stderr, "rank %d: %s\n", comm.rank(), what.c_str());
  return 1;
}
}  // namespace hvd::test
#endif  // HVD_TEST_MULTIPROC_RANK_FAIL_H_
