#include "test/unit/runtime/rank_harness.h"

#include <gtest/gtest.h>

#include <memory>
#include <thread>

namespace hvd::testing {

runtime::RuntimeConfig TestConfig(int rank, int size) {
  runtime::RuntimeConfig c;
  c.rank = rank;
  c.size = size;
  c.local_rank = rank;
  c.local_size = size;
  c.timeout = std::chrono::seconds(20);
  c.stall_check_time = std::chrono::seconds(60);
  c.stall_shutdown_time = std::chrono::seconds(0);
  return c;
}

void RunRanks(int size, const RankBody& body, const ConfigTweak& tweak, InProcessWorld* world,
              const std::vector<std::vector<int32_t>>& process_sets) {
  std::unique_ptr<InProcessWorld> owned;
  if (world == nullptr) {
    owned = std::make_unique<InProcessWorld>(std::chrono::seconds(20));
    world = owned.get();
  }
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      runtime::Runtime rt(world->Factory());
      runtime::RuntimeConfig config = TestConfig(r, size);
      if (tweak) tweak(&config);
      Status s = rt.Init(config, process_sets);
      ASSERT_TRUE(s.ok()) << "rank " << r << ": " << s.ToString();
      body(r, rt);
      EXPECT_TRUE(rt.Shutdown().ok());
    });
  }
  for (auto& t : threads) t.join();
}

Status WaitAndRelease(runtime::Runtime& rt, int64_t handle, double seconds) {
  Status s = rt.handles().Wait(handle, std::chrono::duration<double>(seconds));
  if (s.code() != StatusCode::kInProgress) (void)rt.handles().Release(handle);
  return s;
}

runtime::TensorSpec Spec(void* data, runtime::DataType dtype, std::vector<int64_t> shape) {
  runtime::TensorSpec t;
  t.data = data;
  t.dtype = dtype;
  t.shape = runtime::TensorShape(shape);
  return t;
}

}  // namespace hvd::testing
