// Adasum of CUDA tensors, tensors of tens of MiB, the order of the caller's stream, a failing
// CUDA or NCCL call, and a NCCL peer that dies in the middle of a job (a plain one, and an
// elastic one that goes on).
#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gpu_worker.h"

namespace hvd_gpu {

// Whether op=Adasum goes as Horovod's GPU Adasum here: every rank has a GPU of its own, on
// several hosts of several ranks each (docs/gpu.md): the host's NCCL average, then Adasum of the
// host averages across hosts. Elsewhere it combines every rank's update like CPU tensors.
bool HostAveragedAdasum() {
  return DeviceOutputsExpected("ALLREDUCE") && Ctx().local_size > 1 &&
         Ctx().local_size < Ctx().size;
}

void Adasum() {
  std::vector<Pending> pending;
  const int32_t n = N(), r = R();
  // Updates orthogonal across ranks add up exactly (every Adasum coefficient is 1), whatever
  // the tree; the host averages of such updates are orthogonal across hosts too, so the GPU
  // Adasum gives their sum divided by the ranks per host. Exact in every float type: values up
  // to 7, halved at most twice.
  const double divisor = HostAveragedAdasum() ? Ctx().local_size : 1.0;
  int k = 0;
  for (hvd_dtype_t id : {HVD_FLOAT16, HVD_BFLOAT16, HVD_FLOAT32, HVD_FLOAT64}) {
    const DType& d = DTypeOf(id);
    for (int64_t per : {int64_t{1}, int64_t{4097}}) {
      const int64_t count = per * n + 3;
      const auto value = [per, r](int64_t i) { return i / per == r ? (i % 7) + 1.0 : 0.0; };
      DevicePtr in = MakeDevice(id, {count}, value);
      DevicePtr out = k % 2 ? in : MakeDevice(id, {count}, [](int64_t) { return 0.0; });
      const std::string what = std::string("Adasum of orthogonal ") + d.name + " updates, " +
                               std::to_string(count) + " elements" + (in == out ? " in place" : "");
      hvd_op_options_t o = Options("gpu.adasum." + std::to_string(k++));
      o.reduce_op = HVD_OP_ADASUM;
      hvd_tensor_t a = in->Desc(), b = out->Desc();
      Pending p;
      Require(hvd_allreduce(&a, &b, &o, &p.handle), what);
      p.what = what;
      p.keep = {in, out};
      p.check = [=](hvd_handle_t) {
        std::vector<double> want(count);
        for (int64_t i = 0; i < count; ++i) want[i] = i / per < n ? ((i % 7) + 1.0) / divisor : 0;
        ExpectDevice(what, *out, want);
      };
      pending.push_back(std::move(p));
    }
    // Equal updates stay as they are (Adasum of equal vectors is the vector; so is a host
    // average of them): with a prescale of 2 and a postscale of 1/4, half of them.
    const auto same_value = [](int64_t i) { return (i % 5) - 2.0; };
    DevicePtr same = MakeDevice(id, {37}, same_value);
    const std::string what = std::string("Adasum of equal ") + d.name + " updates, scaled";
    hvd_op_options_t o = Options("gpu.adasum.same." + std::to_string(k++));
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
      for (int64_t i = 0; i < 37; ++i) want[i] = 0.5 * same_value(i);
      ExpectDevice(what, *same, want);
    };
    pending.push_back(std::move(p));
  }
  FinishAll(&pending);
}

