// hvd_gpu_worker: an end-to-end check of libhvd's CUDA tensors through its public C API only,
// run under the real hvdrun (test/gpu_e2e/CMakeLists.txt), on a GPU or on the CUDA emulator:
//
//   hvdrun -np 2 -H localhost:1,127.0.0.1:1 hvd_gpu_worker all
//   LD_PRELOAD=libhvd_gpu_emulator.so HVD_GPU_EMU_DEVICES=4 hvdrun -np 4 hvd_gpu_worker allreduce
//
// Every tensor is memory of the rank's CUDA device (local_rank % device count), written and read
// back only with cudaMemcpy/cudaMemset, and every result is compared with one computed on the
// host. Each argument names a scenario (gpu_worker.h); they run in the given order. A rank
// prints "[scenario] rank R: ..." for each difference and exits 1 if there was any; rank 0
// prints "[scenario] ok on N ranks" for each passing one. Without a CUDA device (or a libhvd
// without CUDA) every rank says why and exits 77, which ctest counts as skipped.
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "gpu_worker.h"

namespace hvd_gpu {
namespace {

// The even ranks: the process set registered at init (hvd_init_with_process_sets), since adding
// one later needs HVD_DYNAMIC_PROCESS_SETS=1.
std::vector<int32_t> EvenRanks(int32_t size) {
  std::vector<int32_t> evens;
  for (int32_t r = 0; r < size; r += 2) evens.push_back(r);
  return evens;
}

// A call that must be refused at once with HVD_INVALID_ARGUMENT, its message containing every
// one of `needles`, no handle written. Were it queued instead, it is waited for (every rank makes
// the same calls) so that the job goes on to report the rest.
void ExpectRefused(hvd_status_t s, hvd_handle_t handle, const std::string& what,
                   const std::vector<std::string>& needles) {
  constexpr hvd_handle_t kUntouched = -7;
  const std::string message = s == HVD_OK ? "" : hvd_last_error();
  if (s != HVD_INVALID_ARGUMENT) {
    Fail(what + ": expected HVD_INVALID_ARGUMENT at the call, got " + hvd_status_name(s) +
         (message.empty() ? "" : " (" + message + ")"));
  }
  for (const std::string& needle : needles) {
    if (s != HVD_OK && message.find(needle) == std::string::npos) {
      Fail(what + ": the message '" + message + "' does not say '" + needle + "'");
    }
  }
  if (s == HVD_OK) {
    hvd_wait(handle, kWaitSeconds);
    hvd_release(handle);
  } else if (handle != kUntouched) {
    Fail(what + ": the refused call wrote a handle (" + std::to_string(handle) + ")");
  }
}

}  // namespace

void ProcessSet() {
  if (Ctx().even_set < 0) {
    if (R() == 0) std::printf("[process_set] one rank: no set of the even ranks to test\n");
    return;
  }
  const int32_t id = Ctx().even_set;
  const std::vector<int32_t> evens = EvenRanks(N());
  const bool member = R() % 2 == 0;
  int32_t count = 0, included = -1, set_rank = -2, set_size = -1;
  std::vector<int32_t> ranks(evens.size() + 1, -1);
  Require(hvd_process_set_ranks(id, ranks.data(), static_cast<int32_t>(ranks.size()), &count),
          "hvd_process_set_ranks");
  ranks.resize(std::max(count, 0));
  Require(hvd_process_set_included(id, &included), "hvd_process_set_included");
  Require(hvd_process_set_rank(id, &set_rank), "hvd_process_set_rank");
  Require(hvd_process_set_size(id, &set_size), "hvd_process_set_size");
  if (ranks != evens || included != (member ? 1 : 0) || set_rank != (member ? R() / 2 : -1) ||
      set_size != static_cast<int32_t>(evens.size())) {
    Fail("set " + std::to_string(id) + ": expected ranks " + List(evens) + ", included " +
         std::to_string(member) + ", rank " + std::to_string(member ? R() / 2 : -1) + ", size " +
         std::to_string(evens.size()) + "; got " + List(ranks) + ", " + std::to_string(included) +
         ", " + std::to_string(set_rank) + ", " + std::to_string(set_size));
  }
  if (!member) {
    // Not a member: the API refuses its calls on the set at once, so it takes no part.
    DevicePtr t = MakeDevice(HVD_FLOAT32, {2}, [](int64_t) { return 1.0; });
    hvd_tensor_t d = t->Desc();
    hvd_op_options_t o = Options("gpu.set.not-a-member");
    o.process_set_id = id;
    hvd_handle_t h = -7;
    ExpectRefused(hvd_allreduce(&d, &d, &o, &h), h, "allreduce on a set without this rank",
                  {"is not a member of process set " + std::to_string(id)});
    return;
  }
  std::vector<Pending> pending;
  EnqueueSetAllreduce(&pending, id, R() / 2, static_cast<int32_t>(evens.size()));
  EnqueueSetAllgather(&pending, id, evens);
  FinishAll(&pending);
}

void Join() {
  // Rank 0 joins with its device; the others run two allreduces, to which it contributes zeros
  // (on that device); then all but the last join, and the last runs one allreduce alone (every
  // other rank joined) before it joins too: hvd_join_result must name it.
  const int32_t n = N(), last = n - 1;
  hvd_handle_t join = 0;
  if (R() == 0) Require(hvd_join(HVD_DEVICE_CUDA(Ctx().device), &join), "hvd_join on rank 0");
  if (R() != 0) {
    // Element i of rank r: (r + 1) * (i % 7 + 1); the sum leaves rank 0 out.
    double active = 0;
    for (int32_t r = 1; r < n; ++r) active += r + 1;
    std::vector<Pending> pending;
    for (const auto& [dtype, shape] :
         {std::pair<hvd_dtype_t, std::vector<int64_t>>{HVD_FLOAT32, {17, 17, 17}},
          std::pair<hvd_dtype_t, std::vector<int64_t>>{HVD_INT32, {3, 7}}}) {
      DevicePtr t = MakeDevice(dtype, shape, [](int64_t i) { return (R() + 1) * (i % 7 + 1); });
      const std::string what = std::string("allreduce ") + DTypeOf(dtype).name + " " +
                               Shape(shape) + " with rank 0 joined";
      hvd_tensor_t d = t->Desc();
      hvd_op_options_t o = Options(std::string("gpu.join.") + DTypeOf(dtype).name);
      Pending p;
      Require(hvd_allreduce(&d, &d, &o, &p.handle), what);
      p.what = what;
      p.keep = {t};
      p.check = [=](hvd_handle_t) {
        std::vector<double> want(t->count());
        for (int64_t i = 0; i < t->count(); ++i) want[i] = active * static_cast<double>(i % 7 + 1);
        ExpectDevice(what, *t, want);
      };
      pending.push_back(std::move(p));
    }
    FinishAll(&pending);
    if (R() != last) Require(hvd_join(HVD_DEVICE_CUDA(Ctx().device), &join), "hvd_join");
  }
  if (R() == last && last != 0) {
    DevicePtr t = MakeDevice(HVD_FLOAT64, {5}, [](int64_t i) { return (R() + 1.0) * (i + 1); });
    hvd_tensor_t d = t->Desc();
    hvd_op_options_t o = Options("gpu.join.last");
    hvd_handle_t h = 0;
    const std::string what = "allreduce float64 on the last rank, every other rank joined";
    Require(hvd_allreduce(&d, &d, &o, &h), what);
    WaitRelease(h, what);
    std::vector<double> want;
    for (int64_t i = 0; i < 5; ++i) want.push_back((R() + 1.0) * (i + 1));
    ExpectDevice(what, *t, want);
    Require(hvd_join(HVD_DEVICE_CUDA(Ctx().device), &join), "hvd_join on the last rank");
  }
  WaitOk(join, "join");
  int32_t last_joined = -1;
  Require(hvd_join_result(join, &last_joined), "hvd_join_result");
  Require(hvd_release(join), "hvd_release of the join");
  if (last_joined != last) {
    Fail("join: last joined rank " + std::to_string(last_joined) + ", expected " +
         std::to_string(last));
  }
  // Nobody is joined any more: an allreduce sums every rank again.
  DeviceSumAllreduce("gpu.join.after", R() + 1, n * (n + 1) / 2.0);
}

void BadDevice() {
  const int dev = Ctx().device;
  const std::string not_device = "is not memory of CUDA device " + std::to_string(dev);
  // Host memory (malloc) described as memory of this rank's device, enough for every op below.
  const size_t floats = static_cast<size_t>(std::max(8, N()));
  auto* host = static_cast<float*>(std::malloc(floats * sizeof(float)));
  if (host == nullptr) Die("malloc", HVD_INTERNAL);
  for (size_t i = 0; i < floats; ++i) host[i] = 1.0f;
  void* pinned = nullptr;
  RequireCuda(cudaHostAlloc(&pinned, 8 * sizeof(float), cudaHostAllocDefault), "cudaHostAlloc");
  const auto describe = [](void* data, int64_t rows, int32_t device) {
    hvd_tensor_t t;
    std::memset(&t, 0, sizeof(t));
    t.data = data;
    t.dtype = HVD_FLOAT32;
    t.ndim = 1;
    t.shape[0] = rows;
    t.device = device;
    return t;
  };
  hvd_tensor_t bad = describe(host, 8, HVD_DEVICE_CUDA(dev));
  hvd_tensor_t bad_pinned = describe(pinned, 8, HVD_DEVICE_CUDA(dev));
  DevicePtr good = MakeDevice(HVD_FLOAT32, {8}, [](int64_t) { return 1.0; });
  hvd_tensor_t good_desc = good->Desc();
  hvd_handle_t h = -7;

  hvd_op_options_t o = Options("gpu.bad.host");
  ExpectRefused(hvd_allreduce(&bad, &bad, &o, &h), h, "allreduce of host memory as CUDA memory",
                {"'gpu.bad.host'", not_device, "host memory"});
  o = Options("gpu.bad.pinned");
  ExpectRefused(hvd_allreduce(&bad_pinned, &bad_pinned, &o, &h), h,
                "allreduce of pinned host memory (cudaHostAlloc) as CUDA memory",
                {"'gpu.bad.pinned'", not_device});
  o = Options("gpu.bad.output");
  ExpectRefused(hvd_allreduce(&good_desc, &bad, &o, &h), h,
                "allreduce of device memory into host memory described as CUDA memory",
                {"'gpu.bad.output' output", not_device});
  o = Options("gpu.bad.allgather");
  ExpectRefused(hvd_allgather(&bad, &o, &h), h, "allgather of host memory as CUDA memory",
                {"'gpu.bad.allgather'", not_device});
  o = Options("gpu.bad.broadcast");
  ExpectRefused(hvd_broadcast(&bad, &bad, &o, &h), h, "broadcast of host memory as CUDA memory",
                {"'gpu.bad.broadcast'", not_device});
  hvd_tensor_t bad_rows = describe(host, N(), HVD_DEVICE_CUDA(dev));  // one row to each rank
  o = Options("gpu.bad.alltoall");
  ExpectRefused(hvd_alltoall(&bad_rows, &o, &h), h, "alltoall of host memory as CUDA memory",
                {"'gpu.bad.alltoall'", not_device});
  o = Options("gpu.bad.reducescatter");
  ExpectRefused(hvd_reducescatter(&bad, &o, &h), h, "reducescatter of host memory as CUDA memory",
                {"'gpu.bad.reducescatter'", not_device});

  // Grouped ops: a CPU tensor beside a CUDA one (either order), and a member whose memory is not
  // what its descriptor says.
  const std::string cuda = "CUDA device " + std::to_string(dev);
  hvd_tensor_t cpu_then_cuda[2] = {describe(host, 8, HVD_DEVICE_CPU), good_desc};
  hvd_tensor_t cuda_then_cpu[2] = {good_desc, describe(host, 8, HVD_DEVICE_CPU)};
  o = Options("gpu.bad.mixed");
  ExpectRefused(hvd_grouped_allreduce(cpu_then_cuda, cpu_then_cuda, 2, &o, &h), h,
                "grouped allreduce of a CPU and a CUDA tensor",
                {"'gpu.bad.mixed.1' is on " + cuda + " but 'gpu.bad.mixed.0' on the CPU"});
  ExpectRefused(hvd_grouped_allgather(cpu_then_cuda, 2, &o, &h), h,
                "grouped allgather of a CPU and a CUDA tensor",
                {"'gpu.bad.mixed.1' is on " + cuda + " but 'gpu.bad.mixed.0' on the CPU"});
  ExpectRefused(hvd_grouped_reducescatter(cpu_then_cuda, 2, &o, &h), h,
                "grouped reducescatter of a CPU and a CUDA tensor",
                {"'gpu.bad.mixed.1' is on " + cuda + " but 'gpu.bad.mixed.0' on the CPU"});
  o = Options("gpu.bad.mixed_rev");
  ExpectRefused(hvd_grouped_allreduce(cuda_then_cpu, cuda_then_cpu, 2, &o, &h), h,
                "grouped allreduce of a CUDA and a CPU tensor",
                {"'gpu.bad.mixed_rev.1' is on the CPU but 'gpu.bad.mixed_rev.0' on " + cuda});
  DevicePtr good2 = MakeDevice(HVD_FLOAT32, {8}, [](int64_t) { return 2.0; });
  hvd_tensor_t second_is_host[2] = {good2->Desc(), bad};
  o = Options("gpu.bad.grouped");
  ExpectRefused(hvd_grouped_allreduce(second_is_host, second_is_host, 2, &o, &h), h,
                "grouped allreduce whose second member is host memory as CUDA memory",
                {"'gpu.bad.grouped.1'", not_device});

  // With two GPUs or more: memory of another device described as this one's, and a grouped op
  // over tensors of two devices.
  void* other_memory = nullptr;
  if (Ctx().device_count >= 2) {
    const int other = (dev + 1) % Ctx().device_count;
    RequireCuda(cudaSetDevice(other), "cudaSetDevice(" + std::to_string(other) + ")");
    RequireCuda(cudaMalloc(&other_memory, 8 * sizeof(float)), "cudaMalloc on the other device");
    RequireCuda(cudaSetDevice(dev), "cudaSetDevice(" + std::to_string(dev) + ")");
    hvd_tensor_t elsewhere = describe(other_memory, 8, HVD_DEVICE_CUDA(dev));
    o = Options("gpu.bad.elsewhere");
    ExpectRefused(hvd_allreduce(&elsewhere, &elsewhere, &o, &h), h,
                  "allreduce of another GPU's memory described as this one's",
                  {"'gpu.bad.elsewhere'", not_device, "it is on device " + std::to_string(other)});
    hvd_tensor_t two_gpus[2] = {good_desc, describe(other_memory, 8, HVD_DEVICE_CUDA(other))};
    o = Options("gpu.bad.two_gpus");
    ExpectRefused(hvd_grouped_allreduce(two_gpus, two_gpus, 2, &o, &h), h,
                  "grouped allreduce of tensors on two GPUs",
                  {"'gpu.bad.two_gpus.1' is on CUDA device " + std::to_string(other) +
                   " but 'gpu.bad.two_gpus.0' on " + cuda});
  }

  // The refusals left no CUDA error behind for the caller's next CUDA call (docs/gpu.md), and
  // nothing was written to the memory refused.
  const cudaError_t pending_error = cudaGetLastError();
  if (pending_error != cudaSuccess) {
    Fail(std::string("a CUDA error was left pending after the refused calls: ") +
         cudaGetErrorName(pending_error));
  }
  for (size_t i = 0; i < floats; ++i) {
    if (host[i] != 1.0f) {
      Fail("host memory of a refused call was written: element " + std::to_string(i) + " is " +
           Num(host[i]));
      break;
    }
  }
  std::free(host);
  RequireCuda(cudaFreeHost(pinned), "cudaFreeHost");
  if (other_memory != nullptr) RequireCuda(cudaFree(other_memory), "cudaFree");

  // The process is still usable, and a refused call did not keep its name: the same names work.
  const int32_t n = N();
  DeviceSumAllreduce("gpu.bad.host", R() + 1, n * (n + 1) / 2.0);
  hvd_tensor_t both[2] = {good_desc, good2->Desc()};
  o = Options("gpu.bad.grouped");
  Require(hvd_grouped_allreduce(both, both, 2, &o, &h), "grouped allreduce after the refusals");
  WaitRelease(h, "grouped allreduce after the refusals");
  ExpectDevice("grouped allreduce after the refusals, member 0", *good,
               std::vector<double>(8, 1.0 * n));
  ExpectDevice("grouped allreduce after the refusals, member 1", *good2,
               std::vector<double>(8, 2.0 * n));
}

}  // namespace hvd_gpu

