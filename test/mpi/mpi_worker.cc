// A worker for the mpirun-mode tests: through libhvd's C API only, runs collectives whose
// results are known in closed form and prints one summary line per rank:
//
//   OK rank R size N local L/LS cross C/CS backend MPI|GLOO|MPI+GLOO
//
// Any wrong value prints "MISMATCH ..." and exits 2; an hvd error exits 3. With
// --no-shutdown returns from main without hvd_shutdown (as many C programs do). --fail-rank R
// --exit-code C, rank R exits C after the first allreduce (the others then block
// in the next collective until the launcher ends them). Other "--name value" pairs (a test's
// --marker) are ignored.
#include <hvd/c_api.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

int g_rank = 0;
int g_size = 1;

void Check(hvd_status_t status, const char* what) {
  if (status == HVD_OK) return;
  std::fprintf(stderr, "rank %d: %s: %s: %s\n", g_rank, what, hvd_status_name(status),
               hvd_last_error());
  std::exit(3);
}

void Expect(bool ok, const std::string& what) {
  if (ok) return;
  std::printf("MISMATCH rank %d: %s\n", g_rank, what.c_str());
  std::fflush(stdout);
  std::exit(2);
}

hvd_tensor_t Tensor(void* data, hvd_dtype_t dtype, int64_t rows, int64_t cols = 0) {
  hvd_tensor_t t{};
  t.data = data;
  t.dtype = dtype;
  t.ndim = cols > 0 ? 2 : 1;
  t.shape[0] = rows;
  t.shape[1] = cols;
  t.device = HVD_DEVICE_CPU;
  return t;
}

void Wait(hvd_handle_t h, const char* what) { Check(hvd_wait(h, 60.0), what); }

void Allreduces() {
  // float32 sum of rank+1 (a large one crosses the fusion path), int64 min / max.
  std::vector<float> big(1 << 18);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(g_rank + 1) + i % 7;
  hvd_tensor_t t = Tensor(big.data(), HVD_FLOAT32, static_cast<int64_t>(big.size()));
  hvd_op_options_t o;
  hvd_op_options_init(&o);
  o.name = "sum.f32";
  hvd_handle_t h;
  Check(hvd_allreduce(&t, &t, &o, &h), "allreduce");
  Wait(h, "allreduce");
  hvd_release(h);
  const float base = g_size * (g_size + 1) / 2.0f;
  for (size_t i = 0; i < big.size(); i += 997) {
    Expect(big[i] == base + g_size * static_cast<float>(i % 7), "float32 sum");
  }
  int64_t v[2] = {100 + g_rank, 100 + g_rank};
  hvd_tensor_t ti = Tensor(v, HVD_INT64, 1);
  hvd_tensor_t tj = Tensor(v + 1, HVD_INT64, 1);
  hvd_op_options_t omin = o, omax = o;
  omin.name = "min.i64";
  omin.reduce_op = HVD_OP_MIN;
  omax.name = "max.i64";
  omax.reduce_op = HVD_OP_MAX;
  hvd_handle_t h1, h2;
  Check(hvd_allreduce(&ti, &ti, &omin, &h1), "allreduce min");
  Check(hvd_allreduce(&tj, &tj, &omax, &h2), "allreduce max");
  Wait(h1, "allreduce min");
  Wait(h2, "allreduce max");
  hvd_release(h1);
  hvd_release(h2);
  Expect(v[0] == 100 && v[1] == 100 + g_size - 1, "int64 min/max");
  // float16 average of 2*(rank+1): 1.0 is exactly 0x3c00.
  std::vector<uint16_t> half(5, 0x3c00);
  hvd_tensor_t th = Tensor(half.data(), HVD_FLOAT16, 5);
  hvd_op_options_t oavg = o;
  oavg.name = "avg.f16";
  oavg.reduce_op = HVD_OP_AVERAGE;
  Check(hvd_allreduce(&th, &th, &oavg, &h), "allreduce f16");
  Wait(h, "allreduce f16");
  hvd_release(h);
  Expect(half[0] == 0x3c00 && half[4] == 0x3c00, "float16 average");
}

