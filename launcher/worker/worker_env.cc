#include "launcher/worker/worker_env.h"

#include <string_view>

#include "launcher/worker/worker_threads.h"

namespace hvd::launcher {
namespace {

// Sets the canonical HVD_ name and its Horovod alias to the same value.
void SetBoth(EnvMap& env, std::string_view suffix, const std::string& value) {
  std::string hvd_name = "HVD_";
  std::string horovod_name = "HOROVOD_";
  env[hvd_name.append(suffix)] = value;
  env[horovod_name.append(suffix)] = value;
}

// Whether launcher_env's NCCL_HOSTID is the one an enclosing hvdrun gave its rank: hvdrun runs
// inside a rank of another job (its HVD_JOB_ID), and NCCL_HOSTID is that rank's host
// (HVD_HOSTNAME), as BuildWorkerEnv sets it.
bool HostIdOfEnclosingJob(const EnvMap& launcher_env) {
  auto id = launcher_env.find("NCCL_HOSTID");
  auto host = launcher_env.find("HVD_HOSTNAME");
  return id != launcher_env.end() && host != launcher_env.end() &&
         launcher_env.count("HVD_JOB_ID") > 0 && id->second == host->second;
}

}  // namespace

EnvMap RankVariables(const discovery::RankInfo& rank, const JobEnvContext& job) {
  EnvMap env;
  SetBoth(env, "RANK", std::to_string(rank.rank));
  SetBoth(env, "SIZE", std::to_string(job.size));
  SetBoth(env, "LOCAL_RANK", std::to_string(rank.local_rank));
  SetBoth(env, "LOCAL_SIZE", std::to_string(rank.local_size));
  SetBoth(env, "CROSS_RANK", std::to_string(rank.cross_rank));
  SetBoth(env, "CROSS_SIZE", std::to_string(rank.cross_size));
  SetBoth(env, "HOSTNAME", rank.host);
  SetBoth(env, "CONTROLLER", "gloo");  // hvdrun's rendezvous (Horovod's name for it)
  // Shared memory within a host, hvd's TCP transport across hosts; an exported value wins.
  SetBoth(env, "CPU_OPERATIONS", "auto");
  env["HVD_RENDEZVOUS_ADDR"] = job.rendezvous_addr;
  env["HVD_RENDEZVOUS_PORT"] = job.rendezvous_port;
  env["HOROVOD_GLOO_RENDEZVOUS_ADDR"] = job.rendezvous_addr;
  env["HOROVOD_GLOO_RENDEZVOUS_PORT"] = job.rendezvous_port;
  env["HVD_JOB_ID"] = job.job_id;
  env["HVD_SECRET_FD"] = job.secret_fd;
  env["HVD_STACK_SIGNAL"] = std::to_string(kStackSignal);
  env["RANK"] = std::to_string(rank.rank);
  env["WORLD_SIZE"] = std::to_string(job.size);
  env["LOCAL_RANK"] = std::to_string(rank.local_rank);
  env["LOCAL_WORLD_SIZE"] = std::to_string(rank.local_size);
  env["GROUP_RANK"] = std::to_string(rank.host_index);  // torchrun's node rank
  env["GROUP_WORLD_SIZE"] = std::to_string(rank.host_count);
  env["ROLE_RANK"] = env["RANK"];  // one role, as torchrun's default ("default")
  env["ROLE_WORLD_SIZE"] = env["WORLD_SIZE"];
  env["ROLE_NAME"] = "default";
  env["TORCHELASTIC_RESTART_COUNT"] = "0";  // hvdrun restarts no rank
  env["TORCHELASTIC_MAX_RESTARTS"] = "0";
  env["TORCHELASTIC_RUN_ID"] = job.job_id;
  env["MASTER_ADDR"] = job.master_addr;
  env["MASTER_PORT"] = job.master_port;
  env.insert_or_assign("PYTHONUNBUFFERED", std::string(1, '1'));
  if (!job.gloo_iface.empty()) SetBoth(env, "GLOO_IFACE", job.gloo_iface);
  if (!job.nccl_socket_ifname.empty()) env["NCCL_SOCKET_IFNAME"] = job.nccl_socket_ifname;
  return env;
}

std::optional<std::string> UsersMasterSetting(const EnvMap& launcher_env, const char* name) {
  auto it = launcher_env.find(name);
  if (it == launcher_env.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

bool IsForwardedToRemoteHosts(const std::string& name) {
  for (std::string_view prefix : {"HVD_", "HOROVOD_", "NCCL_", "PYTHON"}) {
    if (name.rfind(prefix, 0) == 0) return name != "HVD_SECRET_FD";
  }
  return false;
}

bool DescribesThisMachineOrSession(const std::string& name) {
  // Horovod's exclusions (BASH_FUNC_*, OLDPWD, its secret) and what names this machine, this
  // login (HOME, USER: the SSH user may be another) or this terminal: the remote login has its
  // own. (The working directory travels apart; SLURM_*/SLURMD_*/OMPI_*/PMI* describe hvdrun's
  // own place in an allocation or MPI job.)
  static constexpr std::string_view kNames[] = {"HVD_SECRET_FD",
                                                "HOME",
                                                "USER",
                                                "LOGNAME",
                                                "SHELL",
                                                "HOSTNAME",
                                                "HOST",
                                                "PWD",
                                                "OLDPWD",
                                                "SHLVL",
                                                "_",
                                                "DISPLAY",
                                                "XAUTHORITY",
                                                "SSH_AUTH_SOCK",
                                                "SSH_AGENT_PID",
                                                "SSH_CONNECTION",
                                                "SSH_CLIENT",
                                                "SSH_TTY",
                                                "TMUX",
                                                "TMUX_PANE",
                                                "STY",
                                                "WINDOWID",
                                                "MAIL",
                                                "XDG_RUNTIME_DIR",
                                                "XDG_SESSION_ID",
                                                "DBUS_SESSION_BUS_ADDRESS",
                                                "KRB5CCNAME"};
  // SLURMD_NODENAME and the batch systems' own (PBS_, LSB_) describe the node hvdrun runs on.
  static constexpr std::string_view kPrefixes[] = {
      "BASH_FUNC_", "SLURM_", "SLURMD_", "PBS_", "LSB_", "OMPI_", "PMIX_", "PMI_", "SUDO_"};
  for (std::string_view n : kNames) {
    if (name == n) return true;
  }
  for (std::string_view prefix : kPrefixes) {
    if (name.rfind(prefix, 0) == 0) return true;
  }
  // The GPUs of this machine (or of hvdrun's Slurm step), as Horovod never exports
  // *CUDA_VISIBLE_DEVICES: forwarded, the launch node's list replaced each remote host's own
  // (slurmstepd's per-node one, the login's), and its ranks used the wrong GPUs or none (until
  // 2026-12-01; the --mpi path already left it out).
  if (name.ends_with("CUDA_VISIBLE_DEVICES")) return true;
  return false;
}

EnvMap BuildRemoteWorkerEnv(const EnvMap& launcher_env, const EnvMap& worker_env,
                            const discovery::RankInfo& rank, const JobEnvContext& job) {
  EnvMap forwarded;
  for (const auto& [name, value] : launcher_env) {
    if (!DescribesThisMachineOrSession(name)) forwarded[name] = value;
  }
  EnvMap env = BuildWorkerEnv(forwarded, worker_env, rank, job);
  env.erase("HVD_SECRET_FD");
  return env;
}

EnvMap BuildWorkerEnv(const EnvMap& launcher_env, const EnvMap& worker_env,
                      const discovery::RankInfo& rank, const JobEnvContext& job) {
  EnvMap env = launcher_env;
  for (const auto& [name, value] : worker_env) env[name] = value;
  // A CPU backend the user exported (e.g. HVD_CPU_OPERATIONS=tcp) wins over the default.
  std::string cpu_operations;
  for (const char* name : {"HOROVOD_CPU_OPERATIONS", "HVD_CPU_OPERATIONS"}) {
    auto it = env.find(name);
    if (it != env.end() && !it->second.empty()) cpu_operations = it->second;
  }
  for (auto& [name, value] : RankVariables(rank, job)) env[name] = std::move(value);
  if (!cpu_operations.empty()) SetBoth(env, "CPU_OPERATIONS", cpu_operations);
  // NCCL tells machines apart by NCCL_HOSTID (else by host name and boot id), hvd by the host
  // name as given: the same name for both unless the user set NCCL's. Ranks given as different
  // hosts are then different machines to NCCL too, each with a GPU of its own to hvd's GPU path
  // (runtime/transports/nccl/nccl_group.h), so `-H localhost:1,127.0.0.1:1` runs two NCCL ranks
  // on one GPU, each local rank 0 of its host.
  // An NCCL_HOSTID an enclosing hvdrun gave (hvdrun run by a rank of another job, as the GPU
  // tests do) is that rank's host, not the user's choice: on the GPU machine (2026-11-28) such a
  // nested 2-rank job inherited NCCL_HOSTID=localhost for both ranks, which then shared one GPU
  // to hvd and staged their allgather through TCP.
  if (env.count("NCCL_HOSTID") == 0 || HostIdOfEnclosingJob(launcher_env)) {
    env["NCCL_HOSTID"] = rank.host;
  }
  // torch.distributed's Gloo picks its interface by the host name unless told (a name that
  // resolves to loopback, or to another network, fails its connections across hosts): the
  // interface hvd's own transport uses, unless the user named one.
  if (!job.gloo_iface.empty() && env.count("GLOO_SOCKET_IFNAME") == 0) {
    env["GLOO_SOCKET_IFNAME"] = job.gloo_iface;
  }
  ShareWorkerThreads(env, job.host_cores, job.ranks_here > 0 ? job.ranks_here : rank.local_size);
  if (job.runtime_library && env.count("HVD_RUNTIME_LIBRARY") == 0) {
    env["HVD_RUNTIME_LIBRARY"] = *job.runtime_library;
  }
  return env;
}

}  // namespace hvd::launcher
