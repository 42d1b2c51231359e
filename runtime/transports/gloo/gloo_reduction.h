#ifndef HVD_RUNTIME_TRANSPORTS_GLOO_GLOO_REDUCTION_H_
#define HVD_RUNTIME_TRANSPORTS_GLOO_GLOO_REDUCTION_H_

#include <gloo/algorithm.h>

#include <cstddef>
#include <cstdint>

#include "runtime/transports/data_type.h"

// Reduction kernels in the shape gloo's legacy algorithm classes take
// (gloo::ReductionFunction<S>, S = an unsigned storage type of the element's width), so one
// instantiation of an algorithm per width serves every dtype. The op is a template parameter,
// so each kernel is a branch-free loop the compiler vectorizes. float16/bfloat16 compute in
// float; bool is logical (Sum/Max = or, Min/Product = and). Pure functions, thread-safe.
namespace hvd::runtime {

// The unsigned integer type of each element width.
template <size_t kWidth>
struct GlooStorage;
template <>
struct GlooStorage<1> {
  using type = uint8_t;
};
template <>
struct GlooStorage<2> {
  using type = uint16_t;
};
template <>
struct GlooStorage<4> {
  using type = uint32_t;
};
template <>
struct GlooStorage<8> {
  using type = uint64_t;
};

// The reduction for (dtype, op) over storage S; nullptr when sizeof(S) is not the dtype's
// width or op is not elementwise (Adasum). kAverage reduces as kSum (callers post-scale).
// The returned objects are static: pointer identity is stable for the process's lifetime.
template <typename S>
const gloo::ReductionFunction<S>* GlooReductionFor(DataType dtype, ReduceOp op);

// Bitwise AND / OR over 64-bit words (the coordinator's response-cache bit vectors).
const gloo::ReductionFunction<uint64_t>* GlooBitwiseAnd();
const gloo::ReductionFunction<uint64_t>* GlooBitwiseOr();

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_GLOO_GLOO_REDUCTION_H_