namespace {

struct Scenario {
  const char* name;
  void (*run)();
  bool in_all = true;  // the kill_peer ones end the job: only by name
};

const Scenario kScenarios[] = {
    {"allreduce", hvd_gpu::Allreduce},
    {"allreduce_staged_types", hvd_gpu::AllreduceStagedTypes},
    {"fused", hvd_gpu::Fused},
    {"grouped", hvd_gpu::Grouped},
    {"allgather", hvd_gpu::Allgather},
    {"broadcast", hvd_gpu::Broadcast},
    {"alltoall", hvd_gpu::Alltoall},
    {"reducescatter", hvd_gpu::Reducescatter},
    {"horovod_scaling", hvd_gpu::HorovodScaling},
    {"process_set", hvd_gpu::ProcessSet},
    {"join", hvd_gpu::Join},
    {"bad_device", hvd_gpu::BadDevice},
    {"adasum", hvd_gpu::Adasum},
    {"large", hvd_gpu::Large},
    {"stream_order", hvd_gpu::StreamOrder},
    {"overlapping_sets", hvd_gpu::OverlappingSets},  // these two re-initialize: last
    {"lifecycle", hvd_gpu::Lifecycle},
    {"elastic", hvd_gpu::Elastic, false},
    {"late_write", hvd_gpu::LateWrite, false},
    {"abort_staged", hvd_gpu::AbortStaged, false},
    {"cuda_errors", hvd_gpu::CudaErrors, false},
    {"defer_failures", hvd_gpu::DeferFailures, false},
    {"keeps_the_callers_device", hvd_gpu::KeepsTheCallersDevice, false},
    {"second_gpu", hvd_gpu::SecondGpu, false},
    {"joined_on_the_sets_device", hvd_gpu::JoinedOnTheSetsDevice, false},
    {"joined_first_on_its_device", hvd_gpu::JoinedFirstOnItsDevice, false},
    {"hierarchical_average", hvd_gpu::HierarchicalAverage, false},
    {"kill_peer_allreduce", [] { hvd_gpu::KillPeer("allreduce", false); }, false},
    {"nccl_peer_dies_allreduce", [] { hvd_gpu::KillPeer("allreduce", true); }, false},
    {"nccl_peer_dies_staged_behind", [] { hvd_gpu::KillPeer("staged_behind", true); }, false},
    {"kill_peer_allgather", [] { hvd_gpu::KillPeer("allgather", false); }, false},
    {"nccl_peer_dies_allgather", [] { hvd_gpu::KillPeer("allgather", true); }, false},
    {"kill_peer_reducescatter", [] { hvd_gpu::KillPeer("reducescatter", false); }, false},
    {"nccl_peer_dies_reducescatter", [] { hvd_gpu::KillPeer("reducescatter", true); }, false},
    {"kill_peer_alltoall", [] { hvd_gpu::KillPeer("alltoall", false); }, false},
    {"nccl_peer_dies_alltoall", [] { hvd_gpu::KillPeer("alltoall", true); }, false},
    {"kill_peer_broadcast", [] { hvd_gpu::KillPeer("broadcast", false); }, false},
    {"nccl_peer_dies_broadcast", [] { hvd_gpu::KillPeer("broadcast", true); }, false},
};

int Usage() {
  std::fprintf(stderr, "usage: hvd_gpu_worker SCENARIO... | all\nscenarios:");
  for (const Scenario& s : kScenarios) std::fprintf(stderr, " %s", s.name);
  std::fprintf(stderr, "\n");
  return 2;
}

// Exit code 77: ctest's SKIP_RETURN_CODE (and hvdrun passes the first failing rank's code on).
int Skip(const std::string& why) {
  std::fprintf(stderr,
               "hvd_gpu_worker: %s; skipped (exit 77). It needs a CUDA device, or the CUDA "
               "emulator (LD_PRELOAD=<libhvd_gpu_emulator.so> HVD_GPU_EMU_DEVICES=N)\n",
               why.c_str());
  return 77;
}

// Initializes the runtime with the even ranks' process set (from two ranks on), selects this
// rank's device and finds out whether every rank has a GPU of its own.
void Setup(int device_count) {
  using hvd_gpu::Ctx;
  Ctx().scenario = "setup";
  int32_t size = 1;
  hvd_gpu::Require(hvd_launch_topology(nullptr, &size), "hvd_launch_topology");
  if (size >= 2) {
    const std::vector<int32_t> evens = hvd_gpu::EvenRanks(size);
    const int32_t count = static_cast<int32_t>(evens.size());
    hvd_gpu::Require(hvd_init_with_process_sets(evens.data(), &count, 1),
                     "hvd_init_with_process_sets");
  } else {
    hvd_gpu::Require(hvd_init(), "hvd_init");
  }
  hvd_gpu::Require(hvd_rank(&Ctx().rank), "hvd_rank");
  hvd_gpu::Require(hvd_size(&Ctx().size), "hvd_size");
  hvd_gpu::Require(hvd_local_rank(&Ctx().local_rank), "hvd_local_rank");
  hvd_gpu::Require(hvd_local_size(&Ctx().local_size), "hvd_local_size");
  Ctx().device_count = device_count;
  Ctx().device = Ctx().local_rank % device_count;
  hvd_gpu::RequireCuda(cudaSetDevice(Ctx().device),
                       "cudaSetDevice(" + std::to_string(Ctx().device) + ")");
  int current = -1;
  hvd_gpu::RequireCuda(cudaGetDevice(&current), "cudaGetDevice");
  if (current != Ctx().device) {
    hvd_gpu::Fail("cudaGetDevice gives " + std::to_string(current) + " after cudaSetDevice(" +
                  std::to_string(Ctx().device) + ")");
  }
  int32_t ids[4] = {-1, -1, -1, -1}, num_ids = 0;
  hvd_gpu::Require(hvd_process_set_ids(ids, 4, &num_ids), "hvd_process_set_ids");
  for (int32_t i = 0; i < num_ids; ++i) {
    if (ids[i] != 0) Ctx().even_set = ids[i];
  }
  // Each rank has a GPU of its own, as NCCL (and hvd, which asks the same) tells GPUs apart,
  // when no two ranks have the same host and device: the host is NCCL_HOSTID where set (hvdrun
  // sets the rank's host; a wrapper may declare one per rank), else the host name. Gathered in
  // host memory (an allgather of fixed-size CPU tensors); then the sets run on NCCL, their
  // outputs on the device.
  char identity[128] = {};
  const char* host_id = std::getenv("NCCL_HOSTID");
  char host[64] = {};
  if (host_id == nullptr || *host_id == '\0') {
    gethostname(host, sizeof(host) - 1);
    host_id = host;
  }
  char bus[32] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof(bus), Ctx().device) != cudaSuccess) {
    std::snprintf(bus, sizeof(bus), "device-%d", Ctx().device);
  }
  std::snprintf(identity, sizeof(identity), "%s %s", host_id, bus);
  hvd_tensor_t d;
  std::memset(&d, 0, sizeof(d));
  d.data = identity;
  d.dtype = HVD_UINT8;
  d.ndim = 1;
  d.shape[0] = sizeof(identity);
  d.device = HVD_DEVICE_CPU;
  hvd_op_options_t o = hvd_gpu::Options("gpu.setup.identities");
  hvd_handle_t h = 0;
  hvd_gpu::Require(hvd_allgather(&d, &o, &h), "allgather of the GPU identities");
  hvd_gpu::WaitOk(h, "allgather of the GPU identities");
  hvd_tensor_t all{};
  hvd_gpu::Require(hvd_output(h, 0, &all), "hvd_output of the GPU identities");
  std::vector<std::string> seen;
  Ctx().own_gpus = true;
  for (int32_t r = 0; r < Ctx().size; ++r) {
    const char* id = static_cast<const char*>(all.data) + r * sizeof(identity);
    const std::string one(id, strnlen(id, sizeof(identity)));
    if (std::find(seen.begin(), seen.end(), one) != seen.end()) Ctx().own_gpus = false;
    seen.push_back(one);
  }
  hvd_free(all.data);
  hvd_gpu::Require(hvd_release(h), "hvd_release of the GPU identities");
  if (Ctx().rank == 0) {
    const auto where = [](const char* op) {
      return hvd_gpu::DeviceOutputsExpected(op) ? "device" : "device or host";
    };
    std::printf(
        "hvd_gpu_worker: %d ranks; rank 0 on CUDA device %d of %d; %s; outputs expected on: "
        "allgather %s, alltoall %s, reducescatter %s\n",
        Ctx().size, Ctx().device, device_count,
        Ctx().own_gpus ? "every rank has a GPU of its own" : "ranks share GPUs (staged)",
        where("ALLGATHER"), where("ALLTOALL"), where("REDUCESCATTER"));
    std::fflush(stdout);
  }
}

