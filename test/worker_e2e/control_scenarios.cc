// Process sets: static (at init) and dynamic (add/remove), ops on a subset of the ranks.
#include <cstdlib>
#include <memory>

#include "scenarios.h"

namespace hvd_e2e {
namespace {

void InitAndRecordTopology(const std::string& what) {
  Require(hvd_init(), what);
  Require(hvd_rank(&Ctx().rank), what + ": hvd_rank");
  Require(hvd_size(&Ctx().size), what + ": hvd_size");
}

std::vector<int32_t> SetRanks(int32_t id) {
  int32_t count = 0;
  Require(hvd_process_set_ranks(id, nullptr, 0, &count), "hvd_process_set_ranks count");
  std::vector<int32_t> ranks(count);
  Require(hvd_process_set_ranks(id, ranks.data(), count, &count), "hvd_process_set_ranks");
  return ranks;
}

std::vector<int32_t> SetIds() {
  int32_t count = 0;
  Require(hvd_process_set_ids(nullptr, 0, &count), "hvd_process_set_ids count");
  std::vector<int32_t> ids(count);
  Require(hvd_process_set_ids(ids.data(), count, &count), "hvd_process_set_ids");
  return ids;
}

// Allreduce (Sum, Average, Max over three dtypes), allgather, broadcast from the last member
// and a barrier, all on set `id` whose members are `ranks`; this rank is a member.
void OpsOnSet(int32_t id, const std::vector<int32_t>& ranks, const std::string& tag) {
  const int32_t n = static_cast<int32_t>(ranks.size());
  int32_t pos = 0;
  while (ranks[pos] != R()) ++pos;
  std::vector<Pending> pending;
  for (hvd_dtype_t dtype : {HVD_FLOAT32, HVD_INT64, HVD_BFLOAT16}) {
    const DType& d = DTypeOf(dtype);
    for (hvd_reduce_op_t op : {HVD_OP_SUM, HVD_OP_AVERAGE, HVD_OP_MAX}) {
      auto t = Make(dtype, {9});
      for (int64_t i = 0; i < 9; ++i) t->Set(i, ReduceInput(op, d, pos, n, i));
      const std::string what =
          tag + ": allreduce " + ReduceOpName(op) + " " + d.name + " on set " + List(ranks);
      hvd_op_options_t o = Options(tag + ".ar." + d.name + ReduceOpName(op));
      o.reduce_op = op;
      o.process_set_id = id;
      hvd_tensor_t desc = t->Desc();
      Pending p;
      Require(hvd_allreduce(&desc, &desc, &o, &p.handle), what);
      p.what = what;
      p.keep = {t};
      p.check = [=](hvd_handle_t) {
        std::vector<double> want(9);
        for (int64_t i = 0; i < 9; ++i) want[i] = ReduceExpected(op, d, n, i);
        ExpectValues(what, *t, want);
      };
      pending.push_back(std::move(p));
    }
  }
  {  // allgather: member at position p gives p+1 rows holding its global rank
    auto t = Make(HVD_INT32, {pos + 1, 2});
    t->Fill(R());
    std::vector<double> want;
    for (int32_t p = 0; p < n; ++p) want.insert(want.end(), 2 * (p + 1), ranks[p]);
    const std::string what = tag + ": allgather on set " + List(ranks);
    hvd_op_options_t o = Options(tag + ".ag");
    o.process_set_id = id;
    hvd_tensor_t desc = t->Desc();
    Pending p;
    Require(hvd_allgather(&desc, &o, &p.handle), what);
    p.what = what;
    p.keep = {t};
    const int64_t rows = n * (n + 1) / 2;
    p.check = [=](hvd_handle_t h) { ExpectOutput(h, 0, what, HVD_INT32, {rows, 2}, want); };
    pending.push_back(std::move(p));
  }
  {  // broadcast from the last member, named by its global rank
    auto t = Make(HVD_FLOAT64, {3});
    t->Fill(R() == ranks.back() ? 7.5 : -1);
    const std::string what = tag + ": broadcast from global rank " + std::to_string(ranks.back()) +
                             " on set " + List(ranks);
    hvd_op_options_t o = Options(tag + ".bc");
    o.process_set_id = id;
    o.root_rank = ranks.back();
    hvd_tensor_t desc = t->Desc();
    Pending p;
    Require(hvd_broadcast(&desc, &desc, &o, &p.handle), what);
    p.what = what;
    p.keep = {t};
    p.check = [=](hvd_handle_t) { ExpectValues(what, *t, {7.5, 7.5, 7.5}); };
    pending.push_back(std::move(p));
  }
  Pending b;
  b.what = tag + ": barrier on set " + List(ranks);
  Require(hvd_barrier(id, &b.handle), b.what);
  pending.push_back(std::move(b));
  FinishAll(&pending);
}

// Calls on a set this rank is not a member of fail at once with HVD_INVALID_ARGUMENT.
void ExpectNotMember(int32_t id, const std::string& what) {
  Tensor t(HVD_FLOAT32, {2});
  hvd_tensor_t d = t.Desc();
  hvd_op_options_t o = Options("not-a-member");
  o.process_set_id = id;
  hvd_handle_t h = 0;
  ExpectStatus(hvd_allreduce(&d, &d, &o, &h), HVD_INVALID_ARGUMENT, what + ": allreduce");
  ExpectStatus(hvd_barrier(id, &h), HVD_INVALID_ARGUMENT, what + ": barrier");
}

void CheckMembership(int32_t id, const std::vector<int32_t>& want, const std::string& what) {
  const std::vector<int32_t> got = SetRanks(id);
  if (got != want)
    Fail(what + ": ranks of set " + std::to_string(id) + ": expected " + List(want) + ", got " +
         List(got));
  int32_t size = -1, rank = -2, included = -1;
  Require(hvd_process_set_size(id, &size), what + ": hvd_process_set_size");
  Require(hvd_process_set_rank(id, &rank), what + ": hvd_process_set_rank");
  Require(hvd_process_set_included(id, &included), what + ": hvd_process_set_included");
  int32_t pos = -1;
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] == R()) pos = static_cast<int32_t>(i);
  }
  if (size != static_cast<int32_t>(want.size()) || rank != pos || included != (pos >= 0)) {
    Fail(what + ": set " + std::to_string(id) + ": expected size/rank/included " +
         std::to_string(want.size()) + "/" + std::to_string(pos) + "/" + std::to_string(pos >= 0) +
         ", got " + std::to_string(size) + "/" + std::to_string(rank) + "/" +
         std::to_string(included));
  }
}

}  // namespace

