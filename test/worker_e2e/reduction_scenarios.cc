// Reductions' edge cases across ranks: whatever a backend does with a NaN in Min/Max, every
// rank must get the same result.
#include <cmath>
#include <string>
#include <vector>

#include "scenarios.h"

namespace hvd_e2e {

void NanMinMax() {
  // Min and Max of floats where one rank holds a NaN: whatever the result (the backends differ
  // on NaN), every rank must get the same one. Gloo's ring at 2 ranks (below 512 KiB) reduced
  // own-then-peer with std::min/std::max, which return their first operand when one is NaN:
  // rank 0 got NaN, rank 1 got 1.0 (until 2026-12-01). Even elements: a NaN on one rank; odd
  // ones: none, so min is 1 and max is N.
  int k = 0;
  for (hvd_dtype_t id : {HVD_FLOAT16, HVD_BFLOAT16, HVD_FLOAT32, HVD_FLOAT64}) {
    const DType& d = DTypeOf(id);
    for (hvd_reduce_op_t op : {HVD_OP_MIN, HVD_OP_MAX}) {
      for (int64_t count : {int64_t{6}, int64_t{200000}}) {
        auto in = Make(d.id, {count}), out = Make(d.id, {count});
        for (int64_t i = 0; i < count; ++i) {
          const bool nan_here = i % 2 == 0 && R() == (i / 2) % N();
          in->Set(i, nan_here ? std::nan("") : R() + 1.0);
        }
        const std::string what = std::string("allreduce ") + ReduceOpName(op) + " " + d.name +
                                 " [" + std::to_string(count) + "] with NaNs";
        hvd_op_options_t o = Options("nan." + std::to_string(k++));
        o.reduce_op = op;
        hvd_tensor_t a = in->Desc(), b = out->Desc();
        hvd_handle_t handle;
        Require(hvd_allreduce(&a, &b, &o, &handle), what);
        WaitRelease(handle, what);
        std::string mine;
        for (int64_t i = 0; i < count; ++i) {
          const double v = out->Get(i);
          if (i % 2 == 1 && v != (op == HVD_OP_MIN ? 1.0 : N())) {
            Fail(what + ": element " + std::to_string(i) + " is " + std::to_string(v));
            break;
          }
          mine += std::isnan(v) ? "n," : std::to_string(v) + ",";
        }
        std::vector<std::string> all = GatherStrings(mine, "nan.check." + std::to_string(k));
        for (int32_t r = 0; r < N(); ++r) {
          if (all[r] != mine) {
            Fail(what + ": rank " + std::to_string(r) + " got another result than this rank");
            break;
          }
        }
      }
    }
  }
}

}  // namespace hvd_e2e
