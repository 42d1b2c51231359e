// The backends' timeouts bound a wait with nothing arriving, not a whole collective: a large
// broadcast on a slow link takes longer than HVD_GLOO_TIMEOUT_SECONDS and still completes.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "scenarios.h"

namespace hvd_e2e {

void SlowBroadcast() {
  // 64 MiB from rank 0. On Gloo at 3+ ranks it goes down a chain in 64 pieces of 1 MiB (each a
  // wait of its own); the test runs the job on a loopback shaped to a few hundred Mbit/s, so
  // the whole broadcast takes several times the timeout while no piece takes long. Until
  // 2026-12-01 Gloo's timeout bounded the whole collective and this failed after the timeout.
  const char* timeout_env = std::getenv("HVD_GLOO_TIMEOUT_SECONDS");
  const double timeout = timeout_env != nullptr ? std::atof(timeout_env) : 30.0;
  constexpr int64_t kCount = int64_t{16} << 20;  // float32: 64 MiB
  auto t = Make(HVD_FLOAT32, {kCount});
  const auto value = [](int64_t k) { return static_cast<double>(k % 1000); };
  for (int64_t k = 0; k < kCount; ++k) t->Set(k, R() == 0 ? value(k) : -1.0);
  const std::string what = "broadcast of 64 MiB on a slow link";
  hvd_op_options_t o = Options("slow.broadcast");
  o.root_rank = 0;
  hvd_tensor_t a = t->Desc();
  hvd_handle_t handle;
  const auto start = std::chrono::steady_clock::now();
  Require(hvd_broadcast(&a, &a, &o, &handle), what);
  WaitRelease(handle, what);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (int64_t k = 0; k < kCount; ++k) {
    if (t->Get(k) != value(k)) {
      Fail(what + ": element " + std::to_string(k) + " is " + std::to_string(t->Get(k)));
      break;
    }
  }
  if (R() == N() - 1) {
    std::printf("[slow_broadcast] rank %d: took %.2f s, timeout %.0f s\n", R(), took, timeout);
    std::fflush(stdout);
    // Quicker than twice the timeout proves nothing about a per-wait timeout: the link was not
    // slow enough (the shaping did not take).
    if (took < 2 * timeout) Fail(what + ": too quick to tell (" + std::to_string(took) + " s)");
  }
}

}  // namespace hvd_e2e
