// The emulated GPU's own promises (README.md), so that a test passing on it means something:
// device memory the host cannot touch, copies checked, streams asynchronous but ordered, and
// NCCL between ranks (threads here, each with its own communicator and stream) with its
// results, its strictness and its non-blocking answers. Linked with the emulator directly, not
// with the CUDA runtime or NCCL.
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

// Ranks as threads need a device each (NCCL refuses two ranks on one GPU): four emulated GPUs,
// set before the emulator reads it (at its first call, from main on).
const bool kDevices = setenv("HVD_GPU_EMU_DEVICES", "4", 0) == 0;

std::vector<float> Download(const void* device, size_t count) {
  std::vector<float> host(count);
  EXPECT_EQ(cudaMemcpy(host.data(), device, count * sizeof(float), cudaMemcpyDeviceToHost),
            cudaSuccess);
  return host;
}

void* Upload(const std::vector<float>& host) {
  void* device = nullptr;
  EXPECT_EQ(cudaMalloc(&device, host.size() * sizeof(float)), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(device, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice),
            cudaSuccess);
  return device;
}

TEST(GpuEmulatorDeathTest, TheHostCannotTouchDeviceMemory) {
  void* device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, 64), cudaSuccess);
  EXPECT_DEATH(
      {
        volatile float* p = static_cast<float*>(device);
        std::printf("%f\n", static_cast<double>(p[0]));
      },
      "");
  cudaFree(device);
}

TEST(GpuEmulator, CopiesAreCheckedForKindAndBounds) {
  void* device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, 16), cudaSuccess);
  float host[8] = {};
  // Past the allocation's end, and the wrong kind, are errors that cudaGetLastError hands over
  // once.
  EXPECT_EQ(cudaMemcpy(device, host, 32, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(host, device, 16, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  cudaGetLastError();
  EXPECT_EQ(cudaMemcpy(device, host, 16, cudaMemcpyHostToDevice), cudaSuccess);
  // cudaPointerGetAttributes tells device, pinned and plain host memory apart.
  void* pinned = nullptr;
  ASSERT_EQ(cudaHostAlloc(&pinned, 16, cudaHostAllocDefault), cudaSuccess);
  cudaPointerAttributes attr{};
  ASSERT_EQ(cudaPointerGetAttributes(&attr, static_cast<char*>(device) + 4), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeDevice);
  ASSERT_EQ(cudaPointerGetAttributes(&attr, pinned), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeHost);
  ASSERT_EQ(cudaPointerGetAttributes(&attr, host), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeUnregistered);
  // Freed memory is gone: a copy into it fails.
  ASSERT_EQ(cudaFree(device), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(device, host, 16, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  cudaGetLastError();
  cudaFreeHost(pinned);
}

TEST(GpuEmulator, StreamsAreOrderedByEventsNotByTheHost) {
  // Stream a: four 64 MiB copies (tens of milliseconds here), then x = 1, then event e. Stream b
  // waits for e and reads x: it must see 1, though the host queued it long before a got there.
  constexpr size_t kBig = size_t{64} << 20;
  void *big_from = nullptr, *big_to = nullptr;
  ASSERT_EQ(cudaMalloc(&big_from, kBig), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&big_to, kBig), cudaSuccess);
  void* x = Upload({0.0f});
  cudaStream_t a = nullptr, b = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
  cudaEvent_t e = nullptr;
  ASSERT_EQ(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), cudaSuccess);
  const float one = 1.0f;
  float seen = -1.0f;
  for (int i = 0; i < 4; ++i) {  // tens of milliseconds of work queued before x = 1
    ASSERT_EQ(cudaMemcpyAsync(big_to, big_from, kBig, cudaMemcpyDeviceToDevice, a), cudaSuccess);
  }
  ASSERT_EQ(cudaMemcpyAsync(x, &one, sizeof(one), cudaMemcpyHostToDevice, a), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(e, a), cudaSuccess);
  // The host did not wait: the event is not reached yet (the big copies are still running).
  EXPECT_EQ(cudaEventQuery(e), cudaErrorNotReady);
  ASSERT_EQ(cudaStreamWaitEvent(b, e, 0), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(&seen, x, sizeof(seen), cudaMemcpyDeviceToHost, b), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(b), cudaSuccess);
  EXPECT_EQ(seen, 1.0f);
  EXPECT_EQ(cudaEventQuery(e), cudaSuccess);
  cudaEventDestroy(e);
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
  cudaFree(big_from);
  cudaFree(big_to);
  cudaFree(x);
}

// A non-blocking communicator (as hvd makes them) of rank r of n, on the calling thread's
// device; the state its init settled in.
ncclResult_t Init(ncclComm_t* comm, int n, const ncclUniqueId& id, int r) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclResult_t state = ncclCommInitRankConfig(comm, n, id, r, &config);
  while (state == ncclInProgress) ncclCommGetAsyncError(*comm, &state);
  return state;
}

// `n` ranks as threads, rank r on device r, each with its own communicator (one unique id) and
// stream, running body(rank, comm, stream).
template <typename Body>
void Ranks(int n, const Body& body) {
  ASSERT_TRUE(kDevices);
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      ASSERT_EQ(cudaSetDevice(r), cudaSuccess);
      ncclComm_t comm = nullptr;
      ASSERT_EQ(Init(&comm, n, id, r), ncclSuccess);
      cudaStream_t stream = nullptr;
      ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
      body(r, comm, stream);
      cudaStreamDestroy(stream);
      ncclCommAbort(comm);
    });
  }
  for (auto& t : threads) t.join();
}

