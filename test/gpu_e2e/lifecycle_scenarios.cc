// The GPU path across the runtime's lifecycle: shutdown and init again (each init makes its NCCL
// communicators anew; device outputs outlive the runtime that made them), process sets added,
// removed and added again (each a NCCL communicator of its own), and overlapping sets whose ops
// every rank enqueues in its own order.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gpu_worker.h"

namespace hvd_gpu {
namespace {

// An allgather of rank r's r + 1 rows of 2 float32 on set `set` (whose members are `members`);
// the output taken and returned, checked, not freed.
void* GatherKept(const std::string& name, int32_t set, const std::vector<int32_t>& members) {
  const int32_t r = R();
  DevicePtr t = MakeDevice(HVD_FLOAT32, {r + 1, 2}, [r](int64_t i) { return r * 10 + i; });
  hvd_tensor_t d = t->Desc();
  hvd_op_options_t o = Options(name);
  o.process_set_id = set;
  hvd_handle_t h = 0;
  Require(hvd_allgather(&d, &o, &h), "allgather " + name);
  WaitOk(h, "allgather " + name);
  std::vector<double> want;
  int64_t rows = 0;
  for (int32_t m : members) {
    for (int64_t i = 0; i < (m + 1) * 2; ++i) want.push_back(m * 10 + i);
    rows += m + 1;
  }
  hvd_tensor_t out{};
  Require(hvd_output(h, 0, &out), "hvd_output of " + name);
  if (out.ndim != 2 || out.shape[0] != rows || out.shape[1] != 2) {
    Fail("allgather " + name + ": output shape is not [" + std::to_string(rows) + ", 2]");
  }
  if (DeviceOutputsExpected("ALLGATHER") && out.device != Ctx().device) {
    Fail("allgather " + name + ": output on device " + std::to_string(out.device) +
         ", not on this rank's device " + std::to_string(Ctx().device));
  }
  HostTensor got(HVD_FLOAT32, {rows, 2});
  RequireCuda(
      cudaMemcpy(got.data(), out.data, got.nbytes(),
                 out.device == HVD_DEVICE_CPU ? cudaMemcpyHostToHost : cudaMemcpyDeviceToHost),
      "copying the output of " + name);
  ExpectValues("allgather " + name, got, want);
  Require(hvd_release(h), "hvd_release of " + name);
  return out.data;
}

std::vector<int32_t> AllRanks() {
  std::vector<int32_t> all;
  for (int32_t r = 0; r < N(); ++r) all.push_back(r);
  return all;
}

// Adds the set of `members` (every rank makes the call), runs an allreduce and an allgather of
// device tensors in it on its members, removes it.
void UseDynamicSet(const std::string& tag, const std::vector<int32_t>& members) {
  int32_t id = -1;
  Require(hvd_add_process_set(members.data(), static_cast<int32_t>(members.size()), &id),
          tag + ": hvd_add_process_set " + List(members));
  bool member = false;
  double sum = 0;
  for (int32_t m : members) {
    member = member || m == R();
    sum += m + 1;
  }
  if (member) {
    DeviceSumAllreduce(tag + ".sum", R() + 1, sum, id);
    hvd_free(GatherKept(tag + ".gather", id, members));
  }
  GlobalBarrier(tag + ": barrier before hvd_remove_process_set");
  Require(hvd_remove_process_set(id), tag + ": hvd_remove_process_set");
}

}  // namespace

void Lifecycle() {
  const int32_t n = N();
  std::vector<void*> kept;  // device outputs of the runtime before, freed after its shutdown
  hvd_handle_t orphan = 0;
  DevicePtr orphan_tensor;
  std::vector<Pending> in_flight;
  for (int round = 0; round < 3; ++round) {
    const std::string tag = "gpu.life." + std::to_string(round);
    Require(hvd_shutdown(), tag + ": hvd_shutdown");
    FinishAll(&in_flight);  // after the shutdown: each must have completed, with the sum
    if (orphan != 0) {
      // Rank 0's op that nobody else submitted: shutdown completed it as aborted.
      const hvd_status_t s = hvd_wait(orphan, kWaitSeconds);
      if (s != HVD_ABORTED) {
        Fail(tag + ": a GPU op pending at shutdown ended with status " + std::to_string(s) +
             ", not HVD_ABORTED");
      }
      hvd_release(orphan);
      orphan = 0;
    }
    // Device outputs outlive the runtime that made them (c_api.h: hvd_free after shutdown).
    for (void* p : kept) hvd_free(p);
    kept.clear();
    // Round 1 on: process sets may be added and removed after init.
    if (round == 1) setenv("HVD_DYNAMIC_PROCESS_SETS", "1", 1);
    Require(hvd_init(), tag + ": hvd_init");
    int32_t rank = -1, size = -1;
    Require(hvd_rank(&rank), tag + ": hvd_rank");
    Require(hvd_size(&size), tag + ": hvd_size");
    if (rank != R() || size != n) {
      Fail(tag + ": rank/size " + std::to_string(rank) + "/" + std::to_string(size) +
           " after init again, not " + std::to_string(R()) + "/" + std::to_string(n));
    }
    // The same names in every round; a NCCL communicator made anew by each runtime.
    DeviceSumAllreduce("gpu.life.x", R() + 1, n * (n + 1) / 2.0);
    kept.push_back(GatherKept("gpu.life.gather", 0, AllRanks()));
    if (round >= 1 && n >= 2) {
      // A set of the last two ranks (of the last one at 2 ranks: not the global set), removed
      // and added again: a communicator of its own each time.
      const std::vector<int32_t> set =
          n >= 3 ? std::vector<int32_t>{n - 2, n - 1} : std::vector<int32_t>{n - 1};
      UseDynamicSet(tag + ".set", set);
      UseDynamicSet(tag + ".set_again", set);
    }
    if (round == 1 && R() == 0 && n >= 2) {
      orphan_tensor = MakeDevice(HVD_FLOAT32, {5}, [](int64_t) { return 1.0; });
      hvd_tensor_t d = orphan_tensor->Desc();
      hvd_op_options_t o = Options("gpu.life.orphan");
      Require(hvd_allreduce(&d, &d, &o, &orphan), tag + ": the orphan allreduce");
    }
    if (round == 0) {
      // The last step's gradients, then hvd_shutdown: the barrier enqueued after them completes
      // on the cycle while their completions (HVD_GPU_ASYNC_COMPLETION=1) may still be in
      // flight. The shutdown every rank agreed on lets them finish (GpuGroup::Drain) instead of
      // failing them as ops it never ran.
      for (int k = 0; k < 8; ++k) {
        const std::string name = "gpu.life.in_flight." + std::to_string(k);
        DevicePtr t = MakeDevice(HVD_FLOAT32, {16384}, [](int64_t) { return R() + 1.0; });
        hvd_tensor_t d = t->Desc();
        hvd_op_options_t o = Options(name);
        Pending p;
        Require(hvd_allreduce(&d, &d, &o, &p.handle), "allreduce " + name);
        p.what = "allreduce " + name + " in flight at hvd_shutdown";
        p.keep = {t};
        p.check = [=](hvd_handle_t) {
          ExpectDevice(p.what, *t, std::vector<double>(16384, n * (n + 1) / 2.0));
        };
        in_flight.push_back(std::move(p));
      }
    }
    GlobalBarrier(tag + ": barrier");
  }
  // Left initialized for main's final barrier and shutdown; the last outputs freed now.
  for (void* p : kept) hvd_free(p);
}

void OverlappingSets() {
  // Three ranks or more: sets {0,1}, {1,2} and {0,2}, each a NCCL communicator on the same
  // device stream of its members. Every rank enqueues its ops in the sets it is in, starting
  // with a different set than its neighbours (a cycle: 0 waits on A for 1, 1 on B for 2, 2 on C
  // for 0, if the runtime ran them in the order enqueued), plus global ones, and only then
  // waits: the runtime must order them the same on every member.
  const int32_t n = N(), r = R();
  if (n < 3) {
    if (r == 0) std::printf("[overlapping_sets] skipped: needs 3 ranks or more\n");
    return;
  }
  Require(hvd_shutdown(), "hvd_shutdown");
  setenv("HVD_DYNAMIC_PROCESS_SETS", "1", 1);
  Require(hvd_init(), "hvd_init with dynamic process sets");
  Ctx().even_set = -1;  // the sets of the first init are gone
  const std::vector<std::vector<int32_t>> members = {{0, 1}, {1, 2}, {0, 2}};
  std::vector<int32_t> ids;
  for (const auto& m : members) {
    int32_t id = -1;
    Require(hvd_add_process_set(m.data(), static_cast<int32_t>(m.size()), &id),
            "hvd_add_process_set " + List(m));
    ids.push_back(id);
  }
  std::vector<Pending> pending;
  for (int round = 0; round < 3; ++round) {
    for (int j = 0; j < 3; ++j) {
      const int s = (r + j) % 3;  // rank r starts with set r % 3
      const auto& m = members[s];
      if (std::find(m.begin(), m.end(), r) == m.end()) continue;
      const double sum = (m[0] + 1) + (m[1] + 1);
      const std::string name = "gpu.overlap." + std::to_string(round) + "." + std::to_string(s);
      DevicePtr t = MakeDevice(HVD_FLOAT32, {257}, [r](int64_t i) { return (r + 1) * (i % 4); });
      hvd_tensor_t d = t->Desc();
      hvd_op_options_t o = Options(name);
      o.process_set_id = ids[s];
      Pending p;
      Require(hvd_allreduce(&d, &d, &o, &p.handle), "allreduce " + name);
      p.what = "allreduce " + name + " in set " + List(m);
      p.keep = {t};
      p.check = [=](hvd_handle_t) {
        std::vector<double> want(257);
        for (int64_t i = 0; i < 257; ++i) want[i] = sum * (i % 4);
        ExpectDevice(p.what, *t, want);
      };
      pending.push_back(std::move(p));
    }
    // And one over every rank.
    const std::string name = "gpu.overlap.all." + std::to_string(round);
    DevicePtr t = MakeDevice(HVD_FLOAT32, {33}, [r](int64_t) { return r + 1.0; });
    hvd_tensor_t d = t->Desc();
    hvd_op_options_t o = Options(name);
    Pending p;
    Require(hvd_allreduce(&d, &d, &o, &p.handle), "allreduce " + name);
    p.what = "allreduce " + name;
    p.keep = {t};
    p.check = [=](hvd_handle_t) {
      ExpectDevice(p.what, *t, std::vector<double>(33, n * (n + 1) / 2.0));
    };
    pending.push_back(std::move(p));
  }
  FinishAll(&pending);
  GlobalBarrier("barrier before removing the sets");
  for (int32_t id : ids) Require(hvd_remove_process_set(id), "hvd_remove_process_set");
}

}  // namespace hvd_gpu
