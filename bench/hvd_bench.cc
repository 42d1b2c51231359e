// hvd-bench: collective benchmark of the hvd runtime through its public C API only, in the
// style of nccl-tests. Run under hvdrun:
//
//   hvdrun -np 4 hvd-bench --op allreduce --sizes 4K:64M
//   hvdrun -np 2 hvd-bench --many 100x16K
//
// Per size: 2 warm-up ops, iterations calibrated to ~0.3 s per round (3..2000), `rounds`
// timed rounds; a round's per-op time is the max over ranks; the printed time is the median
// round (min also shown). algbw = S / t; busbw = algbw * factor with the nccl-tests factors:
// allreduce 2(n-1)/n; allgather, alltoall, reducescatter (n-1)/n; broadcast 1. S is the
// allreduce/broadcast buffer, the gathered output of allgather, and the per-rank input of
// alltoall/reducescatter (--op barrier ignores it). Each op is enqueued and waited before the
// next (a latency chain);
// --many compares K tensors enqueued together (the runtime may fuse them) with one by one
// (allreduce; --op reducescatter: K inputs of SIZE, rounded down to whole rows per rank;
// --op allgather: K outputs of SIZE).
//
// allocs/op: heap allocations per op in the timed rounds (after the warm-up), counted by
// alloc_counter.cc over every thread of the process, libhvd's included; the printed value is
// the median round's maximum over ranks, alloc_B/op the bytes those allocations asked for.
// The target for the steady-state data path is 0.
//
// --device cuda (builds with the GPU path): the tensors live on CUDA device local_rank mod the
// visible devices, so the numbers are hvd's GPU path as a C program sees it (NCCL when every
// rank has its own GPU, host staging otherwise; docs/gpu.md).
//
// The result check: after each size's timed rounds (outside them: in no printed time and no
// allocs/op), the same op runs once more, under the same tensor name, on rank-distinctive data
// whose result is known exactly, and every element of this rank's result is compared (rank r of
// n; element i of the input, j of the result; per = a rank's piece of an alltoall's or
// reducescatter's input). The values are small integers, exact in every --dtype:
//   allreduce, reducescatter (rank me's out[j] is element i = me*per + j of the reduced whole),
//   by --reduce-op:
//     sum       rank r gives r + 1 + i % 7, the sum n(n+1)/2 + n*(i % 7); where that leaves the
//               dtype's exact integers (int8 past 10 ranks, uint8 and bfloat16 past 17), rank r
//               gives 1 + (r + i) % 2, the sum n + the number of ranks whose r + i is odd
//     average   the sum's data, the sum / n: exact where 1/n is (n a power of two, floats); else
//               within n units in the last place (floats: 1/n is rounded, and NCCL may scale
//               each input before the sum) or within 1 (integers: scaled and truncated)
//     min, max  r + 1 + i % 7: 1 + i % 7 and n + i % 7
//     product   2 + i % 3 from rank i % n, 1 from the others: 2 + i % 3
//     adasum    not checked: a ratio of dot products, no exact elementwise value to compare
//   broadcast   (from 0) rank 0 holds 7 + i % 13, the others -1 (uint8: 255): 7 + i % 13
//   allgather   rank r's element i is r*1000 + i % 1000, found at out[r*count + i]
//   alltoall    rank r sends rank k in[k*per + j] = r*100 + k + j % 5: rank me expects
//               out[k*per + j] = k*100 + me + j % 5
//   (a movement op's values wrap at the dtype's exact integers: ExactLimit)
//   --many      each tensor t as the op alone with its index shifted by t (swapped tensors
//               show), after each mode's timed rounds, enqueued as that mode enqueues
//   barrier     nothing to check
// A wrong element is printed to stderr ("hvd-bench: CHECK FAILED: allreduce 4096 B rank 1:
// element 17 is 3.0, expected 5.0"), the ranks agree (a max over ranks) and every rank shuts
// hvd down and exits 3 before the size's row is printed; at the end rank 0 prints "# results
// checked" (or "# results not checked: WHY").
#include <hvd/c_api.h>
#if HVD_BENCH_CUDA
#include <cuda_runtime_api.h>
#endif

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "alloc_counter.h"
#include "byte_size.h"
#include "hvd_bench_check.h"

