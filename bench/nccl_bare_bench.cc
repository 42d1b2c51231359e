// nccl-bare-bench: the peer of `hvd-bench --device cuda` for allreduce. It is a bare NCCL loop,
// as a framework runs one:
//   - a blocking communicator and one non-blocking stream per rank;
//   - each op is ncclAllReduce in place, then cudaStreamSynchronize.
// No hvd in between. Run it under hvdrun, which names each rank (HVD_RANK, HVD_SIZE,
// HVD_LOCAL_RANK):
//
//   hvdrun -np 2 nccl-bare-bench --sizes 4K,64K,1M --id-file /tmp/id
//
// Rank 0 writes NCCL's unique id to --id-file, after hvdrun's job id (HVD_JOB_ID), and the
// others read it from there once the job id is theirs: the ranks share a file system, as they
// do on one machine or on the emulated GPU (test/gpu_emulator), and a file another run left
// behind is not taken for this one's. Each size does 5 rounds of --iters ops (after 10 warm-up
// ops) and prints "RESULT <bytes> <us>": the median round's time per op, the slowest rank's
// (as hvd-bench's, a max over ranks: one more allreduce), float32 Sum. docs/gpu.md "The wait
// for a NCCL call" compares the two.
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench/byte_size.h"
#include "common/env_registry.h"

namespace {

// HVD_RANK, HVD_SIZE or HVD_LOCAL_RANK as hvdrun set it (the registry's reading: an alias
// HOROVOD_* does too); exits when it is unset or not a number.
int RankVar(const hvd::env::Environment& env, const char* name) {
  if (!env.IsSet(name)) {
    std::fprintf(stderr, "nccl-bare-bench: %s is not set: run it under hvdrun\n", name);
    std::exit(2);
  }
  const hvd::Result<int64_t> value = env.GetInt(name);
  if (!value.ok()) {
    std::fprintf(stderr, "nccl-bare-bench: %s\n", value.status().message().c_str());
    std::exit(2);
  }
  return static_cast<int>(*value);
}

void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "nccl-bare-bench: %s failed\n", what);
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"A bare NCCL allreduce loop: the peer of hvd-bench --device cuda"};
  std::vector<std::string> sizes{"4K", "64K", "1M"};
  std::string id_file;
  int iters = 200;
  app.add_option("--sizes", sizes, "message sizes in bytes (4K, 1M, ...)")
      ->delimiter(',')
      ->check(hvd::bench::ByteSizeError);
  app.add_option("--id-file", id_file, "where rank 0 leaves NCCL's unique id")->required();
  app.add_option("--iters", iters, "ops per round")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  const hvd::env::Environment env = hvd::env::Environment::FromProcess();
  const int rank = RankVar(env, "HVD_RANK"), size = RankVar(env, "HVD_SIZE");
  const std::optional<std::string> job_id = env.Raw("HVD_JOB_ID");
  if (!job_id) {
    std::fprintf(stderr, "nccl-bare-bench: HVD_JOB_ID is not set: run it under hvdrun\n");
    return 2;
  }
  const std::string job = *job_id + "\n";
  int devices = 0;
  Check(cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0, "cudaGetDeviceCount");
  Check(cudaSetDevice(RankVar(env, "HVD_LOCAL_RANK") % devices) == cudaSuccess, "cudaSetDevice");

  ncclUniqueId id;
  if (rank == 0) {
    Check(ncclGetUniqueId(&id) == ncclSuccess, "ncclGetUniqueId");
    const std::string tmp = id_file + ".tmp";
    std::ofstream(tmp, std::ios::binary) << job << std::string(id.internal, sizeof(id.internal));
    Check(std::rename(tmp.c_str(), id_file.c_str()) == 0, "writing --id-file");
  } else {
    // This job's file, whole (rank 0 renames it into place): a stale one waits for it.
    const auto read = [&] {
      std::ifstream in(id_file, std::ios::binary);
      const std::string text((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
      if (text.size() != job.size() + sizeof(id.internal) ||
          text.compare(0, job.size(), job) != 0) {
        return false;
      }
      std::copy(text.begin() + static_cast<std::ptrdiff_t>(job.size()), text.end(), id.internal);
      return true;
    };
    for (int waited = 0; !read(); ++waited) {
      Check(waited < 30000, "waiting 30 s for this job's --id-file");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  ncclComm_t comm;
  Check(ncclCommInitRank(&comm, size, id, rank) == ncclSuccess, "ncclCommInitRank");
  if (rank == 0) unlink(id_file.c_str());  // every rank has read it: init needs them all
  cudaStream_t stream;
  Check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess,
        "cudaStreamCreateWithFlags");

  for (const std::string& text : sizes) {
    const size_t bytes = *hvd::bench::ParseByteSize(text) / 4 * 4;
    void* buffer = nullptr;
    Check(cudaMalloc(&buffer, std::max<size_t>(bytes, 4)) == cudaSuccess, "cudaMalloc");
    const auto op = [&] {
      Check(
          ncclAllReduce(buffer, buffer, bytes / 4, ncclFloat, ncclSum, comm, stream) == ncclSuccess,
          "ncclAllReduce");
      Check(cudaStreamSynchronize(stream) == cudaSuccess, "cudaStreamSynchronize");
    };
    for (int i = 0; i < 10; ++i) op();
    std::vector<double> rounds;
    for (int round = 0; round < 5; ++round) {
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < iters; ++i) op();
      rounds.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
              .count() /
          iters);
    }
    std::sort(rounds.begin(), rounds.end());
    // The slowest rank's median, as hvd-bench prints (a Max allreduce of one double).
    double* slowest = nullptr;
    Check(cudaMalloc(&slowest, sizeof(double)) == cudaSuccess, "cudaMalloc");
    // On the communicator's stream: a plain cudaMemcpy goes on the legacy default stream, which a
    // non-blocking stream does not wait for.
    Check(cudaMemcpyAsync(slowest, &rounds[rounds.size() / 2], sizeof(double),
                          cudaMemcpyHostToDevice, stream) == cudaSuccess,
          "cudaMemcpyAsync");
    Check(ncclAllReduce(slowest, slowest, 1, ncclDouble, ncclMax, comm, stream) == ncclSuccess,
          "ncclAllReduce");
    double median = 0;
    Check(cudaMemcpyAsync(&median, slowest, sizeof(double), cudaMemcpyDeviceToHost, stream) ==
                  cudaSuccess &&
              cudaStreamSynchronize(stream) == cudaSuccess,
          "cudaMemcpyAsync");
    Check(cudaFree(slowest) == cudaSuccess, "cudaFree");
    if (rank == 0) std::printf("RESULT %zu %.1f\n", bytes, median);
    Check(cudaFree(buffer) == cudaSuccess, "cudaFree");
  }
  ncclCommDestroy(comm);
  return 0;
}
