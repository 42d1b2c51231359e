// NCCL communicators on a real GPU (ctest label gpu; exits 77, skipped, where no GPU is visible).
// The members of a group are threads with an in-process CPU communicator for the id exchange;
// NCCL's own bootstrap and transports are real. One GPU is enough: a member that dies between
// the exchange and its init is a thread that takes part in the exchange and then returns.
#include "runtime/transports/nccl/nccl_group.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "runtime/transports/nccl/cuda_backend.h"
#include "runtime/transports/nccl/device_memory.h"
#include "test/fakes/in_process_communicator.h"

namespace hvd::runtime {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Set rank 1 of a 2-member group on another host: it sends its identity, receives rank 0's
// decision (with the NCCL id), and then is gone without creating its communicator.
void MemberThatDiesBeforeItsInit(hvd::testing::InProcessWorld* world) {
  auto comm = world->Join("nccl-init", 1, 2);
  std::vector<std::string> ignored;
  ASSERT_TRUE(comm->GatherBytes("auto\nsome-other-host\n0000:ff:00.0", 0, &ignored).ok());
  std::string decision;
  ASSERT_TRUE(comm->BroadcastBytes(&decision, 0).ok());
  ASSERT_EQ(decision[0], 'N') << "rank 0 should have chosen NCCL: " << decision;
}

// Rank 0 of a 2-member group whose rank 1 never creates its communicator: CreateNcclGroup's
// result, and in *took how long it took.
Result<std::unique_ptr<GpuGroup>> CreateWithAbsentPeer(CudaBackend* backend, double* took) {
  hvd::testing::InProcessWorld world;
  std::thread peer(MemberThatDiesBeforeItsInit, &world);
  auto comm = world.Join("nccl-init", 0, 2);
  const Clock::time_point start = Clock::now();
  auto group = CreateNcclGroup(backend, comm.get(), 0, "auto");
  *took = SecondsSince(start);
  peer.join();
  if (!group.ok()) std::printf("after %.2f s: %s\n", *took, group.status().message().c_str());
  return group;
}

// A one-member set on device 0 with its NCCL group, and what the group needs alive: the
// in-process world and its communicator, the backend. Members go in reverse order, the group
// first.
struct OneMember {
  hvd::testing::InProcessWorld world;
  std::unique_ptr<Communicator> comm;
  CudaBackend backend;
  std::unique_ptr<GpuGroup> group;
};

// Starts `m`'s backend (`output_cache_bytes`: HVD_OUTPUT_CACHE_BYTES) and makes its group over a
// one-member set named `scope`; fails the test unless the set takes NCCL.
void MakeOneMember(const std::string& scope, int64_t output_cache_bytes, OneMember* m) {
  m->comm = m->world.Join(scope, 0, 1);
  m->backend.Start(std::chrono::milliseconds(30000), "", output_cache_bytes);
  auto made = CreateNcclGroup(&m->backend, m->comm.get(), 0, "auto");
  ASSERT_TRUE(made.ok()) << made.status().message();
  ASSERT_NE(made.value(), nullptr) << "one member with a GPU of its own should get NCCL";
  m->group = std::move(made).value();
}

// `ops` allreduces of the `count` float32 at `a` (device memory), each doubling it (the sum of
// the one member, postscaled by 2), enqueued back to back with each completion deferred:
// done(i, status) for the i-th, called on the group's thread (a copy of `done` each, so it
// may be a temporary). Fails the test at the first call that fails.
void EnqueueDoublingsDeferred(GpuGroup& group, float* a, int64_t count, int ops,
                              const std::function<void(int, const Status&)>& done) {
  const void* in[] = {a};
  void* out[] = {a};
  const int64_t counts[] = {count};
  for (int i = 0; i < ops; ++i) {
    const Status enqueued =
        group.EnqueueAllreduce(in, out, counts, DataType::kFloat32, ReduceOp::kSum, 1.0, 2.0);
    ASSERT_TRUE(enqueued.ok()) << enqueued.message();
    const Status deferred = group.Defer("allreduce", [done, i](const Status& s) { done(i, s); });
    ASSERT_TRUE(deferred.ok()) << deferred.message();
  }
}

// Makes `logger` the process's default logger while it lives, and the previous one again after
// (also when an assertion ends the test early: the logger's stream dies with the test).
class DefaultLogger {
 public:
  explicit DefaultLogger(std::shared_ptr<spdlog::logger> logger)
      : previous_(spdlog::default_logger()) {
    spdlog::set_default_logger(std::move(logger));
  }
  ~DefaultLogger() { spdlog::set_default_logger(previous_); }
  DefaultLogger(const DefaultLogger&) = delete;
  DefaultLogger& operator=(const DefaultLogger&) = delete;

