#include "runtime/runtime_config.h"

#include <sched.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>

namespace hvd::runtime {
namespace {

// Reads an integer variable and checks it lies in [lo, hi].
Result<int64_t> IntIn(const env::Environment& env, const char* name, int64_t lo, int64_t hi) {
  HVD_ASSIGN_OR_RETURN(int64_t v, env.GetInt(name));
  if (v < lo || v > hi) {
    return Status::InvalidArgument(env.Get(name).source + ": value " + std::to_string(v) +
                                   " is out of range [" + std::to_string(lo) + ", " +
                                   std::to_string(hi) + "]");
  }
  return v;
}

constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();

// `text`, the value of variable `name`: -1 when empty or "auto", else a number of bytes in
// [0, hi]; otherwise an error naming the variable, saying it `expected`.
Result<int64_t> AutoOrBytes(const env::Environment& env, const char* name, const std::string& text,
                            int64_t hi, const char* expected) {
  if (text.empty() || text == "auto") return int64_t{-1};
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0' || v < 0 || v > hi) {
    return Status::InvalidArgument(env.Get(name).source + ": expected " + expected + ", got '" +
                                   text + "'");
  }
  return static_cast<int64_t>(v);
}

// Reads a launcher's variable `name`, which must be an integer in [lo, hi].
Result<int32_t> LauncherInt(const env::Environment& env, const std::string& name, int64_t lo,
                            int64_t hi, const std::string& launcher_vars) {
  const std::optional<std::string> raw = env.Raw(name);
  if (!raw) {
    // Open MPI and MPICH/Intel MPI set all four; a PMI launcher that sets only the rank and
    // size (srun --mpi=pmi2) read as "got ''" until 2026-12-02.
    return Status::InvalidArgument(name + " is not set, but " + launcher_vars +
                                   " are: libhvd needs an MPI launcher's local rank and size "
                                   "too (Open MPI's and MPICH's mpirun set them); start the job "
                                   "with hvdrun otherwise");
  }
  const std::string& text = *raw;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < lo || v > hi) {
    return Status::InvalidArgument(name + ": expected an integer in [" + std::to_string(lo) + ", " +
                                   std::to_string(hi) + "], got '" + text + "'");
  }
  return static_cast<int32_t>(v);
}

// mpirun started this process and hvdrun did not set the topology: take it from the launcher's
// variables (Horovod's MPI mode has no HOROVOD_RANK either). Open MPI: OMPI_COMM_WORLD_*;
// MPICH and Intel MPI (Hydra): PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS.
Status LoadMpirunTopology(const env::Environment& env, bool open_mpi, RuntimeConfig* c) {
  c->launched_by_mpirun = true;
  const std::string rank = open_mpi ? "OMPI_COMM_WORLD_RANK" : "PMI_RANK";
  const std::string size = open_mpi ? "OMPI_COMM_WORLD_SIZE" : "PMI_SIZE";
  const std::string local_rank = open_mpi ? "OMPI_COMM_WORLD_LOCAL_RANK" : "MPI_LOCALRANKID";
  const std::string local_size = open_mpi ? "OMPI_COMM_WORLD_LOCAL_SIZE" : "MPI_LOCALNRANKS";
  c->topology_source = open_mpi ? "OMPI_COMM_WORLD_RANK/SIZE" : "PMI_RANK/PMI_SIZE";
  const std::string vars = rank + " and " + size;
  HVD_ASSIGN_OR_RETURN(c->size, LauncherInt(env, size, 1, kMaxInt32, vars));
  HVD_ASSIGN_OR_RETURN(c->rank, LauncherInt(env, rank, 0, c->size - 1, vars));
  HVD_ASSIGN_OR_RETURN(c->local_size, LauncherInt(env, local_size, 1, c->size, vars));
  HVD_ASSIGN_OR_RETURN(c->local_rank, LauncherInt(env, local_rank, 0, c->local_size - 1, vars));
  c->cross_size = std::max<int32_t>(1, c->size / c->local_size);
  c->cross_rank = std::min(c->rank / c->local_size, c->cross_size - 1);
  HVD_ASSIGN_OR_RETURN(c->hostname, env.GetString("HVD_HOSTNAME"));
  return Status::OK();
}