void ProcessSetsStatic() {
  std::vector<int32_t> evens, odds;
  int32_t size = 0;
  Require(hvd_launch_topology(nullptr, &size), "hvd_launch_topology");  // needed before init
  for (int32_t r = 0; r < size; ++r) (r % 2 ? odds : evens).push_back(r);
  std::vector<int32_t> flat = evens;
  flat.insert(flat.end(), odds.begin(), odds.end());
  const int32_t sizes[2] = {static_cast<int32_t>(evens.size()), static_cast<int32_t>(odds.size())};
  // A negative set count is refused naming it (until 2026-12-02 it was an init without sets).
  if (hvd_init_with_process_sets(flat.data(), sizes, -1) != HVD_INVALID_ARGUMENT ||
      std::string(hvd_last_error()).find("num_sets -1") == std::string::npos) {
    Fail(std::string("hvd_init_with_process_sets with num_sets -1 was not refused: ") +
         hvd_last_error());
    hvd_shutdown();
  }
  Require(hvd_init_with_process_sets(flat.data(), sizes, 2), "hvd_init_with_process_sets");
  Require(hvd_rank(&Ctx().rank), "hvd_rank");
  Require(hvd_size(&Ctx().size), "hvd_size");
  const std::vector<int32_t> ids = SetIds();
  if (ids != std::vector<int32_t>{0, 1, 2})
    Fail("process set ids: expected [0, 1, 2], got " + List(ids));
  CheckMembership(1, evens, "static sets");
  CheckMembership(2, odds, "static sets");
  const int32_t mine = R() % 2 ? 2 : 1, other = 3 - mine;
  // A global allreduce in flight while the set's ops run.
  Tensor g(HVD_INT32, {3});
  g.Fill(1);
  hvd_tensor_t gd = g.Desc();
  hvd_op_options_t go = Options("static.global");
  hvd_handle_t gh;
  Require(hvd_allreduce(&gd, &gd, &go, &gh), "global allreduce beside the sets");
  OpsOnSet(mine, mine == 1 ? evens : odds, "static");
  WaitRelease(gh, "global allreduce beside the sets");
  ExpectValues("global allreduce beside the sets", g, std::vector<double>(3, N()));
  ExpectNotMember(other, "static set this rank is not in");
  {  // a broadcast root outside the set is rejected at once
    Tensor t(HVD_FLOAT32, {1});
    hvd_tensor_t d = t.Desc();
    hvd_op_options_t o = Options("static.bad-root");
    o.process_set_id = mine;
    o.root_rank = mine == 1 ? 1 : 0;  // the other parity
    hvd_handle_t h = 0;
    ExpectStatus(hvd_broadcast(&d, &d, &o, &h), HVD_INVALID_ARGUMENT, "broadcast root outside set");
  }
  int32_t id = -1;
  const int32_t zero = 0;
  ExpectStatus(hvd_add_process_set(&zero, 1, &id), HVD_PRECONDITION_FAILED,
               "hvd_add_process_set without HVD_DYNAMIC_PROCESS_SETS");
  GlobalBarrier("barrier before shutdown");
  Require(hvd_shutdown(), "hvd_shutdown");
}