void BroadcastAndGather() {
  const int root = g_size - 1;
  std::vector<double> b(33, g_rank == root ? 7.5 : 0.0);
  hvd_tensor_t t = Tensor(b.data(), HVD_FLOAT64, 33);
  hvd_op_options_t o;
  hvd_op_options_init(&o);
  o.name = "bcast";
  o.root_rank = root;
  hvd_handle_t h;
  Check(hvd_broadcast(&t, &t, &o, &h), "broadcast");
  Wait(h, "broadcast");
  hvd_release(h);
  Expect(b[0] == 7.5 && b[32] == 7.5, "broadcast");
  // Allgather: rank r contributes r+1 rows of 3 int32 equal to r.
  std::vector<int32_t> rows(3 * (g_rank + 1), g_rank);
  hvd_tensor_t tg = Tensor(rows.data(), HVD_INT32, g_rank + 1, 3);
  o.name = "gather";
  Check(hvd_allgather(&tg, &o, &h), "allgather");
  Wait(h, "allgather");
  hvd_tensor_t out;
  Check(hvd_output(h, 0, &out), "allgather output");
  const int32_t* got = static_cast<const int32_t*>(out.data);
  Expect(out.shape[0] == g_size * (g_size + 1) / 2, "allgather rows");
  int64_t at = 0;
  for (int r = 0; r < g_size; ++r) {
    for (int k = 0; k < 3 * (r + 1); ++k) Expect(got[at++] == r, "allgather value");
  }
  hvd_free(out.data);
  hvd_release(h);
}

void AlltoallAndReducescatter() {
  // Alltoall: rank r sends to member j one row [r, j].
  std::vector<int32_t> send(2 * g_size);
  for (int j = 0; j < g_size; ++j) send[2 * j] = g_rank, send[2 * j + 1] = j;
  hvd_tensor_t t = Tensor(send.data(), HVD_INT32, g_size, 2);
  hvd_op_options_t o;
  hvd_op_options_init(&o);
  o.name = "a2a";
  hvd_handle_t h;
  Check(hvd_alltoall(&t, &o, &h), "alltoall");
  Wait(h, "alltoall");
  hvd_tensor_t out;
  Check(hvd_output(h, 0, &out), "alltoall output");
  const int32_t* got = static_cast<const int32_t*>(out.data);
  for (int j = 0; j < g_size; ++j) {
    Expect(got[2 * j] == j && got[2 * j + 1] == g_rank, "alltoall value");
  }
  hvd_free(out.data);
  hvd_release(h);
  // Reducescatter: size rows of 4 floats equal to rank+1 -> each rank gets 1 row of sum.
  std::vector<float> in(4 * g_size, static_cast<float>(g_rank + 1));
  hvd_tensor_t tr = Tensor(in.data(), HVD_FLOAT32, g_size, 4);
  o.name = "rs";
  Check(hvd_reducescatter(&tr, &o, &h), "reducescatter");
  Wait(h, "reducescatter");
  Check(hvd_output(h, 0, &out), "reducescatter output");
  Expect(
      out.shape[0] == 1 && static_cast<const float*>(out.data)[3] == g_size * (g_size + 1) / 2.0f,
      "reducescatter value");
  hvd_free(out.data);
  hvd_release(h);
}

// Process set {0, size-1}: a sum over its two members.
void ProcessSet() {
  int32_t included = 0;
  Check(hvd_process_set_included(1, &included), "process set");
  if (!included) return;
  float x = static_cast<float>(g_rank);
  hvd_tensor_t t = Tensor(&x, HVD_FLOAT32, 1);
  hvd_op_options_t o;
  hvd_op_options_init(&o);
  o.name = "ps.sum";
  o.process_set_id = 1;
  hvd_handle_t h;
  Check(hvd_allreduce(&t, &t, &o, &h), "process set allreduce");
  Wait(h, "process set allreduce");
  hvd_release(h);
  Expect(x == static_cast<float>(g_size - 1), "process set sum");
}