Status LoadTopology(const env::Environment& env, RuntimeConfig* c) {
  if (!env.IsSet("HVD_RANK") && env.Raw("OMPI_COMM_WORLD_RANK").has_value()) {
    return LoadMpirunTopology(env, /*open_mpi=*/true, c);
  }
  if (!env.IsSet("HVD_RANK") && env.Raw("PMI_RANK").has_value() &&
      env.Raw("PMI_SIZE").value_or("1") != "1") {
    return LoadMpirunTopology(env, /*open_mpi=*/false, c);
  }
  HVD_ASSIGN_OR_RETURN(c->size, IntIn(env, "HVD_SIZE", 1, kMaxInt32));
  HVD_ASSIGN_OR_RETURN(c->rank, IntIn(env, "HVD_RANK", 0, c->size - 1));
  HVD_ASSIGN_OR_RETURN(c->local_size, IntIn(env, "HVD_LOCAL_SIZE", 1, c->size));
  HVD_ASSIGN_OR_RETURN(c->local_rank, IntIn(env, "HVD_LOCAL_RANK", 0, c->local_size - 1));
  HVD_ASSIGN_OR_RETURN(c->cross_size, IntIn(env, "HVD_CROSS_SIZE", 1, c->size));
  HVD_ASSIGN_OR_RETURN(c->cross_rank, IntIn(env, "HVD_CROSS_RANK", 0, c->cross_size - 1));
  HVD_ASSIGN_OR_RETURN(c->hostname, env.GetString("HVD_HOSTNAME"));
  return Status::OK();
}

// A string knob's value, lower-cased (the mode names are case-insensitive).
Result<std::string> GetLowered(const env::Environment& env, const char* var) {
  HVD_ASSIGN_OR_RETURN(std::string value, env.GetString(var));
  for (char& ch : value) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return value;
}