void Large() {
  // Tens of MiB: a staged allreduce moves in 4 MiB chunks (the device->host copies of one chunk
  // overlapping the transfer of another), NCCL calls cross the emulator's slots in chunks, and
  // odd counts leave a short last chunk. Small integers: every sum is exact, float16 too.
  const int32_t n = N(), r = R();
  std::vector<Pending> pending;
  int k = 0;
  for (hvd_dtype_t id : {HVD_FLOAT32, HVD_FLOAT16}) {
    const int64_t count = id == HVD_FLOAT32 ? 5'000'003 : 3'000'001;
    for (bool scaled : {false, true}) {
      const std::string what = std::string("allreduce of ") + std::to_string(count) + " " +
                               DTypeOf(id).name + (scaled ? ", scaled by 0.5 and 2" : "");
      DevicePtr t = MakeDevice(id, {count}, [r](int64_t i) { return (i % 5) + r; });
      hvd_tensor_t d = t->Desc();
      hvd_op_options_t o = Options("gpu.large." + std::to_string(k++));
      if (scaled) {
        o.prescale_factor = 0.5;
        o.postscale_factor = 2.0;
      }
      Pending p;
      Require(hvd_allreduce(&d, &d, &o, &p.handle), what);
      p.what = what;
      p.keep = {t};
      p.check = [=](hvd_handle_t) {
        std::vector<double> want(count);
        for (int64_t i = 0; i < count; ++i) want[i] = n * (i % 5) + n * (n - 1) / 2.0;
        ExpectDevice(what, *t, want);
      };
      pending.push_back(std::move(p));
    }
  }
  // An allgather of 4 MiB from each rank, and a reducescatter of 8 MiB in 2 columns.
  const int64_t per = 1'000'003;
  DevicePtr g = MakeDevice(HVD_FLOAT32, {per}, [r](int64_t i) { return (i % 11) + 100 * r; });
  hvd_tensor_t gd = g->Desc();
  hvd_op_options_t go = Options("gpu.large.gather");
  Pending gp;
  Require(hvd_allgather(&gd, &go, &gp.handle), "allgather of 4 MiB per rank");
  gp.what = "allgather of 4 MiB per rank";
  gp.keep = {g};
  gp.check = [=](hvd_handle_t h) {
    std::vector<double> want;
    for (int32_t j = 0; j < n; ++j) {
      for (int64_t i = 0; i < per; ++i) want.push_back((i % 11) + 100 * j);
    }
    ExpectOutput(h, 0, "allgather of 4 MiB per rank", HVD_FLOAT32, {per * n}, want,
                 DeviceOutputsExpected("ALLGATHER"));
  };
  pending.push_back(std::move(gp));
  const int64_t rows = 1'000'001;  // uneven over 2-4 ranks
  DevicePtr s = MakeDevice(HVD_FLOAT32, {rows, 2}, [r](int64_t i) { return (i % 7) + r; });
  hvd_tensor_t sd = s->Desc();
  hvd_op_options_t so = Options("gpu.large.scatter");
  Pending sp;
  Require(hvd_reducescatter(&sd, &so, &sp.handle), "reducescatter of 8 MiB");
  sp.what = "reducescatter of 8 MiB";
  sp.keep = {s};
  sp.check = [=](hvd_handle_t h) {
    // hvd's split: the first rows % n ranks get a row more.
    const int64_t mine = rows / n + (r < rows % n ? 1 : 0);
    int64_t first = 0;
    for (int32_t j = 0; j < r; ++j) first += rows / n + (j < rows % n ? 1 : 0);
    std::vector<double> want(mine * 2);
    for (int64_t i = 0; i < mine * 2; ++i) {
      want[i] = n * ((first * 2 + i) % 7) + n * (n - 1) / 2.0;
    }
    ExpectOutput(h, 0, "reducescatter of 8 MiB", HVD_FLOAT32, {mine, 2}, want,
                 DeviceOutputsExpected("REDUCESCATTER"));
  };
  pending.push_back(std::move(sp));
  FinishAll(&pending);
}

void StreamOrder() {
  // Inputs written by asynchronous copies on a stream of the caller's, the op enqueued with that
  // stream and no synchronisation: hvd must wait for the copies (the event it records at
  // enqueue) before it reads them, and its results must be there for the caller's stream once
  // the handle completes. On the emulated GPU (gpu_emu_worker_adversarial_np3) stream work is
  // delayed, so a missing wait reads the fresh tensors' sentinel bytes.
  cudaStream_t stream = nullptr;
  RequireCuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  // Before each upload the stream copies 32 MiB within the device: microseconds on a GPU,
  // milliseconds on the emulated one, where hvd's negotiation takes far less; so an op that does
  // not wait for the caller's stream reads its inputs before they are written.
  constexpr int64_t kBusyFloats = int64_t{8} << 20;
  DeviceTensor busy_from(HVD_FLOAT32, {kBusyFloats}), busy_to(HVD_FLOAT32, {kBusyFloats});
  const int32_t n = N(), r = R();
  struct Case {
    hvd_dtype_t dtype;
    const char* op;
  };
  // float32 takes NCCL where every rank has a GPU; int16 has no NCCL type: staged.
  const Case cases[] = {{HVD_FLOAT32, "allreduce"},
                        {HVD_INT16, "allreduce"},
                        {HVD_FLOAT32, "broadcast"},
                        {HVD_FLOAT32, "allgather"}};
  int k = 0;
  for (const Case& c : cases) {
    const std::string what =
        std::string(c.op) + " of " + DTypeOf(c.dtype).name + " written on the caller's stream";
    const int64_t count = 4099;
    const HostTensor host = MakeHost(c.dtype, {count}, [r](int64_t i) { return (i + r) % 9; });
    auto t = std::make_shared<DeviceTensor>(c.dtype, std::vector<int64_t>{count});
    hvd_tensor_t d = t->Desc();
    RequireCuda(cudaMemcpyAsync(busy_to.Desc().data, busy_from.Desc().data, busy_from.nbytes(),
                                cudaMemcpyDeviceToDevice, stream),
                what + ": cudaMemcpyAsync of 32 MiB");
    RequireCuda(cudaMemcpyAsync(d.data, host.data(), host.nbytes(), cudaMemcpyHostToDevice, stream),
                what + ": cudaMemcpyAsync");
    hvd_op_options_t o = Options("gpu.stream." + std::to_string(k++));
    o.cuda_stream = stream;
    hvd_handle_t h = 0;
    std::vector<double> want(count);
    std::vector<double> gathered;
    if (std::string(c.op) == "allreduce") {
      Require(hvd_allreduce(&d, &d, &o, &h), what);
      for (int64_t i = 0; i < count; ++i) {
        for (int32_t j = 0; j < n; ++j) want[i] += (i + j) % 9;
      }
    } else if (std::string(c.op) == "broadcast") {
      o.root_rank = n - 1;
      Require(hvd_broadcast(&d, &d, &o, &h), what);
      for (int64_t i = 0; i < count; ++i) want[i] = (i + n - 1) % 9;
    } else {
      Require(hvd_allgather(&d, &o, &h), what);
      for (int32_t j = 0; j < n; ++j) {
        for (int64_t i = 0; i < count; ++i) gathered.push_back((i + j) % 9);
      }
    }
    WaitOk(h, what);
    if (!gathered.empty()) {
      ExpectOutput(h, 0, what, c.dtype, {count * n}, gathered, DeviceOutputsExpected("ALLGATHER"));
    } else {
      // Read back on the caller's stream, as its next kernel would.
      HostTensor got(c.dtype, {count});
      RequireCuda(cudaMemcpyAsync(got.data(), d.data, got.nbytes(), cudaMemcpyDeviceToHost, stream),
                  what + ": cudaMemcpyAsync back");
      RequireCuda(cudaStreamSynchronize(stream), what + ": cudaStreamSynchronize");
      ExpectValues(what, got, want);
    }
    Require(hvd_release(h), what + ": hvd_release");
    // The host buffer of the upload must outlive the copy: done once the stream is.
    RequireCuda(cudaStreamSynchronize(stream), what + ": cudaStreamSynchronize");
  }
  RequireCuda(cudaStreamDestroy(stream), "cudaStreamDestroy");
}

