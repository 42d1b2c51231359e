#include "launcher/dry_run.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <string_view>

#include "launcher/agents/ssh_agent_link.h"
#include "launcher/multi_host.h"

namespace hvd::launcher {
namespace {

bool NeedsQuoting(const std::string& word) {
  if (word.empty()) return true;
  return !std::all_of(word.begin(), word.end(), [](unsigned char c) {
    return std::isalnum(c) ||
           std::string_view("_@%+=:,./-").find(static_cast<char>(c)) != std::string_view::npos;
  });
}

std::string Quote(const std::string& word) {
  if (!NeedsQuoting(word)) return word;
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  return out + "'";
}

std::string Column(const std::string& text, size_t width) {
  return text.size() < width ? text + std::string(width - text.size(), ' ') : text + " ";
}

}  // namespace

std::string FormatPlanTable(const JobPlan& plan) {
  size_t host_width = 6;
  for (const auto& rank : plan.ranks) host_width = std::max(host_width, rank.host.size() + 2);
  std::string text = Column("rank", 6) + Column("host", host_width) + Column("local_rank", 12) +
                     Column("local_size", 12) + Column("cross_rank", 12) + "cross_size\n";
  for (const auto& rank : plan.ranks) {
    text += Column(std::to_string(rank.rank), 6) + Column(rank.host, host_width) +
            Column(std::to_string(rank.local_rank), 12) +
            Column(std::to_string(rank.local_size), 12) +
            Column(std::to_string(rank.cross_rank), 12) + std::to_string(rank.cross_size) + "\n";
  }
  return text;
}

std::string ShellJoin(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& word : argv) {
    if (!out.empty()) out.push_back(' ');
    out += Quote(word);
  }
  return out;
}

std::string FormatDryRun(const LaunchSpec& spec, const JobPlan& plan, const JobEnvContext& job,
                         const std::map<int, EnvMap>& rank_envs, const EnvMap& launcher_env) {
  std::string text = "hvdrun dry run: " + std::to_string(plan.ranks.size()) +
                     " ranks, hosts from " + plan.allocation.source + "; nothing is started\n\n";
  text += FormatPlanTable(plan);
  std::vector<std::string> hosts;
  for (const auto& rank : plan.ranks) {
    if (std::find(hosts.begin(), hosts.end(), rank.host) == hosts.end()) hosts.push_back(rank.host);
  }
  for (const std::string& host : hosts) {
    if (plan.IsRemote(host) && plan.srun) {
      Result<std::string> agent = LocalAgentPath();
      text += "\nhost " + host + " (Slurm job " + plan.srun->job_id +
              " step running one hvd-agent for the host's ranks; argv, environment and job key "
              "go over srun's stdin)\n";
      text += "  agent command: " +
              ShellJoin(
                  SrunAgentArgv(*plan.srun, host, agent.ok() ? *agent : "<hvd-agent: not found>")) +
              "\n";
      text += "  the agent runs: " + ShellJoin(spec.command) + "\n";
    } else if (plan.IsRemote(host)) {
      Result<std::string> agent = LocalAgentPath();
      text += "\nhost " + host +
              " (ssh, one session running one hvd-agent for the host's ranks; argv, environment "
              "and job key go over the channel)\n";
      text +=
          "  remote command: " + SshAgentCommand(agent.ok() ? *agent : "<hvd-agent: not found>") +
          "\n";
      text += "  the agent runs: " + ShellJoin(spec.command) + "\n";
    } else {
      text += "\nhost " + host + " (local fork/exec)\n";
      text += "  command: " + ShellJoin(spec.command) + "\n";
    }
    for (const auto& rank : plan.ranks) {
      if (rank.host != host) continue;
      text += "  rank " + std::to_string(rank.rank) + " environment (added to hvdrun's own):\n";
      // What hvdrun sets for the rank (its knobs, the rank's own variables, the runtime
      // library), with the value the rank gets, and whatever else differs from hvdrun's own
      // environment.
      const EnvMap& rank_env = rank_envs.at(rank.rank);
      std::set<std::string> names;
      for (const auto& [name, value] : spec.worker_env) names.insert(name);
      for (const auto& [name, value] : RankVariables(rank, job)) names.insert(name);
      if (job.runtime_library) names.insert("HVD_RUNTIME_LIBRARY");
      for (const auto& [name, value] : rank_env) {
        auto own = launcher_env.find(name);
        if (own == launcher_env.end() || own->second != value) names.insert(name);
      }
      for (const std::string& name : names) {
        auto it = rank_env.find(name);
        if (it != rank_env.end()) text += "    " + name + "=" + Quote(it->second) + "\n";
      }
    }
  }
  return text;
}

}  // namespace hvd::launcher
