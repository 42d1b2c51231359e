// op=Adasum on the C API (docs/python.md "Adasum"): updates that add exactly or stay as they are
// whatever the combination order, in every floating-point dtype, fused by dtype and scaled; an
// integer tensor refused at enqueue.
#include <string>
#include <vector>

#include "scenarios.h"

namespace hvd_e2e {

void Adasum() {
  std::vector<Pending> pending;
  const int32_t n = N(), r = R();
  int k = 0;
  for (hvd_dtype_t id : {HVD_FLOAT16, HVD_BFLOAT16, HVD_FLOAT32, HVD_FLOAT64}) {
    const DType& d = DTypeOf(id);
    for (int64_t per : {int64_t{1}, int64_t{4097}}) {
      // Rank r's update is non-zero only in block r: the updates are orthogonal, so Adasum adds
      // them exactly (every coefficient is 1), whatever the tree. Enqueued together, the ops of
      // one dtype fuse (each tensor is still combined on its own).
      const int64_t count = per * n + 3;
      auto in = Make(id, {count});
      auto out = k % 2 ? in : Make(id, {count});
      for (int64_t i = 0; i < count; ++i) in->Set(i, i / per == r ? (i % 7) + 1.0 : 0.0);
      const std::string what = std::string("Adasum of orthogonal ") + d.name + " updates, " +
                               std::to_string(count) + " elements" + (in == out ? " in place" : "");
      hvd_op_options_t o = Options("adasum." + std::to_string(k++));
      o.reduce_op = HVD_OP_ADASUM;
      hvd_tensor_t a = in->Desc(), b = out->Desc();
      Pending p;
      Require(hvd_allreduce(&a, &b, &o, &p.handle), what);
      p.what = what;
      p.keep = {in, out};
      p.check = [=](hvd_handle_t) {
        std::vector<double> want(count);
        for (int64_t i = 0; i < count; ++i) want[i] = i / per < n ? (i % 7) + 1.0 : 0.0;
        ExpectValues(what, *out, want);
      };
      pending.push_back(std::move(p));
    }
    // Equal updates stay as they are (each coefficient is exactly 1/2): with a prescale of 2 and
    // a postscale of 1/4, half of them.
    auto same = Make(id, {37});
    for (int64_t i = 0; i < same->count(); ++i) same->Set(i, (i % 5) - 2.0);
    const std::string what = std::string("Adasum of equal ") + d.name + " updates, scaled";
    hvd_op_options_t o = Options("adasum.same." + std::to_string(k++));
    o.reduce_op = HVD_OP_ADASUM;
    o.prescale_factor = 2.0;
    o.postscale_factor = 0.25;
    hvd_tensor_t a = same->Desc();
    Pending p;
    Require(hvd_allreduce(&a, &a, &o, &p.handle), what);
    p.what = what;
    p.keep = {same};
    p.check = [=](hvd_handle_t) {
      std::vector<double> want(37);
      for (int64_t i = 0; i < 37; ++i) want[i] = 0.5 * ((i % 5) - 2.0);
      ExpectValues(what, *same, want);
    };
    pending.push_back(std::move(p));
  }
  FinishAll(&pending);
  // An integer tensor is refused at enqueue, naming it; nothing is left pending.
  auto ints = Make(HVD_INT32, {4});
  hvd_tensor_t t = ints->Desc();
  hvd_op_options_t o = Options("adasum.int32");
  o.reduce_op = HVD_OP_ADASUM;
  hvd_handle_t h = 0;
  const hvd_status_t st = hvd_allreduce(&t, &t, &o, &h);
  const std::string message = hvd_last_error();
  if (st != HVD_INVALID_ARGUMENT ||
      message.find("Adasum needs floating-point tensors") == std::string::npos ||
      message.find("not int32: 'adasum.int32'") == std::string::npos) {
    Fail("an int32 Adasum allreduce gave status " + std::to_string(st) + ": " + message);
  }
}

}  // namespace hvd_e2e