bool Initialized() {
  int32_t initialized = 0;
  hvd_is_initialized(&initialized);
  return initialized != 0;
}

}  // namespace

int main(int argc, char** argv) {
  using hvd_gpu::Ctx;
  std::vector<const Scenario*> chosen;
  for (int i = 1; i < argc; ++i) {
    bool found = false;
    for (const Scenario& s : kScenarios) {
      if ((std::strcmp(argv[i], "all") == 0 && s.in_all) || std::strcmp(argv[i], s.name) == 0) {
        chosen.push_back(&s);
        found = true;
      }
    }
    if (!found) return Usage();
  }
  if (chosen.empty()) return Usage();

  uint32_t flags = 0;
  if (hvd_build_flags(&flags) != HVD_OK || (flags & HVD_BUILT_CUDA) == 0) {
    return Skip("this libhvd was built without CUDA (hvdrun -cb)");
  }
  int device_count = 0;
  const cudaError_t err = cudaGetDeviceCount(&device_count);
  if (err != cudaSuccess) {
    return Skip(std::string("cudaGetDeviceCount failed: ") + cudaGetErrorName(err) + ": " +
                cudaGetErrorString(err));
  }
  if (device_count <= 0) return Skip("cudaGetDeviceCount found no CUDA device");

  // Tests of a peer that dies before the first scenario (gpu_emu_nccl_peer_dies_in_init): the
  // survivor ignores hvdrun's SIGTERM, so that it can say what it saw.
  const char* ignore = std::getenv("HVD_GPU_WORKER_IGNORE_SIGTERM");
  if (ignore != nullptr && std::strcmp(ignore, "1") == 0) signal(SIGTERM, SIG_IGN);
  Setup(device_count);
  for (const Scenario* s : chosen) {
    Ctx().scenario = s->name;
    const int before = Ctx().failures;
    s->run();
    if (Ctx().rank == 0) {
      std::printf("[%s] %s on %d ranks\n", s->name, Ctx().failures == before ? "ok" : "FAILED",
                  Ctx().size);
      std::fflush(stdout);
    }
  }
  Ctx().scenario = "shutdown";
  if (Initialized()) {
    hvd_gpu::GlobalBarrier("barrier before shutdown");
    hvd_gpu::Require(hvd_shutdown(), "hvd_shutdown");
  }
  if (Ctx().failures > 0) {
    std::fprintf(stderr, "rank %d: %d difference(s)\n", Ctx().rank, Ctx().failures);
    return 1;
  }
  return 0;
}