namespace {

// Enqueues one op of `kind` on small float32 device tensors; the handle, or the refusal's status.
// "staged_behind": a grouped allreduce of a float32 member (NCCL) and an int16 one (staged
// through the host: NCCL has no int16), negotiated together and run in that order, so the
// staged member's copies wait on hvd's stream behind the NCCL call.
hvd_status_t EnqueueKind(const std::string& kind, const std::string& name,
                         std::vector<DevicePtr>* keep, hvd_handle_t* handle) {
  const int32_t n = N();
  keep->assign(1, MakeDevice(HVD_FLOAT32, {2 * n, 3}, [](int64_t i) { return i % 5; }));
  hvd_tensor_t t = keep->front()->Desc();
  hvd_op_options_t o = Options(name);
  if (kind == "allreduce") return hvd_allreduce(&t, &t, &o, handle);
  if (kind == "staged_behind") {
    keep->push_back(MakeDevice(HVD_INT16, {2 * n, 3}, [](int64_t i) { return i % 7; }));
    hvd_tensor_t ts[2] = {t, keep->back()->Desc()};
    return hvd_grouped_allreduce(ts, ts, 2, &o, handle);
  }
  if (kind == "allgather") return hvd_allgather(&t, &o, handle);
  if (kind == "reducescatter") return hvd_reducescatter(&t, &o, handle);
  if (kind == "alltoall") return hvd_alltoall(&t, &o, handle);
  o.root_rank = 0;
  return hvd_broadcast(&t, &t, &o, handle);
}

void ReleaseOutputs(hvd_handle_t h) {
  int32_t outputs = 0;
  if (hvd_num_outputs(h, &outputs) != HVD_OK) return;
  for (int32_t i = 0; i < outputs; ++i) {
    hvd_tensor_t out{};
    if (hvd_output(h, i, &out) != HVD_OK) continue;
    if (out.device == HVD_DEVICE_CPU) {
      hvd_free(out.data);
    } else {
      hvd_free_on_stream(out.data, nullptr);
    }
  }
}

}  // namespace

