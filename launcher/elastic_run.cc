#include "launcher/elastic_run.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>

#include "common/duration.h"
#include "common/elastic_messages.h"
#include "common/fd.h"
#include "common/job_key.h"
#include "discovery/allocation.h"
#include "discovery/discovery_script.h"
#include "discovery/host_spec.h"
#include "discovery/rank_plan.h"
#include "discovery/slurm.h"
#include "launcher/agents/ssh_agent_link.h"
#include "launcher/dry_run.h"
#include "launcher/elastic/elastic_job.h"
#include "launcher/elastic/elastic_summary.h"
#include "launcher/job_controller.h"  // StackRequestObserver
#include "launcher/local/job_id.h"
#include "launcher/local/local_host.h"
#include "launcher/local/local_spawner.h"
#include "launcher/local/rank_leftovers.h"
#include "launcher/multi_host.h"
#include "launcher/outcome/exit_codes.h"
#include "launcher/output/console.h"
#include "launcher/output/console_sink.h"
#include "launcher/rendezvous/network_interface.h"
#include "launcher/schedulers/srun_command.h"
#include "launcher/worker/cpu_binding.h"
#include "launcher/worker/runtime_library.h"
#include "launcher/worker/worker_env.h"
#include "launcher/worker/worker_threads.h"