void ProcessSetsDynamic() {
  setenv("HVD_DYNAMIC_PROCESS_SETS", "1", 1);
  InitAndRecordTopology("hvd_init with HVD_DYNAMIC_PROCESS_SETS=1");
  unsetenv("HVD_DYNAMIC_PROCESS_SETS");
  const int32_t n = N();
  // A = {n-1}; B = {0..n-2} given in descending order (the runtime sorts).
  std::vector<int32_t> a = {n - 1}, b_desc, b;
  for (int32_t r = n - 2; r >= 0; --r) b_desc.push_back(r);
  for (int32_t r = 0; r <= n - 2; ++r) b.push_back(r);
  int32_t id_a = -1, id_b = -1;
  Require(hvd_add_process_set(a.data(), 1, &id_a), "add process set " + List(a));
  Require(hvd_add_process_set(b_desc.data(), static_cast<int32_t>(b_desc.size()), &id_b),
          "add process set " + List(b_desc));
  const std::vector<int32_t> ids = SetIds();
  if (ids != std::vector<int32_t>{0, id_a, id_b}) {
    Fail("process set ids after two adds: expected " + List({0, id_a, id_b}) + ", got " +
         List(ids));
  }
  CheckMembership(id_a, a, "dynamic set A");
  CheckMembership(id_b, b, "dynamic set B");
  OpsOnSet(R() == n - 1 ? id_a : id_b, R() == n - 1 ? a : b, "dynamic");
  ExpectNotMember(R() == n - 1 ? id_b : id_a, "dynamic set this rank is not in");
  {
    std::vector<int32_t> all, bad = {0, n};
    for (int32_t r = 0; r < n; ++r) all.push_back(r);
    int32_t id = -1;
    ExpectStatus(hvd_add_process_set(all.data(), n, &id), HVD_INVALID_ARGUMENT,
                 "adding a set equal to the global set");
    ExpectStatus(hvd_add_process_set(bad.data(), 2, &id), HVD_INVALID_ARGUMENT,
                 "adding a set with rank " + std::to_string(n));
    ExpectStatus(hvd_remove_process_set(0), HVD_INVALID_ARGUMENT, "removing the global set");
    ExpectStatus(hvd_remove_process_set(99), HVD_NOT_FOUND, "removing unknown set 99");
  }
  Require(hvd_remove_process_set(id_a), "remove process set A");
  if (SetIds() != std::vector<int32_t>{0, id_b}) {
    Fail("process set ids after removing A: expected " + List({0, id_b}) + ", got " +
         List(SetIds()));
  }
  if (R() == n - 1) {
    Tensor t(HVD_FLOAT32, {2});
    hvd_tensor_t d = t.Desc();
    hvd_op_options_t o = Options("dynamic.removed");
    o.process_set_id = id_a;
    hvd_handle_t h = 0;
    ExpectStatus(hvd_allreduce(&d, &d, &o, &h), HVD_INVALID_ARGUMENT, "allreduce on removed set");
  }
  Require(hvd_remove_process_set(id_b), "remove process set B");
  // The runtime still works on the global set, and sets can be added again.
  SumAllreduce("dynamic.after-remove", R() + 1, n * (n + 1) / 2.0);
  if (n >= 3) {
    std::vector<int32_t> c = {0, n - 1};
    int32_t id_c = -1;
    Require(hvd_add_process_set(c.data(), 2, &id_c), "add process set " + List(c));
    if (R() == 0 || R() == n - 1) SumAllreduce("dynamic.c", R(), n - 1, id_c);
    Require(hvd_remove_process_set(id_c), "remove process set " + List(c));
  }
  GlobalBarrier("barrier before shutdown");
  Require(hvd_shutdown(), "hvd_shutdown");
}

}  // namespace hvd_e2e