// The last rank dies (exit 3) after one good op of `kind`; rank 0's next op of that kind must
// fail within 10 s (hvd's heartbeat, then ncclCommAbort; or NCCL's own error for the lost peer),
// not hang. `in_nccl`: it dies inside the NCCL collective of that op, once every rank passed
// hvd's negotiation of it (the CUDA emulator's hook: elsewhere the scenario is skipped, exit 77);
// else as it enqueues. The survivors go on with the same ops, ignoring hvdrun's SIGTERM; rank 0
// says what it saw: "survivor: failed after X s (within 10 s): <error>", which the ctest test looks
// for.
void KillPeer(const std::string& kind, bool in_nccl) {
  if (N() < 2) Die("kill_peer needs 2 ranks or more", HVD_INVALID_ARGUMENT);
  using ExitHook = void (*)(int);
  const auto hook =
      reinterpret_cast<ExitHook>(dlsym(RTLD_DEFAULT, "hvd_gpu_emulator_exit_in_next_collective"));
  if (in_nccl && (hook == nullptr || !Ctx().own_gpus)) {
    std::printf(
        "skipped: dying inside a NCCL collective needs the CUDA emulator and a GPU per "
        "rank\n");
    std::fflush(stdout);
    _exit(77);
  }
  std::vector<DevicePtr> keep;
  hvd_handle_t h = 0;
  Require(EnqueueKind(kind, "gpu.kill.warm", &keep, &h), kind + " before the peer dies");
  WaitOk(h, kind + " before the peer dies");
  ReleaseOutputs(h);
  hvd_release(h);
  GlobalBarrier("barrier before the peer dies");
  if (R() == N() - 1) {
    std::fflush(stdout);
    if (!in_nccl) _exit(3);
    hook(3);
    Require(EnqueueKind(kind, "gpu.kill.after", &keep, &h), kind + " to die in");
    hvd_wait(h, 30.0);
    std::printf("rank %d: still alive after its %s\n", R(), kind.c_str());
    std::fflush(stdout);
    _exit(1);
  }
  // Every other rank goes on with the same ops (a collective needs them all); rank 0 says what
  // it saw.
  signal(SIGTERM, SIG_IGN);
  const auto started = std::chrono::steady_clock::now();
  const auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  };
  // Several ops, as a training loop would go on: the first may still complete where the peer's
  // part of it was done before it died.
  for (int i = 0; i < 200; ++i) {
    hvd_status_t s = EnqueueKind(kind, "gpu.kill.after", &keep, &h);
    if (s == HVD_OK) {
      s = hvd_wait(h, 30.0);
      if (s == HVD_OK) ReleaseOutputs(h);
      if (s != HVD_IN_PROGRESS) hvd_release(h);
    }
    if (s != HVD_OK && R() != 0) _exit(0);
    if (s == HVD_IN_PROGRESS) {
      std::printf("survivor: too late: no error after %.1f s\n", seconds());
      std::fflush(stdout);
      _exit(1);
    }
    if (s != HVD_OK) {
      const double took = seconds();
      std::printf("survivor: failed after %.1f s (%s 10 s): status %d: %s\n", took,
                  took < 10.0 ? "within" : "NOT within", static_cast<int>(s), hvd_last_error());
      std::fflush(stdout);
      _exit(took < 10.0 ? 0 : 1);
    }
    if (seconds() > 30.0) break;
  }
  if (R() != 0) _exit(0);
  std::printf("survivor: succeeded: every %s went through with a dead peer\n", kind.c_str());
  std::fflush(stdout);
  _exit(1);
}

