#ifndef HVD_LAUNCHER_WORKER_WORKER_ENV_H_
#define HVD_LAUNCHER_WORKER_WORKER_ENV_H_

#include <map>
#include <optional>
#include <string>

#include "discovery/rank_plan.h"

// The environment each worker starts with. Pure functions; thread-safe.
namespace hvd::launcher {

using EnvMap = std::map<std::string, std::string>;

// The signal hvdrun asks a rank for its Python stacks with (launcher/local/stack_dump.h), given
// to every rank as HVD_STACK_SIGNAL. SIGRTMIN + 10 under glibc: a real-time signal no library of
// the stack uses by default, the same number on every Linux host, so a remote hvd-agent sends it
// too.
inline constexpr int kStackSignal = 44;

// Job-wide values hvdrun hands every worker. Text, so --dry-run can show placeholders for
// values only known at launch ("<rendezvous port>").
struct JobEnvContext {
  int size = 1;
  std::string rendezvous_addr;
  std::string rendezvous_port;
  std::string master_addr;  // torchrun's MASTER_ADDR: rank 0's host (hvdrun's address if local)
  std::string master_port;  // torchrun's MASTER_PORT
  std::string job_id;
  std::string secret_fd;  // descriptor number only; never key material
  std::optional<std::string> runtime_library;
  // HVD_GLOO_IFACE (+ HOROVOD_GLOO_IFACE) and NCCL_SOCKET_IFNAME; "" = not set by hvdrun.
  std::string gloo_iface;
  std::string nccl_socket_ifname;
  // The cores this machine gives the job (hvdrun's affinity) for its own ranks' OMP_NUM_THREADS
  // (launcher/worker/worker_threads.h); 0 = not computed here (another host's agent does).
  int host_cores = 0;
  // The ranks sharing those cores: every rank hvdrun starts on this machine, under any host
  // name; 0 = the rank's local size.
  int ranks_here = 0;
};

// The variables hvdrun itself sets for `rank`: HVD_RANK/SIZE/LOCAL_*/CROSS_*/HOSTNAME with
// their HOROVOD_* aliases, torchrun's RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE/
// GROUP_RANK/GROUP_WORLD_SIZE/ROLE_*/TORCHELASTIC_*/MASTER_ADDR/MASTER_PORT, the rendezvous address
// (HVD_* and HOROVOD_GLOO_*), HVD_JOB_ID, HVD_SECRET_FD, HVD_STACK_SIGNAL, the Gloo controller
// choice, the interfaces when chosen and PYTHONUNBUFFERED=1. HVD_RUNTIME_LIBRARY is not included
// (see BuildWorkerEnv).
EnvMap RankVariables(const discovery::RankInfo& rank, const JobEnvContext& job);

// torchrun's MASTER_ADDR or MASTER_PORT (`name`) as the user exported it to hvdrun, for
// JobEnvContext::master_addr/master_port: like torchrun's --master-addr/--master-port (e.g. the
// one port a firewall between the hosts opens), it wins over hvdrun's choice; nullopt when
// unset or empty.
std::optional<std::string> UsersMasterSetting(const EnvMap& launcher_env, const char* name);

// The full environment of `rank`: `launcher_env` (hvdrun's own), overlaid with
// `worker_env` (knobs from flags / config), overlaid with RankVariables. Adds
// HVD_RUNTIME_LIBRARY = job.runtime_library, NCCL_HOSTID = the rank's host, where hvdrun
// chose an interface torch's GLOO_SOCKET_IFNAME = job.gloo_iface, and with job.host_cores the
// OMP_NUM_THREADS of HVD_WORKER_THREADS=share (job.host_cores / job.ranks_here, else
// rank.local_size), each unless the user already set it in either map.
EnvMap BuildWorkerEnv(const EnvMap& launcher_env, const EnvMap& worker_env,
                      const discovery::RankInfo& rank, const JobEnvContext& job);

// What is sent for a rank on another host, where it is merged over the remote login
// environment: `worker_env` and RankVariables (as BuildWorkerEnv) plus hvdrun's whole
// environment, as horovodrun exports it (OMP_NUM_THREADS, PATH, a conda env's variables, the
// user's own), but for what describes this machine or session (DescribesThisMachineOrSession).
// hvdrun's HVD_SECRET_FD is dropped (the agent makes its own from the key it is sent).
EnvMap BuildRemoteWorkerEnv(const EnvMap& launcher_env, const EnvMap& worker_env,
                            const discovery::RankInfo& rank, const JobEnvContext& job);

// HOSTNAME, PWD, SSH_*, DISPLAY, SLURM_*, BASH_FUNC_*, ...: not sent to other hosts.
bool DescribesThisMachineOrSession(const std::string& name);

// The variables of a job's own configuration (HVD_*, HOROVOD_*, NCCL_*, PYTHON*), which
// `hvdrun --mpi` passes to mpirun with -x.
bool IsForwardedToRemoteHosts(const std::string& name);

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_WORKER_WORKER_ENV_H_
