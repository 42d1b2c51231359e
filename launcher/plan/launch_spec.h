#ifndef HVD_LAUNCHER_PLAN_LAUNCH_SPEC_H_
#define HVD_LAUNCHER_PLAN_LAUNCH_SPEC_H_

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hvd::launcher {

enum class Controller { kDefault, kGloo, kMpi, kJsrun };

// Everything hvdrun was asked to do, after the command line, the YAML config file and the
// environment were merged (precedence: command line > config file > environment > default).
// Built by cmd/ (flags.cc, config_file.cc); consumed by launcher::Run. Plain data.
struct LaunchSpec {
  // ---- what to run and where
  std::vector<std::string> command;  // program and its arguments
  // hvdrun's own option spellings among the command's arguments ("-np" in `hvdrun python3 t.py
  // -np 2`): the command's, since hvdrun reads options only before it; named when the job
  // cannot be planned (a missing -np), where they are the likely cause.
  std::vector<std::string> options_after_command;
  std::optional<int> num_proc;  // -np; may come from the allocation (Slurm/LSF)
  std::string hosts;            // -H text, unparsed ("" = not given)
  std::string hostfile;         // --hostfile path ("" = not given)
  // ---- elastic (launcher/elastic/elastic_driver.h); on with --elastic, --min-np or a discovery
  // script
  bool elastic_flag = false;          // --elastic
  std::string host_discovery_script;  // run through /bin/sh -c
  std::optional<int> min_num_proc;    // default: num_proc
  std::optional<int> max_num_proc;    // default: no limit
  std::optional<int> slots_per_host;  // slots for discovery lines without ":N" (default 1)
  std::optional<int> reset_limit;
  double elastic_timeout_s = 600;   // below --min-np for this long: the job fails
  double discovery_interval_s = 1;  // between discovery-script runs
  double discovery_timeout_s = 10;  // a discovery-script run is killed after this
  std::optional<std::pair<int, int>> blacklist_cooldown_range;  // seconds; none = forever
  bool elastic() const {
    return elastic_flag || min_num_proc.has_value() || !host_discovery_script.empty();
  }

  // ---- remote hosts
  std::optional<int> ssh_port;
  std::string ssh_identity_file;
  std::string ssh_known_hosts_file;       // --ssh-known-hosts ("" = ~/.ssh/known_hosts)
  bool ssh_accept_new_host_keys = false;  // --ssh-accept-new-host-keys
  bool disable_cache = false;
  std::vector<std::string> network_interfaces;  // --network-interface(s)

  // ---- controller / MPI
  Controller controller = Controller::kDefault;
  std::string mpi_args;
  std::string binding_args;
  bool tcp = false;

  // ---- job control and output
  double start_timeout_s = 30;
  double grace_period_s = 5;  // SIGTERM -> SIGKILL
  // --timeout / HVD_TIMEOUT: how long the job may run, from its start; then every rank is asked
  // for its stacks and the job stopped (exit 124). 0 = no limit.
  double timeout_s = 0;
  // HVD_HEARTBEAT_TIMEOUT_SECONDS: a remote host silent this long is lost (0 = never).
  double heartbeat_timeout_s = 5;
  std::string output_filename;
  // --console-ranks: the ranks (elastic: workers) whose output reaches the console, ascending
  // without repeats; empty = every rank.
  std::vector<int> console_ranks;
  bool prefix_timestamp = false;
  bool verbose = false;
  bool dry_run = false;
  bool check = false;  // --check: preflight every host, print a table, start nothing
  std::string log_level = "WARNING";
  bool log_with_timestamp = true;

  // ---- per-worker environment computed from knob flags / config (fusion threshold in bytes,
  // cycle time, booleans as 1/0, ...), already expanded to both the HVD_* and HOROVOD_* names.
  // The launcher adds the per-rank variables (HVD_RANK, ...) on top of this and of its own
  // environment.
  std::map<std::string, std::string> worker_env;
};

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_PLAN_LAUNCH_SPEC_H_
