#ifndef HVD_RUNTIME_TRANSPORTS_REDUCE_INPUTS_H_
#define HVD_RUNTIME_TRANSPORTS_REDUCE_INPUTS_H_

#include <algorithm>
#include <cstdint>

#include "common/status.h"
#include "runtime/transports/data_type.h"
#include "runtime/transports/reduction.h"

namespace hvd::runtime {

// How a member that holds all N inputs reduces them (shared memory's rank-order reduction,
// PostedInputs): dst = (in_0 op in_1 op ... op in_{n-1}) * scale (n >= 1) in rank order, every
// member the same bits; `scale` as ScaleBuffer multiplies (1: none), applied here so that the
// result needs no pass of its own after the collective. float16/bfloat16 sums and products are
// accumulated in float, scaled in float and rounded once (ReduceWide), once every input is at
// hand; everything else takes kReduceFan inputs a pass (ReduceStep), each pass as soon as its
// inputs are, the last one scaling (float32 and float64 in its pass). input(k, &p) makes input k
// available (waiting for it, or checking it, as its caller must) and sets p to its first element;
// its first error is returned. It is called in rank order, and again for the same k while the float
// path reads block by block. dst may be input 0 or 1; any later input must be elsewhere. One input
// is copied as it is (no trip through float) and then scaled.
template <typename Input>
Status ReduceHeldInputs(void* dst, int n, int64_t count, DataType dtype, ReduceOp op, Input&& input,
                        double scale = 1.0) {
  const void* in[kReduceFan];
  if (n > 1 && AccumulatesInFloat(dtype, op)) {
    for (int k = 0; k < n; ++k) HVD_RETURN_IF_ERROR(input(k, &in[0]));
    ReduceWide(
        dst, n, count, dtype, op,
        [&](int k) {
          (void)input(k, &in[0]);  // available: checked above
          return in[0];
        },
        scale);
    return Status::OK();
  }
  for (int k = 0; k < n;) {
    const int m = std::min(kReduceFan, n - k);
    for (int j = 0; j < m; ++j) HVD_RETURN_IF_ERROR(input(k + j, &in[j]));
    ReduceStep(dst, in, m, count, dtype, op, k == 0, k + m == n ? scale : 1.0);
    k += m;
  }
  return Status::OK();
}

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_REDUCE_INPUTS_H_