namespace {

// What a caller writes into a failed op's tensors, once they are its own again (LateWrite,
// AbortStaged): on its own stream, the legacy default one (hvd's is a non-blocking stream, which
// that one does not wait for), waited for.
constexpr int kCallersByte = 0x3C;
void WriteAsTheCaller(const std::vector<const DeviceTensor*>& tensors) {
  for (const DeviceTensor* t : tensors) {
    RequireCuda(cudaMemsetAsync(t->Desc().data, kCallersByte, t->nbytes(), nullptr),
                "cudaMemsetAsync");
  }
  RequireCuda(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
}

// How many bytes of `tensors` are no longer the caller's, read back on its stream.
int64_t BytesNoLongerTheCallers(const std::vector<const DeviceTensor*>& tensors) {
  int64_t changed = 0;
  for (const DeviceTensor* t : tensors) {
    std::vector<unsigned char> got(t->nbytes());
    RequireCuda(
        cudaMemcpyAsync(got.data(), t->Desc().data, got.size(), cudaMemcpyDeviceToHost, nullptr),
        "cudaMemcpyAsync back");
    RequireCuda(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
    for (unsigned char b : got) changed += b != kCallersByte;
  }
  return changed;
}

// The same 1.5 s later: time for the emulated device to run whatever hvd left queued (a drain of
// the device would instead wait for a NCCL call that waits for a dead peer).
int64_t BytesWrittenSinceTheCaller(const std::vector<const DeviceTensor*>& tensors) {
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  return BytesNoLongerTheCallers(tensors);
}

}  // namespace

// The last rank dies inside the NCCL collective of a grouped Average allreduce of two tensors:
// the fused path, which queues on hvd's stream, behind the NCCL call, the copies out of the
// fusion buffer into the outputs and the postscale of the average. Once rank 0's handle has
// failed, the outputs are the caller's again (a framework frees them, and its allocator hands
// the memory to the next tensor): rank 0 writes bytes of its own into them on its own stream
// and, after the emulated device had time to run whatever hvd left queued (each piece of work
// waits up to HVD_GPU_EMU_DELAY_US), they must still be there. Until 2026-11-30 the handle
// failed as soon as the NCCL call was aborted, and the copies queued behind it ran later, into
// memory that was no longer hvd's: half or all of the outputs in 6 of 6 runs, waiting and
// completing off the cycle alike (found by reading the code; docs/gpu.md "Failures").
void LateWrite() {
  if (N() < 2) Die("late_write needs 2 ranks or more", HVD_INVALID_ARGUMENT);
  using ExitHook = void (*)(int);
  const auto hook =
      reinterpret_cast<ExitHook>(dlsym(RTLD_DEFAULT, "hvd_gpu_emulator_exit_in_next_collective"));
  if (hook == nullptr || !Ctx().own_gpus) {
    std::printf("skipped: late_write needs the CUDA emulator and a GPU per rank\n");
    std::fflush(stdout);
    _exit(77);
  }
  constexpr int64_t kCount = 1 << 16;
  // The tensors live on until the checks are done: cudaFree synchronizes the device (CUDA's
  // does; a framework's caching allocator calls it seldom), which would run what hvd left
  // queued before the caller's bytes go in.
  std::vector<DevicePtr> ins;
  const auto grouped = [&](const std::string& name, std::vector<DevicePtr>* outs) {
    std::vector<hvd_tensor_t> in_desc, out_desc;
    for (int i = 0; i < 2; ++i) {
      ins.push_back(MakeDevice(HVD_FLOAT32, {kCount}, [](int64_t k) { return k % 7; }));
      outs->push_back(std::make_shared<DeviceTensor>(HVD_FLOAT32, std::vector<int64_t>{kCount}));
      in_desc.push_back(ins.back()->Desc());
      out_desc.push_back(outs->back()->Desc());
    }
    hvd_op_options_t o = Options(name);
    o.reduce_op = HVD_OP_AVERAGE;
    hvd_handle_t h = 0;
    Require(hvd_grouped_allreduce(in_desc.data(), out_desc.data(), 2, &o, &h), name);
    const hvd_status_t s = hvd_wait(h, kWaitSeconds);
    if (s == HVD_IN_PROGRESS) Die(name + ": no end within the wait", s);
    hvd_release(h);
    return s;
  };
  std::vector<DevicePtr> warm;
  Require(grouped("gpu.late.warm", &warm), "the grouped allreduce before the peer dies");
  GlobalBarrier("barrier before the peer dies");
  if (R() == N() - 1) {
    std::fflush(stdout);
    hook(3);
    std::vector<DevicePtr> outs;
    grouped("gpu.late.dies", &outs);
    std::printf("rank %d: still alive after its allreduce\n", R());
    std::fflush(stdout);
    _exit(1);
  }
  signal(SIGTERM, SIG_IGN);  // hvdrun's, once the peer died: this rank has more to say
  std::vector<DevicePtr> outs;
  const hvd_status_t s = grouped("gpu.late.dies", &outs);
  if (s == HVD_OK) {
    std::printf("late_write: rank %d: the allreduce went through with a dead peer\n", R());
    std::fflush(stdout);
    _exit(1);
  }
  std::vector<const DeviceTensor*> mine;
  for (const DevicePtr& t : outs) mine.push_back(t.get());
  WriteAsTheCaller(mine);
  // Then what hvd.elastic.run does after a failed step: shut down (init again, go on with the
  // same tensors). The shutdown ends the NCCL communicator, which lets a call of it that was
  // still waiting for the dead peer return, and whatever was queued behind it run.
  const hvd_status_t down = hvd_shutdown();
  const int64_t changed = BytesWrittenSinceTheCaller(mine);
  std::printf(
      "late_write: rank %d: the allreduce failed (status %d), hvd_shutdown gave %d; "
      "%lld bytes of its outputs written after the failure\n",
      R(), static_cast<int>(s), static_cast<int>(down), static_cast<long long>(changed));
  std::fflush(stdout);
  _exit(changed == 0 ? 0 : 1);
}

// One rank, its GPU ops staged through the host (HVD_GPU_OPERATIONS=cpu): hvd_abort comes from
// another thread while a 64 MiB allreduce's copies are queued on hvd's stream (each piece of
// emulated device work waits up to HVD_GPU_EMU_DELAY_US). The abort ends the op's waits at once;
// once its handle has failed, the output is the caller's again, and nothing of hvd's may land in
// it: the caller writes bytes of its own and looks again 1.5 s later. A run whose op finished
// before the abort says so and counts as skipped (exit 77).
void AbortStaged() {
  if (N() != 1 || dlsym(RTLD_DEFAULT, "hvd_gpu_emulator_exit_in_next_collective") == nullptr) {
    std::printf("skipped: abort_staged needs one rank and the CUDA emulator\n");
    std::fflush(stdout);
    _exit(77);
  }
  constexpr int64_t kCount = int64_t{16} << 20;
  DevicePtr in = MakeDevice(HVD_FLOAT32, {kCount}, [](int64_t k) { return k % 5; });
  DeviceTensor out(HVD_FLOAT32, {kCount});
  hvd_tensor_t in_desc = in->Desc(), out_desc = out.Desc();
  hvd_op_options_t o = Options("gpu.abort.staged");
  hvd_handle_t h = 0;
  Require(hvd_allreduce(&in_desc, &out_desc, &o, &h), "the staged allreduce");
  std::thread aborter([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    hvd_abort("abort_staged");
  });
  const hvd_status_t s = hvd_wait(h, kWaitSeconds);
  aborter.join();
  if (s == HVD_IN_PROGRESS) Die("the staged allreduce: no end within the wait", s);
  hvd_release(h);
  if (s == HVD_OK) {
    std::printf("skipped: the staged allreduce finished before the abort\n");
    std::fflush(stdout);
    _exit(77);
  }
  WriteAsTheCaller({&out});
  const int64_t changed = BytesWrittenSinceTheCaller({&out});
  std::printf(
      "abort_staged: the allreduce failed (status %d); %lld bytes of its output written "
      "after the failure\n",
      static_cast<int>(s), static_cast<long long>(changed));
  std::fflush(stdout);
  _exit(changed == 0 ? 0 : 1);
}

void Elastic() {
  // Under `hvdrun --elastic`: in the first round the last rank dies inside a NCCL collective (the
  // emulator's hook) after three good steps; the others' step fails, they shut down and init
  // again (a round without it, whose first GPU op makes a new NCCL communicator) and go on.
  // Every worker left ends after 5 good steps in a later round. Skipped (exit 77) outside an
  // elastic job or without the emulator.
  int64_t round = -1, stamp = 0;
  int32_t joined = 0;
  using ExitHook = void (*)(int);
  const auto hook =
      reinterpret_cast<ExitHook>(dlsym(RTLD_DEFAULT, "hvd_gpu_emulator_exit_in_next_collective"));
  if (hvd_elastic_round(&round, &joined, &stamp) != HVD_OK || hook == nullptr) {
    std::printf("skipped: needs hvdrun --elastic and the CUDA emulator\n");
    std::fflush(stdout);
    _exit(77);
  }
  const int64_t first_round = round;
  int good_later = 0, resets = 0;
  for (int step = 0; step < 100 && good_later < 5; ++step) {
    Require(hvd_elastic_round(&round, &joined, &stamp), "hvd_elastic_round");
    if (round == first_round && step == 3 && R() == N() - 1) hook(3);
    const int32_t n = N();
    const auto value = [](int64_t i) { return i % 3; };
    DevicePtr mine = MakeDevice(HVD_FLOAT32, {1031}, [&](int64_t i) { return value(i) + R(); });
    hvd_tensor_t d = mine->Desc();
    hvd_op_options_t o =
        Options("gpu.elastic." + std::to_string(round) + "." + std::to_string(step));
    hvd_handle_t h = 0;
    hvd_status_t s = hvd_allreduce(&d, &d, &o, &h);
    if (s == HVD_OK) {
      s = hvd_wait(h, kWaitSeconds);
      if (s == HVD_IN_PROGRESS) Die("an elastic step did not end within the wait", s);
      hvd_release(h);
    }
    if (s != HVD_OK) {
      // What hvd.elastic.run does on HorovodInternalError: shut down, init again (the next
      // round), pick up this rank's place in it.
      ++resets;
      Require(hvd_shutdown(), "hvd_shutdown after a failed step");
      Require(hvd_init(), "hvd_init of the next round");
      Require(hvd_rank(&Ctx().rank), "hvd_rank");
      Require(hvd_size(&Ctx().size), "hvd_size");
      Require(hvd_local_rank(&Ctx().local_rank), "hvd_local_rank");
      Ctx().device = Ctx().local_rank % Ctx().device_count;
      RequireCuda(cudaSetDevice(Ctx().device), "cudaSetDevice after the reset");
      continue;
    }
    std::vector<double> want(1031);
    for (int64_t i = 0; i < 1031; ++i) want[i] = n * value(i) + n * (n - 1) / 2.0;
    ExpectDevice("elastic step " + std::to_string(step) + " at " + std::to_string(n) + " ranks",
                 *mine, want);
    if (round != first_round) ++good_later;
  }
  if (good_later < 5) {
    Fail("only " + std::to_string(good_later) + " good steps after the reset (" +
         std::to_string(resets) + " resets)");
  }
  if (R() == 0) {
    std::printf("elastic: %d reset(s), 5 good steps at %d ranks in round %lld\n", resets, N(),
                static_cast<long long>(round));
    std::fflush(stdout);
  }
}

void CudaErrors() {
  // One rank (its calls alone fail): the next call of a CUDA or NCCL function fails (the
  // emulator's hook; skipped elsewhere). The op fails with an error naming it and CUDA's or
  // NCCL's message, and no CUDA error is left pending for the caller's next CUDA call. The
  // runtime is then shut down, as Horovod's is after such an error (on several ranks the
  // others may already be in the collective: only a new runtime agrees again), so the caller
  // does what hvd.elastic.run does, shutdown and init, and the same op then works.
  using FailHook = void (*)(const char*, int);
  const auto fail_next =
      reinterpret_cast<FailHook>(dlsym(RTLD_DEFAULT, "hvd_gpu_emulator_fail_next"));
  if (fail_next == nullptr || N() != 1) {
    if (R() == 0) std::printf("[cuda_errors] skipped: needs one rank and the CUDA emulator\n");
    return;
  }
  constexpr int kNcclUnhandledCudaError = 1;  // nccl.h's ncclUnhandledCudaError
  struct Case {
    const char* function;
    int error;
    const char* op;
    hvd_dtype_t dtype;
  };
  const Case cases[] = {
      {"cudaMemcpyAsync", cudaErrorInvalidValue, "allreduce", HVD_INT16},  // staged
      {"cudaStreamWaitEvent", cudaErrorInvalidValue, "allreduce", HVD_FLOAT32},
      {"cudaEventQuery", cudaErrorLaunchFailure, "allreduce", HVD_INT16},
      // The producer's event at the call (MarkReady).
      {"cudaEventRecord", cudaErrorInvalidValue, "allreduce", HVD_FLOAT32},
      // A NCCL allreduce's wait for the device: on the cycle, or with
      // HVD_GPU_ASYNC_COMPLETION=1 on the group's completion thread (gpu_emu_worker_async_*).
      {"cudaEventQuery", cudaErrorLaunchFailure, "allreduce", HVD_FLOAT32},
      {"ncclAllReduce", kNcclUnhandledCudaError, "allreduce", HVD_FLOAT32},
      {"ncclAllGather", kNcclUnhandledCudaError, "allgather", HVD_FLOAT32},
      {"cudaMallocFromPoolAsync", cudaErrorMemoryAllocation, "allgather", HVD_FLOAT32},
  };
  int k = 0;
  for (const Case& c : cases) {
    for (bool failing : {true, false}) {
      const std::string name = "gpu.cuda_error." + std::to_string(k++);
      const std::string what = std::string(c.op) + " of " + DTypeOf(c.dtype).name +
                               (failing ? std::string(" with ") + c.function + " failing"
                                        : std::string(" after ") + c.function + " failed");
      DevicePtr t = MakeDevice(c.dtype, {6}, [](int64_t i) { return i + 1; });
      hvd_tensor_t d = t->Desc();
      hvd_op_options_t o = Options(name);
      if (failing) fail_next(c.function, c.error);
      hvd_handle_t h = 0;
      hvd_status_t s = std::string(c.op) == "allreduce" ? hvd_allreduce(&d, &d, &o, &h)
                                                        : hvd_allgather(&d, &o, &h);
      std::string message;
      if (s == HVD_OK) {
        s = hvd_wait(h, kWaitSeconds);
        if (s == HVD_IN_PROGRESS) Die(what + ": not complete", s);
        if (s != HVD_OK) message = hvd_last_error();
        if (s == HVD_OK && std::string(c.op) == "allgather") {
          ExpectOutput(h, 0, what, c.dtype, {6}, {1, 2, 3, 4, 5, 6},
                       DeviceOutputsExpected("ALLGATHER"));
        }
        hvd_release(h);
      } else {
        message = hvd_last_error();
      }
      if (failing) {
        fail_next("", 0);  // disarmed, had the call not come
        if (s == HVD_OK) {
          Fail(what + ": succeeded");
        } else if (message.find(name) == std::string::npos ||
                   (message.find("CUDA error") == std::string::npos &&
                    message.find("NCCL") == std::string::npos)) {
          Fail(what + ": the error does not name the op and CUDA's or NCCL's error: " + message);
        }
        const cudaError_t pending = cudaGetLastError();
        if (pending != cudaSuccess) {
          Fail(what + ": CUDA error " + cudaGetErrorName(pending) + " left pending");
        }
        Require(hvd_shutdown(), what + ": hvd_shutdown");
        Require(hvd_init(), what + ": hvd_init again");
        Ctx().even_set = -1;  // the sets of the first init are gone
        continue;
      }
      if (s != HVD_OK) {
        Fail(what + ": failed again (status " + std::to_string(s) + "): " + message);
      } else if (std::string(c.op) == "allreduce") {
        ExpectDevice(what, *t, {1, 2, 3, 4, 5, 6});
      }
    }
  }
}

// One rank, NCCL allreduces completed off the cycle (HVD_GPU_ASYNC_COMPLETION=1), every piece of
// emulated device work delayed (HVD_GPU_EMU_DELAY_US): a failure is walked through each of the
// first calls of cudaEventRecord and of cudaEventCreateWithFlags that an allreduce makes (the
// emulator's fail_later), among them NcclGroup::Defer's, which hands the op to the completion
// thread once its NCCL call is queued. Whichever call fails, once the handle has failed nothing
// of hvd's lands in the output: the caller writes bytes of its own, drains the device
// (cudaDeviceSynchronize runs whatever any stream still holds) and they must still be there.
// Until 2026-11-30 a failure in Defer failed the handle at once, the NCCL call still queued
// (found by reading the code).
void DeferFailures() {
  using FailLater = void (*)(const char*, int, int);
  const auto fail_later =
      reinterpret_cast<FailLater>(dlsym(RTLD_DEFAULT, "hvd_gpu_emulator_fail_later"));
  if (fail_later == nullptr || N() != 1) {
    std::printf("[defer_failures] skipped: needs one rank and the CUDA emulator\n");
    return;
  }
  constexpr int64_t kCount = 4096;
  constexpr int kCallsWalked = 10;
  std::vector<double> want(kCount);
  for (int64_t i = 0; i < kCount; ++i) want[i] = static_cast<double>(i % 5) * 0.5;
  int failed = 0, in_defer = 0;
  for (const char* function : {"cudaEventRecord", "cudaEventCreateWithFlags"}) {
    for (int skip = 0; skip < kCallsWalked; ++skip) {
      const std::string name = std::string("gpu.defer.") + function + "." + std::to_string(skip);
      // Two tensors with a postscale: the fused path, whose copies out of the fusion buffer and
      // postscale are queued behind the NCCL call (an aborted NCCL call itself writes nothing).
      std::vector<DevicePtr> ins, outs;
      std::vector<hvd_tensor_t> in_desc, out_desc;
      for (int i = 0; i < 2; ++i) {
        ins.push_back(MakeDevice(HVD_FLOAT32, {kCount}, [](int64_t k) { return k % 5; }));
        outs.push_back(std::make_shared<DeviceTensor>(HVD_FLOAT32, std::vector<int64_t>{kCount}));
        in_desc.push_back(ins.back()->Desc());
        out_desc.push_back(outs.back()->Desc());
      }
      hvd_op_options_t o = Options(name);
      o.postscale_factor = 0.5;
      fail_later(function, cudaErrorInvalidValue, skip);
      hvd_handle_t h = 0;
      hvd_status_t s = hvd_grouped_allreduce(in_desc.data(), out_desc.data(), 2, &o, &h);
      std::string message;
      if (s == HVD_OK) {
        s = hvd_wait(h, kWaitSeconds);
        if (s == HVD_IN_PROGRESS) Die(name + ": no end within the wait", s);
        if (s != HVD_OK) message = hvd_last_error();
        hvd_release(h);
      } else {
        message = hvd_last_error();
      }
      fail_later("", 0, 0);  // disarmed, had the call not come
      if (s == HVD_OK) {
        for (const DevicePtr& out : outs) ExpectDevice(name, *out, want);
        continue;
      }
      ++failed;
      if (message.find("NCCL allreduce: CUDA error") != std::string::npos) ++in_defer;
      const cudaError_t pending = cudaGetLastError();
      if (pending != cudaSuccess) {
        Fail(name + ": CUDA error " + cudaGetErrorName(pending) + " left pending");
      }
      const std::vector<const DeviceTensor*> mine = {outs[0].get(), outs[1].get()};
      WriteAsTheCaller(mine);
      RequireCuda(cudaDeviceSynchronize(), name + ": cudaDeviceSynchronize");
      const int64_t changed = BytesNoLongerTheCallers(mine);
      if (changed != 0) {
        Fail(name + ": " + std::to_string(changed) +
             " bytes of the outputs written after the op "
             "failed (" +
             message + ")");
      }
      Require(hvd_shutdown(), name + ": hvd_shutdown");
      Require(hvd_init(), name + ": hvd_init again");
      Ctx().even_set = -1;  // the sets of the first init are gone
    }
  }
  if (in_defer == 0) Fail("no failure came in the hand-over to the completion thread (Defer)");
  std::printf(
      "[defer_failures] %d failed allreduces, %d in the hand-over to the completion "
      "thread; none wrote its output after its failure\n",
      failed, in_defer);
  std::fflush(stdout);
}

}  // namespace hvd_gpu
