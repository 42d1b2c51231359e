// Shared pieces of the scenarios: the reduction inputs and their expected results, and the
// enqueue-everything-then-wait driver.
#include <algorithm>
#include <cmath>

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

const char* ReduceOpName(hvd_reduce_op_t op) {
  switch (op) {
    case HVD_OP_AVERAGE:
      return "Average";
    case HVD_OP_SUM:
      return "Sum";
    case HVD_OP_ADASUM:
      return "Adasum";
    case HVD_OP_MIN:
      return "Min";
    case HVD_OP_MAX:
      return "Max";
    case HVD_OP_PRODUCT:
      return "Product";
  }
  return "?";
}

double ReduceInput(hvd_reduce_op_t op, const DType& d, int32_t pos, int32_t n, int64_t i) {
  // Bit pos % 4 of i + pos / 4: members 4 apart differ, and "all" holds for some i at any n.
  if (d.id == HVD_BOOL) return static_cast<double>(((i + pos / 4) >> (pos % 4)) & 1);
  const double sign = d.is_signed && (i % 2) ? -1.0 : 1.0;
  if (op == HVD_OP_PRODUCT) {
    // Four members (rotating with i) give 1..3, the others 1: |product| <= 81 for any n.
    const bool counts = ((pos - i) % n + n) % n < 4;
    return sign * (counts ? static_cast<double>((pos + i) % 3 + 1) : 1.0);
  }
  // Pairs of members (2k, 2k + 1) get +m and -m, m = 1 + k % 3; an odd n's last member 0.
  const int32_t k = pos / 2;
  const double m = pos == n - 1 && n % 2 ? 0.0 : 1.0 + k % 3;
  const double base = static_cast<double>(3 + i % 5), delta = pos % 2 ? -m : m;
  return sign * (base + delta);
}

bool ReduceFits(hvd_reduce_op_t op, const DType& d, int32_t n, double prescale, double postscale) {
  if (d.is_float || d.id == HVD_BOOL) return true;
  const double max = std::ldexp(1.0, static_cast<int>(8 * d.size) - (d.is_signed ? 1 : 0)) - 1;
  for (int64_t i = 0; i < 15; ++i) {  // every base and sign
    double total = 0;
    for (int32_t p = 0; p < n; ++p) total += ReduceInput(op, d, p, n, i) * prescale;
    const double result = ReduceExpected(op, d, n, i, prescale, postscale);
    if (std::fabs(total) > max || std::fabs(result) > max || (result < 0 && !d.is_signed)) {
      return false;
    }
  }
  return true;
}

double ReduceExpected(hvd_reduce_op_t op, const DType& d, int32_t n, int64_t i, double prescale,
                      double postscale) {
  if (d.id == HVD_BOOL) {  // Sum/Max: any; Min/Product: all (scales do not apply)
    const bool all = op == HVD_OP_MIN || op == HVD_OP_PRODUCT;
    bool acc = all;
    for (int32_t p = 0; p < n; ++p) {
      const bool x = ReduceInput(op, d, p, n, i) != 0;
      acc = all ? (acc && x) : (acc || x);
    }
    return acc ? 1 : 0;
  }
  double acc = 0;
  for (int32_t p = 0; p < n; ++p) {
    const double x = ReduceInput(op, d, p, n, i) * prescale;
    if (p == 0) {
      acc = x;
    } else if (op == HVD_OP_MIN) {
      acc = std::min(acc, x);
    } else if (op == HVD_OP_MAX) {
      acc = std::max(acc, x);
    } else if (op == HVD_OP_PRODUCT) {
      acc *= x;
    } else {
      acc += x;
    }
  }
  if (op == HVD_OP_AVERAGE) acc /= n;
  return acc * postscale;
}

std::string List(const std::vector<int32_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
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
