// The collectives on CUDA tensors, every value compared with one computed on the host. Each
// scenario enqueues all of its ops before waiting for the first, so the runtime negotiates
// many tensors at once and fuses them through its device buffer where it may.
#include <algorithm>
#include <cstdio>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gpu_worker.h"

namespace hvd_gpu {
namespace {

// Rows of dim 0 that rank r gets when `dim0` rows are scattered: the first dim0 % n one more.
int64_t ScatterRows(int64_t dim0, int32_t r) { return dim0 / N() + (r < dim0 % N() ? 1 : 0); }

// A value below 127 (exact and in range in every dtype, int8 included, at up to 16 ranks).
double Small(int64_t v) { return static_cast<double>(v % 127); }

// Element counts of the allreduces: empty, one, odd, and Horovod's 17 x 17 x 17, whose last
// element NCCL 2.28.9's one-rank scaling kernel left unwritten (docs/gpu.md "Scale factors").
const std::vector<std::vector<int64_t>>& AllreduceShapes() {
  static const std::vector<std::vector<int64_t>> shapes = {{0}, {1}, {7}, {17, 17, 17}};
  return shapes;
}

// ---- allreduce ------------------------------------------------------------------------------

// What an op reduces and must give: element i of this rank's input, element i (its index in the
// whole tensor) of the result, and whether results are compared bit for bit.
struct Values {
  std::function<double(int64_t)> input;
  std::function<double(int64_t)> expected;
  bool exact = true;
};

std::string Scales(double pre, double post) {
  char scales[64] = "";
  if (pre != 1.0 || post != 1.0) {
    std::snprintf(scales, sizeof(scales), " prescale %g postscale %g", pre, post);
  }
  return scales;
}

// One allreduce of `values.input` named `name` on `set`, checked against `values.expected`; out
// of place, the input must come back unchanged. `what` names it in messages.
void EnqueueAllreduceOf(std::vector<Pending>* pending, const DType& d, hvd_reduce_op_t op,
                        double pre, double post, const std::vector<int64_t>& shape, bool in_place,
                        const std::string& name, const std::string& what, int32_t set,
                        const Values& values) {
  const HostTensor host = MakeHost(d.id, shape, values.input);
  auto in = std::make_shared<DeviceTensor>(d.id, shape);
  in->Upload(host);
  DevicePtr out = in_place ? in : std::make_shared<DeviceTensor>(d.id, shape);
  hvd_op_options_t o = Options(name);
  o.reduce_op = op;
  o.prescale_factor = pre;
  o.postscale_factor = post;
  o.process_set_id = set;
  hvd_tensor_t a = in->Desc(), b = out->Desc();
  Pending p;
  Require(hvd_allreduce(&a, &b, &o, &p.handle), what);
  p.what = what;
  p.keep = {in, out};
  p.check = [=](hvd_handle_t) {
    std::vector<double> want(out->count());
    for (int64_t i = 0; i < out->count(); ++i) want[i] = values.expected(i);
    ExpectDevice(what, *out, want, values.exact);
    if (!in_place) {
      std::vector<double> unchanged(host.count());
      for (int64_t i = 0; i < host.count(); ++i) unchanged[i] = host.Get(i);
      ExpectDevice(what + ": input afterwards", *in, unchanged);
    }
  };
  pending->push_back(std::move(p));
}

// One allreduce of this rank's ReduceInput (at `pos` of `n` members of `set`), checked against
// ReduceExpected; out of place, the input must come back unchanged. `label` starts its messages.
void EnqueueAllreduce(std::vector<Pending>* pending, const DType& d, hvd_reduce_op_t op, double pre,
                      double post, const std::vector<int64_t>& shape, bool in_place,
                      const std::string& name, const std::string& label = "", int32_t set = 0,
                      int32_t pos = R(), int32_t n = N()) {
  const std::string what = label + "allreduce " + ReduceOpName(op) + " " + d.name + " " +
                           Shape(shape) + Scales(pre, post) +
                           (in_place ? " in place" : " out of place");
  EnqueueAllreduceOf(
      pending, d, op, pre, post, shape, in_place, name, what, set,
      {[d, op, pos, n](int64_t i) { return ReduceInput(op, d, pos, n, i); },
       [d, op, n, pre, post](int64_t i) { return ReduceExpected(op, d, n, i, pre, post); },
       ReductionExact(d, op, pre, post, n)});
}

// Every op unscaled, then the scaled ones (`scales`, pairs of pre- and postscale), for each
// shape, alternately in place and out of place (the scaled ones both ways).
void EnqueueAllreduces(std::vector<Pending>* pending, const DType& d,
                       const std::vector<std::pair<double, double>>& scales, int* k) {
  for (const auto& shape : AllreduceShapes()) {
    for (hvd_reduce_op_t op :
         {HVD_OP_SUM, HVD_OP_MIN, HVD_OP_MAX, HVD_OP_PRODUCT, HVD_OP_AVERAGE}) {
      if (d.id == HVD_BOOL && op == HVD_OP_AVERAGE) continue;  // no mean of booleans
      if (!ReduceFits(op, d, N(), 1.0, 1.0)) continue;
      EnqueueAllreduce(pending, d, op, 1.0, 1.0, shape, *k % 2 == 0,
                       "gpu.ar." + std::to_string(*k));
      ++*k;
    }
    for (const auto& [pre, post] : scales) {
      for (hvd_reduce_op_t op : {HVD_OP_SUM, HVD_OP_AVERAGE}) {
        if (!ReduceFits(op, d, N(), pre, post)) continue;
        for (bool in_place : {true, false}) {
          EnqueueAllreduce(pending, d, op, pre, post, shape, in_place,
                           "gpu.ar." + std::to_string(*k));
          ++*k;
        }
      }
    }
  }
}

// ---- allgather ------------------------------------------------------------------------------

double GatherValue(const DType& d, int32_t r, int64_t row, int64_t col) {
  const double v = Small(r * 16 + row * 4 + col);
  return d.is_signed && col == 1 ? -v : v;
}

// Rank r contributes rows(r) rows of `cols` columns; the output must be their concatenation.
void EnqueueAllgather(std::vector<Pending>* pending, const DType& d,
                      const std::function<int64_t(int32_t)>& rows, int64_t cols,
                      const std::string& tag, int32_t set = 0,
                      const std::vector<int32_t>& members = {}) {
  std::vector<int32_t> ranks = members;
  if (ranks.empty()) {
    for (int32_t r = 0; r < N(); ++r) ranks.push_back(r);
  }
  DevicePtr in = MakeDevice(d.id, {rows(R()), cols},
                            [&](int64_t e) { return GatherValue(d, R(), e / cols, e % cols); });
  std::vector<double> want;
  int64_t total = 0;
  for (int32_t r : ranks) {
    for (int64_t j = 0; j < rows(r); ++j) {
      for (int64_t c = 0; c < cols; ++c) want.push_back(GatherValue(d, r, j, c));
    }
    total += rows(r);
  }
  const std::string what = "allgather " + tag + " " + d.name + " [" + std::to_string(rows(R())) +
                           ", " + std::to_string(cols) + "]";
  hvd_op_options_t o = Options("gpu.ag." + tag + "." + d.name);
  o.process_set_id = set;
  hvd_tensor_t a = in->Desc();
  Pending p;
  Require(hvd_allgather(&a, &o, &p.handle), what);
  p.what = what;
  p.keep = {in};
  const bool on_device = DeviceOutputsExpected("ALLGATHER");
  p.check = [=](hvd_handle_t h) {
    int32_t outputs = -1;
    Require(hvd_num_outputs(h, &outputs), what + ": hvd_num_outputs");
    if (outputs != 1) Fail(what + ": expected 1 output, got " + std::to_string(outputs));
    ExpectOutput(h, 0, what, d.id, {total, cols}, want, on_device);
  };
  pending->push_back(std::move(p));
}

// ---- broadcast ------------------------------------------------------------------------------

double BroadcastValue(const DType& d, int32_t root, int64_t k) {
  const double v = Small(root * 8 + k);
  return d.is_signed && k % 2 ? -v : v;
}

// From `root` to all; the non-roots' tensors hold the sentinel until the broadcast writes them.
void EnqueueBroadcast(std::vector<Pending>* pending, const DType& d, int32_t root,
                      const std::vector<int64_t>& shape, bool in_place) {
  DevicePtr in = std::make_shared<DeviceTensor>(d.id, shape);
  if (R() == root) {
    in->Upload(MakeHost(d.id, shape, [&](int64_t k) { return BroadcastValue(d, root, k); }));
  }
  DevicePtr out = in_place ? in : std::make_shared<DeviceTensor>(d.id, shape);
  const std::string what = "broadcast from root " + std::to_string(root) + " " + d.name + " " +
                           Shape(shape) + (in_place ? " in place" : " out of place");
  hvd_op_options_t o = Options("gpu.bc." + std::to_string(root) + "." + d.name + "." +
                               std::to_string(in->count()) + (in_place ? "" : ".oop"));
  o.root_rank = root;
  hvd_tensor_t a = in->Desc(), b = out->Desc();
  Pending p;
  Require(hvd_broadcast(&a, &b, &o, &p.handle), what);
  p.what = what;
  p.keep = {in, out};
  p.check = [=](hvd_handle_t) {
    std::vector<double> want;
    for (int64_t k = 0; k < out->count(); ++k) want.push_back(BroadcastValue(d, root, k));
    ExpectDevice(what, *out, want);
  };
  pending->push_back(std::move(p));
}

// ---- alltoall -------------------------------------------------------------------------------

// Row `row` (column col) of the block that rank src sends to rank dst.
double AlltoallValue(const DType& d, int32_t src, int32_t dst, int64_t row, int64_t col) {
  const double v = Small(src * 16 + dst * 4 + row * 2 + col);
  return d.is_signed && (row + col) % 2 ? -v : v;
}

// With splits, rank r sends (k + 2r) % 3 rows of 2 columns to rank k (zero rows included; not
// symmetric, so what a rank receives from k differs from what it sends to k); without, 2 rows
// to each rank (dim 0 divided equally).
void EnqueueAlltoall(std::vector<Pending>* pending, const DType& d, bool with_splits) {
  const int32_t n = N(), me = R();
  constexpr int64_t kCols = 2;
  const auto rows_to = [with_splits](int32_t src, int32_t dst) -> int64_t {
    return with_splits ? (dst + 2 * src) % 3 : 2;
  };
  int64_t in_rows = 0, out_rows = 0;
  for (int32_t j = 0; j < n; ++j) {
    in_rows += rows_to(me, j);
    out_rows += rows_to(j, me);
  }
  HostTensor host(d.id, {in_rows, kCols});
  int64_t e = 0;
  for (int32_t j = 0; j < n; ++j) {
    for (int64_t k = 0; k < rows_to(me, j); ++k) {
      for (int64_t c = 0; c < kCols; ++c) host.Set(e++, AlltoallValue(d, me, j, k, c));
    }
  }
  auto in = std::make_shared<DeviceTensor>(d.id, host.shape());
  in->Upload(host);
  std::vector<double> want;
  std::vector<int32_t> want_splits;
  for (int32_t s = 0; s < n; ++s) {
    want_splits.push_back(static_cast<int32_t>(rows_to(s, me)));
    for (int64_t k = 0; k < rows_to(s, me); ++k) {
      for (int64_t c = 0; c < kCols; ++c) want.push_back(AlltoallValue(d, s, me, k, c));
    }
  }
  // The options keep a pointer to the splits until the call returns; a static deque keeps
  // them for the process's life, as Options does for names.
  static std::deque<std::vector<int32_t>> splits;
  splits.emplace_back();
  for (int32_t j = 0; j < n; ++j) splits.back().push_back(static_cast<int32_t>(rows_to(me, j)));
  const std::string what = std::string("alltoall ") +
                           (with_splits ? "splits " + List(splits.back()) : "equal") + " " + d.name;
  hvd_op_options_t o = Options(std::string("gpu.a2a.") + (with_splits ? "s." : "e.") + d.name);
  if (with_splits) {
    o.splits = splits.back().data();
    o.num_splits = n;
  }
  hvd_tensor_t a = in->Desc();
  Pending p;
  Require(hvd_alltoall(&a, &o, &p.handle), what);
  p.what = what;
  p.keep = {in};
  const bool on_device = DeviceOutputsExpected("ALLTOALL");
  p.check = [=](hvd_handle_t h) {
    ExpectOutput(h, 0, what, d.id, {out_rows, kCols}, want, on_device);
    // The received splits are host int32s copied into the caller's array (c_api.h).
    std::vector<int32_t> got(n + 1, -1);
    int32_t count = -1;
    Require(hvd_received_splits(h, got.data(), n + 1, &count), what + ": hvd_received_splits");
    got.resize(std::max(count, 0));
    if (got != want_splits) {
      Fail(what + ": received splits: expected " + List(want_splits) + ", got " + List(got) +
           " (count " + std::to_string(count) + ")");
    }
    std::vector<int32_t> small(n, -1);
    if (hvd_received_splits(h, small.data(), n - 1, &count) != HVD_INVALID_ARGUMENT) {
      Fail(what + ": hvd_received_splits with capacity " + std::to_string(n - 1) + " for " +
           std::to_string(n) + " members was not refused");
    }
  };
  pending->push_back(std::move(p));
}

// ---- reducescatter --------------------------------------------------------------------------

// A reducescatter of `values.input` named `name`: this rank gets its rows (hvd's split, the first
// dim0 % size ranks a row more), checked against `values.expected` of their indices in the whole
// tensor; device memory where NCCL runs it.
void EnqueueReducescatterOf(std::vector<Pending>* pending, const DType& d, hvd_reduce_op_t op,
                            const std::vector<int64_t>& shape, double pre, double post,
                            const std::string& name, const std::string& what,
                            const Values& values) {
  DevicePtr in = MakeDevice(d.id, shape, values.input);
  const int64_t row = shape[0] == 0 ? 0 : in->count() / shape[0];
  int64_t first = 0;
  for (int32_t r = 0; r < R(); ++r) first += ScatterRows(shape[0], r);
  std::vector<double> want;
  for (int64_t i = first * row; i < (first + ScatterRows(shape[0], R())) * row; ++i) {
    want.push_back(values.expected(i));
  }
  std::vector<int64_t> out_shape = shape;
  out_shape[0] = ScatterRows(shape[0], R());
  hvd_op_options_t o = Options(name);
  o.reduce_op = op;
  o.prescale_factor = pre;
  o.postscale_factor = post;
  hvd_tensor_t a = in->Desc();
  Pending p;
  Require(hvd_reducescatter(&a, &o, &p.handle), what);
  p.what = what;
  p.keep = {in};
  const bool on_device =
      DeviceOutputsExpected("REDUCESCATTER") && NcclReduces(d, op, pre, post, N());
  const bool exact = values.exact;
  p.check = [=](hvd_handle_t h) {
    ExpectOutput(h, 0, what, d.id, out_shape, want, on_device, exact);
  };
  pending->push_back(std::move(p));
}

void EnqueueReducescatter(std::vector<Pending>* pending, const DType& d, hvd_reduce_op_t op,
                          const std::vector<int64_t>& shape, double pre, double post,
                          const std::string& tag) {
  const std::string what = std::string("reducescatter ") + ReduceOpName(op) + " " + tag + " " +
                           d.name + " " + Shape(shape) + Scales(pre, post);
  const std::string name = "gpu.rs." + tag + "." + ReduceOpName(op) + "." + d.name +
                           (pre != 1.0 || post != 1.0 ? ".scaled" : "");
  EnqueueReducescatterOf(
      pending, d, op, shape, pre, post, name, what,
      {[d, op](int64_t i) { return ReduceInput(op, d, R(), N(), i); },
       [d, op, pre, post](int64_t i) { return ReduceExpected(op, d, N(), i, pre, post); },
       ReductionExact(d, op, pre, post, N())});
}

}  // namespace

void Allreduce() {
  std::vector<Pending> pending;
  int k = 0;
  for (hvd_dtype_t id : {HVD_FLOAT32, HVD_FLOAT64, HVD_FLOAT16, HVD_BFLOAT16, HVD_INT32, HVD_INT64,
                         HVD_UINT8, HVD_INT8}) {
    const DType& d = DTypeOf(id);
    EnqueueAllreduces(&pending, d,
                      d.is_float ? std::vector<std::pair<double, double>>{{0.5, 4.0}}
                                 : std::vector<std::pair<double, double>>{},
                      &k);
  }
  FinishAll(&pending);
}

void AllreduceStagedTypes() {
  // int16, uint16 and bool have no NCCL type, and NCCL has no scaled integer sum: the runtime
  // stages these through host memory, still device memory in and out for the caller.
  std::vector<Pending> pending;
  int k = 0;
  for (hvd_dtype_t id : {HVD_INT16, HVD_UINT16, HVD_BOOL}) {
    const DType& d = DTypeOf(id);
    EnqueueAllreduces(&pending, d,
                      d.id == HVD_BOOL ? std::vector<std::pair<double, double>>{}
                                       : std::vector<std::pair<double, double>>{{2.0, 2.0}},
                      &k);
  }
  const DType& i32 = DTypeOf(HVD_INT32);
  for (hvd_reduce_op_t op : {HVD_OP_SUM, HVD_OP_AVERAGE}) {
    if (!ReduceFits(op, i32, N(), 2.0, 2.0)) continue;
    EnqueueAllreduce(&pending, i32, op, 2.0, 2.0, {17, 17, 17}, k % 2 == 0,
                     "gpu.ar.staged." + std::to_string(k));
    ++k;
  }
  FinishAll(&pending);
}

void Fused() {
  // Six allreduces of four dtypes and different sizes enqueued before the first wait (the
  // float32 ones fuse through the device buffer), twice: the second round is served from the
  // response cache.
  struct Op {
    hvd_dtype_t dtype;
    std::vector<int64_t> shape;
    hvd_reduce_op_t op;
  };
  const std::vector<Op> ops = {
      {HVD_FLOAT32, {5}, HVD_OP_SUM},    {HVD_FLOAT32, {3, 4}, HVD_OP_AVERAGE},
      {HVD_FLOAT32, {1000}, HVD_OP_SUM}, {HVD_INT32, {7}, HVD_OP_SUM},
      {HVD_FLOAT16, {9}, HVD_OP_SUM},    {HVD_FLOAT64, {2, 2, 2}, HVD_OP_MAX},
  };
  for (int round = 0; round < 2; ++round) {
    std::vector<Pending> pending;
    for (size_t t = 0; t < ops.size(); ++t) {
      EnqueueAllreduce(&pending, DTypeOf(ops[t].dtype), ops[t].op, 1.0, 1.0, ops[t].shape,
                       t % 2 == 0, "gpu.fused." + std::to_string(t),
                       "fused #" + std::to_string(t) + " round " + std::to_string(round) + ": ");
    }
    FinishAll(&pending);
  }
}

void Grouped() {
  std::vector<Pending> pending;
  // Grouped allreduce of four float32 members, Sum, out of place.
  {
    const DType& f32 = DTypeOf(HVD_FLOAT32);
    const std::vector<std::vector<int64_t>> shapes = {{4}, {2, 3}, {7}, {17, 17, 17}};
    std::vector<DevicePtr> ins, outs;
    std::vector<hvd_tensor_t> in_descs, out_descs;
    for (const auto& shape : shapes) {
      ins.push_back(MakeDevice(HVD_FLOAT32, shape, [&](int64_t i) {
        return ReduceInput(HVD_OP_SUM, f32, R(), N(), i);
      }));
      outs.push_back(std::make_shared<DeviceTensor>(HVD_FLOAT32, shape));
      in_descs.push_back(ins.back()->Desc());
      out_descs.push_back(outs.back()->Desc());
    }
    Pending p;
    p.what = "grouped allreduce Sum of four float32 members, out of place";
    hvd_op_options_t o = Options("gpu.grouped.ar.sum");
    Require(hvd_grouped_allreduce(in_descs.data(), out_descs.data(), 4, &o, &p.handle), p.what);
    p.keep = ins;
    p.keep.insert(p.keep.end(), outs.begin(), outs.end());
    const std::string what = p.what;
    const int32_t n = N();
    p.check = [=](hvd_handle_t) {
      for (size_t m = 0; m < outs.size(); ++m) {
        std::vector<double> want(outs[m]->count());
        for (int64_t i = 0; i < outs[m]->count(); ++i) {
          want[i] = ReduceExpected(HVD_OP_SUM, f32, n, i);
        }
        ExpectDevice(what + " member " + std::to_string(m), *outs[m], want);
      }
    };
    pending.push_back(std::move(p));
  }
  // Grouped allreduce of two float16 members, Average with prescale 0.5 and postscale 4, in
  // place.
  {
    const DType& f16 = DTypeOf(HVD_FLOAT16);
    const std::vector<std::vector<int64_t>> shapes = {{3}, {5, 5}};
    std::vector<DevicePtr> ts;
    std::vector<hvd_tensor_t> descs;
    for (const auto& shape : shapes) {
      ts.push_back(MakeDevice(HVD_FLOAT16, shape, [&](int64_t i) {
        return ReduceInput(HVD_OP_AVERAGE, f16, R(), N(), i);
      }));
      descs.push_back(ts.back()->Desc());
    }
    Pending p;
    p.what = "grouped allreduce Average float16 prescale 0.5 postscale 4, in place";
    hvd_op_options_t o = Options("gpu.grouped.ar.avg");
    o.reduce_op = HVD_OP_AVERAGE;
    o.prescale_factor = 0.5;
    o.postscale_factor = 4.0;
    Require(hvd_grouped_allreduce(descs.data(), descs.data(), 2, &o, &p.handle), p.what);
    p.keep = ts;
    const std::string what = p.what;
    const int32_t n = N();
    const bool exact = ReductionExact(f16, HVD_OP_AVERAGE, 0.5, 4.0, n);
    p.check = [=](hvd_handle_t) {
      for (size_t m = 0; m < ts.size(); ++m) {
        std::vector<double> want(ts[m]->count());
        for (int64_t i = 0; i < ts[m]->count(); ++i) {
          want[i] = ReduceExpected(HVD_OP_AVERAGE, f16, n, i, 0.5, 4.0);
        }
        ExpectDevice(what + " member " + std::to_string(m), *ts[m], want, exact);
      }
    };
    pending.push_back(std::move(p));
  }
  // Grouped allgather: float32 [rank+1, 2] and int64 [2, 3]; one output per member.
  {
    const DType& f32 = DTypeOf(HVD_FLOAT32);
    const DType& i64 = DTypeOf(HVD_INT64);
    DevicePtr a = MakeDevice(HVD_FLOAT32, {R() + 1, 2},
                             [&](int64_t e) { return GatherValue(f32, R(), e / 2, e % 2); });
    DevicePtr b = MakeDevice(HVD_INT64, {2, 3},
                             [&](int64_t e) { return GatherValue(i64, R(), e / 3, e % 3); });
    std::vector<double> want_a, want_b;
    for (int32_t r = 0; r < N(); ++r) {
      for (int64_t e = 0; e < (r + 1) * 2; ++e) want_a.push_back(GatherValue(f32, r, e / 2, e % 2));
      for (int64_t e = 0; e < 6; ++e) want_b.push_back(GatherValue(i64, r, e / 3, e % 3));
    }
    hvd_tensor_t descs[2] = {a->Desc(), b->Desc()};
    hvd_op_options_t o = Options("gpu.grouped.ag");
    Pending p;
    p.what = "grouped allgather";
    Require(hvd_grouped_allgather(descs, 2, &o, &p.handle), p.what);
    p.keep = {a, b};
    const std::string what = p.what;
    const int64_t rows_a = static_cast<int64_t>(want_a.size() / 2);
    const int64_t rows_b = 2 * N();
    const bool on_device = DeviceOutputsExpected("ALLGATHER");
    p.check = [=](hvd_handle_t h) {
      int32_t outputs = 0;
      Require(hvd_num_outputs(h, &outputs), what + ": hvd_num_outputs");
      if (outputs != 2) Fail(what + ": expected 2 outputs, got " + std::to_string(outputs));
      ExpectOutput(h, 0, what + " member 0", HVD_FLOAT32, {rows_a, 2}, want_a, on_device);
      ExpectOutput(h, 1, what + " member 1", HVD_INT64, {rows_b, 3}, want_b, on_device);
    };
    pending.push_back(std::move(p));
  }
  // Grouped reducescatter of two float32 members, Sum: [2n+1] (uneven) and [n, 3].
  {
    const DType& f32 = DTypeOf(HVD_FLOAT32);
    const std::vector<std::vector<int64_t>> shapes = {{2 * N() + 1}, {N(), 3}};
    std::vector<DevicePtr> ins;
    std::vector<hvd_tensor_t> descs;
    std::vector<std::vector<double>> wants;
    std::vector<std::vector<int64_t>> out_shapes;
    for (const auto& shape : shapes) {
      ins.push_back(MakeDevice(HVD_FLOAT32, shape, [&](int64_t i) {
        return ReduceInput(HVD_OP_SUM, f32, R(), N(), i);
      }));
      descs.push_back(ins.back()->Desc());
      const int64_t row = ins.back()->count() / shape[0];
      int64_t first = 0;
      for (int32_t r = 0; r < R(); ++r) first += ScatterRows(shape[0], r);
      std::vector<double> want;
      for (int64_t i = first * row; i < (first + ScatterRows(shape[0], R())) * row; ++i) {
        want.push_back(ReduceExpected(HVD_OP_SUM, f32, N(), i));
      }
      wants.push_back(std::move(want));
      std::vector<int64_t> out_shape = shape;
      out_shape[0] = ScatterRows(shape[0], R());
      out_shapes.push_back(std::move(out_shape));
    }
    hvd_op_options_t o = Options("gpu.grouped.rs");
    Pending p;
    p.what = "grouped reducescatter Sum of two float32 members";
    Require(hvd_grouped_reducescatter(descs.data(), 2, &o, &p.handle), p.what);
    p.keep = ins;
    const std::string what = p.what;
    const bool on_device = DeviceOutputsExpected("REDUCESCATTER");
    p.check = [=](hvd_handle_t h) {
      for (int m = 0; m < 2; ++m) {
        ExpectOutput(h, m, what + " member " + std::to_string(m), HVD_FLOAT32, out_shapes[m],
                     wants[m], on_device);
      }
    };
    pending.push_back(std::move(p));
  }
  FinishAll(&pending);
}

void Allgather() {
  std::vector<Pending> pending;
  for (hvd_dtype_t id : {HVD_FLOAT32, HVD_INT64}) {
    const DType& d = DTypeOf(id);
    EnqueueAllgather(
        &pending, d, [](int32_t r) -> int64_t { return r + 1; }, 3, "rows=rank+1");
    EnqueueAllgather(
        &pending, d, [](int32_t) -> int64_t { return 2; }, 3, "rows=2");
  }
  // Rank 0 contributes no rows.
  EnqueueAllgather(
      &pending, DTypeOf(HVD_FLOAT32), [](int32_t r) -> int64_t { return r; }, 3, "rows=rank");
  FinishAll(&pending);
}

void Broadcast() {
  std::vector<Pending> pending;
  for (int32_t root = 0; root < N(); ++root) {
    EnqueueBroadcast(&pending, DTypeOf(HVD_FLOAT32), root, {17, 17, 17}, true);
    EnqueueBroadcast(&pending, DTypeOf(HVD_UINT8), root, {5, 7}, true);
  }
  EnqueueBroadcast(&pending, DTypeOf(HVD_FLOAT32), N() - 1, {3, 3}, false);
  FinishAll(&pending);
}

void Alltoall() {
  std::vector<Pending> pending;
  for (hvd_dtype_t id : {HVD_FLOAT32, HVD_INT32, HVD_FLOAT16}) {
    EnqueueAlltoall(&pending, DTypeOf(id), true);
    EnqueueAlltoall(&pending, DTypeOf(id), false);
  }
  FinishAll(&pending);
}

void Reducescatter() {
  std::vector<Pending> pending;
  for (hvd_dtype_t id : {HVD_FLOAT32, HVD_FLOAT16}) {
    const DType& d = DTypeOf(id);
    for (const auto& [tag, rows] : {std::pair<std::string, int64_t>{"uneven", 7},
                                    std::pair<std::string, int64_t>{"even", 2 * N()}}) {
      for (hvd_reduce_op_t op : {HVD_OP_SUM, HVD_OP_AVERAGE}) {
        EnqueueReducescatter(&pending, d, op, {rows, 3}, 1.0, 1.0, tag);
        EnqueueReducescatter(&pending, d, op, {rows, 3}, 0.5, 4.0, tag);
      }
    }
  }
  FinishAll(&pending);
}

// ---- Horovod's scaling arithmetic -----------------------------------------------------------

namespace {

// `v` rounded to the dtype (float16/bfloat16 to nearest even, float32 once).
double InType(const DType& d, double v) {
  unsigned char bytes[8];
  hvd_worker::SetElement(bytes, d.id, v);
  return hvd_worker::GetElement(bytes, d.id);
}

// A scale factor as Horovod's GPU kernel holds it: float64 as given, float32 as a float, the
// 16-bit types through a float (__float2half((float)factor)).
double FactorInType(const DType& d, double f) {
  return d.id == HVD_FLOAT64 ? f : InType(d, static_cast<double>(static_cast<float>(f)));
}

// What Horovod's GPU path gives for `x` on each of `n` members: the prescale kernel on each
// input, NCCL's sum in rank order (each step rounded), the postscale kernel (with Average's 1/n)
// on the sum; every product of two values of the type is exact in double, rounded once here.
double HorovodScaled(const DType& d, double x, int32_t n, double pre, double post) {
  const double m = pre == 1.0 ? x : InType(d, x * FactorInType(d, pre));
  double sum = m;
  for (int32_t k = 1; k < n; ++k) sum = InType(d, sum + m);
  return post == 1.0 ? sum : InType(d, sum * FactorInType(d, post));
}

// Horovod's test inputs: integers in [-100, 100), the same on every rank.
double HorovodInput(int64_t i) { return static_cast<double>((i * 37) % 200 - 100); }

}  // namespace

void HorovodScaling() {
  // Horovod's own GPU tests (test_horovod_allreduce_average / _prescale / _postscale and the
  // reducescatter ones) ask for these results exactly at up to 3 ranks: the same integer inputs
  // on every rank, a factor that is no power of two, a 17 x 17 x 17 tensor. Folding the postscale
  // (or Average's 1/3) into NCCL's pre-multiplied sum gives round(3 * round(x * f)) where Horovod
  // gives round(round(3x) * f): at 3 ranks, float32's average of 100 came out 100.0000076.
  constexpr double kPre = 0.6180339887498949, kPost = 1.7320508075688772;
  struct Case {
    hvd_reduce_op_t op;
    double pre, post;
  };
  const Case cases[] = {{HVD_OP_AVERAGE, 1.0, 1.0},
                        {HVD_OP_SUM, kPre, 1.0},
                        {HVD_OP_SUM, 1.0, kPost},
                        {HVD_OP_AVERAGE, kPre, kPost}};
  // Bit for bit at up to 3 ranks (beyond, NCCL's order of the sum is its own: ring or tree) on
  // NCCL with hvd's scaling kernel (a build without nvcc folds the factors), and for
  // float32/float64 staged too. A staged float16/bfloat16 sum is more precise than NCCL's (the
  // host adds in float and rounds once; NCCL rounds every step to the type).
  const auto exact = [](const DType& d, bool on_nccl) {
    return N() <= 3 && (on_nccl ? ScaleKernel() : d.size >= 4);
  };
  std::vector<Pending> pending;
  int k = 0;
  for (hvd_dtype_t id : {HVD_FLOAT32, HVD_FLOAT64, HVD_FLOAT16, HVD_BFLOAT16}) {
    const DType& d = DTypeOf(id);
    for (const Case& c : cases) {
      const double post = c.op == HVD_OP_AVERAGE ? c.post / N() : c.post;
      char scales[96];
      std::snprintf(scales, sizeof(scales), " %s prescale %.17g postscale %.17g", d.name, c.pre,
                    c.post);
      const std::string label = std::string(ReduceOpName(c.op)) + scales;
      const auto values = [&](const char* op) {
        return Values{
            HorovodInput,
            [d, c, post](int64_t i) { return HorovodScaled(d, HorovodInput(i), N(), c.pre, post); },
            exact(d, DeviceOutputsExpected(op) && NcclReduces(d, c.op, c.pre, c.post, N()))};
      };
      // A lone allreduce (out of place), then two enqueued together (fused through the device
      // buffer where the runtime fuses them).
      for (int tensors : {1, 2}) {
        for (int t = 0; t < tensors; ++t) {
          EnqueueAllreduceOf(&pending, d, c.op, c.pre, c.post, {17, 17, 17}, false,
                             "gpu.hvdscale.ar." + std::to_string(k++),
                             "Horovod-scaled allreduce " + label + " tensor " +
                                 std::to_string(t + 1) + " of " + std::to_string(tensors),
                             0, values("ALLREDUCE"));
        }
      }
      // A reducescatter of 17 rows of 17 (uneven over 2 and 4 ranks).
      EnqueueReducescatterOf(&pending, d, c.op, {17, 17}, c.pre, c.post,
                             "gpu.hvdscale.rs." + std::to_string(k++),
                             "Horovod-scaled reducescatter " + label, values("REDUCESCATTER"));
    }
  }
  FinishAll(&pending);
}

// The hierarchical allreduce (--hierarchical-allreduce) of a set whose size is no power of two
// (3 hosts x 2 ranks): an Average, and an Average with a postscale, as Horovod's GPU path and
// hvd's flat NCCL path give them: Average's 1/n inside the postscale, the factor rounded to the
// type. Horovod's integer inputs, the same on every rank, keep every partial sum exact (float16:
// |6x| <= 600), so the result is exact whatever the order of the sum. Until 2026-12-01 the
// hierarchy rounded the postscale and then divided by n in float: float16's average of 5 x 6
// ranks came out 0.83349609375 for Horovod's 0.8330078125 (1/6 is 0.1666259765625 in float16).
void HierarchicalAverage() {
  if (N() % 2 != 0 || (N() & (N() - 1)) == 0) {
    std::printf("[hierarchical_average] skipped: needs a set size that is no power of two\n");
    return;
  }
  std::vector<Pending> pending;
  int k = 0;
  for (hvd_dtype_t id : {HVD_FLOAT16, HVD_FLOAT32, HVD_FLOAT64}) {
    const DType& d = DTypeOf(id);
    for (double post : {1.0, 1.7320508075688772}) {
      char label[96];
      std::snprintf(label, sizeof(label), "hierarchical Average %s postscale %.17g", d.name, post);
      const Values values{
          HorovodInput,
          [d, post](int64_t i) { return HorovodScaled(d, HorovodInput(i), N(), 1.0, post / N()); },
          true};
      EnqueueAllreduceOf(&pending, d, HVD_OP_AVERAGE, 1.0, post, {17, 17, 17}, false,
                         "gpu.hieravg." + std::to_string(k++), label, 0, values);
    }
  }
  FinishAll(&pending);
}

void EnqueueSetAllreduce(std::vector<Pending>* pending, int32_t set, int32_t pos, int32_t n) {
  EnqueueAllreduce(pending, DTypeOf(HVD_FLOAT32), HVD_OP_SUM, 1.0, 1.0, {17, 17, 17}, true,
                   "gpu.set.ar", "process set: ", set, pos, n);
  EnqueueAllreduce(pending, DTypeOf(HVD_FLOAT16), HVD_OP_AVERAGE, 1.0, 1.0, {9}, false,
                   "gpu.set.ar.avg", "process set: ", set, pos, n);
}

void EnqueueSetAllgather(std::vector<Pending>* pending, int32_t set,
                         const std::vector<int32_t>& members) {
  // Member r gives r % 3 + 1 rows (global rank r): uneven first dimensions within the set.
  EnqueueAllgather(
      pending, DTypeOf(HVD_INT64), [](int32_t r) -> int64_t { return r % 3 + 1; }, 2, "set", set,
      members);
}

}  // namespace hvd_gpu
