#include "worker_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <sstream>

namespace hvd_e2e {
namespace {
std::string Num(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace

const DType& DTypeOf(hvd_dtype_t id) {
  const DType* d = hvd_worker::FindDType(id);
  if (d == nullptr) Die("unknown dtype " + std::to_string(id), HVD_INVALID_ARGUMENT);
  return *d;
}

Context& Ctx() {
  static Context context;
  return context;
}

void Fail(const std::string& what) {
  ++Ctx().failures;
  std::fprintf(stderr, "[%s] rank %d: %s\n", Ctx().scenario.c_str(), Ctx().rank, what.c_str());
}

void Die(const std::string& what, hvd_status_t status) {
  std::fprintf(stderr, "[%s] rank %d: FATAL %s: %s: %s\n", Ctx().scenario.c_str(), Ctx().rank,
               what.c_str(), hvd_status_name(status), hvd_last_error());
  std::fflush(stderr);
  std::exit(1);
}

void Require(hvd_status_t status, const std::string& what) {
  if (status != HVD_OK) Die(what, status);
}

void WaitOk(hvd_handle_t handle, const std::string& what) {
  hvd_status_t s = hvd_wait(handle, kWaitSeconds);
  if (s == HVD_IN_PROGRESS) Die(what + ": not complete after " + Num(kWaitSeconds) + " s", s);
  Require(s, what);
}

void WaitRelease(hvd_handle_t handle, const std::string& what) {
  WaitOk(handle, what);
  Require(hvd_release(handle), what + ": hvd_release");
}

std::string WaitFailure(hvd_handle_t handle, hvd_status_t want, const std::string& what) {
  hvd_status_t s = hvd_wait(handle, kWaitSeconds);
  if (s == HVD_IN_PROGRESS) Die(what + ": not complete after " + Num(kWaitSeconds) + " s", s);
  std::string message = s == HVD_OK ? "" : hvd_last_error();
  if (s != want) {
    Fail(what + ": expected status " + hvd_status_name(want) + ", got " + hvd_status_name(s) +
         " (" + message + ")");
  }
  Require(hvd_release(handle), what + ": hvd_release");
  return message;
}

std::string Shape(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

Tensor::Tensor(hvd_dtype_t dtype, std::vector<int64_t> shape)
    : dtype_(dtype), shape_(std::move(shape)) {
  bytes_.assign(static_cast<size_t>(count()) * DTypeOf(dtype).size + 1, 0);
}

int64_t Tensor::count() const {
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;
  return n;
}

void Tensor::Set(int64_t i, double v) {
  hvd_worker::SetElement(bytes_.data() + i * DTypeOf(dtype_).size, dtype_, v);
}

double Tensor::Get(int64_t i) const {
  return hvd_worker::GetElement(bytes_.data() + i * DTypeOf(dtype_).size, dtype_);
}

void Tensor::Fill(double v) {
  for (int64_t i = 0; i < count(); ++i) Set(i, v);
}

hvd_tensor_t Tensor::Desc() {
  hvd_tensor_t t;
  std::memset(&t, 0, sizeof(t));
  t.data = bytes_.data();
  t.dtype = dtype_;
  t.ndim = static_cast<int32_t>(shape_.size());
  for (size_t d = 0; d < shape_.size(); ++d) t.shape[d] = shape_[d];
  t.device = HVD_DEVICE_CPU;
  return t;
}

void ExpectValues(const std::string& what, const Tensor& got, const std::vector<double>& want) {
  if (static_cast<int64_t>(want.size()) != got.count()) {
    Fail(what + ": expected " + std::to_string(want.size()) + " elements, got " +
         std::to_string(got.count()));
    return;
  }
  const DType& d = DTypeOf(got.dtype());
  double tolerance = 0;
  if (d.id == HVD_FLOAT16) tolerance = 2e-3;
  if (d.id == HVD_BFLOAT16) tolerance = 1.6e-2;
  if (d.id == HVD_FLOAT32) tolerance = 1e-6;
  if (d.id == HVD_FLOAT64) tolerance = 1e-12;
  int reported = 0, wrong = 0;
  for (int64_t i = 0; i < got.count(); ++i) {
    const double g = got.Get(i), w = d.id == HVD_BOOL ? (want[i] != 0) : want[i];
    if (std::fabs(g - w) <= tolerance * std::max(1.0, std::fabs(w))) continue;
    ++wrong;
    if (reported++ < 4) {
      Fail(what + " (" + d.name + " " + Shape(got.shape()) + "): element " + std::to_string(i) +
           ": expected " + Num(w) + ", got " + Num(g));
    }
  }
  if (wrong > reported) {
    Fail(what + ": ... " + std::to_string(wrong) + " wrong elements in total");
  }
}

void ExpectOutput(hvd_handle_t handle, int32_t index, const std::string& what, hvd_dtype_t dtype,
                  const std::vector<int64_t>& shape, const std::vector<double>& want) {
  hvd_tensor_t out;
  Require(hvd_output(handle, index, &out), what + ": hvd_output " + std::to_string(index));
  std::vector<int64_t> got_shape(out.shape, out.shape + out.ndim);
  if (out.dtype != dtype || got_shape != shape) {
    Fail(what + ": output " + std::to_string(index) + ": expected " + DTypeOf(dtype).name + " " +
         Shape(shape) + ", got " + DTypeOf(out.dtype).name + " " + Shape(got_shape));
  } else {
    Tensor copy(dtype, shape);
    std::memcpy(copy.Desc().data, out.data, copy.count() * DTypeOf(dtype).size);
    ExpectValues(what, copy, want);
  }
  hvd_free(out.data);
}

hvd_op_options_t Options(const std::string& name) {
  static std::deque<std::string> names;
  names.push_back(name);
  hvd_op_options_t o;
  hvd_op_options_init(&o);
  o.name = names.back().c_str();
  return o;
}

std::vector<std::string> GatherStrings(const std::string& mine, const std::string& name) {
  // Each rank's string ends with '\n' so the gathered bytes split back into rank order.
  const std::string line = mine + "\n";
  Tensor t(HVD_UINT8, {static_cast<int64_t>(line.size())});
  for (size_t i = 0; i < line.size(); ++i) {
    t.Set(static_cast<int64_t>(i), static_cast<unsigned char>(line[i]));
  }
  hvd_tensor_t desc = t.Desc();
  hvd_op_options_t o = Options(name);
  hvd_handle_t h;
  Require(hvd_allgather(&desc, &o, &h), name + ": hvd_allgather");
  WaitOk(h, name);
  hvd_tensor_t out;
  Require(hvd_output(h, 0, &out), name + ": hvd_output");
  const std::string all(static_cast<const char*>(out.data), static_cast<size_t>(out.shape[0]));
  hvd_free(out.data);
  Require(hvd_release(h), name + ": hvd_release");
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i] != '\n') continue;
    parts.push_back(all.substr(start, i - start));
    start = i + 1;
  }
  return parts;
}

}  // namespace hvd_e2e