Status LoadRendezvous(const env::Environment& env, RuntimeConfig* c) {
  HVD_ASSIGN_OR_RETURN(c->rendezvous_addr, env.GetString("HVD_RENDEZVOUS_ADDR"));
  HVD_ASSIGN_OR_RETURN(c->rendezvous_port, IntIn(env, "HVD_RENDEZVOUS_PORT", 0, 65535));
  HVD_ASSIGN_OR_RETURN(c->secret_fd, IntIn(env, "HVD_SECRET_FD", -1, kMaxInt32));
  HVD_ASSIGN_OR_RETURN(c->job_id, env.GetString("HVD_JOB_ID"));
  HVD_ASSIGN_OR_RETURN(c->gloo_iface, env.GetString("HVD_GLOO_IFACE"));
  HVD_ASSIGN_OR_RETURN(c->cpu_operations, GetLowered(env, "HVD_CPU_OPERATIONS"));
  HVD_ASSIGN_OR_RETURN(c->controller, GetLowered(env, "HVD_CONTROLLER"));
  if (c->launched_by_mpirun) {
    if (!env.IsSet("HVD_CONTROLLER")) c->controller = "mpi";
    if (!env.IsSet("HVD_CPU_OPERATIONS")) c->cpu_operations = "mpi";
  }
  if (c->controller != "gloo" && c->controller != "mpi") {
    return Status::InvalidArgument(env.Get("HVD_CONTROLLER").source +
                                   ": expected gloo or mpi, got '" + c->controller + "'");
  }
  static const char* const kCpuOperations[] = {"auto", "shm", "tcp", "gloo", "mpi"};
  if (std::find(std::begin(kCpuOperations), std::end(kCpuOperations), c->cpu_operations) ==
      std::end(kCpuOperations)) {
    return Status::InvalidArgument(env.Get("HVD_CPU_OPERATIONS").source +
                                   ": expected auto, shm, tcp, gloo or mpi, got '" +
                                   c->cpu_operations + "'");
  }
  HVD_ASSIGN_OR_RETURN(std::string hierarchical, env.GetString("HVD_HIERARCHICAL_ALLREDUCE"));
  if (hierarchical.empty() || hierarchical == "auto") {
    c->hierarchical_allreduce = "auto";
  } else {
    HVD_ASSIGN_OR_RETURN(
        bool on, env::ParseBool(hierarchical, env.Get("HVD_HIERARCHICAL_ALLREDUCE").source));
    c->hierarchical_allreduce = on ? "on" : "off";
  }
  HVD_ASSIGN_OR_RETURN(c->hierarchical_allgather, env.GetBool("HVD_HIERARCHICAL_ALLGATHER"));
  const bool hierarchical_forced = c->hierarchical_allreduce == "on" || c->hierarchical_allgather;
  if (hierarchical_forced && c->cpu_operations != "auto") {
    return Status::InvalidArgument(
        "hierarchical collectives (HVD_HIERARCHICAL_ALLREDUCE/ALLGATHER=1, hvdrun "
        "--hierarchical-allreduce/--hierarchical-allgather) need HVD_CPU_OPERATIONS=auto "
        "(shared memory within a host, TCP across hosts), not '" +
        c->cpu_operations + "'");
  }
  HVD_ASSIGN_OR_RETURN(c->mpi_threads_disable, env.GetBool("HVD_MPI_THREADS_DISABLE"));
  HVD_ASSIGN_OR_RETURN(c->shm_buffer_bytes,
                       IntIn(env, "HVD_SHM_BUFFER_BYTES", int64_t{8} << 10, int64_t{1} << 32));
  HVD_ASSIGN_OR_RETURN(c->shm_single_copy_bytes,
                       IntIn(env, "HVD_SHM_SINGLE_COPY_BYTES", 0, int64_t{1} << 62));
  HVD_ASSIGN_OR_RETURN(c->shm_single_copy, GetLowered(env, "HVD_SHM_SINGLE_COPY"));
  if (c->shm_single_copy.empty()) c->shm_single_copy = "auto";
  if (c->shm_single_copy != "auto" && c->shm_single_copy != "always" &&
      c->shm_single_copy != "never") {
    return Status::InvalidArgument(env.Get("HVD_SHM_SINGLE_COPY").source +
                                   ": expected auto, always or never, got '" + c->shm_single_copy +
                                   "'");
  }
  if (c->shm_single_copy == "never") c->shm_single_copy_bytes = 0;
  HVD_ASSIGN_OR_RETURN(std::string direct, env.GetString("HVD_SHM_DIRECT_BYTES"));
  HVD_ASSIGN_OR_RETURN(c->shm_direct_bytes,
                       AutoOrBytes(env, "HVD_SHM_DIRECT_BYTES", direct, 65536,
                                   "auto or a number of bytes from 0 to 65536"));
  HVD_ASSIGN_OR_RETURN(c->shm_named, env.GetBool("HVD_SHM_NAMED"));
  HVD_ASSIGN_OR_RETURN(c->elastic, env.GetBool("HVD_ELASTIC"));
  HVD_ASSIGN_OR_RETURN(c->elastic_worker_id, IntIn(env, "HVD_ELASTIC_WORKER_ID", -1, kMaxInt32));
  // HVD_ELASTIC_TIMEOUT is hvdrun's (how long the driver waits for --min-np slots); a worker
  // only checks it, as before 2026-12-01, when its wait for the driver ended after it.
  HVD_ASSIGN_OR_RETURN(double elastic_s, env.GetFloat("HVD_ELASTIC_TIMEOUT"));
  if (!(elastic_s > 0 && elastic_s <= 86400.0 * 365)) {
    return Status::InvalidArgument(env.Get("HVD_ELASTIC_TIMEOUT").source +
                                   ": expected seconds > 0, got " + std::to_string(elastic_s));
  }
  HVD_ASSIGN_OR_RETURN(int64_t seconds, IntIn(env, "HVD_GLOO_TIMEOUT_SECONDS", 1, 86400 * 7));
  c->timeout = std::chrono::seconds(seconds);
  HVD_ASSIGN_OR_RETURN(double heartbeat, env.GetFloat("HVD_HEARTBEAT_TIMEOUT_SECONDS"));
  if (!(heartbeat >= 0 && heartbeat <= 86400)) {
    return Status::InvalidArgument(env.Get("HVD_HEARTBEAT_TIMEOUT_SECONDS").source + ": " +
                                   std::to_string(heartbeat) + " s is out of range [0, 86400]");
  }
  c->heartbeat_timeout = std::chrono::milliseconds(std::llround(heartbeat * 1000.0));
  HVD_ASSIGN_OR_RETURN(std::string affinity, env.GetString("HVD_THREAD_AFFINITY"));
  c->thread_affinity.clear();
  for (size_t start = 0; !affinity.empty() && start <= affinity.size();) {
    const size_t end = std::min(affinity.find(',', start), affinity.size());
    const std::string item = affinity.substr(start, end - start);
    char* stop = nullptr;
    const long core = std::strtol(item.c_str(), &stop, 10);
    if (item.empty() || *stop != '\0' || core < 0 || core >= CPU_SETSIZE) {
      return Status::InvalidArgument(env.Get("HVD_THREAD_AFFINITY").source +
                                     ": expected a comma list of core ids (one per local rank), "
                                     "got '" +
                                     affinity + "'");
    }
    c->thread_affinity.push_back(static_cast<int>(core));
    start = end + 1;
  }
  HVD_ASSIGN_OR_RETURN(c->tcp_congestion, env.GetString("HVD_TCP_CONGESTION"));
  if (c->tcp_congestion.empty()) c->tcp_congestion = "auto";
  // A kernel name (TCP_CA_NAME_MAX 16 with its NUL): lower-case letters, digits, '_' and '-'.
  const bool name_ok =
      c->tcp_congestion.size() < 16 &&
      std::all_of(c->tcp_congestion.begin(), c->tcp_congestion.end(), [](char ch) {
        return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-';
      });
  if (!name_ok) {
    return Status::InvalidArgument(env.Get("HVD_TCP_CONGESTION").source +
                                   ": expected auto, system or a congestion control's name "
                                   "(as in /proc/sys/net/ipv4/tcp_available_congestion_control), "
                                   "got '" +
                                   c->tcp_congestion + "'");
  }
  HVD_ASSIGN_OR_RETURN(std::string halving, env.GetString("HVD_TCP_HALVING_BYTES"));
  if (halving == "off") {
    c->tcp_halving_bytes = std::numeric_limits<int64_t>::max();
  } else {
    HVD_ASSIGN_OR_RETURN(c->tcp_halving_bytes, AutoOrBytes(env, "HVD_TCP_HALVING_BYTES", halving,
                                                           std::numeric_limits<int64_t>::max(),
                                                           "auto, off or a number of bytes >= 0"));
  }
  if (!c->rendezvous_addr.empty() && c->rendezvous_port == 0) {
    // Named as the user set them: Horovod's scripts set HOROVOD_GLOO_RENDEZVOUS_ADDR.
    return Status::InvalidArgument(env.Get("HVD_RENDEZVOUS_ADDR").source + " is set ('" +
                                   c->rendezvous_addr +
                                   "'), but no rendezvous port is: set HVD_RENDEZVOUS_PORT "
                                   "(or HOROVOD_GLOO_RENDEZVOUS_PORT) to hvdrun's port, 1-65535");
  }
  return Status::OK();
}

