#ifndef HVD_RUNTIME_RUNTIME_CONFIG_H_
#define HVD_RUNTIME_RUNTIME_CONFIG_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/env_registry.h"
#include "common/logging.h"
#include "common/status.h"

namespace hvd::runtime {

// Every knob the runtime reads, captured once from the environment at hvd_init (STYLE.md
// "Configuration"). Tests build one directly, which also allows sub-second stall times.
// A plain value; not synchronized.
struct RuntimeConfig {
  // Topology, as hvdrun exported it (HVD_RANK...), or, when HVD_RANK is unset and Open MPI's
  // mpirun started this process, from OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE}; cross
  // rank/size are then derived as rank / local_size and size / local_size (exact for
  // mpirun's by-slot mapping; the MPI provider refines them, backend_registry.h).
  // MPICH's and Intel MPI's mpirun (Hydra) set PMI_RANK/PMI_SIZE and MPI_LOCALRANKID/
  // MPI_LOCALNRANKS instead: read the same way (until 2026-12-01 they were not read, and every
  // rank ran alone as rank 0 of 1).
  bool launched_by_mpirun = false;
  // Where the topology came from, for errors: "HVD_RANK/HVD_SIZE", "OMPI_COMM_WORLD_RANK/SIZE"
  // or "PMI_RANK/PMI_SIZE".
  std::string topology_source = "HVD_RANK/HVD_SIZE";
  int32_t rank = 0;
  int32_t size = 1;
  int32_t local_rank = 0;
  int32_t local_size = 1;
  int32_t cross_rank = 0;
  int32_t cross_size = 1;
  std::string hostname = "localhost";

  // Rendezvous with hvdrun's KV server; empty address = single process.
  std::string rendezvous_addr;
  int32_t rendezvous_port = 0;
  int32_t secret_fd = -1;
  std::string job_id;
  std::string gloo_iface;
  // HVD_CPU_OPERATIONS, lower-cased: which transport multi-rank CPU groups use
  // (backend_registry.cc validates the name).
  std::string cpu_operations = "gloo";
  // HVD_HIERARCHICAL_ALLREDUCE: "auto", "on" or "off"; HVD_HIERARCHICAL_ALLGATHER. Groups that
  // span hosts use them under HVD_CPU_OPERATIONS=auto (shm_provider.h).
  std::string hierarchical_allreduce = "auto";
  bool hierarchical_allgather = false;
  // HVD_GPU_OPERATIONS (or HOROVOD_GPU_ALLREDUCE), normalised: "auto" (NCCL for a process set
  // whose members each have a GPU of their own, else host staging), "nccl" or "cpu" (GPU
  // tensors staged through host memory and the CPU transport). gpu_backend.h.
  std::string gpu_operations = "auto";
  // Horovod's per-op GPU knobs (HVD_GPU_ALLGATHER, _BROADCAST, _ALLTOALL, _REDUCESCATTER): MPI or
  // GLOO stages that op through host memory even where the set runs on NCCL; NCCL (or unset)
  // leaves it to gpu_operations.
  struct GpuStagedOps {
    bool allgather = false, broadcast = false, alltoall = false, reducescatter = false;
  } gpu_staged;
  // HVD_GPU_ASYNC_COMPLETION: a NCCL allreduce completes off the cycle (GpuGroup::Defer), as
  // Horovod's finalizer threads complete its GPU ops; off: the cycle waits for each NCCL call.
  bool gpu_async_completion = false;
  // NCCL_HOSTID: the machine this rank declares to NCCL, and to the GPU path's decision (ranks
  // that declare different ones have GPUs of their own); empty: the kernel's host name.
  std::string gpu_host_id;
  // HVD_SHM_BUFFER_BYTES: staging memory per rank of a shared-memory group (shm_communicator.h).
  int64_t shm_buffer_bytes = int64_t{1} << 20;
  // HVD_SHM_SINGLE_COPY_BYTES: allreduces from this size read the peers' buffers directly
  // (process_vm_readv) when every member may; 0 never (shm_communicator.h).
  int64_t shm_single_copy_bytes = int64_t{2} << 20;
  // HVD_SHM_SINGLE_COPY, lower-cased: "auto" (measured choice per size class), "always" or
  // "never" (then shm_single_copy_bytes is 0).
  std::string shm_single_copy = "auto";
  // HVD_SHM_DIRECT_BYTES: shared-memory allreduces up to this size take one round in which
  // every rank reduces all inputs (ShmOptions::direct_bytes): "auto" (-1, by the group's size,
  // ShmDirectBytes) or bytes, at most 65536 (the fixed size of every group before 2026-11-26).
  int64_t shm_direct_bytes = -1;
  // HVD_SHM_NAMED, tests only: shared-memory segments get a name in /dev/shm while their group
  // gathers (the path taken where /dev/shm has no O_TMPFILE; shm_segment.h).
  bool shm_named = false;
  // HVD_CONTROLLER, lower-cased: "gloo" (hvdrun's rendezvous) or "mpi". When HVD_CONTROLLER /
  // HVD_CPU_OPERATIONS are unset and mpirun started the process, both are "mpi" (Horovod's
  // default with an MPI build).
  std::string controller = "gloo";
  // HVD_MPI_THREADS_DISABLE: MPI_THREAD_SINGLE instead of MPI_THREAD_MULTIPLE.
  bool mpi_threads_disable = false;
  // HVD_THREAD_AFFINITY (hvdrun --thread-affinity): one core id per local rank; the background
  // thread of local rank i runs on the i-th. Empty: not pinned.
  std::vector<int> thread_affinity;
  bool elastic = false;
  // HVD_ELASTIC_WORKER_ID: set by hvdrun's elastic driver; -1 = not one of its workers. Such
  // a worker gets its rank, size and round from the driver at every init
  // (runtime/elastic_session.h), not from HVD_RANK / HVD_SIZE.
  int64_t elastic_worker_id = -1;
  // The elastic round (key prefix of this init's rendezvous, "<round>/"); 0 = not elastic:
  // each init of the process takes the next local number.
  int64_t rendezvous_round = 0;
  // Rendezvous and per-collective timeout.
  std::chrono::milliseconds timeout{30000};
  // HVD_HEARTBEAT_TIMEOUT_SECONDS: a peer of the tcp transport that acknowledges nothing for
  // this long is dead (TCP keepalive while idle, unacknowledged data while in a collective;
  // not TCP_USER_TIMEOUT, which also resets live slow readers); 0 = off.
  std::chrono::milliseconds heartbeat_timeout{5000};
  // HVD_TCP_CONGESTION: congestion control of the tcp transport's data connections: "auto"
  // (BBR replaced by cubic or reno), "system" or a kernel name (TcpMeshOptions::congestion).
  std::string tcp_congestion = "auto";
  // HVD_TCP_HALVING_BYTES: where the tcp transport's allreduces of 4+ ranks switch from
  // recursive doubling to halving-doubling (TcpOptions::halving_bytes): "auto" (-1, measured
  // per group), "off" (never: INT64_MAX) or bytes.
  int64_t tcp_halving_bytes = -1;