using namespace hvd_bench;  // the result check (hvd_bench_check.h)

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void Die(const char* what, hvd_status_t status) {
  std::fprintf(stderr, "hvd-bench: %s: %s: %s\n", what, hvd_status_name(status), hvd_last_error());
  std::exit(1);
}

void Check(hvd_status_t status, const char* what) {
  if (status != HVD_OK) Die(what, status);
}

struct Config {
  std::string op = "allreduce";
  std::vector<size_t> sizes;
  int rounds = 5;
  int many_count = 0;
  size_t many_bytes = 0;
  double round_seconds = 0.3;
  int trace_allocs = 0;    // print a backtrace of the first N allocations of the timed rounds
  double max_allocs = -1;  // --max-allocs-per-op: fail when a median round allocates more
  bool cuda = false;       // --device cuda
};

// The CUDA device of this rank's tensors under --device cuda; HVD_DEVICE_CPU otherwise.
int32_t g_device = HVD_DEVICE_CPU;

// `count` elements of g_dtype, each a 1.
std::vector<char> Ones(size_t count) {
  std::vector<char> v(count * g_dtype.size);
  for (size_t i = 0; i < count; ++i)
    std::memcpy(v.data() + i * g_dtype.size, &g_dtype.one, g_dtype.size);
  return v;
}

// Sets every element of `v` (elements of g_dtype) to 1 in place (its address stays).
void FillOnes(std::vector<char>& v) {
  for (size_t at = 0; at + g_dtype.size <= v.size(); at += g_dtype.size)
    std::memcpy(v.data() + at, &g_dtype.one, g_dtype.size);
}

// Set when a result broke --max-allocs-per-op; main then exits 3.
bool g_allocs_exceeded = false;

void CheckAllocs(const Config& config, const char* what, double allocs) {
  if (config.max_allocs < 0 || allocs <= config.max_allocs) return;
  std::fprintf(stderr,
               "hvd-bench: %s: %.1f heap allocations per op exceed --max-allocs-per-op %g\n", what,
               allocs, config.max_allocs);
  g_allocs_exceeded = true;
}

// Exits 2 after printing `message` about `option`, as CLI11 does for the options it checks.
[[noreturn]] void BadOption(const char* option, const std::string& message) {
  std::fprintf(stderr, "hvd-bench: %s: %s\nRun with --help for more information.\n", option,
               message.c_str());
  std::exit(2);
}

Config ParseArgs(int argc, char** argv) {
  Config config;
  std::string sizes = "4K:64M", many, device = "cpu";
  size_t factor = 4;
  CLI::App app{
      "Collective benchmark of libhvd through its C API, in nccl-tests' columns (run it "
      "under hvdrun)",
      "hvd-bench"};
  app.add_option("--op", config.op, "The collective")
      ->check(CLI::IsMember(
          {"allreduce", "allgather", "broadcast", "alltoall", "reducescatter", "barrier"}))
      ->capture_default_str();
  app.add_option("--sizes", sizes, "LO:HI (stepping by --factor) or a list such as 4K,64K,1M")
      ->capture_default_str();
  app.add_option("--factor", factor, "Step of a LO:HI size range")
      ->check(CLI::Range(size_t{2}, size_t{1} << 20))
      ->capture_default_str();
  app.add_option("--rounds", config.rounds, "Timed rounds per size (the median is printed)")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app.add_option("--round-seconds", config.round_seconds, "Target length of one round")
      ->check(CLI::Range(0.001, 3600.0))
      ->capture_default_str();
  app.add_option("--many", many, "KxSIZE: K tensors enqueued together, then one by one");
  app.add_option("--trace-allocs", config.trace_allocs,
                 "Print a backtrace of the first N allocations of the timed rounds")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-allocs-per-op", config.max_allocs,
                 "Exit 3 when a median round allocates more per op")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--device", device, "Where the tensors live")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  const std::map<std::string, hvd_reduce_op_t> reduce_ops = {
      {"sum", HVD_OP_SUM}, {"average", HVD_OP_AVERAGE}, {"min", HVD_OP_MIN},
      {"max", HVD_OP_MAX}, {"product", HVD_OP_PRODUCT}, {"adasum", HVD_OP_ADASUM}};
  app.add_option("--reduce-op", g_reduce_op, "Reduction of --op allreduce and reducescatter")
      ->transform(CLI::CheckedTransformer(reduce_ops, CLI::ignore_case))
      ->default_str("sum");
  std::vector<std::string> dtype_names;
  for (const Dtype& d : kDtypes) dtype_names.push_back(d.name);
  std::string dtype = "float32";
  app.add_option("--dtype", dtype, "Element type of every tensor (sizes stay in bytes)")
      ->check(CLI::IsMember(dtype_names))
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    std::exit(code == 0 ? 0 : 2);
  }
  config.cuda = device == "cuda";
  for (const Dtype& d : kDtypes) {
    if (dtype == d.name) g_dtype = d;
  }