Status LoadCoordinator(const env::Environment& env, RuntimeConfig* c) {
  HVD_ASSIGN_OR_RETURN(c->fusion_threshold_bytes,
                       IntIn(env, "HVD_FUSION_THRESHOLD", 0, int64_t{1} << 40));
  HVD_ASSIGN_OR_RETURN(double cycle_ms, env.GetFloat("HVD_CYCLE_TIME"));
  if (!(cycle_ms >= 0 && cycle_ms <= 60000)) {
    return Status::InvalidArgument(env.Get("HVD_CYCLE_TIME").source + ": cycle time " +
                                   std::to_string(cycle_ms) + " ms is out of range [0, 60000]");
  }
  c->cycle_time = std::chrono::microseconds(std::llround(cycle_ms * 1000.0));
  // Any int32, as Horovod takes (the cache makes its entries as tensors are seen).
  HVD_ASSIGN_OR_RETURN(c->cache_capacity, IntIn(env, "HVD_CACHE_CAPACITY", 0, INT32_MAX));
  HVD_ASSIGN_OR_RETURN(c->eager_allreduce_bytes,
                       IntIn(env, "HVD_EAGER_ALLREDUCE_BYTES", 0, int64_t{1} << 20));
  HVD_ASSIGN_OR_RETURN(c->disable_group_fusion, env.GetBool("HVD_DISABLE_GROUP_FUSION"));
  HVD_ASSIGN_OR_RETURN(c->dynamic_process_sets, env.GetBool("HVD_DYNAMIC_PROCESS_SETS"));
  HVD_ASSIGN_OR_RETURN(c->output_cache_bytes,
                       IntIn(env, "HVD_OUTPUT_CACHE_BYTES", 0, int64_t{1} << 40));
  return Status::OK();
}

