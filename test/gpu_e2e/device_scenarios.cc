// The device a GPU op runs on in a process that sees several GPUs (the emulated GPU's
// HVD_GPU_EMU_DEVICES=2): the caller's current device kept, an op on a second device of a set
// refused by name, a joined rank contributing on its set's device (or, before its first GPU op,
// on its current device).
#include <string>

#include "gpu_worker.h"

namespace hvd_gpu {

// One rank with two GPUs, NCCL allreduces completed off the cycle: the caller's thread, current
// on device 1, waits for an allreduce of a device-0 tensor with `wait_now` (so the cycle runs
// on it), then shuts down (which drains the completions). Its current device stays 1: the
// framework's choice (torch's current_device()). Until 2026-11-30 the hand-over to the
// completion thread and the drain left it on device 0 (found by reading the code).
void KeepsTheCallersDevice() {
  if (N() != 1 || Ctx().device_count < 2 || Ctx().device != 0) {
    std::printf("[keeps_the_callers_device] skipped: needs one rank and two GPUs\n");
    return;
  }
  DevicePtr t = MakeDevice(HVD_FLOAT32, {6}, [](int64_t i) { return i + 1; });
  hvd_tensor_t d = t->Desc();
  const auto current = [](const std::string& when) {
    int device = -1;
    RequireCuda(cudaGetDevice(&device), "cudaGetDevice");
    if (device != 1) Fail("the caller's device is " + std::to_string(device) + " " + when);
  };
  RequireCuda(cudaSetDevice(1), "cudaSetDevice(1)");
  for (int i = 0; i < 3; ++i) {
    hvd_op_options_t o = Options("gpu.device.kept." + std::to_string(i));
    o.wait_now = 1;
    hvd_handle_t h = 0;
    Require(hvd_allreduce(&d, &d, &o, &h), "allreduce on device 0");
    Require(hvd_wait(h, kWaitSeconds), "its wait");
    hvd_release(h);
    current("after waiting for an allreduce on device 0");
  }
  Require(hvd_shutdown(), "hvd_shutdown");
  current("after hvd_shutdown");
  Require(hvd_init(), "hvd_init again");
  Ctx().even_set = -1;
  RequireCuda(cudaSetDevice(0), "cudaSetDevice(0)");
  ExpectDevice("the allreduces on device 0", *t, {1, 2, 3, 4, 5, 6});
  std::printf("[keeps_the_callers_device] ok\n");
  std::fflush(stdout);
}

// One rank with two GPUs. An allreduce on device 0 makes the set's NCCL communicator (device
// 0's); an allreduce of a device-1 tensor in the same set then fails, naming both devices,
// where NCCL used to be handed device 1's memory on device 0's communicator (found by reading
// the code: a wrong result or an illegal address on a GPU; the emulated NCCL refused the
// buffer). After shutdown and init, a set whose first op is on device 1 runs there.
void SecondGpu() {
  if (N() != 1 || Ctx().device_count < 2 || Ctx().device != 0) {
    std::printf("[second_gpu] skipped: needs one rank and two GPUs\n");
    return;
  }
  const auto allreduce = [](const std::string& name, DeviceTensor* t, std::string* message) {
    hvd_tensor_t d = t->Desc();
    hvd_op_options_t o = Options(name);
    hvd_handle_t h = 0;
    Require(hvd_allreduce(&d, &d, &o, &h), name);
    const hvd_status_t s = hvd_wait(h, kWaitSeconds);
    if (s == HVD_IN_PROGRESS) Die(name + ": no end within the wait", s);
    if (s != HVD_OK) *message = hvd_last_error();
    hvd_release(h);
    return s;
  };
  std::string message;
  DevicePtr first = MakeDevice(HVD_FLOAT32, {6}, [](int64_t i) { return i + 1; });
  Require(allreduce("gpu.second.first", first.get(), &message), "the allreduce on device 0");
  Ctx().device = 1;
  RequireCuda(cudaSetDevice(1), "cudaSetDevice(1)");
  DevicePtr second = MakeDevice(HVD_FLOAT32, {6}, [](int64_t i) { return i + 1; });
  if (allreduce("gpu.second.other", second.get(), &message) == HVD_OK) {
    Fail("an allreduce on device 1 went through on device 0's NCCL communicator");
  } else if (message.find("'gpu.second.other' is on CUDA device 1, but this process's NCCL "
                          "communicator of its process set is on device 0") == std::string::npos) {
    Fail("the allreduce on device 1 failed without naming both devices: " + message);
  }
  const cudaError_t pending = cudaGetLastError();
  if (pending != cudaSuccess) {
    Fail(std::string("CUDA error ") + cudaGetErrorName(pending) + " left pending");
  }
  Require(hvd_shutdown(), "hvd_shutdown");
  Require(hvd_init(), "hvd_init again");
  Ctx().even_set = -1;
  Require(allreduce("gpu.second.again", second.get(), &message), "the first op on device 1");
  ExpectDevice("the first op on device 1", *second, {1, 2, 3, 4, 5, 6});
  Ctx().device = 0;
  RequireCuda(cudaSetDevice(0), "cudaSetDevice(0)");
  std::printf("[second_gpu] ok\n");
  std::fflush(stdout);
}

// Three ranks, each its own host with two GPUs; the global set's NCCL communicator is on
// device 0, set {0, 1}'s on device 1 (a process set per GPU, as docs/gpu.md says to use two
// GPUs in one process). Rank 1 joins; ranks 0 and 2 then allreduce on the global set, to which
// rank 1 contributes zeros on that set's device. Until 2026-11-30 a joined rank took the device
// of its last GPU op of any set (1 here), and the allreduce failed on rank 1 naming both
// devices (found by reading the code).
void JoinedOnTheSetsDevice() {
  if (N() != 3 || Ctx().device_count < 2 || !Ctx().own_gpus) {
    std::printf("[joined_on_the_sets_device] skipped: needs 3 ranks with two GPUs each\n");
    return;
  }
  const auto on_device = [](int device) {
    Ctx().device = device;
    RequireCuda(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
  };
  const int32_t pair[2] = {0, 1};
  int32_t set = -1;
  Require(hvd_add_process_set(pair, 2, &set), "hvd_add_process_set([0, 1])");
  on_device(0);
  DeviceSumAllreduce("gpu.joined.global", R() + 1, 6);
  if (R() < 2) {
    on_device(1);
    DeviceSumAllreduce("gpu.joined.pair", R() + 1, 3, set);
    on_device(0);
  }
  hvd_handle_t join = 0;
  if (R() == 1) {
    Require(hvd_join(-1, &join), "hvd_join on rank 1");
  } else {
    DeviceSumAllreduce("gpu.joined.without.1", R() + 1, 4);  // 1 + 3, rank 1's zeros
    Require(hvd_join(-1, &join), "hvd_join");
  }
  WaitOk(join, "join");
  Require(hvd_release(join), "hvd_release of the join");
  Require(hvd_remove_process_set(set), "hvd_remove_process_set");
  std::printf("[joined_on_the_sets_device] ok\n");
  std::fflush(stdout);
}

// Two ranks of one host with a GPU each (local rank 1 current on device 1), NCCL required
// (HVD_GPU_OPERATIONS=nccl). Rank 1 joins on the CPU (device -1, Horovod's default) before it has
// run any GPU op; rank 0 then allreduces on device 0, to which rank 1 contributes zeros. Until
// 2026-12-01 a rank joined before its first GPU op contributed on device 0 whatever its current
// device: rank 1 then declared device 0's GPU, the NCCL group saw one GPU twice and the op
// failed ("shares a GPU") where every rank has a GPU of its own. Now it is the device current on
// the caller's thread at the join (a Horovod script's torch.cuda.set_device(hvd.local_rank())).
void JoinedFirstOnItsDevice() {
  if (N() != 2 || Ctx().local_size != 2 || Ctx().device_count < 2) {
    std::printf("[joined_first_on_its_device] skipped: needs 2 ranks of one host, 2 GPUs\n");
    return;
  }
  hvd_handle_t join = 0;
  if (R() == 1) {
    Require(hvd_join(-1, &join), "hvd_join(-1) on rank 1, current on device 1");
  } else {
    DeviceSumAllreduce("gpu.joined.first", 5, 5);  // rank 1's zeros
    Require(hvd_join(-1, &join), "hvd_join");
  }
  WaitOk(join, "join");
  Require(hvd_release(join), "hvd_release of the join");
  std::printf("[joined_first_on_its_device] ok\n");
  std::fflush(stdout);
}

}  // namespace hvd_gpu
