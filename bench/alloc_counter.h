#ifndef HVD_BENCH_ALLOC_COUNTER_H_
#define HVD_BENCH_ALLOC_COUNTER_H_

#include <cstdint>

// bench/alloc_counter.cc: counting replacements of malloc/new for the binary that links it
// (hvd-bench, gloo-comm-bench and the *_alloc_multiproc_test binaries).

// Heap allocations (count, bytes) made by this process so far, all threads.
uint64_t HeapAllocations();
uint64_t HeapAllocatedBytes();
// Prints a backtrace to stderr for each of the next `count` allocations; 0 disarms.
void HeapTraceArm(int count);

#endif  // HVD_BENCH_ALLOC_COUNTER_H_