Status LoadStall(const env::Environment& env, RuntimeConfig* c) {
  HVD_ASSIGN_OR_RETURN(bool disabled, env.GetBool("HVD_STALL_CHECK_DISABLE"));
  c->stall_check_enabled = !disabled;
  HVD_ASSIGN_OR_RETURN(int64_t check, IntIn(env, "HVD_STALL_CHECK_TIME_SECONDS", 0, 86400 * 365));
  HVD_ASSIGN_OR_RETURN(int64_t stop, IntIn(env, "HVD_STALL_SHUTDOWN_TIME_SECONDS", 0, 86400 * 365));
  c->stall_check_time = std::chrono::seconds(check);
  c->stall_shutdown_time = std::chrono::seconds(stop);
  return Status::OK();
}

Status LoadLogging(const env::Environment& env, RuntimeConfig* c) {
  env::Lookup level = env.Get("HVD_LOG_LEVEL");
  auto parsed = log::ParseLevel(level.value);
  if (parsed.ok()) {
    c->log_level = *parsed;
  } else {  // Horovod's rule (an unknown level is WARNING), which hvdrun follows too
    c->log_level = log::Level::kWarning;
    c->log_level_warning = level.source + ": " + parsed.status().message() + "; using WARNING";
  }
  HVD_ASSIGN_OR_RETURN(c->log_hide_time, env.GetBool("HVD_LOG_HIDE_TIME"));
  HVD_ASSIGN_OR_RETURN(c->timeline_path, env.GetString("HVD_TIMELINE"));
  HVD_ASSIGN_OR_RETURN(c->timeline_mark_cycles, env.GetBool("HVD_TIMELINE_MARK_CYCLES"));
  HVD_ASSIGN_OR_RETURN(c->timeline_all_ranks, env.GetBool("HVD_TIMELINE_ALL_RANKS"));
  HVD_ASSIGN_OR_RETURN(c->timeline_clock_skew_us, IntIn(env, "HVD_TIMELINE_CLOCK_SKEW_US",
                                                        -(int64_t{1} << 40), int64_t{1} << 40));
  return Status::OK();
}

Status LoadAutotune(const env::Environment& env, RuntimeConfig* c) {
  RuntimeConfig::Autotune& a = c->autotune;
  HVD_ASSIGN_OR_RETURN(a.enabled, env.GetBool("HVD_AUTOTUNE"));
  HVD_ASSIGN_OR_RETURN(a.log_path, env.GetString("HVD_AUTOTUNE_LOG"));
  HVD_ASSIGN_OR_RETURN(a.cache_path, env.GetString("HVD_AUTOTUNE_CACHE"));
  HVD_ASSIGN_OR_RETURN(int64_t warmup, IntIn(env, "HVD_AUTOTUNE_WARMUP_SAMPLES", 0, 1 << 20));
  HVD_ASSIGN_OR_RETURN(int64_t steps, IntIn(env, "HVD_AUTOTUNE_STEPS_PER_SAMPLE", 1, 1 << 20));
  HVD_ASSIGN_OR_RETURN(int64_t max_samples,
                       IntIn(env, "HVD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", 1, 1 << 20));
  HVD_ASSIGN_OR_RETURN(a.gaussian_process_noise,
                       env.GetFloat("HVD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE"));
  if (!(a.gaussian_process_noise >= 0 && a.gaussian_process_noise <= 1)) {
    return Status::InvalidArgument(env.Get("HVD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE").source +
                                   ": expected a value in [0, 1], got " +
                                   std::to_string(a.gaussian_process_noise));
  }
  a.warmup_samples = static_cast<int>(warmup);
  a.steps_per_sample = static_cast<int>(steps);
  a.bayes_opt_max_samples = static_cast<int>(max_samples);
  // Explicitly set knobs are fixed (Horovod), unless they are only the starting point.
  HVD_ASSIGN_OR_RETURN(const bool tune_set, env.GetBool("HVD_AUTOTUNE_TUNE_SET_KNOBS"));
  a.fusion_threshold_fixed = !tune_set && !env.Get("HVD_FUSION_THRESHOLD").is_default;
  a.cycle_time_fixed = !tune_set && !env.Get("HVD_CYCLE_TIME").is_default;
  a.cache_fixed = !tune_set && !env.Get("HVD_CACHE_CAPACITY").is_default;
  return Status::OK();
}

