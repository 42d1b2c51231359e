// The timeline's own cost, without ranks or a runtime: records the events that rank 0 records
// for each cached allreduce of a fused batch (QUEUE, NEGOTIATE B/E, ALLREDUCE B, the transport's
// activity B/E, the final E with dtype and shape: 7 records per tensor, as the runtime's
// controller and executor call them) for `--tensors` distinct tensors, `--rounds` times, and
// prints the CPU time per tensor of the recording thread (what a rank pays on its own path) and of
// everything else in the process (the writer thread formatting and writing the file). On a
// machine with few CPUs the writer's time is taken from the ranks too (bench/timeline_cost.sh
// measures the whole job).
//
//   timeline-micro [--tensors 100] [--rounds 2000] [--file /tmp/timeline-micro.json]
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "runtime/core/runtime_timeline.h"
#include "timeline/timeline.h"

namespace {

int64_t ThreadCpuNs() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return int64_t{t.tv_sec} * 1000000000 + t.tv_nsec;
}

int64_t ProcessCpuNs() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return int64_t{t.tv_sec} * 1000000000 + t.tv_nsec;
}

}  // namespace

int main(int argc, char** argv) {
  int tensors = 100;
  int rounds = 2000;
  std::string path = "/tmp/timeline-micro.json";
  CLI::App app{"CPU cost of the timeline per recorded tensor (no ranks, no runtime)"};
  app.add_option("--tensors", tensors, "Distinct tensors per round")->check(CLI::PositiveNumber);
  app.add_option("--rounds", rounds, "Rounds")->check(CLI::PositiveNumber);
  app.add_option("--file", path, "Timeline file (removed at the end)");
  CLI11_PARSE(app, argc, argv);

  std::vector<std::string> names;
  for (int i = 0; i < tensors; ++i) names.push_back("hvd-bench.many." + std::to_string(i));
  const std::vector<int64_t> shape = {4096};

  hvd::timeline::Timeline timeline;
  hvd::timeline::TimelineOptions options;
  options.queue_capacity = size_t{1} << 20;  // the cost of recording, not of dropping
  if (!timeline.Start(path, options).ok()) {
    std::fprintf(stderr, "timeline-micro: cannot open %s\n", path.c_str());
    return 1;
  }
  const int64_t process0 = ProcessCpuNs();
  const int64_t thread0 = ThreadCpuNs();
  for (int r = 0; r < rounds; ++r) {
    for (const std::string& name : names) {
      // As the controller (a cache hit) and the executor record one tensor of a fused response.
      const int64_t enqueued = timeline.Now();
      timeline.NegotiateStart(name, hvd::runtime::TimelineOpName(hvd::runtime::OpType::kAllreduce));
      timeline.NegotiateEnd(name);
      const std::string_view op = hvd::runtime::TimelineOpName(hvd::runtime::OpType::kAllreduce);
      timeline.Queue(name, op, enqueued);
      timeline.Start(name, op);
      timeline.ActivityStart(name, "SHM_ALLREDUCE");
      timeline.ActivityEnd(name);
      timeline.End(name, "float32", hvd::runtime::ShapeText(shape), 16384);
    }
  }
  const int64_t recording = ThreadCpuNs() - thread0;
  timeline.Stop();  // drains the writer
  const int64_t total = ProcessCpuNs() - process0;
  const uint64_t dropped = timeline.dropped_events();
  struct stat st {};
  const int64_t bytes = stat(path.c_str(), &st) == 0 ? st.st_size : -1;
  std::remove(path.c_str());

  const double n = static_cast<double>(tensors) * rounds;
  std::printf("# timeline-micro: %d tensors x %d rounds, 7 records per tensor\n", tensors, rounds);
  std::printf("recording thread  %8.0f ns/tensor\n", recording / n);
  std::printf("writer (the rest) %8.0f ns/tensor\n", (total - recording) / n);
  std::printf("file              %8.0f bytes/tensor\n", bytes / n);
  std::printf("dropped events    %8llu\n", static_cast<unsigned long long>(dropped));
  return dropped == 0 ? 0 : 2;
}