#if !HVD_BENCH_CUDA
  if (config.cuda) BadOption("--device cuda", "this build has no GPU path (hvdrun -cb)");
#endif
  if (!many.empty()) {
    const size_t x = many.find('x');
    char* end = nullptr;
    const long k = x == std::string::npos ? 0 : std::strtol(many.c_str(), &end, 10);
    const auto bytes =
        x == std::string::npos ? std::nullopt : hvd::bench::ParseByteSize(many.substr(x + 1));
    if (k <= 0 || end != many.c_str() + x || !bytes) {
      BadOption("--many", "'" + many + "' is not KxSIZE, such as 100x16K");
    }
    config.many_count = static_cast<int>(k);
    config.many_bytes = *bytes;
    if (config.cuda) BadOption("--many", "not with --device cuda");
    if (config.op != "allreduce" && config.op != "reducescatter" && config.op != "allgather") {
      BadOption("--many",
                "measures allreduces, reducescatters and allgathers only, not --op " + config.op);
    }
  }
  const size_t colon = sizes.find(':');
  if (colon != std::string::npos) {
    const auto lo = hvd::bench::ParseByteSize(sizes.substr(0, colon));
    const auto hi = hvd::bench::ParseByteSize(sizes.substr(colon + 1));
    if (!lo || !hi || *hi < *lo) BadOption("--sizes", "'" + sizes + "' is not a range LO:HI");
    for (size_t s = *lo; s <= *hi; s *= factor) config.sizes.push_back(s);
    return config;
  }
  for (size_t start = 0; start <= sizes.size();) {
    const size_t comma = std::min(sizes.find(',', start), sizes.size());
    const std::string one = sizes.substr(start, comma - start);
    const auto s = hvd::bench::ParseByteSize(one);
    if (!s) BadOption("--sizes", hvd::bench::ByteSizeError(one));
    config.sizes.push_back(*s);
    start = comma + 1;
  }
  return config;
}

hvd_tensor_t Tensor(void* data, hvd_dtype_t dtype, int64_t count, int32_t device = HVD_DEVICE_CPU) {
  hvd_tensor_t t;
  std::memset(&t, 0, sizeof(t));
  t.data = data;
  t.dtype = dtype;
  t.ndim = 1;
  t.shape[0] = count;
  t.device = device;
  return t;
}

void WaitAndRelease(hvd_handle_t handle, const char* what) {
  Check(hvd_wait(handle, -1.0), what);
  int32_t outputs = 0;
  Check(hvd_num_outputs(handle, &outputs), "hvd_num_outputs");
  for (int32_t i = 0; i < outputs; ++i) {
    hvd_tensor_t out;
    Check(hvd_output(handle, i, &out), "hvd_output");
    hvd_free(out.data);
  }
  Check(hvd_release(handle), "hvd_release");
}

// Copies `bytes` of device memory at `from` to host memory at `to`.
void CopyFromDevice(void* to, const void* from, size_t bytes) {
#if HVD_BENCH_CUDA
  if (cudaMemcpy(to, from, bytes, cudaMemcpyDeviceToHost) == cudaSuccess) return;
  std::fprintf(stderr, "hvd-bench: cannot copy %zu bytes from the CUDA device\n", bytes);
#else
  std::fprintf(stderr, "hvd-bench: a device output (%p, %zu bytes) without the GPU path\n", to,
               bytes);
  (void)from;
#endif
  std::exit(1);
}