namespace hvd::launcher {
namespace {

int TotalSlots(const std::vector<discovery::HostSlots>& hosts) {
  int slots = 0;
  for (const discovery::HostSlots& h : hosts) slots += h.slots;
  return slots;
}

discovery::DiscoveryScriptOptions ScriptOptions(const LaunchSpec& spec) {
  discovery::DiscoveryScriptOptions options;
  options.command = spec.host_discovery_script;
  options.default_slots = spec.slots_per_host.value_or(1);
  options.timeout = Millis(spec.discovery_timeout_s);
  return options;
}

// The first host list: the discovery script's first run (a failure ends the job at once,
// with the script's own words: Horovod's fatal first discovery), or the fixed hosts.
Result<std::vector<discovery::HostSlots>> FirstHosts(const LaunchSpec& spec,
                                                     const env::Environment& env) {
  if (!spec.host_discovery_script.empty()) {
    Result<std::vector<discovery::HostSlots>> hosts =
        discovery::RunDiscoveryScript(ScriptOptions(spec));
    if (!hosts.ok()) return hosts.status().WithContext("the first host discovery failed");
    return hosts;
  }
  HVD_ASSIGN_OR_RETURN(discovery::Allocation allocation,
                       discovery::ResolveAllocation(spec.hosts, spec.hostfile, spec.num_proc, env));
  return allocation.hosts;
}

int PrintDryRun(const LaunchSpec& spec, const env::Environment& env) {
  std::string text = "hvdrun dry run: nothing is started\n\n" + DescribeElastic(spec);
  if (spec.host_discovery_script.empty()) {
    Result<discovery::Allocation> allocation =
        discovery::ResolveAllocation(spec.hosts, spec.hostfile, spec.num_proc, env);
    if (!allocation.ok()) {
      PrintToUser("error: " + allocation.status().message());
      return kExitUsage;
    }
    JobPlan plan;
    plan.allocation = *allocation;
    int slots = TotalSlots(allocation->hosts);
    if (spec.max_num_proc) slots = std::min(slots, *spec.max_num_proc);
    Result<std::vector<discovery::RankInfo>> ranks =
        discovery::PlanRanks(allocation->hosts, std::max(slots, spec.num_proc.value_or(slots)));
    if (!ranks.ok()) {
      PrintToUser("error: " + ranks.status().message());
      return kExitUsage;
    }
    plan.ranks = *ranks;
    text += "\nfirst rank plan (hosts from " + allocation->source + "):\n" + FormatPlanTable(plan);
  } else {
    text += "\nthe first rank plan depends on what the discovery script prints at launch\n";
  }
  text += "\ncommand of every rank: " + ShellJoin(spec.command) + "\n";
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  return kExitOk;
}

ElasticDriverOptions DriverOptions(const LaunchSpec& spec,
                                   const std::vector<discovery::HostSlots>& first_hosts) {
  ElasticDriverOptions options;
  int slots = TotalSlots(first_hosts);
  if (spec.max_num_proc) slots = std::min(slots, *spec.max_num_proc);
  options.start_np = spec.num_proc.value_or(std::max(slots, 1));
  options.min_np = spec.min_num_proc.value_or(options.start_np);
  options.max_np = spec.max_num_proc;
  options.reset_limit = spec.reset_limit;
  options.elastic_timeout = std::chrono::duration_cast<ElasticClock::duration>(
      std::chrono::duration<double>(spec.elastic_timeout_s));
  options.start_timeout = std::chrono::duration_cast<ElasticClock::duration>(
      std::chrono::duration<double>(spec.start_timeout_s));
  options.grace_period = std::chrono::duration_cast<ElasticClock::duration>(
      std::chrono::duration<double>(spec.grace_period_s));
  options.cooldown_range_s = spec.blacklist_cooldown_range;
  options.seed = std::random_device()();
  return options;
}

// Where the rendezvous server listens and, when remote hosts may join, their agents. Remote
// hosts need an address they can reach: chosen toward the remote hosts of the first host set
// or from --network-interface; without either the job stays on loopback (this machine only).
struct ElasticNetwork {
  std::string address = kLoopbackAddress;
  std::unique_ptr<ElasticAgents> agents;
};

// How the driver reaches a remote host's hvd-agent. Inside a Slurm allocation whose nodes hold
// the first remote hosts: a srun step per node, and a host the discovery script adds later
// must be a node of the allocation too (ranks move only within it; another host fails to
// connect with that reason, and the driver drops it like any unreachable host). Otherwise SSH.
Result<AgentLinkFactory> ElasticConnector(const LaunchSpec& spec, const env::Environment& env,
                                          const std::vector<std::string>& remote,
                                          const std::string& agent_path) {
  std::string why_not;
  std::optional<SrunLaunch> srun = DetectSrunLaunch(remote, env, &why_not);
  if (!srun) {
    if (!why_not.empty()) PrintStep(spec.verbose, why_not);
    return AgentLinkFactory(
        [ssh = SshOptionsFor(spec, env), agent_path](
            const std::string& host, std::chrono::steady_clock::time_point deadline) {
          return ConnectSshAgent(SshTarget{host, ssh}, agent_path, deadline);
        });
  }
  std::optional<std::string> nodelist = env.Raw("SLURM_JOB_NODELIST");
  if (!nodelist) nodelist = env.Raw("SLURM_NODELIST");
  HVD_ASSIGN_OR_RETURN(std::vector<std::string> nodes,
                       discovery::ExpandSlurmHostlist(nodelist.value_or("")));
  PrintStep(spec.verbose, "Inside Slurm job " + srun->job_id + ": hvd-agent starts with " +
                              srun->srun_path + " on each node that gets workers");
  AgentLinkFactory through_srun = SrunAgentConnector(*srun, agent_path, env, spec.verbose);
  return AgentLinkFactory(
      [through_srun, nodes, job = srun->job_id, listed = *nodelist](
          const std::string& host,
          std::chrono::steady_clock::time_point deadline) -> Result<std::unique_ptr<AgentLink>> {
        if (std::find(nodes.begin(), nodes.end(), host) == nodes.end()) {
          return Status::PreconditionFailed(
              "host " + host + " is not a node of Slurm job " + job + " (" + listed +
              "): inside an allocation elastic workers start only on its nodes");
        }
        return through_srun(host, deadline);
      });
}

Result<ElasticNetwork> PrepareNetwork(const LaunchSpec& spec, const env::Environment& env,
                                      const std::vector<discovery::HostSlots>& first_hosts,
                                      const control::JobKey& key, JobEnvContext& job) {
  ElasticNetwork network;
  std::vector<std::string> remote;
  for (const discovery::HostSlots& h : first_hosts) {
    if (!IsLocalHost(h.host)) remote.push_back(h.host);
  }
  if (remote.empty() && spec.network_interfaces.empty()) return network;
  Result<NetworkChoice> chosen = ChooseNetwork(remote, spec.network_interfaces);
  if (!chosen.ok() && !spec.host_discovery_script.empty()) {
    // The hosts came from the script: say so, the name alone does not tell.
    return chosen.status().WithContext("the first output of --host-discovery-script '" +
                                       spec.host_discovery_script + "'");
  }
  HVD_ASSIGN_OR_RETURN(NetworkChoice choice, std::move(chosen));
  PrintStep(spec.verbose, "elastic job network: " + choice.interface.name + " (" +
                              choice.interface.address + ", " + choice.reason + ")");
  network.address = choice.interface.address;
  job.gloo_iface = choice.interface.name;
  job.nccl_socket_ifname = choice.interface.name;
  if (!spec.network_interfaces.empty()) {
    job.nccl_socket_ifname.clear();
    for (const std::string& nic : spec.network_interfaces) {
      job.nccl_socket_ifname += (job.nccl_socket_ifname.empty() ? "" : ",") + nic;
    }
  }
  HVD_ASSIGN_OR_RETURN(std::string agent_path, LocalAgentPath());
  HVD_ASSIGN_OR_RETURN(AgentLinkFactory connect, ElasticConnector(spec, env, remote, agent_path));
  network.agents = std::make_unique<ElasticAgents>(
      connect, AgentSessionOptions(spec, key),
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(spec.start_timeout_s)));
  HVD_RETURN_IF_ERROR(network.agents->Init());
  for (const std::string& host : remote) network.agents->Connect(host);  // ahead of the spawns
  return network;
}

int LaunchElasticJob(const LaunchSpec& spec, const env::Environment& env,
                     const std::vector<discovery::HostSlots>& first_hosts) {
  // Before any thread exists (see SignalChannel).
  Result<SignalChannel> signals = SignalChannel::Open();
  if (!signals.ok()) {
    PrintToUser(signals.status().message());
    return kExitInternal;
  }
  Result<control::JobKey> key = control::GenerateJobKey();
  Result<int> secret_fd = key.ok() ? control::WriteKeyToMemfd(*key) : key.status();
  if (!secret_fd.ok()) {
    PrintToUser(secret_fd.status().message());
    return kExitLaunchFailed;
  }
  FdCloser close_secret{*secret_fd};
  JobEnvContext job;
  Result<ElasticNetwork> network = PrepareNetwork(spec, env, first_hosts, *key, job);
  if (!network.ok()) {
    PrintToUser(network.status().message());
    return kExitLaunchFailed;
  }
  job.rendezvous_addr = network->address;
  job.master_addr = UsersMasterSetting(env.all(), "MASTER_ADDR").value_or(network->address);
  job.job_id = NewJobId();
  job.secret_fd = std::to_string(*secret_fd);
  job.master_port = UsersMasterSetting(env.all(), "MASTER_PORT").value_or("0");
  job.runtime_library = FindRuntimeLibrary(SelfExecutablePath());
  job.host_cores = PhysicalCores(AllowedCpus());
  ReadyQueue ready;
  StackRequests stack_requests;  // both outlive the server, whose I/O thread pushes to them
  RendezvousServerOptions server_options;
  server_options.bind_address = network->address;
  server_options.key = *key;
  server_options.job_id = job.job_id;
  server_options.observers.push_back(
      {std::string(control::elastic::kReadyPrefix),
       [&ready](const std::string& k, const std::string& v) { ready.Push(k, v); }});
  server_options.observers.push_back(StackRequestObserver(stack_requests));
  auto server = RendezvousServer::Start(server_options);
  if (!server.ok()) {
    PrintToUser("cannot start the rendezvous server: " + server.status().message());
    return kExitLaunchFailed;
  }
  job.rendezvous_port = std::to_string((*server)->port());
  PrintStep(spec.verbose, "elastic job " + job.job_id + ": rendezvous server on " +
                              (*server)->address() + ":" + job.rendezvous_port);
  std::unique_ptr<DiscoveryPoller> poller;
  if (!spec.host_discovery_script.empty()) {
    poller =
        std::make_unique<DiscoveryPoller>(ScriptOptions(spec), Millis(spec.discovery_interval_s));
    if (Status s = poller->Start(); !s.ok()) {
      PrintToUser(s.message());
      return kExitLaunchFailed;
    }
  }
  OutputForwarder::Options output_options;
  output_options.size = 0;
  output_options.name_width_size =
      std::max(spec.num_proc.value_or(1), spec.max_num_proc.value_or(1));
  output_options.prefix_timestamp = spec.prefix_timestamp;
  output_options.output_dir = spec.output_filename;
  output_options.console_ranks = spec.console_ranks;  // worker ids
  OutputForwarder output(output_options);
  LocalSpawner spawner;
  ElasticJobContext context;
  context.spec = &spec;
  context.env = &env;
  context.job = job;
  context.secret_fd = *secret_fd;
  context.agents = network->agents.get();
  context.server = server->get();
  context.ready = &ready;
  context.stack_requests = &stack_requests;
  context.poller = poller.get();
  context.signals = &*signals;
  context.spawner = &spawner;
  context.output = &output;
  RankLeftovers leftovers;
  context.leftovers = &leftovers;
  int code;
  {
    ElasticJob elastic_job(context, DriverOptions(spec, first_hosts));
    code = elastic_job.Run(first_hosts);
    // Stopped by a signal: its last lines get a moment, not a stalled reader's whole pause.
    if (elastic_job.launcher_signal()) ConsoleFlush(kStoppedFlush);
  }
  for (const std::string& line : leftovers.CleanUp()) PrintStep(spec.verbose, line);
  network->agents.reset();  // remote workers are gone before the rendezvous server stops
  if (poller) poller->Stop();
  (*server)->Stop();
  return code;
}

}  // namespace

int RunElastic(const LaunchSpec& spec, const env::Environment& env) {
  if (spec.check) {
    PrintToUser("error: --check does not apply to elastic jobs (their hosts change at run time)");
    return kExitUsage;
  }
  if (spec.command.empty()) {
    PrintToUser("error: no command given: usage is hvdrun [options] <program> [args]");
    return kExitUsage;
  }
  if (spec.dry_run) return PrintDryRun(spec, env);
  if (spec.verbose) PrintToUser(DescribeElastic(spec));
  Result<std::vector<discovery::HostSlots>> first_hosts = FirstHosts(spec, env);
  if (!first_hosts.ok()) {
    PrintToUser("error: " + first_hosts.status().message());
    return spec.host_discovery_script.empty() ? kExitUsage : kExitLaunchFailed;
  }
  return LaunchElasticJob(spec, env, *first_hosts);
}

}  // namespace hvd::launcher
