#ifndef HVD_TEST_MULTIPROC_SEEDED_VALUES_H_
#define HVD_TEST_MULTIPROC_SEEDED_VALUES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/transports/data_type.h"

namespace hvd::test {

// Deterministic input of `rank` for one case (`seed`): small values, so products and sums stay
// exact for integers, and random fractions for floats (order-sensitive sums).
std::vector<char> Input(runtime::DataType dtype, int64_t count, int rank, uint32_t seed);
// The inputs of ranks 0..n-1 reduced in rank order: the bits a transport that reduces in rank
// order must give (float16/bfloat16 sums and products accumulated in float and rounded once, as
// shared memory and posted inputs reduce them: AccumulatesInFloat).
std::vector<char> Expected(runtime::DataType dtype, runtime::ReduceOp op, int64_t count, int n,
                           uint32_t seed);
// The same, multiplied by `scale` as Communicator::AllreduceScaled multiplies: float16/bfloat16
// sums and products scaled in float before their one rounding (two inputs included), anything
// else reduced and then scaled by ScaleBuffer.
std::vector<char> Expected(runtime::DataType dtype, runtime::ReduceOp op, int64_t count, int n,
                           uint32_t seed, double scale);
// "float32 sum x1000", for messages.
std::string Case(runtime::DataType dtype, runtime::ReduceOp op, int64_t count);

}  // namespace hvd::test

#endif  // HVD_TEST_MULTIPROC_SEEDED_VALUES_H_