// WaitAndRelease for the check: each runtime-allocated output copied to host memory first.
std::vector<std::vector<char>> WaitAndTake(hvd_handle_t handle, const char* what) {
  Check(hvd_wait(handle, -1.0), what);
  int32_t outputs = 0;
  Check(hvd_num_outputs(handle, &outputs), "hvd_num_outputs");
  std::vector<std::vector<char>> host(static_cast<size_t>(outputs));
  for (int32_t i = 0; i < outputs; ++i) {
    hvd_tensor_t out;
    Check(hvd_output(handle, i, &out), "hvd_output");
    int64_t count = 1;
    for (int32_t d = 0; d < out.ndim; ++d) count *= out.shape[d];
    std::vector<char>& copy = host[static_cast<size_t>(i)];
    copy.resize(static_cast<size_t>(count) * g_dtype.size);
    if (out.device != HVD_DEVICE_CPU) {
      CopyFromDevice(copy.data(), out.data, copy.size());
    } else if (!copy.empty()) {
      std::memcpy(copy.data(), out.data, copy.size());
    }
    hvd_free(out.data);
  }
  Check(hvd_release(handle), "hvd_release");
  return host;
}

double MaxOverRanks(double value) {
  hvd_op_options_t options;
  hvd_op_options_init(&options);
  options.name = "hvd-bench.max";
  options.reduce_op = HVD_OP_MAX;
  hvd_tensor_t t = Tensor(&value, HVD_FLOAT64, 1);
  hvd_handle_t handle;
  Check(hvd_allreduce(&t, &t, &options, &handle), "hvd_allreduce(max)");
  WaitAndRelease(handle, "max over ranks");
  return value;
}

// Every rank learns whether any rank's check of `what` failed (`problem`: what is wrong with
// this rank's result, "" when nothing; each failing rank prints it, one line); then all shut
// hvd down and exit 3.
void AgreeOnCheck(const std::string& what, int rank, const std::string& problem) {
  if (!problem.empty()) {
    std::fprintf(stderr, "hvd-bench: CHECK FAILED: %s rank %d: %s\n", what.c_str(), rank,
                 problem.c_str());
  }
  if (MaxOverRanks(problem.empty() ? 0.0 : 1.0) == 0.0) {
    ++g_checks;
    return;
  }
  hvd_shutdown();
  std::exit(3);
}

// One collective of `bytes` (meaning per op, see the file comment) on --dtype data.
class Collective {
 public:
  Collective(const std::string& op, size_t bytes, int size)
      : op_(op), name_("hvd-bench." + op + "." + std::to_string(bytes)) {
    size_t input = op == "allgather" ? bytes / size : bytes;
    const size_t elem = g_dtype.size;
    input = std::max<size_t>(input / elem, 1) * elem;
    if (op == "alltoall" || op == "reducescatter") {
      input = std::max<size_t>(input / (elem * size), 1) * elem * size;
    }
    buffer_ = Ones(input / elem);
#if HVD_BENCH_CUDA
    if (g_device != HVD_DEVICE_CPU) {
      const size_t bytes_in = buffer_.size();
      if (cudaMalloc(&device_data_, bytes_in) != cudaSuccess ||
          cudaMemcpy(device_data_, buffer_.data(), bytes_in, cudaMemcpyHostToDevice) !=
              cudaSuccess) {
        std::fprintf(stderr, "hvd-bench: cannot place %zu bytes on CUDA device %d\n", bytes_in,
                     g_device);
        std::exit(1);
      }
    }
#endif
  }
  ~Collective() {
#if HVD_BENCH_CUDA
    if (device_data_ != nullptr) cudaFree(device_data_);
#endif
  }
  Collective(const Collective&) = delete;
  Collective& operator=(const Collective&) = delete;

  void Run() { WaitAndRelease(Enqueue(), op_.c_str()); }

