#ifndef HVD_RUNTIME_TRANSPORTS_REDUCTION_H_
#define HVD_RUNTIME_TRANSPORTS_REDUCTION_H_

#include <cstdint>

#include "runtime/transports/data_type.h"

// Elementwise kernels on host memory shared by the ops, the single-rank communicator and test
// fakes. float16/bfloat16 are computed in float. Pure functions, thread-safe.
namespace hvd::runtime {

// dst[i] = op(dst[i], src[i]) for `count` elements. kAverage reduces as kSum (the caller
// post-scales); kAdasum is not an elementwise op and must not reach here. For bool, Sum/Max
// are logical or, Product/Min logical and.
void ReduceInto(void* dst, const void* src, int64_t count, DataType dtype, ReduceOp op);
// dst[i] = op(a[i], b[i]): the same, with the first operand elsewhere (saves a copy when the
// result goes to a third buffer). dst may be a or b, but must not partly overlap either.
void Reduce(void* dst, const void* a, const void* b, int64_t count, DataType dtype, ReduceOp op);

// buffer[i] *= factor as Horovod's ScaleBuffer computes it: integers in double, truncated
// toward zero; float64 in double; float32, float16 and bfloat16 in float with the factor
// rounded to float. A factor of exactly 1 is a no-op.
void ScaleBuffer(void* buffer, int64_t count, DataType dtype, double factor);

// Adasum's two passes over a pair of vectors (runtime/core/adasum.h): sums[0..3) += a.b, |a|^2,
// |b|^2 accumulated in double; then a[i] = a_coeff * a[i] + b_coeff * b[i] (the coefficients
// rounded to T). Vectorised like the reductions.
void AdasumSums(const float* a, const float* b, int64_t count, double* sums);
void AdasumSums(const double* a, const double* b, int64_t count, double* sums);
void AdasumScaleAdd(float* a, const float* b, int64_t count, double a_coeff, double b_coeff);
void AdasumScaleAdd(double* a, const double* b, int64_t count, double a_coeff, double b_coeff);

float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);
float BFloat16ToFloat(uint16_t b);
uint16_t FloatToBFloat16(float f);

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_REDUCTION_H_