// --abandon (2 ranks, HVD_GLOO_TIMEOUT_SECONDS=1): rank 0 stops rank 1 (SIGSTOP), so the next
// collective times out pending on both; after it hvd refuses MPI (a new hvd_init fails naming
// the abandoned collective) and the process ends without MPI_Finalize, which would progress
// the pending collective into freed memory. Prints "ABANDONED OK rank R".
int Abandon() {
  int32_t pid = static_cast<int32_t>(::getpid());
  hvd_tensor_t t = Tensor(&pid, HVD_INT32, 1);
  hvd_op_options_t o;
  hvd_op_options_init(&o);
  o.name = "pid";
  o.root_rank = 1;
  hvd_handle_t h;
  Check(hvd_broadcast(&t, &t, &o, &h), "broadcast pid");
  Wait(h, "broadcast pid");
  hvd_release(h);
  if (g_rank == 0) ::kill(pid, SIGSTOP);
  std::vector<float> data(1 << 20, 1.0f);
  hvd_tensor_t td = Tensor(data.data(), HVD_FLOAT32, static_cast<int64_t>(data.size()));
  o.name = "abandoned";
  hvd_status_t s = hvd_allreduce(&td, &td, &o, &h);
  if (s == HVD_OK) {
    s = hvd_wait(h, 60.0);
    hvd_release(h);
  }
  if (g_rank == 0) ::kill(pid, SIGCONT);
  if (s == HVD_OK) {
    std::fprintf(stderr, "rank %d: the collective did not fail\n", g_rank);
    return 4;
  }
  hvd_shutdown();
  s = hvd_init();
  if (s == HVD_OK || std::strstr(hvd_last_error(), "MPI cannot be used again") == nullptr) {
    std::fprintf(stderr, "rank %d: hvd_init after the abandoned collective: %s: %s\n", g_rank,
                 hvd_status_name(s), hvd_last_error());
    return 5;
  }
  std::fprintf(stderr, "rank %d: %s\n", g_rank, hvd_last_error());
  std::printf("ABANDONED OK rank %d\n", g_rank);
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int fail_rank = -1, exit_code = 0, iterations = 1;
  bool no_shutdown = false, abandon = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--no-shutdown")) no_shutdown = true;
    if (!std::strcmp(argv[i], "--abandon")) abandon = true;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--fail-rank")) fail_rank = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--exit-code")) exit_code = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--iterations")) iterations = std::atoi(argv[i + 1]);
  }
  int32_t world = 1;
  Check(hvd_launch_topology(nullptr, &world), "hvd_launch_topology");
  const int32_t set_ranks[2] = {0, world - 1};
  const int32_t set_sizes[1] = {2};
  Check(world >= 2 ? hvd_init_with_process_sets(set_ranks, set_sizes, 1) : hvd_init(), "init");
  int32_t rank, size, lr, ls, cr, cs;
  hvd_rank(&rank);
  hvd_size(&size);
  hvd_local_rank(&lr);
  hvd_local_size(&ls);
  hvd_cross_rank(&cr);
  hvd_cross_size(&cs);
  g_rank = rank;
  g_size = size;
  if (abandon) return Abandon();
  for (int it = 0; it < iterations; ++it) {
    Allreduces();
    if (rank == fail_rank) {
      std::fprintf(stderr, "rank %d: failing on purpose with exit code %d\n", rank, exit_code);
      std::_Exit(exit_code);
    }
    BroadcastAndGather();
    AlltoallAndReducescatter();
    if (world >= 2) ProcessSet();
  }
  hvd_handle_t barrier;  // the process set's members finish before anyone shuts down
  Check(hvd_barrier(0, &barrier), "barrier");
  Wait(barrier, "barrier");
  hvd_release(barrier);
  uint32_t flags = 0;
  hvd_enabled_flags(&flags);
  const char* backend = (flags & HVD_BUILT_MPI) && (flags & HVD_BUILT_GLOO) ? "MPI+GLOO"
                        : (flags & HVD_BUILT_MPI)                           ? "MPI"
                        : (flags & HVD_BUILT_GLOO)                          ? "GLOO"
                                                                            : "NONE";
  std::printf("OK rank %d size %d local %d/%d cross %d/%d backend %s\n", rank, size, lr, ls, cr, cs,
              backend);
  std::fflush(stdout);
  if (no_shutdown) {
    // Some other work first (the runtime's thread keeps negotiating meanwhile), then exit()
    // runs the atexit hooks while that thread still runs.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    return 0;
  }
  Check(hvd_shutdown(), "shutdown");
  return 0;
}