  // The check (untimed): the op once more, on check data; "" or what is wrong with this rank's
  // result.
  std::string CheckOnce(int rank, int size) {
    const Op op = ParseOp(op_);
    const size_t count = buffer_.size() / g_dtype.size;
    FillCheckInput(op, rank, size, buffer_.data(), count, 0);
#if HVD_BENCH_CUDA
    if (device_data_ != nullptr && cudaMemcpy(device_data_, buffer_.data(), buffer_.size(),
                                              cudaMemcpyHostToDevice) != cudaSuccess) {
      std::fprintf(stderr, "hvd-bench: cannot copy the check data to CUDA device %d\n", g_device);
      std::exit(1);
    }
#endif
    const std::vector<std::vector<char>> outputs = WaitAndTake(Enqueue(), op_.c_str());
    if (op == Op::kAllreduce || op == Op::kBroadcast) {  // in place
      if (device_data_ != nullptr) CopyFromDevice(buffer_.data(), device_data_, buffer_.size());
      return Compare(op, rank, size, count, 0, buffer_.data(), buffer_.size());
    }
    if (outputs.size() != 1) {
      return "the op has " + std::to_string(outputs.size()) + " outputs, expected 1";
    }
    return Compare(op, rank, size, count, 0, outputs[0].data(), outputs[0].size());
  }

 private:
  // Enqueues the op on the tensor (synchronous: the caller waits at once).
  hvd_handle_t Enqueue() {
    hvd_op_options_t options;
    hvd_op_options_init(&options);
    options.name = name_.c_str();
    options.wait_now = 1;  // synchronous, as MPI_Allreduce
    options.reduce_op = g_reduce_op;
    void* data = device_data_ != nullptr ? device_data_ : buffer_.data();
    hvd_tensor_t t =
        Tensor(data, g_dtype.type, static_cast<int64_t>(buffer_.size() / g_dtype.size), g_device);
    hvd_handle_t handle;
    if (op_ == "allreduce")
      Check(hvd_allreduce(&t, &t, &options, &handle), "hvd_allreduce");
    else if (op_ == "broadcast")
      Check(hvd_broadcast(&t, &t, &options, &handle), "hvd_broadcast");
    else if (op_ == "allgather")
      Check(hvd_allgather(&t, &options, &handle), "hvd_allgather");
    else if (op_ == "alltoall")
      Check(hvd_alltoall(&t, &options, &handle), "hvd_alltoall");
    else if (op_ == "reducescatter") {
      Check(hvd_reducescatter(&t, &options, &handle), "hvd_reducescatter");
    } else if (op_ == "barrier") {
      Check(hvd_barrier(0, &handle), "hvd_barrier");  // the size is ignored
    } else {
      BadOption("--op", "unknown collective '" + op_ + "'");  // IsMember checked it
    }
    return handle;
  }

  std::string op_;
  std::string name_;
  std::vector<char> buffer_;
  void* device_data_ = nullptr;  // --device cuda: buffer_'s copy on g_device
};

double BusFactor(const std::string& op, int n) {
  if (op == "allreduce") return 2.0 * (n - 1) / n;
  if (op == "broadcast") return 1.0;
  return static_cast<double>(n - 1) / n;
}

// Per-op results of the timed rounds, each sorted; every value is the max over ranks.
struct Rounds {
  std::vector<double> seconds;
  std::vector<double> allocs;  // heap allocations per op
  std::vector<double> bytes;   // heap bytes requested per op
  int iters = 0;

  double MedianAllocs() const { return allocs[allocs.size() / 2]; }
  double MedianBytes() const { return bytes[bytes.size() / 2]; }
};

// Times `fn` (one op): calibrated iterations per round, per-round max over ranks.
template <typename Fn>
Rounds TimeRounds(const Config& config, Fn&& fn) {
  for (int w = 0; w < 2; ++w) fn();
  Clock::time_point c0 = Clock::now();
  for (int w = 0; w < 3; ++w) fn();
  const double estimate =
      MaxOverRanks(std::chrono::duration<double>(Clock::now() - c0).count() / 3);
  const int iters = std::clamp(static_cast<int>(config.round_seconds / estimate), 3, 2000);
  Rounds rounds;
  rounds.iters = iters;
  for (int r = 0; r < config.rounds; ++r) {
    hvd_handle_t barrier;
    Check(hvd_barrier(0, &barrier), "hvd_barrier");
    WaitAndRelease(barrier, "barrier");
    const uint64_t a0 = HeapAllocations(), b0 = HeapAllocatedBytes();
    if (r == 0) HeapTraceArm(config.trace_allocs);
    Clock::time_point t0 = Clock::now();
    for (int i = 0; i < iters; ++i) fn();
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count() / iters;
    HeapTraceArm(0);
    const double allocs = static_cast<double>(HeapAllocations() - a0) / iters;
    const double bytes = static_cast<double>(HeapAllocatedBytes() - b0) / iters;
    rounds.seconds.push_back(MaxOverRanks(seconds));
    rounds.allocs.push_back(MaxOverRanks(allocs));
    rounds.bytes.push_back(MaxOverRanks(bytes));
  }
  std::sort(rounds.seconds.begin(), rounds.seconds.end());
  std::sort(rounds.allocs.begin(), rounds.allocs.end());
  std::sort(rounds.bytes.begin(), rounds.bytes.end());
  return rounds;
}