 private:
  std::shared_ptr<spdlog::logger> previous_;
};

TEST(NcclGroupTest, AMemberThatNeverJoinsFailsTheOthersAtTheTimeoutNotAHang) {
  CudaBackend backend;
  backend.Start(std::chrono::milliseconds(2000), "", 0);
  double took = 0;
  auto group = CreateWithAbsentPeer(&backend, &took);
  ASSERT_FALSE(group.ok()) << "created a 2-rank NCCL communicator whose rank 1 never joined";
  const std::string message = group.status().message();
  EXPECT_EQ(group.status().code(), StatusCode::kTimeout) << message;
  EXPECT_NE(message.find("creating the NCCL communicator of 2 ranks (this is rank 0)"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("did not finish within 2 s (HVD_GLOO_TIMEOUT_SECONDS)"), std::string::npos)
      << message;
  EXPECT_GE(took, 1.9);
  EXPECT_LT(took, 10.0);
}

TEST(NcclGroupTest, AbortEndsTheWaitForAMemberThatNeverJoins) {
  CudaBackend backend;
  backend.Start(std::chrono::milliseconds(120000), "", 0);
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    backend.Abort();  // as hvd_abort (an elastic reset, shutdown) does from another thread
  });
  double took = 0;
  auto group = CreateWithAbsentPeer(&backend, &took);
  aborter.join();
  ASSERT_FALSE(group.ok());
  EXPECT_EQ(group.status().code(), StatusCode::kAborted) << group.status().message();
  EXPECT_NE(group.status().message().find("was aborted"), std::string::npos)
      << group.status().message();
  EXPECT_LT(took, 10.0);
}

// One member: the non-blocking communicator's init and its calls (which may answer
// ncclInProgress) give the right results: a lone tensor, a scaled one, a fused pair (the copies
// out of the fusion buffer must follow the allreduce) and a broadcast.
TEST(NcclGroupTest, OneMemberReducesFusesAndBroadcastsOnItsGpu) {
  OneMember m;
  ASSERT_NO_FATAL_FAILURE(MakeOneMember("nccl-one", 0, &m));
  std::unique_ptr<GpuGroup>& group = m.group;

  constexpr int64_t kCount = 1 << 18;
  std::vector<float> host(kCount);
  for (int64_t i = 0; i < kCount; ++i) host[i] = static_cast<float>(i % 1000);
  float* a = nullptr;
  float* b = nullptr;
  ASSERT_EQ(cudaMalloc(&a, kCount * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&b, kCount * sizeof(float)), cudaSuccess);
  auto upload = [&](float* d) {
    ASSERT_EQ(cudaMemcpy(d, host.data(), kCount * sizeof(float), cudaMemcpyHostToDevice),
              cudaSuccess);
  };
  auto expect = [&](const float* d, float factor, const char* what) {
    std::vector<float> got(kCount);
    ASSERT_EQ(cudaMemcpy(got.data(), d, kCount * sizeof(float), cudaMemcpyDeviceToHost),
              cudaSuccess);
    for (int64_t i = 0; i < kCount; ++i) {
      ASSERT_EQ(got[i], host[i] * factor) << what << " element " << i;
    }
  };

  upload(a);
  const void* in1[] = {a};
  void* out1[] = {a};
  const int64_t count1[] = {kCount};
  ASSERT_TRUE(
      group->Allreduce(in1, out1, count1, DataType::kFloat32, ReduceOp::kSum, 1.0, 1.0).ok());
  expect(a, 1.0f, "lone allreduce");
  // One member scales in hvd's kernel (HaveScaleKernel), else in NCCL's one-rank sum.
  ASSERT_TRUE(
      group->Allreduce(in1, out1, count1, DataType::kFloat32, ReduceOp::kSum, 0.5, 1.0).ok());
  expect(a, 0.5f, "prescaled allreduce");

  upload(a);
  upload(b);
  const void* in2[] = {a, b};
  void* out2[] = {b, a};  // swapped: each output is the other tensor's result
  const int64_t count2[] = {kCount, kCount};
  ASSERT_TRUE(
      group->Allreduce(in2, out2, count2, DataType::kFloat32, ReduceOp::kSum, 4.0, 0.5).ok());
  expect(a, 2.0f, "fused scaled allreduce, first output");
  expect(b, 2.0f, "fused scaled allreduce, second output");

  ASSERT_EQ(cudaMemset(b, 0, kCount * sizeof(float)), cudaSuccess);
  ASSERT_TRUE(group->Broadcast(a, b, kCount * static_cast<int64_t>(sizeof(float)), 0).ok());
  expect(b, 2.0f, "broadcast");
  group.reset();
  cudaFree(a);
  cudaFree(b);
}

