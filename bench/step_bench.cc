// hvd-step-bench: a training-step workload over the public C API, for the timeline and
// autotune benchmarks and their end-to-end tests. Run under hvdrun:
//
//   hvdrun -np 2 hvd-step-bench --steps 200 --tensors 32 --bytes 16K
//   hvdrun -np 2 hvd-step-bench --ops --steps 2
//
// Steps mode (default): a step enqueues --tensors allreduces of --bytes each (named
// "grad.<i>", as a framework's gradient hooks would) and waits for all of them (--one-by-one:
// waits for each before enqueueing the next, as a loop over losses or metrics; --loss: then
// allreduces one float named "loss" and waits for it, as a training loop's logging); optionally
// rank --straggler-rank sleeps --straggler-ms before each step. Rank 0 prints
// "step <i>" after each of the first --print-steps steps and at the end
//   "steps <N> mean_step_us <all> last_mean_step_us <mean of the last --last steps>"
// (per-step times are the max over ranks of the step's wall time).
//
// Ops mode (--ops): each step runs every collective once -- allreduce (one tensor and a
// fused group of three), allgather, broadcast, alltoall, reducescatter, barrier -- and the
// job ends with a join. The alltoall's and reducescatter's inputs are 2 floats per rank, or
// --split-bytes (rounded down to whole floats per rank); each rank's allgather rows and the
// broadcast's tensor 16 and 20 bytes, or --gather-bytes each (rounded down to whole rows of 2
// floats and whole floats).
//
// --skew-rank R --skew-us S sets HVD_TIMELINE_CLOCK_SKEW_US=S on rank R before hvd_init
// (tests of the all-ranks timeline's clock alignment).
#include <hvd/c_api.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "byte_size.h"

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void Die(const char* what, hvd_status_t status) {
  std::fprintf(stderr, "hvd-step-bench: %s: %s: %s\n", what, hvd_status_name(status),
               hvd_last_error());
  std::exit(1);
}

void Check(hvd_status_t status, const char* what) {
  if (status != HVD_OK) Die(what, status);
}

struct Config {
  bool ops = false;
  bool one_by_one = false;
  bool loss = false;
  int steps = 100;
  int tensors = 16;
  size_t bytes = 16 << 10;
  size_t split_bytes = 0;   // 0: 2 floats per rank
  size_t gather_bytes = 0;  // 0: 2 rows of 2 floats per rank, 5 floats broadcast
  int straggler_rank = -1;
  int straggler_ms = 0;
  int print_steps = 0;
  int last = 20;
  int skew_rank = -1;
  long long skew_us = 0;
};

Config ParseArgs(int argc, char** argv) {
  Config c;
  std::string bytes = "16K";
  std::string split_bytes;
  std::string gather_bytes;
  CLI::App app{
      "A training step's collectives through libhvd's C API, for the timeline and "
      "autotune benchmarks (run it under hvdrun)",
      "hvd-step-bench"};
  app.add_flag("--ops", c.ops, "Ops mode: every collective once per step, then a join");
  app.add_option("--steps", c.steps, "Steps")->check(CLI::Range(1, 1 << 30))->capture_default_str();
  app.add_option("--tensors", c.tensors, "Gradients allreduced per step")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_flag("--one-by-one", c.one_by_one, "Wait for each gradient before the next");
  app.add_flag("--loss", c.loss, "After the gradients, allreduce a one-float loss and wait");
  app.add_option("--bytes", bytes, "Size of each gradient (4096, 16K, 1M, ...)")
      ->check([](const std::string& v) { return hvd::bench::ByteSizeError(v); })
      ->capture_default_str();
  app.add_option("--split-bytes", split_bytes,
                 "Ops mode: the alltoall's and reducescatter's input (default 2 floats per rank)")
      ->check([](const std::string& v) { return hvd::bench::ByteSizeError(v); });
  app.add_option("--gather-bytes", gather_bytes,
                 "Ops mode: each rank's allgather input and the broadcast's tensor (default 16 "
                 "and 20 bytes)")
      ->check([](const std::string& v) { return hvd::bench::ByteSizeError(v); });
  app.add_option("--straggler-rank", c.straggler_rank, "This rank sleeps before each step");
  app.add_option("--straggler-ms", c.straggler_ms, "How long the straggler sleeps")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--print-steps", c.print_steps, "Print the first N steps' times")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--last", c.last, "Steps the summary's average covers")
      ->check(CLI::Range(1, 1 << 30))
      ->capture_default_str();
  app.add_option("--skew-rank", c.skew_rank, "Sets HVD_TIMELINE_CLOCK_SKEW_US on this rank");
  app.add_option("--skew-us", c.skew_us, "The skew set on --skew-rank, in microseconds");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    std::exit(code == 0 ? 0 : 2);
  }
  c.bytes = *hvd::bench::ParseByteSize(bytes);
  if (!split_bytes.empty()) c.split_bytes = *hvd::bench::ParseByteSize(split_bytes);
  if (!gather_bytes.empty()) c.gather_bytes = *hvd::bench::ParseByteSize(gather_bytes);
  if (c.bytes < sizeof(float)) {
    std::fprintf(stderr, "hvd-step-bench: --bytes: at least %zu (one float32)\n", sizeof(float));
    std::exit(2);
  }
  return c;
}