void Sweep(const Config& config, int rank, int size) {
  if (rank == 0) {
    std::printf(
        "# hvd-bench op=%s n=%d dtype=%s device=%s rounds=%d (time = median round, max "
        "over ranks)\n",
        config.op.c_str(), size, g_dtype.name, config.cuda ? "cuda" : "cpu", config.rounds);
    std::printf("%12s %8s %12s %12s %11s %11s %10s %12s\n", "bytes", "iters", "time_us", "min_us",
                "algbw_GB/s", "busbw_GB/s", "allocs/op", "alloc_B/op");
  }
  for (size_t bytes : config.sizes) {
    Collective collective(config.op, bytes, size);
    const Rounds r = TimeRounds(config, [&] { collective.Run(); });
    if (Checked(ParseOp(config.op))) {
      AgreeOnCheck(config.op + " " + std::to_string(bytes) + " B", rank,
                   collective.CheckOnce(rank, size));
    }
    const std::vector<double>& t = r.seconds;
    const double median = t[t.size() / 2];
    const double algbw = static_cast<double>(bytes) / median / 1e9;
    if (rank == 0) {
      std::printf("%12zu %8d %12.1f %12.1f %11.3f %11.3f %10.1f %12.0f\n", bytes, r.iters,
                  median * 1e6, t.front() * 1e6, algbw, algbw * BusFactor(config.op, size),
                  r.MedianAllocs(), r.MedianBytes());
      std::fflush(stdout);
    }
    CheckAllocs(config, ("size " + std::to_string(bytes)).c_str(), r.MedianAllocs());
  }
}