// `count` floats of `value` on the current device (the test fails if it cannot make them).
void DeviceFilled(int64_t count, float value, float** out) {
  std::vector<float> host(count, value);
  ASSERT_EQ(cudaMalloc(out, count * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(*out, host.data(), count * sizeof(float), cudaMemcpyHostToDevice),
            cudaSuccess);
}

// NCCL's kernels stop early once its abort flag is set (a peer lost, a network error); the event
// recorded after the call then completes with the outputs unwritten. Such an op must fail, not
// come back as done: before 2026-11-30 a wait whose first query found the event complete never
// asked the communicator (the survivor of gpu_emu_nccl_peer_dies_nccl_error took garbage for a
// result under load and failed only at its next op). The emulated GPU stops a collective so on
// request; NCCL has no such switch, so on a real GPU the test is skipped.
TEST(NcclGroupTest, ACollectiveStoppedOnAFailedCommunicatorFailsItsOp) {
  using BreakHook = void (*)(int);
  const auto hook =
      reinterpret_cast<BreakHook>(dlsym(RTLD_DEFAULT, "hvd_gpu_emulator_break_in_next_collective"));
  if (hook == nullptr) GTEST_SKIP() << "needs the emulated GPU";
  OneMember m;
  ASSERT_NO_FATAL_FAILURE(MakeOneMember("nccl-broken", 0, &m));
  constexpr int64_t kCount = 1024;
  float* a = nullptr;
  ASSERT_NO_FATAL_FAILURE(DeviceFilled(kCount, 3.0f, &a));
  const void* in[] = {a};
  void* out[] = {a};
  const int64_t count[] = {kCount};
  hook(ncclRemoteError);
  Status s = m.group->Allreduce(in, out, count, DataType::kFloat32, ReduceOp::kSum, 1.0, 1.0);
  EXPECT_EQ(s.code(), StatusCode::kRemoteError) << s.ToString();
  EXPECT_NE(s.message().find("NCCL allreduce failed: remote process exited"), std::string::npos)
      << s.ToString();
  // The communicator is given up: the next op fails at once rather than run on it.
  Status next = m.group->Allreduce(in, out, count, DataType::kFloat32, ReduceOp::kSum, 1.0, 1.0);
  EXPECT_FALSE(next.ok());
  m.group.reset();

  // The same for an allreduce completed off the cycle (HVD_GPU_ASYNC_COMPLETION).
  OneMember d;
  ASSERT_NO_FATAL_FAILURE(MakeOneMember("nccl-broken-deferred", 0, &d));
  hook(ncclRemoteError);
  ASSERT_TRUE(
      d.group->EnqueueAllreduce(in, out, count, DataType::kFloat32, ReduceOp::kSum, 1.0, 1.0).ok());
  std::mutex mu;
  std::condition_variable cv;
  std::optional<Status> done;
  ASSERT_TRUE(d.group
                  ->Defer("allreduce",
                          [&](const Status& st) {
                            std::lock_guard<std::mutex> lock(mu);
                            done = st;
                            cv.notify_all();
                          })
                  .ok());
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return done.has_value(); }));
  }
  EXPECT_EQ(done->code(), StatusCode::kRemoteError) << done->ToString();
  EXPECT_NE(done->message().find("NCCL allreduce failed: remote process exited"), std::string::npos)
      << done->ToString();
  d.group.reset();
  cudaFree(a);
}