TEST(GpuEmulator, NcclCollectivesGiveNcclsResults) {
  Ranks(3, [](int r, ncclComm_t comm, cudaStream_t stream) {
    // Allreduce of 5 elements, plain and pre-multiplied by 0.5: (1 + 2 + 3) * (i + 1).
    std::vector<float> mine(5);
    for (int i = 0; i < 5; ++i) mine[i] = static_cast<float>((r + 1) * (i + 1));
    void* buf = Upload(mine);
    ASSERT_EQ(ncclAllReduce(buf, buf, 5, ncclFloat32, ncclSum, comm, stream), ncclSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    EXPECT_EQ(Download(buf, 5), (std::vector<float>{6, 12, 18, 24, 30}));
    ncclRedOp_t half_sum;
    float scalar = 0.5f;
    ASSERT_EQ(
        ncclRedOpCreatePreMulSum(&half_sum, &scalar, ncclFloat32, ncclScalarHostImmediate, comm),
        ncclSuccess);
    ASSERT_EQ(ncclAllReduce(buf, buf, 5, ncclFloat32, half_sum, comm, stream), ncclSuccess);
    // Destroyed once enqueued, before it ran: NCCL allows it, the scalar was taken at the call.
    ASSERT_EQ(ncclRedOpDestroy(half_sum, comm), ncclSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    EXPECT_EQ(Download(buf, 5), (std::vector<float>{9, 18, 27, 36, 45}));
    // Allgather of 2 each, and grouped send/recv around the ring.
    void* gathered = Upload(std::vector<float>(6, -1.0f));
    void* two = Upload({static_cast<float>(r), static_cast<float>(10 * r)});
    ASSERT_EQ(ncclAllGather(two, gathered, 2, ncclFloat32, comm, stream), ncclSuccess);
    void* got = Upload({-1.0f, -1.0f});
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    ASSERT_EQ(ncclSend(two, 2, ncclFloat32, (r + 1) % 3, comm, stream), ncclSuccess);
    ASSERT_EQ(ncclRecv(got, 2, ncclFloat32, (r + 2) % 3, comm, stream), ncclSuccess);
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    EXPECT_EQ(Download(gathered, 6), (std::vector<float>{0, 0, 1, 10, 2, 20}));
    const int from = (r + 2) % 3;
    EXPECT_EQ(Download(got, 2),
              (std::vector<float>{static_cast<float>(from), static_cast<float>(10 * from)}));
    // Reducescatter: rank r gets element r of the sum of everyone's (1, 2, 3) * (rank + 1).
    void* three = Upload({1.0f * (r + 1), 2.0f * (r + 1), 3.0f * (r + 1)});
    void* one = Upload({-1.0f});
    ASSERT_EQ(ncclReduceScatter(three, one, 1, ncclFloat32, ncclSum, comm, stream), ncclSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    EXPECT_EQ(Download(one, 1), (std::vector<float>{6.0f * (r + 1)}));
    for (void* p : {buf, gathered, two, got, three, one}) cudaFree(p);
  });
}

TEST(GpuEmulator, Float16SumsRoundAtEachStep) {
  // 2048 + 1 + 1 in float16: each step rounds (2049 is not a float16), as the GPU adds, so
  // the sum stays 2048; a sum in float rounded once would give 2050.
  Ranks(3, [](int r, ncclComm_t comm, cudaStream_t stream) {
    const __half v = __float2half(r == 0 ? 2048.0f : 1.0f);
    void* buf = nullptr;
    ASSERT_EQ(cudaMalloc(&buf, sizeof(v)), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(buf, &v, sizeof(v), cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(ncclAllReduce(buf, buf, 1, ncclFloat16, ncclSum, comm, stream), ncclSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    __half got;
    ASSERT_EQ(cudaMemcpy(&got, buf, sizeof(got), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(__half2float(got), 2048.0f);
    cudaFree(buf);
  });
}

// What nvcc's module constructor does for each kernel (crt/host_runtime.h).
extern "C" void __cudaRegisterFunction(void** fat_cubin, const char* host_fun, char* device_fun,
                                       const char* device_name, int thread_limit, uint3* tid,
                                       uint3* bid, dim3* block, dim3* grid, int* warp_size);

void StubA() {}
void StubB() {}

TEST(GpuEmulator, RunsHvdsScaleKernelByItsRegisteredNameAndRefusesOthers) {
  // hvd_scale_float16's arguments (runtime/transports/nccl/scale_kernels.cu): in, out, count,
  // the factor in the type. 3 * 0.1 in float16: the factor rounds to 0.0999755859375 and the
  // product 0.2999267578125 is exact in float, then rounded once to 0.2998046875 (a float
  // multiply by the float factor 0.1 would give 0.300048828125).
  char name[] = "hvd_scale_float16";
  __cudaRegisterFunction(nullptr, reinterpret_cast<const char*>(&StubA), name, name, -1, nullptr,
                         nullptr, nullptr, nullptr, nullptr);
  const int64_t count = 5;
  std::vector<__half> host(count, __float2half(3.0f));
  void* in = nullptr;
  void* out = nullptr;
  ASSERT_EQ(cudaMalloc(&in, count * sizeof(__half)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&out, count * sizeof(__half)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(in, host.data(), count * sizeof(__half), cudaMemcpyHostToDevice),
            cudaSuccess);
  __half factor = __float2half(0.1f);
  int64_t n = count;
  void* args[] = {&in, &out, &n, &factor};
  ASSERT_EQ(
      cudaLaunchKernel(reinterpret_cast<const void*>(&StubA), dim3(1), dim3(256), args, 0, nullptr),
      cudaSuccess);
  ASSERT_EQ(cudaMemcpy(host.data(), out, count * sizeof(__half), cudaMemcpyDeviceToHost),
            cudaSuccess);
  for (const __half& v : host) EXPECT_EQ(__half2float(v), 0.2998046875f);
  // A range past the allocation, and a function never registered, are refused.
  n = count + 1;
  EXPECT_EQ(
      cudaLaunchKernel(reinterpret_cast<const void*>(&StubA), dim3(1), dim3(256), args, 0, nullptr),
      cudaErrorIllegalAddress);
  EXPECT_EQ(cudaGetLastError(), cudaErrorIllegalAddress);
  EXPECT_EQ(
      cudaLaunchKernel(reinterpret_cast<const void*>(&StubB), dim3(1), dim3(256), args, 0, nullptr),
      cudaErrorInvalidDeviceFunction);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDeviceFunction);
  cudaFree(in);
  cudaFree(out);
}

TEST(GpuEmulator, TwoRanksOnOneGpuOfOneHostAreRefusedAsByNccl) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclResult_t states[2];
  std::string errors[2];
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      cudaSetDevice(0);
      ncclComm_t comm = nullptr;
      states[r] = Init(&comm, 2, id, r);
      errors[r] = ncclGetLastError(comm);
      ncclCommAbort(comm);
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(states[r], ncclInvalidUsage);
    EXPECT_NE(errors[r].find("Duplicate GPU detected"), std::string::npos) << errors[r];
  }
}

TEST(GpuEmulator, RanksThatCallDifferentCollectivesFailNamingBoth) {
  Ranks(2, [](int r, ncclComm_t comm, cudaStream_t stream) {
    void* buf = Upload(std::vector<float>(7, 1.0f));
    ASSERT_EQ(ncclAllReduce(buf, buf, r == 0 ? 5 : 7, ncclFloat32, ncclSum, comm, stream),
              ncclSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    ncclResult_t state = ncclSuccess;
    ASSERT_EQ(ncclCommGetAsyncError(comm, &state), ncclSuccess);
    EXPECT_EQ(state, ncclInvalidUsage);
    const std::string last = ncclGetLastError(comm);
    EXPECT_NE(last.find("count 5"), std::string::npos) << last;
    EXPECT_NE(last.find("count 7"), std::string::npos) << last;
    cudaFree(buf);
  });
}

// One thread polls a communicator while another creates and destroys ops on it, for up to
// 200 million calls each: they meet, and the emulator exits; exits 0 if they never did.
[[noreturn]] void TwoThreadsCallOneCommunicator() {
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) std::exit(1);
  ncclComm_t comm = nullptr;
  if (Init(&comm, 1, id, 0) != ncclSuccess) std::exit(1);
  std::thread poll([comm] {
    for (int i = 0; i < 200'000'000; ++i) {
      ncclResult_t state;
      ncclCommGetAsyncError(comm, &state);
    }
  });
  std::thread ops([comm] {
    float scalar = 0.5f;
    for (int i = 0; i < 200'000'000; ++i) {
      ncclRedOp_t op;
      if (ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate, comm) ==
          ncclSuccess) {
        ncclRedOpDestroy(op, comm);
      }
    }
  });
  poll.join();
  ops.join();
  std::exit(0);
}

// NCCL's communicators are not thread-safe (README.md "One caller at a time per
// communicator"): two threads in calls on one communicator at once make the process exit with
// 3, naming both calls.
TEST(GpuEmulatorDeathTest, TwoThreadsInOneCommunicatorAtOnceExitNamingTheCalls) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ASSERT_TRUE(kDevices);
  EXPECT_EXIT(TwoThreadsCallOneCommunicator(), ::testing::ExitedWithCode(3),
              "(ncclCommGetAsyncError|ncclRedOpCreatePreMulSum|ncclRedOpDestroy) on "
              "communicator .* while another thread is in (ncclCommGetAsyncError|"
              "ncclRedOpCreatePreMulSum|ncclRedOpDestroy) on it");
}

TEST(GpuEmulator, ANonBlockingCallInProgressRefusesTheNext) {
  setenv("HVD_GPU_EMU_IN_PROGRESS", "2", 1);
  Ranks(2, [](int, ncclComm_t comm, cudaStream_t stream) {
    void* buf = Upload(std::vector<float>(4, 1.0f));
    ASSERT_EQ(ncclAllReduce(buf, buf, 4, ncclFloat32, ncclSum, comm, stream), ncclInProgress);
    // Not settled yet: NCCL's non-blocking contract forbids the next call.
    EXPECT_EQ(ncclAllReduce(buf, buf, 4, ncclFloat32, ncclSum, comm, stream), ncclInvalidUsage);
    ncclResult_t state = ncclInProgress;
    int polls = 0;
    while (state == ncclInProgress) {
      ASSERT_EQ(ncclCommGetAsyncError(comm, &state), ncclSuccess);
      ++polls;
    }
    EXPECT_EQ(state, ncclSuccess);
    EXPECT_EQ(polls, 3);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    EXPECT_EQ(Download(buf, 4), std::vector<float>(4, 2.0f));
    cudaFree(buf);
  });
  unsetenv("HVD_GPU_EMU_IN_PROGRESS");
}

}  // namespace
