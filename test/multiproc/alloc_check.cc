#include "test/multiproc/alloc_check.h"

#include <cstdio>

#include "bench/alloc_counter.h"

namespace hvd::test {

int CountAllocations(runtime::Communicator& comm, const std::vector<CountedOp>& ops, int warmups,
                     int calls) {
  int failures = 0;
  for (const CountedOp& op : ops) {
    Status status;
    for (int i = 0; i < warmups && status.ok(); ++i) status = op.run();
    const uint64_t before = HeapAllocations(), bytes_before = HeapAllocatedBytes();
    for (int i = 0; i < calls && status.ok(); ++i) status = op.run();
    const double per_call = static_cast<double>(HeapAllocations() - before) / calls;
    const double bytes = static_cast<double>(HeapAllocatedBytes() - bytes_before) / calls;
    if (!status.ok() || per_call != 0 || comm.rank() == 0) {
      std::fprintf(stderr, "rank %d of %d: %-30s %6.2f allocations/call (%.0f B) %s\n", comm.rank(),
                   comm.size(), op.name, per_call, bytes,
                   status.ok() ? "" : status.ToString().c_str());
    }
    if (!status.ok() || per_call != 0) ++failures;
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace hvd::test