hvd_tensor_t Tensor(void* data, hvd_dtype_t dtype, int64_t rows, int64_t cols = 0) {
  hvd_tensor_t t;
  std::memset(&t, 0, sizeof(t));
  t.data = data;
  t.dtype = dtype;
  t.ndim = cols > 0 ? 2 : 1;
  t.shape[0] = rows;
  t.shape[1] = cols;
  t.device = HVD_DEVICE_CPU;
  return t;
}

hvd_op_options_t Named(const char* name) {
  hvd_op_options_t options;
  hvd_op_options_init(&options);
  options.name = name;
  return options;
}

void WaitAndRelease(hvd_handle_t handle, const char* what) {
  Check(hvd_wait(handle, 60.0), what);
  int32_t outputs = 0;
  Check(hvd_num_outputs(handle, &outputs), "hvd_num_outputs");
  for (int32_t i = 0; i < outputs; ++i) {
    hvd_tensor_t out;
    Check(hvd_output(handle, i, &out), "hvd_output");
    hvd_free(out.data);
  }
  Check(hvd_release(handle), "hvd_release");
}

double MaxOverRanks(double value) {
  hvd_handle_t handle;
  hvd_tensor_t t = Tensor(&value, HVD_FLOAT64, 1);
  hvd_op_options_t options = Named("hvd-step-bench.max");
  options.reduce_op = HVD_OP_MAX;
  Check(hvd_allreduce(&t, &t, &options, &handle), "hvd_allreduce(max)");
  WaitAndRelease(handle, "max over ranks");
  return value;
}

// One step of every collective, `split` floats in the alltoall and the reducescatter (a
// multiple of the ranks), each rank's allgather input and the broadcast's tensor from
// `gather_bytes` (0: the defaults).
void OpsStep(size_t split, size_t gather_bytes) {
  hvd_handle_t h;
  std::vector<float> single(12, 1.0f);
  hvd_tensor_t t = Tensor(single.data(), HVD_FLOAT32, 4, 3);
  hvd_op_options_t o = Named("ar.single");
  Check(hvd_allreduce(&t, &t, &o, &h), "hvd_allreduce");
  WaitAndRelease(h, "allreduce");

  std::vector<std::vector<float>> fused(3, std::vector<float>(8, 1.0f));
  std::vector<hvd_tensor_t> group;
  for (auto& f : fused) group.push_back(Tensor(f.data(), HVD_FLOAT32, 8));
  o = Named("ar.fused");  // members "ar.fused.0" .. "ar.fused.2", fused together
  Check(hvd_grouped_allreduce(group.data(), group.data(), 3, &o, &h), "hvd_grouped_allreduce");
  WaitAndRelease(h, "grouped allreduce");

  const size_t gather_rows = gather_bytes == 0 ? 2 : std::max<size_t>(1, gather_bytes / 8);
  std::vector<float> rows(gather_rows * 2, 2.0f);
  hvd_tensor_t g = Tensor(rows.data(), HVD_FLOAT32, static_cast<int64_t>(gather_rows), 2);
  o = Named("ag.x");
  Check(hvd_allgather(&g, &o, &h), "hvd_allgather");
  WaitAndRelease(h, "allgather");

  const size_t bc_count = gather_bytes == 0 ? 5 : std::max<size_t>(1, gather_bytes / 4);
  std::vector<float> bc(bc_count, 3.0f);
  hvd_tensor_t b = Tensor(bc.data(), HVD_FLOAT32, static_cast<int64_t>(bc_count));
  o = Named("bc.x");
  o.root_rank = 0;
  Check(hvd_broadcast(&b, &b, &o, &h), "hvd_broadcast");
  WaitAndRelease(h, "broadcast");

  std::vector<float> a2a(split, 4.0f);
  hvd_tensor_t a = Tensor(a2a.data(), HVD_FLOAT32, static_cast<int64_t>(split));
  o = Named("a2a.x");
  Check(hvd_alltoall(&a, &o, &h), "hvd_alltoall");
  WaitAndRelease(h, "alltoall");

  std::vector<float> rs(split, 5.0f);
  hvd_tensor_t r = Tensor(rs.data(), HVD_FLOAT32, static_cast<int64_t>(split));
  o = Named("rs.x");
  Check(hvd_reducescatter(&r, &o, &h), "hvd_reducescatter");
  WaitAndRelease(h, "reducescatter");

  Check(hvd_barrier(0, &h), "hvd_barrier");
  WaitAndRelease(h, "barrier");
}