// HVD_GPU_OPERATIONS, or Horovod's HOROVOD_GPU_ALLREDUCE when only that is set: NCCL -> nccl,
// MPI/GLOO (a CPU transport) -> cpu.
Status LoadGpu(const env::Environment& env, RuntimeConfig* c) {
  const char* var = "HVD_GPU_OPERATIONS";
  if (!env.IsSet(var) && env.IsSet("HVD_GPU_ALLREDUCE")) var = "HVD_GPU_ALLREDUCE";
  HVD_ASSIGN_OR_RETURN(std::string mode, GetLowered(env, var));
  if (mode.empty()) mode = "auto";
  if (mode == "mpi" || mode == "gloo") mode = "cpu";
  if (mode != "auto" && mode != "nccl" && mode != "cpu") {
    return Status::InvalidArgument(
        env.Get(var).source + ": expected auto, nccl or cpu (Horovod's NCCL, MPI, GLOO), got '" +
        mode + "'");
  }
  c->gpu_operations = mode;
  for (auto [op_var, staged] : {std::pair{"HVD_GPU_ALLGATHER", &c->gpu_staged.allgather},
                                std::pair{"HVD_GPU_BROADCAST", &c->gpu_staged.broadcast},
                                std::pair{"HVD_GPU_ALLTOALL", &c->gpu_staged.alltoall},
                                std::pair{"HVD_GPU_REDUCESCATTER", &c->gpu_staged.reducescatter}}) {
    HVD_ASSIGN_OR_RETURN(const std::string op_mode, GetLowered(env, op_var));
    if (!op_mode.empty() && op_mode != "nccl" && op_mode != "mpi" && op_mode != "gloo") {
      return Status::InvalidArgument(env.Get(op_var).source +
                                     ": expected NCCL, MPI or GLOO (Horovod's values), got '" +
                                     op_mode + "'");
    }
    *staged = op_mode == "mpi" || op_mode == "gloo";
  }
  HVD_ASSIGN_OR_RETURN(c->gpu_async_completion, env.GetBool("HVD_GPU_ASYNC_COMPLETION"));
  // NCCL's own variable, read as NCCL reads it (not one of hvd's: no HVD_ name, no default).
  c->gpu_host_id = env.Raw("NCCL_HOSTID").value_or("");
  return Status::OK();
}

}  // namespace

Status CheckRankIndependentKnobs(const env::Environment& env) {
  RuntimeConfig scratch;
  HVD_RETURN_IF_ERROR(LoadCoordinator(env, &scratch));
  HVD_RETURN_IF_ERROR(LoadStall(env, &scratch));
  HVD_RETURN_IF_ERROR(LoadLogging(env, &scratch));
  HVD_RETURN_IF_ERROR(LoadAutotune(env, &scratch));
  return LoadGpu(env, &scratch);
}

Result<RuntimeConfig> LoadRuntimeConfig(const env::Environment& env) {
  RuntimeConfig c;
  HVD_RETURN_IF_ERROR(LoadTopology(env, &c));
  HVD_RETURN_IF_ERROR(LoadRendezvous(env, &c));
  HVD_RETURN_IF_ERROR(LoadCoordinator(env, &c));
  HVD_RETURN_IF_ERROR(LoadStall(env, &c));
  HVD_RETURN_IF_ERROR(LoadLogging(env, &c));
  HVD_RETURN_IF_ERROR(LoadAutotune(env, &c));
  HVD_RETURN_IF_ERROR(LoadGpu(env, &c));
  return c;
}

}  // namespace hvd::runtime