void Many(const Config& config, int rank, int size) {
  const int k = config.many_count;
  const bool scatter = config.op == "reducescatter", gather = config.op == "allgather";
  // A reducescatter's input: whole rows for every rank; an allgather's: SIZE is its output,
  // as in Collective.
  const size_t unit = scatter ? static_cast<size_t>(size) : 1;
  const size_t elems = config.many_bytes / g_dtype.size / (gather ? size : 1);
  const size_t count = std::max<size_t>(elems / unit, 1) * unit;
  std::vector<std::vector<char>> tensors(k, Ones(count));
  std::vector<std::string> names;
  for (int i = 0; i < k; ++i) names.push_back("hvd-bench.many." + std::to_string(i));
  std::vector<hvd_handle_t> handles(k);
  auto enqueue = [&](int i, bool wait_now) {
    hvd_op_options_t options;
    hvd_op_options_init(&options);
    options.name = names[i].c_str();
    options.wait_now = wait_now ? 1 : 0;
    options.reduce_op = g_reduce_op;
    hvd_tensor_t t = Tensor(tensors[i].data(), g_dtype.type, static_cast<int64_t>(count));
    if (scatter) {
      Check(hvd_reducescatter(&t, &options, &handles[i]), "hvd_reducescatter");
    } else if (gather) {
      Check(hvd_allgather(&t, &options, &handles[i]), "hvd_allgather");
    } else {
      Check(hvd_allreduce(&t, &t, &options, &handles[i]), "hvd_allreduce");
    }
  };
  auto fused = [&] {
    for (int i = 0; i < k; ++i) enqueue(i, false);
    for (int i = 0; i < k; ++i) WaitAndRelease(handles[i], config.op.c_str());
  };
  auto one_by_one = [&] {
    for (int i = 0; i < k; ++i) {
      enqueue(i, true);
      WaitAndRelease(handles[i], config.op.c_str());
    }
  };
  // The check after a mode's timed rounds: every tensor on check data, enqueued as the mode
  // enqueues them, each result compared; then the tensors are ones again (at the same
  // addresses), as the timed rounds had them.
  const Op op = ParseOp(config.op);
  auto check = [&](const char* mode, bool together) {
    if (!Checked(op)) return;
    for (int i = 0; i < k; ++i) {
      FillCheckInput(op, rank, size, tensors[i].data(), count, static_cast<size_t>(i));
    }
    std::vector<std::vector<std::vector<char>>> outputs(k);
    for (int i = 0; i < k; ++i) {
      enqueue(i, !together);
      if (!together) outputs[i] = WaitAndTake(handles[i], config.op.c_str());
    }
    for (int i = 0; together && i < k; ++i) {
      outputs[i] = WaitAndTake(handles[i], config.op.c_str());
    }
    std::string problem;
    for (int i = 0; i < k && problem.empty(); ++i) {
      if (scatter || gather) {
        problem = outputs[i].size() != 1
                      ? "the op has " + std::to_string(outputs[i].size()) + " outputs, expected 1"
                      : Compare(op, rank, size, count, static_cast<size_t>(i), outputs[i][0].data(),
                                outputs[i][0].size());
      } else {
        problem = Compare(op, rank, size, count, static_cast<size_t>(i), tensors[i].data(),
                          tensors[i].size());
      }
      if (!problem.empty()) problem = "tensor " + std::to_string(i) + " " + problem;
    }
    AgreeOnCheck(config.op + " " + std::to_string(k) + " x " +
                     std::to_string(count * g_dtype.size) + " B " + mode,
                 rank, problem);
    for (std::vector<char>& tensor : tensors) FillOnes(tensor);
  };
  const Rounds rf = TimeRounds(config, fused);
  check("async", true);
  const Rounds rs = TimeRounds(config, one_by_one);
  check("one by one", false);
  if (rank == 0) {
    const std::vector<double>&tf = rf.seconds, &ts = rs.seconds;
    const double f = tf[tf.size() / 2], s = ts[ts.size() / 2];
    std::printf(
        "# hvd-bench many: %d x %zu bytes %s %s, n=%d, rounds=%d "
        "(allocs per step of %d tensors)\n",
        k, count * g_dtype.size, g_dtype.name, config.op.c_str(), size, config.rounds, k);
    std::printf("%-28s %12s %12s %12s %12s %12s\n", "mode", "time_us", "min_us", "allocs/step",
                "allocs/tensor", "alloc_B/step");
    for (const auto& [mode, t, r] :
         {std::tuple<const char*, double, const Rounds*>{"async (enqueue all, wait)", f, &rf},
          std::tuple<const char*, double, const Rounds*>{"one by one (enqueue+wait)", s, &rs}}) {
      std::printf("%-28s %12.1f %12.1f %12.1f %12.2f %12.0f\n", mode, t * 1e6,
                  r->seconds.front() * 1e6, r->MedianAllocs(), r->MedianAllocs() / k,
                  r->MedianBytes());
    }
    std::printf("speedup %.1fx\n", s / f);
  }
  CheckAllocs(config, "many, enqueue all then wait", rf.MedianAllocs() / k);
  CheckAllocs(config, "many, one by one", rs.MedianAllocs() / k);
}

}  // namespace

int main(int argc, char** argv) {
  Config config = ParseArgs(argc, argv);
  Check(hvd_init(), "hvd_init");
  int32_t rank = 0, size = 1;
  Check(hvd_rank(&rank), "hvd_rank");
  Check(hvd_size(&size), "hvd_size");
#if HVD_BENCH_CUDA
  if (config.cuda) {
    int32_t local_rank = 0;
    int count = 0;
    Check(hvd_local_rank(&local_rank), "hvd_local_rank");
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
      std::fprintf(stderr, "hvd-bench: --device cuda: no CUDA device visible\n");
      return 2;
    }
    g_device = local_rank % count;
    cudaSetDevice(g_device);
  }
#endif
  g_reduce_data = ChooseReduceData(size);
  if (config.many_count > 0) {
    Many(config, rank, size);
  } else {
    Sweep(config, rank, size);
  }
  if (rank == 0 && g_checks > 0) {
    std::printf("# results checked\n");
  } else if (rank == 0 && !Checked(ParseOp(config.op)) && ParseOp(config.op) != Op::kBarrier) {
    std::printf("# results not checked: %s\n", g_not_checked.c_str());
  }
  Check(hvd_shutdown(), "hvd_shutdown");
  return g_allocs_exceeded ? 3 : 0;
}
