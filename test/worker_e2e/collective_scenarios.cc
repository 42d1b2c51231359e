// Every collective x every dtype on the global set, with expected values from rank and size.
// Each scenario enqueues all of its ops before waiting for the first, so the runtime sees many
// tensors at once (negotiated together, fused where it may).
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>
#include <tuple>
#include <vector>

#include "scenarios.h"

namespace hvd_e2e {
namespace {

// Rows of dim 0 that rank r gets when `dim0` rows are scattered: the first dim0 % n one more.
int64_t ScatterRows(int64_t dim0, int32_t r) { return dim0 / N() + (r < dim0 % N() ? 1 : 0); }

// ---- allreduce ------------------------------------------------------------------------------

void EnqueueAllreduce(std::vector<Pending>* pending, const DType& d, hvd_reduce_op_t op, double pre,
                      double post, int k, const std::string& prefix = "ar.",
                      std::vector<int64_t> shape = {}) {
  if (shape.empty()) shape = k % 2 ? std::vector<int64_t>{3, 5} : std::vector<int64_t>{13};
  auto in = Make(d.id, shape);
  auto out = k % 3 == 0 ? in : Make(d.id, shape);  // in place every third op
  for (int64_t i = 0; i < in->count(); ++i) in->Set(i, ReduceInput(op, d, R(), N(), i));
  char scales[64];
  std::snprintf(scales, sizeof(scales), " prescale %g postscale %g", pre, post);
  const std::string what = std::string("allreduce ") + ReduceOpName(op) + " " + d.name + scales +
                           (in == out ? " in place" : "");
  hvd_op_options_t o = Options(prefix + std::to_string(k));
  o.reduce_op = op;
  o.prescale_factor = pre;
  o.postscale_factor = post;
  hvd_tensor_t a = in->Desc(), b = out->Desc();
  Pending p;
  Require(hvd_allreduce(&a, &b, &o, &p.handle), what);
  p.what = what;
  p.keep = {in, out};
  const int32_t n = N();
  p.check = [=](hvd_handle_t) {
    std::vector<double> want(out->count());
    for (int64_t i = 0; i < out->count(); ++i) want[i] = ReduceExpected(op, d, n, i, pre, post);
    ExpectValues(what, *out, want);
  };
  pending->push_back(std::move(p));
}

// The scaled allreduces of dtype d, {op, prescale, postscale}: factors that keep every value
// exact, without those whose result cannot fit the dtype at this job's size (ReduceFits: int8's
// Sum from 5 members, uint8's Sum and int8's Average from 10).
std::vector<std::tuple<hvd_reduce_op_t, double, double>> ScaledCases(const DType& d) {
  std::vector<std::tuple<hvd_reduce_op_t, double, double>> cases;
  for (const auto& [op, pre, post] :
       {std::tuple{HVD_OP_SUM, d.is_float ? 0.5 : 2.0, d.is_float ? 3.0 : 2.0},
        std::tuple{HVD_OP_AVERAGE, 2.0, d.is_float ? 0.25 : 2.0}}) {
    if (ReduceFits(op, d, N(), pre, post)) cases.emplace_back(op, pre, post);
  }
  return cases;
}

// ---- allgather ------------------------------------------------------------------------------

double GatherValue(const DType& d, int32_t r, int64_t row, int64_t col) {
  if (d.id == HVD_BOOL) return static_cast<double>((r + row + col) % 2);
  const double v = Small(r * 16 + row * 4 + col);
  return d.is_signed && col == 1 ? -v : v;
}

// Rank r contributes rows(r) rows of `cols` columns (cols 0: a vector).
void EnqueueAllgather(std::vector<Pending>* pending, const DType& d, int64_t (*rows)(int32_t),
                      int64_t cols, const std::string& tag) {
  auto shape_of = [cols](int64_t r) {
    return cols ? std::vector<int64_t>{r, cols} : std::vector<int64_t>{r};
  };
  const int64_t width = cols ? cols : 1;
  auto in = Make(d.id, shape_of(rows(R())));
  for (int64_t j = 0; j < rows(R()); ++j) {
    for (int64_t c = 0; c < width; ++c) in->Set(j * width + c, GatherValue(d, R(), j, c));
  }
  std::vector<double> want;
  int64_t total = 0;
  for (int32_t r = 0; r < N(); ++r) {
    for (int64_t j = 0; j < rows(r); ++j) {
      for (int64_t c = 0; c < width; ++c) want.push_back(GatherValue(d, r, j, c));
    }
    total += rows(r);
  }
  const std::string what = "allgather " + tag + " " + d.name;
  hvd_op_options_t o = Options("ag." + tag + "." + d.name);
  hvd_tensor_t a = in->Desc();
  Pending p;
  Require(hvd_allgather(&a, &o, &p.handle), what);
  p.what = what;
  p.keep = {in};
  const std::vector<int64_t> shape = shape_of(total);
  p.check = [=](hvd_handle_t h) { ExpectOutput(h, 0, what, d.id, shape, want); };
  pending->push_back(std::move(p));
}

// ---- fused allgather ------------------------------------------------------------------------

// Element (row, col) of rank r's part of fused allgather tensor t: small integers, exact in
// every dtype, negative in column 1 of signed ones, and different between neighbouring tensors.
double FusedGatherValue(const DType& d, int32_t r, int t, int64_t row, int64_t col) {
  if (d.id == HVD_BOOL) return static_cast<double>((r + t + row + col) % 2);
  const double v = static_cast<double>((r * 16 + row * 4 + col + 3 * t) % 100);
  return d.is_signed && col == 1 ? -v : v;
}

// Rows rank r sends of tensor t in a round: 0 to 2, by rank and tensor; from round 2 on the
// odd tensors change their rows on every rank (cached responses go invalid and renegotiate).
int64_t FusedGatherRows(int32_t r, int t, int round) {
  return (r + t + (round >= 2 && t % 2 ? 1 : 0)) % 3;
}

// This rank's input of tensor t (`cols` columns) and, in `want`/`shape`, the gathered result.
std::shared_ptr<Tensor> FusedGatherInput(const DType& d, int t, int round, int64_t cols,
                                         std::vector<double>* want, std::vector<int64_t>* shape) {
  auto in = Make(d.id, {FusedGatherRows(R(), t, round), cols});
  for (int64_t j = 0; j < in->shape()[0]; ++j) {
    for (int64_t c = 0; c < cols; ++c) in->Set(j * cols + c, FusedGatherValue(d, R(), t, j, c));
  }
  int64_t total = 0;
  for (int32_t r = 0; r < N(); ++r) {
    for (int64_t j = 0; j < FusedGatherRows(r, t, round); ++j) {
      for (int64_t c = 0; c < cols; ++c) want->push_back(FusedGatherValue(d, r, t, j, c));
    }
    total += FusedGatherRows(r, t, round);
  }
  *shape = {total, cols};
  return in;
}

void EnqueueFusedGather(std::vector<Pending>* pending, const DType& d, int t, int round,
                        int64_t cols) {
  std::vector<double> want;
  std::vector<int64_t> shape;
  auto in = FusedGatherInput(d, t, round, cols, &want, &shape);
  const std::string what =
      "fused allgather #" + std::to_string(t) + " round " + std::to_string(round) + " " + d.name;
  hvd_op_options_t o = Options("fused.ag." + std::to_string(t));
  hvd_tensor_t a = in->Desc();
  Pending p;
  Require(hvd_allgather(&a, &o, &p.handle), what);
  p.what = what;
  p.keep = {in};
  p.check = [=](hvd_handle_t h) { ExpectOutput(h, 0, what, d.id, shape, want); };
  pending->push_back(std::move(p));
}

// A grouped allgather of four float64 members (tensors 50..53, 1 to 4 columns).
void EnqueueFusedGatherGroup(std::vector<Pending>* pending, int round) {
  Pending p;
  p.what = "fused grouped allgather round " + std::to_string(round);
  std::vector<hvd_tensor_t> descs;
  std::vector<std::vector<double>> wants(4);
  std::vector<std::vector<int64_t>> shapes(4);
  for (int m = 0; m < 4; ++m) {
    p.keep.push_back(
        FusedGatherInput(DTypeOf(HVD_FLOAT64), 50 + m, round, m + 1, &wants[m], &shapes[m]));
    descs.push_back(p.keep.back()->Desc());
  }
  hvd_op_options_t o = Options("fused.ag.grouped");
  Require(hvd_grouped_allgather(descs.data(), 4, &o, &p.handle), p.what);
  const std::string what = p.what;
  p.check = [=](hvd_handle_t h) {
    for (int m = 0; m < 4; ++m) {
      ExpectOutput(h, m, what + " member " + std::to_string(m), HVD_FLOAT64, shapes[m], wants[m]);
    }
  };
  pending->push_back(std::move(p));
}

// ---- broadcast ------------------------------------------------------------------------------

double BroadcastValue(const DType& d, int32_t root, int64_t k) {
  if (d.id == HVD_BOOL) return static_cast<double>((root + k) % 2);
  const double v = Small(root * 8 + k);
  return d.is_signed && k % 2 ? -v : v;
}

// From `root` to all, in place from even roots; non-roots start from other values.
void EnqueueBroadcast(std::vector<Pending>* pending, const DType& d, int32_t root,
                      std::vector<int64_t> shape) {
  auto in = Make(d.id, shape);
  for (int64_t k = 0; k < in->count(); ++k) {
    const double mine = BroadcastValue(d, root, k);
    // Non-roots start from 127, which no Small value is (bool: the opposite).
    in->Set(k, R() == root ? mine : (d.id == HVD_BOOL ? 1 - mine : 127));
  }
  auto out = root % 2 == 0 ? in : Make(d.id, shape);
  const std::string what = std::string("broadcast from root ") + std::to_string(root) + " " +
                           d.name + " " + Shape(shape) + (in == out ? " in place" : "");
  hvd_op_options_t o =
      Options("bc." + std::to_string(root) + "." + d.name + "." + std::to_string(in->count()));
  o.root_rank = root;
  hvd_tensor_t a = in->Desc(), b = out->Desc();
  Pending p;
  Require(hvd_broadcast(&a, &b, &o, &p.handle), what);
  p.what = what;
  p.keep = {in, out};
  p.check = [=](hvd_handle_t) {
    std::vector<double> want;
    for (int64_t k = 0; k < out->count(); ++k) want.push_back(BroadcastValue(d, root, k));
    ExpectValues(what, *out, want);
  };
  pending->push_back(std::move(p));
}

// ---- alltoall -------------------------------------------------------------------------------

// Row `row` of the block that rank src sends to rank dst (column col).
double AlltoallValue(const DType& d, int32_t src, int32_t dst, int64_t row, int64_t col) {
  if (d.id == HVD_BOOL) return static_cast<double>((src + dst + row + col) % 2);
  const double v = Small(src * 16 + dst * 4 + row * 2 + col);
  return d.is_signed && (row + col) % 2 ? -v : v;
}

int32_t SplitOf(int32_t src, int32_t dst) { return (src + dst) % 3; }

void EnqueueAlltoall(std::vector<Pending>* pending, const DType& d, bool with_splits,
                     int64_t even_rows = 2) {
  const int32_t n = N(), me = R();
  // Without splits: even_rows rows of 2 columns to each rank. With: SplitOf rows of 1 column
  // (may be 0).
  auto rows_to = [&](int32_t src, int32_t dst) -> int64_t {
    return with_splits ? SplitOf(src, dst) : even_rows;
  };
  const int64_t cols = with_splits ? 1 : 2;
  int64_t in_rows = 0, out_rows = 0;
  for (int32_t j = 0; j < n; ++j) {
    in_rows += rows_to(me, j);
    out_rows += rows_to(j, me);
  }
  auto in =
      Make(d.id, with_splits ? std::vector<int64_t>{in_rows} : std::vector<int64_t>{in_rows, 2});
  int64_t e = 0;
  for (int32_t j = 0; j < n; ++j) {
    for (int64_t k = 0; k < rows_to(me, j); ++k) {
      for (int64_t c = 0; c < cols; ++c) in->Set(e++, AlltoallValue(d, me, j, k, c));
    }
  }
  std::vector<double> want;
  std::vector<int32_t> want_splits;
  for (int32_t s = 0; s < n; ++s) {
    want_splits.push_back(static_cast<int32_t>(rows_to(s, me)));
    for (int64_t k = 0; k < rows_to(s, me); ++k) {
      for (int64_t c = 0; c < cols; ++c) want.push_back(AlltoallValue(d, s, me, k, c));
    }
  }
  auto splits = std::make_shared<std::vector<int32_t>>();
  for (int32_t j = 0; j < n; ++j) splits->push_back(static_cast<int32_t>(rows_to(me, j)));
  const std::string what =
      std::string("alltoall ") + (with_splits ? "with splits " : "equal ") + d.name;
  hvd_op_options_t o = Options(std::string("a2a.") + (with_splits ? "s." : "e.") + d.name +
                               (even_rows != 2 ? "." + std::to_string(even_rows) : ""));
  if (with_splits) {
    o.splits = splits->data();
    o.num_splits = n;
  }
  hvd_tensor_t a = in->Desc();
  Pending p;
  Require(hvd_alltoall(&a, &o, &p.handle), what);
  p.what = what;
  p.keep = {in};
  const std::vector<int64_t> shape =
      with_splits ? std::vector<int64_t>{out_rows} : std::vector<int64_t>{out_rows, 2};
  p.check = [=](hvd_handle_t h) {
    ExpectOutput(h, 0, what, d.id, shape, want);
    std::vector<int32_t> got(n + 1, -1);
    int32_t count = 0;
    Require(hvd_received_splits(h, got.data(), n + 1, &count), what + ": hvd_received_splits");
    got.resize(count);
    if (got != want_splits) {
      std::string g, w;
      for (int32_t x : got) g += std::to_string(x) + " ";
      for (int32_t x : want_splits) w += std::to_string(x) + " ";
      Fail(what + ": received splits: expected [ " + w + "], got [ " + g + "]");
    }
    // As the other list queries: (NULL, 0) asks for the count, a short buffer is refused and
    // still says how many there are.
    int32_t asked = -1;
    Require(hvd_received_splits(h, nullptr, 0, &asked), what + ": hvd_received_splits count");
    int32_t one = -1, told = -1;
    const hvd_status_t short_buffer = hvd_received_splits(h, &one, 1, &told);
    if (asked != n || (n > 1 && (short_buffer != HVD_INVALID_ARGUMENT || told != n))) {
      Fail(what + ": hvd_received_splits(NULL, 0) counted " + std::to_string(asked) +
           ", a 1-element buffer gave status " + std::to_string(short_buffer) + " and count " +
           std::to_string(told) + ", for " + std::to_string(n) + " members");
    }
  };
  pending->push_back(std::move(p));
}

// ---- reducescatter --------------------------------------------------------------------------

void EnqueueReducescatter(std::vector<Pending>* pending, const DType& d, hvd_reduce_op_t op,
                          std::vector<int64_t> shape, double pre, double post,
                          const std::string& tag) {
  auto in = Make(d.id, shape);
  for (int64_t i = 0; i < in->count(); ++i) in->Set(i, ReduceInput(op, d, R(), N(), i));
  const int64_t row = in->count() / shape[0];
  int64_t offset = 0;
  for (int32_t r = 0; r < R(); ++r) offset += ScatterRows(shape[0], r);
  std::vector<double> want;
  for (int64_t i = offset * row; i < (offset + ScatterRows(shape[0], R())) * row; ++i) {
    want.push_back(ReduceExpected(op, d, N(), i, pre, post));
  }
  std::vector<int64_t> out_shape = shape;
  out_shape[0] = ScatterRows(shape[0], R());
  const std::string what = std::string("reducescatter ") + ReduceOpName(op) + " " + tag + " " +
                           d.name + " " + Shape(shape);
  hvd_op_options_t o = Options("rs." + tag + "." + ReduceOpName(op) + "." + d.name);
  o.reduce_op = op;
  o.prescale_factor = pre;
  o.postscale_factor = post;
  hvd_tensor_t a = in->Desc();
  Pending p;
  Require(hvd_reducescatter(&a, &o, &p.handle), what);
  p.what = what;
  p.keep = {in};
  p.check = [=](hvd_handle_t h) { ExpectOutput(h, 0, what, d.id, out_shape, want); };
  pending->push_back(std::move(p));
}

}  // namespace

void Allreduce() {
  std::vector<Pending> pending;
  int k = 0;
  for (const DType& d : AllDTypes()) {
    for (hvd_reduce_op_t op :
         {HVD_OP_SUM, HVD_OP_AVERAGE, HVD_OP_MIN, HVD_OP_MAX, HVD_OP_PRODUCT}) {
      if (d.id == HVD_BOOL && op == HVD_OP_AVERAGE) continue;  // no mean of booleans
      EnqueueAllreduce(&pending, d, op, 1.0, 1.0, k++);
    }
    if (d.id == HVD_BOOL) continue;  // scale factors do not apply to booleans
    for (const auto& [op, pre, post] : ScaledCases(d)) {
      EnqueueAllreduce(&pending, d, op, pre, post, k++);
    }
  }
  // An empty tensor is a valid allreduce.
  auto empty = std::make_shared<Tensor>(HVD_FLOAT32, std::vector<int64_t>{0});
  hvd_tensor_t e = empty->Desc();
  hvd_op_options_t o = Options("ar.empty");
  Pending p{0, "allreduce of an empty tensor", nullptr, {empty}};
  Require(hvd_allreduce(&e, &e, &o, &p.handle), p.what);
  pending.push_back(std::move(p));
  FinishAll(&pending);
}

void Lone() {
  // One allreduce at a time, waited for before the next (a loss or a metric each step): from
  // the fifth of a name on (a miss, a lone hit, then the same lone hit after it twice) it rides
  // the negotiation's AND round on hvd's TCP (controller.h, "Eager"). Every dtype, op and
  // scaling, six times each, the fourth with one rank late (its peers run eager cycles without
  // it and drop the data they sent); two names alternating (each the other's successor); two
  // at once; one above HVD_EAGER_ALLREDUCE_BYTES.
  int k = 0;
  auto lone = [&](const DType& d, hvd_reduce_op_t op, double pre, double post,
                  std::vector<int64_t> shape = {}) {
    for (int rep = 0; rep < 6; ++rep) {
      if (rep == 3 && R() == k % N()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      std::vector<Pending> pending;
      EnqueueAllreduce(&pending, d, op, pre, post, k, "lone.", shape);
      FinishAll(&pending);
    }
    ++k;
  };
  for (const DType& d : AllDTypes()) {
    for (hvd_reduce_op_t op :
         {HVD_OP_SUM, HVD_OP_AVERAGE, HVD_OP_MIN, HVD_OP_MAX, HVD_OP_PRODUCT}) {
      if (d.id == HVD_BOOL && op == HVD_OP_AVERAGE) continue;
      lone(d, op, 1.0, 1.0);
    }
    if (d.id == HVD_BOOL) continue;
    for (const auto& [op, pre, post] : ScaledCases(d)) lone(d, op, pre, post);
  }
  const DType& f32 = DTypeOf(HVD_FLOAT32);
  lone(f32, HVD_OP_SUM, 1.0, 1.0, {100000});  // 400 KB: above the eager limit
  // Two names alternating, each alone in its cycle; then both at once, then one alone again.
  const int a = k++, b = k++;
  for (int rep = 0; rep < 5; ++rep) {
    for (int which : {a, b}) {
      std::vector<Pending> pending;
      EnqueueAllreduce(&pending, f32, HVD_OP_SUM, 1.0, 1.0, which, "lone.", {7});
      FinishAll(&pending);
    }
  }
  for (int rep = 0; rep < 3; ++rep) {
    std::vector<Pending> pending;
    EnqueueAllreduce(&pending, f32, HVD_OP_SUM, 1.0, 1.0, a, "lone.", {7});
    if (rep != 1) EnqueueAllreduce(&pending, f32, HVD_OP_SUM, 1.0, 1.0, b, "lone.", {7});
    FinishAll(&pending);
  }
}

void LoneCollectives() {
  // The other collectives one at a time, each waited for before the next, six times by name
  // (and one rank late the fourth time): on shared memory each rides the negotiation's AND
  // round from its fifth time on, computed from the inputs posted with it (controller.h,
  // "Eager"). Uneven allgathers (rank 0 empty too), even and split alltoalls (split ones never
  // ride), reducescatters uneven, scaled and averaged, broadcasts from every root, sizes above
  // HVD_EAGER_ALLREDUCE_BYTES, and two ops alternating (each the other's successor).
  int k = 0;
  auto lone = [&](const std::function<void(std::vector<Pending>*)>& enqueue) {
    for (int rep = 0; rep < 6; ++rep) {
      if (rep == 3 && R() == k % N()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      std::vector<Pending> pending;
      enqueue(&pending);
      FinishAll(&pending);
    }
    ++k;
  };
  auto rank_plus_one = [](int32_t r) -> int64_t { return r + 1; };
  for (const DType& d : AllDTypes()) {
    lone([&](std::vector<Pending>* p) { EnqueueAllgather(p, d, rank_plus_one, 3, "lone"); });
    lone([&](std::vector<Pending>* p) { EnqueueAlltoall(p, d, false); });
    lone([&](std::vector<Pending>* p) {
      EnqueueReducescatter(p, d, HVD_OP_SUM, {2 * N() + 1, 2}, 1.0, 1.0, "lone");
    });
    lone([&](std::vector<Pending>* p) { EnqueueBroadcast(p, d, k % N(), {2, 3}); });
  }
  const DType& f32 = DTypeOf(HVD_FLOAT32);
  lone([&](std::vector<Pending>* p) {
    EnqueueAllgather(
        p, f32, [](int32_t r) -> int64_t { return r; }, 3, "lone.rows=rank");
  });
  lone([&](std::vector<Pending>* p) { EnqueueAlltoall(p, f32, true); });
  lone([&](std::vector<Pending>* p) {
    EnqueueReducescatter(p, f32, HVD_OP_AVERAGE, {3 * N(), 2}, 0.5, 3.0, "lone.scaled");
  });
  lone([&](std::vector<Pending>* p) {
    EnqueueReducescatter(p, f32, HVD_OP_SUM, {N() - 1, 2}, 1.0, 1.0, "lone.last-rank-empty");
  });
  for (int32_t root = 0; root < N(); ++root) {
    lone([&](std::vector<Pending>* p) { EnqueueBroadcast(p, f32, root, {3}); });
  }
  // Over the limit but within it times the ranks per CPU (a broadcast or allgather posts only
  // what it moves; shared memory with more ranks than CPUs: Communicator::posted_copy_factor):
  // 48 KB, 4000 rows of 3 float32 per rank and a 12000-float broadcast.
  lone([&](std::vector<Pending>* p) {
    EnqueueAllgather(
        p, f32, [](int32_t) -> int64_t { return 4000; }, 3, "lone.per-cpu");
  });
  lone([&](std::vector<Pending>* p) { EnqueueBroadcast(p, f32, N() - 1, {12000}); });
  // Above the limit (32 KiB by default): 10000 rows of 3 float32 per rank, 160 KB.
  lone([&](std::vector<Pending>* p) {
    EnqueueAllgather(
        p, f32, [](int32_t) -> int64_t { return 10000; }, 3, "lone.large");
  });
  lone([&](std::vector<Pending>* p) {
    EnqueueReducescatter(p, f32, HVD_OP_SUM, {20000, 2}, 1.0, 1.0, "lone.large");
  });
  lone([&](std::vector<Pending>* p) { EnqueueBroadcast(p, f32, 1 % N(), {40000}); });
  // Above the limit, each rank's piece within it: hvd's TCP posts each member only its piece
  // (20 KB of an alltoall's 40-80 KB; 12-24 KB of a 48 KB reducescatter, uneven, scaled).
  lone([&](std::vector<Pending>* p) { EnqueueAlltoall(p, f32, false, 2500); });
  lone([&](std::vector<Pending>* p) {
    EnqueueReducescatter(p, f32, HVD_OP_AVERAGE, {3001, 4}, 0.5, 3.0, "lone.pieces");
  });
  // Two ops alternating, each alone in its cycle: an allgather and a reducescatter.
  for (int rep = 0; rep < 6; ++rep) {
    for (int which : {0, 1}) {
      std::vector<Pending> pending;
      if (which == 0) {
        EnqueueAllgather(&pending, f32, rank_plus_one, 2, "lone.alternating");
      } else {
        EnqueueReducescatter(&pending, f32, HVD_OP_SUM, {N() + 1, 3}, 1.0, 1.0, "lone.alternating");
      }
      FinishAll(&pending);
    }
  }
}

void Allgather() {
  std::vector<Pending> pending;
  for (const DType& d : AllDTypes()) {
    EnqueueAllgather(
        &pending, d, [](int32_t r) -> int64_t { return r + 1; }, 3, "rows=rank+1");
  }
  // Rank 0 contributes nothing; a vector with a differing length.
  EnqueueAllgather(
      &pending, DTypeOf(HVD_FLOAT32), [](int32_t r) -> int64_t { return r; }, 3, "rows=rank");
  EnqueueAllgather(
      &pending, DTypeOf(HVD_INT64), [](int32_t r) -> int64_t { return 2 * r + 1; }, 0, "vector");
  FinishAll(&pending);
}

void Broadcast() {
  std::vector<Pending> pending;
  for (const DType& d : AllDTypes()) {
    for (int32_t root = 0; root < N(); ++root) EnqueueBroadcast(&pending, d, root, {2, 3});
  }
  FinishAll(&pending);
}

void Alltoall() {
  std::vector<Pending> pending;
  for (const DType& d : AllDTypes()) {
    EnqueueAlltoall(&pending, d, false);
    EnqueueAlltoall(&pending, d, true);
  }
  FinishAll(&pending);
}

void Reducescatter() {
  std::vector<Pending> pending;
  const int64_t uneven = 2 * N() + 1;  // rank 0 gets one row more
  for (const DType& d : AllDTypes()) {
    for (hvd_reduce_op_t op : {HVD_OP_SUM, HVD_OP_AVERAGE}) {
      if (d.id == HVD_BOOL && op == HVD_OP_AVERAGE) continue;
      EnqueueReducescatter(&pending, d, op, {uneven, 2}, 1.0, 1.0, "uneven");
    }
  }
  const DType& f32 = DTypeOf(HVD_FLOAT32);
  EnqueueReducescatter(&pending, f32, HVD_OP_SUM, {N() - 1, 2}, 1.0, 1.0, "last-rank-empty");
  EnqueueReducescatter(&pending, f32, HVD_OP_SUM, {uneven}, 0.5, 3.0, "scaled-vector");
  EnqueueReducescatter(&pending, DTypeOf(HVD_INT32), HVD_OP_AVERAGE, {3 * N(), 2, 2}, 1.0, 1.0,
                       "even-3d");
  FinishAll(&pending);
}

void Barrier() {
  // Rank `early` enters the barrier alone: it must not complete until everyone entered, which
  // the others do only after the broadcast that `early` sends once it saw its barrier pending.
  for (int32_t early = 0; early < N(); ++early) {
    const std::string what = "barrier with rank " + std::to_string(early) + " entering first";
    hvd_handle_t barrier = 0, go = 0;
    Tensor flag(HVD_INT32, {1});
    flag.Set(0, R() == early ? 1 : 0);
    hvd_tensor_t f = flag.Desc();
    hvd_op_options_t o = Options("barrier.go." + std::to_string(early));
    o.root_rank = early;
    if (R() == early) {
      Require(hvd_barrier(0, &barrier), what);
      const hvd_status_t s = hvd_wait(barrier, 0.2);
      if (s != HVD_IN_PROGRESS) {
        Fail(what + ": completed (" + hvd_status_name(s) + ") before the other ranks entered it");
      }
      Require(hvd_broadcast(&f, &f, &o, &go), what + ": go");
      WaitRelease(go, what + ": go");
    } else {
      Require(hvd_broadcast(&f, &f, &o, &go), what + ": go");
      WaitRelease(go, what + ": go");
      if (flag.Get(0) != 1) Fail(what + ": go flag not received");
      Require(hvd_barrier(0, &barrier), what);
    }
    WaitRelease(barrier, what);
  }
}

void Grouped() {
  std::vector<Pending> pending;
  // Grouped allreduce: one dtype, three shapes; then three dtypes.
  struct Member {
    hvd_dtype_t dtype;
    std::vector<int64_t> shape;
  };
  const std::vector<std::pair<hvd_reduce_op_t, std::vector<Member>>> groups = {
      {HVD_OP_SUM, {{HVD_FLOAT32, {4}}, {HVD_FLOAT32, {2, 3}}, {HVD_FLOAT32, {7}}}},
      {HVD_OP_AVERAGE, {{HVD_INT32, {5}}, {HVD_FLOAT64, {3}}, {HVD_FLOAT16, {2, 2}}}},
  };
  int g = 0;
  for (const auto& [op, members] : groups) {
    std::vector<std::shared_ptr<Tensor>> tensors;
    std::vector<hvd_tensor_t> descs;
    for (const Member& m : members) {
      tensors.push_back(Make(m.dtype, m.shape));
      Tensor& t = *tensors.back();
      for (int64_t i = 0; i < t.count(); ++i)
        t.Set(i, ReduceInput(op, DTypeOf(m.dtype), R(), N(), i));
      descs.push_back(t.Desc());
    }
    const std::string what =
        std::string("grouped allreduce ") + ReduceOpName(op) + " #" + std::to_string(g);
    hvd_op_options_t o = Options("grouped.ar." + std::to_string(g++));
    o.reduce_op = op;
    Pending p;
    Require(hvd_grouped_allreduce(descs.data(), descs.data(), static_cast<int32_t>(descs.size()),
                                  &o, &p.handle),
            what);
    p.what = what;
    p.keep = tensors;
    const int32_t n = N();
    p.check = [=, op = op](hvd_handle_t) {
      for (size_t m = 0; m < tensors.size(); ++m) {
        std::vector<double> want(tensors[m]->count());
        for (int64_t i = 0; i < tensors[m]->count(); ++i) {
          want[i] = ReduceExpected(op, DTypeOf(tensors[m]->dtype()), n, i);
        }
        ExpectValues(what + " member " + std::to_string(m), *tensors[m], want);
      }
    };
    pending.push_back(std::move(p));
  }
  // Grouped allgather: int32 [rank+1, 2] and float64 [2, 1]; one output per member.
  {
    auto a = Make(HVD_INT32, {R() + 1, 2});
    auto b = Make(HVD_FLOAT64, {2, 1});
    for (int64_t j = 0; j <= R(); ++j) {
      for (int64_t c = 0; c < 2; ++c) a->Set(j * 2 + c, GatherValue(DTypeOf(HVD_INT32), R(), j, c));
    }
    for (int64_t j = 0; j < 2; ++j) b->Set(j, GatherValue(DTypeOf(HVD_FLOAT64), R(), j, 0));
    std::vector<double> want_a, want_b;
    for (int32_t r = 0; r < N(); ++r) {
      for (int64_t j = 0; j <= r; ++j) {
        for (int64_t c = 0; c < 2; ++c) want_a.push_back(GatherValue(DTypeOf(HVD_INT32), r, j, c));
      }
      for (int64_t j = 0; j < 2; ++j) want_b.push_back(GatherValue(DTypeOf(HVD_FLOAT64), r, j, 0));
    }
    hvd_tensor_t descs[2] = {a->Desc(), b->Desc()};
    hvd_op_options_t o = Options("grouped.ag");
    Pending p;
    p.what = "grouped allgather";
    Require(hvd_grouped_allgather(descs, 2, &o, &p.handle), p.what);
    p.keep = {a, b};
    const int64_t rows_a = static_cast<int64_t>(want_a.size() / 2);
    const int64_t rows_b = 2 * N();
    const std::string what = p.what;
    p.check = [=](hvd_handle_t h) {
      int32_t outputs = 0;
      Require(hvd_num_outputs(h, &outputs), what + ": hvd_num_outputs");
      if (outputs != 2) Fail(what + ": expected 2 outputs, got " + std::to_string(outputs));
      ExpectOutput(h, 0, what + " member 0", HVD_INT32, {rows_a, 2}, want_a);
      ExpectOutput(h, 1, what + " member 1", HVD_FLOAT64, {rows_b, 1}, want_b);
    };
    pending.push_back(std::move(p));
  }
  // Grouped reducescatter: float32 [2n+1] and int64 [n, 3], Sum.
  {
    const DType& f32 = DTypeOf(HVD_FLOAT32);
    const DType& i64 = DTypeOf(HVD_INT64);
    auto a = Make(HVD_FLOAT32, {2 * N() + 1});
    auto b = Make(HVD_INT64, {N(), 3});
    for (int64_t i = 0; i < a->count(); ++i) a->Set(i, ReduceInput(HVD_OP_SUM, f32, R(), N(), i));
    for (int64_t i = 0; i < b->count(); ++i) b->Set(i, ReduceInput(HVD_OP_SUM, i64, R(), N(), i));
    int64_t offset_a = 0;
    for (int32_t r = 0; r < R(); ++r) offset_a += ScatterRows(2 * N() + 1, r);
    std::vector<double> want_a, want_b;
    for (int64_t i = offset_a; i < offset_a + ScatterRows(2 * N() + 1, R()); ++i) {
      want_a.push_back(ReduceExpected(HVD_OP_SUM, f32, N(), i));
    }
    for (int64_t i = R() * 3; i < R() * 3 + 3; ++i) {
      want_b.push_back(ReduceExpected(HVD_OP_SUM, i64, N(), i));
    }
    hvd_tensor_t descs[2] = {a->Desc(), b->Desc()};
    hvd_op_options_t o = Options("grouped.rs");
    Pending p;
    p.what = "grouped reducescatter";
    Require(hvd_grouped_reducescatter(descs, 2, &o, &p.handle), p.what);
    p.keep = {a, b};
    const std::string what = p.what;
    const int64_t rows_a = ScatterRows(2 * N() + 1, R());
    p.check = [=](hvd_handle_t h) {
      ExpectOutput(h, 0, what + " member 0", HVD_FLOAT32, {rows_a}, want_a);
      ExpectOutput(h, 1, what + " member 1", HVD_INT64, {1, 3}, want_b);
    };
    pending.push_back(std::move(p));
  }
  // Grouped reducescatter of three float32 members, Average with prescale 2 and postscale 0.5:
  // one fused collective (Horovod's layout: every member's rows for rank 0, then for rank 1...),
  // shapes [2n+1, 3] (uneven), [n-1] (the last rank gets nothing) and [3n, 2, 2].
  {
    const DType& f32 = DTypeOf(HVD_FLOAT32);
    const std::vector<std::vector<int64_t>> shapes = {{2 * N() + 1, 3}, {N() - 1}, {3 * N(), 2, 2}};
    std::vector<std::shared_ptr<Tensor>> ins;
    std::vector<hvd_tensor_t> descs;
    std::vector<std::vector<double>> wants;
    std::vector<std::vector<int64_t>> out_shapes;
    for (const auto& shape : shapes) {
      auto in = Make(HVD_FLOAT32, shape);
      for (int64_t i = 0; i < in->count(); ++i) {
        in->Set(i, ReduceInput(HVD_OP_AVERAGE, f32, R(), N(), i));
      }
      const int64_t row = shape[0] == 0 ? 0 : in->count() / shape[0];
      int64_t first = 0;
      for (int32_t r = 0; r < R(); ++r) first += ScatterRows(shape[0], r);
      std::vector<double> want;
      for (int64_t i = first * row; i < (first + ScatterRows(shape[0], R())) * row; ++i) {
        want.push_back(ReduceExpected(HVD_OP_AVERAGE, f32, N(), i, 2.0, 0.5));
      }
      std::vector<int64_t> out_shape = shape;
      out_shape[0] = ScatterRows(shape[0], R());
      ins.push_back(in);
      descs.push_back(in->Desc());
      wants.push_back(std::move(want));
      out_shapes.push_back(std::move(out_shape));
    }
    hvd_op_options_t o = Options("grouped.rs.fused");
    o.reduce_op = HVD_OP_AVERAGE;
    o.prescale_factor = 2.0;
    o.postscale_factor = 0.5;
    Pending p;
    p.what = "grouped reducescatter, three float32 members";
    Require(hvd_grouped_reducescatter(descs.data(), 3, &o, &p.handle), p.what);
    p.keep = ins;
    const std::string what = p.what;
    p.check = [=](hvd_handle_t h) {
      for (int m = 0; m < 3; ++m) {
        ExpectOutput(h, m, what + " member " + std::to_string(m), HVD_FLOAT32, out_shapes[m],
                     wants[m]);
      }
    };
    pending.push_back(std::move(p));
  }
  FinishAll(&pending);
}

void Fused() {
  // 160 small allreduces enqueued before the first wait, twice (the second round is served
  // from the response cache): float32, int32 and float64, every tenth an Average.
  for (int round = 0; round < 2; ++round) {
    std::vector<Pending> pending;
    for (int t = 0; t < 160; ++t) {
      const hvd_dtype_t dtype = t < 100 ? HVD_FLOAT32 : (t < 130 ? HVD_INT32 : HVD_FLOAT64);
      const DType& d = DTypeOf(dtype);
      const hvd_reduce_op_t op = t % 10 == 9 ? HVD_OP_AVERAGE : HVD_OP_SUM;
      auto x = Make(dtype, {t < 100 ? 16 : 8});
      for (int64_t i = 0; i < x->count(); ++i) x->Set(i, ReduceInput(op, d, R(), N(), i + t));
      const std::string what = "fused allreduce #" + std::to_string(t) + " round " +
                               std::to_string(round) + " " + d.name + " " + ReduceOpName(op);
      hvd_op_options_t o = Options("fused." + std::to_string(t));
      o.reduce_op = op;
      hvd_tensor_t desc = x->Desc();
      Pending p;
      Require(hvd_allreduce(&desc, &desc, &o, &p.handle), what);
      p.what = what;
      p.keep = {x};
      const int32_t n = N();
      p.check = [=](hvd_handle_t) {
        std::vector<double> want(x->count());
        for (int64_t i = 0; i < x->count(); ++i) want[i] = ReduceExpected(op, d, n, i + t);
        ExpectValues(what, *x, want);
      };
      pending.push_back(std::move(p));
    }
    FinishAll(&pending);
  }
}

void FusedAllgather() {
  // 50 small allgathers enqueued before the first wait (float32, then int64, int8, bool and
  // float16 runs, so each run fuses on its own), plus a grouped allgather of four float64
  // members; four rounds: the second from the response cache, the third with changed rows
  // (renegotiated), the fourth from the cache again.
  for (int round = 0; round < 4; ++round) {
    std::vector<Pending> pending;
    for (int t = 0; t < 50; ++t) {
      const hvd_dtype_t dtype = t < 30   ? HVD_FLOAT32
                                : t < 38 ? HVD_INT64
                                : t < 44 ? HVD_INT8
                                : t < 47 ? HVD_BOOL
                                         : HVD_FLOAT16;
      EnqueueFusedGather(&pending, DTypeOf(dtype), t, round, t % 3 + 1);
    }
    EnqueueFusedGatherGroup(&pending, round);
    FinishAll(&pending);
  }
}

}  // namespace hvd_e2e