TEST(NcclGroupTest, ItsCallStatisticsAreLoggedAtDebugLevelWhenItGoes) {
  // Given a one-member group whose process logs at debug level into a stream
  std::ostringstream log;
  auto capture = std::make_shared<spdlog::logger>(
      "capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(log));
  capture->set_level(spdlog::level::debug);
  {
    DefaultLogger logging(capture);
    OneMember m;
    ASSERT_NO_FATAL_FAILURE(MakeOneMember("nccl-stats", 0, &m));
    std::unique_ptr<GpuGroup>& group = m.group;
    float* a = nullptr;
    ASSERT_EQ(cudaMalloc(&a, 1024 * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMemset(a, 0, 1024 * sizeof(float)), cudaSuccess);
    // When it runs two unscaled allreduces and a broadcast (one NCCL call and one wait each)
    const void* in[] = {a};
    void* out[] = {a};
    const int64_t count[] = {1024};
    for (int i = 0; i < 2; ++i) {
      ASSERT_TRUE(
          group->Allreduce(in, out, count, DataType::kFloat32, ReduceOp::kSum, 1.0, 1.0).ok());
    }
    ASSERT_TRUE(group->Broadcast(a, a, 1024 * static_cast<int64_t>(sizeof(float)), 0).ok());
    // And goes
    group.reset();
    cudaFree(a);
  }
  // Then its line counts the three calls and the three waits
  const std::string text = log.str();
  EXPECT_NE(text.find("NCCL group of 1 members (member 0, device 0): 3 calls settled, "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(", 3 waits for the device ("), std::string::npos) << text;
}

// Completion off the cycle (HVD_GPU_ASYNC_COMPLETION=1): allreduces enqueued back to back, each
// completion deferred, finish in their order on a thread of the group's, after the device did
// the work (each doubles the tensor: the last result is 2^8 times the input). Once the runtime
// fails the set (FailDeferred), the next deferral and the next call fail with its status.
TEST(NcclGroupTest, DeferredCompletionsFinishInOrderOffTheCallersThreadAfterTheWork) {
  OneMember m;
  ASSERT_NO_FATAL_FAILURE(MakeOneMember("nccl-deferred", 0, &m));
  std::unique_ptr<GpuGroup>& group = m.group;
  constexpr int64_t kCount = 1 << 18;
  constexpr int kOps = 8;
  std::vector<float> host(kCount);
  for (int64_t i = 0; i < kCount; ++i) host[i] = static_cast<float>(i % 1000);
  float* a = nullptr;
  ASSERT_EQ(cudaMalloc(&a, kCount * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(a, host.data(), kCount * sizeof(float), cudaMemcpyHostToDevice),
            cudaSuccess);
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int> order;
  std::vector<std::string> errors;
  bool on_caller = false;
  const std::thread::id caller = std::this_thread::get_id();
  const auto completed = [&](int i, const Status& s) {
    std::lock_guard<std::mutex> lock(mu);
    order.push_back(i);
    if (!s.ok()) errors.push_back(s.message());
    on_caller |= std::this_thread::get_id() == caller;
    cv.notify_all();
  };
  ASSERT_NO_FATAL_FAILURE(EnqueueDoublingsDeferred(*group, a, kCount, kOps, completed));
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return order.size() == kOps; }))
        << order.size() << " of " << kOps << " completions in 60 s";
  }
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_TRUE(errors.empty()) << errors.front();
  EXPECT_FALSE(on_caller) << "a completion ran on the thread that deferred it";
  // Done means done: the result is read without waiting for the stream.
  std::vector<float> got(kCount);
  ASSERT_EQ(cudaMemcpy(got.data(), a, kCount * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  for (int64_t i = 0; i < kCount; ++i) ASSERT_EQ(got[i], host[i] * 256.0f) << "element " << i;

  group->FailDeferred(Status::RemoteError("rank 1 (pid 42) exited"));
  bool called = false;
  const Status deferred = group->Defer("allreduce", [&](const Status&) { called = true; });
  EXPECT_EQ(deferred.code(), StatusCode::kRemoteError) << deferred.message();
  EXPECT_EQ(deferred.message(), "rank 1 (pid 42) exited");
  const void* in[] = {a};
  void* out[] = {a};
  const int64_t count[] = {kCount};
  const Status next =
      group->EnqueueAllreduce(in, out, count, DataType::kFloat32, ReduceOp::kSum, 1.0, 1.0);
  EXPECT_EQ(next.message(), "rank 1 (pid 42) exited");
  group.reset();
  EXPECT_FALSE(called) << "a deferral that failed called its done";
  cudaFree(a);
}

// Before a shutdown (GpuGroup::Drain): with nothing deferred it returns at once; with
// allreduces deferred it returns once every `done` has been called, with the device's work done.
TEST(NcclGroupTest, DrainReturnsOnceEveryDeferredCompletionIsDone) {
  OneMember m;
  ASSERT_NO_FATAL_FAILURE(MakeOneMember("nccl-drain", 0, &m));
  std::unique_ptr<GpuGroup>& group = m.group;
  EXPECT_TRUE(group->Drain().ok());
  constexpr int64_t kCount = 1 << 18;
  constexpr int kOps = 4;
  float* a = nullptr;
  ASSERT_NO_FATAL_FAILURE(DeviceFilled(kCount, 3.0f, &a));
  std::atomic<int> done{0}, failed{0};
  const auto completed = [&](int, const Status& s) {
    failed += s.ok() ? 0 : 1;
    ++done;
  };
  ASSERT_NO_FATAL_FAILURE(EnqueueDoublingsDeferred(*group, a, kCount, kOps, completed));
  const Status drained = group->Drain();
  EXPECT_TRUE(drained.ok()) << drained.message();
  EXPECT_EQ(done.load(), kOps) << "Drain returned before every completion was done";
  EXPECT_EQ(failed.load(), 0);
  std::vector<float> got(kCount);
  ASSERT_EQ(cudaMemcpy(got.data(), a, kCount * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  for (int64_t i = 0; i < kCount; ++i) ASSERT_EQ(got[i], 3.0f * 16.0f) << "element " << i;
  cudaFree(a);
}

// One member: the enqueue-only calls and Finish, on device outputs and scratch from the
// backend's stream-ordered pool: an allgather, a reducescatter and an alltoall (its own
// piece, a device copy) into outputs that are then given back, on the caller's stream and on
// their own; none is left registered.
TEST(NcclGroupTest, OneMemberGathersScattersAndExchangesIntoDeviceOutputs) {
  OneMember m;
  ASSERT_NO_FATAL_FAILURE(MakeOneMember("nccl-outputs", int64_t{64} << 20, &m));
  CudaBackend& backend = m.backend;
  std::unique_ptr<GpuGroup>& group = m.group;
  const int64_t live = LiveDeviceOutputs();

  constexpr int64_t kCount = 4099;  // odd and prime: no tail left out
  constexpr int64_t kBytes = kCount * static_cast<int64_t>(sizeof(float));
  std::vector<float> host(kCount);
  for (int64_t i = 0; i < kCount; ++i) host[i] = static_cast<float>(i % 251);
  auto input = backend.DeviceScratch(0, kBytes);
  ASSERT_TRUE(input.ok()) << input.status().message();
  auto expect = [&](void* d, float factor, const char* what) {
    std::vector<float> got(kCount);
    ASSERT_EQ(cudaMemcpy(got.data(), d, kBytes, cudaMemcpyDeviceToHost), cudaSuccess);
    for (int64_t i = 0; i < kCount; ++i) {
      ASSERT_EQ(got[i], host[i] * factor) << what << " element " << i;
    }
  };
  const int64_t bytes[] = {kBytes}, counts[] = {kCount};
  std::vector<void*> outputs;
  for (int i = 0; i < 3; ++i) {
    auto out = backend.AllocDeviceOutput(0, kBytes);
    ASSERT_TRUE(out.ok()) << out.status().message();
    outputs.push_back(*out);
  }
  EXPECT_EQ(LiveDeviceOutputs(), live + 3);
  // The memory was allocated in the order of hvd's stream: other streams use it after that.
  ASSERT_TRUE(backend.Sync(0).ok());
  ASSERT_EQ(cudaMemcpy(*input, host.data(), kBytes, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_TRUE(group->Allgatherv(*input, outputs[0], bytes).ok());
  ASSERT_TRUE(
      group
          ->ReduceScatter(*input, outputs[1], counts, DataType::kFloat32, ReduceOp::kSum, 1.0, 0.25)
          .ok());
  ASSERT_TRUE(group->Alltoallv(*input, bytes, outputs[2], bytes).ok());
  ASSERT_TRUE(group->Finish("the three ops").ok());
  expect(outputs[0], 1.0f, "allgather");
  expect(outputs[1], 0.25f, "postscaled reducescatter");
  expect(outputs[2], 1.0f, "alltoall");
  // Freed on the caller's stream (hvd_free_on_stream), on the legacy one, on their own.
  cudaStream_t side = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking), cudaSuccess);
  DeviceOutputFree free = backend.device_output_free();
  ASSERT_NE(free, nullptr);
  EXPECT_TRUE(free(outputs[0], true, side));
  EXPECT_TRUE(free(outputs[1], true, nullptr));
  EXPECT_TRUE(free(outputs[2], false, nullptr));
  EXPECT_FALSE(free(outputs[2], false, nullptr));  // not twice
  EXPECT_FALSE(free(host.data(), true, nullptr));  // not its memory: left alone
  EXPECT_EQ(LiveDeviceOutputs(), live);
  ASSERT_EQ(cudaStreamSynchronize(side), cudaSuccess);
  cudaStreamDestroy(side);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  group.reset();
}

}  // namespace
}  // namespace hvd::runtime

int main(int argc, char** argv) {
  int devices = 0;
  const cudaError_t err = cudaGetDeviceCount(&devices);
  if (err != cudaSuccess || devices == 0) {
    std::printf("SKIPPED: no CUDA device visible (%s)\n",
                err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
