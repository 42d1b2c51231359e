#include "common/env_registry.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

extern char** environ;

namespace hvd::env {
namespace {

using enum VarType;
using enum VarScope;

// clang-format off
const std::vector<VarSpec> kVars = {
  // --- Set by hvdrun for every worker -------------------------------------------------------
  {"HVD_RANK", "HOROVOD_RANK", kInt, "0", kRuntime, "global rank of this worker"},
  {"HVD_SIZE", "HOROVOD_SIZE", kInt, "1", kRuntime, "number of workers in the job"},
  {"HVD_LOCAL_RANK", "HOROVOD_LOCAL_RANK", kInt, "0", kRuntime, "rank among the workers on this host"},
  {"HVD_LOCAL_SIZE", "HOROVOD_LOCAL_SIZE", kInt, "1", kRuntime, "number of workers on this host"},
  {"HVD_CROSS_RANK", "HOROVOD_CROSS_RANK", kInt, "0", kRuntime, "index of this host among hosts with this local rank"},
  {"HVD_CROSS_SIZE", "HOROVOD_CROSS_SIZE", kInt, "1", kRuntime, "number of hosts with this local rank"},
  {"HVD_HOSTNAME", "HOROVOD_HOSTNAME", kString, "localhost", kRuntime, "host name as given to hvdrun (-H / hostfile)"},
  {"HVD_RENDEZVOUS_ADDR", "HOROVOD_GLOO_RENDEZVOUS_ADDR", kString, "", kRuntime, "address of hvdrun's rendezvous server; unset = single process"},
  {"HVD_RENDEZVOUS_PORT", "HOROVOD_GLOO_RENDEZVOUS_PORT", kInt, "0", kRuntime, "port of hvdrun's rendezvous server"},
  {"HVD_SECRET_FD", "", kInt, "-1", kRuntime, "inherited file descriptor holding the job's 256-bit key (never the key itself)"},
  {"HVD_JOB_ID", "", kString, "", kRuntime, "job identifier; namespaces rendezvous keys"},
  {"HVD_RUNTIME_LIBRARY", "", kString, "", kRuntime, "absolute path of libhvd the Python binding loads"},
  {"HVD_STACK_SIGNAL", "", kInt, "0", kRuntime, "signal on which hvd's Python module prints every thread's stack (hvdrun sets 44 for its ranks; 0 = none)"},
  {"HVD_CONTROLLER", "HOROVOD_CONTROLLER", kString, "gloo", kRuntime, "control plane: gloo or mpi"},
  {"HVD_CPU_OPERATIONS", "HOROVOD_CPU_OPERATIONS", kString, "auto", kRuntime, "CPU data backend: gloo, tcp (hvd's own TCP transport), mpi, shm (shared memory; every group on one host) or auto (the default: shm for groups on one host, tcp across hosts)"},
  {"HVD_ELASTIC", "HOROVOD_ELASTIC", kBool, "0", kRuntime, "elastic mode (re-rendezvous after failures)"},
  {"HVD_ELASTIC_WORKER_ID", "", kInt, "-1", kRuntime, "elastic: this worker's number in hvdrun's elastic driver (its mailbox for rank assignments)"},
  // --- Runtime knobs ------------------------------------------------------------------------
  {"HVD_FUSION_THRESHOLD", "HOROVOD_FUSION_THRESHOLD", kInt, "134217728", kRuntime, "tensor fusion buffer size in bytes; 0 disables fusion"},
  {"HVD_CYCLE_TIME", "HOROVOD_CYCLE_TIME", kFloat, "1.0", kRuntime, "background cycle time in milliseconds: the wait between cycles while work is pending, and the longest an asynchronous batch is held before its cycle when nobody waits for it yet (an idle loop wakes on enqueue)"},
  {"HVD_CACHE_CAPACITY", "HOROVOD_CACHE_CAPACITY", kInt, "1024", kRuntime, "response cache entries; 0 disables the cache"},
  {"HVD_EAGER_ALLREDUCE_BYTES", "", kInt, "32768", kRuntime, "a single-tensor CPU collective up to this many bytes waited on alone, in a repeating order, rides the next cycle's negotiation round: one round trip instead of two (hvd's TCP, also between hosts; shared memory from 3 ranks, where with more ranks than CPUs up to this times the ranks per CPU, at most 8x); the same on every rank; 0 = never"},
  {"HVD_OUTPUT_CACHE_BYTES", "", kInt, "134217728", kRuntime, "bytes of given-back allgather, alltoall and reducescatter outputs (hvd_free, a dead hvd.torch tensor) kept for the next outputs of their size class, so large outputs do not page-fault afresh every op; 0 = none"},
  {"HVD_HIERARCHICAL_ALLREDUCE", "HOROVOD_HIERARCHICAL_ALLREDUCE", kString, "auto", kRuntime, "hierarchical allreduce (shared memory within a host, TCP across hosts): auto (the default: for groups spread evenly over several hosts with 2+ ranks each), 1 (always; an uneven group is an error; GPU allreduces on NCCL then go NCCL within the host, TCP across) or 0 (never)"},
  {"HVD_HIERARCHICAL_ALLGATHER", "HOROVOD_HIERARCHICAL_ALLGATHER", kBool, "0", kRuntime, "hierarchical allgather (gather within each host, across hosts, broadcast within the host); an uneven group is an error"},
  {"HVD_TORUS_ALLREDUCE", "HOROVOD_TORUS_ALLREDUCE", kBool, "0", kRuntime, "2D torus allreduce (NCCL)"},
  {"HVD_GLOO_IFACE", "HOROVOD_GLOO_IFACE", kString, "", kRuntime, "network interface for Gloo data connections"},
  {"HVD_GLOO_TIMEOUT_SECONDS", "HOROVOD_GLOO_TIMEOUT_SECONDS", kInt, "30", kBoth, "rendezvous timeout, and the longest a collective waits with nothing moving, in seconds"},
  {"HVD_TCP_CONGESTION", "", kString, "auto", kRuntime, "congestion control of hvd's TCP data connections: auto (the default: BBR, which paces bursts in software, replaced by cubic or reno), system (the kernel's default) or a name from /proc/sys/net/ipv4/tcp_available_congestion_control"},
  {"HVD_TCP_HALVING_BYTES", "", kString, "auto", kRuntime, "hvd's TCP allreduces of 4 or more ranks that would take recursive doubling (up to 512 KiB sent per rank) take Rabenseifner's halving-doubling from this many bytes: auto (the default: measured per group at its first such allreduce of 8 KiB or more, from its round time and bandwidth), off, or bytes; the same on every rank"},
  {"HVD_SHM_BUFFER_BYTES", "", kInt, "1048576", kRuntime, "shared-memory staging bytes per rank and group (two halves); larger collectives are chunked"},
  {"HVD_SHM_SINGLE_COPY", "", kString, "auto", kRuntime, "shared-memory allreduces from HVD_SHM_SINGLE_COPY_BYTES: auto (the default: rank 0 of each group times both ways and keeps the faster per size class, re-checking the other now and then), always (read the peers' buffers directly whenever possible) or never (staged through the segment)"},
  {"HVD_SHM_SINGLE_COPY_BYTES", "", kInt, "2097152", kRuntime, "shared-memory allreduces from this size read the peers' buffers directly (process_vm_readv) when every rank may and the host has a CPU per local rank; 0 = never"},
  {"HVD_SHM_DIRECT_BYTES", "", kString, "auto", kRuntime, "shared-memory allreduces up to this size take one round in which every rank reads and reduces all ranks' inputs (larger ones a reduce-scatter and an allgather round), and a lone one up to twice this rides the negotiation round: auto (the default: 64 KiB for 2 ranks or more ranks than CPUs, less the more ranks there are: 21 KiB at 4, 6 KiB at 8, 2.4 KiB at 16) or bytes up to 65536 (65536 = every group before 2026-11-26); the same on every rank"},
  {"HVD_SHM_NAMED", "", kBool, "0", kRuntime, "testing: shared-memory segments get a name in /dev/shm while their group gathers (as where /dev/shm has no O_TMPFILE); by default they never have one"},
  {"HVD_AUTOTUNE", "HOROVOD_AUTOTUNE", kBool, "0", kRuntime, "Bayesian autotuning of fusion threshold and cycle time"},
  {"HVD_AUTOTUNE_LOG", "HOROVOD_AUTOTUNE_LOG", kString, "", kRuntime, "CSV log of autotune samples"},
  {"HVD_AUTOTUNE_WARMUP_SAMPLES", "HOROVOD_AUTOTUNE_WARMUP_SAMPLES", kInt, "3", kRuntime, "autotune samples discarded at start"},
  {"HVD_AUTOTUNE_STEPS_PER_SAMPLE", "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE", kInt, "10", kRuntime, "steps per autotune sample"},
  {"HVD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", "HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", kInt, "20", kRuntime, "maximum Bayesian optimisation samples"},
  {"HVD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", "HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", kFloat, "0.8", kRuntime, "Gaussian process noise in [0,1]"},
  {"HVD_AUTOTUNE_CACHE", "", kString, "", kRuntime, "file that stores tuned parameters per model signature"},
  {"HVD_AUTOTUNE_TUNE_SET_KNOBS", "", kBool, "0", kRuntime, "autotune starts from an explicitly set fusion threshold, cycle time and cache capacity instead of keeping them fixed"},
  {"HVD_TIMELINE", "HOROVOD_TIMELINE", kString, "", kRuntime, "timeline file path, or DYNAMIC to enable start_timeline()"},
  {"HVD_TIMELINE_MARK_CYCLES", "HOROVOD_TIMELINE_MARK_CYCLES", kBool, "0", kRuntime, "mark background cycles in the timeline"},
  {"HVD_TIMELINE_ALL_RANKS", "", kBool, "0", kRuntime, "every rank records into one timeline"},
  {"HVD_TIMELINE_CLOCK_SKEW_US", "", kInt, "0", kRuntime, "testing: shift this rank's timeline clock by N microseconds"},
  {"HVD_STALL_CHECK_DISABLE", "HOROVOD_STALL_CHECK_DISABLE", kBool, "0", kRuntime, "disable the stall inspector"},
  {"HVD_STALL_CHECK_TIME_SECONDS", "HOROVOD_STALL_CHECK_TIME_SECONDS", kInt, "60", kRuntime, "seconds before a stalled tensor is reported"},
  {"HVD_STALL_SHUTDOWN_TIME_SECONDS", "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", kInt, "600", kRuntime, "seconds before a stall shuts the job down (0 = never; Horovod's default is 0)"},
  {"HVD_MPI_THREADS_DISABLE", "HOROVOD_MPI_THREADS_DISABLE", kBool, "0", kRuntime, "initialise MPI with MPI_THREAD_SINGLE"},
  {"HVD_GPU_OPERATIONS", "HOROVOD_GPU_OPERATIONS", kString, "auto", kRuntime, "GPU tensors: auto (the default: NCCL when every rank of a process set has a GPU of its own, else staged through host memory and the CPU transport), nccl (an error when ranks share a GPU) or cpu (always staged); Horovod's NCCL, MPI and GLOO are accepted"},
  {"HVD_GPU_ALLREDUCE", "HOROVOD_GPU_ALLREDUCE", kString, "", kRuntime, "Horovod's per-op GPU knob, read as HVD_GPU_OPERATIONS when that is unset"},
  {"HVD_GPU_ALLGATHER", "HOROVOD_GPU_ALLGATHER", kString, "", kRuntime, "Horovod's per-op GPU knob: MPI or GLOO stages GPU allgathers through host memory where the set runs on NCCL; NCCL or unset: as HVD_GPU_OPERATIONS"},
  {"HVD_GPU_BROADCAST", "HOROVOD_GPU_BROADCAST", kString, "", kRuntime, "Horovod's per-op GPU knob: MPI or GLOO stages GPU broadcasts through host memory where the set runs on NCCL; NCCL or unset: as HVD_GPU_OPERATIONS"},
  {"HVD_GPU_ALLTOALL", "HOROVOD_GPU_ALLTOALL", kString, "", kRuntime, "Horovod's per-op GPU knob: MPI or GLOO stages GPU alltoalls through host memory where the set runs on NCCL; NCCL or unset: as HVD_GPU_OPERATIONS"},
  {"HVD_GPU_REDUCESCATTER", "HOROVOD_GPU_REDUCESCATTER", kString, "", kRuntime, "Horovod's per-op GPU knob: MPI or GLOO stages GPU reducescatters through host memory where the set runs on NCCL; NCCL or unset: as HVD_GPU_OPERATIONS"},
  {"HVD_GPU_ASYNC_COMPLETION", "", kBool, "0", kRuntime, "1: a NCCL allreduce's handles complete on a completion thread once the GPU finished it, and the background thread goes on to the next op at once (Horovod's way); 0: the background thread waits for each NCCL call (fewer, larger fused calls). docs/gpu.md \"Completion off the cycle\""},
  {"HVD_NUM_NCCL_STREAMS", "HOROVOD_NUM_NCCL_STREAMS", kInt, "1", kRuntime, "NCCL streams per device"},
  {"HVD_THREAD_AFFINITY", "HOROVOD_THREAD_AFFINITY", kString, "", kRuntime, "comma list of core ids for the background thread, one per local rank"},
  {"HVD_BIND_TO", "", kString, "none", kLauncher, "placement of local ranks: none (the kernel's) or core (each bound to an even share of the launcher's CPUs, unless ranks outnumber CPUs: lower small-op latency, lower training throughput on few cores)"},
  {"HVD_WORKER_THREADS", "", kString, "share", kLauncher, "OpenMP threads (PyTorch's intra-op pool) of each worker: share (OMP_NUM_THREADS = the physical cores of the rank's host / the job's ranks there, at least 1, unless OMP_NUM_THREADS is set; hvd-agent computes it on other hosts) or system (torch's default: every core, in every rank)"},
  {"HVD_WORKER_MALLOC", "", kString, "tuned", kLauncher, "glibc allocator settings hvdrun gives its workers: tuned (MALLOC_MMAP_THRESHOLD_=32 MiB, MALLOC_TRIM_THRESHOLD_=1 GiB: a step's large temporaries are reused instead of unmapped and faulted in again every step; not when the user set a MALLOC_* threshold, a glibc.malloc tunable or preloads another allocator) or system (glibc's defaults)"},
  {"HVD_BATCH_D2D_MEMCOPIES", "HOROVOD_BATCH_D2D_MEMCOPIES", kBool, "1", kRuntime, "batch device-to-device copies into the fusion buffer"},
  {"HVD_DISABLE_GROUP_FUSION", "HOROVOD_DISABLE_GROUP_FUSION", kBool, "0", kRuntime, "fuse grouped ops only within their group"},
  {"HVD_ENABLE_ASYNC_COMPLETION", "HOROVOD_ENABLE_ASYNC_COMPLETION", kBool, "0", kRuntime, "accepted and ignored (Horovod's: hand the framework a GPU op's CUDA event instead of waiting for it on the CPU); hvd's completion of NCCL allreduces off the cycle is HVD_GPU_ASYNC_COMPLETION"},
  {"HVD_DYNAMIC_PROCESS_SETS", "HOROVOD_DYNAMIC_PROCESS_SETS", kBool, "0", kRuntime, "allow add/remove_process_set after init"},
  {"HVD_ADASUM_MPI_CHUNK_SIZE", "HOROVOD_ADASUM_MPI_CHUNK_SIZE", kInt, "1073741824", kRuntime, "Horovod's Adasum-over-MPI chunk size: accepted, no effect (hvd's Adasum runs on every transport, unchunked)"},
  {"HVD_LOG_LEVEL", "HOROVOD_LOG_LEVEL", kString, "WARNING", kBoth, "TRACE, DEBUG, INFO, WARNING, ERROR or FATAL"},
  {"HVD_LOG_HIDE_TIME", "HOROVOD_LOG_HIDE_TIME", kBool, "0", kBoth, "omit timestamps from log lines"},
  // --- Launcher ----------------------------------------------------------------------------
  {"HVD_START_TIMEOUT", "HOROVOD_START_TIMEOUT", kInt, "30", kLauncher, "seconds hvdrun waits for every rank to start (the ranks' own rendezvous waits are HVD_GLOO_TIMEOUT_SECONDS)"},
  {"HVD_ELASTIC_TIMEOUT", "HOROVOD_ELASTIC_TIMEOUT", kFloat, "600", kBoth, "seconds an elastic job waits for enough slots (--min-np) before it fails"},
  {"HVD_HOST_DISCOVERY_INTERVAL", "", kFloat, "1", kLauncher, "seconds between runs of the elastic --host-discovery-script"},
  {"HVD_HOST_DISCOVERY_TIMEOUT", "", kFloat, "10", kLauncher, "seconds a --host-discovery-script run may take before it is killed (its last good host set stays)"},
  {"HVD_GRACE_PERIOD_SECONDS", "", kFloat, "5", kLauncher, "seconds between SIGTERM and SIGKILL when ending a job"},
  {"HVD_TIMEOUT", "", kFloat, "0", kLauncher, "seconds a job may run: then every rank prints its Python stacks and the job is stopped, exit 124 (0 = no limit)"},
  {"HVD_HEARTBEAT_TIMEOUT_SECONDS", "", kFloat, "5", kBoth, "a host silent this long is lost: hvdrun <-> hvd-agent heartbeats, and the tcp transport's dead-peer check (0 = never)"},
};
// clang-format on

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

}  // namespace

const std::vector<VarSpec>& AllVars() { return kVars; }

const VarSpec* FindVar(std::string_view name) {
  for (const auto& v : kVars) {
    if (name == v.name || (v.horovod_alias[0] != '\0' && name == v.horovod_alias)) return &v;
  }
  return nullptr;
}

Environment Environment::FromProcess() {
  std::map<std::string, std::string> vars;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv(*e);
    size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    vars.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  return FromMap(std::move(vars));
}

Environment Environment::FromMap(std::map<std::string, std::string> vars) {
  Environment env;
  env.vars_ = std::move(vars);
  return env;
}

std::optional<std::string> Environment::Raw(std::string_view name) const {
  auto it = vars_.find(std::string(name));
  if (it == vars_.end()) return std::nullopt;
  return it->second;
}

Lookup Environment::Get(std::string_view name) const {
  const VarSpec* spec = FindVar(name);
  HVD_CHECK(spec != nullptr) << "environment variable " << name
                             << " is not declared in env_registry.cc";
  if (auto v = Raw(spec->name)) return {*v, spec->name, false};
  if (spec->horovod_alias[0] != '\0') {
    if (auto v = Raw(spec->horovod_alias)) return {*v, spec->horovod_alias, false};
  }
  return {spec->default_value, "default", true};
}

bool Environment::IsSet(std::string_view name) const { return !Get(name).is_default; }

Result<std::string> Environment::GetString(std::string_view name) const { return Get(name).value; }

Result<int64_t> Environment::GetInt(std::string_view name) const {
  Lookup l = Get(name);
  return ParseInt(l.value, l.source);
}

Result<double> Environment::GetFloat(std::string_view name) const {
  Lookup l = Get(name);
  return ParseFloat(l.value, l.source);
}

Result<bool> Environment::GetBool(std::string_view name) const {
  Lookup l = Get(name);
  return ParseBool(l.value, l.source);
}

Result<int64_t> ParseInt(std::string_view text, std::string_view what) {
  std::string t = Trim(text);
  if (t.empty()) {  // the value as given: "got ' '" for blanks
    return Status::InvalidArgument(std::string(what) + ": expected an integer, got '" +
                                   std::string(text) + "'");
  }
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(t.c_str(), &end, 10);
  if (errno != 0 || end == nullptr || *end != '\0') {
    return Status::InvalidArgument(std::string(what) + ": expected an integer, got '" +
                                   std::string(text) + "'");
  }
  return static_cast<int64_t>(v);
}

Result<double> ParseFloat(std::string_view text, std::string_view what) {
  std::string t = Trim(text);
  errno = 0;
  char* end = nullptr;
  double v = t.empty() ? 0 : std::strtod(t.c_str(), &end);
  // Not inf or nan (strtod reads both): every float knob is a finite amount (`--timeout inf`
  // ended the job at once until 2026-12-01).
  if (t.empty() || errno != 0 || end == nullptr || *end != '\0' || !std::isfinite(v)) {
    return Status::InvalidArgument(std::string(what) + ": expected a number, got '" +
                                   std::string(text) + "'");
  }
  return v;
}

Result<bool> ParseBool(std::string_view text, std::string_view what) {
  std::string t = Lower(Trim(text));
  if (t == "true" || t == "yes" || t == "on") return true;
  if (t == "false" || t == "no" || t == "off" || t.empty()) return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(t.c_str(), &end, 10);
  if (errno == 0 && end != nullptr && *end == '\0') return v != 0;
  return Status::InvalidArgument(std::string(what) +
                                 ": expected a boolean (1/0, true/false), got '" +
                                 std::string(text) + "'");
}

}  // namespace hvd::env