  // Coordinator.
  int64_t fusion_threshold_bytes = 128 * 1024 * 1024;
  std::chrono::microseconds cycle_time{1000};
  int64_t cache_capacity = 1024;
  // HVD_EAGER_ALLREDUCE_BYTES: a lone cached CPU allreduce up to this size rides the next
  // cycle's negotiation round on transports that can (controller.h, "Eager"); 0 = never.
  int64_t eager_allreduce_bytes = 32768;
  bool disable_group_fusion = false;
  bool dynamic_process_sets = false;
  // HVD_OUTPUT_CACHE_BYTES: given-back runtime-allocated outputs kept for reuse
  // (core/execution/output_memory.h); 0 = none.
  int64_t output_cache_bytes = int64_t{128} << 20;

  // Stall inspector; zero shutdown time = never shut down.
  bool stall_check_enabled = true;
  std::chrono::milliseconds stall_check_time{60000};
  std::chrono::milliseconds stall_shutdown_time{600000};

  // HVD_TIMELINE: a file written by global rank 0 from init, or "DYNAMIC" (API only).
  std::string timeline_path;
  bool timeline_mark_cycles = false;
  // HVD_TIMELINE_ALL_RANKS: every rank's events go into rank 0's file (runtime_timeline.h).
  bool timeline_all_ranks = false;
  int64_t timeline_clock_skew_us = 0;  // HVD_TIMELINE_CLOCK_SKEW_US, tests only

  // HVD_AUTOTUNE*: global rank 0 tunes fusion threshold, cycle time and the cache switch
  // (runtime/autotuner.h). A knob whose variable was set explicitly is never tuned.
  struct Autotune {
    bool enabled = false;
    std::string log_path;
    std::string cache_path;
    int warmup_samples = 3;
    int steps_per_sample = 10;
    int bayes_opt_max_samples = 20;
    double gaussian_process_noise = 0.8;
    bool fusion_threshold_fixed = false;
    bool cycle_time_fixed = false;
    bool cache_fixed = false;
  } autotune;

  log::Level log_level = log::Level::kWarning;
  // HVD_LOG_LEVEL's value was not a level: WARNING is used (as Horovod does), and init logs
  // this text once the logger is set up.
  std::string log_level_warning;
  bool log_hide_time = false;
};

// Reads every runtime variable from `env`; a malformed or out-of-range value is
// InvalidArgument naming the variable (e.g. "HVD_FUSION_THRESHOLD: expected ... got 'x'").
Result<RuntimeConfig> LoadRuntimeConfig(const env::Environment& env);

// The variables LoadRuntimeConfig reads that are the same on every rank (fusion, cycle time,
// cache, stall check, logging, timeline, autotune, GPU operations), checked alike: what
// hvdrun runs over the environment its ranks will get before it starts any, so that a
// malformed value fails the launch naming it instead of every rank's hvd.init().
Status CheckRankIndependentKnobs(const env::Environment& env);

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_RUNTIME_CONFIG_H_
