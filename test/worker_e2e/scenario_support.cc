// Shared pieces of the scenarios: the enqueue-everything-then-wait driver and small checks (the
// reduction inputs and their expected results are worker_values.cc's).
#include "scenarios.h"

namespace hvd_e2e {

void FinishAll(std::vector<Pending>* pending) {
  for (Pending& p : *pending) {
    WaitOk(p.handle, p.what);
    if (p.check) p.check(p.handle);
    Require(hvd_release(p.handle), p.what + ": hvd_release");
  }
  pending->clear();
}

void ExpectStatus(hvd_status_t got, hvd_status_t want, const std::string& what) {
  if (got != want) {
    Fail(what + ": expected " + hvd_status_name(want) + ", got " + hvd_status_name(got) +
         (got == HVD_OK ? "" : std::string(" (") + hvd_last_error() + ")"));
  }
}

void SumAllreduce(const std::string& name, double mine, double want, int32_t set) {
  Tensor t(HVD_FLOAT32, {4});
  t.Fill(mine);
  hvd_tensor_t d = t.Desc();
  hvd_op_options_t o = Options(name);
  o.process_set_id = set;
  hvd_handle_t h;
  Require(hvd_allreduce(&d, &d, &o, &h), "allreduce " + name);
  WaitRelease(h, "allreduce " + name);
  ExpectValues("allreduce " + name, t, std::vector<double>(4, want));
}

void GlobalBarrier(const std::string& what) {
  hvd_handle_t h = 0;
  Require(hvd_barrier(0, &h), what);
  WaitRelease(h, what);
}

}  // namespace hvd_e2e
