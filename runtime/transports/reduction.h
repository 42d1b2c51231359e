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

// The most inputs one ReduceStep or AccumulateStep combines.
constexpr int kReduceFan = 4;

// One pass over m inputs (1 <= m <= kReduceFan): dst[i] = op(...op(v, in[1][i])..., in[m-1][i])
// with v = in[0][i] when `first`, else op(dst[i], in[0][i]) — the operations of Reduce and then
// ReduceInto of each further input, in that order (the same bits), in one pass over dst instead
// of m - 1: reducing N inputs takes N / 4 passes (float32, 3-16 inputs of 64 KiB-2 MiB on this
// VM: 1.2-2.2x faster than pairwise). dst may be in[0] or in[1] of a first pass, no other input.
// bool and the 16-bit floats run the pairwise kernels in turn. With a `scale` other than 1 (a
// last pass: Average's 1/n) each result is then multiplied as ScaleBuffer multiplies — in the
// same pass for float32 and float64 (the same bits), by ScaleBuffer after it for the others.
void ReduceStep(void* dst, const void* const* in, int m, int64_t count, DataType dtype, ReduceOp op,
                bool first, double scale = 1.0);

// How shared memory (and every member holding all N inputs) reduces float16 and bfloat16 Sum,
// Average and Product: each element accumulated in float over the N inputs in rank order and
// rounded once (ReduceWide), where combining pairs rounds every partial sum — a bfloat16 sum of
// 256 and fifteen 1s stays 256 pairwise (each 257 rounds back to even) and is 272 here, and
// 40000 + 40000 - 40000 in float16 overflows pairwise but not here. Min, Max and the other
// dtypes are exact either way and keep the pairwise kernels.
bool AccumulatesInFloat(DataType dtype, ReduceOp op);
// One pass of the float accumulator over m inputs (in[0..m), 0 <= m <= kReduceFan, at least one
// when `first`), element by element: v = first ? float(in[0][i]) : acc[i], then v = op(v,
// float(in[j][i])) for the others in order; v is stored to acc[i], or, when dst is not null,
// rounded to dst[i] (nearest even, as FloatToHalf/FloatToBFloat16). For a dtype and op that
// AccumulatesInFloat. dst may be one of the inputs.
void AccumulateStep(float* acc, void* dst, const void* const* in, int m, int64_t count,
                    DataType dtype, ReduceOp op, bool first);

// Elements per block of ReduceWide's accumulator (4 KiB of floats: stays in L1 with the inputs'
// blocks).
constexpr int64_t kWideBlock = 1024;

// buffer[i] *= factor as Horovod's ScaleBuffer computes it: integers in double, truncated
// toward zero; float64 in double; float32, float16 and bfloat16 in float with the factor
// rounded to float. A factor of exactly 1 is a no-op.
void ScaleBuffer(void* buffer, int64_t count, DataType dtype, double factor);

// dst = (in(0) op in(1) op ... op in(n-1)) * scale (n >= 1) for a dtype and op that
// AccumulatesInFloat: each block of kWideBlock elements accumulated in float over every input in
// order, up to kReduceFan inputs a pass, multiplied by float(scale) when it is not 1 (Average's
// 1/n, a postscale: in float, so a sum past the type's range whose mean is within it is not
// inf), then rounded into dst once. in(k) returns input k (a pointer to its first element); dst
// may be one of the inputs, since every input's block is read before dst's is written. Two
// inputs unscaled are rounded once either way: Reduce's bits, by Reduce.
template <typename In>
void ReduceWide(void* dst, int n, int64_t count, DataType dtype, ReduceOp op, In&& in,
                double scale = 1.0) {
  if (n == 2 && scale == 1.0) return Reduce(dst, in(0), in(1), count, dtype, op);
  float acc[kWideBlock];
  const void* block[kReduceFan];
  constexpr int64_t kElem = 2;
  char* d = static_cast<char*>(dst);
  const bool scales = scale != 1.0;
  for (int64_t at = 0; at < count; at += kWideBlock) {
    const int64_t len = count - at < kWideBlock ? count - at : kWideBlock;
    for (int k = 0; k < n;) {
      const int m = n - k < kReduceFan ? n - k : kReduceFan;
      for (int j = 0; j < m; ++j) {
        block[j] = static_cast<const char*>(static_cast<const void*>(in(k + j))) + at * kElem;
      }
      const bool last = k + m == n;
      AccumulateStep(acc, last && !scales ? d + at * kElem : nullptr, block, m, len, dtype, op,
                     k == 0);
      k += m;
    }
    if (scales) {
      ScaleBuffer(acc, len, DataType::kFloat32, scale);
      AccumulateStep(acc, d + at * kElem, nullptr, 0, len, dtype, op, false);  // rounds acc
    }
  }
}

// Adasum's two passes over a pair of vectors (runtime/core/execution/adasum.h): sums[0..3) += a.b,
// |a|^2, |b|^2 accumulated in double; then a[i] = a_coeff * a[i] + b_coeff * b[i] (the coefficients
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