void Steps(const Config& c, int rank) {
  const size_t count = c.bytes / sizeof(float);
  std::vector<std::vector<float>> grads(c.tensors, std::vector<float>(count, 1.0f));
  std::vector<std::string> names;
  for (int i = 0; i < c.tensors; ++i) names.push_back("grad." + std::to_string(i));
  std::vector<hvd_handle_t> handles(c.tensors);
  std::vector<double> step_us;
  for (int step = 0; step < c.steps; ++step) {
    if (rank == c.straggler_rank) {
      std::this_thread::sleep_for(std::chrono::milliseconds(c.straggler_ms));
    }
    const Clock::time_point t0 = Clock::now();
    for (int i = 0; i < c.tensors; ++i) {
      hvd_tensor_t t = Tensor(grads[i].data(), HVD_FLOAT32, static_cast<int64_t>(count));
      hvd_op_options_t o = Named(names[i].c_str());
      Check(hvd_allreduce(&t, &t, &o, &handles[i]), "hvd_allreduce");
      if (c.one_by_one) WaitAndRelease(handles[i], "allreduce");
    }
    for (hvd_handle_t h : handles) {
      if (!c.one_by_one) WaitAndRelease(h, "allreduce");
    }
    if (c.loss) {
      float loss = 1.0f;
      hvd_tensor_t t = Tensor(&loss, HVD_FLOAT32, 1);
      hvd_op_options_t o = Named("loss");
      hvd_handle_t h;
      Check(hvd_allreduce(&t, &t, &o, &h), "hvd_allreduce");
      WaitAndRelease(h, "loss allreduce");
    }
    step_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    if (rank == 0 && step < c.print_steps) {
      std::printf("step %d\n", step);
      std::fflush(stdout);
    }
  }
  double all = 0, last = 0;
  const int n = static_cast<int>(step_us.size());
  const int last_n = std::min(c.last, n);
  for (int i = 0; i < n; ++i) {
    all += step_us[i];
    if (i >= n - last_n) last += step_us[i];
  }
  all = MaxOverRanks(all / n);
  last = MaxOverRanks(last / last_n);
  if (rank == 0) {
    std::printf("steps %d mean_step_us %.1f last_mean_step_us %.1f\n", n, all, last);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Config config = ParseArgs(argc, argv);
  int32_t launch_rank = 0;
  Check(hvd_launch_topology(&launch_rank, nullptr), "hvd_launch_topology");
  if (config.skew_rank >= 0 && launch_rank == config.skew_rank) {
    setenv("HVD_TIMELINE_CLOCK_SKEW_US", std::to_string(config.skew_us).c_str(), 1);
  }
  Check(hvd_init(), "hvd_init");
  int32_t rank = 0, size = 1;
  Check(hvd_rank(&rank), "hvd_rank");
  Check(hvd_size(&size), "hvd_size");
  if (config.ops) {
    const size_t per_rank = std::max<size_t>(1, config.split_bytes / sizeof(float) / size);
    const size_t split = (config.split_bytes == 0 ? 2 : per_rank) * static_cast<size_t>(size);
    for (int step = 0; step < config.steps; ++step) OpsStep(split, config.gather_bytes);
    hvd_handle_t join;
    Check(hvd_join(-1, &join), "hvd_join");
    Check(hvd_wait(join, 60.0), "join");
    Check(hvd_release(join), "hvd_release");
    if (rank == 0) std::printf("ops done\n");
  } else {
    Steps(config, rank);
  }
  Check(hvd_shutdown(), "hvd_shutdown");
  return 0;
}
